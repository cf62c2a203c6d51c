package mid

import (
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/kernels"
)

// VTGrid is the grid of the transposed v projection, v^T = Wv ln1^T:
// cell (i, j, p), on tile Tile(i, j, p), multiplies the head-padded dims
// Rows.Span(i) of Wv (its rows: resident AMP left blocks of the model
// dims Inner.Span(p)) by ln1^T's model dims Inner.Span(p) of the tokens
// Cols.Span(j) (the AMP right panel the cell receives), in batch-padded
// token coordinates (column bi*Tp + t is token t of batch element bi;
// columns t >= T are padding, exactly zero). With Inner.Count > 1 the
// partial blocks are reduce-scattered by rows: cell (i, j, q) sums and
// holds the dims Slice(i, q) (whole 16-row groups: an AMP right block of
// v is 16 dims of one token group).
type VTGrid struct {
	Rows, Cols, Inner Tiling
	Base              int // the grid's first tile (side by side with the other projections)
}

// Tile is the tile of cell (i, j, p).
func (v VTGrid) Tile(i, j, p int) int { return v.Base + (i*v.Inner.Count+p)*v.Cols.Count + j }

// Slice is the dims of block i that cell q holds after the reduction
// (empty past the last non-empty one); the whole block without K-split.
func (v VTGrid) Slice(i, q int) Span {
	r := v.Rows.Span(i)
	if v.Inner.Count == 1 {
		return r
	}
	groups := r.Len() / 16
	per := (groups + v.Inner.Count - 1) / v.Inner.Count
	lo := min(r.Lo+16*q*per, r.Hi)
	return Span{Lo: lo, Hi: min(lo+16*per, r.Hi)}
}

// vtRows are the token rows of ln1 (batch rows bi*T + t) that v^T's
// column block c covers, one span per batch element.
func (b *encBuilder) vtRows(c Span) []Span {
	s := b.s
	var out []Span
	for bi := c.Lo / s.Tp; bi*s.Tp < c.Hi; bi++ {
		lo, hi := max(c.Lo, bi*s.Tp)-bi*s.Tp, min(c.Hi, bi*s.Tp+s.T)-bi*s.Tp
		if hi > lo {
			out = append(out, Span{Lo: bi*s.T + lo, Hi: bi*s.T + hi})
		}
	}
	return out
}

// vtEval is the costed v^T grid.
type vtEval struct {
	grid                  VTGrid
	stages                []Stage
	cycles                int64
	work, r1work, weights []int
	held                  []int
	out                   *layout
}

// evalVT costs grid v with ln1's panels held as src.
func (b *encBuilder) evalVT(v VTGrid, src *layout, detail bool) (*vtEval, error) {
	n := b.n
	e := &vtEval{grid: v, work: make([]int, b.tiles), r1work: make([]int, b.tiles), weights: make([]int, b.tiles), held: make([]int, b.tiles)}
	P := v.Inner.Count
	// The right operand: each column block's ln1 rows and inner block's
	// model dims, to every cell of that grid column and inner block; a
	// cell holding some of them itself copies them (one copy_f16 per
	// 16-column group).
	var rows []Span
	var owner []int
	for j, c := range v.Cols.Spans() {
		for _, r := range b.vtRows(c) {
			rows = append(rows, r)
			owner = append(owner, j)
		}
	}
	col := make([][]int, v.Cols.Count*P)
	for j := 0; j < v.Cols.Count; j++ {
		for p := 0; p < P; p++ {
			for i := 0; i < v.Rows.Count; i++ {
				col[j*P+p] = append(col[j*P+p], v.Tile(i, j, p))
			}
		}
	}
	nd := &need{rows: rows, cols: v.Inner.Spans(), tiles: func(ri, ci int) []int { return col[owner[ri]*P+ci] }}
	send, recv := make([]int, b.tiles), make([]int, b.tiles)
	cs := &stagedCalls{detail: detail, b: b, busy: [][]int64{make([]int64, b.tiles), make([]int64, b.tiles)}, calls: make([][]Call, 2)}
	var tr []Transfer
	emit := func(t Transfer) { tr = append(tr, t) }
	if !detail {
		emit = nil
	}
	exchange(src, nd, 2, send, recv, emit, func(t int, rs, cols Span) {
		for c := cols.Lo; c < cols.Hi; c += 16 {
			cs.add(0, t, kernels.Copy{N: rs.Len() * 32}, []Ref{{n.ln1, -1, rs, Span{Lo: c, Hi: c + 16}}}, nil)
		}
	})
	var oe opEval
	addExchange(b.t, &oe, n.v.Name+".in", send, recv, tr)
	e.out = &layout{value: n.v, rows: v.Cols.Spans(), order: AMPOut}
	type slice struct {
		s    Span
		i, q int
	}
	var owned []slice
	for i := 0; i < v.Rows.Count; i++ {
		for q := 0; q < P; q++ {
			if sl := v.Slice(i, q); sl.Len() > 0 {
				owned = append(owned, slice{sl, i, q})
				e.out.cols = append(e.out.cols, sl)
			}
		}
	}
	for j := 0; j < v.Cols.Count; j++ {
		for _, sl := range owned {
			e.out.tile = append(e.out.tile, v.Tile(sl.i, j, sl.q))
		}
	}
	for i := 0; i < v.Rows.Count; i++ {
		ds := v.Rows.Span(i)
		for j := 0; j < v.Cols.Count; j++ {
			ts := v.Cols.Span(j)
			for p := 0; p < P; p++ {
				ks := v.Inner.Span(p)
				t := v.Tile(i, j, p)
				part := p
				if P == 1 {
					part = -1
				}
				reads := []Ref{{n.vW, -1, ks, ds}}
				if detail {
					for _, r := range b.vtRows(ts) {
						reads = append(reads, Ref{n.ln1, -1, r, ks})
					}
				}
				cs.add(0, t, kernels.Gemm{K: ks.Len(), C: ts.Len(), R: ds.Len(), Conservative: b.opt.Conservative}, reads, []Ref{{n.v, part, ts, ds}})
				e.weights[t] = cost.Align(2*ds.Len()*ks.Len(), 32)
				e.r1work[t] = cost.Align(2*ks.Len()*ts.Len(), 32)
				out := cost.Align(2*ds.Len()*ts.Len(), 32)
				e.work[t] = e.r1work[t] + out
				if P == 1 {
					e.held[t] = out
				}
			}
		}
	}
	addCompute(&oe, n.v.Name+".gemm", cs.busy[0], cs.calls[0])
	if P > 1 {
		// Reduce-scatter by rows: slice q of every partial to cell q.
		clear(send)
		clear(recv)
		tr = nil
		for i := 0; i < v.Rows.Count; i++ {
			for j := 0; j < v.Cols.Count; j++ {
				ts := v.Cols.Span(j)
				for q := 0; q < P; q++ {
					sl := v.Slice(i, q)
					if sl.Len() == 0 {
						continue
					}
					dst := v.Tile(i, j, q)
					nv := ts.Len() * sl.Len()
					for p := 0; p < P; p++ {
						if p == q {
							continue
						}
						src := v.Tile(i, j, p)
						send[src] += 2 * nv
						recv[dst] += 2 * nv
						if detail {
							tr = append(tr, Transfer{Ref: Ref{n.v, p, ts, sl}, Order: AMPOut, From: src, To: []int{dst}, Bytes: 2 * nv})
						}
					}
					// The received parts arrive in one buffer; the own
					// partial is copied behind them (reduce_add reads
					// parts contiguous arrays), as in evalGemm.
					cs.add(1, dst, kernels.Copy{N: 2 * nv}, []Ref{{n.v, q, ts, sl}}, nil)
					reads := make([]Ref, P)
					for p := range reads {
						reads[p] = Ref{n.v, p, ts, sl}
					}
					cs.add(1, dst, kernels.ReduceAdd{N: nv, Parts: P}, reads, []Ref{{n.v, -1, ts, sl}})
					e.work[dst] += cost.Align(2*P*nv, 32)
					e.held[dst] += cost.Align(2*nv, 32)
				}
			}
		}
		addExchange(b.t, &oe, n.v.Name+".reduce", send, recv, tr)
		addCompute(&oe, n.v.Name+".reduce", cs.busy[1], cs.calls[1])
	}
	if cs.err != nil {
		return nil, cs.err
	}
	e.stages, e.cycles = oe.stages, oe.cycles
	return e, nil
}

// pickVT picks the v^T grid on the tiles [base, base+tiles): every
// distinct split of the dims (whole 16-row groups, r <= 768), the tokens
// (16-column groups) and the model dims (the inner side, 16-groups),
// costed exactly unless its largest GEMM call alone costs more than the
// best so far; the cheapest that fits, with its detailed stages.
func (b *encBuilder) pickVT(src *layout, tiles, base int) (*vtEval, error) {
	s, n := b.s, b.n
	name := n.v.Name
	var best *vtEval
	var firstErr *fitError
	wcap := b.weightCap(2 * s.Dp * s.H * s.HP)
	for _, ri := range axisCounts(s.H*s.HP/16, 1) {
		rows := NewTiling(s.H*s.HP, ri, 16)
		if rows.Block > kernels.GemmMaxRows {
			continue
		}
		for _, cj := range axisCounts(s.B*s.Tp/16, 1) {
			cols := NewTiling(s.B*s.Tp, cj, 16)
			if rows.Count*cols.Count > tiles {
				break
			}
			for _, pk := range axisCounts(s.Dp/16, 1) {
				inner := NewTiling(s.Dp, pk, 16)
				if rows.Count*cols.Count*inner.Count > tiles {
					break
				}
				if 2*rows.Block*inner.Block > wcap {
					continue
				}
				lb, err := b.call(kernels.Gemm{K: inner.Block, C: cols.Block, R: rows.Block, Conservative: b.opt.Conservative})
				if err != nil || (best != nil && lb >= best.cycles) {
					continue
				}
				e, err := b.evalVT(VTGrid{rows, cols, inner, base}, src, false)
				if err != nil {
					continue // a kernel limit (reduce_add's parts, ...): not a candidate
				}
				if err := b.fits(name, opV, e.work, e.r1work, e.weights, nil); err != nil {
					firstErr = closer(firstErr, err)
					continue
				}
				if best == nil || e.cycles < best.cycles {
					best = e
				}
			}
		}
	}
	if best == nil {
		if firstErr == nil {
			return nil, fmt.Errorf("mid: encoder: %s: no grid of %d tiles", name, tiles)
		}
		return nil, firstErr
	}
	e, err := b.evalVT(best.grid, src, true)
	if err != nil {
		return nil, fmt.Errorf("mid: encoder: %s: %w", name, err)
	}
	return e, nil
}

// vtFormats records the formats of Wv (resident with the cells: in W^T
// coordinates, rows = the model dims, the inner side; each cell's dims as
// AMP left blocks) and of v.
func (b *encBuilder) vtFormats(e *vtEval) {
	s, n := b.s, b.n
	b.enc.VT = e.grid
	wf := &Format{Value: n.vW, Rows: s.Dp, Cols: s.H * s.HP, RealCol: s.D, Storage: graph.F16, Acc: graph.F16, Order: AMPLeft, Mem: AnyMemory}
	g := e.grid
	for i := 0; i < g.Rows.Count; i++ {
		for j := 0; j < g.Cols.Count; j++ {
			for p := 0; p < g.Inner.Count; p++ {
				wf.Pieces = append(wf.Pieces, Piece{Rows: g.Inner.Span(p), Cols: g.Rows.Span(i), Tile: g.Tile(i, j, p)})
			}
		}
	}
	b.plan.Formats[n.vW.ID] = wf
	b.plan.Formats[n.v.ID] = layoutFormat(e.out, n.v, s.D, AnyMemory)
}

// AttentionPlan is the attention's grid: a cell per (batch element,
// head, query block, key split), cell Tile(bi, h, qb, s). A cell runs
// its split's keys in Blocks key blocks, one after the other. One split
// of one block is the materialised form (softmax of the whole score
// rows); any other is the flash form (online softmax: softmax_f16
// stats=1, attention_merge_f16), whose key splits are merged after a
// second exchange phase, split m's cell merging rows slice m of all of
// them.
type AttentionPlan struct {
	Flash        bool
	Batch, Heads int
	Queries      Tiling // query rows of one batch element
	Splits       Tiling // the Tp padded keys of one batch element, whole groups of 16
	Blocks       int    // key blocks per split (asked; a split's own tiling may have fewer)
	// SplitsFastest numbers the cells split-fastest (partner tiles 2k,
	// 2k+1 are two splits of one query block: they share q's atoms),
	// else query-block-fastest (two query blocks of one split: they
	// share k's and v's, the bulk, which can then arrive as paired 64-bit
	// items). Both are costed.
	SplitsFastest bool
	Cycles        int64 // the attention's stages
	// Breakdown is the cycles of each of its stages, by stage name.
	Breakdown []StageCycles
}

// StageCycles names one stage's cycles.
type StageCycles struct {
	Name   string
	Cycles int64
}

// Cells is the grid's cell count.
func (a *AttentionPlan) Cells() int { return a.Batch * a.Heads * a.Queries.Count * a.Splits.Count }

// Tile is cell (bi, h, qb, s)'s tile.
func (a *AttentionPlan) Tile(bi, h, qb, s int) int {
	if a.SplitsFastest {
		return ((bi*a.Heads+h)*a.Queries.Count+qb)*a.Splits.Count + s
	}
	return ((bi*a.Heads+h)*a.Splits.Count+s)*a.Queries.Count + qb
}

// keyBlocks are split s's key blocks (padded keys of one batch element).
func (a *AttentionPlan) keyBlocks(s int) []Span {
	r := a.Splits.Span(s)
	t := NewTiling(r.Len(), a.Blocks, 16)
	out := t.Spans()
	for i := range out {
		out[i].Lo += r.Lo
		out[i].Hi += r.Lo
	}
	return out
}

// Describe is a one-line summary.
func (a *AttentionPlan) Describe() string {
	if a == nil {
		return "none"
	}
	form := "materialized"
	if a.Flash {
		form = "flash"
	}
	return fmt.Sprintf("%s cells=%d (batch %d x heads %d x query blocks %d of %d rows x key splits %d of %d keys) key blocks per split=%d",
		form, a.Cells(), a.Batch, a.Heads, a.Queries.Count, a.Queries.Block, a.Splits.Count, a.Splits.Block, a.Blocks)
}

// attnEval is a costed attention grid.
type attnEval struct {
	stages             []Stage
	cycles             int64
	work, r1work, held []int
	weights            []int // v's bias, resident with the merging cells
	out                *layout
}

// stagedCalls accumulates the compute stages of the attention: per stage
// each tile's busy cycles and, in detail mode, the calls.
type stagedCalls struct {
	names  []string
	busy   [][]int64
	calls  [][]Call
	detail bool
	b      *encBuilder
	err    error
}

func (sc *stagedCalls) add(stage, tile int, spec kernels.Spec, reads, writes []Ref) {
	cyc, err := sc.b.call(spec)
	if err != nil {
		if sc.err == nil {
			sc.err = err
		}
		return
	}
	sc.busy[stage][tile] += cyc
	if sc.detail {
		sc.calls[stage] = append(sc.calls[stage], Call{Tile: tile, Spec: spec, Cycles: cyc, Reads: reads, Writes: writes})
	}
}

// evalAttention costs grid a with q, k and v held as ql, kl and vl.
// Stage order: the input phase (q, k, v); per key block the scores, the
// softmax (unpack, softmax, pack) and the context (GEMM; flash: unpack,
// merge); with key splits the partials' phase; the final merge (flash:
// pack) and v's bias.
func (b *encBuilder) evalAttention(a *AttentionPlan, ql, kl, vl *layout, detail bool) (*attnEval, error) {
	s, n := b.s, b.n
	T := b.tiles
	S, nq := a.Splits.Count, a.Queries.Count
	nb := len(a.keyBlocks(0))
	sc := &stagedCalls{detail: detail, b: b}
	for j := 0; j < nb; j++ {
		sfx := ""
		if nb > 1 {
			sfx = fmt.Sprintf(".block%d", j)
		}
		sc.names = append(sc.names, n.scores.Name+sfx, n.softmax.Name+sfx, n.context.Name+sfx)
	}
	sc.names = append(sc.names, n.merge.Name)
	sc.busy = make([][]int64, len(sc.names))
	sc.calls = make([][]Call, len(sc.names))
	for i := range sc.busy {
		sc.busy[i] = make([]int64, T)
	}
	final := len(sc.names) - 1
	// The flash form's row-major partials, their merges and the partials'
	// phase carry the head's real values only (vw; the merge works on
	// words of 4 values, so a head dim that is not a multiple of 4 keeps
	// its padding); pack_left_f16 restores the zero padding.
	vw := s.HP
	if s.HD%4 == 0 {
		vw = s.HD
	}
	e := &attnEval{work: make([]int, T), r1work: make([]int, T), held: make([]int, T), weights: make([]int, T)}
	head := func(h int) Span { return Span{Lo: h * s.HP, Hi: (h + 1) * s.HP} }
	qrows := func(bi, qb int) Span {
		q := a.Queries.Span(qb)
		return Span{Lo: bi*s.T + q.Lo, Hi: bi*s.T + q.Hi}
	}

	// The input phase: q's rows of the block and head, k's and v's rows
	// of the split's keys, one phase.
	send, recv := make([]int, T), make([]int, T)
	var tr []Transfer
	emit := func(t Transfer) { tr = append(tr, t) }
	if !detail {
		emit = nil
	}
	var qn, kn, vn need
	var qt, kt [][]int
	for bi := 0; bi < a.Batch; bi++ {
		for qb := 0; qb < nq; qb++ {
			qn.rows = append(qn.rows, qrows(bi, qb))
		}
		for sp := 0; sp < S; sp++ {
			r := a.Splits.Span(sp)
			kn.rows = append(kn.rows, Span{Lo: bi*s.T + r.Lo, Hi: bi*s.T + min(r.Hi, s.T)})
			vn.rows = append(vn.rows, Span{Lo: bi*s.Tp + r.Lo, Hi: bi*s.Tp + r.Hi})
		}
	}
	for h := 0; h < a.Heads; h++ {
		qn.cols = append(qn.cols, head(h))
	}
	kn.cols, vn.cols = qn.cols, qn.cols
	for bi := 0; bi < a.Batch; bi++ {
		for qb := 0; qb < nq; qb++ {
			for h := 0; h < a.Heads; h++ {
				var ts []int
				for sp := 0; sp < S; sp++ {
					ts = append(ts, a.Tile(bi, h, qb, sp))
				}
				qt = append(qt, ts)
			}
		}
		for sp := 0; sp < S; sp++ {
			for h := 0; h < a.Heads; h++ {
				var ts []int
				for qb := 0; qb < nq; qb++ {
					ts = append(ts, a.Tile(bi, h, qb, sp))
				}
				kt = append(kt, ts)
			}
		}
	}
	qn.tiles = func(ri, ci int) []int { return qt[ri*a.Heads+ci] }
	kn.tiles = func(ri, ci int) []int { return kt[ri*a.Heads+ci] }
	vn.tiles = kn.tiles
	// Own pieces are copied into the panels in the first compute stage:
	// q per 16-column group; k per 16-column group and 16-key run (an
	// AMP right block of k^T); v per 512-byte block.
	exchange(ql, &qn, 2, send, recv, emit, func(t int, rs, cs Span) {
		for c := cs.Lo; c < cs.Hi; c += 16 {
			sc.add(0, t, kernels.Copy{N: 32 * rs.Len()}, []Ref{{n.qAdd, -1, rs, Span{Lo: c, Hi: c + 16}}}, nil)
		}
	})
	exchange(kl, &kn, 2, send, recv, emit, func(t int, rs, cs Span) {
		bi := rs.Lo / s.T
		for c := cs.Lo; c < cs.Hi; c += 16 {
			for lo := rs.Lo; lo < rs.Hi; {
				hi := min(rs.Hi, bi*s.T+((lo-bi*s.T)/16+1)*16)
				sc.add(0, t, kernels.Copy{N: 32 * (hi - lo)}, []Ref{{n.kAdd, -1, Span{Lo: lo, Hi: hi}, Span{Lo: c, Hi: c + 16}}}, nil)
				lo = hi
			}
		}
	})
	exchange(vl, &vn, 2, send, recv, emit, func(t int, rs, cs Span) {
		for c := cs.Lo; c < cs.Hi; c += 16 {
			for lo := rs.Lo; lo < rs.Hi; lo += 16 {
				sc.add(0, t, kernels.Copy{N: 512}, []Ref{{n.v, -1, Span{Lo: lo, Hi: min(lo+16, rs.Hi)}, Span{Lo: c, Hi: c + 16}}}, nil)
			}
		}
	})
	var oe opEval
	addExchange(b.t, &oe, n.scores.Name+".in", send, recv, tr)
	inStages := oe.stages

	// The cells.
	A := func(x int) int { return cost.Align(x, 32) }
	e.out = &layout{value: n.merge, cols: qn.cols, order: AMPOut}
	if a.Flash {
		e.out.order = AMPLeft
	}
	mergeSend, mergeRecv := make([]int, T), make([]int, T)
	var mergeTr []Transfer
	for bi := 0; bi < a.Batch; bi++ {
		for qb := 0; qb < nq; qb++ {
			qr := qrows(bi, qb)
			rq := qr.Len()
			// The merge's row slices: with key splits, split m's cell
			// merges rows slice m of every split's partial (the merge
			// work spread over the splits' cells, as a reduce-scatter);
			// else the whole block on the split-0 cell.
			msl := []Span{qr}
			if S > 1 {
				msl = nil
				for _, sl := range NewTiling(rq, S, 1).Spans() {
					msl = append(msl, Span{Lo: qr.Lo + sl.Lo, Hi: qr.Lo + sl.Hi})
				}
			}
			e.out.rows = append(e.out.rows, msl...)
			for m := range msl {
				for h := 0; h < a.Heads; h++ {
					e.out.tile = append(e.out.tile, a.Tile(bi, h, qb, m))
				}
			}
			for h := 0; h < a.Heads; h++ {
				hc := head(h)
				hv := Span{Lo: hc.Lo, Hi: hc.Lo + vw}
				for sp := 0; sp < S; sp++ {
					t := a.Tile(bi, h, qb, sp)
					kr := a.Splits.Span(sp)
					blocks := a.keyBlocks(sp)
					kbMax := 0
					for j, kb := range blocks {
						kbMax = max(kbMax, kb.Len())
						part := sp + j // the flash partial: split s's one block, or block j of the one split
						valid := min(kb.Hi, s.T) - kb.Lo
						scCols := Span{Lo: h*s.Tp + kb.Lo, Hi: h*s.Tp + kb.Hi}
						st := 3 * j
						sc.add(st, t, kernels.Gemm{K: s.HP, C: kb.Len(), R: rq, Conservative: b.opt.Conservative},
							[]Ref{{n.qAdd, -1, qr, hc}, {n.kAdd, -1, Span{Lo: bi*s.T + kb.Lo, Hi: bi*s.T + min(kb.Hi, s.T)}, hc}},
							[]Ref{{n.scores, -1, qr, scCols}})
						stats := a.Flash
						if sm := (kernels.Softmax{Rows: rq, Keys: kb.Len(), Valid: valid, DK: s.HD, Stats: stats, Panels: true}); kernels.Check(sm) == nil {
							// The scores' AMP output panels are the
							// probabilities' AMP left panels: one call on
							// the panels, no re-layout on either side.
							w := []Ref{{n.softmax, -1, qr, scCols}}
							if a.Flash {
								w = append(w, Ref{n.softmax, part, qr, Span{Lo: h, Hi: h + 1}})
							}
							sc.add(st+1, t, sm, []Ref{{n.scores, -1, qr, scCols}}, w)
						} else {
							// Too many rows for one call (a panel's rows are
							// the whole block's): row-major rows in calls
							// within the kernel's limits, packed back.
							sc.add(st+1, t, kernels.UnpackOut{R: rq, C: kb.Len()}, []Ref{{n.scores, -1, qr, scCols}}, []Ref{{n.scores, -1, qr, scCols}})
							per := min(256, 65536/kb.Len())
							for lo := qr.Lo; lo < qr.Hi; lo += per {
								sub := Span{Lo: lo, Hi: min(lo+per, qr.Hi)}
								w := []Ref{{n.softmax, -1, sub, scCols}}
								if a.Flash {
									w = append(w, Ref{n.softmax, part, sub, Span{Lo: h, Hi: h + 1}})
								}
								sc.add(st+1, t, kernels.Softmax{Rows: sub.Len(), Keys: kb.Len(), Valid: valid, DK: s.HD, Stats: stats}, []Ref{{n.scores, -1, sub, scCols}}, w)
							}
							sc.add(st+1, t, kernels.PackLeft{R: rq, K: kb.Len()}, []Ref{{n.softmax, -1, qr, scCols}}, []Ref{{n.softmax, -1, qr, scCols}})
						}
						ctxPart := -1
						if a.Flash {
							ctxPart = part
						}
						sc.add(st+2, t, kernels.Gemm{K: kb.Len(), C: s.HP, R: rq, Conservative: b.opt.Conservative},
							[]Ref{{n.softmax, -1, qr, scCols}, {n.v, -1, Span{Lo: bi*s.Tp + kb.Lo, Hi: bi*s.Tp + kb.Hi}, hc}},
							[]Ref{{n.context, ctxPart, qr, hc}})
						if !a.Flash {
							continue
						}
						sc.add(st+2, t, kernels.UnpackOut{R: rq, C: vw}, []Ref{{n.context, part, qr, hc}}, []Ref{{n.context, part, qr, hv}})
						if S == 1 {
							// The one split's blocks merge into the state as they come.
							mode := kernels.MergeUpdate
							reads := []Ref{{n.context, part, qr, hv}, {n.softmax, part, qr, Span{Lo: h, Hi: h + 1}}}
							switch {
							case j == 0:
								mode = kernels.MergeInitial
							case j == len(blocks)-1:
								mode = kernels.MergeFinal
							}
							if mode != kernels.MergeInitial {
								reads = append(reads, Ref{n.context, -1, qr, hv})
							}
							sc.add(st+2, t, kernels.AttentionMerge{Rows: rq, Values: vw, Mode: mode}, reads, []Ref{{n.context, -1, qr, hv}})
						}
					}
					// Working set: q, the k^T and v panels (region 1), the
					// scores (AMP output and row-major; the probabilities
					// in place, packed over the AMP output), the context.
					w := A(2*rq*s.HP) + A(2*rq*kbMax)*2 + A(2*rq*s.HP)
					e.r1work[t] = A(2*s.HP*kr.Len()) * 2
					if a.Flash {
						// The block's context row-major and statistics, the
						// f32 state, the final output.
						w += A(2*rq*s.HP) + A(8*rq) + A(4*rq*s.HP) + A(8*rq) + A(2*rq*s.HP)
					}
					if S > 1 {
						// Rows slice m of the partial goes to split m's
						// cell; slice sp's partials arrive from the others.
						for m, sl := range msl {
							if m == sp {
								w += (S - 1) * (A(2*sl.Len()*s.HP) + A(8*sl.Len()))
								continue
							}
							to := a.Tile(bi, h, qb, m)
							by := 2*sl.Len()*vw + 8*sl.Len()
							mergeSend[t] += by
							mergeRecv[to] += by
							if detail {
								mergeTr = append(mergeTr,
									Transfer{Ref: Ref{n.context, sp, sl, hv}, Order: RowMajor, From: t, To: []int{to}, Bytes: 2 * sl.Len() * vw},
									Transfer{Ref: Ref{n.softmax, sp, sl, Span{Lo: h, Hi: h + 1}}, Order: RowMajor, From: t, To: []int{to}, Bytes: 8 * sl.Len()})
							}
						}
					}
					e.work[t] = w + e.r1work[t]
				}
				// Each merging cell: merge the splits' partials of its
				// rows, pack, v's bias.
				for m, sl := range msl {
					t := a.Tile(bi, h, qb, m)
					r := sl.Len()
					if S > 1 {
						for sp := 0; sp < S; sp++ {
							mode := kernels.MergeUpdate
							reads := []Ref{{n.context, sp, sl, hv}, {n.softmax, sp, sl, Span{Lo: h, Hi: h + 1}}}
							switch {
							case sp == 0:
								mode = kernels.MergeInitial
							case sp == S-1:
								mode = kernels.MergeFinal
							}
							if mode != kernels.MergeInitial {
								reads = append(reads, Ref{n.context, -1, sl, hv})
							}
							sc.add(final, t, kernels.AttentionMerge{Rows: r, Values: vw, Mode: mode}, reads, []Ref{{n.context, -1, sl, hv}})
						}
					}
					if a.Flash {
						sc.add(final, t, kernels.PackLeft{R: r, K: vw}, []Ref{{n.context, -1, sl, hv}}, []Ref{{n.context, -1, sl, hc}})
					}
					sc.add(final, t, kernels.AddBias{Rows: r * s.HP / 16, R: r},
						[]Ref{{n.context, -1, sl, hc}, {n.vB, -1, Span{Lo: 0, Hi: 1}, hc}}, []Ref{{n.merge, -1, sl, hc}})
					e.held[t] = A(2 * r * s.HP)
					e.weights[t] += A(2 * s.HP)
					e.work[t] += e.held[t]
				}
			}
		}
	}
	if sc.err != nil {
		return nil, sc.err
	}
	oe.stages = nil
	oe.cycles = 0
	oe.stages = append(oe.stages, inStages...)
	for i, name := range sc.names {
		if i == final && S > 1 {
			addExchange(b.t, &oe, n.merge.Name+".in", mergeSend, mergeRecv, mergeTr)
		}
		addCompute(&oe, name, sc.busy[i], sc.calls[i])
	}
	for _, st := range oe.stages {
		e.cycles += st.Cycles
	}
	e.stages = oe.stages
	return e, nil
}

// costAttention costs grid a and keeps it in best and in its form's
// best (bestM, bestF) when it fits and is cheaper; errors are kept for
// the report when nothing fits.
func (b *encBuilder) costAttention(a *AttentionPlan, ql, kl, vl *layout, name string, best, bestM, bestF **AttentionPlan, firstErr *error, fitErr **fitError) {
	e, err := b.evalAttention(a, ql, kl, vl, false)
	if err != nil {
		if *firstErr == nil {
			*firstErr = fmt.Errorf("mid: encoder: %s (%s): %w", name, a.Describe(), err)
		}
		return
	}
	if err := b.fits(name, opAttn, e.work, e.r1work, e.weights, nil); err != nil {
		*fitErr = closer(*fitErr, err)
		return
	}
	a.Cycles = e.cycles
	for _, st := range e.stages {
		a.Breakdown = append(a.Breakdown, StageCycles{st.Name, st.Cycles})
	}
	pick := func(p **AttentionPlan) {
		if *p == nil || a.Cycles < (*p).Cycles {
			*p = a
		}
	}
	pick(best)
	if a.Flash {
		pick(bestF)
	} else {
		pick(bestM)
	}
}

// attention picks the attention grid: every query blocking (rows <= 768,
// the GEMM's limit), key splits (1..8) and, on one split, key blocks
// (1..8), whose cells fit the tiles; each costed exactly (evalAttention)
// and checked against the memory with q, k and v^T held; the cheapest
// fitting plan of either form is chosen. It returns the merged heads'
// layout (query rows x heads on the merging cells) and their bytes.
func (b *encBuilder) attention(ql, kl, vl *layout) (*layout, []int, error) {
	s, n := b.s, b.n
	const name = "0.self_attn.attention"
	var best, bestM, bestF *AttentionPlan
	var firstErr error
	var fitErr *fitError
	maxSplit := min(8, s.Tp/16)
	for _, nq := range axisCounts(s.T, 1) {
		qt := NewTiling(s.T, nq, 1)
		if qt.Block > kernels.GemmMaxRows {
			continue
		}
		if s.B*s.H*qt.Count > b.tiles {
			break
		}
		for S := 1; S <= maxSplit; S++ {
			st := NewTiling(s.Tp, S, 16)
			if st.Count != S || s.B*s.H*qt.Count*S > b.tiles {
				continue
			}
			for nb := 1; nb <= 8; nb++ {
				if S > 1 && nb > 1 {
					break // key splits take one block each
				}
				a0 := &AttentionPlan{Flash: S > 1 || nb > 1, Batch: s.B, Heads: s.H, Queries: qt, Splits: st, Blocks: nb}
				if got := len(a0.keyBlocks(0)); got != nb {
					break
				}
				// A lower bound of any cell's cycles: the first query
				// block's GEMMs and softmax over split 0's blocks. A grid
				// that cannot beat the best so far is not costed.
				if best != nil {
					var lb int64
					for _, kb := range a0.keyBlocks(0) {
						for _, sp := range []kernels.Spec{kernels.Gemm{K: s.HP, C: kb.Len(), R: qt.Block, Conservative: b.opt.Conservative},
							kernels.Gemm{K: kb.Len(), C: s.HP, R: qt.Block, Conservative: b.opt.Conservative}} {
							if c, err := b.call(sp); err == nil {
								lb += c
							}
						}
					}
					if lb >= best.Cycles {
						continue
					}
				}
				for _, fast := range []bool{false, true} {
					if fast && S == 1 {
						continue // one numbering
					}
					a := *a0
					a.SplitsFastest = fast
					b.costAttention(&a, ql, kl, vl, name, &best, &bestM, &bestF, &firstErr, &fitErr)
				}
			}
		}
	}
	if best == nil {
		switch {
		case fitErr != nil:
			return nil, nil, fitErr
		case firstErr != nil:
			return nil, nil, firstErr
		}
		return nil, nil, fmt.Errorf("mid: encoder: %s: %d heads x %d batch elements need more than %d tiles", name, s.H, s.B, b.tiles)
	}
	e, err := b.evalAttention(best, ql, kl, vl, true)
	if err != nil {
		return nil, nil, fmt.Errorf("mid: encoder: %s: %w", name, err)
	}
	b.enc.Attention, b.enc.Materialized, b.enc.Flash = best, bestM, bestF
	flops := n.scores.Flops() + n.context.Flops()
	// Two operators of the breakdown: the input phase and the scores,
	// softmax and context stages as the attention; the final merge (and
	// the partials' phase before it, with key splits) as the merge.
	cut := len(e.stages) - 1
	if best.Splits.Count > 1 {
		cut--
	}
	b.commit(name, opAttn, e.stages[:cut], e.work, nil, nil, flops)
	b.commit(n.merge.Name, opAttn, e.stages[cut:], e.work, e.weights, nil, 0)
	bf := &Format{Value: n.vB, Rows: 1, Cols: s.H * s.HP, RealCol: s.D, Storage: graph.F16, Acc: graph.F16, Order: RowMajor, Mem: AnyMemory}
	for ri := range e.out.rows {
		for ci, c := range e.out.cols {
			bf.Pieces = append(bf.Pieces, Piece{Rows: Span{Lo: 0, Hi: 1}, Cols: c, Tile: e.out.tile[ri*len(e.out.cols)+ci]})
		}
	}
	b.plan.Formats[n.vB.ID] = bf
	b.plan.Formats[n.merge.ID] = layoutFormat(e.out, n.merge, s.D, AnyMemory)
	return e.out, slices.Clone(e.held), nil
}
