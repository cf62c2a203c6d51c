package mid

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// Options tune the search. Zero values take the defaults.
type Options struct {
	Tiles       int // tiles available (default: all of the target's)
	BeamWidth   int // partial plans kept after each GEMM (default 32)
	PerGemm     int // candidates of a later GEMM tried against each beam state (default 32)
	Finalists   int // complete plans returned (default 8)
	CodeReserve int // bytes of region 0 kept for code (default 32 KiB)
	// MaxPhases bounds a plan's exchange phases (0: no bound): the tile
	// runtime's table of exchange rows (compiler/tile.MaxRowPhases) less
	// the initialize call's weights phase. An unrolled chain of many
	// blocks exceeds it; its runtime loop does not.
	MaxPhases int
	// Conservative ranks plans with the GEMM kernel that is correct under
	// the emulator's conservative assumptions (kernels.GemmF16For).
	Conservative bool
	// Logf receives one line per GEMM (candidate count and time) and one
	// per finalist; nil discards them.
	Logf func(format string, args ...any)
}

func (o *Options) defaults(t *ipu21.Target) {
	if o.Tiles <= 0 || o.Tiles > t.Tiles {
		o.Tiles = t.Tiles
	}
	if o.BeamWidth <= 0 {
		o.BeamWidth = 32
	}
	if o.PerGemm <= 0 {
		o.PerGemm = 32
	}
	if o.Finalists <= 0 {
		o.Finalists = 8
	}
	if o.CodeReserve <= 0 {
		o.CodeReserve = 32 << 10
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

// GemmStats records the candidate generation of one GEMM.
type GemmStats struct {
	Name       string
	Candidates int // feasible candidates generated
	Tried      int // candidate x beam-state evaluations
	Elapsed    time.Duration
}

// Result is the outcome of a search: finalists, best first.
type Result struct {
	Finalists []*Plan
	Stats     []GemmStats
	Budget    int // per-tile data bytes available
}

// gemmOp is one GEMM of the graph with its fused epilogue.
type gemmOp struct {
	node, left, right, out *graph.Node
	bias                   *graph.Node // the Add epilogue's parameter, if any
	epilogue               []*graph.Node
	output                 bool
	m, k, n                int
	// chunks: the chain runs in row chunks of m rows; totalM real rows.
	chunks, totalM int
}

// chain extracts the GEMM chain of the graph: every Gemm's right operand is
// a Parameter, its left operand the graph input or the previous op's result,
// a Gelu may follow a Gemm (fused), every other op is rejected.
func chain(g *graph.Graph) ([]gemmOp, error) {
	uses := make([]int, len(g.Nodes()))
	for _, n := range g.Nodes() {
		for _, in := range n.Inputs {
			uses[in.ID]++
		}
	}
	isOut := make([]bool, len(g.Nodes()))
	for _, o := range g.Outputs() {
		isOut[o.Node.ID] = true
	}
	var ops []gemmOp
	var prev *graph.Node
	for _, n := range g.Nodes() {
		switch n.Op {
		case graph.OpInput, graph.OpParameter:
		case graph.OpGemm:
			if n.TransA || n.TransB {
				return nil, fmt.Errorf("mid: gemm %q: transposed operands are not supported", n.Name)
			}
			if b, _, _, _ := n.GemmDims(); b != 1 || len(n.Shape) != 2 {
				return nil, fmt.Errorf("mid: gemm %q: batched GEMMs are not supported (shape %v)", n.Name, n.Shape)
			}
			if n.Acc != graph.F16 || n.DType != graph.F16 || n.Inputs[0].DType != graph.F16 {
				return nil, fmt.Errorf("mid: gemm %q: only f16 operands with f16 accumulation are planned (acc=%v out=%v)", n.Name, n.Acc, n.DType)
			}
			a, w := n.Inputs[0], n.Inputs[1]
			if w.Op != graph.OpParameter {
				return nil, fmt.Errorf("mid: gemm %q: right operand %q must be a parameter", n.Name, w.Name)
			}
			if a.Op != graph.OpInput && a != prev {
				return nil, fmt.Errorf("mid: gemm %q: left operand %q must be a graph input or the previous result", n.Name, a.Name)
			}
			if uses[a.ID] != 1 || uses[w.ID] != 1 {
				return nil, fmt.Errorf("mid: gemm %q: operands used more than once are not supported", n.Name)
			}
			_, m, k, nn := n.GemmDims()
			ops = append(ops, gemmOp{node: n, left: a, right: w, out: n, m: m, k: k, n: nn, chunks: 1, totalM: m})
			prev = n
		case graph.OpGelu:
			if len(ops) == 0 || n.Inputs[0] != prev || uses[prev.ID] != 1 || isOut[prev.ID] {
				return nil, fmt.Errorf("mid: gelu %q: only a GELU directly after a single-use GEMM is supported (fused)", n.Name)
			}
			if n.Approx != graph.GeluTanh {
				return nil, fmt.Errorf("mid: gelu %q: the %v form is not supported (gelu_f16 computes the tanh form)", n.Name, n.Approx)
			}
			op := &ops[len(ops)-1]
			op.epilogue = append(op.epilogue, n)
			op.out = n
			prev = n
		case graph.OpAdd:
			// A bias: prev + a 1-D parameter of the GEMM's columns,
			// fused before any GELU (add_bias_f16 on the block holder).
			if len(ops) == 0 || len(n.Inputs) != 2 || uses[prev.ID] != 1 || isOut[prev.ID] || n.DType != graph.F16 {
				return nil, fmt.Errorf("mid: add %q: only a bias directly after a single-use GEMM is supported (fused)", n.Name)
			}
			x, b := n.Inputs[0], n.Inputs[1]
			if x != prev {
				x, b = b, x
			}
			op := &ops[len(ops)-1]
			if x != prev || b.Op != graph.OpParameter || b.DType != graph.F16 || len(b.Shape) != 1 || b.Shape[0] != op.n || uses[b.ID] != 1 {
				return nil, fmt.Errorf("mid: add %q: only a bias [%d] (a single-use f16 parameter) added to %q is supported", n.Name, op.n, prev.Name)
			}
			if op.bias != nil || len(op.epilogue) > 0 {
				return nil, fmt.Errorf("mid: add %q: one bias per GEMM, before any GELU", n.Name)
			}
			op.bias = b
			op.epilogue = append(op.epilogue, n)
			op.out = n
			prev = n
		default:
			return nil, fmt.Errorf("mid: %s %q: operation not supported by the planner yet", n.Op, n.Name)
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("mid: the graph has no GEMM")
	}
	for i, op := range ops {
		if i+1 < len(ops) && ops[i+1].left != op.out {
			return nil, fmt.Errorf("mid: %q is not consumed by the next GEMM", op.out.Name)
		}
		if isOut[op.out.ID] {
			if i != len(ops)-1 {
				return nil, fmt.Errorf("mid: intermediate output %q is not supported", op.out.Name)
			}
			ops[i].output = true
		}
	}
	if !ops[len(ops)-1].output {
		return nil, fmt.Errorf("mid: the last GEMM's result is not a graph output")
	}
	return ops, nil
}

// axisCounts lists the distinct block counts of an axis of size units
// (ascending count): for each count c, blocks of ceil(size/c) units.
func axisCounts(size, minBlock int) []int {
	var out []int
	last := -1
	for c := 1; c <= size; c++ {
		b := (size + c - 1) / c
		if b < minBlock {
			break
		}
		cnt := (size + b - 1) / b
		if cnt != last {
			out = append(out, cnt)
			last = cnt
		}
	}
	return out
}

// candidates enumerates the feasible grids of one GEMM: every distinct
// (row blocks, column blocks, K blocks) with r <= 768, at most tiles cells,
// weights within region 1 and every kernel's parameter limits respected.
// blocks is how many blocks of a looped plan keep their weights on the
// grid's tiles (1: unrolled).
func candidates(op gemmOp, tiles, budget, region1, blocks int) []*GemmPlan {
	kp, np := roundUp(op.k, 16), roundUp(op.n, 16)
	var out []*GemmPlan
	rowCounts := axisCounts(op.m, 1)
	for _, gr := range rowCounts {
		rows := NewTiling(op.m, gr, 1)
		if rows.Block > kernels.GemmMaxRows {
			continue
		}
		for _, gc := range axisCounts(np/16, 1) {
			cols := NewTiling(np, gc, 16)
			if rows.Count*cols.Count > tiles {
				break
			}
			for _, gk := range axisCounts(kp/16, 1) {
				inner := NewTiling(kp, gk, 16)
				if rows.Count*cols.Count*inner.Count > tiles {
					break
				}
				r, c, k := rows.Block, cols.Block, inner.Block
				if c > 2048 || r*c > 1<<17 { // unpack/gelu/reduce limits
					continue
				}
				if inner.Count > 1 && (inner.Count > 85 || (c/16+inner.Count-1)/inner.Count == 0) {
					continue
				}
				g := &GemmPlan{Node: op.node, Left: op.left, Right: op.right, Bias: op.bias, Epilogue: op.epilogue, Out: op.out, Output: op.output,
					M: op.m, K: op.k, N: op.n, Kp: kp, Np: np, Rows: rows, Cols: cols, Inner: inner,
					Kernel: kernels.GemmF16, Weights: WeightsResident, Chunks: op.chunks, TotalM: op.totalM}
				if inner.Count > 1 {
					g.Reduce = ReduceAdd
				}
				if blocks*k*c*2 <= region1/2 && r*k*2+r*c*2+blocks*k*c*2 <= budget {
					out = append(out, g)
				}
				// A loop's blocks may instead keep one home copy of their
				// weights in shares down each grid column (streamed).
				share := (c/16 + rows.Count - 1) / rows.Count * 16 * k * 2
				if blocks > 1 && rows.Count > 1 && k*c*2 <= region1/2 && r*k*2+r*c*2+k*c*2+blocks*share <= budget {
					sg := *g
					sg.Weights = WeightsStreamed
					out = append(out, &sg)
				}
			}
		}
	}
	return out
}

// estimate is a closed-form figure of a candidate used only to order
// candidates: the busiest cell's compute (GEMM, reduction, epilogue) plus the
// endpoint bounds of its input and reduction exchanges.
func estimate(m *models, g *GemmPlan) int64 {
	r, c, k := g.Rows.Block, g.Cols.Block, g.Inner.Block
	e := m.gemmCycles(m.gemmSpec(k, c, r))
	in, out := 0, 0
	if g.Cols.Count > 1 {
		in = r * k * 2
	}
	if g.Weights == WeightsStreamed {
		sh := g.WeightShare(0, 0).Len() * k * 2
		in += k*c*2 - sh
		out = sh
		e += m.copyCycles(kernels.Copy{N: sh})
	}
	if in > 0 || out > 0 {
		e += cost.Phase(m.t, out, in)
	}
	s := g.Slice(0, 0).Len()
	n := r * s
	if g.Inner.Count > 1 {
		e += cost.Phase(m.t, r*(c-s)*2, (g.Inner.Count-1)*n*2)
		e += m.copyCycles(kernels.Copy{N: 2 * n}) + m.reduceCycles(kernels.ReduceAdd{N: n, Parts: g.Inner.Count})
	}
	for _, op := range g.Epilogue {
		if op.Op == graph.OpAdd {
			e += m.biasCycles(kernels.AddBias{Rows: n / 16, R: r})
		} else {
			e += m.geluCycles(kernels.Gelu{N: n})
		}
	}
	if g.Output {
		e += m.unpackCycles(kernels.UnpackOut{R: r, C: s})
	}
	return e
}

// state is a partial plan of the beam.
type state struct {
	gemms   []*GemmPlan
	cycles  int64
	weights []int // per tile, all ops so far
	r1      []int // per tile, of them in region 1
	work    []int // per tile, max working set so far
	fixed   []int // per tile, live for the whole program (chunked plans' inputs and results)
	peak    int
	out     *layout
	held    []int
	// period: a looped plan's GEMMs per block (Plan.Period; 0: none).
	// gemms then holds every block's GEMM.
	period int
	phases int // exchange stages so far
	// pro, epi: a looped plan's per-chunk copies in row chunks (Plan.Prologue, Plan.Epilogue).
	pro, epi Stage
}

// extend is s followed by GEMM g costed as e; blocks is how many blocks of
// a looped plan share g's tiles (their weights add up; 1 otherwise).
func (s *state) extend(g *GemmPlan, e *opEval, blocks int) *state {
	return s.extendIn(make([]int, 4*len(e.weights)), g, e, blocks)
}

// extendIn is extend with the new state's four per-tile arrays in buf
// (4 x tiles ints, overwritten): the beam extends every state by dozens
// of candidates and drops many of them, so it reuses buf until a state
// is kept.
func (s *state) extendIn(buf []int, g *GemmPlan, e *opEval, blocks int) *state {
	T := len(e.weights)
	buf = buf[:4*T]
	clear(buf)
	n := &state{gemms: append(append([]*GemmPlan(nil), s.gemms...), g),
		cycles: s.cycles + e.cycles*int64(g.Chunks), out: e.out, held: e.held, period: s.period, phases: s.phases + e.phases(),
		weights: buf[:T:T], r1: buf[T : 2*T : 2*T], work: buf[2*T : 3*T : 3*T], fixed: buf[3*T:]}
	for t := range n.weights {
		if s.weights != nil {
			n.weights[t], n.r1[t], n.work[t], n.fixed[t] = s.weights[t], s.r1[t], s.work[t], s.fixed[t]
		}
		n.weights[t] += blocks*e.weights[t] + e.panel[t]
		n.r1[t] += blocks*e.r1[t] + e.panel[t]
		n.fixed[t] += e.fixed[t]
		n.work[t] = max(n.work[t], e.work[t])
		n.peak = max(n.peak, n.weights[t]+n.work[t]+n.fixed[t])
	}
	return n
}

// region1Peak is the most region 1 bytes (resident and streamed panels)
// of any tile.
func (s *state) region1Peak() int {
	w := 0
	for _, b := range s.r1 {
		w = max(w, b)
	}
	return w
}

func (s *state) weightPeak() int {
	w := 0
	for _, b := range s.weights {
		w = max(w, b)
	}
	return w
}

// pareto keeps every state no other state beats on both cycles and peak
// memory (the Pareto front; up to width of them, cheapest first), then fills
// the beam up to width with the cheapest dominated states. The order is
// total and deterministic: cycles, peak, then generation order.
func pareto(states []*state, width int) []*state {
	sort.SliceStable(states, func(a, b int) bool {
		if states[a].cycles != states[b].cycles {
			return states[a].cycles < states[b].cycles
		}
		return states[a].peak < states[b].peak
	})
	var front []*state
	best := int(^uint(0) >> 1)
	for _, s := range states {
		if s.peak < best { // strictly less memory than every cheaper-or-equal state
			front = append(front, s)
			best = s.peak
		}
	}
	if len(front) >= width {
		return front[:width]
	}
	// Room left: fill with the cheapest dominated states, so the finalists
	// stay diverse; the result is again ordered by cycles.
	inFront := map[*state]bool{}
	for _, s := range front {
		inFront[s] = true
	}
	out := front
	for _, s := range states {
		if len(out) >= width {
			break
		}
		if !inFront[s] {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].cycles != out[b].cycles {
			return out[a].cycles < out[b].cycles
		}
		return out[a].peak < out[b].peak
	})
	return out
}

// Search plans graph g on target t: candidate plans per GEMM, a beam over
// the GEMM chain with Pareto retention (cycles, peak bytes per tile), memory
// as a hard constraint, and the best finalists materialised into Plans.
//
// Row chunks are a dimension of the search: when no plan of the whole
// rows fits (the input, the weights and the working set exceed a tile's
// memory, as for the SigLIP MLP on 64 tiles), the chain is planned for
// chunks of ceil(M/Q) rows run Q times on the same tiles (GemmPlan.Chunks),
// for the smallest feasible Q and the next chunkTries larger distinct
// chunk sizes, and the finalists are the cheapest over all of them. A
// feasible unchunked plan is never chunked: chunking only adds copies and
// phase overheads on the same grids.
func Search(g *graph.Graph, t *ipu21.Target, opt Options) (*Result, error) {
	opt.defaults(t)
	ops, err := chain(g)
	if err != nil {
		return nil, &UnsupportedError{err}
	}
	budget := cost.DataBudget(t, opt.CodeReserve)
	region1 := cost.InterleavedBudget(t)
	m := &models{t: t, conservative: opt.Conservative}
	res := &Result{Budget: budget}
	finalists := opt.Finalists
	beam, stats, err := beamSearch(ops, opt, m, budget, region1, 1)
	unrolledErr := err
	if err != nil {
		var cerr error
		beam, stats, cerr = chunkSearch(ops, true, func(ops []gemmOp) ([]*state, []GemmStats, error) {
			return beamSearch(ops, opt, m, budget, region1, 1)
		})
		if cerr != nil {
			beam, stats = nil, nil
		} else {
			finalists = len(beam)
		}
	}
	if len(beam) > finalists {
		beam = beam[:finalists]
	}
	// A chain of repeated blocks is also planned as a runtime loop over
	// its blocks: one block's stages on grids every block shares. Its
	// finalists join the unrolled ones (the unrolled chain's phases and
	// code grow with the blocks and may not fit the tile runtime's
	// tables; the lowering's rerank decides).
	P, inPlace := period(ops), false
	if P == 0 && unrolledErr != nil && ops[0].k == ops[len(ops)-1].n {
		// A chain that needs row chunks, planned as a loop over its one
		// block, keeps each chunk's input and then its result in one
		// slot (the chunked chain keeps both, apart).
		P, inPlace = len(ops), true
	}
	if P > 0 {
		var loops []*state
		var lstats []GemmStats
		var lerr error
		if !inPlace {
			loops, lstats, lerr = loopSearch(ops, P, opt, m, budget, region1)
		}
		if inPlace || lerr != nil {
			// The loop in row chunks: each chunk runs every block.
			loops, lstats, lerr = chunkSearch(ops, !inPlace, func(ops []gemmOp) ([]*state, []GemmStats, error) {
				return loopSearch(ops, P, opt, m, budget, region1)
			})
		}
		if lerr == nil {
			if len(loops) > opt.Finalists {
				loops = loops[:opt.Finalists]
			}
			// Beside unrolled finalists, only loops the planner costs
			// cheaper are worth lowering (a loop's shared grids rarely
			// beat per-GEMM ones; lowering and reranking each costs
			// build time).
			if unrolledErr == nil {
				loops = slices.DeleteFunc(loops, func(l *state) bool { return l.cycles >= beam[0].cycles })
			}
			beam = append(beam, loops...)
			stats = append(stats, lstats...)
		} else if len(beam) == 0 && inPlace {
			err = fmt.Errorf("%w; in row chunks with each chunk's input and result in one slot: %v", err, lerr)
		} else if len(beam) == 0 {
			err = fmt.Errorf("%w; as a runtime loop over %d blocks: %v", err, len(ops)/P, lerr)
		}
	}
	if len(beam) == 0 {
		return nil, err
	}
	sortStates(beam)
	res.Stats = stats
	for i, s := range beam {
		p := materialize(g, t, m, opt.Tiles, s)
		for i := range p.Gemms {
			p.Gemms[i].Kernel = kernels.GemmF16For(opt.Conservative)
		}
		res.Finalists = append(res.Finalists, p)
		opt.Logf("construct_mid: costed planning finalist rank=%d mid_cycles=%d efficiency=%.2f%% peak_bytes=%d chunks=%d period=%d %s",
			i, p.Cycles, 100*p.Efficiency(), p.PeakBytes, p.Chunks, p.Period, gridSummary(p))
	}
	return res, nil
}

// sortStates orders states by cycles, then peak bytes (stable).
func sortStates(states []*state) {
	sort.SliceStable(states, func(a, b int) bool {
		if states[a].cycles != states[b].cycles {
			return states[a].cycles < states[b].cycles
		}
		return states[a].peak < states[b].peak
	})
}

// chunkSearch plans the chain in row chunks with search (see Search): of
// each chunking tried, its cheapest and its smallest plan, cheapest first.
// probe: first try one-row chunks, and give up when they do not fit
// (right when chunks shrink the working set only; a loop's slots of every
// chunk's rows need the grid rows that one-row chunks do not have).
func chunkSearch(ops []gemmOp, probe bool, search func([]gemmOp) ([]*state, []GemmStats, error)) ([]*state, []GemmStats, error) {
	rows := ops[0].m
	if rows < 2 {
		return nil, nil, fmt.Errorf("mid: one row cannot be chunked")
	}
	// Chunks shrink the working set only: when one-row chunks do not
	// fit either (the weights alone do not), no chunking does.
	if probe {
		if _, _, err := search(chunked(ops, 1, rows)); err != nil {
			return nil, nil, err
		}
	}
	var beam []*state
	var stats []GemmStats
	tries, sizes := -1, 0 // chunk sizes tried since the first feasible one, and in all
	for q, last := 2, rows; q <= rows && tries < chunkTries && sizes < maxChunkSizes; q++ {
		rc := (rows + q - 1) / q
		if rc == last {
			continue
		}
		last = rc
		sizes++
		if tries >= 0 {
			tries++
		}
		b, st, cerr := search(chunked(ops, rc, (rows+rc-1)/rc))
		if cerr != nil {
			continue
		}
		tries = max(tries, 0)
		// Of each chunking, its cheapest plan and its smallest: the
		// planner's memory figure does not see the placement's element
		// rules, so the finalists span the memory range.
		small := b[0]
		for _, s := range b {
			if s.peak < small.peak {
				small = s
			}
		}
		beam = append(beam, b[0])
		if small != b[0] {
			beam = append(beam, small)
		}
		stats = append(stats, st...)
	}
	if len(beam) == 0 {
		return nil, nil, fmt.Errorf("mid: no row chunking fits")
	}
	sortStates(beam)
	return beam, stats, nil
}

// period is the GEMMs per block of a chain of at least two repeated
// blocks (the same shapes and epilogues, block after block), 0 when the
// chain does not repeat.
func period(ops []gemmOp) int {
	for p := 1; p <= len(ops)/2; p++ {
		if len(ops)%p != 0 {
			continue
		}
		same := true
		for i := p; i < len(ops) && same; i++ {
			a, b := ops[i-p], ops[i]
			same = a.m == b.m && a.k == b.k && a.n == b.n && a.chunks == b.chunks && len(a.epilogue) == len(b.epilogue) && (a.bias == nil) == (b.bias == nil)
			for e := 0; same && e < len(a.epilogue); e++ {
				same = a.epilogue[e].Op == b.epilogue[e].Op && a.epilogue[e].Approx == b.epilogue[e].Approx
			}
		}
		if same {
			return p
		}
	}
	return 0
}

// loopSearch plans the chain as a runtime loop over its blocks of P
// GEMMs: a beam over one block (its weights counted once per block),
// then each final state costed exactly with the block's real source (the
// previous block's result, where the last GEMM leaves it), cheapest
// first.
func loopSearch(ops []gemmOp, P int, opt Options, m *models, budget, region1 int) ([]*state, []GemmStats, error) {
	blocks := len(ops) / P
	beam, stats, err := beamSearch(loopBody(ops, P), opt, m, budget, region1, blocks)
	if err != nil {
		return nil, nil, err
	}
	var out []*state
	for _, s := range beam {
		ls := loopState(m, ops, P, s.gemms, opt.Tiles, false)
		if ls.peak > budget || ls.region1Peak() > region1 || (opt.MaxPhases > 0 && ls.phases > opt.MaxPhases) {
			continue
		}
		out = append(out, ls)
	}
	if len(out) == 0 {
		return nil, nil, fmt.Errorf("mid: no loop body fits the memory budget of %d bytes per tile with its real source", budget)
	}
	sortStates(out)
	return out, stats, nil
}

// loopBody is the ops of a loop's block of P GEMMs, as the search and
// Rebuild plan them: the body's last result is not unpacked (it stays
// where the next block reads it, and the host reads the output from
// there).
func loopBody(ops []gemmOp, P int) []gemmOp {
	body := slices.Clone(ops[:P])
	for i := range body {
		body[i].output = false
	}
	return body
}

// loopState costs the runtime loop whose blocks of P GEMMs run on the
// grids of body (one GEMM plan per GEMM of a block): the first GEMM's left
// operand is the graph input, held where the block's last GEMM leaves its
// result (loopSource); every block's GEMM plans are the body's on its
// own nodes. In row chunks (ops chunked), each chunk's input and result
// stay in Q slots beside that buffer: the chunk copies its slot in before
// the blocks and its result back after them (chunkCopies).
func loopState(m *models, ops []gemmOp, P int, body []*GemmPlan, tiles int, detail bool) *state {
	blocks := len(ops) / P
	last := body[P-1]
	src, held := loopSource(m, body, tiles)
	s := &state{period: P}
	var cycles int64
	for _, g := range body {
		e := evalGemm(m, g, src, held, tiles, detail)
		s = s.extend(g, e, blocks)
		cycles += e.cycles
		src, held = e.out, e.held
	}
	s.cycles = int64(blocks) * cycles
	if q := ops[0].chunks; q > 1 {
		s.pro, s.epi = chunkCopies(m, last, body[0].Left, tiles, detail)
		s.cycles = int64(q) * (s.cycles + s.pro.Cycles + s.epi.Cycles)
		for t := range s.fixed {
			s.fixed[t] += q * held[t]
			s.peak = max(s.peak, s.weights[t]+s.work[t]+s.fixed[t])
		}
	}
	all := make([]*GemmPlan, 0, len(ops))
	for b := 0; b < blocks; b++ {
		for o, g := range body {
			op := ops[b*P+o]
			c := *g
			// Output stays false: a loop's result is not unpacked (it is
			// read where the blocks leave it, in AMP output order).
			c.Node, c.Left, c.Right, c.Bias, c.Epilogue, c.Out = op.node, op.left, op.right, op.bias, op.epilogue, op.out
			all = append(all, &c)
		}
	}
	s.gemms = all
	return s
}

// chunkCopies are a looped plan's per-chunk stages in row chunks: every
// holder of the block's result copies the chunk's slot of the input into
// the buffer the blocks read and write, and, after them, the result back
// into the slot (one copy_f16 each).
func chunkCopies(m *models, last *GemmPlan, input *graph.Node, tiles int, detail bool) (in, out Stage) {
	l := outLayout(last)
	busy := make([]int64, tiles)
	var cin, cout []Call
	for ri, r := range l.rows {
		for ci, c := range l.cols {
			t := l.tile[ri*len(l.cols)+ci]
			if t < 0 {
				continue
			}
			spec := kernels.Copy{N: r.Len() * c.Len() * 2}
			cyc := m.copyCycles(spec)
			busy[t] += cyc
			if detail {
				cin = append(cin, Call{Tile: t, Spec: spec, Cycles: cyc,
					Reads: []Ref{{input, -1, r, c}}})
				cout = append(cout, Call{Tile: t, Spec: spec, Cycles: cyc,
					Reads: []Ref{{last.Out, -1, r, c}}})
			}
		}
	}
	var e opEval
	addCompute(&e, "chunk.in", busy, cin)
	addCompute(&e, "chunk.out", busy, cout)
	return e.stages[0], e.stages[1]
}

// loopSource is where a looped plan's block of GEMMs body reads its left
// operand from, and its bytes per tile: the graph input, held where the
// block's last GEMM leaves its result, in AMP output order.
func loopSource(m *models, body []*GemmPlan, tiles int) (*layout, []int) {
	last := body[len(body)-1]
	l := *outLayout(last)
	l.value, l.order = body[0].Left, AMPOut
	return &l, evalGemm(m, last, nil, nil, tiles, false).held
}

// UnsupportedError is Search's error for a graph the planner does not
// take (an operation, a shape or a form it has no plan for), as opposed to
// one it takes but finds no plan of that fits.
type UnsupportedError struct{ Err error }

func (e *UnsupportedError) Error() string { return e.Err.Error() }
func (e *UnsupportedError) Unwrap() error { return e.Err }

// chunkTries is how many chunk sizes beyond the first feasible one Search
// tries (more chunks of fewer rows cost more phase overheads).
const chunkTries = 6

// maxChunkSizes bounds the chunk sizes tried in all (a chain that does
// not fit in 64 distinct chunkings is refused).
const maxChunkSizes = 64

// chunked is the chain planned in q row chunks of rc rows.
func chunked(ops []gemmOp, rc, q int) []gemmOp {
	out := slices.Clone(ops)
	for i := range out {
		out[i].totalM, out[i].m, out[i].chunks = out[i].m, rc, q
	}
	return out
}

// beamSearch runs the beam over the chain: the final beam (sorted by
// cycles) and each GEMM's statistics.
// blocks is how many blocks of a looped plan share the GEMMs' tiles (1:
// the chain is planned unrolled).
func beamSearch(ops []gemmOp, opt Options, m *models, budget, region1, blocks int) ([]*state, []GemmStats, error) {
	var stats []GemmStats
	beam := []*state{{}}
	for oi, op := range ops {
		start := time.Now()
		cands := candidates(op, opt.Tiles, budget, region1, blocks)
		if len(cands) == 0 {
			return nil, nil, fmt.Errorf("mid: gemm %q (%dx%dx%d): no candidate fits %d tiles and %d bytes per tile", op.node.Name, op.m, op.k, op.n, opt.Tiles, budget)
		}
		// Rank candidates by a closed-form estimate of their largest cell
		// (cheap), then cost the best ones exactly against every beam state.
		// Each estimate once, not per comparison: a stable sort by the
		// same keys orders alike.
		est := make(map[*GemmPlan]int64, len(cands))
		for _, c := range cands {
			est[c] = estimate(m, c)
		}
		sort.SliceStable(cands, func(a, b int) bool { return est[cands[a]] < est[cands[b]] })
		if blocks > 1 {
			cands = weightFrontFirst(cands)
		}
		limit := opt.PerGemm
		if oi == 0 {
			limit = 4 * opt.BeamWidth
		}
		tried := 0
		var next []*state
		var buf []int // the next state's per-tile arrays: reused while states are dropped
		for _, s := range beam {
			for ci, c := range cands {
				if ci >= limit {
					break
				}
				e := evalGemm(m, c, s.out, s.held, opt.Tiles, false)
				tried++
				if buf == nil {
					buf = make([]int, 4*opt.Tiles)
				}
				ns := s.extendIn(buf, c, e, blocks)
				if ns.peak > budget || ns.region1Peak() > region1 || (opt.MaxPhases > 0 && ns.phases > opt.MaxPhases) {
					continue
				}
				buf = nil // ns keeps it
				next = append(next, ns)
			}
		}
		if len(next) == 0 {
			if opt.MaxPhases > 0 {
				return nil, nil, fmt.Errorf("mid: gemm %q: no plan fits the memory budget of %d bytes per tile and %d exchange phases", op.node.Name, budget, opt.MaxPhases)
			}
			return nil, nil, fmt.Errorf("mid: gemm %q: no plan fits the memory budget of %d bytes per tile", op.node.Name, budget)
		}
		beam = pareto(next, opt.BeamWidth)
		st := GemmStats{Name: op.node.Name, Candidates: len(cands), Tried: tried, Elapsed: time.Since(start)}
		stats = append(stats, st)
		opt.Logf("construct_mid:gemm_candidates gemm=%s m=%d k=%d n=%d chunks=%d candidates=%d evaluated=%d beam=%d elapsed_ms=%.2f",
			op.node.Name, op.m, op.k, op.n, op.chunks, st.Candidates, st.Tried, len(beam), float64(st.Elapsed.Microseconds())/1000)
	}
	return beam, stats, nil
}

// weightFrontFirst reorders candidates sorted by estimate so that those
// no cheaper candidate beats on weight bytes per tile come first, then
// the rest: a looped plan holds every block's weights, so the beam must
// see the small-panel grids too, which the estimate alone ranks far
// down. The front alternates between its cheapest and its smallest
// remaining candidate, so that a beam limit cuts its middle, not an end.
func weightFrontFirst(cands []*GemmPlan) []*GemmPlan {
	var front, rest []*GemmPlan
	best := int(^uint(0) >> 1)
	for _, c := range cands {
		w := c.Inner.Block * c.Cols.Block
		if c.Weights == WeightsStreamed {
			w = c.Inner.Block * c.WeightShare(0, 0).Len()
		}
		if w < best {
			front = append(front, c)
			best = w
		} else {
			rest = append(rest, c)
		}
	}
	out := make([]*GemmPlan, 0, len(cands))
	for a, b := 0, len(front)-1; a <= b; a, b = a+1, b-1 {
		out = append(out, front[a])
		if b != a {
			out = append(out, front[b])
		}
	}
	return append(out, rest...)
}

func gridSummary(p *Plan) string {
	s := ""
	for _, g := range p.Gemms {
		s += fmt.Sprintf("%s=%dx%dx%d(r%d,c%d,k%d) ", g.Node.Name, g.Rows.Count, g.Cols.Count, g.Inner.Count, g.Rows.Block, g.Cols.Block, g.Inner.Block)
	}
	return s
}

// materialize rebuilds a beam state with every transfer and call, the
// formats of every value, and the totals.
func materialize(g *graph.Graph, t *ipu21.Target, m *models, tiles int, s *state) *Plan {
	p := &Plan{Graph: g, Target: t, Tiles: tiles, Gemms: s.gemms, Formats: make([]*Format, len(g.Nodes())),
		Flops: g.GemmFlops(), SearchCycles: s.cycles, PeakBytes: s.peak, WeightBytes: s.weightPeak(), Chunks: s.gemms[0].Chunks,
		Period: s.period}
	body := p.Body()
	var src *layout
	var held []int
	if p.Period > 0 {
		src, held = loopSource(m, body, tiles)
		p.Formats[body[0].Left.ID] = layoutFormat(src, body[0].Left, body[0].K, AnyMemory)
	}
	active := map[int]bool{}
	for o, gp := range body {
		e := evalGemm(m, gp, src, held, tiles, true)
		p.Stages = append(p.Stages, e.stages...)
		// Formats: the left input (host inputs only), the weights (every
		// block's on the same tiles), the result.
		if src == nil {
			hl := inputLayout(gp)
			p.Formats[gp.Left.ID] = layoutFormat(hl, gp.Left, gp.K, AnyMemory)
		}
		for b := o; b < len(p.Gemms); b += len(body) {
			bg := p.Gemms[b]
			wf := &Format{Value: bg.Right, Rows: gp.Kp, Cols: gp.Np, RealCol: gp.N, Storage: graph.F16, Acc: graph.F16, Order: AMPRight, Mem: Interleaved}
			if gp.Weights == WeightsStreamed {
				wf.Mem = AnyMemory // the home shares; the panel they fill is region 1's
			}
			for i := 0; i < gp.Rows.Count; i++ {
				for j := 0; j < gp.Cols.Count; j++ {
					for q := 0; q < gp.Inner.Count; q++ {
						cols := gp.Cols.Span(j)
						if gp.Weights == WeightsStreamed {
							cols = gp.WeightShare(i, j)
						}
						if cols.Len() > 0 {
							wf.Pieces = append(wf.Pieces, Piece{Rows: gp.Inner.Span(q), Cols: cols, Tile: gp.Tile(i, j, q)})
						}
						active[gp.Tile(i, j, q)] = true
					}
				}
			}
			p.Formats[bg.Right.ID] = wf
			if bg.Bias != nil {
				bf := &Format{Value: bg.Bias, Rows: 1, Cols: gp.Np, RealCol: gp.N, Storage: graph.F16, Acc: graph.F16, Order: RowMajor, Mem: AnyMemory}
				bf.Pieces = append(bf.Pieces, biasPieces(gp)...)
				p.Formats[bg.Bias.ID] = bf
			}
		}
		p.Formats[gp.Out.ID] = layoutFormat(e.out, gp.Out, gp.N, AnyMemory)
		src, held = e.out, e.held
	}
	if p.Period > 0 {
		// The graph's output: the last block's result, where every block
		// leaves it.
		last := p.Gemms[len(p.Gemms)-1]
		p.Formats[last.Out.ID] = layoutFormat(src, last.Out, last.N, AnyMemory)
		if p.Chunks > 1 {
			in, out := chunkCopies(m, body[len(body)-1], body[0].Left, tiles, true)
			p.Prologue, p.Epilogue = []Stage{in}, []Stage{out}
		}
	}
	q := int64(p.Chunks) * int64(p.Repeat())
	for _, st := range p.Stages {
		p.Cycles += q * st.Cycles
		if st.Kind == ExchangeStage {
			p.ExchangeCyc += q * st.Cycles
		} else {
			p.ComputeCyc += q * st.Cycles
		}
	}
	for _, st := range append(slices.Clone(p.Prologue), p.Epilogue...) {
		p.Cycles += int64(p.Chunks) * st.Cycles
		p.ComputeCyc += int64(p.Chunks) * st.Cycles
	}
	p.ActiveTiles = len(active)
	return p
}

// biasPieces is where g's bias lives: with every holder of a result block, the
// bias of the block's columns (one row).
func biasPieces(g *GemmPlan) []Piece {
	var out []Piece
	l := outLayout(g)
	for ri := range l.rows {
		for ci, c := range l.cols {
			if t := l.tile[ri*len(l.cols)+ci]; t >= 0 {
				out = append(out, Piece{Rows: Span{Lo: 0, Hi: 1}, Cols: c, Tile: t})
			}
		}
	}
	return out
}

func layoutFormat(l *layout, v *graph.Node, realCols int, mem MemClass) *Format {
	f := &Format{Value: v, Rows: l.rows[len(l.rows)-1].Hi, Cols: l.cols[len(l.cols)-1].Hi, RealCol: realCols,
		Storage: graph.F16, Acc: graph.F16, Order: l.order, Mem: mem}
	for ri, r := range l.rows {
		for ci, c := range l.cols {
			if tl := l.tile[ri*len(l.cols)+ci]; tl >= 0 {
				f.Pieces = append(f.Pieces, Piece{Rows: r, Cols: c, Tile: tl})
			}
			if l.replica != nil {
				if tl := l.replica[ri*len(l.cols)+ci]; tl >= 0 {
					f.Pieces = append(f.Pieces, Piece{Rows: r, Cols: c, Tile: tl})
				}
			}
		}
	}
	return f
}

// Rebuild materialises the plan whose GEMMs run on the given grids (row
// blocks, column blocks, K blocks per GEMM, in graph order): the plan a
// package recorded, regenerated without a search. It fails when the grids
// do not match the graph's GEMMs or a grid is not one the search could
// have produced (a tiling with fewer non-empty blocks than asked, too many
// tiles, kernel limits). chunks is the plan's row chunks (0 or 1: none);
// blocks > 0 rebuilds a runtime loop over that many blocks (Plan.Loop),
// grids then being one block's.
func Rebuild(g *graph.Graph, t *ipu21.Target, tiles int, grids []Grid, chunks, blocks int) (*Plan, error) {
	opt := Options{Tiles: tiles}
	opt.defaults(t)
	ops, err := chain(g)
	if err != nil {
		return nil, err
	}
	if chunks > 1 {
		rows := ops[0].m
		rc := (rows + chunks - 1) / chunks
		if chunks > rows || (rows+rc-1)/rc != chunks {
			return nil, fmt.Errorf("mid: %d row chunks of %d rows: not a chunking the search produces", chunks, rows)
		}
		ops = chunked(ops, rc, chunks)
	}
	want := len(ops)
	if blocks == 1 && (chunks <= 1 || ops[0].k != ops[len(ops)-1].n) {
		return nil, fmt.Errorf("mid: a loop over one block: only in row chunks of a chain whose result has its input's columns")
	}
	if blocks > 1 {
		if period(ops) == 0 || len(ops)%blocks != 0 || len(ops)/blocks != len(grids) || (len(ops)/blocks)%period(ops) != 0 {
			return nil, fmt.Errorf("mid: a loop over %d blocks of %d GEMMs: not a loop the search produces for this graph's %d GEMMs", blocks, len(grids), len(ops))
		}
		want = len(ops) / blocks
	}
	if len(grids) != want {
		return nil, fmt.Errorf("mid: the recorded plan has %d GEMM grids, the graph %d GEMMs", len(grids), len(ops))
	}
	m := &models{t: t}
	s := &state{}
	body := ops[:want]
	if blocks > 0 {
		body = loopBody(ops, want)
	}
	for i, op := range body {
		want := grids[i]
		var found *GemmPlan
		for _, c := range candidates(op, opt.Tiles, int(^uint(0)>>1), int(^uint(0)>>1), max(blocks, 1)) {
			if c.Grid() == want {
				found = c
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("mid: gemm %q: grid %v is not a candidate on %d tiles", op.node.Name, want, opt.Tiles)
		}
		s = s.extend(found, evalGemm(m, found, s.out, s.held, opt.Tiles, false), 1)
	}
	if blocks > 0 {
		s = loopState(m, ops, len(grids), s.gemms, opt.Tiles, false)
	}
	return materialize(g, t, m, opt.Tiles, s), nil
}
