package profile

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// DiffRow compares one group (a kernel or a kind) in two profiles. A group
// missing from one profile has zeros there.
type DiffRow struct {
	Key           string `json:"key"`
	WorkA         uint64 `json:"workCyclesA"`
	WorkB         uint64 `json:"workCyclesB"`
	WorkDelta     int64  `json:"workCyclesDelta"`
	TimelineA     uint64 `json:"timelineCyclesA"`
	TimelineB     uint64 `json:"timelineCyclesB"`
	TimelineDelta int64  `json:"timelineCyclesDelta"`
	MaxA          uint64 `json:"maxPerTileA"`
	MaxB          uint64 `json:"maxPerTileB"`
	MaxDelta      int64  `json:"maxPerTileDelta"`
}

// PhaseDiff compares one exchange phase (matched by id) in two profiles.
type PhaseDiff struct {
	ID           int    `json:"id"`
	Name         string `json:"name"`
	InA          bool   `json:"inA"`
	InB          bool   `json:"inB"`
	HorizonA     uint64 `json:"horizonA"`
	HorizonB     uint64 `json:"horizonB"`
	HorizonDelta int64  `json:"horizonDelta"`
	BoundA       uint64 `json:"boundA"`
	BoundB       uint64 `json:"boundB"`
	BoundDelta   int64  `json:"boundDelta"`
}

// DiffSide names one profile of a Diff.
type DiffSide struct {
	Workload string `json:"workload"`
	Tiles    int    `json:"tiles"`
	Cycles   uint64 `json:"cycles"`
}

// DiffResult is the difference B - A of two profiles.
type DiffResult struct {
	A           DiffSide    `json:"a"`
	B           DiffSide    `json:"b"`
	CyclesDelta int64       `json:"cyclesDelta"`
	Kinds       []DiffRow   `json:"kinds"`
	Kernels     []DiffRow   `json:"kernels"`
	Phases      []PhaseDiff `json:"phases"`
}

func delta(a, b uint64) int64 { return int64(b) - int64(a) }

// Diff compares b against a per kind, per kernel (compute steps) and per
// exchange phase. Rows are ordered by the size of the work difference,
// largest first; phases by id.
func Diff(a, b *Profile) (*DiffResult, error) {
	d := &DiffResult{
		A:           DiffSide{a.Workload, a.Tiles(), a.Cycles},
		B:           DiffSide{b.Workload, b.Tiles(), b.Cycles},
		CyclesDelta: delta(a.Cycles, b.Cycles),
		Kinds:       []DiffRow{},
		Kernels:     []DiffRow{},
		Phases:      []PhaseDiff{},
	}
	rows := func(q Query) ([]DiffRow, error) {
		ra, err := a.Run(q)
		if err != nil {
			return nil, err
		}
		rb, err := b.Run(q)
		if err != nil {
			return nil, err
		}
		out := make([]DiffRow, 0, len(ra.Groups)+len(rb.Groups))
		for _, g := range ra.Groups {
			out = append(out, DiffRow{Key: g.Key, WorkA: g.WorkCycles, TimelineA: g.TimelineCycles, MaxA: g.MaxPerTile})
		}
		byKey := map[string]int{}
		for i, r := range out {
			byKey[r.Key] = i
		}
		for _, g := range rb.Groups {
			i, ok := byKey[g.Key]
			if !ok {
				i = len(out)
				out = append(out, DiffRow{Key: g.Key})
			}
			r := &out[i]
			r.WorkB, r.TimelineB, r.MaxB = g.WorkCycles, g.TimelineCycles, g.MaxPerTile
		}
		for i := range out {
			r := &out[i]
			r.WorkDelta, r.TimelineDelta, r.MaxDelta = delta(r.WorkA, r.WorkB), delta(r.TimelineA, r.TimelineB), delta(r.MaxA, r.MaxB)
		}
		slices.SortFunc(out, func(x, y DiffRow) int {
			if c := cmp.Compare(abs(y.WorkDelta), abs(x.WorkDelta)); c != 0 {
				return c
			}
			return strings.Compare(x.Key, y.Key)
		})
		return out, nil
	}
	var err error
	if d.Kinds, err = rows(Query{GroupBy: ByKind}); err != nil {
		return nil, err
	}
	if d.Kernels, err = rows(Query{GroupBy: ByKernel, Kinds: []Kind{Compute}}); err != nil {
		return nil, err
	}
	ids := map[int]*PhaseDiff{}
	for _, ph := range a.Phases {
		ids[ph.ID] = &PhaseDiff{ID: ph.ID, Name: ph.Name, InA: true, HorizonA: ph.Horizon, BoundA: ph.Bound}
	}
	for _, ph := range b.Phases {
		pd := ids[ph.ID]
		if pd == nil {
			pd = &PhaseDiff{ID: ph.ID, Name: ph.Name}
			ids[ph.ID] = pd
		}
		pd.InB, pd.HorizonB, pd.BoundB = true, ph.Horizon, ph.Bound
		if pd.Name != ph.Name {
			pd.Name += " / " + ph.Name
		}
	}
	for _, pd := range ids {
		pd.HorizonDelta, pd.BoundDelta = delta(pd.HorizonA, pd.HorizonB), delta(pd.BoundA, pd.BoundB)
		d.Phases = append(d.Phases, *pd)
	}
	slices.SortFunc(d.Phases, func(x, y PhaseDiff) int { return cmp.Compare(x.ID, y.ID) })
	return d, nil
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// pct is the relative change in percent, "" when a is 0.
func pct(a uint64, d int64) string {
	if a == 0 {
		if d == 0 {
			return "0.0%"
		}
		return "new"
	}
	return fmt.Sprintf("%+.1f%%", 100*float64(d)/float64(a))
}

// WriteText writes d as tables.
func (d *DiffResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "A: %s tiles=%d cycles=%d\n", d.A.Workload, d.A.Tiles, d.A.Cycles)
	fmt.Fprintf(w, "B: %s tiles=%d cycles=%d\n", d.B.Workload, d.B.Tiles, d.B.Cycles)
	fmt.Fprintf(w, "cycles: %+d (%s)\n", d.CyclesDelta, pct(d.A.Cycles, d.CyclesDelta))
	table := func(title string, rows []DiffRow) error {
		fmt.Fprintf(w, "\n%s\n", title)
		width := len("Kernel")
		for _, r := range rows {
			width = max(width, len(r.Key))
		}
		tw, done := newTable(w)
		fmt.Fprintf(tw, "%-*s\twork A\twork B\tdelta\t\ttimeline A\ttimeline B\tdelta\tmax/tile A\tmax/tile B\tdelta\t\n", width, strings.SplitN(title, " ", 2)[0])
		for _, r := range rows {
			fmt.Fprintf(tw, "%-*s\t%d\t%d\t%+d\t%s\t%d\t%d\t%+d\t%d\t%d\t%+d\t\n", width, r.Key, r.WorkA, r.WorkB, r.WorkDelta, pct(r.WorkA, r.WorkDelta),
				r.TimelineA, r.TimelineB, r.TimelineDelta, r.MaxA, r.MaxB, r.MaxDelta)
		}
		return done()
	}
	if err := table("Kind (cycles summed over tiles; timeline = cycles with any tile in the group)", d.Kinds); err != nil {
		return err
	}
	if err := table("Kernel (compute steps)", d.Kernels); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nExchange phases (scheduled horizon and endpoint lower bound)\n")
	tw, done := newTable(w)
	width := len("Phase")
	names := make([]string, len(d.Phases))
	for i, p := range d.Phases {
		names[i] = fmt.Sprintf("%d %s", p.ID, p.Name)
		switch {
		case !p.InA:
			names[i] += " (only in B)"
		case !p.InB:
			names[i] += " (only in A)"
		}
		width = max(width, len(names[i]))
	}
	fmt.Fprintf(tw, "%-*s\thorizon A\thorizon B\tdelta\t\tbound A\tbound B\tdelta\t\n", width, "Phase")
	for i, p := range d.Phases {
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%+d\t%s\t%d\t%d\t%+d\t\n", width, names[i], p.HorizonA, p.HorizonB, p.HorizonDelta, pct(p.HorizonA, p.HorizonDelta),
			p.BoundA, p.BoundB, p.BoundDelta)
	}
	return done()
}

// WriteJSON writes d as one indented JSON object.
func (d *DiffResult) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(d)
}
