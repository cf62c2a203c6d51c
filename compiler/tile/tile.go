package tile

import (
	"strconv"

	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
)

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
	// every slice generically. Every slice has one: Verify refuses an
	// empty rectangle.
	Block Rect
}

// Rect is a rectangle of a matrix in padded coordinates (rows x columns,
// columns rounded up to 16 for AMP orders; padding is zero) and the
// element order of its bytes.
type Rect struct {
	Rows, Cols Span
	Order      ipuexe.Order
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
	Binding     int // index in Program.Inputs/Outputs/Weights (by Kind)
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

// Program is the per-tile part of a whole package: every tile's work list,
// the device exchange phases, the host bindings and the host calls. It is
// what compiler/place and compiler/emit read, and what the passes rewrite.
type Program struct {
	// Tiles is the number of tiles (len(Programs)).
	Tiles     int
	Programs  []TileProgram
	Exchanges []XPhase
	Inputs    []HostBinding
	Weights   []HostBinding
	Outputs   []HostBinding
	// Calls are the host calls: "initialize" (0) and "run" (1), whose
	// phases the tiles' Calls[0] and Calls[1] serve.
	Calls []HostCall
}

// Span is a half-open interval [Lo, Hi) of rows or columns.
//
// It is defined here, with the IR's host rectangles (Rect), and compiler/mid
// names it (mid.Span = tile.Span): the planner depends on the IR it plans
// for, never the other way round, so that compiler/place and compiler/emit,
// which import only this package, do not depend on the planner.
type Span struct{ Lo, Hi int }

// Len is Hi - Lo.
func (s Span) Len() int { return s.Hi - s.Lo }

// Intersect returns s ∩ o (empty when Lo >= Hi).
func (s Span) Intersect(o Span) Span {
	return Span{max(s.Lo, o.Lo), min(s.Hi, o.Hi)}
}

// String is "[Lo,Hi)" (built without fmt: the lowering formats spans
// into the Why of thousands of ops).
func (s Span) String() string {
	return "[" + strconv.Itoa(s.Lo) + "," + strconv.Itoa(s.Hi) + ")"
}

// KernelOp is op (its Args, Node and Why) as a call of the kernel spec s:
// the lowering and the passes build every kernel call they emit here, so
// that a call's kernel name and parameters are the spec's.
func KernelOp(s kernels.Spec, op Op) Op {
	op.Kind, op.Kernel, op.Params = OpKernel, s.Name(), s.Params()
	return op
}

// Spec is the typed spec of a kernel op, ok false for a kernel or
// parameters without one (e.g. after a pass set a parameter no spec has).
// Specs are comparable: the passes key specialisations on them.
func (op *Op) Spec() (kernels.Spec, bool) {
	if op.Kind != OpKernel {
		return nil, false
	}
	return kernels.SpecOf(op.Kernel, op.Params)
}
