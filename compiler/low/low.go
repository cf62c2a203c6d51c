package low

import (
	"fmt"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
)

// SlotSize is the host slot of one tile per phase: the host write window
// [0x50000, 0x54000).
const SlotSize = ipu21.HostWriteEnd - ipu21.HostApertureBase

// Buffer is one named range of a tile's memory, placed by compiler/place.
type Buffer struct {
	Name   string
	Bytes  int
	Align  int
	Region kernels.Region
	// Apart names buffers that must not share a memory element with this
	// one (AMP output and left input).
	Apart []string
	// Live, when Live[1] > 0, is the span [Live[0], Live[1]) of program
	// stages in which the buffer holds data (stages are the lowering's
	// own numbering, e.g. one per GEMM); buffers whose spans do not
	// overlap may share memory. Zero: live for the whole program.
	Live [2]int
}

// Overlaps reports whether two buffers can hold data at the same time.
func (b *Buffer) Overlaps(o *Buffer) bool {
	if b.Live[1] <= 0 || o.Live[1] <= 0 {
		return true
	}
	return b.Live[0] < o.Live[1] && o.Live[0] < b.Live[1]
}

// Ref is a byte offset into a named buffer of the tile it is used on.
type Ref struct {
	Buf string
	Off int
	// Step[d] is added to Off per iteration of the enclosing OpLoop at
	// depth d (0 the outermost): the address in iteration (k0, k1) is
	// Off + k0*Step[0] + k1*Step[1].
	Step [MaxLoopDepth]int
}

// MaxLoopDepth is how deeply OpLoops may nest (blocks, then row chunks).
const MaxLoopDepth = 2

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
	// OpLoop runs Body Count times (the blocks and row chunks of an MLP,
	// whose unrolled code would not fit the code area); refs in Body
	// advance by their Step per iteration.
	OpLoop
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
	Phase  int  // OpExchange
	Sample int  // OpSample
	Count  int  // OpLoop
	Body   []Op // OpLoop
	// Depth (OpLoop) is the loop's level: its refs advance by Step[Depth]
	// and its index has its own word (an outer level may be absent).
	Depth int
	// Node and Why are the step's provenance for profiles: the graph
	// node it computes or moves and a human reason ("fc1 cell (i,j,p):
	// GEMM block"). Plans lowered from compiler/mid set them; the v0
	// family leaves them empty (profiles derive them from its grid).
	Node, Why string
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
	// Block, when set, says which rectangle of the tensor's matrix the
	// slice holds and in which element order (plans lowered from
	// compiler/mid); the host packs and unpacks such slices generically.
	// Nil for the v0 family, whose layouts compiler/driver knows.
	Block *Rect
}

// Rect is a rectangle of a matrix in padded coordinates (rows x columns,
// columns rounded up to 16 for AMP orders; padding is zero) and the
// element order of its bytes.
type Rect struct {
	Rows, Cols mid.Span
	Order      mid.Order
}

// HostBinding is a host tensor in its host (packed) layout.
type HostBinding struct {
	Name   string
	Kind   ipuexe.BindingKind
	Bytes  int
	Slices []HostSlice
	// Rows and Cols are the tensor's real matrix shape (for slices with
	// a Block; zero otherwise).
	Rows, Cols int
	// PadRows, when above Rows, is the rows of the padded matrix the
	// blocks may reach (row chunks: the last chunk's rows past Rows are
	// zero padding on upload and dropped on read-back).
	PadRows int
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
	// Q (MLP) is the number of row chunks of every row block: the tile
	// runs its kernels on ChunkRows(i) rows at a time (see mlp.go).
	Q int
	// Stream (MLP): the weights are stored in shares over the grid
	// column and gathered into "w" at the start of each block, instead of
	// being resident for every block.
	Stream bool
	// ColMajor (MLP) numbers the grid tiles column by column (logical
	// tile j*R + i instead of i*C + j), so that partner tiles (logical 2k,
	// 2k+1) share a grid column: the streamed weights, multicast down a
	// column, can then go as paired 64-bit items.
	ColMajor bool
}

// Logical is the logical tile of grid position (i, j).
func (g *Grid) Logical(i, j int) int {
	if g.ColMajor {
		return j*g.R + i
	}
	return i*g.C + j
}

// Rows is the size of row block i; Cols the padded width of column block j.
func (g *Grid) Rows(i int) int { return g.RowStart[i+1] - g.RowStart[i] }
func (g *Grid) Cols(j int) int { return 16 * (g.GroupStart[j+1] - g.GroupStart[j]) }

// Estimate is the v0 cost model's breakdown for the slowest tile (cycles).
type Estimate struct {
	Gemm, Elementwise, Reduce, Copy, Exchange, Total int
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
	// Conservative: the GEMMs use kernels.GemmF16For(true), correct
	// under the emulator's conservative assumptions.
	Conservative bool
	// Mid is the compiler/mid plan this plan was lowered from (nil for
	// the v0 family, whose shape is Grid).
	Mid *mid.Plan
	// Passes are the reports of Optimize, when it ran.
	Passes []PassReport
}

// Options configure Lower.
type Options struct {
	Tiles int
	// Fits reports whether a tile's buffers can be placed (compiler/place);
	// nil accepts every grid.
	Fits func([]Buffer) error
	// MaxPhases is how many exchange phases the runtime's row table holds
	// (compiler/place.MaxRowPhases); 0 sets no limit. A mid plan with more
	// is refused (so that the rerank drops it).
	MaxPhases int
	// ForceR and ForceC force the grid (R rows, C columns) instead of the
	// v0 choice (tests); 0 leaves a dimension to the planner.
	ForceR, ForceC int
	// ForceQ forces the MLP's row chunks per row block (tests); 0 lets
	// the cost model choose.
	ForceQ int
	// ForceStream forces streamed MLP weights (tests: the mode is
	// otherwise chosen only when resident weights do not fit).
	ForceStream bool
	// ForceColMajor forces the column-major tile numbering of streamed
	// weights (tests; needs ForceStream and an even grid row count).
	ForceColMajor bool
	// GeluPrecise selects gelu_f16 precise=1 (f32 steps, 23 bundles per 4
	// values) instead of the fast f16 form (9 bundles, |error| <= 2.1e-3
	// before GEMM2, well inside the output tolerance).
	GeluPrecise bool
	// Conservative plans and costs the GEMM kernel that is correct under
	// the emulator's conservative assumptions (kernels.GemmF16For(true):
	// no AMP state kept between worker runs) instead of gemm_f16.
	Conservative bool
	// Only, when set, keeps only the candidate it names (the choice a
	// package records, so that its plan can be regenerated).
	Only *Choice
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

// exchangeCycles is the model of a phase in which the busiest tile moves
// words words, in the form every plan's estimate uses (midEstimate, the
// MLP's): the endpoint bound with latency and global sync
// (cost.ExchangePhase) plus the supervisor's phase overhead.
func exchangeCycles(words int) int {
	if words == 0 {
		return 0
	}
	return int(cost.ExchangePhase(ipu21.IPU21(), 4*words, 4*words)) + phaseCycles
}

// newGrid builds the grid for R x C.
func newGrid(p *Problem, R, C int) Grid {
	g := Grid{R: R, C: C, Kp: 16 * ceilDiv(p.K, 16), Np: 16 * ceilDiv(p.N, 16)}
	g.RowStart = split(p.M, R)
	g.GroupStart = split(g.Np/16, C)
	return g
}

// fits checks every distinct tile shape of the grid.
func (g *Grid) fits(p *Problem, fits func([]Buffer) error) error {
	seen := map[[3]int]bool{}
	for i := 0; i < g.R; i++ {
		for j := 0; j < g.C; j++ {
			key := [3]int{g.Rows(i), g.Cols(j), j}
			if p.Kind == KindGemm {
				key[2] = 0 // the GEMM's buffers depend on the shape only
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			bufs := tileBuffers(p, g, i, j)
			if p.Kind == KindMLP {
				bufs = mlpBuffers(p, g, i, j)
			}
			if err := fits(bufs); err != nil {
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

// estimate models the slowest tile of a GEMM grid.
func estimate(g *Grid, conservative bool) Estimate {
	r, w := g.maxRows(), g.maxCols()
	var e Estimate
	// The exact kernel model (compiler/cost) and the supervisor's call.
	e.Gemm = int(cost.GemmF16For(conservative, g.Kp, w, r)) + callCycles
	if g.C > 1 {
		e.Exchange += exchangeCycles(r * g.Kp / 2)
	}
	e.Total = e.Gemm + e.Elementwise + e.Reduce + e.Exchange
	return e
}

// Lower chooses the grid and builds every tile's work list.
func Lower(p *Problem, opts Options) (*Plan, error) {
	T := opts.Tiles
	if T < 1 || T > ipu21.Tiles {
		return nil, fmt.Errorf("compiler: %d tiles: want 1..%d", T, ipu21.Tiles)
	}
	cands, err := Candidates(p, opts, 1)
	if err != nil {
		return nil, err
	}
	return Build(p, opts, cands[0]), nil
}

// gemmCandidates enumerates the feasible GEMM grids in planner order.
func gemmCandidates(p *Problem, opts Options) ([]Candidate, error) {
	T := opts.Tiles
	groups := ceilDiv(p.N, 16)
	maxC := min(groups, T)
	var out []Candidate
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
		if opts.Fits != nil {
			if err := g.fits(p, opts.Fits); err != nil {
				lastErr = fmt.Errorf("grid %dx%d: %w", R, C, err)
				continue
			}
		}
		out = append(out, Candidate{Grid: g, Estimate: estimate(&g, opts.Conservative)})
	}
	if len(out) == 0 {
		if lastErr == nil {
			lastErr = fmt.Errorf("no grid")
		}
		return nil, fmt.Errorf("compiler v0: %s m=%d k=%d n=%d does not fit on %d tiles: %w", p.Kind, p.M, p.K, p.N, T, lastErr)
	}
	return out, nil
}

// tileBuffers are the buffers of GEMM grid tile (i, j).
func tileBuffers(_ *Problem, g *Grid, i, j int) []Buffer {
	r, w := g.Rows(i), g.Cols(j)
	bufs := []Buffer{
		{Name: "a", Bytes: r * g.Kp * 2, Align: 32, Apart: []string{"c"}},
		{Name: "w", Bytes: g.Kp * w * 2, Align: 32, Region: kernels.Interleaved},
		{Name: "c", Bytes: r * w * 2, Align: 32, Apart: []string{"a"}},
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

// build builds a GEMM plan's work lists.
func (pl *Plan) build() {
	p, g := pl.Problem, &pl.Grid
	logical := func(i, j int) int { return i*g.C + j }
	pl.initPrograms()
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
	for j := 0; j < g.C; j++ {
		n := g.Kp * g.Cols(j) * 2
		w1.Slices = append(w1.Slices, HostSlice{Tile: logical(0, j), Ref: Ref{Buf: "w"}, Offset: w1.Bytes, Length: n})
		w1.Bytes += n
	}
	pl.Weights = []HostBinding{w1}
	y := HostBinding{Name: p.Output, Kind: ipuexe.KindOutput}
	for i := 0; i < g.R; i++ {
		for j := 0; j < g.C; j++ {
			s := HostSlice{Tile: logical(i, j), Ref: Ref{Buf: "c"}, Length: g.Rows(i) * g.Cols(j) * 2, Offset: y.Bytes}
			y.Slices = append(y.Slices, s)
			y.Bytes += s.Length
		}
	}
	pl.Outputs = []HostBinding{y}

	// Exchange phases.
	wPhase, xPhase := -1, -1
	if g.R > 1 {
		wPhase = pl.phase("weights")
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
		xPhase = pl.phase("input rows")
		for i := 0; i < g.R; i++ {
			t := XTransfer{Src: logical(i, 0), SrcRef: Ref{Buf: "a"}, Words: g.Rows(i) * g.Kp / 2}
			for j := 1; j < g.C; j++ {
				t.Dsts = append(t.Dsts, XDest{Tile: logical(i, j), Ref: Ref{Buf: "a"}})
			}
			pl.Exchanges[xPhase].Transfers = append(pl.Exchanges[xPhase].Transfers, t)
		}
	}
	pl.hostCalls(func(t *TileProgram) (init, timed []Op) {
		if wPhase >= 0 {
			init = append(init, Op{Kind: OpExchange, Phase: wPhase})
		}
		if xPhase >= 0 {
			timed = append(timed, Op{Kind: OpExchange, Phase: xPhase})
		}
		if t.Active() {
			r, w := g.Rows(t.Row), g.Cols(t.Col)
			timed = append(timed, Op{Kind: OpKernel, Kernel: kernels.GemmF16For(pl.Conservative), Params: kernels.Params{"k": g.Kp, "c": w, "r": r},
				Args: []Arg{{"$m2", Ref{Buf: "c"}}, {"$m3", Ref{Buf: "a"}}, {"$m4", Ref{Buf: "w"}}}})
		}
		return init, timed
	})
}

// initPrograms makes every tile's (inactive) program.
func (pl *Plan) initPrograms() {
	pl.Programs = make([]TileProgram, pl.Tiles)
	for l := range pl.Programs {
		pl.Programs[l] = TileProgram{Logical: l, Physical: ipu21.LogicalToPhysical(l), Row: -1, Col: -1}
	}
}

// phase adds an exchange phase and returns its ID.
func (pl *Plan) phase(name string) int {
	pl.Exchanges = append(pl.Exchanges, XPhase{ID: len(pl.Exchanges), Name: name})
	return len(pl.Exchanges) - 1
}

// hostCalls builds the host calls from the bindings and every tile's two
// calls: "initialize" uploads the weights (one slot-sized piece per host
// phase) then runs init; "run" uploads the inputs, samples the start,
// runs timed, samples the end and serves the output read-back phases.
func (pl *Plan) hostCalls(ops func(t *TileProgram) (init, timed []Op)) {
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
	next := map[int]int{} // the next phase of each tile's slot
	for b, ob := range pl.Outputs {
		for s, sl := range ob.Slices {
			for _, pc := range pieces(sl.Length) {
				k := next[sl.Tile]
				next[sl.Tile]++
				for len(outPhases) <= k {
					outPhases = append(outPhases, nil)
				}
				outPhases[k] = append(outPhases[k], HostTransfer{Kind: ipuexe.KindOutput, Binding: b, Slice: s,
					SliceOffset: pc[0], Length: pc[1], Tile: sl.Tile})
			}
		}
	}
	pl.Calls = []HostCall{
		{Name: CallInitialize, Command: 0, Phases: initPhases},
		{Name: CallRun, Command: 1, Phases: append(runPhases, outPhases...)},
	}
	count := func(cs [][]Op) int {
		n := 0
		for _, c := range cs {
			n += len(c)
		}
		return n
	}
	for l := range pl.Programs {
		t := &pl.Programs[l]
		in, timed := ops(t)
		// Sized once: Op is large and there are many tiles.
		init := make([]Op, 0, len(initPhases)+count(initCopies[l])+len(in))
		run := make([]Op, 0, len(runPhases)+count(runCopies[l])+2+len(timed)+len(outPhases))
		for k := range initPhases {
			init = append(init, Op{Kind: OpHostSync})
			if k < len(initCopies[l]) {
				init = append(init, initCopies[l][k]...)
			}
		}
		for k := range runPhases {
			run = append(run, Op{Kind: OpHostSync})
			if k < len(runCopies[l]) {
				run = append(run, runCopies[l][k]...)
			}
		}
		init = append(init, in...)
		run = append(run, Op{Kind: OpSample, Sample: 0})
		run = append(run, timed...)
		run = append(run, Op{Kind: OpSample, Sample: 1})
		for range outPhases {
			run = append(run, Op{Kind: OpHostSync})
		}
		t.Calls = [2][]Op{init, run}
	}
}
