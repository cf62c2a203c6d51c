package emit

import (
	"testing"

	"github.com/ipustack/ipustack/compiler/tile"
)

// TestCountSteps: countSteps counts what timedSteps lists, loops sampled
// per iteration or as one step, nested or not, with steps outside the
// timed part.
func TestCountSteps(t *testing.T) {
	k := tile.Op{Kind: tile.OpKernel, Kernel: "gemm_f16"}
	x := tile.Op{Kind: tile.OpExchange, Phase: 0}
	loop := func(n int, body ...tile.Op) tile.Op { return tile.Op{Kind: tile.OpLoop, Count: n, Body: body} }
	s0, s1 := tile.Op{Kind: tile.OpSample, Sample: 0}, tile.Op{Kind: tile.OpSample, Sample: 1}
	pl := &tile.Program{Exchanges: []tile.XPhase{{Name: "gather"}}}
	for i, run := range [][]tile.Op{
		nil,
		{k, x},
		{s0, k, x, s1},
		{s0, k, x},
		{k, s0, {Kind: tile.OpHostCopy}, {Kind: tile.OpHostSync}, k, s1, k},
		{s0, loop(4, k, x), s1},
		{s0, loop(3, k, loop(5, x, k), x), k, s1},
		{s0, loop(40, loop(40, k, x)), s1},
		{s0, loop(0, k), loop(-1, k), s1},
	} {
		tp := &tile.TileProgram{Calls: [2][]tile.Op{{k}, run}}
		for _, ring := range []bool{false, true} {
			if got, want := countSteps(tp, ring), len(timedSteps(pl, tp, ring)); got != want {
				t.Errorf("program %d ring=%v: countSteps %d, timedSteps lists %d", i, ring, got, want)
			}
		}
		if got, want := SampleWords(pl, tp), len(TimedSteps(pl, tp))+1; got != want {
			t.Errorf("program %d: SampleWords %d, want %d", i, got, want)
		}
	}
}

// A step sampled per iteration carries its iteration of each enclosing
// loop (by loop depth); a loop sampled whole and the steps outside loops
// carry zeros.
func TestTimedStepIterations(t *testing.T) {
	k := tile.Op{Kind: tile.OpKernel, Kernel: "copy_f16"}
	s0, s1 := tile.Op{Kind: tile.OpSample, Sample: 0}, tile.Op{Kind: tile.OpSample, Sample: 1}
	inner := tile.Op{Kind: tile.OpLoop, Count: 3, Depth: 1, Body: []tile.Op{k}}
	outer := tile.Op{Kind: tile.OpLoop, Count: 2, Depth: 0, Body: []tile.Op{k, inner}}
	tp := &tile.TileProgram{Calls: [2][]tile.Op{nil, {s0, k, outer, k, s1}}}
	var got [][tile.MaxLoopDepth]int
	for _, st := range timedSteps(&tile.Program{}, tp, true) {
		got = append(got, st.Iter)
	}
	want := [][tile.MaxLoopDepth]int{{0, 0}, {0, 0}, {0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 0}, {1, 1}, {1, 2}, {0, 0}, {0, 0}}
	if len(got) != len(want) {
		t.Fatalf("%d steps, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d: iterations %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
	for _, st := range timedSteps(&tile.Program{}, tp, false) {
		if st.Iter != [tile.MaxLoopDepth]int{} {
			t.Errorf("loops sampled whole: step %s has iterations %v", st.Name, st.Iter)
		}
	}
}
