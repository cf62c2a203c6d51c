package emit

import (
	"testing"

	"github.com/ipustack/ipustack/compiler/low"
)

// TestCountSteps: countSteps counts what timedSteps lists, loops sampled
// per iteration or as one step, nested or not, with steps outside the
// timed part.
func TestCountSteps(t *testing.T) {
	k := low.Op{Kind: low.OpKernel, Kernel: "gemm_f16"}
	x := low.Op{Kind: low.OpExchange, Phase: 0}
	loop := func(n int, body ...low.Op) low.Op { return low.Op{Kind: low.OpLoop, Count: n, Body: body} }
	s0, s1 := low.Op{Kind: low.OpSample, Sample: 0}, low.Op{Kind: low.OpSample, Sample: 1}
	pl := &low.Plan{Exchanges: []low.XPhase{{Name: "gather"}}}
	for i, run := range [][]low.Op{
		nil,
		{k, x},
		{s0, k, x, s1},
		{s0, k, x},
		{k, s0, {Kind: low.OpHostCopy}, {Kind: low.OpHostSync}, k, s1, k},
		{s0, loop(4, k, x), s1},
		{s0, loop(3, k, loop(5, x, k), x), k, s1},
		{s0, loop(40, loop(40, k, x)), s1},
		{s0, loop(0, k), loop(-1, k), s1},
	} {
		tp := &low.TileProgram{Calls: [2][]low.Op{{k}, run}}
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
