package low

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/graph"
)

// A package built before the fixed-grid plan family was removed records a fixed-grid
// choice: its recipe still decodes, and Check gives a clear error; a mid
// choice round-trips.
func TestChoiceJSON(t *testing.T) {
	var old Choice
	if err := json.Unmarshal([]byte(`{"r":27,"c":54,"q":1}`), &old); err != nil {
		t.Fatal(err)
	}
	if err := old.Check(); err == nil || !strings.Contains(err.Error(), "is a plan of the removed fixed-grid family, no longer supported; rebuild the package") {
		t.Fatalf("fixed-grid choice: %v", err)
	}
	var none Choice
	if err := json.Unmarshal([]byte(`{}`), &none); err != nil || none.Check() == nil {
		t.Fatalf("empty choice: %v, %v", err, none.Check())
	}
	ch := Choice{Q: 3, Mid: []GemmGrid{{Rows: 9, Cols: 54, Inner: 3}, {Rows: 18, Cols: 8, Inner: 10}}}
	b, err := json.Marshal(ch)
	if err != nil {
		t.Fatal(err)
	}
	var back Choice
	if err := json.Unmarshal(b, &back); err != nil || !back.Equal(ch) || back.Check() != nil || back.String() != "mid 9x54x3 18x8x10 q=3" {
		t.Fatalf("%s: %v, %v, %v", b, back, err, back.Check())
	}
	if old.Equal(none) || old.Equal(ch) {
		t.Fatal("a fixed-grid choice equals another")
	}
}

// NewProblem names the graph's input and output and its first GEMM's
// shape; a graph of several inputs is refused.
func TestNewProblem(t *testing.T) {
	g, err := graph.MLPGraph(graph.MLPConfig{Batch: 2, Tokens: 5, Dim: 24, Hidden: 40, Blocks: 3, Biases: true}, 1, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewProblem(g)
	if err != nil {
		t.Fatal(err)
	}
	if p.M != 10 || p.K != 24 || p.N != 40 || p.Input != g.Inputs()[0].Name || p.Output != g.Outputs()[0].Name {
		t.Fatalf("%+v", p)
	}
}

func TestLoopOps(t *testing.T) {
	kern := func(off int) tile.Op {
		return tile.Op{Kind: tile.OpKernel, Kernel: "copy_f16", Params: map[string]int{"n": 64},
			Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: "a", Off: off}}, {Reg: "$m3", Ref: tile.Ref{Buf: "b"}}}}
	}
	// Affine bodies become one loop with the step in the ref.
	ops := loopOps(5, 1, func(k int) []tile.Op { return []tile.Op{kern(100 + 64*k), {Kind: tile.OpExchange, Phase: 2}} })
	if len(ops) != 1 || ops[0].Kind != tile.OpLoop || ops[0].Count != 5 || ops[0].Depth != 1 ||
		ops[0].Body[0].Args[0].Ref != (tile.Ref{Buf: "a", Off: 100, Step: [tile.MaxLoopDepth]int{0, 64}}) {
		t.Fatalf("%+v", ops)
	}
	// Nested: the outer step lands in Step[0], the inner loop is kept.
	nested := loopOps(3, 0, func(b int) []tile.Op {
		return loopOps(4, 1, func(q int) []tile.Op { return []tile.Op{kern(1000*b + 8*q)} })
	})
	if len(nested) != 1 || nested[0].Body[0].Kind != tile.OpLoop ||
		nested[0].Body[0].Body[0].Args[0].Ref.Step != [tile.MaxLoopDepth]int{1000, 8} {
		t.Fatalf("%+v", nested)
	}
	// A non-affine body (a quadratic offset, or a parameter that changes)
	// is unrolled.
	if ops := loopOps(4, 0, func(k int) []tile.Op { return []tile.Op{kern(k * k)} }); len(ops) != 4 || ops[3].Args[0].Ref.Off != 9 {
		t.Fatalf("%+v", ops)
	}
	if ops := loopOps(3, 0, func(k int) []tile.Op { o := kern(0); o.Params = map[string]int{"n": 8 * (k + 1)}; return []tile.Op{o} }); len(ops) != 3 {
		t.Fatalf("%+v", ops)
	}
	if ops := loopOps(1, 0, func(k int) []tile.Op { return []tile.Op{kern(0)} }); len(ops) != 1 || ops[0].Kind != tile.OpKernel {
		t.Fatalf("%+v", ops)
	}
}
