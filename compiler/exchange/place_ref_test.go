package exchange

import (
	"slices"
	"sort"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
)

// refPlace is problem.place as it was before its lists were carved,
// sorted and bitmapped and its clash search learned to skip (sched.go):
// every run of a tile scanned for every candidate timeline, controls in
// a sorted slice, one timeline at a time. TestPlaceMatchesReference holds
// place to it: the speed-ups must not move a single send.
func refPlace(pr *problem, order []int, guard int) *placement {
	type tile struct {
		out, mux      ivset
		reads, writes []run
		ctrls, starts []int
		end           int
	}
	tiles := make([]*tile, ipu21.Tiles)
	st := func(t int) *tile {
		if tiles[t] == nil {
			tiles[t] = &tile{}
		}
		return tiles[t]
	}
	anyIn := func(v []int, lo, hi int) bool {
		i := sort.SearchInts(v, lo)
		return i < len(v) && v[i] < hi
	}
	extraOK := func(x *xfer, ts int, s *tile) bool {
		r := run{ts + 1, x.n, x.saddr, x.size}
		for _, w := range s.writes {
			if w.c0 < r.c0+r.n && r.c0 < w.c0+w.n && clash(r, w) {
				return false
			}
		}
		if guard > 0 && anyIn(s.ctrls, ts+1, ts+1+guard) {
			return false
		}
		var evs [5]int
		for j, d := range x.dsts {
			ds := st(d)
			u0 := ts + 1 + x.ttm[j]
			w := run{u0 + x.lat[j], x.n, x.daddr[j], x.size}
			for _, rr := range ds.reads {
				if w.c0 < rr.c0+rr.n && rr.c0 < w.c0+w.n && clash(rr, w) {
					return false
				}
			}
			if guard > 0 {
				for _, e := range x.ctrlEvents(evs[:0], j, u0) {
					if inGuard(ds.starts, e, guard) {
						return false
					}
				}
			}
		}
		return true
	}
	pl := &placement{ts: make([]int, len(pr.xs))}
	var evs []int
	for _, i := range order {
		x := &pr.xs[i]
		s := st(x.src)
		var lane *tile
		if x.paired {
			lane = st(ipu21.Partner(x.src))
		}
		pre, post := x.pad()
		lb := 0
		for j := range x.dsts {
			lb = max(lb, -x.ttm[j])
			for _, r := range depsOf(x, j) {
				lb = max(lb, pr.readFirst(x, j, &pr.xs[r], pl.ts[r]))
			}
		}
		ts := lb
		for {
			t := s.out.fit(ts+1, x.n) - 1
			if lane != nil {
				t = max(t, lane.out.fit(t+1, x.n)-1)
			}
			for j, d := range x.dsts {
				t = max(t, st(d).mux.fit(t+1+x.ttm[j]-pre, x.n+pre+post)-1-x.ttm[j]+pre)
			}
			if t != ts {
				ts = t
				continue
			}
			if !extraOK(x, ts, s) {
				ts++
				continue
			}
			break
		}
		pl.ts[i] = ts
		s.out.add(ts+1, ts+1+x.n)
		if lane != nil {
			lane.out.add(ts+1, ts+1+x.n)
		}
		s.reads = append(s.reads, run{ts + 1, x.n, x.saddr, x.size})
		s.end = max(s.end, ts+x.n)
		if guard > 0 {
			s.starts = insertSorted(s.starts, ts+1)
		}
		for j, d := range x.dsts {
			ds := st(d)
			u0 := ts + 1 + x.ttm[j]
			ds.mux.add(u0-pre, u0+x.n+post)
			ds.writes = append(ds.writes, run{u0 + x.lat[j], x.n, x.daddr[j], x.size})
			ds.end = max(ds.end, u0+x.lat[j]+x.n)
			if guard > 0 {
				evs = x.ctrlEvents(evs[:0], j, u0)
				for _, e := range evs {
					ds.ctrls = insertSorted(ds.ctrls, e)
				}
			}
		}
	}
	for _, t := range tiles {
		if t != nil {
			pl.horizon = max(pl.horizon, t.end)
		}
	}
	return pl
}

// TestPlaceMatchesReference places random phases (sources and
// destinations sharing memory elements, so that clashes push sends
// later), their paired assignments, multicast splits and chunked parts,
// in every pass's order and with and without the guard, and wants
// place's timelines to equal refPlace's.
func TestPlaceMatchesReference(t *testing.T) {
	seeds := 16
	if testing.Short() {
		seeds = 4
	}
	placements := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		for _, mixed := range []bool{true, false} {
			p := randomPhase(seed, mixed)
			if len(p.Transfers) == 0 {
				continue
			}
			cands := [][]part{ordinaryParts(&p)}
			extra, _ := pairedAssignments(&p)
			cands = append(cands, extra...)
			for _, base := range slices.Clone(cands) {
				if sp := splitMulticasts(&p, base, false); sp != nil {
					cands = append(cands, sp)
				}
				cands = append(cands, chunkParts(&p, base, chunkSize(&p, base)))
			}
			for ci, parts := range cands {
				pr := newProblem(&p, parts)
				for pass := 0; pass < 5; pass++ {
					order, err := pr.order(pass)
					if err != nil {
						break // an in-place cycle: Build refuses these too
					}
					for _, guard := range []int{0, 1, DefaultGuard} {
						got, want := pr.place(order, guard), refPlace(pr, order, guard)
						placements++
						if got.horizon != want.horizon || !slices.Equal(got.ts, want.ts) {
							t.Fatalf("seed %d mixed %v candidate %d pass %d guard %d: place differs from the reference (horizon %d, want %d)",
								seed, mixed, ci, pass, guard, got.horizon, want.horizon)
						}
					}
				}
			}
		}
	}
	t.Logf("%d placements equal", placements)
}
