package mid

import (
	"fmt"
	"strings"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// WeightPlacement says where a GEMM's right operand (a Parameter) lives.
type WeightPlacement uint8

const (
	// WeightsResident: every computing tile holds its weight block for the
	// whole program (uploaded by the "initialize" call, replicated over the
	// grid's row blocks); no exchange moves weights during "run".
	WeightsResident WeightPlacement = iota
	// WeightsStreamed: one home copy of every block's weights, spread over
	// each grid column (GemmPlan.WeightShare); per block, each cell copies
	// its share into its panel and the operation's input phase multicasts
	// the shares down the grid column. Generated for looped plans only
	// (Plan.Period): it trades an exchange per block for the blocks'
	// replicated panels when those do not fit.
	WeightsStreamed
)

// Orientation of a GEMM on the AMP: Normal runs C = A·B with A's rows on the
// AMP rows and B as the weight panel. (Transposed, C^T = B^T·A^T, is not
// generated.)
type Orientation uint8

const Normal Orientation = 0

// ReduceKind says how K-split partial sums are combined.
type ReduceKind uint8

const (
	NoReduce  ReduceKind = iota // Inner.Count == 1
	ReduceAdd                   // reduce-scatter: exchange, then reduce_add_f16
)

// GemmPlan is the plan of one Gemm node (plus its fused elementwise
// epilogue). The grid is Rows.Count x Cols.Count x Inner.Count cells; cell
// (i, j, p) computes the partial product of A[Rows.Span(i)][Inner.Span(p)]
// and B[Inner.Span(p)][Cols.Span(j)] on tile Tile(i, j, p) with one call of
// Kernel (r = rows of the span, c and k = the padded spans, multiples of 16).
// With Inner.Count > 1 the partial output block (i, j) is reduce-scattered:
// column slice q (Slice(j, q), whole groups of 16 columns) of every partial
// goes to tile Tile(i, j, q), which sums the Inner.Count parts, applies the
// epilogue and holds the slice of the result.
type GemmPlan struct {
	Node     *graph.Node   // the Gemm
	Left     *graph.Node   // A
	Right    *graph.Node   // B (a Parameter)
	Bias     *graph.Node   // the bias parameter of an Add epilogue (nil: none)
	Epilogue []*graph.Node // fused elementwise ops applied on the block holder (Add of Bias, Gelu), in order
	Out      *graph.Node   // the value this plan produces: last epilogue node, or Node
	Output   bool          // Out is a graph output: its slices are unpacked to row-major

	M, K, N int // real sizes
	Kp, Np  int // padded to multiples of 16

	Rows, Cols, Inner Tiling
	Orientation       Orientation
	Weights           WeightPlacement
	Kernel            string // the GEMM kernel, e.g. kernels.GemmF16
	Reduce            ReduceKind
	// Chunks is how many row chunks the chain runs in (1: none): M is
	// then the rows of one chunk, every chunk runs the same stages on the
	// same tiles (a runtime loop), and TotalM rows of the input and output
	// (Chunks x M, the last chunk padded with zero rows) stay on the
	// device: the input spread over the first GEMM's grid rows
	// (spreadLayout), the result beside its holders' blocks.
	Chunks int
	TotalM int // the real rows of all chunks (M when Chunks is 1)
	// Base is the grid's first tile: the encoder plan (SearchEncoder) runs
	// independent GEMMs side by side on disjoint tile ranges. Always 0 in
	// the MLP's plans.
	Base int
}

// Tile is the logical tile of cell (i, j, p). The column index runs
// fastest, so that partner tiles (logical 2k and 2k+1, which share a
// 64-bit exchange path) are neighbouring column cells of one (i, p): both
// need the same left block, which can then reach them as paired 64-bit
// items, half the receive events.
func (g *GemmPlan) Tile(i, j, p int) int { return g.Base + (i*g.Inner.Count+p)*g.Cols.Count + j }

// InputHolders are the tiles the host writes block (i, p) of a graph
// input consumed as the left operand to: the first cell of its row of the
// grid, Tile(i, 0, p), and, when that tile is the even one of a partner
// pair, its partner Tile(i, 1, p), so that the pair can multicast the
// block as paired 64-bit items.
func (g *GemmPlan) InputHolders(i, p int) []int {
	t := g.Tile(i, 0, p)
	if g.Cols.Count > 1 && t%2 == 0 {
		return []int{t, g.Tile(i, 1, p)}
	}
	return []int{t}
}

// InputPiece is the piece of block (i, p) of a graph input that cell
// (i, j, p) keeps for every chunk in a chunked plan (spreadLayout): whole
// 16-column groups of the block's K span, balanced over the grid row's
// cells; empty when the block has fewer groups than the row has cells.
func (g *GemmPlan) InputPiece(j, p int) Span {
	ks := g.Inner.Span(p)
	groups := ks.Len() / 16
	a, b := j*groups/g.Cols.Count, (j+1)*groups/g.Cols.Count
	return Span{Lo: ks.Lo + 16*a, Hi: ks.Lo + 16*b}
}

// Grid names a GEMM plan's grid and weight placement: what a package
// records of it (Rebuild).
type Grid struct {
	Rows, Cols, Inner int
	Streamed          bool
}

func (g Grid) String() string {
	s := fmt.Sprintf("%dx%dx%d", g.Rows, g.Cols, g.Inner)
	if g.Streamed {
		s += "s"
	}
	return s
}

// Grid is the plan's grid.
func (g *GemmPlan) Grid() Grid {
	return Grid{g.Rows.Count, g.Cols.Count, g.Inner.Count, g.Weights == WeightsStreamed}
}

// WeightShare is the share of weight panel (j, q) that cell (i, j, q)
// keeps of every block in a streamed plan (whole 16-column groups of the
// panel's columns, balanced over the grid column's cells; empty when the
// panel has fewer groups than the column has cells). In AMP right order
// a panel's column groups follow one another, so a share is one
// contiguous range of the panel, at byte ShareOffset.
func (g *GemmPlan) WeightShare(i, j int) Span {
	cs := g.Cols.Span(j)
	groups := cs.Len() / 16
	a, b := i*groups/g.Rows.Count, (i+1)*groups/g.Rows.Count
	return Span{Lo: cs.Lo + 16*a, Hi: cs.Lo + 16*b}
}

// ShareOffset is the byte offset of share s of panel (j, q) in the
// panel (AMP right order: k/16 blocks of 16x16 per column group).
func (g *GemmPlan) ShareOffset(j, q int, s Span) int {
	return (s.Lo - g.Cols.Span(j).Lo) / 16 * g.Inner.Span(q).Len() * 32
}

// ActiveTiles is the number of grid cells.
func (g *GemmPlan) ActiveTiles() int { return g.Rows.Count * g.Cols.Count * g.Inner.Count }

// Slice is the column slice of output block j owned after the reduction by
// cell q (whole 16-column groups; empty for q past the last non-empty one).
// Without K-split it is the whole block.
func (g *GemmPlan) Slice(j, q int) Span {
	c := g.Cols.Span(j)
	if g.Inner.Count == 1 {
		return c
	}
	groups := c.Len() / 16
	per := (groups + g.Inner.Count - 1) / g.Inner.Count
	lo := min(c.Lo+16*q*per, c.Hi)
	return Span{Lo: lo, Hi: min(lo+16*per, c.Hi)}
}

// Describe is a one-line summary of the plan.
func (g *GemmPlan) Describe() string {
	ep := []string{}
	for _, e := range g.Epilogue {
		ep = append(ep, e.Op.String())
	}
	w := "resident"
	if g.Weights == WeightsStreamed {
		w = "streamed"
	}
	return fmt.Sprintf("%s: %dx%dx%d grid=%dx%dx%d (rows x cols x ksplit) tiles=%d block r=%d c=%d k=%d kernel=%s weights=%s reduce=%v epilogue=%v chunks=%d",
		g.Node.Name, g.M, g.K, g.N, g.Rows.Count, g.Cols.Count, g.Inner.Count, g.ActiveTiles(),
		g.Rows.Block, g.Cols.Block, g.Inner.Block, g.Kernel, w, g.Reduce == ReduceAdd, ep, g.Chunks)
}

// Ref names a rectangle of a value (or of one K-split partial of a GEMM
// output: Part >= 0) in padded coordinates.
type Ref struct {
	Value      *graph.Node
	Part       int // -1: the value itself; p >= 0: partial sum p of a Gemm
	Rows, Cols Span
}

func (r Ref) String() string {
	p := ""
	if r.Part >= 0 {
		p = fmt.Sprintf(".part%d", r.Part)
	}
	return fmt.Sprintf("%s%s%v%v", r.Value.Name, p, r.Rows, r.Cols)
}

// Transfer is one logical transfer of an exchange phase: the rectangle Ref,
// held by tile From, is sent once and received by every tile of To
// (multicast).
type Transfer struct {
	Ref   Ref
	Order Order
	From  int
	To    []int
	Bytes int
}

// Call is one kernel call on one tile in a compute stage.
type Call struct {
	Tile   int
	Spec   kernels.Spec // the kernel and its parameters
	Cycles int64        // modelled: cost.Call, the kernel and the supervisor's call overhead
	Reads  []Ref        // operands read (present on Tile before the call)
	Writes []Ref        // values produced
}

// StageKind distinguishes exchange phases from compute stages.
type StageKind uint8

const (
	ExchangeStage StageKind = iota
	ComputeStage
)

// Stage is one BSP superstep of the program: an exchange phase (Transfers;
// cost = endpoint bound + latency + global sync) or a compute stage (Calls,
// run by each tile in order; cost = the busiest tile's sum).
type Stage struct {
	Kind      StageKind
	Name      string
	Transfers []Transfer
	Calls     []Call
	Cycles    int64
	MaxSend   int // bytes, busiest sender
	MaxRecv   int // bytes, busiest receiver
}

// Plan is one complete costed plan of a graph: the input of lowering.
type Plan struct {
	Graph  *graph.Graph
	Target *ipu21.Target
	Tiles  int // tiles available to the plan
	Gemms  []*GemmPlan
	// Formats holds the distributed format of every value that exists in
	// memory (inputs, weights, fused-epilogue results, outputs), by node id;
	// nil for values that never materialise as a whole (a Gemm whose
	// output only exists as partials before its epilogue is stored under
	// the epilogue's node).
	Formats []*Format
	Stages  []Stage

	// Chunks is the chain's row chunks (GemmPlan.Chunks): the stages are
	// one chunk's, run Chunks times.
	Chunks int
	// Period, when not zero, makes the plan a runtime loop over blocks:
	// the chain is Repeat() blocks of Period GEMMs of the same shapes, and
	// GEMM b*Period+o runs on the grid of GEMM o (Gemms holds every GEMM,
	// with its own weight and bias nodes). Stages are one block's, run
	// Repeat() times, with the block's first input exchange reading the
	// result of its last GEMM: the host writes the graph input where
	// Gemms[Period-1] leaves its result (outLayout, AMP output order), so
	// that every iteration reads and writes the same buffers. Each tile's
	// weights are every block's panels back to back (or streamed). In row
	// chunks, each chunk runs the Prologue, every block, the Epilogue.
	Period int
	// Prologue and Epilogue: a looped plan's per-chunk stages in row
	// chunks (copies of the chunk's input into the buffer the blocks
	// read, and of its result back; chunkCopies).
	Prologue, Epilogue []Stage

	Cycles       int64 // predicted total: Chunks x (Prologue + Repeat() x Stages + Epilogue)
	PeakBytes    int   // predicted peak data bytes on the busiest tile
	WeightBytes  int   // resident weight bytes on the busiest tile
	ActiveTiles  int
	Flops        int64 // useful GEMM flops of the graph
	ExchangeCyc  int64 // sum of exchange stages
	ComputeCyc   int64 // sum of compute stages
	SearchCycles int64 // the beam's figure (equal to Cycles; kept as a cross-check)

	// Encoder is set on a plan of the encoder layer (SearchEncoder): the
	// splits of its operators that are not GEMM grids and the cycles by
	// operator. nil on the MLP's plans.
	Encoder *EncoderPlan
}

// Repeat is how many times the stages run per chunk: the blocks of a
// looped plan (Period), else 1.
func (p *Plan) Repeat() int {
	if p.Period > 0 {
		return len(p.Gemms) / p.Period
	}
	return 1
}

// Loop is how many blocks the plan loops over: Repeat() for a looped
// plan (1 for a chain looped over its one block in row chunks), 0 when
// it is not looped (what Rebuild takes).
func (p *Plan) Loop() int {
	if p.Period > 0 {
		return p.Repeat()
	}
	return 0
}

// Body is the GEMMs whose stages the plan holds: one block's of a looped
// plan, else all.
func (p *Plan) Body() []*GemmPlan {
	if p.Period > 0 {
		return p.Gemms[:p.Period]
	}
	return p.Gemms
}

// Estimate is the plan's cost record (cost.Estimate): every stage the
// beam costed, run as often as the plan runs it (Chunks x Repeat() for
// Stages, Chunks for Prologue and Epilogue), each compute stage split by
// the kernel classes of its busiest tile (the first of equals). Its Total
// is Cycles. The lowering keeps it as the lowered plan's estimate and the
// rerank replaces only its exchange part, so the beam and the rerank
// read one record.
func (p *Plan) Estimate() cost.Estimate {
	e, err := p.record()
	if err != nil {
		panic("BUG: mid: " + err.Error()) // Check tests the record of every plan Search makes
	}
	return e
}

// record is Estimate, or what makes a stage's cycles disagree with its
// calls.
func (p *Plan) record() (cost.Estimate, error) {
	var e cost.Estimate
	var err error
	add := func(stages []Stage, runs int) {
		for i := range stages {
			st := &stages[i]
			if st.Kind == ExchangeStage {
				e.AddExchange(runs * int(st.Cycles))
				continue
			}
			if len(st.Calls) == 0 {
				e.Add(kernels.ClassElementwise, runs*int(st.Cycles))
				continue
			}
			busy := map[int]int64{}
			busiest := -1
			for _, c := range st.Calls {
				busy[c.Tile] += c.Cycles
				if busiest < 0 || busy[c.Tile] > busy[busiest] || (busy[c.Tile] == busy[busiest] && c.Tile < busiest) {
					busiest = c.Tile
				}
			}
			if busy[busiest] != st.Cycles && err == nil {
				err = fmt.Errorf("stage %s costs %d cycles, the calls of its busiest tile %d add up to %d", st.Name, st.Cycles, busiest, busy[busiest])
			}
			for _, c := range st.Calls {
				if c.Tile == busiest {
					e.Add(c.Spec.Class(), runs*int(c.Cycles))
				}
			}
		}
	}
	add(p.Stages, max(p.Chunks, 1)*p.Repeat())
	add(p.Prologue, max(p.Chunks, 1))
	add(p.Epilogue, max(p.Chunks, 1))
	return e, err
}

// Efficiency is useful flops / (cycles x all chip tiles x 128 flop/cycle),
// the project's efficiency metric.
func (p *Plan) Efficiency() float64 {
	if p.Cycles == 0 {
		return 0
	}
	return float64(p.Flops) / (float64(p.Cycles) * float64(p.Target.Tiles) * float64(p.Target.FlopsPerCycleF16))
}

// Summary is a multi-line description: GEMM grids, stages with cycles.
func (p *Plan) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cycles=%d (exchange %d, compute %d) efficiency=%.2f%% peakBytesPerTile=%d weightBytesPerTile=%d activeTiles=%d\n",
		p.Cycles, p.ExchangeCyc, p.ComputeCyc, 100*p.Efficiency(), p.PeakBytes, p.WeightBytes, p.ActiveTiles)
	if p.Period > 0 {
		fmt.Fprintf(&b, "  runtime loop: %d blocks of %d GEMMs, the stages below run once per block\n", p.Repeat(), p.Period)
	}
	for _, g := range p.Body() {
		b.WriteString("  " + g.Describe() + "\n")
	}
	for _, s := range p.Stages {
		if s.Kind == ExchangeStage {
			fmt.Fprintf(&b, "  exchange %-12s cycles=%6d transfers=%d maxSend=%d maxRecv=%d\n", s.Name, s.Cycles, len(s.Transfers), s.MaxSend, s.MaxRecv)
		} else {
			fmt.Fprintf(&b, "  compute  %-12s cycles=%6d calls=%d\n", s.Name, s.Cycles, len(s.Calls))
		}
	}
	if p.Encoder != nil {
		b.WriteString(p.Encoder.describe(p.Cycles))
	}
	return b.String()
}
