// Package low turns a plan of the costed planner (compiler/mid) into a
// per-tile program (compiler/tile; FromMid, frommid.go): kernel runs,
// host-window copies, exchange phases and host transfers, with buffers
// named (and given lifetimes) but not yet placed (compiler/place gives
// them addresses); it runs the low passes over it (Optimize: the pass
// table of compiler/tile/passes, group_exchanges, merge_copies,
// eliminate) and costs it (Estimate, Costed) for the finalist rerank.
//
// Every GEMM of the planned chain runs on its own rows x columns x K grid
// of tiles, whole or in row chunks, or, for a chain of repeated blocks, as
// a runtime loop over one block's grids. Every host binding slice carries
// the rectangle of the tensor's matrix it holds and its element order
// (HostSlice.Block), so that the run side packs and unpacks every tensor
// generically (package launch).
package low

import (
	"fmt"

	"github.com/ipustack/ipustack/graph"
)

// Problem names the graph tensors a plan's host bindings carry: the graph's
// one input and one output, and, for logs, the first GEMM's shape. Which
// graphs can be planned is compiler/mid's to say (mid.Search).
type Problem struct {
	// M rows, K the inner dimension and N the output columns of the
	// graph's first GEMM.
	M, K, N int
	Input   string // input node name
	Output  string // output name
}

// NewProblem is the problem of a graph of one input and one output.
func NewProblem(g *graph.Graph) (*Problem, error) {
	if len(g.Inputs()) != 1 || len(g.Outputs()) != 1 {
		return nil, fmt.Errorf("compiler: %d inputs and %d outputs: not supported yet (the planner, compiler/mid, takes one input and one output)",
			len(g.Inputs()), len(g.Outputs()))
	}
	p := &Problem{Input: g.Inputs()[0].Name, Output: g.Outputs()[0].Name}
	for _, n := range g.Nodes() {
		if n.Op == graph.OpGemm {
			_, p.M, p.K, p.N = n.GemmDims()
			break
		}
	}
	return p, nil
}
