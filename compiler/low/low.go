package low

import (
	"errors"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/compiler/tile/passes"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Plan is the low-level program of the whole package: the per-tile
// program (tile.Program, what compiler/place, the passes and
// compiler/emit read) and what the planner knows of it.
type Plan struct {
	tile.Program
	Problem *Problem
	// Estimate is the mid plan's cost record (mid.Plan.Estimate) and
	// the host skew (HostSkewCycles, as copy).
	Estimate cost.Estimate
	// GeluPrecise selects gelu_f16 precise=1.
	GeluPrecise bool
	// Conservative: the GEMMs use kernels.GemmF16For(true), correct
	// under the emulator's conservative assumptions.
	Conservative bool
	// Mid is the compiler/mid plan this plan was lowered from.
	Mid *mid.Plan
	// Passes are the reports of Optimize, when it ran.
	Passes []passes.Report
}

// Optimize runs the passes (compiler/tile/passes: group_exchanges,
// merge_copies, eliminate) over the plan's per-tile program and returns
// their reports, also kept in pl.Passes for the build's log.
func Optimize(pl *Plan) []passes.Report {
	if pl == nil {
		return passes.Optimize(nil)
	}
	pl.Passes = passes.Optimize(&pl.Program)
	return pl.Passes
}

// OptimizeVerified is Optimize with the per-tile program verified
// (tile.Program.Verify) before the first pass and after every one
// (passes.OptimizeVerified): the tests' and the driver's check mode.
func OptimizeVerified(pl *Plan) ([]passes.Report, error) {
	if pl == nil {
		return nil, errors.New("low: nil plan")
	}
	reps, err := passes.OptimizeVerified(&pl.Program)
	if err != nil {
		return nil, err
	}
	pl.Passes = reps
	return reps, nil
}

// Options configure FromMid.
type Options struct {
	Tiles int
	// Fits reports whether a tile's buffers can be placed (compiler/place);
	// nil accepts every grid.
	Fits func([]tile.Buffer) error
	// MaxPhases is how many exchange phases the runtime's row table holds
	// (compiler/tile.MaxRowPhases); 0 sets no limit. A mid plan with more
	// is refused (so that the rerank drops it).
	MaxPhases int
	// GeluPrecise selects gelu_f16 precise=1 (f32 steps, 23 bundles per 4
	// values) instead of the fast f16 form (9 bundles, |error| <= 2.1e-3
	// before GEMM2, well inside the output tolerance).
	GeluPrecise bool
	// Conservative plans and costs the GEMM kernel that is correct under
	// the emulator's conservative assumptions (kernels.GemmF16For(true):
	// no AMP state kept between worker runs) instead of gemm_f16.
	Conservative bool
}

// pieces cuts a slice into slot-sized parts.
func pieces(length int) [][2]int {
	var ps [][2]int
	for off := 0; off < length; off += tile.SlotSize {
		ps = append(ps, [2]int{off, min(tile.SlotSize, length-off)})
	}
	return ps
}

type upload struct {
	kind    ipuexe.BindingKind
	binding int
	slice   int
	dst     tile.Ref
	length  int
}

// initPrograms makes every tile's (inactive) program.
func (pl *Plan) initPrograms() {
	pl.Programs = make([]tile.TileProgram, pl.Tiles)
	for l := range pl.Programs {
		pl.Programs[l] = tile.TileProgram{Logical: l, Physical: ipu21.LogicalToPhysical(l), Row: -1, Col: -1}
	}
}

// phase adds an exchange phase and returns its ID.
func (pl *Plan) phase(name string) int {
	pl.Exchanges = append(pl.Exchanges, tile.XPhase{ID: len(pl.Exchanges), Name: name})
	return len(pl.Exchanges) - 1
}

// hostCalls builds the host calls from the bindings and every tile's two
// calls: "initialize" uploads the weights (one slot-sized piece per host
// phase) then runs init; "run" uploads the inputs, samples the start,
// runs timed, samples the end and serves the output read-back phases.
func (pl *Plan) hostCalls(ops func(t *tile.TileProgram) (init, timed []tile.Op)) {
	uploads := func(kind ipuexe.BindingKind, bs []tile.HostBinding) map[int][]upload {
		m := map[int][]upload{}
		for b, hb := range bs {
			for s, sl := range hb.Slices {
				m[sl.Tile] = append(m[sl.Tile], upload{kind, b, s, sl.Ref, sl.Length})
			}
		}
		return m
	}
	hostPhases := func(up map[int][]upload) (phases [][]tile.HostTransfer, copies map[int][][]tile.Op) {
		copies = map[int][][]tile.Op{}
		for l := 0; l < pl.Tiles; l++ {
			k := 0
			for _, u := range up[l] {
				for _, pc := range pieces(u.length) {
					for len(phases) <= k {
						phases = append(phases, nil)
					}
					phases[k] = append(phases[k], tile.HostTransfer{Kind: u.kind, Binding: u.binding, Slice: u.slice,
						SliceOffset: pc[0], Length: pc[1], Tile: l})
					for len(copies[l]) <= k {
						copies[l] = append(copies[l], nil)
					}
					copies[l][k] = append(copies[l][k], tile.Op{Kind: tile.OpHostCopy, Dst: tile.Ref{Buf: u.dst.Buf, Off: u.dst.Off + pc[0]}, Bytes: pc[1]})
					k++
				}
			}
		}
		return phases, copies
	}
	initPhases, initCopies := hostPhases(uploads(ipuexe.KindWeight, pl.Weights))
	runPhases, runCopies := hostPhases(uploads(ipuexe.KindInput, pl.Inputs))
	// Outputs: one piece per phase per tile.
	var outPhases [][]tile.HostTransfer
	next := map[int]int{} // the next phase of each tile's slot
	for b, ob := range pl.Outputs {
		for s, sl := range ob.Slices {
			for _, pc := range pieces(sl.Length) {
				k := next[sl.Tile]
				next[sl.Tile]++
				for len(outPhases) <= k {
					outPhases = append(outPhases, nil)
				}
				outPhases[k] = append(outPhases[k], tile.HostTransfer{Kind: ipuexe.KindOutput, Binding: b, Slice: s,
					SliceOffset: pc[0], Length: pc[1], Tile: sl.Tile})
			}
		}
	}
	pl.Calls = []tile.HostCall{
		{Name: tile.CallInitialize, Command: 0, Phases: initPhases},
		{Name: tile.CallRun, Command: 1, Phases: append(runPhases, outPhases...)},
	}
	count := func(cs [][]tile.Op) int {
		n := 0
		for _, c := range cs {
			n += len(c)
		}
		return n
	}
	for l := range pl.Programs {
		t := &pl.Programs[l]
		in, timed := ops(t)
		// Sized once: Op is large and there are many tiles.
		init := make([]tile.Op, 0, len(initPhases)+count(initCopies[l])+len(in))
		run := make([]tile.Op, 0, len(runPhases)+count(runCopies[l])+2+len(timed)+len(outPhases))
		for k := range initPhases {
			init = append(init, tile.Op{Kind: tile.OpHostSync})
			if k < len(initCopies[l]) {
				init = append(init, initCopies[l][k]...)
			}
		}
		for k := range runPhases {
			run = append(run, tile.Op{Kind: tile.OpHostSync})
			if k < len(runCopies[l]) {
				run = append(run, runCopies[l][k]...)
			}
		}
		init = append(init, in...)
		run = append(run, tile.Op{Kind: tile.OpSample, Sample: 0})
		run = append(run, timed...)
		run = append(run, tile.Op{Kind: tile.OpSample, Sample: 1})
		for range outPhases {
			run = append(run, tile.Op{Kind: tile.OpHostSync})
		}
		t.Calls = [2][]tile.Op{init, run}
	}
}

// SupervisorInstructions counts the instructions compiler/emit generates
// for ops: one setzi per kernel argument plus the call, five more per
// strided argument and loop level, six per exchange phase, two per sample,
// and per loop its counter set-up and test.
func SupervisorInstructions(ops []tile.Op) int {
	n := 0
	for _, op := range ops {
		switch op.Kind {
		case tile.OpHostSync:
			n++
		case tile.OpHostCopy:
			n += 3
		case tile.OpKernel:
			n += len(op.Args) + 1
			for _, a := range op.Args {
				for _, st := range a.Ref.Step {
					if st != 0 {
						n += 5
					}
				}
			}
		case tile.OpExchange:
			n += 6
		case tile.OpSample:
			n += 4
		case tile.OpLoop:
			n += 9 + SupervisorInstructions(op.Body)
		}
	}
	return n
}
