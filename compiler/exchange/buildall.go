package exchange

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
)

// BuildAll schedules every phase, up to GOMAXPROCS phases at a time, and
// returns the schedules in the order of phases. Each phase is scheduled
// exactly as Build would (Build is deterministic and phases share
// nothing), so the result does not depend on GOMAXPROCS or on timing. On
// errors it returns the error of the first failing phase (in phase order)
// and no schedules.
func BuildAll(phases []Phase, opt Options) ([]*Schedule, error) {
	out := make([]*Schedule, len(phases))
	errs := make([]error, len(phases))
	workers := min(runtime.GOMAXPROCS(0), len(phases))
	// Biggest phases first, so that a long phase does not start last and
	// leave the other workers idle; the order only affects timing.
	order := make([]int, len(phases))
	for i := range order {
		order[i] = i
	}
	size := func(i int) int {
		n := 0
		for _, t := range phases[i].Transfers {
			n += t.Words * len(t.Dsts)
		}
		return n
	}
	sizes := make([]int, len(phases))
	for i := range sizes {
		sizes[i] = size(i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = Build(phases[i], opt)
			}
		})
	}
	for _, i := range order {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
