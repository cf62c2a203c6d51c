package exchange

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestMulticastGapDistribution: random multicast phases (gapPhase, up to
// 8 destinations per transfer) of 8 to 1472 tiles, scheduled (paired
// auto) with and without splitting and chunking (Options.NoSplit),
// validated, the split schedule run on the emulator word by word; logs
// the distribution of the gap (horizon over endpoint bound, %) per size
// and how many phases meet TargetHorizon. Random multicast cannot in
// general reach the endpoint bound (see TestRandomGap), so the test only
// asserts that splitting never makes a phase longer and that every gap
// stays under 25 % + 200.
func TestMulticastGapDistribution(t *testing.T) {
	seeds := map[int]int{8: 6, 16: 6, 64: 6, 256: 6, 1472: 2}
	sizes := []int{8, 16, 64, 256, 1472}
	if testing.Short() {
		seeds, sizes = map[int]int{8: 2, 64: 2, 256: 2}, []int{8, 64, 256}
	}
	for _, n := range sizes {
		seeds := seeds[n]
		var with, without []float64
		met, metBefore := 0, 0
		for seed := uint64(100); seed < uint64(100+seeds); seed++ {
			p := gapPhase(seed, n, true)
			s := build(t, p, Options{Paired: PairedAuto})
			s0 := build(t, p, Options{Paired: PairedAuto, NoSplit: true})
			runChip(t, s)
			g := func(s *Schedule) float64 { return 100 * float64(s.Horizon-s.LowerBound) / float64(s.LowerBound) }
			with, without = append(with, g(s)), append(without, g(s0))
			if s.Horizon <= TargetHorizon(s.LowerBound) {
				met++
			}
			if s0.Horizon <= TargetHorizon(s0.LowerBound) {
				metBefore++
			}
			if s.Horizon > s0.Horizon {
				t.Errorf("%d tiles seed %d: split schedule %d longer than unsplit %d", n, seed, s.Horizon, s0.Horizon)
			}
			if s.Horizon > s.LowerBound*5/4+200 {
				t.Errorf("%d tiles seed %d: horizon %d over 1.25 x bound %d + 200", n, seed, s.Horizon, s.LowerBound)
			}
		}
		t.Logf("%4d tiles, %d phases: gap %% min/median/max split %s (target met %d), unsplit %s (target met %d)",
			n, seeds, dist(with), met, dist(without), metBefore)
	}
}

func dist(v []float64) string {
	v = slices.Clone(v)
	slices.Sort(v)
	var b strings.Builder
	fmt.Fprintf(&b, "%.1f/%.1f/%.1f", v[0], v[len(v)/2], v[len(v)-1])
	return b.String()
}
