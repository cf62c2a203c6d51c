package mid

import (
	"testing"

	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
)

// FuzzRebuild feeds Rebuild recorded plans as a package's recipe may
// carry them (any grids, chunks, loop counts and streamed flags): it must
// refuse what the search could not have produced with an error, never
// panic, and whatever it accepts must pass the placement checker.
func FuzzRebuild(f *testing.F) {
	g, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: 3, Biases: true}, 1, graph.GeluTanh)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(10), uint8(6), uint8(1), false, uint8(20), uint8(3), uint8(1), true, uint8(0), uint8(3), uint8(2))
	f.Add(uint8(1), uint8(1), uint8(1), false, uint8(1), uint8(1), uint8(1), false, uint8(2), uint8(1), uint8(6))
	f.Add(uint8(2), uint8(2), uint8(2), true, uint8(4), uint8(1), uint8(3), false, uint8(3), uint8(0), uint8(6))
	f.Fuzz(func(t *testing.T, r0, c0, k0 uint8, s0 bool, r1, c1, k1 uint8, s1 bool, chunks, loop, n uint8) {
		grids := []Grid{{int(r0), int(c0), int(k0), s0}, {int(r1), int(c1), int(k1), s1}}
		for len(grids) < int(n%7) {
			grids = append(grids, grids[len(grids)%2])
		}
		p, err := Rebuild(g, ipu21.IPU21(), 64, grids, int(chunks%8), int(loop%5))
		if err != nil {
			return
		}
		if err := p.Check(); err != nil {
			t.Fatalf("grids %v chunks %d loop %d: rebuilt a plan the checker refuses: %v", grids, chunks%8, loop%5, err)
		}
	})
}
