package low

import (
	"strings"
	"testing"

	"github.com/ipustack/ipustack/graph"
)

func mlpProblem(t *testing.T, c graph.MLPConfig) *Problem {
	t.Helper()
	g, err := graph.MLPGraph(c, 1, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Recognize(g)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRecognizeBlocksAndBiases(t *testing.T) {
	p := mlpProblem(t, graph.MLPConfig{Batch: 2, Tokens: 5, Dim: 24, Hidden: 40, Blocks: 3, Biases: true})
	if p.Kind != KindMLP || p.M != 10 || p.K != 24 || p.N != 40 || len(p.Blocks) != 3 || !p.Biases {
		t.Fatalf("%+v", p)
	}
	if b := p.Blocks[2]; b.W1 != "block2.fc1.weight" || b.W2 != "block2.fc2.weight" || b.B1 != "block2.fc1.bias" || b.B2 != "block2.fc2.bias" {
		t.Fatalf("block 2: %+v", b)
	}
	g, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 5, Dim: 24, Hidden: 40, Blocks: 1}, 1, graph.GeluErf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Recognize(g); err == nil || !strings.Contains(err.Error(), "not supported yet") {
		t.Fatalf("erf GELU: %v", err)
	}
}

// The pieces of a chunk partition its flat panel in whole panel rows, and
// the chunks of a row block cover its rows.
func TestPiecesPartition(t *testing.T) {
	for _, c := range []struct{ m, kp, r, cc, q int }{{729, 1152, 27, 54, 1}, {77, 80, 8, 7, 3}, {30, 48, 1, 1, 7}, {1458, 1152, 27, 54, 2}} {
		g := Grid{R: c.r, C: c.cc, Kp: c.kp, Q: c.q, RowStart: split(c.m, c.r)}
		for i := 0; i < g.R; i++ {
			rc := g.ChunkRows(i)
			if rc*g.Q < g.Rows(i) || (rc-1)*g.Q >= g.Rows(i) {
				t.Errorf("%+v: row block %d of %d rows: %d chunks of %d rows", c, i, g.Rows(i), g.Q, rc)
			}
			next := 0
			for j := 0; j < g.C; j++ {
				start, n := g.Piece(rc, j)
				if start != next || start%16 != 0 || n%16 != 0 {
					t.Fatalf("%+v: piece %d = [%d, +%d), want start %d, whole panel rows", c, j, start, n, next)
				}
				next = start + n
			}
			if next != rc*g.Kp {
				t.Fatalf("%+v: pieces cover %d of %d values", c, next, rc*g.Kp)
			}
		}
	}
}

func TestLowerMLPChoices(t *testing.T) {
	// Default SigLIP shape on all tiles: one chunk, resident weights.
	p := mlpProblem(t, graph.DefaultMLP)
	pl, err := Lower(p, Options{Tiles: 1472})
	if err != nil {
		t.Fatal(err)
	}
	if g := pl.Grid; g.Q != 1 || g.Stream || g.R*g.C < 1400 {
		t.Errorf("default: grid %dx%d q=%d stream=%v", g.R, g.C, g.Q, g.Stream)
	}
	if n := mlpCodeBytes(p, &pl.Grid); n > CodeBytes {
		t.Errorf("default plan's code estimate %d exceeds %d", n, CodeBytes)
	}
	// Without a memory check every grid fits; a forced chunking is kept.
	pl, err = Lower(p, Options{Tiles: 368, ForceQ: 4})
	if err != nil || pl.Grid.Q != 4 {
		t.Fatalf("forced q=4: %v", err)
	}
	// Bad requests are errors, not panics.
	for _, o := range []Options{{Tiles: 0}, {Tiles: 1473}, {Tiles: 4, ForceC: 1000}, {Tiles: 4, ForceR: 9}} {
		if _, err := Lower(p, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestLoopOps(t *testing.T) {
	kern := func(off int) Op {
		return Op{Kind: OpKernel, Kernel: "copy_f16", Params: map[string]int{"n": 64},
			Args: []Arg{{"$m2", Ref{Buf: "a", Off: off}}, {"$m3", Ref{Buf: "b"}}}}
	}
	// Affine bodies become one loop with the step in the ref.
	ops := loopOps(5, 1, func(k int) []Op { return []Op{kern(100 + 64*k), {Kind: OpExchange, Phase: 2}} })
	if len(ops) != 1 || ops[0].Kind != OpLoop || ops[0].Count != 5 || ops[0].Depth != 1 ||
		ops[0].Body[0].Args[0].Ref != (Ref{Buf: "a", Off: 100, Step: [MaxLoopDepth]int{0, 64}}) {
		t.Fatalf("%+v", ops)
	}
	// Nested: the outer step lands in Step[0], the inner loop is kept.
	nested := loopOps(3, 0, func(b int) []Op {
		return loopOps(4, 1, func(q int) []Op { return []Op{kern(1000*b + 8*q)} })
	})
	if len(nested) != 1 || nested[0].Body[0].Kind != OpLoop ||
		nested[0].Body[0].Body[0].Args[0].Ref.Step != [MaxLoopDepth]int{1000, 8} {
		t.Fatalf("%+v", nested)
	}
	// A non-affine body (a quadratic offset, or a parameter that changes)
	// is unrolled.
	if ops := loopOps(4, 0, func(k int) []Op { return []Op{kern(k * k)} }); len(ops) != 4 || ops[3].Args[0].Ref.Off != 9 {
		t.Fatalf("%+v", ops)
	}
	if ops := loopOps(3, 0, func(k int) []Op { o := kern(0); o.Params = map[string]int{"n": 8 * (k + 1)}; return []Op{o} }); len(ops) != 3 {
		t.Fatalf("%+v", ops)
	}
	if ops := loopOps(1, 0, func(k int) []Op { return []Op{kern(0)} }); len(ops) != 1 || ops[0].Kind != OpKernel {
		t.Fatalf("%+v", ops)
	}
}
