package launch

import (
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/profile"
	"github.com/ipustack/ipustack/runtime"
)

// Profile builds the run profile of pkg from the samples a run read
// (docs/PROFILE.md), from the package alone: per profiled tile one step
// per sample of its "run" call (kind from the package's step table,
// kernel, phase and provenance from its step details), cycles from the
// earliest tile's run.start; the exchange phases run in that span with
// their start (the earliest tile's start of the phase's exchange step),
// the horizon, lower bound and per-tile windows the package records; per
// tile its memory map; and the plan summary. Tiles are the package's, in
// its order (the compiler's logical order).
func Profile(pkg *ipuexe.Package, res *runtime.Result) (*profile.Profile, error) {
	if len(res.Samples) == 0 {
		return nil, fmt.Errorf("profile: the run read no samples (the package has no profile plan)")
	}
	run := &pkg.Run
	tg := ipu21.IPU21()
	b := profile.NewBuilder(run.Workload, pkg.Target, len(pkg.Tiles), uint64(tg.ClockHz))
	logical := map[uint32]int{}
	for l, t := range pkg.Tiles {
		logical[t.Physical] = l
	}
	// The time origin: the earliest run.start.
	var origin uint32
	first := true
	for _, tp := range pkg.Profile.Tiles {
		w := res.Samples[int(tp.Tile)]
		if len(w) == 0 {
			continue
		}
		if first || int32(w[0]-origin) < 0 {
			origin, first = w[0], false
		}
	}
	phaseStart := map[int]uint64{}
	var end uint64
	for _, tp := range pkg.Profile.Tiles {
		w := res.Samples[int(tp.Tile)]
		l, ok := logical[tp.Tile]
		if !ok || len(w) == 0 {
			continue
		}
		if len(w) != len(tp.Samples) {
			return nil, fmt.Errorf("profile: tile %d has %d samples for %d steps", tp.Tile, len(w), len(tp.Samples)-1)
		}
		at := uint64(w[0] - origin)
		for k, smp := range tp.Samples[1:] {
			if uint64(smp.Step) >= uint64(len(pkg.Profile.Steps)) || uint64(smp.Detail) > uint64(len(run.StepDetails)) {
				return nil, fmt.Errorf("profile: tile %d sample %d: step %d or detail %d does not exist", tp.Tile, k+1, smp.Step, smp.Detail)
			}
			st := pkg.Profile.Steps[smp.Step]
			var d ipuexe.StepDetail
			if smp.Detail > 0 {
				d = run.StepDetails[smp.Detail-1]
			}
			e := uint64(w[k+1] - origin)
			if e < at {
				return nil, fmt.Errorf("profile: tile %d step %d (%s) ends at %d before it starts at %d", tp.Tile, k, st.Name, e, at)
			}
			s := profile.Step{Start: at, End: e, Kernel: d.Kernel, Phase: profile.NoPhase,
				Operation: d.Operation, Provenance: profile.Provenance{Value: d.Value, Reason: d.Reason}}
			switch st.Kind {
			case "exchange":
				s.Kind, s.Phase = profile.Exchange, int(d.Phase)
				if ps, ok := phaseStart[s.Phase]; !ok || at < ps {
					phaseStart[s.Phase] = at
				}
			case "sync":
				s.Kind = profile.Sync
			case "host":
				s.Kind = profile.Host
			default:
				s.Kind = profile.Compute
			}
			b.AddStep(l, s)
			at = e
		}
		end = max(end, at)
	}
	b.SetCycles(end)
	b.SetSamples(uint64(res.SampleWords))

	for _, xp := range run.Phases {
		// Phases not run in the profiled span (the initialize call's
		// weights broadcast; phases inside loops sampled as one step) are
		// left out: they have no start in it.
		st, ok := phaseStart[int(xp.ID)]
		if !ok {
			continue
		}
		ph := profile.Phase{ID: int(xp.ID), Name: xp.Name, Start: st, Horizon: xp.Horizon, Bound: xp.Bound, Schedule: xp.Schedule}
		if st+ph.Horizon > end { // cannot happen: the row ran within the span
			ph.Horizon, ph.Bound = end-st, min(ph.Bound, end-st)
		}
		clip := func(c uint32) uint32 { return uint32(min(uint64(c), ph.Horizon)) }
		for _, w := range xp.Windows {
			l, ok := logical[w.Tile]
			if !ok {
				return nil, fmt.Errorf("profile: exchange phase %d window of tile %d, which is not in the package", xp.ID, w.Tile)
			}
			ph.Windows = append(ph.Windows, profile.Window{Tile: l, SendStart: clip(w.SendStart), SendEnd: clip(w.SendEnd),
				RecvStart: clip(w.RecvStart), RecvEnd: clip(w.RecvEnd), SendBytes: w.SendBytes, RecvBytes: w.RecvBytes})
		}
		slices.SortStableFunc(ph.Windows, func(a, b profile.Window) int { return a.Tile - b.Tile })
		b.AddExchangePhase(ph)
	}

	for l, t := range pkg.Tiles {
		if t.MemoryMap == 0 {
			continue
		}
		if uint64(t.MemoryMap) > uint64(len(run.MemoryMaps)) {
			return nil, fmt.Errorf("profile: tile %d: memory map %d does not exist", t.Physical, t.MemoryMap)
		}
		m := run.MemoryMaps[t.MemoryMap-1]
		segs := make([]profile.Segment, len(m.Ranges))
		for i, r := range m.Ranges {
			k, err := segmentKind(r.Kind)
			if err != nil {
				return nil, fmt.Errorf("profile: tile %d memory range %q: %w", t.Physical, r.Name, err)
			}
			segs[i] = profile.Segment{Kind: k, Address: r.Address, Size: r.Size, Name: r.Name}
		}
		b.SetMemoryMap(l, segs)
	}
	b.SetPlan(planOf(&run.Plan))
	return b.Build()
}

// segmentKind is the profile kind of a memory range kind.
func segmentKind(s string) (profile.SegmentKind, error) {
	for _, k := range profile.SegmentKinds() {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown kind %q", s)
}

// planOf is the profile's plan summary of the package's.
func planOf(p *ipuexe.PlanSummary) profile.Plan {
	grid := func(g ipuexe.PlanGrid) profile.Grid {
		return profile.Grid{Rows: int(g.Rows), Cols: int(g.Cols), Inner: int(g.Inner)}
	}
	out := profile.Plan{PredictedCycles: p.PredictedCycles}
	for _, g := range p.Gemms {
		out.Gemms = append(out.Gemms, profile.Gemm{Name: g.Name, M: int(g.M), K: int(g.K), N: int(g.N),
			Grid: grid(g.Grid), Tiles: int(g.Tiles), Kernel: g.Kernel})
	}
	out.Finalists = make([]profile.Finalist, 0, len(p.Finalists))
	for _, f := range p.Finalists {
		grids := make([]profile.Grid, len(f.Grids))
		for i, g := range f.Grids {
			grids[i] = grid(g)
		}
		out.Finalists = append(out.Finalists, profile.Finalist{Rank: int(f.Rank), MidCycles: f.MidCycles, LowCycles: f.LowCycles,
			Grids: grids, Chosen: f.Chosen})
	}
	return out
}
