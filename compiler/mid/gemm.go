package mid

import (
	"slices"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// layout is a product-structured holder layout: cell (ri, ci) of the row
// spans x column spans is held by tile[ri*len(cols)+ci] (-1: nobody).
type layout struct {
	value *graph.Node
	rows  []Span
	cols  []Span
	tile  []int
	order Order
	// replica, when set, is a second holder of each cell (-1: none): the
	// host writes a graph input's block to both tiles of a partner pair,
	// so that the pair can send it on as paired items.
	replica []int
}

// need is a product-structured demand: cell (ri, ci) is needed by tiles(ri, ci).
type need struct {
	rows, cols []Span
	tiles      func(ri, ci int) []int
}

// exchange computes the logical transfers that bring every needed cell to
// its tiles from the holders: the two partitions are refined into atoms;
// each atom is sent once by its holder to every needing tile that is not
// the holder (multicast). send/recv accumulate per-tile bytes; emit, if not
// nil, receives each transfer; self, if not nil, receives each atom a
// needing tile holds itself (the lowering copies it locally, one copy per
// 16-column group).
//
// Paired items: a destination whose partner tile (logical t^1) receives
// the same atom can take it as 64-bit items, half the receive events, when
// the lowering's transfers of it are long enough (cost.Pairs; the lowering
// sends one transfer per 16-column group of rows*8 words, merged into one
// when the atom spans the whole rows of both blocks); the sender then
// spends half the events and borrows its partner's outgoing lane for them.
func exchange(h *layout, n *need, elem int, send, recv []int, emit func(Transfer), self func(tile int, rows, cols Span)) {
	type seg struct {
		s    Span
		a, b int
	}
	merge := func(x, y []Span) []seg {
		var out []seg
		i, j := 0, 0
		for i < len(x) && j < len(y) {
			s := x[i].Intersect(y[j])
			if s.Len() > 0 {
				out = append(out, seg{s, i, j})
			}
			if x[i].Hi <= y[j].Hi {
				i++
			} else {
				j++
			}
		}
		return out
	}
	rs, cs := merge(h.rows, n.rows), merge(h.cols, n.cols)
	var to []int
	for _, r := range rs {
		for _, c := range cs {
			from := h.tile[r.a*len(h.cols)+c.a]
			rep := -1
			if h.replica != nil {
				rep = h.replica[r.a*len(h.cols)+c.a]
			}
			to = to[:0]
			for _, t := range n.tiles(r.b, c.b) {
				switch {
				case t == from && self != nil:
					self(t, r.s, c.s)
				case t != from && t != rep:
					to = append(to, t)
				}
			}
			if len(to) == 0 {
				continue
			}
			bytes := r.s.Len() * c.s.Len() * elem
			// One transfer per 16-column group (rows x 8 words), or one
			// for the whole atom when it spans whole rows of both blocks.
			long := cost.Pairs(r.s.Len()*8) || (cost.Pairs(bytes/4) && r.s == h.rows[r.a] && r.s == n.rows[r.b])
			if !slices.IsSorted(to) {
				slices.Sort(to) // needs list their tiles in grid order; keep the partner test cheap
			}
			paired, plain := false, false
			for k, t := range to {
				if long && ((k > 0 && to[k-1] == t^1) || (k+1 < len(to) && to[k+1] == t^1)) {
					recv[t] += bytes / 2
					paired = true
				} else {
					recv[t] += bytes
					plain = true
				}
			}
			if paired {
				send[from] += bytes / 2
				if p := from ^ 1; p < len(send) {
					send[p] += bytes / 2
				}
			}
			if plain {
				send[from] += bytes
			}
			if emit != nil {
				emit(Transfer{Ref: Ref{Value: h.value, Part: -1, Rows: r.s, Cols: c.s}, Order: h.order,
					From: from, To: append([]int(nil), to...), Bytes: bytes})
			}
		}
	}
}

// models memoises kernel cycle models for one search (a cache only: never
// iterated).
type models struct {
	t *ipu21.Target
	// The cycles of the calls of each spec type, keyed by the spec: the
	// call sites build one spec and pass it both here and to their Call.
	gemms   specMemo[kernels.Gemm]
	copies  specMemo[kernels.Copy]
	reduces specMemo[kernels.ReduceAdd]
	gelus   specMemo[kernels.Gelu]
	unpacks specMemo[kernels.UnpackOut]
	biases  specMemo[kernels.AddBias]
	// conservative: cost the GEMM kernel kernels.GemmF16For(true) picks.
	conservative bool
	scratch      scratch
	// outs, needs and helds memoise outLayout, leftNeed and the result
	// bytes per tile (keepHeld) per candidate: the beam evaluates each
	// candidate against every beam state, and all three depend on the
	// plan alone (a GemmPlan is not modified once generated; the
	// memoised values are only read).
	outs  map[*GemmPlan]*layout
	needs map[*GemmPlan]*need
	helds map[*GemmPlan][]int
}

// outLayout is outLayout(g), memoised.
func (m *models) outLayout(g *GemmPlan) *layout {
	l, ok := m.outs[g]
	if !ok {
		if m.outs == nil {
			m.outs = map[*GemmPlan]*layout{}
		}
		l = outLayout(g)
		m.outs[g] = l
	}
	return l
}

// keepHeld is the memoised copy of h, candidate g's result bytes per
// tile: they depend on the plan alone (its result blocks, its epilogue),
// and states keep them (the next GEMM's prevHeld), read only.
func (m *models) keepHeld(g *GemmPlan, h []int) []int {
	k, ok := m.helds[g]
	if !ok {
		if m.helds == nil {
			m.helds = map[*GemmPlan][]int{}
		}
		k = slices.Clone(h)
		m.helds[g] = k
	}
	return k
}

// leftNeed is leftNeed(g), memoised.
func (m *models) leftNeed(g *GemmPlan) *need {
	n, ok := m.needs[g]
	if !ok {
		if m.needs == nil {
			m.needs = map[*GemmPlan]*need{}
		}
		n = leftNeed(g)
		m.needs[g] = n
	}
	return n
}

// scratch are the per-tile arrays of one evaluation that do not outlive
// it: an opEval's weights, r1, panel, work and fixed (each caller folds
// them into a state with extend before the next evalGemm) and the
// exchange and compute accumulators. A search evaluates thousands of
// plans one after the other (it is sequential); reusing these instead of
// allocating them per call removes most of its allocation.
type scratch struct {
	ints [8][]int
	busy []int64
}

// zeroed returns the scratch arrays, tiles long and zeroed.
func (s *scratch) zeroed(tiles int) (a [8][]int, busy []int64) {
	for i := range s.ints {
		if cap(s.ints[i]) < tiles {
			s.ints[i] = make([]int, tiles)
		}
		s.ints[i] = s.ints[i][:tiles]
		clear(s.ints[i])
	}
	if cap(s.busy) < tiles {
		s.busy = make([]int64, tiles)
	}
	s.busy = s.busy[:tiles]
	clear(s.busy)
	return s.ints, s.busy
}

// specMemo memoises the modelled cycles (cost.Call: the call overhead included) of the
// calls of one spec type. It keys on the spec itself in a map of that type,
// so a hit (the planner's hot path) boxes nothing; only a miss passes the
// spec to cost.Call as an interface.
type specMemo[S interface {
	comparable
	kernels.Spec
}] struct {
	memo map[S]int64
	// last is the most recent call: a grid's cells mostly share one block
	// shape, so most calls repeat the previous one of their type and skip
	// the map (hashing the key dominated).
	last S
	v    int64
	ok   bool
}

func (c *specMemo[S]) cycles(s S) int64 {
	if c.ok && c.last == s {
		return c.v
	}
	v, ok := c.memo[s]
	if !ok {
		if c.memo == nil {
			c.memo = map[S]int64{}
		}
		v = cost.Call(s)
		c.memo[s] = v
	}
	c.last, c.v, c.ok = s, v, true
	return v
}

// The modelled cycles of one call, the call overhead included.
func (m *models) gemmCycles(s kernels.Gemm) int64        { return m.gemms.cycles(s) }
func (m *models) copyCycles(s kernels.Copy) int64        { return m.copies.cycles(s) }
func (m *models) reduceCycles(s kernels.ReduceAdd) int64 { return m.reduces.cycles(s) }
func (m *models) geluCycles(s kernels.Gelu) int64        { return m.gelus.cycles(s) }
func (m *models) unpackCycles(s kernels.UnpackOut) int64 { return m.unpacks.cycles(s) }
func (m *models) biasCycles(s kernels.AddBias) int64     { return m.biases.cycles(s) }

// gemmSpec is the GEMM kernel call of a k x c x r block.
func (m *models) gemmSpec(k, c, r int) kernels.Gemm {
	return kernels.Gemm{K: k, C: c, R: r, Conservative: m.conservative}
}

// leftNeed is the demand of a GEMM plan on its left operand.
func leftNeed(g *GemmPlan) *need {
	tiles := make([][]int, g.Rows.Count*g.Inner.Count)
	for i := 0; i < g.Rows.Count; i++ {
		for p := 0; p < g.Inner.Count; p++ {
			ts := make([]int, g.Cols.Count)
			for j := range ts {
				ts[j] = g.Tile(i, j, p)
			}
			tiles[i*g.Inner.Count+p] = ts
		}
	}
	return &need{rows: g.Rows.Spans(), cols: g.Inner.Spans(),
		tiles: func(ri, ci int) []int { return tiles[ri*g.Inner.Count+ci] }}
}

// hostLayout is where the host writes a graph input consumed as g's left
// operand: block (i, p) on the first cell of its row of the grid,
// Tile(i, 0, p), already in AMP left order, and, when that tile is the
// even one of a partner pair, on its partner Tile(i, 1, p) too (the
// replica), so that the pair can multicast it as paired 64-bit items.
func hostLayout(g *GemmPlan) *layout {
	l := &layout{value: g.Left, rows: g.Rows.Spans(), cols: g.Inner.Spans(), order: AMPLeft}
	for i := range l.rows {
		for p := range l.cols {
			h := g.InputHolders(i, p)
			l.tile = append(l.tile, h[0])
			r := -1
			if len(h) > 1 {
				r = h[1]
			}
			l.replica = append(l.replica, r)
		}
	}
	return l
}

// spreadLayout is where the host writes a graph input consumed as g's left
// operand in a chunked plan (g.Chunks > 1): each chunk's block (i, p) is
// cut into pieces of whole 16-column groups, balanced over the cells of
// its grid row (Tile(i, j, p) holds piece j of every chunk), so that the
// input of all chunks is spread over the grid instead of loading one tile.
// Per chunk, each cell copies its own piece into its left panel and the
// input exchange multicasts the pieces along the grid row.
func spreadLayout(g *GemmPlan) *layout {
	l := &layout{value: g.Left, rows: g.Rows.Spans(), order: AMPLeft}
	type owner struct{ j, p int }
	var owners []owner
	for p := 0; p < g.Inner.Count; p++ {
		for j := 0; j < g.Cols.Count; j++ {
			if pc := g.InputPiece(j, p); pc.Len() > 0 {
				l.cols = append(l.cols, pc)
				owners = append(owners, owner{j, p})
			}
		}
	}
	for i := range l.rows {
		for _, o := range owners {
			l.tile = append(l.tile, g.Tile(i, o.j, o.p))
		}
	}
	return l
}

// InputLayout is where the host writes a graph input consumed as g's left
// operand: hostLayout, or spreadLayout in a chunked plan.
func inputLayout(g *GemmPlan) *layout {
	if g.Chunks > 1 {
		return spreadLayout(g)
	}
	return hostLayout(g)
}

// outLayout is where g's result lives after its last compute stage.
func outLayout(g *GemmPlan) *layout {
	l := &layout{value: g.Out, rows: g.Rows.Spans(), order: AMPOut}
	type col struct {
		s    Span
		j, q int
	}
	var cols []col
	for j := 0; j < g.Cols.Count; j++ {
		for q := 0; q < g.Inner.Count; q++ {
			if s := g.Slice(j, q); s.Len() > 0 {
				cols = append(cols, col{s, j, q})
			}
		}
	}
	for _, c := range cols {
		l.cols = append(l.cols, c.s)
	}
	for i := range l.rows {
		for _, c := range cols {
			l.tile = append(l.tile, g.Tile(i, c.j, c.q))
		}
	}
	if g.Output {
		l.order = RowMajor
	}
	return l
}

// opEval is the costed realisation of one GEMM plan given where its left
// operand is: its stages (with Calls/Transfers only in detail mode), per-tile
// memory, and the layout of its result. weights, r1, panel, work and fixed
// are the models' scratch (valid until the next evalGemm: fold them into a
// state with extend first); held and out are memoised per candidate (read
// only).
type opEval struct {
	stages  []Stage
	cycles  int64
	weights []int // weight bytes per tile and block (resident panels or streamed shares, biases)
	r1      []int // of them, bytes per block in region 1 (resident panels, biases)
	panel   []int // region 1 bytes per tile once for all blocks (a streamed GEMM's panel)
	work    []int // working bytes per tile while the op runs
	held    []int // bytes of the result held per tile afterwards
	// fixed are bytes per tile live for the whole program besides the
	// weights: a chunked plan's input pieces and results of every chunk.
	fixed []int
	out   *layout
}

// phases is how many exchange phases the op's stages are.
func (e *opEval) phases() int {
	n := 0
	for _, st := range e.stages {
		if st.Kind == ExchangeStage {
			n++
		}
	}
	return n
}

// evalGemm costs plan g whose left operand is held as src (nil: a graph
// input, written by the host in hostLayout(g)). prevHeld is the per-tile
// size of src's pieces (nil for host inputs: they are counted in work).
func evalGemm(m *models, g *GemmPlan, src *layout, prevHeld []int, tiles int, detail bool) *opEval {
	a, busy := m.scratch.zeroed(tiles)
	// held is computed in scratch too, then replaced by the candidate's
	// memoised copy (m.keepHeld).
	e := &opEval{weights: a[0], r1: a[1], panel: a[2], work: a[3], held: a[7], fixed: a[4]}
	send, recv := a[5], a[6]
	var tr []Transfer
	emit := func(t Transfer) { tr = append(tr, t) }
	if !detail {
		emit = nil
	}
	cs := &compute{busy: busy, detail: detail}
	// The part of its left block a tile already holds is copied locally
	// (one copy_f16 per 16-column group) in the GEMM's compute stage.
	var self func(int, Span, Span)
	if src != nil {
		self = func(t int, rows, cols Span) {
			for c := cols.Lo; c < cols.Hi; c += 16 {
				spec := kernels.Copy{N: rows.Len() * 32}
				if cyc := m.copyCycles(spec); cs.add(t, cyc) {
					cs.calls = append(cs.calls, Call{Tile: t, Spec: spec, Cycles: cyc,
						Reads: []Ref{{g.Left, -1, rows, Span{Lo: c, Hi: c + 16}}}})
				}
			}
		}
	} else if g.Chunks > 1 {
		// A chunked plan's input: each cell keeps its piece of every
		// chunk and copies the current chunk's into its left panel.
		src = spreadLayout(g)
		self = func(t int, rows, cols Span) {
			n := rows.Len() * cols.Len() * 2
			e.fixed[t] += cost.Align(n*g.Chunks, 32)
			spec := kernels.Copy{N: n}
			if cyc := m.copyCycles(spec); cs.add(t, cyc) {
				cs.calls = append(cs.calls, Call{Tile: t, Spec: spec, Cycles: cyc,
					Reads: []Ref{{g.Left, -1, rows, cols}}})
			}
		}
	} else {
		src = hostLayout(g)
	}
	if g.Weights == WeightsStreamed {
		streamWeights(m, g, e, send, recv, emit, detail)
	}
	exchange(src, m.leftNeed(g), 2, send, recv, emit, self)
	addExchange(m.t, e, g.Node.Name+".in", send, recv, tr)

	// Compute: the GEMM of every cell, and without K-split the epilogue.
	const a32 = 32
	for i := 0; i < g.Rows.Count; i++ {
		rs := g.Rows.Span(i)
		for j := 0; j < g.Cols.Count; j++ {
			cols := g.Cols.Span(j)
			for p := 0; p < g.Inner.Count; p++ {
				ks := g.Inner.Span(p)
				t := g.Tile(i, j, p)
				r, c, k := rs.Len(), cols.Len(), ks.Len()
				part := p
				if g.Inner.Count == 1 {
					part = -1
				}
				spec := m.gemmSpec(k, c, r)
				if cyc := m.gemmCycles(spec); cs.add(t, cyc) {
					cs.calls = append(cs.calls, Call{Tile: t, Spec: spec, Cycles: cyc,
						Reads:  []Ref{{g.Left, -1, rs, ks}, {g.Right, -1, ks, cols}},
						Writes: []Ref{{g.Node, part, rs, cols}}})
				}
				if g.Weights == WeightsStreamed {
					e.panel[t] = cost.Align(k*c*2, a32)
					e.weights[t] = cost.Align(k*g.WeightShare(i, j).Len()*2, a32)
				} else {
					e.weights[t] = cost.Align(k*c*2, a32)
					e.r1[t] = e.weights[t]
				}
				left := cost.Align(cost.Align(r*k*2, a32), int(m.t.Memory.ElementBytes)) // own element(s): the distinct-element rule
				out := cost.Align(r*c*2, a32)
				e.work[t] = left + out
				if prevHeld != nil {
					e.work[t] += prevHeld[t]
				}
				if g.Inner.Count == 1 {
					e.held[t] = out
					epilogue(m, g, t, Ref{g.Node, -1, rs, cols}, cs, e)
				}
			}
		}
	}
	addCompute(e, g.Node.Name+".gemm", busy, cs.calls)
	if g.Inner.Count == 1 {
		e.out, e.held = m.outLayout(g), m.keepHeld(g, e.held)
		return e
	}

	// Reduce-scatter: slice q of every partial goes to cell q.
	for t := range send {
		send[t], recv[t] = 0, 0
	}
	tr = nil
	for i := 0; i < g.Rows.Count; i++ {
		rs := g.Rows.Span(i)
		for j := 0; j < g.Cols.Count; j++ {
			for q := 0; q < g.Inner.Count; q++ {
				sl := g.Slice(j, q)
				if sl.Len() == 0 {
					continue
				}
				dst := g.Tile(i, j, q)
				b := rs.Len() * sl.Len() * 2
				for p := 0; p < g.Inner.Count; p++ {
					if p == q {
						continue
					}
					src := g.Tile(i, j, p)
					send[src] += b
					recv[dst] += b
					if detail {
						tr = append(tr, Transfer{Ref: Ref{g.Node, p, rs, sl}, Order: AMPOut, From: src, To: []int{dst}, Bytes: b})
					}
				}
			}
		}
	}
	addExchange(m.t, e, g.Node.Name+".reduce", send, recv, tr)
	clear(busy)
	cs.calls = nil
	for i := 0; i < g.Rows.Count; i++ {
		rs := g.Rows.Span(i)
		for j := 0; j < g.Cols.Count; j++ {
			for q := 0; q < g.Inner.Count; q++ {
				sl := g.Slice(j, q)
				t := g.Tile(i, j, q)
				if sl.Len() == 0 {
					e.held[t] = 0
					continue
				}
				n := rs.Len() * sl.Len()
				parts := g.Inner.Count
				// The received parts arrive in one contiguous buffer; the
				// tile's own partial slice is copied behind them so that
				// reduce_add sees parts contiguous arrays.
				cp := kernels.Copy{N: 2 * n}
				if cyc := m.copyCycles(cp); cs.add(t, cyc) {
					cs.calls = append(cs.calls, Call{Tile: t, Spec: cp, Cycles: cyc,
						Reads: []Ref{{g.Node, q, rs, sl}}})
				}
				red := kernels.ReduceAdd{N: n, Parts: parts}
				if cyc := m.reduceCycles(red); cs.add(t, cyc) {
					reads := make([]Ref, parts)
					for p := range reads {
						reads[p] = Ref{g.Node, p, rs, sl}
					}
					cs.calls = append(cs.calls, Call{Tile: t, Spec: red,
						Cycles: cyc, Reads: reads, Writes: []Ref{{g.Node, -1, rs, sl}}})
				}
				e.work[t] += cost.Align(parts*n*2, 32)
				e.held[t] = cost.Align(n*2, 32)
				epilogue(m, g, t, Ref{g.Node, -1, rs, sl}, cs, e)
			}
		}
	}
	addCompute(e, g.Node.Name+".reduce", busy, cs.calls)
	e.out, e.held = m.outLayout(g), m.keepHeld(g, e.held)
	return e
}

// compute accumulates one compute stage: each tile's busy cycles and,
// in detail mode, its calls. add reports whether to record the call, so
// that callers build a Call (its slices, its Params map) only in detail
// mode: the search's thousands of evaluations build none.
type compute struct {
	busy   []int64
	calls  []Call
	detail bool
}

func (c *compute) add(t int, cyc int64) bool {
	c.busy[t] += cyc
	return c.detail
}

// streamWeights adds a streamed GEMM's weight traffic: a compute stage
// in which every cell copies its share of the block's panel from its
// home into its panel (copy_f16), and, into the input exchange's send and
// recv, the shares multicast down each grid column (one transfer per
// share; the column's cells are not partner tiles, so no pairing).
func streamWeights(m *models, g *GemmPlan, e *opEval, send, recv []int, emit func(Transfer), detail bool) {
	busy := make([]int64, len(send))
	var calls []Call
	for i := 0; i < g.Rows.Count; i++ {
		for j := 0; j < g.Cols.Count; j++ {
			for p := 0; p < g.Inner.Count; p++ {
				sh, ks := g.WeightShare(i, j), g.Inner.Span(p)
				if sh.Len() == 0 {
					continue
				}
				t, b := g.Tile(i, j, p), ks.Len()*sh.Len()*2
				spec := kernels.Copy{N: b}
				cyc := m.copyCycles(spec)
				busy[t] += cyc
				if detail {
					calls = append(calls, Call{Tile: t, Spec: spec, Cycles: cyc,
						Reads: []Ref{{g.Right, -1, ks, sh}}})
				}
				if g.Rows.Count < 2 {
					continue
				}
				send[t] += b
				var to []int
				for d := 0; d < g.Rows.Count; d++ {
					if d != i {
						recv[g.Tile(d, j, p)] += b
						to = append(to, g.Tile(d, j, p))
					}
				}
				if emit != nil {
					emit(Transfer{Ref: Ref{g.Right, -1, ks, sh}, Order: AMPRight, From: t, To: to, Bytes: b})
				}
			}
		}
	}
	addCompute(e, g.Node.Name+".weights", busy, calls)
}

// epilogue adds the fused elementwise ops on a result block and, for a
// graph output, the unpack to row-major.
func epilogue(m *models, g *GemmPlan, t int, blk Ref, cs *compute, e *opEval) {
	n := blk.Rows.Len() * blk.Cols.Len()
	cur := blk
	for _, op := range g.Epilogue {
		next := Ref{op, -1, blk.Rows, blk.Cols}
		in := cur
		if op.Op == graph.OpAdd {
			r := blk.Rows.Len()
			spec := kernels.AddBias{Rows: n / 16, R: r}
			if cyc := m.biasCycles(spec); cs.add(t, cyc) {
				cs.calls = append(cs.calls, Call{Tile: t, Spec: spec,
					Cycles: cyc, Reads: []Ref{in, {g.Bias, -1, Span{Lo: 0, Hi: 1}, blk.Cols}}, Writes: []Ref{next}})
			}
			e.weights[t] += cost.Align(blk.Cols.Len()*2, 32)
			e.r1[t] += cost.Align(blk.Cols.Len()*2, 32)
		} else {
			spec := kernels.Gelu{N: n}
			if cyc := m.geluCycles(spec); cs.add(t, cyc) {
				cs.calls = append(cs.calls, Call{Tile: t, Spec: spec,
					Cycles: cyc, Reads: []Ref{in}, Writes: []Ref{next}})
			}
		}
		cur = next
	}
	if g.Output {
		r, c := blk.Rows.Len(), blk.Cols.Len()
		spec := kernels.UnpackOut{R: r, C: c}
		if cyc := m.unpackCycles(spec); cs.add(t, cyc) {
			cs.calls = append(cs.calls, Call{Tile: t, Spec: spec,
				Cycles: cyc, Reads: []Ref{cur}, Writes: []Ref{cur}})
		}
		e.work[t] += cost.Align(n*2, 32)
		e.held[t] += cost.Align(n*2, 32)
		if g.Chunks > 1 {
			e.fixed[t] += cost.Align(n*2*g.Chunks, 32) // every chunk's result stays
		}
	}
}

func addExchange(t *ipu21.Target, e *opEval, name string, send, recv []int, tr []Transfer) {
	ms, mr := 0, 0
	for i := range send {
		ms, mr = max(ms, send[i]), max(mr, recv[i])
	}
	c := cost.Phase(t, ms, mr)
	if c == 0 {
		return
	}
	e.stages = append(e.stages, Stage{Kind: ExchangeStage, Name: name, Transfers: tr, Cycles: c, MaxSend: ms, MaxRecv: mr})
	e.cycles += c
}

func addCompute(e *opEval, name string, busy []int64, calls []Call) {
	var c int64
	for _, b := range busy {
		c = max(c, b)
	}
	e.stages = append(e.stages, Stage{Kind: ComputeStage, Name: name, Calls: calls, Cycles: c})
	e.cycles += c
}
