// Package low turns a plan into per-tile work lists: kernel runs,
// host-window copies, exchange phases and host transfers, with buffers
// named (and given lifetimes) but not yet placed (compiler/place gives them
// addresses); and it runs the low passes over them (passes.go:
// group_exchanges, merge_copies, eliminate).
//
// Two plan families are lowered. FromMid (frommid.go) lowers a plan of the
// costed planner, compiler/mid: every GEMM on its own rows x columns x K
// grid, whole or in row chunks. The v0 family (this file, low.go, mlp.go)
// is a fixed family of grids searched with compiler/cost, kept only as the
// driver's fallback when the mid planner has no plan or only row-chunked
// ones (it still covers streamed weights and a runtime loop over MLP
// blocks, which the mid lowering does not, and its flat in-place
// activations win some chunked shapes): a GEMM C[M][N] = A[M][K] x B[K][N] runs on
// an R x Cg grid of tiles over (row blocks of M, column blocks of N in
// groups of 16), each tile with the full K. Tile (i, j) holds the AMP right
// panel of B[:, cols_j] (a weight, uploaded by call "initialize" to the
// tiles of grid row 0 and multicast down each grid column by a device
// exchange phase), receives A[rows_i, :] as an AMP left panel (uploaded by
// call "run" to tile (i, 0) and multicast along grid row i by a device
// exchange phase, inside the timed region) and runs gemm_f16, leaving C in
// the AMP output-panel layout, which the host reads back.
//
// The MLP (blocks of X -> Gemm W1 (+b1) -> GELU -> Gemm W2 (+b2)) uses the
// Megatron split on the same grid: GEMM1 column-parallel (tile (i, j)
// computes H[rows_i, cols_j] with the full dim), the bias and GELU in place
// on H's output panel, GEMM2 row-parallel with a K split: H's output panel
// is exactly the AMP left panel of the k-groups cols_j, so the tile
// multiplies it by W2[cols_j, :] into a partial C2[rows_i, :] (f16 output
// panel), and a reduce-scatter over the tiles of grid row i sums the C
// partials (reduce_add_f16: f32 sums in part order, one rounding). Rows
// are processed in chunks when a row block does not fit a tile, the
// activations stay on the device between blocks in one layout that is
// both a block's output and the next block's input, and the weights are
// resident or streamed per block: see mlp.go.
//
// Host-side layouts (the host packs inputs and weights before upload and
// unpacks outputs after read-back; see compiler/driver/host.go):
//   - GEMM input x: the row blocks' AMP left panels, concatenated in i
//     order, K zero-padded to a multiple of 16;
//   - a weight [K][N] used as GEMM right operand: the column blocks' AMP right
//     panels (16x16 blocks, output-major inner-minor), concatenated in j
//     order; zero padding in K and N;
//   - GEMM output: the AMP output panels per tile (i, j) in grid order; pad
//     columns are dropped on unpacking;
//   - MLP input and output: the activation layout of mlp.go (per grid tile,
//     its piece of every row chunk's panel); MLP biases: b1 per column
//     block, b2 whole for every column block.
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
	// KindMLP is Blocks repetitions of x -> Gemm W1 (+ b1) -> GELU -> Gemm W2
	// (+ b2), the output of one block the input of the next.
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

// Block names the parameters of one MLP block (B1 and B2 empty without
// biases).
type Block struct {
	W1, W2, B1, B2 string
}

// Problem is a graph recognised as one of the v0 kinds.
type Problem struct {
	Kind Kind
	// M rows (tokens), K the inner dimension of the first GEMM (dim), N
	// its output columns (hidden for the MLP).
	M, K, N int
	Input   string // input node name
	Output  string // output name
	W1, W2  string // the first block's weights (W2 empty for a GEMM)
	// Blocks are the MLP's blocks in order (one for a GEMM: W1 only).
	Blocks []Block
	// Biases: every MLP block adds b1 after its first and b2 after its
	// second GEMM.
	Biases bool
	// Flops is the graph's useful GEMM work.
	Flops int64
}

// Recognize matches g against the v0 kinds and fails with a clear "not
// supported yet" error otherwise.
func Recognize(g *graph.Graph) (*Problem, error) {
	unsupported := func(format string, args ...any) error {
		return fmt.Errorf("compiler: %s: not supported yet (both plan families, compiler/mid and v0, take one GEMM x[m][k] x w[k][n], or a chain of MLP blocks x W1 (+b1) -> GELU -> W2 (+b2))", fmt.Sprintf(format, args...))
	}
	if len(g.Outputs()) != 1 {
		return nil, unsupported("%d outputs", len(g.Outputs()))
	}
	if len(g.Inputs()) != 1 {
		return nil, unsupported("%d inputs", len(g.Inputs()))
	}
	// The compute nodes in topological order; each must consume the one
	// before it (a chain), which is all the v0 family handles.
	var chain []*graph.Node
	for _, n := range g.Nodes() {
		switch n.Op {
		case graph.OpInput, graph.OpParameter:
			if n.DType != graph.F16 {
				return nil, unsupported("%s %q is %v", n.Op, n.Name, n.DType)
			}
		case graph.OpGemm, graph.OpGelu, graph.OpAdd:
			chain = append(chain, n)
		default:
			return nil, unsupported("operation %s (%q)", n.Op, n.Name)
		}
	}
	in := g.Inputs()[0]
	out := g.Outputs()[0]
	p := &Problem{Input: in.Name, Output: out.Name, Flops: g.GemmFlops()}
	checkGemm := func(n *graph.Node, a *graph.Node) error {
		if n.Op != graph.OpGemm {
			return unsupported("%s %q where a gemm is expected", n.Op, n.Name)
		}
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
	// bias matches an optional Add of a 1-D parameter of cols values onto
	// prev; it returns the bias name ("" when chain[at] is no Add).
	bias := func(at int, prev *graph.Node, cols int) (string, error) {
		if at >= len(chain) || chain[at].Op != graph.OpAdd {
			return "", nil
		}
		n := chain[at]
		if len(n.Inputs) != 2 || n.DType != graph.F16 {
			return "", unsupported("add %q", n.Name)
		}
		x, b := n.Inputs[0], n.Inputs[1]
		if x != prev {
			x, b = b, x
		}
		if x != prev || b.Op != graph.OpParameter || len(b.Shape) != 1 || b.Shape[0] != cols {
			return "", unsupported("add %q is not a bias [%d] on %q", n.Name, cols, prev.Name)
		}
		return b.Name, nil
	}
	if len(chain) == 1 && chain[0].Op == graph.OpGemm {
		if err := checkGemm(chain[0], in); err != nil {
			return nil, err
		}
		if out.Node != chain[0] {
			return nil, unsupported("output %q is not the gemm", out.Name)
		}
		_, p.M, p.K, p.N = chain[0].GemmDims()
		p.Kind, p.W1 = KindGemm, chain[0].Inputs[1].Name
		p.Blocks = []Block{{W1: p.W1}}
		return p, nil
	}
	if len(chain) == 0 {
		return nil, unsupported("no gemm")
	}
	// MLP blocks.
	prev := in
	at := 0
	for at < len(chain) {
		var blk Block
		g1 := chain[at]
		if err := checkGemm(g1, prev); err != nil {
			return nil, err
		}
		_, m, k, n := g1.GemmDims()
		if len(p.Blocks) == 0 {
			p.M, p.K, p.N = m, k, n
		} else if m != p.M || k != p.K || n != p.N {
			return nil, unsupported("gemm %q is %dx%dx%d, not the first block's %dx%dx%d", g1.Name, m, k, n, p.M, p.K, p.N)
		}
		blk.W1 = g1.Inputs[1].Name
		at++
		prev = g1
		var err error
		if blk.B1, err = bias(at, prev, p.N); err != nil {
			return nil, err
		}
		if blk.B1 != "" {
			prev = chain[at]
			at++
		}
		if at >= len(chain) || chain[at].Op != graph.OpGelu || chain[at].Inputs[0] != prev {
			return nil, unsupported("block %d: no gelu after %q", len(p.Blocks), prev.Name)
		}
		gelu := chain[at]
		if gelu.Approx != graph.GeluTanh {
			return nil, unsupported("gelu %q uses the %v form (gelu_f16 computes the tanh form)", gelu.Name, gelu.Approx)
		}
		prev = gelu
		at++
		if at >= len(chain) {
			return nil, unsupported("block %d: no second gemm", len(p.Blocks))
		}
		g2 := chain[at]
		if err := checkGemm(g2, prev); err != nil {
			return nil, err
		}
		if _, m2, k2, n2 := g2.GemmDims(); m2 != p.M || k2 != p.N || n2 != p.K {
			return nil, unsupported("second gemm %q is %dx%dx%d, not %dx%dx%d", g2.Name, m2, k2, n2, p.M, p.N, p.K)
		}
		blk.W2 = g2.Inputs[1].Name
		at++
		prev = g2
		if blk.B2, err = bias(at, prev, p.K); err != nil {
			return nil, err
		}
		if blk.B2 != "" {
			prev = chain[at]
			at++
		}
		if (blk.B1 != "") != (blk.B2 != "") || (len(p.Blocks) > 0 && (blk.B1 != "") != p.Biases) {
			return nil, unsupported("block %d: biases on some gemms only", len(p.Blocks))
		}
		p.Biases = blk.B1 != ""
		p.Blocks = append(p.Blocks, blk)
	}
	if out.Node != prev {
		return nil, unsupported("output %q is not the last block's result", out.Name)
	}
	p.Kind, p.W1, p.W2 = KindMLP, p.Blocks[0].W1, p.Blocks[0].W2
	return p, nil
}
