package low

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// DefaultFinalists is how many candidates the driver reranks by default.
const DefaultFinalists = 8

// Choice names a compiler/mid plan: each GEMM's grid in graph order, its
// row chunks and its runtime loop over blocks. A package records the
// chosen one (driver.Recipe.Plan) so that its plan can be rebuilt without
// the rerank (mid.Rebuild).
type Choice struct {
	// Q is the plan's row chunks (zero for none).
	Q int `json:"q,omitempty"`
	// Mid lists each GEMM's grid in graph order.
	Mid []GemmGrid `json:"mid,omitempty"`
	// Loop, when not zero, makes the mid plan a runtime loop over that
	// many blocks (mid.Plan.Loop; 1: a chain in row chunks looped over
	// its one block): Mid then lists one block's grids.
	Loop int `json:"loop,omitempty"`
	// legacy describes the choice of the removed fixed-grid plan family that a
	// package built before it was removed recorded (see UnmarshalJSON);
	// empty otherwise.
	legacy string
}

// UnmarshalJSON decodes a recorded choice. A choice of the removed fixed-grid
// plan family (grid rows and columns "r" and "c", "stream",
// "column_major") decodes without error, so that such a package's recipe
// still reads, but Check refuses it.
func (c *Choice) UnmarshalJSON(b []byte) error {
	type plain Choice
	var aux struct {
		plain
		R        int  `json:"r"`
		C        int  `json:"c"`
		Stream   bool `json:"stream"`
		ColMajor bool `json:"column_major"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*c = Choice(aux.plain)
	if aux.R != 0 || aux.C != 0 || aux.Stream || aux.ColMajor {
		c.legacy = fmt.Sprintf("%dx%d q=%d stream=%v colmajor=%v", aux.R, aux.C, aux.Q, aux.Stream, aux.ColMajor)
	}
	return nil
}

// Check reports a choice that names no compiler/mid plan: one recorded by
// a package of the removed fixed-grid plan family, or one without grids.
func (c Choice) Check() error {
	switch {
	case c.legacy != "":
		return fmt.Errorf("the recorded plan %s is a plan of the removed fixed-grid family, no longer supported; rebuild the package", c.legacy)
	case len(c.Mid) == 0:
		return fmt.Errorf("the recorded plan names no GEMM grids; rebuild the package")
	}
	return nil
}

// GemmGrid is one GEMM's grid in a compiler/mid plan: row blocks x column
// blocks x K blocks.
type GemmGrid struct {
	Rows  int `json:"rows"`
	Cols  int `json:"cols"`
	Inner int `json:"inner"`
	// Streamed: the weights stream from home shares (mid.WeightsStreamed).
	Streamed bool `json:"streamed,omitempty"`
}

func (c Choice) String() string {
	if c.legacy != "" {
		return "fixed-grid " + c.legacy
	}
	s := "mid"
	for _, g := range c.Mid {
		s += " " + mid.Grid{Rows: g.Rows, Cols: g.Cols, Inner: g.Inner, Streamed: g.Streamed}.String()
	}
	if c.Q > 1 {
		s += fmt.Sprintf(" q=%d", c.Q)
	}
	if c.Loop > 0 {
		s += fmt.Sprintf(" loop=%d", c.Loop)
	}
	return s
}

// Equal reports whether two choices name the same plan.
func (c Choice) Equal(o Choice) bool {
	return c.legacy == o.legacy && max(c.Q, 1) == max(o.Q, 1) && slices.Equal(c.Mid, o.Mid) && c.Loop == o.Loop
}

// Choice names the plan.
func (pl *Plan) Choice() Choice {
	var ch Choice
	for _, g := range pl.Mid.Body() {
		gr := g.Grid()
		ch.Mid = append(ch.Mid, GemmGrid{Rows: gr.Rows, Cols: gr.Cols, Inner: gr.Inner, Streamed: gr.Streamed})
	}
	if pl.Mid.Chunks > 1 {
		ch.Q = pl.Mid.Chunks
	}
	ch.Loop = pl.Mid.Loop()
	return ch
}

// addHostSkew charges the estimate with HostSkewCycles (as copy cycles).
func (pl *Plan) addHostSkew() {
	s := pl.HostSkewCycles()
	pl.Estimate.Copy += s
	pl.Estimate.Total += s
}

// HostSkewCycles is how much later the last active tile starts its timed
// span than the first: every tile samples run.start after copying its
// last piece of the input from the host window, and the first exchange
// (or the final sync) waits for all of them, so a tile with less to copy
// spends the difference waiting inside its span, and the metrics' cycles
// (the longest span) include it.
func (pl *Plan) HostSkewCycles() int {
	lo, hi := -1, 0
	for l := range pl.Programs {
		t := &pl.Programs[l]
		if !t.Active() {
			continue
		}
		c := 0
		for _, op := range t.Calls[1] {
			switch op.Kind {
			case tile.OpHostSync:
				c = 0
			case tile.OpHostCopy:
				c += int(cost.Call(kernels.Copy{N: op.Bytes})) // a host copy runs copy_f16
			}
			if op.Kind == tile.OpSample {
				break
			}
		}
		if lo < 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	return max(0, hi-lo)
}

// PhaseRuns is how many times each exchange phase runs in the timed part
// of call "run" (between its two cycle samples; loops multiply), for the
// tile that runs it most. Phases run by "initialize" only count 0.
func (pl *Plan) PhaseRuns() []int {
	runs := make([]int, len(pl.Exchanges))
	perTile := make([]int, len(pl.Exchanges))
	for l := range pl.Programs {
		clear(perTile)
		timed := false
		var walk func(ops []tile.Op, mult int)
		walk = func(ops []tile.Op, mult int) {
			for _, op := range ops {
				switch op.Kind {
				case tile.OpSample:
					timed = op.Sample == 0
				case tile.OpExchange:
					if timed {
						perTile[op.Phase] += mult
					}
				case tile.OpLoop:
					walk(op.Body, mult*op.Count)
				}
			}
		}
		walk(pl.Programs[l].Calls[1], 1)
		for i, n := range perTile {
			runs[i] = max(runs[i], n)
		}
	}
	return runs
}

// PhaseOverheadCycles is what the cost model charges one exchange phase
// beyond the phase itself (its events from the common start to the last
// tile's last event, which include the route and payload latency): the
// global sync and the supervisor's sync 2 / sync 3, the same for every
// plan.
func (pl *Plan) PhaseOverheadCycles() int {
	return ipu21.GlobalSyncCycles + cost.PhaseCycles
}

// Costed returns the estimate with the modelled exchange replaced by the
// scheduled phases: horizons[i] is phase i's scheduled horizon (events),
// charged PhaseRuns()[i] times plus PhaseOverheadCycles each.
func (pl *Plan) Costed(horizons []int) cost.Estimate {
	e := pl.Estimate
	runs := pl.PhaseRuns()
	x := 0
	for i, n := range runs {
		if n == 0 || horizons[i] == 0 {
			continue
		}
		x += n * (horizons[i] + pl.PhaseOverheadCycles())
	}
	e.Total += x - e.Exchange
	e.Exchange = x
	return e
}

// PhaseLowerBounds is, for each exchange phase, a lower bound on the
// horizon of any schedule of it: the largest number of items any tile
// sends or receives, every tile moving at most one item per event. A
// word is an item, except that a multicast may reach a destination whose
// pair partner it also reaches as 8-byte paired items (half the events,
// and the sender's partner carries them too); the bound counts every such
// destination, and its sender, at the paired rate, so it holds whichever
// way compiler/exchange sends the phase (splitting and chunking only add
// sends).
func (pl *Plan) PhaseLowerBounds() []int {
	out := make([]int, len(pl.Exchanges))
	send := make([]int, len(pl.Programs))
	recv := make([]int, len(pl.Programs))
	partnerOf := map[int]int{} // physical -> logical
	for l := range pl.Programs {
		partnerOf[pl.Programs[l].Physical] = l
	}
	for i, ph := range pl.Exchanges {
		clear(send)
		clear(recv)
		for _, t := range ph.Transfers {
			dst := map[int]bool{}
			for _, d := range t.Dsts {
				dst[d.Tile] = true
			}
			pairable := false
			for _, d := range t.Dsts {
				p, ok := partnerOf[ipu21.Partner(pl.Programs[d.Tile].Physical)]
				if ok && dst[p] {
					pairable = true
					recv[d.Tile] += t.Words / 2
				} else {
					recv[d.Tile] += t.Words
				}
			}
			if pairable {
				send[t.Src] += t.Words / 2
			} else {
				send[t.Src] += t.Words
			}
		}
		for l := range send {
			out[i] = max(out[i], send[l], recv[l])
		}
	}
	return out
}
