// Package low turns a graph into per-tile work lists for the v0 plan family:
// kernel runs, host-window copies, exchange phases and host transfers, with
// buffers named but not yet placed (compiler/place gives them addresses).
//
// v0 is a fixed plan family, not a costed search (the costed planner of
// compiler/mid will replace it): a GEMM C[M][N] = A[M][K] x B[K][N] runs on
// an R x Cg grid of tiles over (row blocks of M, column blocks of N in
// groups of 16), each tile with the full K. Tile (i, j) holds the AMP right
// panel of B[:, cols_j] (a weight, uploaded by call "initialize" to the
// tiles of grid row 0 and multicast down each grid column by a device
// exchange phase), receives A[rows_i, :] as an AMP left panel (uploaded by
// call "run" to tile (i, 0) and multicast along grid row i by a device
// exchange phase, inside the timed region) and runs gemm_f16, leaving C in
// the AMP output-panel layout, which the host reads back.
//
// The MLP X -> Gemm W1 -> GELU -> Gemm W2 uses the Megatron split on the
// same grid: GEMM1 column-parallel (tile (i, j) computes H[rows_i, cols_j]
// with the full dim), GELU in place on H's output panel, GEMM2 row-parallel
// with a K split: H's output panel is exactly the AMP left panel of the
// k-groups cols_j, so the tile multiplies it by W2[cols_j, :] into a
// partial C2[rows_i, :] (f16 output panel). A reduce-scatter over the
// tiles of grid row i follows: the partial panel, seen as a flat array of
// f16 values, is cut into Cg contiguous chunks (multiples of 4 values);
// every tile sends each peer its chunk of the partial (one exchange phase),
// copies its own, and sums the Cg parts with reduce_add_f16 (f32 sums in
// part order, one rounding). The host reads the reduced chunks, which
// concatenate to row block i's output panel.
//
// Host-side layouts (the host packs inputs and weights before upload and
// unpacks outputs after read-back; see HostLayout in compiler/build):
//   - input x: the row blocks' AMP left panels, concatenated in i order,
//     K zero-padded to a multiple of 16;
//   - a weight [K][N] used as GEMM right operand: the column blocks' AMP right
//     panels (16x16 blocks, output-major inner-minor), concatenated in j
//     order; zero padding in K and N;
//   - outputs: the AMP output panels (GEMM: per tile (i, j) in grid order;
//     MLP: per row block, the reduced chunks in j order); pad columns are
//     dropped on unpacking.
package low

import (
	"fmt"

	"github.com/ipustack/ipustack/graph"
)

// Kind is the shape of graph the v0 plan family handles.
type Kind uint8

const (
	// KindGemm is Input x Parameter -> Output.
	KindGemm Kind = iota + 1
	// KindMLP is Input x W1 -> GELU -> x W2 -> Output (one block, no biases).
	KindMLP
)

func (k Kind) String() string {
	switch k {
	case KindGemm:
		return "gemm"
	case KindMLP:
		return "mlp"
	}
	return "kind?"
}

// Problem is a graph recognised as one of the v0 kinds.
type Problem struct {
	Kind Kind
	// M rows (tokens), K the inner dimension of the first GEMM (dim), N
	// its output columns (hidden for the MLP).
	M, K, N int
	Input   string // input node name
	Output  string // output name
	W1, W2  string // weight node names (W2 empty for a GEMM)
	// Flops is the graph's useful GEMM work.
	Flops int64
}

// Recognize matches g against the v0 kinds and fails with a clear "not
// supported yet" error otherwise.
func Recognize(g *graph.Graph) (*Problem, error) {
	unsupported := func(format string, args ...any) error {
		return fmt.Errorf("compiler v0: %s: not supported yet (the v0 plan family compiles one GEMM x[m][k] x w[k][n], or one MLP block without biases)", fmt.Sprintf(format, args...))
	}
	if len(g.Outputs()) != 1 {
		return nil, unsupported("%d outputs", len(g.Outputs()))
	}
	if len(g.Inputs()) != 1 {
		return nil, unsupported("%d inputs", len(g.Inputs()))
	}
	var gemms []*graph.Node
	var gelu *graph.Node
	for _, n := range g.Nodes() {
		switch n.Op {
		case graph.OpInput, graph.OpParameter:
			if n.DType != graph.F16 {
				return nil, unsupported("%s %q is %v", n.Op, n.Name, n.DType)
			}
		case graph.OpGemm:
			gemms = append(gemms, n)
		case graph.OpGelu:
			if gelu != nil {
				return nil, unsupported("more than one GELU")
			}
			gelu = n
		default:
			return nil, unsupported("operation %s (%q)", n.Op, n.Name)
		}
	}
	checkGemm := func(n *graph.Node, a *graph.Node) error {
		b, _, _, _ := n.GemmDims()
		switch {
		case b != 1 || len(n.Shape) != 2:
			return unsupported("batched gemm %q", n.Name)
		case n.TransA || n.TransB:
			return unsupported("transposed gemm %q", n.Name)
		case n.DType != graph.F16:
			return unsupported("gemm %q with %v output", n.Name, n.DType)
		case n.Inputs[0] != a:
			return unsupported("gemm %q: left operand %q", n.Name, n.Inputs[0].Name)
		case n.Inputs[1].Op != graph.OpParameter:
			return unsupported("gemm %q: right operand %q is not a parameter", n.Name, n.Inputs[1].Name)
		}
		return nil
	}
	in := g.Inputs()[0]
	out := g.Outputs()[0]
	p := &Problem{Input: in.Name, Output: out.Name, Flops: g.GemmFlops()}
	switch {
	case len(gemms) == 1 && gelu == nil:
		if err := checkGemm(gemms[0], in); err != nil {
			return nil, err
		}
		if out.Node != gemms[0] {
			return nil, unsupported("output %q is not the gemm", out.Name)
		}
		_, p.M, p.K, p.N = gemms[0].GemmDims()
		p.Kind, p.W1 = KindGemm, gemms[0].Inputs[1].Name
	case len(gemms) == 2 && gelu != nil:
		if err := checkGemm(gemms[0], in); err != nil {
			return nil, err
		}
		if gelu.Approx != graph.GeluTanh {
			return nil, unsupported("gelu %q uses the %v form (gelu_f16 computes the tanh form)", gelu.Name, gelu.Approx)
		}
		if gelu.Inputs[0] != gemms[0] {
			return nil, unsupported("gelu %q does not follow %q", gelu.Name, gemms[0].Name)
		}
		if err := checkGemm(gemms[1], gelu); err != nil {
			return nil, err
		}
		if out.Node != gemms[1] {
			return nil, unsupported("output %q is not the second gemm", out.Name)
		}
		_, p.M, p.K, p.N = gemms[0].GemmDims()
		if _, _, _, n2 := gemms[1].GemmDims(); n2 != p.K {
			return nil, unsupported("second gemm %q has %d output columns, not dim %d", gemms[1].Name, n2, p.K)
		}
		p.Kind, p.W1, p.W2 = KindMLP, gemms[0].Inputs[1].Name, gemms[1].Inputs[1].Name
	default:
		return nil, unsupported("%d gemms and %d gelus", len(gemms), map[bool]int{true: 1}[gelu != nil])
	}
	return p, nil
}
