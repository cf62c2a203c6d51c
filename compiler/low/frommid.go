package low

// Lowering of compiler/mid plans: every GEMM of the chain runs on its own
// rows x columns x K grid (mid.GemmPlan), so the data changes grids between
// operations through exchange phases of rectangles.
//
// Per GEMM o and grid cell (i, j, p) on tile t = GemmPlan.Tile(i, j, p),
// the tile owns these buffers (weights for the whole program, the others
// for their GEMM, and a result also for the next GEMM: Buffer.Live, so
// that compiler/place lets the GEMMs' working sets share memory, as the mid
// planner's memory figure assumes; a plan that still does not fit is
// dropped by the Fits check):
//
//	L<o>  the AMP left panel of A[rows_i][k_p]             r x k
//	W<o>  the AMP right panel of B[k_p][cols_j] (region 1)  k x c
//	O<o>  the AMP output panel of the cell's product        r x c
//	R<o>  (K-split) the parts of the cell's column slice    parts x r x s
//	Y<o>  (K-split) the reduced slice: the value it holds   r x s
//
// and its run call is, per GEMM: the input exchange (rectangles of the
// previous result, or of the host-written input, multicast into L<o>; one
// transfer per 16-column group of a rectangle, which group_exchanges then
// merges where both ends are contiguous), gemm_f16, and either the fused
// GELU in place on O<o> or the reduce-scatter (slice q of every partial p
// into part p of R<o> on cell q), a copy of the tile's own part, one
// reduce_add_f16 into Y<o> (f32 sums in part order, one rounding) and the
// GELU on Y<o>. Every tile runs every phase (BSP).
//
// The host writes the input's blocks (i, p) into L0 of cell (i, 0, p) in
// AMP left order, the weights into W<o> of grid row 0 (one initialize
// phase multicasts them down the grid columns), and reads the last GEMM's
// result from where it lies (O or Y, AMP output order); every binding
// slice carries its rectangle and order (HostSlice.Block).
//
// A plan in row chunks (mid.Plan.Chunks = Q > 1) runs one chunk's timed
// ops as a runtime loop of Q iterations. The host writes the input into
// X0 instead: cell (i, j, p) of the first GEMM keeps its piece
// (mid.GemmPlan.InputPiece) of block (i, p) of every chunk, copies the
// current chunk's piece into its place in L0, and the input exchange
// multicasts the pieces along the grid row. The last GEMM's result buffer
// holds every chunk's block; X0 and it advance by one chunk per iteration
// (chunkOps). The last chunk's rows past M are zero padding
// (HostBinding.PadRows).

import (
	"fmt"
	"strconv"

	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
)

// cell is a grid position of one GEMM.
type cell struct{ i, j, p int }

// why is "cell (i,j,p)", the start of a cell's ops' Why (built without
// fmt: the lowering writes one per op, thousands per plan).
func (c cell) why() string {
	return "cell (" + strconv.Itoa(c.i) + "," + strconv.Itoa(c.j) + "," + strconv.Itoa(c.p) + ")"
}

// cellOf returns tile t's cell of g, if t is one.
func cellOf(g *mid.GemmPlan, t int) (cell, bool) {
	if t < 0 || t >= g.ActiveTiles() {
		return cell{}, false
	}
	j := t % g.Cols.Count
	ip := t / g.Cols.Count
	return cell{ip / g.Inner.Count, j, ip % g.Inner.Count}, true
}

// loc is where a tile holds a rectangle of a value: a buffer laid out in
// AMP panel order (16-column groups of all the block's rows).
type loc struct {
	buf        string
	rows, cols mid.Span
}

// offset is the byte offset of row r, column group starting at col c.
func (l loc) offset(r, c int) int {
	return ((c-l.cols.Lo)/16*l.rows.Len() + (r - l.rows.Lo)) * 32
}

func bufName(kind string, o int) string {
	if o >= 0 && o < len(bufNames) {
		if n, ok := bufNames[o][kind]; ok {
			return n
		}
	}
	return kind + strconv.Itoa(o)
}

// bufNames are the usual buffer names, formatted once: the lowering asks
// for them per tile and transfer, hundreds of thousands of times. Read
// only after init (FromMid runs concurrently for the finalists).
var bufNames = func() (t [64]map[string]string) {
	for o := range t {
		t[o] = map[string]string{}
		for _, k := range []string{"B", "H", "L", "O", "R", "W", "Y"} {
			t[o][k] = k + strconv.Itoa(o)
		}
	}
	return t
}()

// outLoc is where cell c of g holds its part of g's result (false: the
// cell holds none: an empty slice after the reduction).
func outLoc(g *mid.GemmPlan, o int, c cell) (loc, bool) {
	rows := g.Rows.Span(c.i)
	if g.Inner.Count == 1 {
		return loc{bufName("O", o), rows, g.Cols.Span(c.j)}, true
	}
	sl := g.Slice(c.j, c.p)
	if sl.Len() == 0 {
		return loc{}, false
	}
	return loc{bufName("Y", o), rows, sl}, true
}

// FromMid lowers a compiler/mid plan of problem p into per-tile work
// lists. It fails (so that the plan is dropped from the rerank) when a
// kernel call is outside the kernels' parameter limits or a tile's buffers
// do not fit (opts.Fits).
func FromMid(p *Problem, mp *mid.Plan, opts Options) (*Plan, error) {
	T := opts.Tiles
	if T < 1 || T > ipu21.Tiles {
		return nil, fmt.Errorf("compiler: %d tiles: want 1..%d", T, ipu21.Tiles)
	}
	if mp.Tiles > T {
		return nil, fmt.Errorf("the mid plan uses %d tiles, %d available", mp.Tiles, T)
	}
	pl := &Plan{Program: tile.Program{Tiles: T}, Problem: p, Mid: mp, GeluPrecise: opts.GeluPrecise, Conservative: opts.Conservative}
	pl.initPrograms()
	// A looped plan (mp.Period > 0) lowers one block's GEMMs (gs) and
	// runs them N times; every block's weights and biases share the
	// body's W<o> and B<o>, block after block, and the graph input is
	// written where the body's last GEMM leaves its result.
	gs := mp.Body()
	N := mp.Repeat()
	looped := mp.Period > 0
	steps := make([]map[string]int, T) // per tile: bytes of one block's panel in W<o> and B<o>
	// Row chunks: the run call's timed part is one chunk's, looped Q
	// times; X0 (each first-GEMM cell's input piece of every chunk) and
	// the last GEMM's result buffer (every chunk's block) advance by one
	// chunk per iteration.
	Q := max(mp.Chunks, 1)
	// In row chunks, an unrolled chain keeps each first-GEMM cell's input
	// piece of every chunk (X0) and the last GEMM's result of every chunk
	// (chain); a loop over blocks keeps every chunk's input, then result,
	// in slots X beside the buffer the blocks read and write (slots).
	chain, slots := Q > 1 && !looped, Q > 1 && looped
	lastO := len(gs) - 1
	xStep := make([]int, T)   // bytes of a tile's input piece per chunk
	outStep := make([]int, T) // bytes of a tile's result block per chunk
	precise := opts.GeluPrecise

	// Buffers and grid positions.
	for l := range pl.Programs {
		tp := &pl.Programs[l]
		for o, g := range gs {
			c, ok := cellOf(g, l)
			if !ok {
				continue
			}
			if tp.Row < 0 {
				tp.Row, tp.Col = c.i, c.j
			}
			r, cc, k := g.Rows.Span(c.i).Len(), g.Cols.Span(c.j).Len(), g.Inner.Span(c.p).Len()
			L, W, O := bufName("L", o), bufName("W", o), bufName("O", o)
			// Lifetimes in GEMM steps (step o+1 is GEMM o): the working
			// buffers live for their GEMM, the result also for the next
			// GEMM (its input exchange and copies) or, the last one, until
			// the host has read it; weights always.
			work := [2]int{o + 1, o + 2}
			result := [2]int{o + 1, o + 3}
			if o == len(gs)-1 {
				result[1] = 1 << 30
				if looped {
					// Written by the host (the input), read by the next
					// block's first GEMM, read back (the output).
					result = [2]int{}
				}
			}
			out := work
			if g.Inner.Count == 1 {
				out = result
			}
			oBytes := r * cc * 2
			if chain && o == lastO && g.Inner.Count == 1 {
				outStep[l], oBytes, out = oBytes, Q*oBytes, [2]int{}
			}
			if steps[l] == nil {
				steps[l] = map[string]int{}
			}
			wBlocks := N
			if g.Weights == mid.WeightsStreamed {
				// One panel, filled per block from the home shares H<o>.
				wBlocks = 1
				if n := k * g.WeightShare(c.i, c.j).Len() * 2; n > 0 {
					H := bufName("H", o)
					steps[l][H] = n
					tp.Buffers = append(tp.Buffers, tile.Buffer{Name: H, Bytes: N * n, Align: 32})
				}
			} else {
				steps[l][W] = k * cc * 2
			}
			tp.Buffers = append(tp.Buffers,
				tile.Buffer{Name: L, Bytes: r * k * 2, Align: 32, Apart: []string{O}, Live: work},
				tile.Buffer{Name: W, Bytes: wBlocks * k * cc * 2, Align: 32, Region: kernels.Interleaved},
				tile.Buffer{Name: O, Bytes: oBytes, Align: 32, Apart: []string{L}, Live: out})
			if pc := g.InputPiece(c.j, c.p); chain && o == 0 && pc.Len() > 0 {
				xStep[l] = r * pc.Len() * 2
				tp.Buffers = append(tp.Buffers, tile.Buffer{Name: "X0", Bytes: Q * xStep[l], Align: 32})
			}
			if lc, ok := outLoc(g, o, c); ok && g.Bias != nil {
				steps[l][bufName("B", o)] = lc.cols.Len() * 2
				tp.Buffers = append(tp.Buffers, tile.Buffer{Name: bufName("B", o), Bytes: N * lc.cols.Len() * 2, Align: 32})
			}
			if g.Inner.Count > 1 {
				if s := g.Slice(c.j, c.p).Len(); s > 0 {
					n := r * s
					yBytes, yLive := n*2, result
					if chain && o == lastO {
						outStep[l], yBytes, yLive = yBytes, Q*yBytes, [2]int{}
					}
					tp.Buffers = append(tp.Buffers,
						tile.Buffer{Name: bufName("R", o), Bytes: g.Inner.Count * n * 2, Align: 32, Live: work},
						tile.Buffer{Name: bufName("Y", o), Bytes: yBytes, Align: 32, Live: yLive})
				}
			}
		}
	}

	// Host bindings.
	g0, last := gs[0], gs[len(gs)-1]
	in := tile.HostBinding{Name: p.Input, Kind: ipuexe.KindInput, Rows: g0.M, Cols: g0.K}
	if chain {
		// Chunk after chunk, each cell's piece of the chunk's block.
		rc := g0.M
		in.Rows, in.PadRows = g0.TotalM, Q*rc
		for k := 0; k < Q; k++ {
			for l := 0; l < g0.ActiveTiles(); l++ {
				c, _ := cellOf(g0, l)
				pc := g0.InputPiece(c.j, c.p)
				if pc.Len() == 0 {
					continue
				}
				rs := g0.Rows.Span(c.i)
				in.Slices = append(in.Slices, tile.HostSlice{Tile: l, Ref: tile.Ref{Buf: "X0", Off: k * xStep[l]}, Offset: in.Bytes, Length: xStep[l],
					Block: tile.Rect{Rows: mid.Span{Lo: k*rc + rs.Lo, Hi: k*rc + rs.Hi}, Cols: pc, Order: mid.AMPLeft}})
				in.Bytes += xStep[l]
			}
		}
	}
	if looped {
		// Where the body's last GEMM leaves its result, which the
		// first GEMM of every block reads (in row chunks, chunk after
		// chunk into the slots X).
		if slots {
			in.Rows, in.PadRows = g0.TotalM, Q*g0.M
		}
		in.Slices, in.Bytes = resultSlices(last, len(gs)-1, Q, slots)
	}
	for i := 0; i < g0.Rows.Count && Q == 1 && !looped; i++ {
		for q := 0; q < g0.Inner.Count; q++ {
			rs, ks := g0.Rows.Span(i), g0.Inner.Span(q)
			n := rs.Len() * ks.Len() * 2
			for _, t := range g0.InputHolders(i, q) {
				in.Slices = append(in.Slices, tile.HostSlice{Tile: t, Ref: tile.Ref{Buf: "L0"}, Offset: in.Bytes, Length: n,
					Block: tile.Rect{Rows: rs, Cols: ks, Order: mid.AMPLeft}})
				in.Bytes += n
			}
		}
	}
	pl.Inputs = []tile.HostBinding{in}
	for b := 0; b < N; b++ {
		for o, g := range gs {
			bg := mp.Gemms[b*len(gs)+o] // block b's GEMM o: its own weight and bias nodes
			W, B := bufName("W", o), bufName("B", o)
			w := tile.HostBinding{Name: bg.Right.Name, Kind: ipuexe.KindWeight, Rows: g.K, Cols: g.N}
			for l := 0; l < g.ActiveTiles() && g.Weights == mid.WeightsStreamed; l++ {
				// Each cell's share of its panel, into its home H<o>.
				c, _ := cellOf(g, l)
				ks, sh := g.Inner.Span(c.p), g.WeightShare(c.i, c.j)
				if n := ks.Len() * sh.Len() * 2; n > 0 {
					H := bufName("H", o)
					w.Slices = append(w.Slices, tile.HostSlice{Tile: l, Ref: tile.Ref{Buf: H, Off: b * steps[l][H]}, Offset: w.Bytes, Length: n,
						Block: tile.Rect{Rows: ks, Cols: sh, Order: mid.AMPRight}})
					w.Bytes += n
				}
			}
			for j := 0; j < g.Cols.Count && g.Weights != mid.WeightsStreamed; j++ {
				for q := 0; q < g.Inner.Count; q++ {
					ks, cs := g.Inner.Span(q), g.Cols.Span(j)
					n := ks.Len() * cs.Len() * 2
					t := g.Tile(0, j, q)
					w.Slices = append(w.Slices, tile.HostSlice{Tile: t, Ref: tile.Ref{Buf: W, Off: b * steps[t][W]}, Offset: w.Bytes, Length: n,
						Block: tile.Rect{Rows: ks, Cols: cs, Order: mid.AMPRight}})
					w.Bytes += n
				}
			}
			pl.Weights = append(pl.Weights, w)
			if g.Bias == nil {
				continue
			}
			// The bias of each result block's columns, on the holders of
			// grid row 0 (multicast down the columns with the weights).
			bb := tile.HostBinding{Name: bg.Bias.Name, Kind: ipuexe.KindWeight, Rows: 1, Cols: g.N}
			for l := 0; l < g.ActiveTiles(); l++ {
				c, _ := cellOf(g, l)
				if lc, ok := outLoc(g, o, c); ok && c.i == 0 {
					n := lc.cols.Len() * 2
					bb.Slices = append(bb.Slices, tile.HostSlice{Tile: l, Ref: tile.Ref{Buf: B, Off: b * steps[l][B]}, Offset: bb.Bytes, Length: n,
						Block: tile.Rect{Rows: mid.Span{Lo: 0, Hi: 1}, Cols: lc.cols, Order: mid.RowMajor}})
					bb.Bytes += n
				}
			}
			pl.Weights = append(pl.Weights, bb)
		}
	}
	out := tile.HostBinding{Name: p.Output, Kind: ipuexe.KindOutput, Rows: last.M, Cols: last.N}
	if Q > 1 {
		out.Rows, out.PadRows = last.TotalM, Q*last.M
	}
	out.Slices, out.Bytes = resultSlices(last, len(gs)-1, Q, slots)
	pl.Outputs = []tile.HostBinding{out}

	// The weights phase of "initialize": grid row 0 multicasts each
	// panel (every block's, in one transfer) down its grid column.
	wPhase := -1
	for o, g := range gs {
		if g.Rows.Count < 2 {
			continue
		}
		if wPhase < 0 {
			wPhase = pl.phase("weights")
		}
		for j := 0; j < g.Cols.Count && g.Weights != mid.WeightsStreamed; j++ {
			for q := 0; q < g.Inner.Count; q++ {
				words := N * g.Inner.Span(q).Len() * g.Cols.Span(j).Len() / 2
				t := tile.XTransfer{Src: g.Tile(0, j, q), SrcRef: tile.Ref{Buf: bufName("W", o)}, Words: words}
				for i := 1; i < g.Rows.Count; i++ {
					t.Dsts = append(t.Dsts, tile.XDest{Tile: g.Tile(i, j, q), Ref: tile.Ref{Buf: bufName("W", o)}})
				}
				pl.Exchanges[wPhase].Transfers = append(pl.Exchanges[wPhase].Transfers, t)
			}
		}
		if g.Bias == nil {
			continue
		}
		for l := 0; l < g.ActiveTiles(); l++ {
			c, _ := cellOf(g, l)
			lc, ok := outLoc(g, o, c)
			if !ok || c.i != 0 {
				continue
			}
			t := tile.XTransfer{Src: l, SrcRef: tile.Ref{Buf: bufName("B", o)}, Words: N * lc.cols.Len() / 2}
			for i := 1; i < g.Rows.Count; i++ {
				t.Dsts = append(t.Dsts, tile.XDest{Tile: g.Tile(i, c.j, c.p), Ref: tile.Ref{Buf: bufName("B", o)}})
			}
			pl.Exchanges[wPhase].Transfers = append(pl.Exchanges[wPhase].Transfers, t)
		}
	}

	// The run call's phases and kernel calls, GEMM by GEMM.
	stages := map[string]*mid.Stage{}
	for s := range mp.Stages {
		if mp.Stages[s].Kind == mid.ExchangeStage { // the compute stage after a reduction has its name
			stages[mp.Stages[s].Name] = &mp.Stages[s]
		}
	}
	timed := make([][]tile.Op, T)
	for o, g := range gs {
		name := g.Node.Name
		if o == 0 && chain {
			// Each cell's piece of the chunk, from X0 into its place in
			// the left panel, where the input exchange sends it from.
			for l := 0; l < g.ActiveTiles(); l++ {
				c, _ := cellOf(g, l)
				pc := g.InputPiece(c.j, c.p)
				if pc.Len() == 0 {
					continue
				}
				dst := loc{"L0", g.Rows.Span(c.i), g.Inner.Span(c.p)}
				timed[l] = append(timed[l], tile.KernelOp(kernels.Copy{N: xStep[l]},
					tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: "L0", Off: dst.offset(dst.rows.Lo, pc.Lo)}}, {Reg: "$m3", Ref: tile.Ref{Buf: "X0"}}},
						Node: g.Left.Name, Why: fmt.Sprintf("cell (%d,%d,%d): own piece cols %v of the chunk's input", c.i, c.j, c.p, pc)}))
			}
		}
		if g.Weights == mid.WeightsStreamed {
			// Each cell's share of the block's panel, from its home
			// into its place in the panel, where the input phase
			// multicasts it down the grid column from.
			for l := 0; l < g.ActiveTiles(); l++ {
				c, _ := cellOf(g, l)
				sh := g.WeightShare(c.i, c.j)
				n := g.Inner.Span(c.p).Len() * sh.Len() * 2
				if n == 0 {
					continue
				}
				timed[l] = append(timed[l], tile.KernelOp(kernels.Copy{N: n},
					tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: bufName("W", o), Off: g.ShareOffset(c.j, c.p, sh)}}, {Reg: "$m3", Ref: tile.Ref{Buf: bufName("H", o)}}},
						Node: g.Right.Name, Why: fmt.Sprintf("cell (%d,%d,%d): own share cols %v of the block's weights", c.i, c.j, c.p, sh)}))
			}
		}
		// Input exchange: rectangles of the left operand from their
		// holders into L<o> (and a streamed GEMM's weight shares down the
		// grid columns).
		if st := stages[name+".in"]; st != nil && len(st.Transfers) > 0 {
			ph := pl.phase(name + " input")
			src := func(t int) (loc, error) {
				if o == 0 && !looped {
					c, ok := cellOf(g0, t)
					if !ok || (c.j != 0 && Q == 1) {
						return loc{}, fmt.Errorf("BUG: tile %d holds no input block", t)
					}
					return loc{"L0", g0.Rows.Span(c.i), g0.Inner.Span(c.p)}, nil
				}
				po := prevGemm(o, len(gs))
				c, ok := cellOf(gs[po], t)
				var lc loc
				if ok {
					lc, ok = outLoc(gs[po], po, c)
				}
				if !ok {
					return loc{}, fmt.Errorf("BUG: tile %d holds no block of %s", t, gs[po].Out.Name)
				}
				return lc, nil
			}
			for _, tr := range st.Transfers {
				if tr.Ref.Value == g.Right {
					from, ok := cellOf(g, tr.From)
					if !ok || tr.Ref.Cols != g.WeightShare(from.i, from.j) {
						panic(fmt.Sprintf("BUG: %s weight share %v from tile %d", name, tr.Ref, tr.From))
					}
					ref := tile.Ref{Buf: bufName("W", o), Off: g.ShareOffset(from.j, from.p, tr.Ref.Cols)}
					x := tile.XTransfer{Src: tr.From, SrcRef: ref, Words: tr.Bytes / 4}
					for _, t := range tr.To {
						x.Dsts = append(x.Dsts, tile.XDest{Tile: t, Ref: ref})
					}
					pl.Exchanges[ph].Transfers = append(pl.Exchanges[ph].Transfers, x)
					continue
				}
				s, err := src(tr.From)
				if err != nil {
					panic(err)
				}
				rs, cs := tr.Ref.Rows, tr.Ref.Cols
				dst := make([]loc, len(tr.To))
				for d, t := range tr.To {
					c, ok := cellOf(g, t)
					if !ok {
						panic(fmt.Sprintf("BUG: %s input to tile %d, not a cell", name, t))
					}
					dst[d] = loc{bufName("L", o), g.Rows.Span(c.i), g.Inner.Span(c.p)}
				}
				for col := cs.Lo; col < cs.Hi; col += 16 {
					x := tile.XTransfer{Src: tr.From, SrcRef: tile.Ref{Buf: s.buf, Off: s.offset(rs.Lo, col)}, Words: rs.Len() * 8,
						Dsts: make([]tile.XDest, 0, len(tr.To))}
					for d, t := range tr.To {
						x.Dsts = append(x.Dsts, tile.XDest{Tile: t, Ref: tile.Ref{Buf: dst[d].buf, Off: dst[d].offset(rs.Lo, col)}})
					}
					pl.Exchanges[ph].Transfers = append(pl.Exchanges[ph].Transfers, x)
				}
			}
			why := fmt.Sprintf("%s: rectangles of %s into the cells' left panels", name, g.Left.Name)
			for l := range timed {
				timed[l] = append(timed[l], tile.Op{Kind: tile.OpExchange, Phase: ph, Node: g.Left.Name, Why: why})
			}
		}
		// The GEMM, and without K-split its epilogue.
		for l := 0; l < g.ActiveTiles(); l++ {
			c, _ := cellOf(g, l)
			rs, cs, ks := g.Rows.Span(c.i), g.Cols.Span(c.j), g.Inner.Span(c.p)
			if o > 0 || looped {
				// The part of the left block the tile holds itself (the
				// planner's exchange skips it) is copied locally, one copy
				// per 16-column group (merge_copies joins contiguous ones).
				po := prevGemm(o, len(gs))
				timed[l] = append(timed[l], localCopies(gs[po], po, l, loc{bufName("L", o), rs, ks})...)
			}
			O := bufName("O", o)
			timed[l] = append(timed[l], tile.KernelOp(kernels.Gemm{K: ks.Len(), C: cs.Len(), R: rs.Len(), Conservative: pl.Conservative},
				tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: O}}, {Reg: "$m3", Ref: tile.Ref{Buf: bufName("L", o)}}, {Reg: "$m4", Ref: tile.Ref{Buf: bufName("W", o)}}},
					Node: name, Why: c.why() + ": rows " + rs.String() + " x cols " + cs.String() + ", k " + ks.String()}))
			if g.Inner.Count == 1 {
				timed[l] = append(timed[l], epilogueOps(g, o, tile.Ref{Buf: O}, rs.Len(), cs.Len(), precise, c)...)
			}
		}
		if g.Inner.Count == 1 {
			continue
		}
		// Reduce-scatter of the partial sums.
		ph := pl.phase(name + " reduce-scatter")
		st := stages[name+".reduce"]
		if st == nil {
			return nil, fmt.Errorf("BUG: mid plan has no %s.reduce stage", name)
		}
		for _, tr := range st.Transfers {
			if len(tr.To) != 1 {
				panic(fmt.Sprintf("BUG: %s reduce transfer %v to %d tiles", name, tr.Ref, len(tr.To)))
			}
			from, ok1 := cellOf(g, tr.From)
			_, ok2 := cellOf(g, tr.To[0])
			if !ok1 || !ok2 || tr.Ref.Part != from.p {
				panic(fmt.Sprintf("BUG: %s reduce transfer %v from %d to %v", name, tr.Ref, tr.From, tr.To))
			}
			sl, cs := tr.Ref.Cols, g.Cols.Span(from.j)
			r := tr.Ref.Rows.Len()
			n := r * sl.Len()
			pl.Exchanges[ph].Transfers = append(pl.Exchanges[ph].Transfers, tile.XTransfer{
				Src: tr.From, SrcRef: tile.Ref{Buf: bufName("O", o), Off: (sl.Lo - cs.Lo) / 16 * r * 32}, Words: n / 2,
				Dsts: []tile.XDest{{Tile: tr.To[0], Ref: tile.Ref{Buf: bufName("R", o), Off: from.p * n * 2}}}})
		}
		why := fmt.Sprintf("%s: reduce-scatter of the %d K-split partial sums", name, g.Inner.Count)
		for l := range timed {
			timed[l] = append(timed[l], tile.Op{Kind: tile.OpExchange, Phase: ph, Node: name, Why: why})
		}
		for l := 0; l < g.ActiveTiles(); l++ {
			c, _ := cellOf(g, l)
			sl, cs := g.Slice(c.j, c.p), g.Cols.Span(c.j)
			if sl.Len() == 0 {
				continue
			}
			r := g.Rows.Span(c.i).Len()
			n := r * sl.Len()
			R, Y := bufName("R", o), bufName("Y", o)
			timed[l] = append(timed[l],
				tile.KernelOp(kernels.Copy{N: 2 * n},
					tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: R, Off: c.p * n * 2}}, {Reg: "$m3", Ref: tile.Ref{Buf: bufName("O", o), Off: (sl.Lo - cs.Lo) / 16 * r * 32}}},
						Node: name, Why: c.why() + ": own partial of slice " + sl.String() + " beside the received ones"}),
				tile.KernelOp(kernels.ReduceAdd{N: n, Parts: g.Inner.Count},
					tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: Y}}, {Reg: "$m3", Ref: tile.Ref{Buf: R}}},
						Node: name, Why: c.why() + ": sum of " + strconv.Itoa(g.Inner.Count) + " partials of rows " + g.Rows.Span(c.i).String() + " x cols " + sl.String()}))
			timed[l] = append(timed[l], epilogueOps(g, o, tile.Ref{Buf: Y}, r, sl.Len(), precise, c)...)
		}
	}
	if chain {
		outBuf := bufName("O", lastO)
		if last.Inner.Count > 1 {
			outBuf = bufName("Y", lastO)
		}
		for l := range timed {
			chunk0 := timed[l]
			timed[l] = loopOps(Q, 0, func(k int) []tile.Op {
				return chunkOps(chunk0, k, map[string]int{"X0": xStep[l], outBuf: outStep[l]})
			})
		}
	}
	if looped {
		depth := blockLoopDepth(mp) // the loop over the blocks; inside the chunks' in row chunks
		for l := range timed {
			block0 := timed[l]
			timed[l] = loopOps(N, depth, func(b int) []tile.Op { return chunkOps(block0, b, steps[l]) })
		}
	}
	if slots {
		// Per chunk: its input from slot k into the buffer the blocks
		// read and write, the blocks, its result back into slot k.
		for l := range timed {
			blocks := timed[l]
			c, ok := cellOf(last, l)
			var lc loc
			if ok {
				lc, ok = outLoc(last, lastO, c)
			}
			if !ok {
				timed[l] = loopOps(Q, 0, func(int) []tile.Op { return blocks })
				continue
			}
			n := lc.rows.Len() * lc.cols.Len() * 2
			pl.Programs[l].Buffers = append(pl.Programs[l].Buffers, tile.Buffer{Name: "X", Bytes: Q * n, Align: 32})
			timed[l] = loopOps(Q, 0, func(k int) []tile.Op {
				ops := []tile.Op{tile.KernelOp(kernels.Copy{N: n},
					tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: lc.buf}}, {Reg: "$m3", Ref: tile.Ref{Buf: "X", Off: k * n}}},
						Node: g0.Left.Name, Why: fmt.Sprintf("the chunk's input rows %v x cols %v from its slot", lc.rows, lc.cols)})}
				ops = append(ops, blocks...)
				return append(ops, tile.KernelOp(kernels.Copy{N: n},
					tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: "X", Off: k * n}}, {Reg: "$m3", Ref: tile.Ref{Buf: lc.buf}}},
						Node: mp.Gemms[len(mp.Gemms)-1].Out.Name, Why: fmt.Sprintf("the chunk's result rows %v x cols %v into its slot", lc.rows, lc.cols)}))
			})
		}
	}
	pl.hostCalls(func(t *tile.TileProgram) (init, run []tile.Op) {
		if wPhase >= 0 {
			init = append(init, tile.Op{Kind: tile.OpExchange, Phase: wPhase, Why: "weights down the grid columns"})
		}
		return init, timed[t.Logical]
	})
	if err := pl.checkMid(opts); err != nil {
		return nil, err
	}
	pl.Estimate = mp.Estimate()
	pl.addHostSkew()
	return pl, nil
}

// chunkOps is chunk k's copy of one chunk's ops: the refs into the
// buffers of steps advanced by k times the buffer's step.
func chunkOps(ops []tile.Op, k int, steps map[string]int) []tile.Op {
	out := make([]tile.Op, len(ops))
	for i, op := range ops {
		op.Args = append([]tile.Arg(nil), op.Args...)
		for a := range op.Args {
			op.Args[a].Ref.Off += k * steps[op.Args[a].Ref.Buf]
		}
		op.Dst.Off += k * steps[op.Dst.Buf]
		out[i] = op
	}
	return out
}

// walkOps visits ops and the bodies of their loops.
func walkOps(ops []tile.Op, visit func(*tile.Op)) {
	for i := range ops {
		visit(&ops[i])
		walkOps(ops[i].Body, visit)
	}
}

// resultSlices are where the host reads the result of last (GEMM o) of
// every one of Q chunks, chunk after chunk, each holder's block in AMP
// output order: in its result buffer (every chunk's block, one after
// another), or in a loop's slots X; a loop's input is written there too.
func resultSlices(last *mid.GemmPlan, o, Q int, slots bool) (out []tile.HostSlice, bytes int) {
	for k := 0; k < Q; k++ {
		for l := 0; l < last.ActiveTiles(); l++ {
			c, _ := cellOf(last, l)
			lc, ok := outLoc(last, o, c)
			if !ok {
				continue
			}
			n := lc.rows.Len() * lc.cols.Len() * 2
			rows := mid.Span{Lo: k*last.M + lc.rows.Lo, Hi: k*last.M + lc.rows.Hi}
			ref := tile.Ref{Buf: lc.buf, Off: k * n}
			if slots {
				ref = tile.Ref{Buf: "X", Off: k * n}
			}
			out = append(out, tile.HostSlice{Tile: l, Ref: ref, Offset: bytes, Length: n,
				Block: tile.Rect{Rows: rows, Cols: lc.cols, Order: mid.AMPOut}})
			bytes += n
		}
	}
	return out, bytes
}

// prevGemm is the GEMM whose result GEMM o of n reads: the one before, or
// for the first, a looped plan's last (the previous block's result).
func prevGemm(o, n int) int { return (o + n - 1) % n }

// localCopies copy into dst the rectangle of prev's result (GEMM po) that
// tile l holds itself (none when it holds no part of dst's block).
func localCopies(prev *mid.GemmPlan, po, l int, dst loc) []tile.Op {
	pc, ok := cellOf(prev, l)
	if !ok {
		return nil
	}
	src, ok := outLoc(prev, po, pc)
	if !ok {
		return nil
	}
	rs, cs := src.rows.Intersect(dst.rows), src.cols.Intersect(dst.cols)
	if rs.Len() <= 0 || cs.Len() <= 0 {
		return nil
	}
	var ops []tile.Op
	why := "own rows " + rs.String() + " x cols " + cs.String() + " of " + prev.Out.Name + " into the left panel"
	for col := cs.Lo; col < cs.Hi; col += 16 {
		ops = append(ops, tile.KernelOp(kernels.Copy{N: rs.Len() * 32},
			tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: tile.Ref{Buf: dst.buf, Off: dst.offset(rs.Lo, col)}}, {Reg: "$m3", Ref: tile.Ref{Buf: src.buf, Off: src.offset(rs.Lo, col)}}},
				Node: prev.Out.Name, Why: why}))
	}
	return ops
}

// epilogueOps are the fused elementwise ops on a result block of r rows
// and cols columns (AMP output order), in place, in graph order: the bias
// (add_bias_f16 with B<o>, the bias of the block's columns) and the GELU.
func epilogueOps(g *mid.GemmPlan, o int, blk tile.Ref, r, cols int, precise bool, c cell) []tile.Op {
	var ops []tile.Op
	n := r * cols
	for _, e := range g.Epilogue {
		if e.Op == graph.OpAdd {
			ops = append(ops, tile.KernelOp(kernels.AddBias{Rows: n / 16, R: r},
				tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: blk}, {Reg: "$m3", Ref: tile.Ref{Buf: bufName("B", o)}}},
					Node: e.Name, Why: c.why() + ": bias in place"}))
			continue
		}
		ops = append(ops, tile.KernelOp(kernels.Gelu{N: n, Precise: precise},
			tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: blk}, {Reg: "$m3", Ref: blk}},
				Node: e.Name, Why: c.why() + ": activation in place"}))
	}
	return ops
}

// checkMid checks the phase count against opts.MaxPhases, every kernel
// specialisation against its limits and every distinct tile's buffers
// against opts.Fits.
func (pl *Plan) checkMid(opts Options) error {
	if opts.MaxPhases > 0 && len(pl.Exchanges) > opts.MaxPhases {
		return fmt.Errorf("%d exchange phases, the runtime's row table holds %d (the GEMMs are unrolled)", len(pl.Exchanges), opts.MaxPhases)
	}
	seen := map[kernels.Spec]bool{}
	fit := map[string]bool{}
	for l := range pl.Programs {
		tp := &pl.Programs[l]
		var err error
		walkOps(tp.Calls[1], func(op *tile.Op) {
			if op.Kind != tile.OpKernel || err != nil {
				return
			}
			s, ok := op.Spec()
			if !ok {
				err = fmt.Errorf("BUG: tile %d: %s %s is not a kernel spec's call (the lowering builds every call from a spec)", l, op.Kernel, op.Params)
				return
			}
			if seen[s] {
				return
			}
			seen[s] = true
			if cerr := kernels.Check(s); cerr != nil {
				err = fmt.Errorf("tile %d: %s %s: %w", l, op.Kernel, op.Params, cerr)
			}
		})
		if err != nil {
			return err
		}
		if c := pl.EstimatedCodeBytes(l); c > tile.CodeBytes {
			return fmt.Errorf("tile %d: about %d bytes of code (the GEMMs are unrolled), the code area holds %d", l, c, tile.CodeBytes)
		}
		if opts.Fits == nil || len(tp.Buffers) == 0 {
			continue
		}
		kb := make([]byte, 0, 32*len(tp.Buffers))
		for _, b := range tp.Buffers {
			kb = append(kb, b.Name...)
			for _, v := range []int{b.Bytes, b.Align, int(b.Region), b.Live[0], b.Live[1]} {
				kb = append(kb, ':')
				kb = strconv.AppendInt(kb, int64(v), 10)
			}
			for _, a := range b.Apart {
				kb = append(kb, ',')
				kb = append(kb, a...)
			}
			kb = append(kb, ';')
		}
		if fit[string(kb)] {
			continue
		}
		if err := opts.Fits(tp.Buffers); err != nil {
			return fmt.Errorf("tile %d: %w", l, err)
		}
		fit[string(kb)] = true
	}
	return nil
}

// EstimatedCodeBytes estimates the code of tile l of a plan lowered from
// compiler/mid: the supervisor
// program (both calls, every step unrolled, a cycle sample per timed step)
// and one copy of each kernel it calls, sized a little above what the
// linker reports.
func (pl *Plan) EstimatedCodeBytes(l int) int {
	tp := &pl.Programs[l]
	steps := 0 // timed steps, loop bodies included: each may take a cycle sample
	walkOps(tp.Calls[1], func(*tile.Op) { steps++ })
	instrs := 80 + SupervisorInstructions(tp.Calls[0]) + SupervisorInstructions(tp.Calls[1]) + 8*steps
	code := 0
	seen := map[kernels.Spec]bool{}
	walkOps(tp.Calls[1], func(op *tile.Op) {
		if op.Kind != tile.OpKernel {
			return
		}
		s, ok := op.Spec()
		if !ok {
			code += otherKernelCodeBytes // each call, not knowing its specialisations
			return
		}
		if !seen[s] {
			seen[s] = true
			code += s.CodeBytes()
		}
	})
	return 4*instrs + code
}

// otherKernelCodeBytes is the code estimate of a kernel call without a
// typed spec (those are sized by Spec.CodeBytes).
const otherKernelCodeBytes = 160

// blockLoopDepth is the loop depth (tile.Op.Depth) of a looped plan's loop
// over its blocks: inside the chunks' loop in row chunks, else the
// outermost.
func blockLoopDepth(mp *mid.Plan) int {
	if mp.Chunks > 1 {
		return 1
	}
	return 0
}

// BlockNode names the graph node that an op of a looped plan's body,
// whose provenance names block 0's node, computes in iteration iter of
// its loops: the same node of block iter[BlockLoopDepth] (its name as
// given for any other plan, or a name that is no block 0 node).
func (pl *Plan) BlockNode(node string, iter [tile.MaxLoopDepth]int) string {
	mp := pl.Mid
	if mp == nil || mp.Period == 0 || node == "" {
		return node
	}
	b := iter[blockLoopDepth(mp)]
	if b == 0 || (b+1)*mp.Period > len(mp.Gemms) {
		return node
	}
	for o := 0; o < mp.Period; o++ {
		g0, gb := mp.Gemms[o], mp.Gemms[b*mp.Period+o]
		pairs := [][2]*graph.Node{{g0.Node, gb.Node}, {g0.Left, gb.Left}, {g0.Right, gb.Right}, {g0.Bias, gb.Bias}, {g0.Out, gb.Out}}
		for e := range g0.Epilogue {
			if e < len(gb.Epilogue) {
				pairs = append(pairs, [2]*graph.Node{g0.Epilogue[e], gb.Epilogue[e]})
			}
		}
		for _, p := range pairs {
			if p[0] != nil && p[1] != nil && p[0].Name == node {
				return p[1].Name
			}
		}
	}
	return node
}
