package mid

import (
	"fmt"
	"slices"
	"sort"

	"github.com/ipustack/ipustack/graph"
)

// holdKey names what a tile holds: a value, or one partial of a Gemm.
type holdKey struct {
	tile, value, part int
}

// placement is the simulated data placement of a plan: the rectangles each
// tile holds, per value.
type placement map[holdKey][]Ref

func (pl placement) add(tile int, r Ref) {
	k := holdKey{tile, r.Value.ID, r.Part}
	pl[k] = append(pl[k], r)
}

// covers reports whether the rectangles held cover r entirely.
func (pl placement) covers(tile int, r Ref) bool {
	held := pl[holdKey{tile, r.Value.ID, r.Part}]
	if r.Rows.Len() <= 0 || r.Cols.Len() <= 0 {
		return true
	}
	// Elementary cells from every breakpoint inside r.
	xs := []int{r.Rows.Lo, r.Rows.Hi}
	ys := []int{r.Cols.Lo, r.Cols.Hi}
	for _, h := range held {
		for _, x := range []int{h.Rows.Lo, h.Rows.Hi} {
			if x > r.Rows.Lo && x < r.Rows.Hi {
				xs = append(xs, x)
			}
		}
		for _, y := range []int{h.Cols.Lo, h.Cols.Hi} {
			if y > r.Cols.Lo && y < r.Cols.Hi {
				ys = append(ys, y)
			}
		}
	}
	sort.Ints(xs)
	sort.Ints(ys)
	for a := 0; a+1 < len(xs); a++ {
		if xs[a] == xs[a+1] {
			continue
		}
		for b := 0; b+1 < len(ys); b++ {
			if ys[b] == ys[b+1] {
				continue
			}
			in := false
			for _, h := range held {
				if h.Rows.Lo <= xs[a] && xs[a+1] <= h.Rows.Hi && h.Cols.Lo <= ys[b] && ys[b+1] <= h.Cols.Hi {
					in = true
					break
				}
			}
			if !in {
				return false
			}
		}
	}
	return true
}

// Check simulates the plan's data placement: inputs where the host writes
// them, weights resident on their tiles; then, stage by stage, every
// transfer's source must hold what it sends (it then lands on every
// receiver) and every kernel call's operands must be on its tile before it
// runs (its results then are). Finally every graph output must be complete
// in memory, and the plan's totals must add up.
func (p *Plan) Check() error {
	pl := placement{}
	for _, n := range p.Graph.Nodes() {
		f := p.Formats[n.ID]
		if f == nil || (n.Op != graph.OpInput && n.Op != graph.OpParameter) {
			continue
		}
		for _, pc := range f.Pieces {
			pl.add(pc.Tile, Ref{n, -1, pc.Rows, pc.Cols})
		}
	}
	var total int64
	for _, st := range p.Stages {
		total += st.Cycles
		switch st.Kind {
		case ExchangeStage:
			// All sends read the state before the phase.
			for _, tr := range st.Transfers {
				if !pl.covers(tr.From, tr.Ref) {
					return fmt.Errorf("stage %s: tile %d sends %v which it does not hold", st.Name, tr.From, tr.Ref)
				}
				if len(tr.To) == 0 {
					return fmt.Errorf("stage %s: transfer of %v from tile %d has no receiver", st.Name, tr.Ref, tr.From)
				}
			}
			for _, tr := range st.Transfers {
				for _, to := range tr.To {
					if to == tr.From {
						return fmt.Errorf("stage %s: tile %d sends %v to itself", st.Name, to, tr.Ref)
					}
					pl.add(to, tr.Ref)
				}
			}
		case ComputeStage:
			for _, c := range st.Calls {
				for _, r := range c.Reads {
					if !pl.covers(c.Tile, r) {
						return fmt.Errorf("stage %s: tile %d: %s reads %v which is not on the tile", st.Name, c.Tile, c.Spec.Name(), r)
					}
				}
				for _, w := range c.Writes {
					pl.add(c.Tile, w)
				}
			}
		}
	}
	var once int64 // per chunk, outside the blocks' loop
	for _, st := range append(slices.Clone(p.Prologue), p.Epilogue...) {
		for _, c := range st.Calls {
			for _, r := range c.Reads {
				if !pl.covers(c.Tile, r) {
					return fmt.Errorf("stage %s: tile %d: %s reads %v which is not on the tile", st.Name, c.Tile, c.Spec.Name(), r)
				}
			}
		}
		once += st.Cycles
	}
	if (total*int64(p.Repeat())+once)*int64(p.Chunks) != p.Cycles {
		return fmt.Errorf("stage cycles add up to %d per block and %d per chunk (%d chunks, %d blocks), plan says %d", total, once, p.Chunks, p.Repeat(), p.Cycles)
	}
	if p.SearchCycles != p.Cycles {
		return fmt.Errorf("search costed %d cycles, materialised plan %d", p.SearchCycles, p.Cycles)
	}
	if e, err := p.record(); err != nil {
		return fmt.Errorf("cost record: %w", err)
	} else if e.Total != int(p.Cycles) {
		return fmt.Errorf("cost record totals %d cycles (%+v), plan says %d", e.Total, e, p.Cycles)
	}
	for _, o := range p.Graph.Outputs() {
		f := p.Formats[o.Node.ID]
		if f == nil {
			return fmt.Errorf("output %q has no format", o.Name)
		}
		// The pieces must tile the whole padded value and be present:
		// in a looped plan, as the result of the block's last GEMM (the
		// stages are the first block's).
		held := o.Node
		if p.Period > 0 {
			held = p.Gemms[p.Period-1].Out
		}
		area := 0
		for _, pc := range f.Pieces {
			r := Ref{held, -1, pc.Rows, pc.Cols}
			if !pl.covers(pc.Tile, r) {
				return fmt.Errorf("output %q: tile %d lacks %v", o.Name, pc.Tile, r)
			}
			area += pc.Rows.Len() * pc.Cols.Len()
		}
		if area != f.Rows*f.Cols {
			return fmt.Errorf("output %q: pieces cover %d elements of %d", o.Name, area, f.Rows*f.Cols)
		}
	}
	return nil
}
