package mid

// # The SigLIP encoder layer (SearchEncoder)
//
// SearchEncoder plans one Hugging Face SiglipEncoderLayer (graph
// EncoderLayerGraph, Layers 1): x + attn(ln1(x)), then y + mlp(ln2(y)), on
// the whole chip, operator after operator. Every operator runs on all the
// tiles it can use, one after the other (BSP supersteps); each picks its
// own split with the exact cost of its stages given where its input is
// (a greedy walk, not a beam over the layer: the operators' choices
// interact only through their input layouts, which every candidate is
// costed against), with two exceptions: the three projections, which
// all read ln1 only, are planned one after the other, q and k side by
// side on the two halves of the tiles then v^T, or all three side by side
// on thirds (projModes; at so400m the halves win: 60k + 25k cycles
// against 32k + 32k + 25k), and fc1's two cheapest grids are each tried
// with fc2's best grid on their result. Planning only: the Stages are what a
// lowering of the layer has to emit, with real byte ranges and kernel
// calls; Plan.Check simulates their data presence.
//
// Coordinates. Token rows are the B*T rows of the batch (x, the
// projections' results, the MLP). Head-padded columns: every head's hd
// values are padded to hp = hd rounded up to 16 (72 -> 80) with zero
// columns, in q, k, v, the context and the merged heads; the q/k/v
// weights' output columns and out_proj's input rows are laid out the same
// way (zeros in the padding), so that every head boundary is a 16-column
// group boundary. The scores GEMM needs k = 80 and the context GEMM
// c = 80 anyway (the AMP works on groups of 16), so the padding adds
// work only to the four projections (hp/hd - 1 = 11 % at so400m) and
// spares every exchange of a head's columns a split inside a group (two
// 16-byte halves of every row, separate pieces). Keys: each batch
// element's T keys are padded to Tp = T rounded up to 16; v is held in
// padded-key rows (row bi*Tp + t), whose padding rows are exactly zero
// (below); k's padding keys are whatever the panel holds, the softmax
// ignores them (valid = T). Linear weights are named in W^T coordinates
// ([in][out], what the GEMM multiplies by; the host writes W transposed,
// padded as above).
//
// Operators, their layouts and orders:
//
//   - 0.layer_norm1: token rows in blocks of ceil(B*T/tiles) rows, block
//     i on tile i (x written there by the host, row-major); per tile
//     layer_norm_f16 (<= 256 rows and rows*width <= 32768 a call) and
//     pack_left_f16 to the AMP left panel of its rows (ln1, AMPLeft) -
//     except for one row of whole 16-column groups, which is its own AMP
//     left panel (so400m on 1472 tiles: one row per tile on 729 tiles).
//   - 0.self_attn.q_proj, k_proj: the MLP's GEMM grids (candidates,
//     evalGemm) on ln1's layout, bias fused (add_bias_f16); results in
//     AMP output order on the grids' holders. Side by side, their phases
//     and compute stages are merged (sideBySide; stages named
//     "0.self_attn.q_proj+k_proj.in", ...).
//   - 0.self_attn.v_proj is computed transposed, v^T = Wv ln1^T: left =
//     Wv's rows (resident AMP left blocks), right = ln1^T, whose AMP right
//     blocks (16 tokens x 16 model dims, each token's 16 dims together)
//     are 512-byte runs of ln1's AMP left panel: an exchange re-blocking,
//     no kernel. Its AMP output blocks give, per head dim, 16 consecutive
//     tokens: exactly the AMP right blocks of v as the right operand of
//     P·v. The grid (VTGrid) splits the dims, the tokens and the model
//     dims (a K-split, reduce-scattered by 16-dim row slices). Computing
//     v and transposing it would need a 16x16 transpose of
//     2-byte values, which neither a kernel nor the exchange (4-byte
//     words) does. The padding tokens of ln1^T's panel are zero (static:
//     written once when the buffer is initialised, never by the layer), so
//     v^T's padding columns are exactly zero: the P·v products over the
//     padding keys add 0·0. v's bias is not added to v: since every row
//     of P sums to 1, P·(v + 1 bv) = P·v + 1 bv, and add_bias_f16 adds bv
//     to the context (per column, what the kernel does); a per-row bias
//     on v^T has no kernel.
//   - attention (0.self_attn.scores, .softmax, .context, .merge): a grid
//     of cells (batch element, head, query block, key split). A cell
//     receives q's rows of its block and head (AMP left), k's rows of its
//     key range (512-byte runs of k's AMP output blocks are the AMP right
//     blocks of k^T: again an exchange re-blocking) and v's (v^T's blocks,
//     see above), all three in one phase; then per key block: the scores
//     GEMM (k = hp, c = the block's keys), unpack_out_f16 to row-major,
//     softmax_f16 (valid = the real keys; stats = 1 in flash form),
//     pack_left_f16 back to AMP left, the context GEMM. Materialised (one
//     split, one block): the context is final. Flash: each block's f16
//     context is unpacked and merged into an f32 state with
//     attention_merge_f16 (mode 0, 1, 2); with S key splits over cells
//     each split's partial context (f16, row-major) and statistics are
//     cut in S row slices, and slice m of every split goes to split m's
//     cell in a second phase, which merges them (a reduce-scatter: the
//     merge work spread over the S cells). The result (merge, AMP left
//     after pack_left_f16 in the flash form, v's bias added) stays there:
//     a layout of query rows (blocks, or their slices) x heads that is
//     directly out_proj's left operand (the head merge is that layout, no
//     data moves for it).
//   - 0.self_attn.out_proj: a GEMM grid on that layout, bias fused, its
//     blocks unpacked to row-major on their holders (the graph-output
//     path of evalGemm).
//   - 0.layer_norm2 (and 0.residual1): the out_proj rows are gathered on
//     the layer-norm tiles (row-major pieces; a tile's own piece copied
//     row by row), layer_norm_f16 residual=1 writes y = x + attn (kept for
//     the last residual) and ln2(y), then pack_left_f16.
//   - 0.mlp.fc1 (+ bias + GELU) and 0.mlp.fc2 (+ bias): GEMM grids, fc2's
//     blocks unpacked to row-major.
//   - 0.residual2: fc2's rows gathered on the layer-norm tiles, add_f16
//     with y: the output, row-major, where x was.
//
// Attention form. Every candidate grid (query blocks, key splits, key
// blocks) is costed exactly, stage by stage, and the cheapest that fits
// is taken; Plan.Encoder keeps the best of each form with its stages'
// cycles. At so400m on 1472 tiles (go test -run TestEncoderSo400m -v
// ./compiler/mid prints them) the cost model picks the flash form with
// four key splits of 192 keys over 22 query blocks of 34 rows (1408
// cells, numbered query block fastest): 93,524 cycles (input phase
// 10,412, scores 15,407, softmax 39,727, context 14,615, partials' phase
// 1,894, merge 11,469), against 158,129 for the best materialised grid
// (92 query blocks of 8 rows: input 30,812, scores 42,600, softmax
// 43,737, context 40,190, bias 790).
// Filling the chip with one key split needs query blocks of 8 rows,
// below the 12 rows from which gemm_f16 runs its fast path, and every
// cell receives k and v of all 736 keys; splitting the keys over four
// cells gives blocks of 34 rows and a quarter of the panels (which two
// neighbouring query blocks' cells, partner tiles, take as paired
// items), for a second phase and the merges (spread over the splits'
// cells, each merging a quarter of the rows of all four partials). The
// softmax costs about the same either way: it is the chip's share of all
// the scores. (The figures are the cost models' at the time of writing;
// the test log is the reference.)
//
// Memory: every tile's bytes are its resident weights and parameters,
// the values held between operators (x until the second layer norm, ln1
// until the projections have read it, ...), and the operator's working
// set; each operator's choice must fit the data budget (cost.DataBudget)
// and the AMP right panels region 1 (cost.InterleavedBudget), else the
// search fails naming the operator, the tile and the bytes. When the
// walk does not fit, the layer is planned again with each GEMM's resident
// weights capped at its share of a fraction of the budget (weightCaps),
// and when that does not fit either, with the MLP and the last residual
// in row chunks (mlpInChunks: unrolled, every chunk on chunk 0's grids,
// the weights resident once; so400m on 368 tiles runs in 3 chunks).

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// encShape is the layer's shape and its padded sizes.
type encShape struct {
	B, T, D, H, HD, F int
	HP                int // head dim rounded up to 16
	Tp                int // keys of one batch element rounded up to 16
	M                 int // token rows, B*T
	Dp                int // D rounded up to 16
}

// encNodes are the layer's nodes, by role.
type encNodes struct {
	x, ln1, ln1w, ln1b                     *graph.Node
	q, qAdd, qW, qB, k, kAdd, kW, kB       *graph.Node
	v, vW, vB                              *graph.Node
	scores, softmax, context, merge        *graph.Node
	o, oAdd, oW, oB, res1, ln2, ln2w, ln2b *graph.Node
	fc1, fc1Add, fc1W, fc1B, gelu          *graph.Node
	fc2, fc2Add, fc2W, fc2B, res2          *graph.Node
}

// IsEncoderLayer reports whether g looks like an EncoderLayerGraph (it has
// the first layer's layer norm and softmax): what SearchEncoder takes.
func IsEncoderLayer(g *graph.Graph) bool {
	ln, sm := g.Node("0.layer_norm1"), g.Node("0.self_attn.softmax")
	return ln != nil && ln.Op == graph.OpLayerNorm && sm != nil && sm.Op == graph.OpSoftmax
}

// encoderGraph recognises the layer's nodes and shape.
func encoderGraph(g *graph.Graph) (encNodes, encShape, error) {
	var n encNodes
	var s encShape
	var errs []error
	get := func(name string, op graph.Op) *graph.Node {
		nd := g.Node("0." + name)
		if nd == nil {
			errs = append(errs, fmt.Errorf("no node %q", "0."+name))
			return nil
		}
		if nd.Op != op {
			errs = append(errs, fmt.Errorf("node %q is a %v, want %v", nd.Name, nd.Op, op))
		}
		return nd
	}
	P, G, A := graph.OpParameter, graph.OpGemm, graph.OpAdd
	n.ln1, n.ln1w, n.ln1b = get("layer_norm1", graph.OpLayerNorm), get("layer_norm1.weight", P), get("layer_norm1.bias", P)
	n.q, n.qAdd, n.qW, n.qB = get("self_attn.q_proj", G), get("self_attn.q_proj.add", A), get("self_attn.q_proj.weight", P), get("self_attn.q_proj.bias", P)
	n.k, n.kAdd, n.kW, n.kB = get("self_attn.k_proj", G), get("self_attn.k_proj.add", A), get("self_attn.k_proj.weight", P), get("self_attn.k_proj.bias", P)
	n.v, n.vW, n.vB = get("self_attn.v_proj", G), get("self_attn.v_proj.weight", P), get("self_attn.v_proj.bias", P)
	n.scores, n.softmax, n.context = get("self_attn.scores", G), get("self_attn.softmax", graph.OpSoftmax), get("self_attn.context", G)
	n.merge = get("self_attn.merge", graph.OpReshape)
	n.o, n.oAdd, n.oW, n.oB = get("self_attn.out_proj", G), get("self_attn.out_proj.add", A), get("self_attn.out_proj.weight", P), get("self_attn.out_proj.bias", P)
	n.res1, n.ln2, n.ln2w, n.ln2b = get("residual1", A), get("layer_norm2", graph.OpLayerNorm), get("layer_norm2.weight", P), get("layer_norm2.bias", P)
	n.fc1, n.fc1Add, n.fc1W, n.fc1B, n.gelu = get("mlp.fc1", G), get("mlp.fc1.add", A), get("mlp.fc1.weight", P), get("mlp.fc1.bias", P), get("mlp.gelu", graph.OpGelu)
	n.fc2, n.fc2Add, n.fc2W, n.fc2B, n.res2 = get("mlp.fc2", G), get("mlp.fc2.add", A), get("mlp.fc2.weight", P), get("mlp.fc2.bias", P), get("residual2", A)
	if len(errs) > 0 {
		return n, s, fmt.Errorf("mid: not an encoder layer: %w", errors.Join(errs...))
	}
	if g.Node("1.layer_norm1") != nil {
		return n, s, fmt.Errorf("mid: encoder: only one layer is planned (layers are a runtime loop over one layer's plan, not unrolled)")
	}
	n.x = n.ln1.Inputs[0]
	if n.x.Op != graph.OpInput || len(n.x.Shape) != 3 {
		return n, s, fmt.Errorf("mid: encoder: layer_norm1 reads %q, want the graph input [batch, tokens, dim]", n.x.Name)
	}
	outs := g.Outputs()
	if len(outs) != 1 || outs[0].Node != n.res2 {
		return n, s, fmt.Errorf("mid: encoder: the graph's one output must be %q", n.res2.Name)
	}
	for _, nd := range g.Nodes() {
		if nd.Op != graph.OpInput && nd.DType != graph.F16 {
			return n, s, fmt.Errorf("mid: encoder: %s %q is %v: only f16 values are planned", nd.Op, nd.Name, nd.DType)
		}
		if nd.Op == graph.OpGemm && nd.Acc != graph.F16 {
			return n, s, fmt.Errorf("mid: encoder: gemm %q accumulates in %v: only f16 accumulation is planned (gemm_f16)", nd.Name, nd.Acc)
		}
	}
	if n.gelu.Approx != graph.GeluTanh {
		return n, s, fmt.Errorf("mid: encoder: gelu %q: the %v form is not supported (gelu_f16 computes the tanh form)", n.gelu.Name, n.gelu.Approx)
	}
	_, heads, ok := g.Node("0.self_attn.q_heads").HeadSplit()
	if !ok {
		return n, s, fmt.Errorf("mid: encoder: 0.self_attn.q_heads is not a head split")
	}
	s.B, s.T, s.D = n.x.Shape[0], n.x.Shape[1], n.x.Shape[2]
	s.H, s.HD = heads, s.D/heads
	s.F = n.fc1W.Shape[0]
	s.HP, s.Tp, s.M, s.Dp = roundUp(s.HD, 16), roundUp(s.T, 16), s.B*s.T, roundUp(s.D, 16)
	if math.Abs(n.softmax.Scale*math.Sqrt(float64(s.HD))-1) > 1e-12 {
		return n, s, fmt.Errorf("mid: encoder: softmax scale %g is not 1/sqrt(%d) (softmax_f16 scales by 1/sqrt(dk))", n.softmax.Scale, s.HD)
	}
	if n.ln1.Eps != float64(kernels.LayerNormEps) && math.Abs(n.ln1.Eps-1e-6) > 1e-12 {
		return n, s, fmt.Errorf("mid: encoder: layer norm eps %g (layer_norm_f16 uses 1e-6)", n.ln1.Eps)
	}
	if s.D%4 != 0 {
		return n, s, fmt.Errorf("mid: encoder: dim %d is not a multiple of 4 (layer_norm_f16 and add_f16 work on words of 4 values)", s.D)
	}
	return n, s, nil
}

// EncoderPlan is what a Plan of the encoder layer adds to its GEMM plans
// and stages: the splits of the operators that are not GEMM grids, the
// attention form chosen and its alternatives, and the cycles by operator.
type EncoderPlan struct {
	Batch, Tokens, Dim, Heads, HeadDim, Hidden int
	HeadPad, KeyPad                            int // hp and Tp (see the package's encoder notes)
	// MLPChunks is the row chunks the MLP runs in (0: none; see
	// mlpInChunks).
	MLPChunks int
	// WeightCap is the share of the data budget the resident weights
	// were capped at (0: none needed; see SearchEncoder).
	WeightCap float64
	// Rows is the token rows of the layer-norm tiles: block i on tile i
	// (both layer norms and the last residual).
	Rows Tiling
	// Projections says how q, k and v^T share the tiles: one after the
	// other, q and k side by side on halves, or the three side by side
	// on thirds (one operator of the breakdown, "0.self_attn.q_proj+...").
	Projections string
	VT          VTGrid
	// Attention is the chosen form; Materialized and Flash the cheapest
	// fitting plan of each form (nil when none fits).
	Attention           *AttentionPlan
	Materialized, Flash *AttentionPlan
	Ops                 []OpCost
}

// OpCost is one operator's share of the plan: its stages
// (Stages[First:First+Count]) and their cycles.
type OpCost struct {
	Name         string
	First, Count int
	Cycles       int64
	Flops        int64 // useful matrix-product flops of the operator
}

func (e *EncoderPlan) describe(total int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  encoder layer: batch %d, %d tokens, dim %d, %d heads of %d (padded to %d), hidden %d, keys padded to %d\n",
		e.Batch, e.Tokens, e.Dim, e.Heads, e.HeadDim, e.HeadPad, e.Hidden, e.KeyPad)
	fmt.Fprintf(&b, "  layer norm rows: %d tiles of %d rows\n", e.Rows.Count, e.Rows.Block)
	fmt.Fprintf(&b, "  v^T grid: %d dim blocks of %d x %d token blocks of %d x %d model-dim blocks of %d\n",
		e.VT.Rows.Count, e.VT.Rows.Block, e.VT.Cols.Count, e.VT.Cols.Block, e.VT.Inner.Count, e.VT.Inner.Block)
	fmt.Fprintf(&b, "  projections: %s\n", e.Projections)
	if e.MLPChunks > 1 {
		fmt.Fprintf(&b, "  MLP and last residual in %d row chunks\n", e.MLPChunks)
	}
	if e.WeightCap > 0 {
		fmt.Fprintf(&b, "  each GEMM's resident weights capped at its share of %.0f%% of the data budget\n", 100*e.WeightCap)
	}
	for _, a := range []*AttentionPlan{e.Materialized, e.Flash} {
		if a != nil {
			mark := " "
			if a == e.Attention {
				mark = "*"
			}
			fmt.Fprintf(&b, "  %s attention %s cycles=%d:", mark, a.Describe(), a.Cycles)
			for _, st := range a.Breakdown {
				fmt.Fprintf(&b, " %s=%d", strings.TrimPrefix(st.Name, "0.self_attn."), st.Cycles)
			}
			b.WriteString("\n")
		}
	}
	for _, o := range e.Ops {
		fmt.Fprintf(&b, "  op %-26s cycles=%7d (%5.1f%%) stages=%d", o.Name, o.Cycles, 100*float64(o.Cycles)/float64(max(total, 1)), o.Count)
		if o.Flops > 0 && o.Cycles > 0 {
			fmt.Fprintf(&b, " flops/cycle=%.0f", float64(o.Flops)/float64(o.Cycles))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// The operators in plan order (indices of the builder's live ranges).
const (
	opLN1 = iota
	opQ
	opK
	opV
	opAttn
	opOut
	opLN2
	opFC1
	opFC2
	opRes2
)

// liveVal is a value held between operators: bytes per tile, from the
// operator that produces it until the last operator that reads it.
type liveVal struct {
	name        string
	bytes       []int
	from, until int
}

// encBuilder assembles the plan operator after operator.
type encBuilder struct {
	t                      *ipu21.Target
	tiles, budget, region1 int
	m                      *models
	memo                   map[kernels.Spec]int64
	n                      encNodes
	s                      encShape
	opt                    Options
	plan                   *Plan
	enc                    *EncoderPlan
	persist, r1            []int // per tile: resident weights and parameters; of them in region 1
	live                   []liveVal
	// allowChunks lets the MLP run in row chunks when it does not fit
	// whole.
	allowChunks bool
	// capShare, when not 0, caps each GEMM's resident weight bytes per
	// tile at capShare x the data budget x its share of the layer's
	// weights (weightCap).
	capShare float64
	active   []bool
	peak     int
}

// call is callCycles with the builder's memo; a kernel limit the plan
// breaks is a bug of the plan's own checks (they choose every shape).
func (b *encBuilder) call(s kernels.Spec) (int64, error) { return callCycles(b.memo, s) }

// weightCap is the most resident weight bytes per tile a GEMM whose
// weights are w bytes (unreplicated) may keep (no limit without a cap).
func (b *encBuilder) weightCap(w int) int {
	if b.capShare == 0 {
		return math.MaxInt
	}
	s := b.s
	all := 2 * (4*s.Dp*s.H*s.HP + 2*s.Dp*roundUp(s.F, 16)) // bytes
	return int(b.capShare * float64(b.budget) * float64(w) / float64(all))
}

// held is the bytes on tile t of the values live during operator op that
// op does not produce.
func (b *encBuilder) held(op, t int) int {
	n := 0
	for _, v := range b.live {
		if v.from < op && v.until >= op {
			n += v.bytes[t]
		}
	}
	return n
}

// fitError is what does not fit where: an operator's choice whose bytes
// on a tile exceed the budget by Excess.
type fitError struct {
	msg    string
	Excess int
}

func (e *fitError) Error() string { return e.msg }

// closer is the one of a and err (a *fitError) that misses by less: the
// error reported when no choice fits is the nearest miss.
func closer(a *fitError, err error) *fitError {
	var f *fitError
	if !errors.As(err, &f) {
		return a
	}
	if a == nil || f.Excess < a.Excess {
		return f
	}
	return a
}

// fits checks operator op's working set (work, and of it r1work in
// region 1) and extra resident bytes (weights, r1w) against every tile's
// budget, or says what does not fit where (the tile that misses by
// most).
func (b *encBuilder) fits(name string, op int, work, r1work, weights, r1w []int) error {
	var worst *fitError
	at := func(i []int, t int) int {
		if i == nil {
			return 0
		}
		return i[t]
	}
	for t := 0; t < b.tiles; t++ {
		w, rw, pw, prw := at(work, t), at(r1work, t), at(weights, t), at(r1w, t)
		h := b.held(op, t)
		if total := b.persist[t] + pw + h + w; total > b.budget && (worst == nil || total-b.budget > worst.Excess) {
			worst = &fitError{fmt.Sprintf("mid: encoder: %s does not fit: tile %d needs %d bytes (%d resident weights and parameters, %d held values, %d working set), the data budget is %d bytes per tile",
				name, t, total, b.persist[t]+pw, h, w, b.budget), total - b.budget}
		}
		if total := b.r1[t] + prw + rw; total > b.region1 && (worst == nil || total-b.region1 > worst.Excess) {
			worst = &fitError{fmt.Sprintf("mid: encoder: %s does not fit: tile %d needs %d bytes of AMP right panels in region 1 (%d resident, %d working), region 1 has %d",
				name, t, total, b.r1[t]+prw, rw, b.region1), total - b.region1}
		}
	}
	if worst == nil {
		return nil
	}
	return worst
}

// commit adds an operator's resident bytes, records its peak and
// appends its stages as one operator of the breakdown.
func (b *encBuilder) commit(name string, op int, stages []Stage, work, weights, r1w []int, flops int64) {
	b.account(op, work, weights, r1w)
	b.addOp(name, stages, flops)
}

// account adds an operator's resident bytes and records its peak.
func (b *encBuilder) account(op int, work, weights, r1w []int) {
	for t := 0; t < b.tiles; t++ {
		if weights != nil {
			b.persist[t] += weights[t]
		}
		if r1w != nil {
			b.r1[t] += r1w[t]
		}
		w := 0
		if work != nil {
			w = work[t]
		}
		b.peak = max(b.peak, b.persist[t]+b.held(op, t)+w)
	}
}

// addOp appends stages as one operator of the breakdown.
func (b *encBuilder) addOp(name string, stages []Stage, flops int64) {
	oc := OpCost{Name: name, First: len(b.plan.Stages), Count: len(stages), Flops: flops}
	for _, st := range stages {
		oc.Cycles += st.Cycles
		for _, c := range st.Calls {
			b.active[c.Tile] = true
		}
	}
	b.plan.Stages = append(b.plan.Stages, stages...)
	b.enc.Ops = append(b.enc.Ops, oc)
}

// keep records a value produced by op and read until operator until.
func (b *encBuilder) keep(name string, op, until int, bytes []int) {
	b.live = append(b.live, liveVal{name: name, bytes: slices.Clone(bytes), from: op, until: until})
}

// projModes are the ways the q, k and v^T projections share the tiles
// (encBuilder.projections).
var projModes = []string{"one after the other", "q_proj and k_proj side by side on halves, then v_proj", "q_proj, k_proj and v_proj side by side on thirds"}

// weightCaps are the shares of the data budget the layer's resident
// weights are capped at, in the order SearchEncoder tries them (0: no
// cap).
var weightCaps = []float64{0, 0.7, 0.5, 0.35}

// SearchEncoder plans the encoder-layer graph g (EncoderLayerGraph, one
// layer) on target t: one costed plan (Result.Finalists[0]) whose stages
// are the whole layer's, with Plan.Encoder describing the operators'
// splits. It returns an error naming the operator, the tile and the bytes
// when a shape does not fit, and an *UnsupportedError for a graph it does
// not take. Options: Tiles, CodeReserve, Conservative, Logf and PerGemm
// (each GEMM costs exactly the first 4 x PerGemm of its grids that fit,
// in the order of the closed-form estimate) are read; the result has one
// finalist (the layer is not searched with a beam).
func SearchEncoder(g *graph.Graph, t *ipu21.Target, opt Options) (*Result, error) {
	opt.defaults(t)
	n, s, err := encoderGraph(g)
	if err != nil {
		return nil, &UnsupportedError{err}
	}
	// The operators are chosen one after the other, each for its own
	// cycles; their resident weights (replicated over a grid's row
	// blocks) add up on every tile. When the layer does not fit so, it is
	// planned again with each GEMM's resident weights per tile capped at
	// a share of the data budget, its share of all the layer's weights
	// (weightCaps, tighter and tighter); the first plan that fits is kept.
	var b *encBuilder
	var first error
	// First without row chunks, tighter and tighter weight caps; only
	// when none fits, the same with the MLP in row chunks (which cost
	// their phases and smaller GEMMs: a cap that fits whole is cheaper
	// at the shapes tried).
done:
	for _, chunks := range []bool{false, true} {
		for _, f := range weightCaps {
			b = &encBuilder{t: t, tiles: opt.Tiles, budget: cost.DataBudget(t, opt.CodeReserve), region1: cost.InterleavedBudget(t),
				m: &models{t: t, conservative: opt.Conservative}, memo: map[kernels.Spec]int64{},
				n: n, s: s, opt: opt, persist: make([]int, opt.Tiles), r1: make([]int, opt.Tiles), active: make([]bool, opt.Tiles),
				capShare: f, allowChunks: chunks}
			b.plan = &Plan{Graph: g, Target: t, Tiles: opt.Tiles, Formats: make([]*Format, len(g.Nodes())), Chunks: 1, Flops: g.GemmFlops()}
			b.enc = &EncoderPlan{Batch: s.B, Tokens: s.T, Dim: s.D, Heads: s.H, HeadDim: s.HD, Hidden: s.F, HeadPad: s.HP, KeyPad: s.Tp, WeightCap: f}
			b.plan.Encoder = b.enc
			err := b.build()
			if err == nil {
				first = nil
				break done
			}
			if first == nil {
				first = err
			}
			opt.Logf("construct_mid: encoder plan with weight cap %.2f of the budget, MLP row chunks %v: %v", f, chunks, err)
		}
	}
	if first != nil {
		return nil, fmt.Errorf("%w (nor with each GEMM's resident weights capped at its share of down to %.0f%% of the data budget, nor with the MLP in up to %d row chunks)",
			first, 100*weightCaps[len(weightCaps)-1], mlpChunks[len(mlpChunks)-1])
	}
	p := b.plan
	for _, st := range p.Stages {
		p.Cycles += st.Cycles
		if st.Kind == ExchangeStage {
			p.ExchangeCyc += st.Cycles
		} else {
			p.ComputeCyc += st.Cycles
		}
	}
	p.SearchCycles = p.Cycles
	p.PeakBytes = b.peak
	for tl := range b.persist {
		p.WeightBytes = max(p.WeightBytes, b.persist[tl])
		if b.active[tl] {
			p.ActiveTiles++
		}
	}
	opt.Logf("construct_mid: encoder plan mid_cycles=%d efficiency=%.2f%% peak_bytes=%d attention=%s",
		p.Cycles, 100*p.Efficiency(), p.PeakBytes, b.enc.Attention.Describe())
	return &Result{Finalists: []*Plan{p}, Budget: b.budget}, nil
}

// build plans the operators in order.
func (b *encBuilder) build() error {
	s, n := b.s, b.n
	lnRows := NewTiling(s.M, min(b.tiles, s.M), 1)
	b.enc.Rows = lnRows
	ln1, err := b.layerNorm1(lnRows)
	if err != nil {
		return err
	}
	qc, kc, vte, err := b.projections(ln1)
	if err != nil {
		return err
	}
	qp, qe, kp, ke := qc.gp, qc.e, kc.gp, kc.e
	b.keep("q", opQ, opAttn, qe.held)
	b.keep("k", opK, opAttn, ke.held)
	b.keep("v^T", opV, opAttn, vte.held)
	vt := vte.out
	att, attHeld, err := b.attention(qe.out, ke.out, vt)
	if err != nil {
		return err
	}
	b.keep("attention", opAttn, opOut, attHeld)
	op, oe, err := b.gemm(opOut, gemmOp{node: n.o, left: n.merge, right: n.oW, bias: n.oB, epilogue: []*graph.Node{n.oAdd}, out: n.oAdd,
		output: true, m: s.M, k: s.H * s.HP, n: s.D, chunks: 1, totalM: s.M}, att, s.D, s.D)
	if err != nil {
		return err
	}
	b.keep("out_proj", opOut, opLN2, oe.held)
	ln2, err := b.layerNorm2(lnRows, oe.out)
	if err != nil {
		return err
	}
	b.plan.Gemms = []*GemmPlan{qp, kp, op}
	f1, _, f2, f2e, err := b.mlp(ln2)
	if err == nil {
		b.keep("fc2", opFC2, opRes2, f2e.held)
		if err := b.residual2(lnRows, f2e.out, Span{Lo: 0, Hi: s.M}, "0.residual2"); err != nil {
			return err
		}
		b.plan.Gemms = append(b.plan.Gemms, f1, f2)
		return nil
	}
	if !b.allowChunks {
		return err
	}
	// The MLP does not fit whole: in row chunks, as the MLP planner
	// does (fewer rows: smaller left blocks and outputs, fewer grid rows
	// to replicate the weights over).
	for _, q := range mlpChunks {
		if q > s.M {
			break
		}
		gs, cerr := b.mlpInChunks(ln2, lnRows, q)
		if cerr == nil {
			b.plan.Gemms = append(b.plan.Gemms, gs...)
			b.enc.MLPChunks = q
			return nil
		}
		b.opt.Logf("construct_mid: encoder MLP in %d row chunks: %v", q, cerr)
	}
	return err
}

// mlpChunks are the row chunk counts the MLP is tried in when it does
// not fit whole.
var mlpChunks = []int{2, 3, 4, 6, 8}

// rowsLayout is l restricted to the rows of chunk, renumbered from the
// chunk's first row (the coordinates of a chunk's GEMM plans).
func rowsLayout(l *layout, chunk Span) *layout {
	out := &layout{value: l.value, cols: l.cols, order: l.order}
	for ri, r := range l.rows {
		x := r.Intersect(chunk)
		if x.Len() <= 0 {
			continue
		}
		out.rows = append(out.rows, Span{Lo: x.Lo - chunk.Lo, Hi: x.Hi - chunk.Lo})
		out.tile = append(out.tile, l.tile[ri*len(l.cols):(ri+1)*len(l.cols)]...)
	}
	return out
}

// shiftLayout is l with its rows moved by d.
func shiftLayout(l *layout, d int) *layout {
	out := *l
	out.rows = make([]Span, len(l.rows))
	for i, r := range l.rows {
		out.rows[i] = Span{Lo: r.Lo + d, Hi: r.Hi + d}
	}
	return &out
}

// shiftRows moves by d the rows of every Ref to the values vals in
// stages (a chunk's GEMM plans count rows from the chunk's first).
func shiftRows(stages []Stage, vals map[*graph.Node]bool, d int) {
	move := func(r *Ref) {
		if vals[r.Value] {
			r.Rows = Span{Lo: r.Rows.Lo + d, Hi: r.Rows.Hi + d}
		}
	}
	for i := range stages {
		st := &stages[i]
		for c := range st.Calls {
			for k := range st.Calls[c].Reads {
				move(&st.Calls[c].Reads[k])
			}
			for k := range st.Calls[c].Writes {
				move(&st.Calls[c].Writes[k])
			}
		}
		for k := range st.Transfers {
			move(&st.Transfers[k].Ref)
		}
	}
}

// sameGrid is the plan of gop on grid g's tiles: the same column and K
// blocks (so the same weight blocks on the same tiles), at most g's row
// blocks (a chunk of fewer rows), costed against src.
func (b *encBuilder) sameGrid(gop gemmOp, g Grid, src *layout, realK, realN int) (*gemmChoice, error) {
	var best *GemmPlan
	for _, c := range candidates(gop, b.tiles, math.MaxInt, math.MaxInt, 1) {
		if c.Cols.Count == g.Cols && c.Inner.Count == g.Inner && c.Rows.Count <= g.Rows && (best == nil || c.Rows.Count > best.Rows.Count) {
			best = c
		}
	}
	if best == nil {
		return nil, fmt.Errorf("mid: encoder: %s: no grid of %d rows on the tiles of %v", gop.node.Name, gop.m, g)
	}
	e := evalGemm(b.m, best, src, nil, b.tiles, true)
	ch := &gemmChoice{gp: best, e: e, work: slices.Clone(e.work), weights: slices.Clone(e.weights), r1: slices.Clone(e.r1),
		cycles: e.cycles, realK: realK, realN: realN, flops: 2 * int64(gop.m) * int64(gop.k) * int64(gop.n)}
	best.K, best.N = realK, realN
	best.Kernel = kernels.GemmF16For(b.opt.Conservative)
	return ch, nil
}

// mlpInChunks plans fc1, fc2 and the last residual in q row chunks, one
// after the other (unrolled): chunk 0's grids are picked as the MLP's
// are, every other chunk runs on the same grids (its rows are no more,
// so neither are its bytes: the weights stay resident once). The state
// is left as it was when a chunking does not fit.
func (b *encBuilder) mlpInChunks(ln2 *layout, lnRows Tiling, q int) ([]*GemmPlan, error) {
	s, n := b.s, b.n
	persist, r1, peak, live := slices.Clone(b.persist), slices.Clone(b.r1), b.peak, slices.Clone(b.live)
	active, nst, nops := slices.Clone(b.active), len(b.plan.Stages), len(b.enc.Ops)
	fail := func(err error) ([]*GemmPlan, error) {
		copy(b.persist, persist)
		copy(b.r1, r1)
		copy(b.active, active)
		b.peak, b.live = peak, live
		b.plan.Stages, b.enc.Ops = b.plan.Stages[:nst], b.enc.Ops[:nops]
		b.plan.Formats[n.res2.ID] = nil
		return nil, err
	}
	vals := map[*graph.Node]bool{n.ln2: true, n.fc1: true, n.fc1Add: true, n.gelu: true, n.fc2: true, n.fc2Add: true}
	rows := NewTiling(s.M, q, 1)
	var out []*GemmPlan
	var g1, g2 Grid
	for c, cs := range rows.Spans() {
		rc := cs.Len()
		op1 := gemmOp{node: n.fc1, left: n.ln2, right: n.fc1W, bias: n.fc1B, epilogue: []*graph.Node{n.fc1Add, n.gelu}, out: n.gelu,
			m: rc, k: s.D, n: s.F, chunks: 1, totalM: rc}
		op2 := gemmOp{node: n.fc2, left: n.gelu, right: n.fc2W, bias: n.fc2B, epilogue: []*graph.Node{n.fc2Add}, out: n.fc2Add,
			output: true, m: rc, k: s.F, n: s.D, chunks: 1, totalM: rc}
		src := rowsLayout(ln2, cs)
		var c1, c2 *gemmChoice
		var err error
		if c == 0 {
			if c1, err = b.pickGemm(opFC1, op1, src, b.tiles, 0, s.D, s.F); err != nil {
				return fail(err)
			}
			b.account(opFC1, c1.work, c1.weights, c1.r1)
			b.keep("fc1", opFC1, opFC2, c1.e.held)
			if c2, err = b.pickGemm(opFC2, op2, c1.e.out, b.tiles, 0, s.F, s.D); err != nil {
				return fail(err)
			}
			b.account(opFC2, c2.work, c2.weights, c2.r1)
			b.keep("fc2", opFC2, opRes2, c2.e.held)
			g1, g2 = c1.gp.Grid(), c2.gp.Grid()
			b.gemmFormats(c1.gp)
			b.gemmFormats(c2.gp)
		} else {
			if c1, err = b.sameGrid(op1, g1, src, s.D, s.F); err != nil {
				return fail(err)
			}
			if c2, err = b.sameGrid(op2, g2, c1.e.out, s.F, s.D); err != nil {
				return fail(err)
			}
		}
		// The chunk's share of the useful flops.
		c1.flops, c2.flops = 2*int64(rc)*int64(s.D)*int64(s.F), 2*int64(rc)*int64(s.F)*int64(s.D)
		shiftRows(c1.e.stages, vals, cs.Lo)
		shiftRows(c2.e.stages, vals, cs.Lo)
		tag := fmt.Sprintf(" (rows %v)", cs)
		b.addOp(n.fc1.Name+tag, c1.e.stages, c1.flops)
		b.addOp(n.fc2.Name+tag, c2.e.stages, c2.flops)
		if err := b.residual2(lnRows, shiftLayout(c2.e.out, cs.Lo), cs, n.res2.Name+tag); err != nil {
			return fail(err)
		}
		out = append(out, c1.gp, c2.gp)
	}
	return out, nil
}

// gemmChoice is a picked GEMM grid with its detailed stages and per-tile
// bytes (copies: evalGemm's arrays are scratch).
type gemmChoice struct {
	gp                *GemmPlan
	e                 *opEval
	work, weights, r1 []int
	cycles            int64
	realK, realN      int
	flops             int64
}

// gemm picks the grid of a token-row GEMM on all the tiles (pickGemm)
// and commits it as one operator of the plan.
func (b *encBuilder) gemm(op int, gop gemmOp, src *layout, realK, realN int) (*GemmPlan, *opEval, error) {
	ch, err := b.pickGemm(op, gop, src, b.tiles, 0, realK, realN)
	if err != nil {
		return nil, nil, err
	}
	b.account(op, ch.work, ch.weights, ch.r1)
	b.addOp(gop.node.Name, ch.e.stages, ch.flops)
	b.gemmFormats(ch.gp)
	b.outFormat(ch)
	return ch.gp, ch.e, nil
}

// pickGemm picks the grid of a token-row GEMM whose left operand is held
// as src, on the tiles [base, base+tiles): the candidates of the MLP's
// search ranked by their closed-form estimate, the first 4 x PerGemm
// that fit costed exactly (evalGemm) against src, the cheapest that fits
// the tiles' memory with everything else live. realK and realN are the
// unpadded sizes (the plan's K and N are head-padded for the attention's
// projections).
func (b *encBuilder) pickGemm(op int, gop gemmOp, src *layout, tiles, base, realK, realN int) (*gemmChoice, error) {
	chs, err := b.pickGemms(op, gop, src, tiles, base, realK, realN, 1)
	if err != nil {
		return nil, err
	}
	return chs[0], nil
}

// pickGemms is pickGemm's best few: the keep cheapest fitting grids,
// cheapest first.
func (b *encBuilder) pickGemms(op int, gop gemmOp, src *layout, tiles, base, realK, realN, keep int) ([]*gemmChoice, error) {
	name := gop.node.Name
	cands := candidates(gop, tiles, b.budget, b.region1, 1)
	for _, c := range cands {
		c.Base = base
	}
	if len(cands) == 0 {
		// Say how far the smallest grid is from fitting: its cell's
		// weights, left block and output on one tile.
		least, at := -1, 0
		for _, c := range candidates(gop, tiles, math.MaxInt, math.MaxInt, 1) {
			r, cc, k := c.Rows.Block, c.Cols.Block, c.Inner.Block
			if need := 2*r*k + 2*r*cc + 2*k*cc; least < 0 || need < least {
				least, at = need, base+c.Tile(0, 0, 0)
			}
		}
		return nil, fmt.Errorf("mid: encoder: %s (%dx%dx%d) does not fit: on %d tiles its smallest grid needs %d bytes on tile %d for one cell's weights, left block and output, the data budget is %d bytes per tile",
			name, gop.m, gop.k, gop.n, tiles, least, at, b.budget)
	}
	est := make(map[*GemmPlan]int64, len(cands))
	for _, c := range cands {
		est[c] = estimate(b.m, c)
	}
	sort.SliceStable(cands, func(x, y int) bool { return est[cands[x]] < est[cands[y]] })
	wcap := b.weightCap(2 * roundUp(gop.k, 16) * roundUp(gop.n, 16))
	type fit struct {
		c   *GemmPlan
		cyc int64
	}
	var fits []fit
	var fitErr *fitError
	// In estimate order: 4 x PerGemm grids that fit are costed; grids
	// that do not fit do not count, up to 16 x PerGemm evaluations (a
	// tight shape needs the small-block grids the estimate ranks late).
	tried := 0
	for _, c := range cands {
		if len(fits) >= 4*b.opt.PerGemm || tried >= 16*b.opt.PerGemm {
			break
		}
		if 2*c.Inner.Block*c.Cols.Block > wcap {
			continue
		}
		tried++
		e := evalGemm(b.m, c, src, nil, b.tiles, false)
		if err := b.fits(name, op, e.work, nil, e.weights, e.r1); err != nil {
			fitErr = closer(fitErr, err)
			continue
		}
		fits = append(fits, fit{c, e.cycles})
	}
	if len(fits) == 0 {
		if fitErr == nil {
			return nil, fmt.Errorf("mid: encoder: %s does not fit: no grid keeps its resident weights within %d bytes per tile", name, wcap)
		}
		return nil, fmt.Errorf("mid: encoder: %s: none of the %d grids tried fits; the nearest: %w", name, tried, fitErr)
	}
	sort.SliceStable(fits, func(x, y int) bool { return fits[x].cyc < fits[y].cyc })
	var out []*gemmChoice
	for _, f := range fits[:min(keep, len(fits))] {
		e := evalGemm(b.m, f.c, src, nil, b.tiles, true)
		out = append(out, &gemmChoice{gp: f.c, e: e, work: slices.Clone(e.work), weights: slices.Clone(e.weights), r1: slices.Clone(e.r1),
			cycles: e.cycles, realK: realK, realN: realN, flops: gop.node.Flops()})
		f.c.K, f.c.N = realK, realN
		f.c.Kernel = kernels.GemmF16For(b.opt.Conservative)
	}
	return out, nil
}

// sideBySide merges the stages of operators that run at once on
// disjoint tiles: when their stage lists have the same kinds in the same
// order, stage i of all of them is one stage (one phase, one compute
// stage), else they run one after the other. A merged compute stage
// costs its busiest tile's calls; a merged phase receives what each
// operator's receivers receive (disjoint tiles) and sends, per tile,
// what its sources send to all of them: senders shared by several
// operators (ln1's tiles feed every projection) are charged the sum of
// the operators' busiest senders, a bound of their sum.
func sideBySide(t *ipu21.Target, name string, lists ...[]Stage) []Stage {
	same := true
	for _, l := range lists[1:] {
		same = same && len(l) == len(lists[0])
		for i := 0; same && i < len(l); i++ {
			same = l[i].Kind == lists[0][i].Kind
		}
	}
	if !same {
		var out []Stage
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	out := make([]Stage, len(lists[0]))
	for i := range out {
		st := Stage{Kind: lists[0][i].Kind, Name: name + stageSuffix(lists[0][i].Name)}
		if st.Kind == ComputeStage {
			busy := map[int]int64{}
			for _, l := range lists {
				st.Calls = append(st.Calls, l[i].Calls...)
				for _, c := range l[i].Calls {
					busy[c.Tile] += c.Cycles
					st.Cycles = max(st.Cycles, busy[c.Tile])
				}
			}
			out[i] = st
			continue
		}
		senders := map[int]int{}
		shared := false
		for k, l := range lists {
			st.Transfers = append(st.Transfers, l[i].Transfers...)
			st.MaxRecv = max(st.MaxRecv, l[i].MaxRecv)
			for _, tr := range l[i].Transfers {
				for _, f := range []int{tr.From, tr.From ^ 1} {
					if o, ok := senders[f]; ok && o != k {
						shared = true
					}
					senders[f] = k
				}
			}
		}
		for _, l := range lists {
			if shared {
				st.MaxSend += l[i].MaxSend
			} else {
				st.MaxSend = max(st.MaxSend, l[i].MaxSend)
			}
		}
		st.Cycles = cost.Phase(t, st.MaxSend, st.MaxRecv)
		out[i] = st
	}
	return out
}

// stageSuffix is a stage name's last dot-separated part (".in", ".gemm").
func stageSuffix(name string) string {
	if i := strings.LastIndex(name, "."); i >= 0 {
		return name[i:]
	}
	return ""
}

// mlpLookahead is how many of fc1's cheapest grids the MLP's plan
// tries, each with fc2's best grid on its result.
const mlpLookahead = 2

// mlp plans fc1 (+ bias + GELU) and fc2 (+ bias): of fc1's mlpLookahead
// cheapest grids, the one whose sum with fc2's best grid on its result
// (the exchange of fc1's blocks to fc2's left operand included) is least.
func (b *encBuilder) mlp(ln2 *layout) (f1 *GemmPlan, f1e *opEval, f2 *GemmPlan, f2e *opEval, err error) {
	s, n := b.s, b.n
	g1 := gemmOp{node: n.fc1, left: n.ln2, right: n.fc1W, bias: n.fc1B, epilogue: []*graph.Node{n.fc1Add, n.gelu}, out: n.gelu,
		m: s.M, k: s.D, n: s.F, chunks: 1, totalM: s.M}
	g2 := gemmOp{node: n.fc2, left: n.gelu, right: n.fc2W, bias: n.fc2B, epilogue: []*graph.Node{n.fc2Add}, out: n.fc2Add,
		output: true, m: s.M, k: s.F, n: s.D, chunks: 1, totalM: s.M}
	firsts, err := b.pickGemms(opFC1, g1, ln2, b.tiles, 0, s.D, s.F, mlpLookahead)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	persist, r1, peak, live := slices.Clone(b.persist), slices.Clone(b.r1), b.peak, slices.Clone(b.live)
	var best1, best2 *gemmChoice
	var firstErr error
	for _, c1 := range firsts {
		b.account(opFC1, c1.work, c1.weights, c1.r1)
		b.keep("fc1", opFC1, opFC2, c1.e.held)
		c2, err := b.pickGemm(opFC2, g2, c1.e.out, b.tiles, 0, s.F, s.D)
		copy(b.persist, persist)
		copy(b.r1, r1)
		b.peak, b.live = peak, slices.Clone(live)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if best1 == nil || c1.cycles+c2.cycles < best1.cycles+best2.cycles {
			best1, best2 = c1, c2
		}
	}
	if best1 == nil {
		return nil, nil, nil, nil, firstErr
	}
	for i, c := range []*gemmChoice{best1, best2} {
		b.account(opFC1+i, c.work, c.weights, c.r1)
		b.addOp(c.gp.Node.Name, c.e.stages, c.flops)
		b.gemmFormats(c.gp)
		b.outFormat(c)
		if i == 0 {
			b.keep("fc1", opFC1, opFC2, c.e.held)
		}
	}
	return best1.gp, best1.e, best2.gp, best2.e, nil
}

// projections plans the q, k and v^T projections, which all read ln1
// and nothing else, in the builder's projMode: one after the other on all
// the tiles, q and k side by side on the two halves and then v^T on all,
// or the three side by side on three thirds (sideBySide). The choice is
// committed; Plan.Encoder.Projections names it.
func (b *encBuilder) projections(ln1 *layout) (qc, kc *gemmChoice, vt *vtEval, err error) {
	s, n := b.s, b.n
	op := func(gemm, add, w, bias *graph.Node) gemmOp {
		return gemmOp{node: gemm, left: n.ln1, right: w, bias: bias, epilogue: []*graph.Node{add}, out: add,
			m: s.M, k: s.D, n: s.H * s.HP, chunks: 1, totalM: s.M}
	}
	gq, gk := op(n.q, n.qAdd, n.qW, n.qB), op(n.k, n.kAdd, n.kW, n.kB)
	persist, r1, peak, live := slices.Clone(b.persist), slices.Clone(b.r1), b.peak, slices.Clone(b.live)
	restore := func() {
		copy(b.persist, persist)
		copy(b.r1, r1)
		b.peak, b.live = peak, slices.Clone(live)
	}
	type option struct {
		name   string
		q, k   *gemmChoice
		v      *vtEval
		ops    [][]Stage // the operators' stages, in order
		names  []string
		cycles int64
	}
	sum := func(sts []Stage) int64 {
		var c int64
		for _, st := range sts {
			c += st.Cycles
		}
		return c
	}
	var options []*option
	var firstErr error
	try := func(o *option, err error) {
		restore()
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		for _, sts := range o.ops {
			o.cycles += sum(sts)
		}
		options = append(options, o)
	}
	// q, k on all the tiles one after the other, or side by side on
	// halves; then v^T on all of them.
	for mode, side := range []bool{false, true} {
		try(func() (*option, error) {
			o := &option{name: projModes[mode]}
			var err error
			if side {
				half := b.tiles / 2 &^ 1 // even: partner tiles stay in one grid
				if half < 2 {
					return nil, fmt.Errorf("mid: encoder: %d tiles cannot be halved", b.tiles)
				}
				if o.q, err = b.pickGemm(opQ, gq, ln1, half, 0, s.D, s.D); err != nil {
					return nil, err
				}
				b.account(opQ, o.q.work, o.q.weights, o.q.r1)
				if o.k, err = b.pickGemm(opK, gk, ln1, b.tiles-half, half, s.D, s.D); err != nil {
					return nil, err
				}
				o.ops = append(o.ops, sideBySide(b.t, "0.self_attn.q_proj+k_proj", o.q.e.stages, o.k.e.stages))
				o.names = append(o.names, "0.self_attn.q_proj+k_proj")
			} else {
				if o.q, err = b.pickGemm(opQ, gq, ln1, b.tiles, 0, s.D, s.D); err != nil {
					return nil, err
				}
				b.account(opQ, o.q.work, o.q.weights, o.q.r1)
				b.keep("q", opQ, opAttn, o.q.e.held)
				if o.k, err = b.pickGemm(opK, gk, ln1, b.tiles, 0, s.D, s.D); err != nil {
					return nil, err
				}
				o.ops = append(o.ops, o.q.e.stages, o.k.e.stages)
				o.names = append(o.names, n.q.Name, n.k.Name)
			}
			b.account(opK, o.k.work, o.k.weights, o.k.r1)
			if side {
				b.keep("q", opQ, opAttn, o.q.e.held)
			}
			b.keep("k", opK, opAttn, o.k.e.held)
			if o.v, err = b.pickVT(ln1, b.tiles, 0); err != nil {
				return nil, err
			}
			o.ops = append(o.ops, o.v.stages)
			o.names = append(o.names, n.v.Name)
			return o, nil
		}())
	}
	// The three side by side on thirds.
	if b.tiles >= 6 {
		try(func() (*option, error) {
			o := &option{name: projModes[2]}
			t1, t2 := b.tiles/3&^1, 2*b.tiles/3&^1
			var err error
			if o.q, err = b.pickGemm(opQ, gq, ln1, t1, 0, s.D, s.D); err != nil {
				return nil, err
			}
			b.account(opQ, o.q.work, o.q.weights, o.q.r1)
			if o.k, err = b.pickGemm(opK, gk, ln1, t2-t1, t1, s.D, s.D); err != nil {
				return nil, err
			}
			b.account(opK, o.k.work, o.k.weights, o.k.r1)
			if o.v, err = b.pickVT(ln1, b.tiles-t2, t2); err != nil {
				return nil, err
			}
			o.ops = [][]Stage{sideBySide(b.t, "0.self_attn.q_proj+k_proj+v_proj", o.q.e.stages, o.k.e.stages, o.v.stages)}
			o.names = []string{"0.self_attn.q_proj+k_proj+v_proj"}
			return o, nil
		}())
	}
	if len(options) == 0 {
		return nil, nil, nil, firstErr
	}
	// The cheapest, but the thirds only when they hold no more resident
	// weight bytes on any tile than the other ways: each third keeps a
	// whole projection's weights on a third of the tiles, and what the
	// projections save the later operators (fc1, fc2) lose to the memory
	// it takes from their grids (the greedy walk would not see it).
	weightPeak := func(o *option) int {
		w := 0
		for t := range b.persist {
			w = max(w, b.persist[t]+o.q.weights[t]+o.k.weights[t]+o.v.weights[t])
		}
		return w
	}
	other := math.MaxInt
	for _, o := range options {
		if o.name != projModes[2] {
			other = min(other, weightPeak(o))
		}
	}
	var best *option
	for _, o := range options {
		if o.name == projModes[2] && weightPeak(o) > other {
			continue
		}
		if best == nil || o.cycles < best.cycles {
			best = o
		}
	}
	b.account(opQ, best.q.work, best.q.weights, best.q.r1)
	b.account(opK, best.k.work, best.k.weights, best.k.r1)
	b.account(opV, best.v.work, best.v.weights, nil)
	flops := []int64{best.q.flops, best.k.flops, n.v.Flops()}
	for i, sts := range best.ops {
		f := int64(0)
		switch len(best.ops) {
		case 1:
			f = flops[0] + flops[1] + flops[2]
		case 2:
			f = []int64{flops[0] + flops[1], flops[2]}[i]
		default:
			f = flops[i]
		}
		b.addOp(best.names[i], sts, f)
	}
	b.gemmFormats(best.q.gp)
	b.gemmFormats(best.k.gp)
	b.outFormat(best.q)
	b.outFormat(best.k)
	b.vtFormats(best.v)
	b.enc.Projections = best.name
	return best.q, best.k, best.v, nil
}

// outFormat records where a GEMM's result is held (its last epilogue
// node's format: AMP output blocks, or row-major for the unpacked ones).
func (b *encBuilder) outFormat(ch *gemmChoice) {
	gp := ch.gp
	b.plan.Formats[gp.Out.ID] = layoutFormat(ch.e.out, gp.Out, gp.N, AnyMemory)
}

// gemmFormats records the formats of a GEMM plan's weights and bias
// (materialize's, for one GEMM).
func (b *encBuilder) gemmFormats(gp *GemmPlan) {
	wf := &Format{Value: gp.Right, Rows: gp.Kp, Cols: gp.Np, RealCol: gp.N, Storage: graph.F16, Acc: graph.F16, Order: AMPRight, Mem: Interleaved}
	for i := 0; i < gp.Rows.Count; i++ {
		for j := 0; j < gp.Cols.Count; j++ {
			for q := 0; q < gp.Inner.Count; q++ {
				wf.Pieces = append(wf.Pieces, Piece{Rows: gp.Inner.Span(q), Cols: gp.Cols.Span(j), Tile: gp.Tile(i, j, q)})
			}
		}
	}
	b.plan.Formats[gp.Right.ID] = wf
	bf := &Format{Value: gp.Bias, Rows: 1, Cols: gp.Np, RealCol: gp.N, Storage: graph.F16, Acc: graph.F16, Order: RowMajor, Mem: AnyMemory,
		Pieces: biasPieces(gp)}
	b.plan.Formats[gp.Bias.ID] = bf
}

// lnCalls are the layer_norm_f16 calls of r rows (rows per call within
// the kernel's limits: 256 rows, 32768 values).
func (b *encBuilder) lnCalls(r int, residual bool) []kernels.LayerNorm {
	per := min(256, 32768/b.s.D)
	var out []kernels.LayerNorm
	for lo := 0; lo < r; lo += per {
		out = append(out, kernels.LayerNorm{Rows: min(per, r-lo), Width: b.s.D, Residual: residual})
	}
	return out
}

// lnParams records a layer norm's scale and bias on every layer-norm tile
// and counts them resident.
func (b *encBuilder) lnParams(rows Tiling, ps ...*graph.Node) []int {
	w := make([]int, b.tiles)
	for _, p := range ps {
		f := &Format{Value: p, Rows: 1, Cols: b.s.D, RealCol: b.s.D, Storage: graph.F16, Acc: graph.F16, Order: RowMajor, Mem: AnyMemory}
		for i := 0; i < rows.Count; i++ {
			f.Pieces = append(f.Pieces, Piece{Rows: Span{Lo: 0, Hi: 1}, Cols: Span{Lo: 0, Hi: b.s.D}, Tile: i})
			w[i] += cost.Align(2*b.s.D, 32)
		}
		b.plan.Formats[p.ID] = f
	}
	return w
}

// packRows converts tile t's row-major rows rs of value v to the AMP
// left panel (pack_left_f16), except when that is already its byte
// order: one row of whole 16-column groups is its AMP left panel (a
// group's rows, one, then the next group), and a pack of one row keeps
// one of the six workers busy (the kernel splits rows).
func (b *encBuilder) packRows(name string, t int, rs Span, v *graph.Node, busy []int64, calls *[]Call) error {
	s := b.s
	if rs.Len() == 1 && s.D == s.Dp {
		return nil
	}
	pk := kernels.PackLeft{R: rs.Len(), K: s.D}
	cyc, err := b.call(pk)
	if err != nil {
		return fmt.Errorf("mid: encoder: %s: %w", name, err)
	}
	busy[t] += cyc
	*calls = append(*calls, Call{Tile: t, Spec: pk, Cycles: cyc, Reads: []Ref{{v, -1, rs, Span{Lo: 0, Hi: s.D}}}, Writes: []Ref{{v, -1, rs, Span{Lo: 0, Hi: s.Dp}}}})
	return nil
}

// layerNorm1 plans ln1 on the layer-norm tiles: x where the host writes
// it (row-major, block i on tile i), layer_norm_f16, pack_left_f16. Its
// result is ln1's AMP left panels, one per tile.
func (b *encBuilder) layerNorm1(rows Tiling) (*layout, error) {
	s, n := b.s, b.n
	const name = "0.layer_norm1"
	xf := &Format{Value: n.x, Rows: s.M, Cols: s.D, RealCol: s.D, Storage: graph.F16, Acc: graph.F16, Order: RowMajor, Mem: AnyMemory}
	xb, work, out := make([]int, b.tiles), make([]int, b.tiles), make([]int, b.tiles)
	busy := make([]int64, b.tiles)
	var calls []Call
	l := &layout{value: n.ln1, cols: []Span{{Lo: 0, Hi: s.Dp}}, order: AMPLeft}
	for i, rs := range rows.Spans() {
		xf.Pieces = append(xf.Pieces, Piece{Rows: rs, Cols: Span{Lo: 0, Hi: s.D}, Tile: i})
		r := rs.Len()
		xb[i] = cost.Align(2*r*s.D, 32)
		work[i] = cost.Align(2*r*s.D, 32) + cost.Align(8*r, 32) + cost.Align(2*r*s.Dp, 32) // ln1 row-major, stats, the panel
		out[i] = cost.Align(2*r*s.Dp, 32)
		lo := rs.Lo
		for _, c := range b.lnCalls(r, false) {
			sub := Span{Lo: lo, Hi: lo + c.Rows}
			cyc, err := b.call(c)
			if err != nil {
				return nil, fmt.Errorf("mid: encoder: %s: %w", name, err)
			}
			busy[i] += cyc
			calls = append(calls, Call{Tile: i, Spec: c, Cycles: cyc,
				Reads:  []Ref{{n.x, -1, sub, Span{Lo: 0, Hi: s.D}}, {n.ln1w, -1, Span{Lo: 0, Hi: 1}, Span{Lo: 0, Hi: s.D}}, {n.ln1b, -1, Span{Lo: 0, Hi: 1}, Span{Lo: 0, Hi: s.D}}},
				Writes: []Ref{{n.ln1, -1, sub, Span{Lo: 0, Hi: s.D}}}})
			lo += c.Rows
		}
		if err := b.packRows(name, i, rs, n.ln1, busy, &calls); err != nil {
			return nil, err
		}
		l.rows = append(l.rows, rs)
		l.tile = append(l.tile, i)
	}
	b.plan.Formats[n.x.ID] = xf
	b.plan.Formats[n.ln1.ID] = layoutFormat(l, n.ln1, s.D, AnyMemory)
	// x is held until the second layer norm adds it (residual1).
	b.keep("x", opLN1-1, opLN2, xb)
	params := b.lnParams(rows, n.ln1w, n.ln1b, n.ln2w, n.ln2b)
	if err := b.fits(name, opLN1, work, nil, params, nil); err != nil {
		return nil, err
	}
	var e opEval
	addCompute(&e, name, busy, calls)
	b.commit(name, opLN1, e.stages, work, params, nil, 0)
	b.keep("ln1", opLN1, opV, out)
	return l, nil
}

// gatherRows brings the row-major blocks of a value held as src (a GEMM's
// unpacked result) to the layer-norm tiles, each its rows whole: one
// exchange phase; a tile's own piece of its rows is copied into its row
// buffer row by row (copy_f16; the rows of a block are not the rows of
// the buffer) in the compute stage that follows, whose calls are
// returned with their busy cycles.
func (b *encBuilder) gatherRows(name string, src *layout, rows Tiling, chunk Span) ([]Stage, []Call, []int64, error) {
	send, recv := make([]int, b.tiles), make([]int, b.tiles)
	busy := make([]int64, b.tiles)
	var calls []Call
	var tr []Transfer
	var err error
	// The layer-norm row blocks within chunk (all of them without row
	// chunks), each to its tile.
	var nrows []Span
	var ntile []int
	for i, rs := range rows.Spans() {
		if r := rs.Intersect(chunk); r.Len() > 0 {
			nrows = append(nrows, r)
			ntile = append(ntile, i)
		}
	}
	nd := &need{rows: nrows, cols: []Span{{Lo: 0, Hi: b.s.D}}, tiles: func(ri, _ int) []int { return []int{ntile[ri]} }}
	exchange(src, nd, 2, send, recv, func(t Transfer) { tr = append(tr, t) }, func(t int, rs, cs Span) {
		c := kernels.Copy{N: 2 * cs.Len()}
		cyc, cerr := b.call(c)
		if cerr != nil {
			err = cerr
			return
		}
		for r := rs.Lo; r < rs.Hi; r++ {
			busy[t] += cyc
			calls = append(calls, Call{Tile: t, Spec: c, Cycles: cyc, Reads: []Ref{{src.value, -1, Span{Lo: r, Hi: r + 1}, cs}}})
		}
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("mid: encoder: %s: %w", name, err)
	}
	var e opEval
	addExchange(b.t, &e, name+".in", send, recv, tr)
	return e.stages, calls, busy, nil
}

// layerNorm2 plans the out_proj rows' gather, layer_norm_f16 with the
// fused residual (y = x + attn, kept for the last residual) and
// pack_left_f16 of ln2(y) on the layer-norm tiles.
func (b *encBuilder) layerNorm2(rows Tiling, src *layout) (*layout, error) {
	s, n := b.s, b.n
	const name = "0.layer_norm2"
	stages, calls, busy, err := b.gatherRows(name, src, rows, Span{Lo: 0, Hi: s.M})
	if err != nil {
		return nil, err
	}
	work, y, out := make([]int, b.tiles), make([]int, b.tiles), make([]int, b.tiles)
	l := &layout{value: n.ln2, cols: []Span{{Lo: 0, Hi: s.Dp}}, order: AMPLeft}
	for i, rs := range rows.Spans() {
		r := rs.Len()
		// The gathered rows, ln2 row-major, the statistics, y and the panel.
		work[i] = 2*cost.Align(2*r*s.D, 32) + cost.Align(8*r, 32) + cost.Align(2*r*s.D, 32) + cost.Align(2*r*s.Dp, 32)
		y[i] = cost.Align(2*r*s.D, 32)
		out[i] = cost.Align(2*r*s.Dp, 32)
		lo := rs.Lo
		for _, c := range b.lnCalls(r, true) {
			sub := Span{Lo: lo, Hi: lo + c.Rows}
			cyc, err := b.call(c)
			if err != nil {
				return nil, fmt.Errorf("mid: encoder: %s: %w", name, err)
			}
			busy[i] += cyc
			calls = append(calls, Call{Tile: i, Spec: c, Cycles: cyc,
				Reads: []Ref{{n.x, -1, sub, Span{Lo: 0, Hi: s.D}}, {n.oAdd, -1, sub, Span{Lo: 0, Hi: s.D}},
					{n.ln2w, -1, Span{Lo: 0, Hi: 1}, Span{Lo: 0, Hi: s.D}}, {n.ln2b, -1, Span{Lo: 0, Hi: 1}, Span{Lo: 0, Hi: s.D}}},
				Writes: []Ref{{n.res1, -1, sub, Span{Lo: 0, Hi: s.D}}, {n.ln2, -1, sub, Span{Lo: 0, Hi: s.D}}}})
			lo += c.Rows
		}
		if err := b.packRows(name, i, rs, n.ln2, busy, &calls); err != nil {
			return nil, err
		}
		l.rows = append(l.rows, rs)
		l.tile = append(l.tile, i)
	}
	if err := b.fits(name, opLN2, work, nil, nil, nil); err != nil {
		return nil, err
	}
	var e opEval
	e.stages = stages
	addCompute(&e, name, busy, calls)
	b.commit(name, opLN2, e.stages, work, nil, nil, 0)
	b.plan.Formats[n.ln2.ID] = layoutFormat(l, n.ln2, s.D, AnyMemory)
	yf := &Format{Value: n.res1, Rows: s.M, Cols: s.D, RealCol: s.D, Storage: graph.F16, Acc: graph.F16, Order: RowMajor, Mem: AnyMemory}
	for i, rs := range rows.Spans() {
		yf.Pieces = append(yf.Pieces, Piece{Rows: rs, Cols: Span{Lo: 0, Hi: s.D}, Tile: i})
	}
	b.plan.Formats[n.res1.ID] = yf
	b.keep("y", opLN2, opRes2, y)
	b.keep("ln2", opLN2, opFC1, out)
	return l, nil
}

// residual2 plans the fc2 rows' gather and the last residual add (add_f16
// with y) on the layer-norm tiles: the graph output, row-major, block i
// on tile i.
func (b *encBuilder) residual2(rows Tiling, src *layout, chunk Span, opName string) error {
	s, n := b.s, b.n
	const name = "0.residual2"
	stages, calls, busy, err := b.gatherRows(name, src, rows, chunk)
	if err != nil {
		return err
	}
	work := make([]int, b.tiles)
	of := b.plan.Formats[n.res2.ID]
	if of == nil {
		of = &Format{Value: n.res2, Rows: s.M, Cols: s.D, RealCol: s.D, Storage: graph.F16, Acc: graph.F16, Order: RowMajor, Mem: AnyMemory}
	}
	per := 65536 / s.D // add_f16 takes up to 65536 values a call
	if per == 0 {
		return fmt.Errorf("mid: encoder: %s: a row of %d values exceeds add_f16's 65536", name, s.D)
	}
	for i, rs := range rows.Spans() {
		rs = rs.Intersect(chunk)
		r := rs.Len()
		if r <= 0 {
			continue
		}
		work[i] = 2 * cost.Align(2*r*s.D, 32) // the gathered rows and the sum
		for lo := rs.Lo; lo < rs.Hi; lo += per {
			sub := Span{Lo: lo, Hi: min(lo+per, rs.Hi)}
			c := kernels.Add{N: sub.Len() * s.D}
			cyc, err := b.call(c)
			if err != nil {
				return fmt.Errorf("mid: encoder: %s: %w", name, err)
			}
			busy[i] += cyc
			calls = append(calls, Call{Tile: i, Spec: c, Cycles: cyc,
				Reads: []Ref{{n.res1, -1, sub, Span{Lo: 0, Hi: s.D}}, {n.fc2Add, -1, sub, Span{Lo: 0, Hi: s.D}}}, Writes: []Ref{{n.res2, -1, sub, Span{Lo: 0, Hi: s.D}}}})
		}
		of.Pieces = append(of.Pieces, Piece{Rows: rs, Cols: Span{Lo: 0, Hi: s.D}, Tile: i})
	}
	if err := b.fits(name, opRes2, work, nil, nil, nil); err != nil {
		return err
	}
	var e opEval
	e.stages = stages
	addCompute(&e, name, busy, calls)
	b.commit(opName, opRes2, e.stages, work, nil, nil, 0)
	b.plan.Formats[n.res2.ID] = of
	return nil
}
