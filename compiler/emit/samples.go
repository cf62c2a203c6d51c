package emit

import (
	"fmt"

	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/kernels"
)

// Step sampling (docs/PROFILE.md). Every tile's "run" call stores its
// cycle counter ($SCOUNT_L) at the end of every step of its timed part
// (between tile.OpSample 0 and 1): after each kernel call, after each
// exchange phase's `sync 3` (the end of its sync step) and after its row
// returns (the end of its exchange step). The samples go to the tile's
// sample area, a buffer (SampleBuf) that compiler/place places with the
// tile's other buffers: word 0 is a cursor, then one word per step in
// execution order, then a scratch word. run.start and run.end stay at
// ipu21.ProfileStartCycle and ProfileEndCycle.
//
// A sample is six supervisor instructions: get, setzi (the cursor's
// address), ld32 (the cursor), st32 (the sample), add, st32 (the cursor
// advanced by 4, or by 0 for a scratch sample that the next one
// overwrites). Every `sync 3` of every tile, active or idle, sampled or
// not (initialize, loops sampled as one step), is followed by the same
// six instructions, so the exchange rows stay aligned.
//
// Loops (tile.OpLoop: an MLP's blocks or row chunks when there are
// several) are sampled per iteration, the area sized by the loop counts,
// when that takes at most MaxSampleWords words; otherwise each top-level
// loop is sampled as one step (its body's samples are scratch), which
// keeps the area bounded whatever the loop counts.

// MaxSampleWords bounds a tile's sample area (in words).
const MaxSampleWords = 1024

// SampleBuf names the per-tile sample area in Addresses.
const SampleBuf = tile.ReservedPrefix + "samples"

// TimedStep is one sampled step of a tile's "run" call.
type TimedStep struct {
	Name   string // a kernel name (kernels.GemmF16 ...), "sync gather rows", "exchange gather rows", "loop 4x", "run.end"
	Kind   string // "compute", "exchange", "sync" or "host"
	Kernel string // kernel of a compute step
	Phase  int    // exchange phase of a sync or exchange step; -1 otherwise
	Op     *tile.Op
	// Iter is the step's iteration of each enclosing loop, by loop depth
	// (tile.Op.Depth; zero outside loops and for a loop sampled whole).
	Iter [tile.MaxLoopDepth]int
}

// TimedSteps lists the sampled steps of a tile's "run" call in execution
// order (loops expanded when sampled per iteration: ringSamples). The
// last is run.end (sampled at ipu21.ProfileEndCycle); the others are the
// sample area's words 1.. in order.
func TimedSteps(pl *tile.Program, t *tile.TileProgram) []TimedStep {
	return timedSteps(pl, t, ringSamples(pl, t))
}

// ringSamples reports whether the tile's loops are sampled per iteration.
func ringSamples(pl *tile.Program, t *tile.TileProgram) bool {
	return countSteps(t, true)+1 <= MaxSampleWords
}

// countSteps is len(timedSteps(pl, t, ring)) without building the steps
// (their names are formatted strings): placement sizes every tile's sample
// area, some 10^5 times a build, and only needs the count. It follows
// timedSteps case by case (TestCountSteps compares them).
func countSteps(t *tile.TileProgram, ring bool) int {
	var count func(ops []tile.Op) int
	count = func(ops []tile.Op) int {
		n := 0
		for i := range ops {
			switch op := &ops[i]; op.Kind {
			case tile.OpKernel, tile.OpHostCopy, tile.OpHostSync:
				n++
			case tile.OpExchange:
				n += 2 // its sync step and its exchange step
			case tile.OpLoop:
				if !ring {
					n++
					continue
				}
				n += max(op.Count, 0) * count(op.Body) // timedSteps visits the body Count times
			}
		}
		return n
	}
	body, end, ok := timedSpan(t.Calls[1])
	if !ok {
		return 0
	}
	n := count(body)
	if end != nil {
		n++ // run.end
	}
	return n
}

// timedSpan is the run call's timed ops: those after its run.start
// sample (Sample 0) up to the next sample, which is end (nil: none).
func timedSpan(run []tile.Op) (body []tile.Op, end *tile.Op, ok bool) {
	for i := range run {
		if run[i].Kind != tile.OpSample || run[i].Sample != 0 {
			continue
		}
		j := i + 1
		for j < len(run) && run[j].Kind != tile.OpSample {
			j++
		}
		if j < len(run) {
			end = &run[j]
		}
		return run[i+1 : j], end, true
	}
	return nil, nil, false
}

func timedSteps(pl *tile.Program, t *tile.TileProgram, ring bool) []TimedStep {
	var out []TimedStep
	var iter [tile.MaxLoopDepth]int
	var visit func(ops []tile.Op)
	add := func(steps ...TimedStep) {
		for _, st := range steps {
			st.Iter = iter
			out = append(out, st)
		}
	}
	visit = func(ops []tile.Op) {
		for i := range ops {
			op := &ops[i]
			switch op.Kind {
			case tile.OpKernel:
				add(TimedStep{Name: op.Kernel, Kind: "compute", Kernel: op.Kernel, Phase: -1, Op: op})
			case tile.OpHostCopy:
				add(TimedStep{Name: "host copy", Kind: "host", Kernel: kernels.CopyF16, Phase: -1, Op: op})
			case tile.OpHostSync:
				add(TimedStep{Name: "host sync", Kind: "host", Phase: -1, Op: op})
			case tile.OpExchange:
				name := fmt.Sprint(op.Phase)
				if op.Phase >= 0 && op.Phase < len(pl.Exchanges) {
					name = pl.Exchanges[op.Phase].Name
				}
				add(
					TimedStep{Name: "sync " + name, Kind: "sync", Phase: op.Phase, Op: op},
					TimedStep{Name: "exchange " + name, Kind: "exchange", Phase: op.Phase, Op: op})
			case tile.OpLoop:
				if !ring {
					add(TimedStep{Name: fmt.Sprintf("loop %dx", op.Count), Kind: "compute", Phase: -1, Op: op})
					continue
				}
				for k := range op.Count {
					if op.Depth >= 0 && op.Depth < tile.MaxLoopDepth {
						iter[op.Depth] = k
					}
					visit(op.Body)
				}
				if op.Depth >= 0 && op.Depth < tile.MaxLoopDepth {
					iter[op.Depth] = 0
				}
			}
		}
	}
	if body, end, ok := timedSpan(t.Calls[1]); ok {
		visit(body)
		if end != nil {
			out = append(out, TimedStep{Name: "run.end", Kind: "sync", Phase: -1, Op: end})
		}
	}
	return out
}

// SampleWords is the size in words of a tile's sample area: the cursor,
// one per step but run.end, and the scratch word.
func SampleWords(pl *tile.Program, t *tile.TileProgram) int {
	return countSteps(t, ringSamples(pl, t)) + 1
}

// sampleBuffer is the tile's sample area as a buffer to place.
func sampleBuffer(pl *tile.Program, t *tile.TileProgram) tile.Buffer {
	return tile.Buffer{Name: SampleBuf, Bytes: 4 * SampleWords(pl, t), Align: 8}
}
