package low

import (
	"fmt"
	"testing"

	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
)

// checkRefs checks a lowered plan: its per-tile program is valid
// (tile.Program.Verify: every reference inside a buffer of its tile, the
// host slices' rectangles, ...), and FromMid lays every binding's slices
// out in slice order.
func checkRefs(pl *Plan) error {
	if err := pl.Verify(); err != nil {
		return err
	}
	for _, bs := range [][]tile.HostBinding{pl.Inputs, pl.Weights, pl.Outputs} {
		for _, b := range bs {
			next := 0
			for i, s := range b.Slices {
				if s.Offset != next {
					return fmt.Errorf("%s: slice %d at byte %d, want %d", b.Name, i, s.Offset, next)
				}
				next += s.Length
			}
		}
	}
	return nil
}

func TestFromMid(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   graph.MLPConfig
		tiles int
	}{
		{"siglip", graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 1152, Hidden: 4304, Blocks: 1}, 1472},
		{"odd", graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: 2}, 64},
		{"biases", graph.MLPConfig{Batch: 2, Tokens: 50, Dim: 40, Hidden: 90, Blocks: 2, Biases: true}, 64},
		{"368", graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 1152, Hidden: 4304, Blocks: 1}, 368},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := graph.MLPGraph(c.cfg, 1, graph.GeluTanh)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewProblem(g)
			if err != nil {
				t.Fatal(err)
			}
			res, err := mid.Search(g, ipu21.IPU21(), mid.Options{Tiles: c.tiles, Finalists: 3})
			if err != nil {
				t.Fatal(err)
			}
			for i, mp := range res.Finalists {
				pl, err := FromMid(p, mp, Options{Tiles: c.tiles})
				if err != nil {
					t.Fatalf("finalist %d: %v", i, err)
				}
				if err := checkRefs(pl); err != nil {
					t.Fatalf("finalist %d %v: %v", i, pl.Choice(), err)
				}
				// The lowered plan keeps the planner's cost record:
				// its estimate is the beam's figure and the host skew.
				want := mp.Estimate()
				want.Copy += pl.HostSkewCycles()
				want.Total += pl.HostSkewCycles()
				if pl.Estimate != want || want.Total != int(mp.Cycles)+pl.HostSkewCycles() {
					t.Errorf("finalist %d: estimate %+v, mid record %+v (cycles %d) and skew %d", i, pl.Estimate, mp.Estimate(), mp.Cycles, pl.HostSkewCycles())
				}
			}
		})
	}
}

// A looped mid plan lowers to one block's ops in a runtime loop: its
// phases and code do not grow with the blocks, W<o> and B<o> hold every
// block's panels (each block's binding one panel further on), and the
// input is written where the body's last GEMM leaves its result, which
// is where the output is read.
func TestFromMidBlockLoop(t *testing.T) {
	phases := map[int]int{}
	for _, blocks := range []int{2, 3, 7} {
		g, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: blocks, Biases: true}, 1, graph.GeluTanh)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewProblem(g)
		if err != nil {
			t.Fatal(err)
		}
		res, err := mid.Search(g, ipu21.IPU21(), mid.Options{Tiles: 64, Finalists: 3})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, mp := range res.Finalists {
			if mp.Period == 0 {
				continue
			}
			n++
			pl, err := FromMid(p, mp, Options{Tiles: 64})
			if err != nil {
				t.Fatalf("%d blocks, finalist %d: %v", blocks, i, err)
			}
			if err := checkRefs(pl); err != nil {
				t.Fatalf("%d blocks, finalist %d %v: %v", blocks, i, pl.Choice(), err)
			}
			if ch := pl.Choice(); ch.Loop != blocks || len(ch.Mid) != 2 {
				t.Fatalf("choice %v", ch)
			}
			key := mp.Body()[0].Rows.Count*1000 + mp.Body()[1].Rows.Count
			if ph, ok := phases[key]; ok && ph != len(pl.Exchanges) {
				t.Errorf("%d blocks: %d phases, %d for fewer blocks on the same grids", blocks, len(pl.Exchanges), ph)
			}
			phases[key] = len(pl.Exchanges)
			loop := false
			for _, op := range pl.Programs[0].Calls[1] {
				loop = loop || (op.Kind == tile.OpLoop && op.Count == blocks)
			}
			if !loop {
				t.Fatalf("%d blocks: tile 0's run call has no loop over the blocks", blocks)
			}
			if len(pl.Weights) != 4*blocks {
				t.Fatalf("%d weight bindings, want %d", len(pl.Weights), 4*blocks)
			}
			w0, wl := pl.Weights[0].Slices[0], pl.Weights[4*(blocks-1)].Slices[0]
			if pl.Weights[4*(blocks-1)].Name != fmt.Sprintf("block%d.fc1.weight", blocks-1) || wl.Ref.Buf != w0.Ref.Buf || wl.Ref.Off != (blocks-1)*w0.Length {
				t.Errorf("last block's fc1 weight %s at %+v, first at %+v", pl.Weights[4*(blocks-1)].Name, wl.Ref, w0.Ref)
			}
			in, out := pl.Inputs[0], pl.Outputs[0]
			if len(in.Slices) != len(out.Slices) {
				t.Fatalf("input in %d slices, output in %d", len(in.Slices), len(out.Slices))
			}
			for k := range in.Slices {
				if a, b := in.Slices[k], out.Slices[k]; a.Tile != b.Tile || a.Ref != b.Ref || a.Block != b.Block {
					t.Fatalf("input slice %+v, output slice %+v", a, b)
				}
			}
			if d := float64(pl.Estimate.Total-int(mp.Cycles)) / float64(mp.Cycles); d > 0.1 || d < -0.1 {
				t.Errorf("finalist %d: estimate %d, mid %d", i, pl.Estimate.Total, mp.Cycles)
			}
			// A step of the loop body names its own block's node.
			var iter [tile.MaxLoopDepth]int
			iter[blockLoopDepth(mp)] = blocks - 1
			last := fmt.Sprintf("block%d.", blocks-1)
			for _, c := range [][2]string{
				{"block0.fc1", last + "fc1"}, {"block0.fc2.weight", last + "fc2.weight"}, {"block0.gelu", last + "gelu"},
				{"x", fmt.Sprintf("block%d.fc2.add", blocks-2)}, {"not a node", "not a node"},
			} {
				if got := pl.BlockNode(c[0], iter); got != c[1] {
					t.Errorf("BlockNode(%q, %v) = %q, want %q", c[0], iter, got, c[1])
				}
			}
			if got := pl.BlockNode("block0.fc1", [tile.MaxLoopDepth]int{}); got != "block0.fc1" {
				t.Errorf("block 0: %q", got)
			}
		}
		if n == 0 {
			t.Fatalf("%d blocks: no looped finalist", blocks)
		}
	}
}
