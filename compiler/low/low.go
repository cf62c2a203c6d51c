package low

import (
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
	// GEMM block").
	Node, Why string
}

// Call names of the tile runtime, and their commands.
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
	// Block says which rectangle of the tensor's matrix the slice holds
	// and in which element order, so that the host packs and unpacks
	// every slice generically. FromMid sets it on every slice.
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
	// Rows and Cols are the tensor's real matrix shape.
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

// Plan is the low-level program of the whole package.
type Plan struct {
	Problem *Problem
	Tiles   int
	// Estimate is the mid plan's cost record (mid.Plan.Estimate) and
	// the host skew (HostSkewCycles, as copy).
	Estimate  cost.Estimate
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
	// Mid is the compiler/mid plan this plan was lowered from.
	Mid *mid.Plan
	// Passes are the reports of Optimize, when it ran.
	Passes []PassReport
}

// Options configure FromMid.
type Options struct {
	Tiles int
	// Fits reports whether a tile's buffers can be placed (compiler/place);
	// nil accepts every grid.
	Fits func([]Buffer) error
	// MaxPhases is how many exchange phases the runtime's row table holds
	// (compiler/place.MaxRowPhases); 0 sets no limit. A mid plan with more
	// is refused (so that the rerank drops it).
	MaxPhases int
	// GeluPrecise selects gelu_f16 precise=1 (f32 steps, 23 bundles per 4
	// values) instead of the fast f16 form (9 bundles, |error| <= 2.1e-3
	// before GEMM2, well inside the output tolerance).
	GeluPrecise bool
	// Conservative plans and costs the GEMM kernel that is correct under
	// the emulator's conservative assumptions (kernels.GemmF16For(true):
	// no AMP state kept between worker runs) instead of gemm_f16.
	Conservative bool
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

// CodeBytes is the tile code area (the runtime and its kernels), which
// compiler/place puts in [ipu21.EntrySlot, ipu21.HostApertureBase).
const CodeBytes = ipu21.HostApertureBase - ipu21.EntrySlot

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
