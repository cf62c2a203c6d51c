package low

import (
	"fmt"

	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/target"
)

// SlotSize is the host slot of one tile per phase: the host write window
// [0x50000, 0x54000).
const SlotSize = target.HostWriteEnd - target.HostApertureBase

// Buffer is one named range of a tile's memory, placed by compiler/place.
type Buffer struct {
	Name   string
	Bytes  int
	Align  int
	Region kernels.Region
	// Apart names buffers that must not share a memory element with this
	// one (AMP output and left input).
	Apart []string
}

// Ref is a byte offset into a named buffer of the tile it is used on.
type Ref struct {
	Buf string
	Off int
}

// OpKind is the kind of one step of a tile's call.
type OpKind uint8

const (
	// OpHostSync is a host handshake (sync 7): the next host phase.
	OpHostSync OpKind = iota
	// OpHostCopy copies Bytes from the host window to Dst (after a
	// handshake whose phase uploaded them).
	OpHostCopy
	// OpKernel calls a kernel specialisation.
	OpKernel
	// OpExchange runs device exchange phase Phase (sync 3 + the row).
	OpExchange
	// OpSample stores the cycle counter: Sample 0 = start, 1 = end.
	OpSample
)

// Arg is one kernel argument register and the address it gets.
type Arg struct {
	Reg string
	Ref Ref
}

// Op is one step of a tile's call.
type Op struct {
	Kind   OpKind
	Dst    Ref // OpHostCopy
	Bytes  int // OpHostCopy
	Kernel string
	Params kernels.Params
	Args   []Arg
	Phase  int // OpExchange
	Sample int // OpSample
}

// Call names of the v0 runtime, and their commands.
const (
	CallInitialize = "initialize"
	CallRun        = "run"
)

// TileProgram is the work list of one tile.
type TileProgram struct {
	Logical, Physical int
	Row, Col          int // grid position; -1 for an inactive tile
	Buffers           []Buffer
	// Calls are the steps of "initialize" (0) and "run" (1).
	Calls [2][]Op
}

// Active reports whether the tile computes.
func (t *TileProgram) Active() bool { return t.Row >= 0 }

// XDest is one destination of an exchange transfer.
type XDest struct {
	Tile int // logical
	Ref  Ref
}

// XTransfer moves Words 32-bit words from Src's SrcRef to every destination.
type XTransfer struct {
	Src    int // logical
	SrcRef Ref
	Words  int
	Dsts   []XDest
}

// XPhase is one device exchange phase.
type XPhase struct {
	ID        int
	Name      string
	Transfers []XTransfer
}

// HostSlice places a byte range of a host tensor on one tile.
type HostSlice struct {
	Tile   int // logical
	Ref    Ref
	Offset int // in the (packed) host tensor
	Length int
}

// HostBinding is a host tensor in its host (packed) layout.
type HostBinding struct {
	Name   string
	Kind   ipuexe.BindingKind
	Bytes  int
	Slices []HostSlice
}

// HostTransfer moves part of a binding slice through the tile's slot.
type HostTransfer struct {
	Kind        ipuexe.BindingKind
	Binding     int // index in Plan.Inputs/Outputs/Weights
	Slice       int
	SliceOffset int
	Length      int
	Tile        int // logical: its slot
}

// HostCall is one host call: its phases' transfers.
type HostCall struct {
	Name    string
	Command uint32
	Phases  [][]HostTransfer
}

// Grid is the v0 tile grid: R row blocks of M, C column blocks of N (in
// 16-column groups).
type Grid struct {
	R, C       int
	RowStart   []int // R+1 row boundaries
	GroupStart []int // C+1 boundaries in 16-column groups of N
	Kp, Np     int   // K and N rounded up to 16
	// ChunkStart (MLP): for each row block, C+1 boundaries of the
	// reduce-scatter chunks in units of 4 values of the flat partial panel.
	ChunkStart [][]int
}

// Rows is the size of row block i; Cols the padded width of column block j.
func (g *Grid) Rows(i int) int { return g.RowStart[i+1] - g.RowStart[i] }
func (g *Grid) Cols(j int) int { return 16 * (g.GroupStart[j+1] - g.GroupStart[j]) }

// Chunk returns the start and length (values) of chunk j of row block i.
func (g *Grid) Chunk(i, j int) (start, n int) {
	return 4 * g.ChunkStart[i][j], 4 * (g.ChunkStart[i][j+1] - g.ChunkStart[i][j])
}

// Estimate is the v0 cost model's breakdown for the slowest tile (cycles).
type Estimate struct {
	Gemm, Elementwise, Reduce, Exchange, Total int
}

// Plan is the low-level program of the whole package.
type Plan struct {
	Problem   *Problem
	Tiles     int
	Grid      Grid
	Estimate  Estimate
	Programs  []TileProgram
	Exchanges []XPhase
	Inputs    []HostBinding
	Weights   []HostBinding
	Outputs   []HostBinding
	Calls     []HostCall
	// GeluPrecise selects gelu_f16 precise=1.
	GeluPrecise bool
}

// Options configure Lower.
type Options struct {
	Tiles int
	// Fits reports whether a tile's buffers can be placed (compiler/place);
	// nil accepts every grid.
	Fits func([]Buffer) error
	// ForceR and ForceC force the grid (R rows, C columns) instead of the
	// v0 choice (tests); 0 leaves a dimension to the planner.
	ForceR, ForceC int
	// GeluPrecise selects gelu_f16 precise=1 (f32 steps, 22 bundles per 4
	// values) instead of the fast f16 form (9 bundles, |error| <= 2.1e-3
	// before GEMM2, well inside the output tolerance).
	GeluPrecise bool
}

// split divides n into k balanced consecutive parts, returning k+1 bounds.
func split(n, k int) []int {
	b := make([]int, k+1)
	for i := 0; i <= k; i++ {
		b[i] = i * n / k
	}
	return b
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// MinReduceChunk is the smallest reduce-scatter chunk (values) v0 plans.
const MinReduceChunk = 64

// MaxReduceParts is reduce_add_f16's part limit, which bounds C for the MLP.
const MaxReduceParts = 85

// gemmCycles is the v0 model of gemm_f16 (fitted to kernels/bench runs:
// per 16x16 weight block 24*ceil(r/6) worker cycles + ~52 supervisor
// cycles, plus a drain per column group).
func gemmCycles(k, c, r int) int {
	return (c/16)*(k/16)*(24*ceilDiv(r, 6)+52) + (c/16)*60
}

func exchangeCycles(words int) int {
	if words == 0 {
		return 0
	}
	return words + target.GlobalSyncCycles + 1 + target.MaxTimeToMux + target.PayloadLatency + 44
}

// newGrid builds the grid for R x C.
func newGrid(p *Problem, R, C int) Grid {
	g := Grid{R: R, C: C, Kp: 16 * ceilDiv(p.K, 16), Np: 16 * ceilDiv(p.N, 16)}
	g.RowStart = split(p.M, R)
	g.GroupStart = split(g.Np/16, C)
	if p.Kind == KindMLP {
		for i := 0; i < R; i++ {
			g.ChunkStart = append(g.ChunkStart, split(g.Rows(i)*g.Kp/4, C))
		}
	}
	return g
}

// fits checks every distinct tile shape of the grid.
func (g *Grid) fits(p *Problem, fits func([]Buffer) error) error {
	seen := map[[3]int]bool{}
	for i := 0; i < g.R; i++ {
		for j := 0; j < g.C; j++ {
			key := [3]int{g.Rows(i), g.Cols(j), 0}
			if g.ChunkStart != nil {
				_, key[2] = g.Chunk(i, j)
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			if err := fits(tileBuffers(p, g, i, j)); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxRows, maxCols and maxChunk are the largest tile's shares.
func (g *Grid) maxRows() int {
	m := 0
	for i := 0; i < g.R; i++ {
		m = max(m, g.Rows(i))
	}
	return m
}

func (g *Grid) maxCols() int {
	m := 0
	for j := 0; j < g.C; j++ {
		m = max(m, g.Cols(j))
	}
	return m
}

func (g *Grid) maxChunk() int {
	m := 0
	for i := range g.ChunkStart {
		for j := 0; j < g.C; j++ {
			_, n := g.Chunk(i, j)
			m = max(m, n)
		}
	}
	return m
}

// estimate models the slowest tile of a grid.
func estimate(p *Problem, g *Grid, precise bool) Estimate {
	r, w := g.maxRows(), g.maxCols()
	var e Estimate
	e.Gemm = gemmCycles(g.Kp, w, r)
	if g.C > 1 {
		e.Exchange += exchangeCycles(r * g.Kp / 2)
	}
	if p.Kind == KindMLP {
		e.Gemm += gemmCycles(w, g.Kp, r)
		per := 9
		if precise {
			per = 22
		}
		e.Elementwise = ceilDiv(r*w/4, 6) * per * 6
		if g.C > 1 {
			n := g.maxChunk()
			e.Reduce = ceilDiv(n/4, 6)*(3*g.C+1)*6 + ceilDiv(n/4, 6)*6
			e.Exchange += exchangeCycles(r * g.Kp / 2 * (g.C - 1) / g.C)
		}
	}
	e.Total = e.Gemm + e.Elementwise + e.Reduce + e.Exchange
	return e
}

// Lower chooses the grid and builds every tile's work list.
func Lower(p *Problem, opts Options) (*Plan, error) {
	T := opts.Tiles
	if T < 1 || T > target.Tiles {
		return nil, fmt.Errorf("compiler: %d tiles: want 1..%d", T, target.Tiles)
	}
	precise := opts.GeluPrecise
	groups := ceilDiv(p.N, 16)
	maxC := min(groups, T)
	if p.Kind == KindMLP {
		maxC = min(maxC, MaxReduceParts)
	}
	var best *Grid
	var bestE Estimate
	var lastErr error
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
		if ceilDiv(p.M, R) > kernels.GemmMaxRows {
			lastErr = fmt.Errorf("%d rows per tile exceed the gemm kernel's %d", ceilDiv(p.M, R), kernels.GemmMaxRows)
			continue
		}
		g := newGrid(p, R, C)
		if p.Kind == KindMLP && C > 1 && (p.M/R)*g.Kp/MinReduceChunk < C {
			// Reduce-scatter chunks of a few words make rows the exchange
			// scheduler cannot always encode (sendpicp alignment); keep
			// every chunk at least MinReduceChunk values.
			continue
		}
		if opts.Fits != nil {
			if err := g.fits(p, opts.Fits); err != nil {
				lastErr = fmt.Errorf("grid %dx%d: %w", R, C, err)
				continue
			}
		}
		e := estimate(p, &g, precise)
		if best == nil || e.Total < bestE.Total {
			gg := g
			best, bestE = &gg, e
		}
	}
	if best == nil {
		if lastErr == nil {
			lastErr = fmt.Errorf("no grid")
		}
		return nil, fmt.Errorf("compiler v0: %s m=%d k=%d n=%d does not fit on %d tiles: %w", p.Kind, p.M, p.K, p.N, T, lastErr)
	}
	pl := &Plan{Problem: p, Tiles: T, Grid: *best, Estimate: bestE, GeluPrecise: precise}
	pl.build()
	return pl, nil
}

// tileBuffers are the buffers of grid tile (i, j).
func tileBuffers(p *Problem, g *Grid, i, j int) []Buffer {
	r, w := g.Rows(i), g.Cols(j)
	bufs := []Buffer{
		{Name: "a", Bytes: r * g.Kp * 2, Align: 32, Apart: []string{"c"}},
		{Name: "w", Bytes: g.Kp * w * 2, Align: 32, Region: kernels.Interleaved},
		{Name: "c", Bytes: r * w * 2, Align: 32, Apart: []string{"a"}},
	}
	if p.Kind == KindMLP {
		bufs[1].Bytes *= 2 // W1 panel then W2 panel
		if g.C > 1 {
			_, n := g.Chunk(i, j)
			if n > 0 {
				bufs = append(bufs, Buffer{Name: "red", Bytes: 2 * n * g.C, Align: 32, Apart: []string{"a"}})
			}
		}
	}
	return bufs
}

// pieces cuts a slice into slot-sized parts.
func pieces(length int) [][2]int {
	var ps [][2]int
	for off := 0; off < length; off += SlotSize {
		ps = append(ps, [2]int{off, min(SlotSize, length-off)})
	}
	return ps
}

type upload struct {
	kind    ipuexe.BindingKind
	binding int
	slice   int
	dst     Ref
	length  int
}

func (pl *Plan) build() {
	p, g := pl.Problem, &pl.Grid
	logical := func(i, j int) int { return i*g.C + j }
	pl.Programs = make([]TileProgram, pl.Tiles)
	for l := range pl.Programs {
		pl.Programs[l] = TileProgram{Logical: l, Physical: target.LogicalToPhysical(l), Row: -1, Col: -1}
	}
	for i := 0; i < g.R; i++ {
		for j := 0; j < g.C; j++ {
			t := &pl.Programs[logical(i, j)]
			t.Row, t.Col = i, j
			t.Buffers = tileBuffers(p, g, i, j)
		}
	}
	// Bindings.
	x := HostBinding{Name: p.Input, Kind: ipuexe.KindInput}
	for i := 0; i < g.R; i++ {
		n := g.Rows(i) * g.Kp * 2
		x.Slices = append(x.Slices, HostSlice{Tile: logical(i, 0), Ref: Ref{Buf: "a"}, Offset: x.Bytes, Length: n})
		x.Bytes += n
	}
	pl.Inputs = []HostBinding{x}
	w1 := HostBinding{Name: p.W1, Kind: ipuexe.KindWeight}
	w2 := HostBinding{Name: p.W2, Kind: ipuexe.KindWeight}
	for j := 0; j < g.C; j++ {
		n := g.Kp * g.Cols(j) * 2
		w1.Slices = append(w1.Slices, HostSlice{Tile: logical(0, j), Ref: Ref{Buf: "w"}, Offset: w1.Bytes, Length: n})
		w1.Bytes += n
		if p.Kind == KindMLP {
			w2.Slices = append(w2.Slices, HostSlice{Tile: logical(0, j), Ref: Ref{Buf: "w", Off: n}, Offset: w2.Bytes, Length: n})
			w2.Bytes += n
		}
	}
	pl.Weights = []HostBinding{w1}
	if p.Kind == KindMLP {
		pl.Weights = append(pl.Weights, w2)
	}
	y := HostBinding{Name: p.Output, Kind: ipuexe.KindOutput}
	for i := 0; i < g.R; i++ {
		for j := 0; j < g.C; j++ {
			var s HostSlice
			switch {
			case p.Kind == KindGemm:
				s = HostSlice{Tile: logical(i, j), Ref: Ref{Buf: "c"}, Length: g.Rows(i) * g.Cols(j) * 2}
			case g.C == 1:
				s = HostSlice{Tile: logical(i, j), Ref: Ref{Buf: "a"}, Length: g.Rows(i) * g.Kp * 2}
			default:
				_, n := g.Chunk(i, j)
				if n == 0 {
					continue
				}
				s = HostSlice{Tile: logical(i, j), Ref: Ref{Buf: "red"}, Length: 2 * n}
			}
			s.Offset = y.Bytes
			y.Slices = append(y.Slices, s)
			y.Bytes += s.Length
		}
	}
	pl.Outputs = []HostBinding{y}

	// Exchange phases.
	phase := func(name string) int {
		pl.Exchanges = append(pl.Exchanges, XPhase{ID: len(pl.Exchanges), Name: name})
		return len(pl.Exchanges) - 1
	}
	wPhase, xPhase, rsPhase := -1, -1, -1
	if g.R > 1 {
		wPhase = phase("weights")
		for j := 0; j < g.C; j++ {
			src := &pl.Programs[logical(0, j)]
			t := XTransfer{Src: src.Logical, SrcRef: Ref{Buf: "w"}, Words: src.Buffers[1].Bytes / 4}
			for i := 1; i < g.R; i++ {
				t.Dsts = append(t.Dsts, XDest{Tile: logical(i, j), Ref: Ref{Buf: "w"}})
			}
			pl.Exchanges[wPhase].Transfers = append(pl.Exchanges[wPhase].Transfers, t)
		}
	}
	if g.C > 1 {
		xPhase = phase("input rows")
		for i := 0; i < g.R; i++ {
			t := XTransfer{Src: logical(i, 0), SrcRef: Ref{Buf: "a"}, Words: g.Rows(i) * g.Kp / 2}
			for j := 1; j < g.C; j++ {
				t.Dsts = append(t.Dsts, XDest{Tile: logical(i, j), Ref: Ref{Buf: "a"}})
			}
			pl.Exchanges[xPhase].Transfers = append(pl.Exchanges[xPhase].Transfers, t)
		}
		if p.Kind == KindMLP {
			rsPhase = phase("reduce-scatter")
			for i := 0; i < g.R; i++ {
				for j := 0; j < g.C; j++ {
					for q := 0; q < g.C; q++ {
						start, n := g.Chunk(i, q)
						if q == j || n == 0 {
							continue
						}
						pl.Exchanges[rsPhase].Transfers = append(pl.Exchanges[rsPhase].Transfers, XTransfer{
							Src: logical(i, j), SrcRef: Ref{Buf: "a", Off: 2 * start}, Words: n / 2,
							Dsts: []XDest{{Tile: logical(i, q), Ref: Ref{Buf: "red", Off: 2 * j * n}}}})
					}
				}
			}
		}
	}

	// Host calls: uploads per tile, one slot-sized piece per phase.
	uploads := func(kind ipuexe.BindingKind, bs []HostBinding) map[int][]upload {
		m := map[int][]upload{}
		for b, hb := range bs {
			for s, sl := range hb.Slices {
				m[sl.Tile] = append(m[sl.Tile], upload{kind, b, s, sl.Ref, sl.Length})
			}
		}
		return m
	}
	hostPhases := func(up map[int][]upload) (phases [][]HostTransfer, copies map[int][][]Op) {
		copies = map[int][][]Op{}
		for l := 0; l < pl.Tiles; l++ {
			k := 0
			for _, u := range up[l] {
				for _, pc := range pieces(u.length) {
					for len(phases) <= k {
						phases = append(phases, nil)
					}
					phases[k] = append(phases[k], HostTransfer{Kind: u.kind, Binding: u.binding, Slice: u.slice,
						SliceOffset: pc[0], Length: pc[1], Tile: l})
					for len(copies[l]) <= k {
						copies[l] = append(copies[l], nil)
					}
					copies[l][k] = append(copies[l][k], Op{Kind: OpHostCopy, Dst: Ref{Buf: u.dst.Buf, Off: u.dst.Off + pc[0]}, Bytes: pc[1]})
					k++
				}
			}
		}
		return phases, copies
	}
	initPhases, initCopies := hostPhases(uploads(ipuexe.KindWeight, pl.Weights))
	runPhases, runCopies := hostPhases(uploads(ipuexe.KindInput, pl.Inputs))
	// Outputs: one piece per phase per tile.
	var outPhases [][]HostTransfer
	for s, sl := range pl.Outputs[0].Slices {
		for k, pc := range pieces(sl.Length) {
			for len(outPhases) <= k {
				outPhases = append(outPhases, nil)
			}
			outPhases[k] = append(outPhases[k], HostTransfer{Kind: ipuexe.KindOutput, Binding: 0, Slice: s,
				SliceOffset: pc[0], Length: pc[1], Tile: sl.Tile})
		}
	}
	pl.Calls = []HostCall{
		{Name: CallInitialize, Command: 0, Phases: initPhases},
		{Name: CallRun, Command: 1, Phases: append(runPhases, outPhases...)},
	}

	for l := range pl.Programs {
		t := &pl.Programs[l]
		var init, run []Op
		for k := range initPhases {
			init = append(init, Op{Kind: OpHostSync})
			if k < len(initCopies[l]) {
				init = append(init, initCopies[l][k]...)
			}
		}
		if wPhase >= 0 {
			init = append(init, Op{Kind: OpExchange, Phase: wPhase})
		}
		for k := range runPhases {
			run = append(run, Op{Kind: OpHostSync})
			if k < len(runCopies[l]) {
				run = append(run, runCopies[l][k]...)
			}
		}
		run = append(run, Op{Kind: OpSample, Sample: 0})
		if xPhase >= 0 {
			run = append(run, Op{Kind: OpExchange, Phase: xPhase})
		}
		if t.Active() {
			run = append(run, pl.compute(t, rsPhase)...)
		} else if rsPhase >= 0 {
			run = append(run, Op{Kind: OpExchange, Phase: rsPhase})
		}
		run = append(run, Op{Kind: OpSample, Sample: 1})
		for range outPhases {
			run = append(run, Op{Kind: OpHostSync})
		}
		t.Calls = [2][]Op{init, run}
	}
}

// compute is the kernel sequence of an active tile's "run".
func (pl *Plan) compute(t *TileProgram, rsPhase int) []Op {
	p, g := pl.Problem, &pl.Grid
	r, w := g.Rows(t.Row), g.Cols(t.Col)
	gemm := func(k, c int, out, left, right Ref) Op {
		return Op{Kind: OpKernel, Kernel: "gemm_f16", Params: kernels.Params{"k": k, "c": c, "r": r},
			Args: []Arg{{"$m2", out}, {"$m3", left}, {"$m4", right}}}
	}
	ops := []Op{gemm(g.Kp, w, Ref{Buf: "c"}, Ref{Buf: "a"}, Ref{Buf: "w"})}
	if p.Kind == KindGemm {
		return ops
	}
	precise := 0
	if pl.GeluPrecise {
		precise = 1
	}
	ops = append(ops,
		Op{Kind: OpKernel, Kernel: "gelu_f16", Params: kernels.Params{"n": r * w, "precise": precise},
			Args: []Arg{{"$m2", Ref{Buf: "c"}}, {"$m3", Ref{Buf: "c"}}}},
		gemm(w, g.Kp, Ref{Buf: "a"}, Ref{Buf: "c"}, Ref{Buf: "w", Off: g.Kp * w * 2}))
	if g.C == 1 {
		return ops
	}
	ops = append(ops, Op{Kind: OpExchange, Phase: rsPhase})
	start, n := g.Chunk(t.Row, t.Col)
	if n == 0 {
		return ops
	}
	return append(ops,
		Op{Kind: OpKernel, Kernel: "copy_f16", Params: kernels.Params{"n": 2 * n},
			Args: []Arg{{"$m2", Ref{Buf: "red", Off: 2 * t.Col * n}}, {"$m3", Ref{Buf: "a", Off: 2 * start}}}},
		Op{Kind: OpKernel, Kernel: "reduce_add_f16", Params: kernels.Params{"n": n, "parts": g.C},
			Args: []Arg{{"$m2", Ref{Buf: "red"}}, {"$m3", Ref{Buf: "red"}}}})
}
