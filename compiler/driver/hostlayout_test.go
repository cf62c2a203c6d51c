package driver

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/place"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/launch"
)

// randF16 returns n finite f16 bit patterns (the top exponent bit cleared:
// no Inf or NaN, so that round trips compare as floats).
func randF16(rng *rand.Rand, n int) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		x[i] = uint16(rng.Uint32()) &^ 0x4000
	}
	return x
}

// v0Plan builds a v0 plan of a recipe with the planner's choices forced,
// without compiling it (graph, problem, candidates, as Prepare does).
func v0Plan(t *testing.T, r Recipe, force low.Options) (*graph.Graph, *low.Plan) {
	t.Helper()
	g, err := graph.Preset(r.Workload, r.Flags)
	if err != nil {
		t.Fatal(err)
	}
	p, err := low.Recognize(g)
	if err != nil {
		t.Fatal(err)
	}
	force.Tiles, force.Fits = r.Tiles, place.Fits
	cands, err := low.Candidates(p, force, 1)
	if err != nil {
		t.Fatal(err)
	}
	pl := low.Build(p, force, cands[0])
	low.Optimize(pl)
	return g, pl
}

// recorded is binding hb of pl as the package records it: its packed size,
// tensor shape and layout (layoutOf).
func recorded(t *testing.T, g *graph.Graph, pl *low.Plan, hb *low.HostBinding) *ipuexe.Binding {
	t.Helper()
	lay, err := layoutOf(pl, hb)
	if err != nil {
		t.Fatal(err)
	}
	b := &ipuexe.Binding{Name: hb.Name, DType: ipuexe.F16, Shape: []uint32{uint32(hb.Bytes / 2)}, Layout: lay}
	n := g.Node(hb.Name)
	if n == nil {
		n = g.Outputs()[0].Node
	}
	for _, d := range n.Shape {
		b.TensorShape = append(b.TensorShape, uint32(d))
	}
	return b
}

// The layouts the package records for v0 plans against the v0 family's own
// packers (hostv0_test.go, the host side before packages described their
// layouts): the generic packer (launch.Pack) on the recorded layout gives
// the same bytes for every input and weight, and launch.Unpack the same
// values for the output, on uneven GEMM grids, MLPs with biases, several
// blocks, row chunks (padding rows in the last chunk) and streamed
// weights.
func TestLayoutsMatchV0Packers(t *testing.T) {
	for _, c := range []struct {
		name  string
		r     Recipe
		force low.Options
	}{
		{"gemm 3x2 uneven", gemmRecipe(50, 40, 70, 16), low.Options{ForceR: 3, ForceC: 2}},
		{"gemm default", gemmRecipe(100, 200, 300, 64), low.Options{}},
		{"mlp biases", mlpRecipeFull(77, 72, 200, 1, 64, true), low.Options{}},
		{"mlp chunks", mlpRecipeFull(77, 72, 200, 2, 16, true), low.Options{ForceR: 2, ForceC: 3, ForceQ: 3}},
		{"mlp streamed", mlpRecipeFull(50, 64, 96, 2, 16, true), low.Options{ForceStream: true, ForceColMajor: true, ForceR: 4, ForceC: 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, pl := v0Plan(t, c.r, c.force)
			if pl.Mid != nil {
				t.Fatal("not a v0 plan")
			}
			p := pl.Problem
			if p.Kind == low.KindMLP && c.force.ForceQ > 1 && pl.Grid.Q != c.force.ForceQ {
				t.Fatalf("q = %d, want %d", pl.Grid.Q, c.force.ForceQ)
			}
			want := map[string]func([]uint16) []byte{}
			if p.Kind == low.KindMLP {
				want[p.Input] = func(x []uint16) []byte { return packActivations(pl, x) }
				for _, blk := range p.Blocks {
					want[blk.W1] = func(x []uint16) []byte { return packW1(pl, x) }
					want[blk.W2] = func(x []uint16) []byte { return packW2(pl, x) }
					if p.Biases {
						want[blk.B1] = func(x []uint16) []byte { return packB1(pl, x) }
						want[blk.B2] = func(x []uint16) []byte { return packB2(pl, x) }
					}
				}
			} else {
				want[p.Input] = func(x []uint16) []byte { return packInput(pl, x) }
				want[p.W1] = func(x []uint16) []byte { return packW1(pl, x) }
			}
			for _, hb := range append(append([]low.HostBinding(nil), pl.Inputs...), pl.Weights...) {
				b := recorded(t, g, pl, &hb)
				x := g.Node(hb.Name).DataF16()
				got, err := launch.Pack(b, x)
				if err != nil {
					t.Fatal(err)
				}
				f := want[hb.Name]
				if f == nil {
					t.Fatalf("binding %q: no v0 packer", hb.Name)
				}
				if !bytes.Equal(got, f(x)) {
					t.Errorf("binding %q: launch.Pack on the recorded layout differs from the v0 packer", hb.Name)
				}
			}
			out := &pl.Outputs[0]
			raw := make([]byte, out.Bytes)
			rng := rand.New(rand.NewPCG(7, 8))
			for i, v := range randF16(rng, out.Bytes/2) {
				binary.LittleEndian.PutUint16(raw[2*i:], v)
			}
			wantY, err := unpackOutput(pl, raw)
			if err != nil {
				t.Fatal(err)
			}
			gotY, err := launch.Unpack(recorded(t, g, pl, out), raw)
			if err != nil {
				t.Fatal(err)
			}
			if len(gotY) != len(wantY) {
				t.Fatalf("output: %d values, want %d", len(gotY), len(wantY))
			}
			for i := range gotY {
				if gotY[i] != wantY[i] {
					t.Fatalf("output value %d: %v, the v0 unpacker %v", i, gotY[i], wantY[i])
				}
			}
		})
	}
}
