package low

// The MLP plan: Blocks repetitions of x -> W1 (+b1) -> GELU -> W2 (+b2) on
// an R x C grid (the Megatron split of the package comment), with rows
// processed in chunks so that a row block larger than a tile's memory
// still fits.
//
// Storage. The activations live on the device for the whole call, spread
// over every grid tile in one layout that serves as the input of each
// block and as its output: row block i is cut into Q chunks of
// rc = ChunkRows(i) rows (the last ones padded with zero rows, whose
// results nobody reads); the AMP panel of a chunk ([Kp/16][rc][16] f16,
// which is both GEMM1's left panel and GEMM2's output panel, since the
// MLP's output width is its input width) is seen as a flat array cut in C
// pieces of whole 16-value panel rows (Piece); tile (i, j) keeps piece j
// of each of its row block's chunks in buffer "xy", chunk after chunk.
// The host writes the input there and reads the output from there.
//
// Per block and chunk q, every tile (i, j):
//  1. copies its piece of chunk q from "xy" to its place in the left panel
//     "a" and to a staging buffer "xg"; exchange "gather" multicasts "xg"
//     to the same place in "a" on the other tiles of grid row i (the
//     staging copy makes the phase identical for every chunk and block, so
//     one phase serves them all);
//  2. runs gemm_f16 (a x W1 panel -> "c"), add_bias_f16 (b1), gelu_f16 in
//     place, gemm_f16 ("c" x W2 panel -> partial panel in "a");
//  3. exchange "reduce-scatter" sends piece q' of the partial to tile
//     (i, q') ("red", part j); the tile copies its own part and
//     reduce_add_f16 sums the C parts into chunk q's piece of "xy", which
//     add_bias_f16 (b2) finishes: the block's output, the next block's
//     input, in the layout step 1 expects.
//
// With C = 1 there is no exchange: the chunk is copied from "xy" to "a"
// and GEMM2's output back.
//
// Weights. Resident: "w" holds [W1 panel | W2 panel] of every block
// (uploaded to grid row 0 by "initialize", multicast down the columns).
// Streamed (Grid.Stream, when the resident panels do not fit): tile (i, j)
// keeps share i (8-byte units, split over R) of each block's W1 and W2
// panels of column block j in "ws"; at the start of each block it stages
// its share in "wst" and copies it into "w", and exchange "weights" (one
// phase for every block, thanks to the staging) multicasts the shares down
// the column. Biases ("bias": [b1 of the column block | b2 padded to Kp]
// per block) are always resident.
//
// Streamed weights may number the tiles column by column (Grid.ColMajor)
// so that partner tiles share a grid column and the shares go as paired
// 64-bit items; otherwise partners share a grid row, which pairs the
// gather instead.
//
// Blocks and chunks are runtime loops (OpLoop, see loop.go): every block
// and chunk runs the same kernels on buffer offsets that advance by a
// constant step, so the code does not grow with their number.
//
// The grid (R, C), the chunk count Q and the weight mode are chosen by the
// compiler/cost models among the candidates whose tiles fit in memory and
// whose code fits the code area.

import (
	"fmt"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
)

// ChunkRows is the (padded) row count of each of row block i's Q chunks.
func (g *Grid) ChunkRows(i int) int { return ceilDiv(g.Rows(i), g.Q) }

// Piece is piece j of the flat panel of a chunk of rc rows: its start and
// length in values (whole 16-value panel rows, balanced over C).
func (g *Grid) Piece(rc, j int) (start, n int) {
	rows := rc * g.Kp / 16
	a, b := j*rows/g.C, (j+1)*rows/g.C
	return 16 * a, 16 * (b - a)
}

// Share is share i (byte offset and length, 8-byte units balanced over R)
// of a panel of the given bytes, in streamed-weight mode.
func (g *Grid) Share(bytes, i int) (off, n int) {
	u := bytes / 8
	a, b := i*u/g.R, (i+1)*u/g.R
	return 8 * a, 8 * (b - a)
}

// panelBytes is one weight panel of column block j (W1's and W2's are the
// same size: Kp x Cols(j)).
func (g *Grid) panelBytes(j int) int { return g.Kp * g.Cols(j) * 2 }

// W1Offset and W2Offset are block b's panels in "w"; BiasOffset its
// [b1 | b2] in "bias".
func (g *Grid) W1Offset(b, j int) int {
	if g.Stream {
		return 0
	}
	return 2 * b * g.panelBytes(j)
}

func (g *Grid) W2Offset(b, j int) int { return g.W1Offset(b, j) + g.panelBytes(j) }

func (g *Grid) BiasOffset(b, j int) int { return 2 * b * (g.Cols(j) + g.Kp) }

// mlpBuffers are the buffers of MLP grid tile (i, j).
func mlpBuffers(p *Problem, g *Grid, i, j int) []Buffer {
	rc, w, nb := g.ChunkRows(i), g.Cols(j), len(p.Blocks)
	panel := g.panelBytes(j)
	wBytes := 2 * panel
	if !g.Stream {
		wBytes *= nb
	}
	_, n := g.Piece(rc, j)
	bufs := []Buffer{
		{Name: "a", Bytes: rc * g.Kp * 2, Align: 32, Apart: []string{"c"}},
		{Name: "w", Bytes: wBytes, Align: 32, Region: kernels.Interleaved},
		// "a" owning its elements keeps the GEMMs' output and left panels
		// apart; "c" is small and need not round up to whole elements.
		{Name: "c", Bytes: rc * w * 2, Align: 32},
		{Name: "xy", Bytes: g.Q * n * 2, Align: 32},
	}
	if g.C > 1 {
		bufs = append(bufs, Buffer{Name: "red", Bytes: 2 * n * g.C, Align: 32}, Buffer{Name: "xg", Bytes: 2 * n, Align: 32})
	}
	if p.Biases {
		bufs = append(bufs, Buffer{Name: "bias", Bytes: nb * 2 * (w + g.Kp), Align: 32})
	}
	if g.Stream {
		_, s := g.Share(panel, i)
		bufs = append(bufs, Buffer{Name: "ws", Bytes: nb * 2 * s, Align: 32}, Buffer{Name: "wst", Bytes: 2 * s, Align: 32})
	}
	return bufs
}

// mlpFeasible checks the kernel parameter limits of a candidate grid (every
// distinct specialisation its tiles would call).
func mlpFeasible(p *Problem, g *Grid) error {
	check := func(name string, params kernels.Params) error {
		k, err := kernels.Lookup(name)
		if err != nil {
			return err
		}
		if _, err := k.Resolve(params); err != nil {
			return err
		}
		return nil
	}
	type spec struct {
		name string
		p    kernels.Params
	}
	seen := map[[4]int]bool{}
	for i := 0; i < g.R; i++ {
		rc := g.ChunkRows(i)
		for j := 0; j < g.C; j++ {
			w := g.Cols(j)
			_, n := g.Piece(rc, j)
			_, s := g.Share(g.panelBytes(j), i)
			key := [4]int{rc, w, n, s}
			if seen[key] {
				continue
			}
			seen[key] = true
			if n == 0 {
				return fmt.Errorf("%d-row chunks leave tile column %d no piece", rc, j)
			}
			specs := []spec{
				{kernels.GemmF16, kernels.Params{"k": g.Kp, "c": w, "r": rc}}, // gemm_f16_drain has the same parameters and checks
				{kernels.GemmF16, kernels.Params{"k": w, "c": g.Kp, "r": rc}},
				{"gelu_f16", kernels.Params{"n": rc * w}},
				{"copy_f16", kernels.Params{"n": 2 * n}},
			}
			if g.C > 1 {
				specs = append(specs, spec{"reduce_add_f16", kernels.Params{"n": n, "parts": g.C}})
			}
			if p.Biases {
				specs = append(specs, spec{"add_bias_f16", kernels.Params{"rows": rc * w / 16, "r": rc}},
					spec{"add_bias_f16", kernels.Params{"rows": n / 16, "r": rc}})
			}
			if g.Stream {
				specs = append(specs, spec{"copy_f16", kernels.Params{"n": 2 * s}})
			}
			for _, sp := range specs {
				if err := check(sp.name, sp.p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Supervisor work around each call and phase of the MLP model: argument
// setup, the call, sync 2 and sync 3 of an exchange.
const callCycles, phaseCycles = 30, 60

// mlpEstimate models the cycles of the slowest tile with the compiler/cost
// kernel and exchange models (every step is a BSP superstep, so the
// largest tile shares are charged).
func mlpEstimate(p *Problem, g *Grid, precise, conservative bool) Estimate {
	tg := ipu21.IPU21()
	rc, w := ceilDiv(g.maxRows(), g.Q), g.maxCols()
	n := 0
	for j := 0; j < g.C; j++ {
		_, nj := g.Piece(rc, j)
		n = max(n, nj)
	}
	pr := 0
	if precise {
		pr = 1
	}
	var e, chunk Estimate
	chunk.Gemm = int(cost.GemmF16For(conservative, g.Kp, w, rc) + cost.GemmF16For(conservative, w, g.Kp, rc))
	chunk.Elementwise = int(cost.GeluF16(rc*w, pr)) + 4*callCycles
	if p.Biases {
		chunk.Elementwise += addBiasCycles(rc*w/16, rc) + addBiasCycles(n/16, rc) + 2*callCycles
	}
	if g.C > 1 {
		chunk.Copy = int(3*cost.CopyF16(2*n)) + 3*callCycles
		chunk.Reduce = int(cost.ReduceAddF16(n, g.C)) + callCycles
		// The gather is charged as ordinary words: with an even C the
		// scheduler may send it as paired items (partners in one grid
		// row receive each piece at one address), but every tile sends
		// at once and a paired send borrows its partner's lane, so that
		// wins on some grids (the default SigLIP one: half the cycles)
		// and loses on others; the estimate must not count on it.
		gather := 2 * (rc*g.Kp - n)
		chunk.Exchange = int(cost.ExchangePhase(tg, 2*n, gather)+
			cost.ExchangePhase(tg, 2*(rc*g.Kp-n), 2*n*(g.C-1))) + 2*phaseCycles
	} else {
		chunk.Copy = int(2*cost.CopyF16(2*n)) + 2*callCycles
	}
	nb, q := len(p.Blocks), g.Q
	e.Gemm = nb * q * chunk.Gemm
	e.Elementwise = nb * q * chunk.Elementwise
	e.Copy = nb * q * chunk.Copy
	e.Reduce = nb * q * chunk.Reduce
	e.Exchange = nb * q * chunk.Exchange
	if g.Stream {
		panel := g.Kp * w * 2
		s := 0
		for i := 0; i < g.R; i++ {
			_, si := g.Share(panel, i)
			s = max(s, si)
		}
		e.Copy += nb * (int(cost.CopyF16(2*s)+2*cost.CopyF16(s)) + 3*callCycles)
		recv := 2 * (panel - s)
		if g.ColMajor && g.R%2 == 0 {
			recv /= 2 // paired items down the column (see Grid.ColMajor)
		}
		e.Exchange += nb * (int(cost.ExchangePhase(tg, 2*s, recv)) + phaseCycles)
	}
	e.Total = e.Gemm + e.Elementwise + e.Copy + e.Reduce + e.Exchange
	return e
}

// addBiasCycles models add_bias_f16 on rows panel rows of a panel with r
// rows per column group. The reduce-scatter piece (chunkOps) starts at a
// row that differs per tile column; it is charged as starting a group
// (first = 0), which moves a worker's count by at most one group crossing
// (8 bundles).
func addBiasCycles(rows, r int) int {
	return int(cost.AddBiasF16(rows, r, 0))
}

// CodeBytes is the tile code area (the runtime and its kernels), which
// compiler/place puts in [ipu21.EntrySlot, ipu21.HostApertureBase).
const CodeBytes = ipu21.HostApertureBase - ipu21.EntrySlot

// mlpCodeBytes estimates the largest tile image of a candidate: the
// generated supervisor program (SupervisorInstructions) and the kernels,
// whose sizes grow with their unrolled bodies
// (reduce_add_f16: three copies of 3*parts+1 bundles). The estimate is
// a little above the sizes the linker reports, so that a plan it accepts
// links.
func mlpCodeBytes(p *Problem, g *Grid) int {
	pl := &Plan{Problem: p, Grid: *g}
	t := &TileProgram{Row: 0, Col: 0}
	// The widest column block has the most kernel work; its code is the
	// same size as any other's.
	for j := 0; j < g.C; j++ {
		if g.Cols(j) > g.Cols(t.Col) {
			t.Col = j
		}
	}
	// One block and one chunk, as the loops hold them (blocks x chunks
	// when unrolled would cost more; mlpTimed loops whenever there are
	// several), each argument counted as strided; dispatch, host phases,
	// samples and returns: 64 instructions.
	body := pl.chunkOps(t, 0, 0, 0, 0)
	if g.Stream {
		body = append(body, pl.streamOps(t, 0)...)
		body = append(body, Op{Kind: OpExchange})
	}
	instrs := 64 + SupervisorInstructions(body) + 2*9
	for _, op := range body {
		instrs += 5 * len(op.Args)
	}
	code := 4 * instrs
	code += 2*1100 + 3*160 // two gemm_f16, up to three copy_f16
	if pl.GeluPrecise {
		code += 1300
	} else {
		code += 520
	}
	if g.C > 1 {
		code += 3*8*(3*g.C+1) + 400
	}
	if p.Biases {
		code += 2 * 320
	}
	return code
}

// mlpCandidates enumerates the feasible MLP grids, chunkings and weight
// modes in planner order.
func mlpCandidates(p *Problem, opts Options) ([]Candidate, error) {
	T := opts.Tiles
	groups := ceilDiv(p.N, 16)
	maxC := min(groups, T, MaxReduceParts)
	nb := len(p.Blocks)
	var out []Candidate
	// lastErr is why the last candidate failed; memErr the last memory
	// failure, the usual reason and the most useful to report.
	var lastErr, memErr error
	consider := func(g Grid) bool {
		if err := mlpFeasible(p, &g); err != nil {
			lastErr = fmt.Errorf("grid %dx%d, %d chunks: %w", g.R, g.C, g.Q, err)
			return false
		}
		if n := mlpCodeBytes(p, &g); n > CodeBytes {
			lastErr = fmt.Errorf("grid %dx%d, %d chunks: the tile code (about %d bytes) exceeds the %d-byte code area", g.R, g.C, g.Q, n, CodeBytes)
			return false
		}
		if opts.Fits != nil {
			if err := g.fits(p, opts.Fits); err != nil {
				lastErr = fmt.Errorf("grid %dx%d, %d chunks, streamed weights %v: %w", g.R, g.C, g.Q, g.Stream, err)
				memErr = lastErr
				return false
			}
		}
		out = append(out, Candidate{Grid: g, Estimate: mlpEstimate(p, &g, opts.GeluPrecise, opts.Conservative)})
		return true
	}
	for C := 1; C <= maxC; C++ {
		if opts.ForceC != 0 && C != opts.ForceC {
			continue
		}
		R := min(T/C, p.M)
		if opts.ForceR != 0 {
			R = opts.ForceR
		}
		if R < 1 || R*C > T {
			continue
		}
		g := newGrid(p, R, C)
		minRows := p.M / R
		for _, stream := range []bool{false, true} {
			if opts.ForceStream && !stream {
				continue
			}
			if stream && (R == 1 || (nb == 1 && !opts.ForceStream)) {
				// Nothing to gather with one grid row; with one block its
				// panels are resident anyway (uploaded outside the timed
				// region).
				continue
			}
			g.Stream = stream
			for _, colMajor := range []bool{false, true} {
				if colMajor && (!stream || R%2 != 0) {
					continue // only the streamed weights gain from it
				}
				if opts.ForceColMajor && !colMajor {
					continue
				}
				g.ColMajor = colMajor
				// The fewest rows per chunk take the least memory: when
				// even they do not fit (the weights alone), no chunking
				// will.
				if g.Q = minRows; opts.Fits != nil && opts.ForceQ == 0 {
					if err := g.fits(p, opts.Fits); err != nil {
						memErr = fmt.Errorf("grid %dx%d, streamed weights %v, even with 1-row chunks: %w", g.R, g.C, g.Stream, err)
						continue
					}
				}
				// The fewest chunks that fit, and a few more (smaller GEMMs
				// cost more per row, so more chunks rarely win, but the cost
				// model decides).
				extra := -1
				for Q := 1; Q <= minRows && extra < 2; Q++ {
					if opts.ForceQ != 0 && Q != opts.ForceQ {
						continue
					}
					g.Q = Q
					if C > 1 && ceilDiv(minRows, Q)*g.Kp/16/C < MinReduceChunk/16 {
						// Pieces of a few words make rows the exchange
						// scheduler cannot always encode (sendpicp alignment);
						// keep every piece at least MinReduceChunk values. More
						// chunks only make pieces smaller.
						lastErr = fmt.Errorf("grid %dx%d, %d chunks: pieces below %d values", R, C, Q, MinReduceChunk)
						break
					}
					if consider(g) || extra >= 0 {
						extra++
					} else if mlpCodeBytes(p, &g) > CodeBytes {
						break // more chunks only add code
					}
				}
			}
		}
	}
	if len(out) == 0 {
		if memErr != nil {
			lastErr = memErr
		}
		if lastErr == nil {
			lastErr = fmt.Errorf("no grid")
		}
		return nil, fmt.Errorf("compiler v0: %s m=%d k=%d n=%d blocks=%d does not fit on %d tiles: %w", p.Kind, p.M, p.K, p.N, nb, T, lastErr)
	}
	return out, nil
}

// buildMLP builds the MLP plan's work lists, bindings and phases.
func (pl *Plan) buildMLP() {
	p, g := pl.Problem, &pl.Grid
	logical := g.Logical
	pl.initPrograms()
	for i := 0; i < g.R; i++ {
		for j := 0; j < g.C; j++ {
			t := &pl.Programs[logical(i, j)]
			t.Row, t.Col = i, j
			t.Buffers = mlpBuffers(p, g, i, j)
		}
	}
	piece := func(i, j int) (start, n int) { return g.Piece(g.ChunkRows(i), j) }

	// Activations: every grid tile's "xy", in logical tile order, for the
	// input and the output alike.
	act := func(name string, kind ipuexe.BindingKind) HostBinding {
		hb := HostBinding{Name: name, Kind: kind}
		for i := 0; i < g.R; i++ {
			for j := 0; j < g.C; j++ {
				_, n := piece(i, j)
				hb.Slices = append(hb.Slices, HostSlice{Tile: logical(i, j), Ref: Ref{Buf: "xy"}, Offset: hb.Bytes, Length: g.Q * n * 2})
				hb.Bytes += g.Q * n * 2
			}
		}
		return hb
	}
	pl.Inputs = []HostBinding{act(p.Input, ipuexe.KindInput)}
	pl.Outputs = []HostBinding{act(p.Output, ipuexe.KindOutput)}

	// Weights: per block W1, W2 (column block panels in j order), then
	// b1, b2 with biases.
	for b, blk := range p.Blocks {
		for k, name := range []string{blk.W1, blk.W2} {
			hb := HostBinding{Name: name, Kind: ipuexe.KindWeight}
			for j := 0; j < g.C; j++ {
				panel := g.panelBytes(j)
				if !g.Stream {
					off := g.W1Offset(b, j) + k*panel
					hb.Slices = append(hb.Slices, HostSlice{Tile: logical(0, j), Ref: Ref{Buf: "w", Off: off}, Offset: hb.Bytes, Length: panel})
				} else {
					for i := 0; i < g.R; i++ {
						so, s := g.Share(panel, i)
						if s == 0 {
							continue
						}
						hb.Slices = append(hb.Slices, HostSlice{Tile: logical(i, j), Ref: Ref{Buf: "ws", Off: 2*b*s + k*s},
							Offset: hb.Bytes + so, Length: s})
					}
				}
				hb.Bytes += panel
			}
			pl.Weights = append(pl.Weights, hb)
		}
	}
	if p.Biases {
		for b, blk := range p.Blocks {
			b1 := HostBinding{Name: blk.B1, Kind: ipuexe.KindWeight}
			b2 := HostBinding{Name: blk.B2, Kind: ipuexe.KindWeight}
			for j := 0; j < g.C; j++ {
				off := g.BiasOffset(b, j)
				b1.Slices = append(b1.Slices, HostSlice{Tile: logical(0, j), Ref: Ref{Buf: "bias", Off: off}, Offset: b1.Bytes, Length: 2 * g.Cols(j)})
				b1.Bytes += 2 * g.Cols(j)
				// Every column block needs all of b2 (its pieces span any
				// column): the packed binding repeats it C times.
				b2.Slices = append(b2.Slices, HostSlice{Tile: logical(0, j), Ref: Ref{Buf: "bias", Off: off + 2*g.Cols(j)}, Offset: b2.Bytes, Length: 2 * g.Kp})
				b2.Bytes += 2 * g.Kp
			}
			pl.Weights = append(pl.Weights, b1, b2)
		}
	}

	// Exchange phases.
	initPhase, wPhase, gPhase, rsPhase := -1, -1, -1, -1
	if g.R > 1 && (!g.Stream || p.Biases) {
		initPhase = pl.phase("weights")
		for j := 0; j < g.C; j++ {
			src := &pl.Programs[logical(0, j)]
			for _, buf := range src.Buffers {
				if (buf.Name == "w" && !g.Stream) || buf.Name == "bias" {
					t := XTransfer{Src: src.Logical, SrcRef: Ref{Buf: buf.Name}, Words: buf.Bytes / 4}
					for i := 1; i < g.R; i++ {
						t.Dsts = append(t.Dsts, XDest{Tile: logical(i, j), Ref: Ref{Buf: buf.Name}})
					}
					pl.Exchanges[initPhase].Transfers = append(pl.Exchanges[initPhase].Transfers, t)
				}
			}
		}
	}
	if g.Stream {
		wPhase = pl.phase("streamed weights")
		for j := 0; j < g.C; j++ {
			panel := g.panelBytes(j)
			for i := 0; i < g.R; i++ {
				so, s := g.Share(panel, i)
				if s == 0 {
					continue
				}
				for k := 0; k < 2; k++ {
					t := XTransfer{Src: logical(i, j), SrcRef: Ref{Buf: "wst", Off: k * s}, Words: s / 4}
					for ii := 0; ii < g.R; ii++ {
						if ii != i {
							t.Dsts = append(t.Dsts, XDest{Tile: logical(ii, j), Ref: Ref{Buf: "w", Off: k*panel + so}})
						}
					}
					pl.Exchanges[wPhase].Transfers = append(pl.Exchanges[wPhase].Transfers, t)
				}
			}
		}
	}
	if g.C > 1 {
		gPhase = pl.phase("gather rows")
		rsPhase = pl.phase("reduce-scatter")
		for i := 0; i < g.R; i++ {
			for j := 0; j < g.C; j++ {
				start, n := piece(i, j)
				t := XTransfer{Src: logical(i, j), SrcRef: Ref{Buf: "xg"}, Words: n / 2}
				for jj := 0; jj < g.C; jj++ {
					if jj != j {
						t.Dsts = append(t.Dsts, XDest{Tile: logical(i, jj), Ref: Ref{Buf: "a", Off: 2 * start}})
					}
				}
				pl.Exchanges[gPhase].Transfers = append(pl.Exchanges[gPhase].Transfers, t)
				for q := 0; q < g.C; q++ {
					qs, qn := piece(i, q)
					if q == j {
						continue
					}
					pl.Exchanges[rsPhase].Transfers = append(pl.Exchanges[rsPhase].Transfers, XTransfer{
						Src: logical(i, j), SrcRef: Ref{Buf: "a", Off: 2 * qs}, Words: qn / 2,
						Dsts: []XDest{{Tile: logical(i, q), Ref: Ref{Buf: "red", Off: 2 * j * qn}}}})
				}
			}
		}
	}

	pl.hostCalls(func(t *TileProgram) (init, timed []Op) {
		if initPhase >= 0 {
			init = append(init, Op{Kind: OpExchange, Phase: initPhase})
		}
		return init, pl.mlpTimed(t, wPhase, gPhase, rsPhase)
	})
}

// mlpTimed is a tile's timed work: for each block, the streamed weights
// (if any), then each row chunk; blocks and chunks become runtime loops
// when there are several (see loopOps). Idle tiles take part in every
// exchange phase.
func (pl *Plan) mlpTimed(t *TileProgram, wPhase, gPhase, rsPhase int) []Op {
	g := &pl.Grid
	return loopOps(len(pl.Problem.Blocks), 0, func(b int) []Op {
		var ops []Op
		if g.Stream {
			if t.Active() {
				ops = append(ops, pl.streamOps(t, b)...)
			}
			ops = append(ops, Op{Kind: OpExchange, Phase: wPhase})
		}
		return append(ops, loopOps(g.Q, 1, func(q int) []Op {
			if t.Active() {
				return pl.chunkOps(t, b, q, gPhase, rsPhase)
			}
			if g.C > 1 {
				return []Op{{Kind: OpExchange, Phase: gPhase}, {Kind: OpExchange, Phase: rsPhase}}
			}
			return nil
		})...)
	})
}

// SupervisorInstructions counts the instructions compiler/emit generates
// for ops: one setzi per kernel argument plus the call, five more per
// strided argument and loop level, six per exchange phase, two per sample,
// and per loop its counter set-up and test.
func SupervisorInstructions(ops []Op) int {
	n := 0
	for _, op := range ops {
		switch op.Kind {
		case OpHostSync:
			n++
		case OpHostCopy:
			n += 3
		case OpKernel:
			n += len(op.Args) + 1
			for _, a := range op.Args {
				for _, st := range a.Ref.Step {
					if st != 0 {
						n += 5
					}
				}
			}
		case OpExchange:
			n += 6
		case OpSample:
			n += 4
		case OpLoop:
			n += 9 + SupervisorInstructions(op.Body)
		}
	}
	return n
}

func copyOp(dst, src Ref, bytes int) Op {
	return Op{Kind: OpKernel, Kernel: "copy_f16", Params: kernels.Params{"n": bytes},
		Args: []Arg{{"$m2", dst}, {"$m3", src}}}
}

// streamOps stage block b's weight shares of a tile and copy them into
// its own "w" before the streamed-weights phase.
func (pl *Plan) streamOps(t *TileProgram, b int) []Op {
	g := &pl.Grid
	panel := g.panelBytes(t.Col)
	so, s := g.Share(panel, t.Row)
	if s == 0 {
		return nil
	}
	src := Ref{Buf: "ws", Off: 2 * b * s}
	return []Op{
		copyOp(Ref{Buf: "wst"}, src, 2*s),
		copyOp(Ref{Buf: "w", Off: so}, src, s),
		copyOp(Ref{Buf: "w", Off: panel + so}, Ref{Buf: "ws", Off: 2*b*s + s}, s),
	}
}

// chunkOps is one block's work on one row chunk of an active tile.
func (pl *Plan) chunkOps(t *TileProgram, b, q, gPhase, rsPhase int) []Op {
	p, g := pl.Problem, &pl.Grid
	i, j := t.Row, t.Col
	rc, w := g.ChunkRows(i), g.Cols(j)
	start, n := g.Piece(rc, j)
	xy := Ref{Buf: "xy", Off: q * 2 * n}
	gemm := func(k, c int, out, left, right Ref) Op {
		return Op{Kind: OpKernel, Kernel: kernels.GemmF16For(pl.Conservative), Params: kernels.Params{"k": k, "c": c, "r": rc},
			Args: []Arg{{"$m2", out}, {"$m3", left}, {"$m4", right}}}
	}
	addBias := func(out Ref, bias Ref, rows, first int) Op {
		return Op{Kind: OpKernel, Kernel: "add_bias_f16", Params: kernels.Params{"rows": rows, "r": rc, "first": first},
			Args: []Arg{{"$m2", out}, {"$m3", bias}}}
	}
	precise := 0
	if pl.GeluPrecise {
		precise = 1
	}
	var ops []Op
	if g.C > 1 {
		ops = append(ops,
			copyOp(Ref{Buf: "xg"}, xy, 2*n),
			copyOp(Ref{Buf: "a", Off: 2 * start}, xy, 2*n),
			Op{Kind: OpExchange, Phase: gPhase})
	} else {
		ops = append(ops, copyOp(Ref{Buf: "a"}, xy, 2*n))
	}
	ops = append(ops, gemm(g.Kp, w, Ref{Buf: "c"}, Ref{Buf: "a"}, Ref{Buf: "w", Off: g.W1Offset(b, j)}))
	if p.Biases {
		ops = append(ops, addBias(Ref{Buf: "c"}, Ref{Buf: "bias", Off: g.BiasOffset(b, j)}, rc*w/16, 0))
	}
	ops = append(ops,
		Op{Kind: OpKernel, Kernel: "gelu_f16", Params: kernels.Params{"n": rc * w, "precise": precise},
			Args: []Arg{{"$m2", Ref{Buf: "c"}}, {"$m3", Ref{Buf: "c"}}}},
		gemm(w, g.Kp, Ref{Buf: "a"}, Ref{Buf: "c"}, Ref{Buf: "w", Off: g.W2Offset(b, j)}))
	if g.C > 1 {
		ops = append(ops,
			Op{Kind: OpExchange, Phase: rsPhase},
			copyOp(Ref{Buf: "red", Off: 2 * j * n}, Ref{Buf: "a", Off: 2 * start}, 2*n),
			Op{Kind: OpKernel, Kernel: "reduce_add_f16", Params: kernels.Params{"n": n, "parts": g.C},
				Args: []Arg{{"$m2", xy}, {"$m3", Ref{Buf: "red"}}}})
	} else {
		ops = append(ops, copyOp(xy, Ref{Buf: "a"}, 2*n))
	}
	if p.Biases {
		// The piece is panel rows start/16 .. (start+n)/16 of the chunk's
		// output panel [Kp/16][rc][16]: it begins in column group
		// (start/16)/rc, at row (start/16)%rc.
		row0 := start / 16
		ops = append(ops, addBias(xy, Ref{Buf: "bias", Off: g.BiasOffset(b, j) + 2*w + 32*(row0/rc)}, n/16, row0%rc))
	}
	return ops
}
