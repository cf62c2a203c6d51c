// Package ipuexe is the ipustack application package: the .ipuexe file
// the compiler writes and the runtime loads onto a device.
//
// A package holds everything needed to run a compiled program without the
// compiler: the image of every tile (segments of code and data), where the
// host's tensors live on the tiles (bindings), how the host moves them
// through the host-exchange pages (calls, phases, transfers), the device
// configuration to replay before loading, where each tile leaves its cycle
// samples (profile plan) and debug symbols.
//
// The Go structs in this file are the model; the file encoding is Cap'n
// Proto (schema/ipuexe.capnp), so that fields can be appended without
// breaking old readers and so that a reader can pick out one tile's segment
// without parsing the others. A file is:
//
//	offset  size  field
//	0       8     magic "IPUEXE1\x00"
//	8       4     format version (little-endian u32), FormatVersion
//	12      4     reserved, zero
//	16      8     content length n (little-endian u64)
//	24      32    SHA-256 of the content
//	56      n     content: one unpacked Cap'n Proto message (stream framing)
//
// The version sits in the header as well as in the message so that a
// reader can reject a file it does not understand before trusting anything
// else in it; the checksum turns any truncation or corruption into a clear
// error instead of a package that loads wrong bytes onto a tile.
//
// Marshal is deterministic: the same Package always gives the same bytes,
// which keeps builds byte-reproducible. Read checks the header and
// checksum, decodes, looks up the target and runs Validate; Decode does
// the first part only, for tools that must show a package that does not
// validate. Summary renders a package for `ipu inspect`.
package ipuexe

import (
	"fmt"

	"github.com/ipustack/ipustack/internal/envelope"
)

// Magic opens every package file.
const Magic = "IPUEXE1\x00"

// FormatVersion is the version this code writes and the only one it reads.
// Bump it when the meaning of an existing field changes; appending fields
// to the schema does not need a bump.
const FormatVersion = 1

// HeaderSize is the size of the fixed header before the Cap'n Proto content.
const HeaderSize = envelope.HeaderSize

// Package is one compiled application.
type Package struct {
	// CompilerVersion identifies the ipustack build that wrote the package.
	CompilerVersion string
	// Target is the ipu21.Lookup name of the chip ("ipu21").
	Target string
	// MemoryBase and MemorySize are the tile SRAM the package was built
	// for; Validate checks them against the target, so a package built for
	// a different memory map is refused rather than loaded at wrong
	// addresses.
	MemoryBase uint32
	MemorySize uint32

	// Tiles holds one image per tile that runs code. Tiles not listed
	// still take part in every sync but run nothing of the package.
	Tiles []Tile

	// Inputs, Outputs and Weights say where each host tensor lives.
	Inputs  []Binding
	Outputs []Binding
	Weights []Binding

	// Host is the host-exchange plan: pages, command word and calls.
	Host HostExchange

	// Config is the device configuration, written in order before the
	// tiles are loaded.
	Config []ConfigWrite

	// Profile says where tiles store cycle samples.
	Profile Profile

	// Symbols are debug symbols valid on every tile (the shared runtime);
	// Tile.Symbols holds those of one tile.
	Symbols []Symbol

	// Recipe records how the package was built (the compiler writes JSON:
	// workload, shape flags, tiles, seed), so that a run of the file can
	// regenerate the same inputs and host reference. The reader does not
	// interpret it.
	Recipe string

	// Run is what a run needs besides the images and the host plan (the
	// metrics' inputs, the plan summary, the exchange schedules and the
	// memory maps of a profile), so that running a package never asks
	// the compiler. Zero in packages written before it.
	Run RunInfo
}

// Tile is the image of one tile.
type Tile struct {
	// Physical is the physical tile id (ipu21.ValidPhysical).
	Physical uint32
	// Entry is the address the supervisor starts at; it must lie in an
	// executable segment.
	Entry    uint32
	Segments []Segment
	Symbols  []Symbol
	// MemoryMap is 0 for none, else n for Run.MemoryMaps[n-1]: the
	// tile's memory as a profile shows it.
	MemoryMap uint32
}

// Segment is a contiguous range of tile memory.
type Segment struct {
	Address uint32
	// MemSize is the number of bytes the segment occupies; bytes past
	// len(Data) are zero-filled. MemSize >= len(Data).
	MemSize uint32
	// Data are the initialised bytes. Packages returned by Read share
	// identical Data between segments and refer into the buffer passed to
	// Read: treat Data as read-only.
	Data  []byte
	Flags Flags
}

// End is the first address past the segment.
func (s Segment) End() uint64 { return uint64(s.Address) + uint64(s.MemSize) }

// Flags are a segment's access permissions.
type Flags uint8

// Segment permission bits.
const (
	FlagRead Flags = 1 << iota
	FlagWrite
	FlagExec

	flagsKnown = FlagRead | FlagWrite | FlagExec
)

// String gives the flags as "RWX" with '-' for a missing permission.
func (f Flags) String() string {
	b := []byte("---")
	if f&FlagRead != 0 {
		b[0] = 'R'
	}
	if f&FlagWrite != 0 {
		b[1] = 'W'
	}
	if f&FlagExec != 0 {
		b[2] = 'X'
	}
	if f&^flagsKnown != 0 {
		return string(b) + "+?"
	}
	return string(b)
}

// Symbol names a range of tile memory for debuggers and disassembly.
type Symbol struct {
	Name    string
	Address uint32
	Size    uint32
}

// DType is a tensor element type, by name.
//
// It is a string rather than an enum on the wire so that an unknown type
// written by a newer compiler is reported by name.
type DType string

// Element types a binding may have.
const (
	F16    DType = "f16"
	F32    DType = "f32"
	BF16   DType = "bf16"
	F8E4M3 DType = "f8e4m3"
	F8E5M2 DType = "f8e5m2"
	I8     DType = "i8"
	U8     DType = "u8"
	I16    DType = "i16"
	U16    DType = "u16"
	I32    DType = "i32"
	U32    DType = "u32"
)

var dtypeSizes = map[DType]int{
	F16: 2, F32: 4, BF16: 2, F8E4M3: 1, F8E5M2: 1,
	I8: 1, U8: 1, I16: 2, U16: 2, I32: 4, U32: 4,
}

// Size is the element size in bytes, or 0 for an unknown type.
func (d DType) Size() int { return dtypeSizes[d] }

// Known reports whether d is one of the element types above.
func (d DType) Known() bool { return dtypeSizes[d] != 0 }

// Binding places a host tensor on the tiles.
type Binding struct {
	Name  string
	DType DType
	Shape []uint32
	// Slices partition the tensor's bytes: sorted by Offset they cover
	// [0, Bytes()) with no gap and no overlap. A tensor that several tiles
	// need is placed once and spread by exchange on the device, so the
	// host never writes the same bytes twice.
	Slices []Slice
	// TensorShape is the host tensor's own shape (the graph's: [tokens,
	// dim], a weight's [in, out]); Shape above is its packed layout's.
	// Tools list it and `ipu run` checks user data against it. Nil in
	// packages written before it was recorded.
	TensorShape []uint32
	// Layout says how the packed bytes hold the tensor's matrix (Matrix):
	// blocks that cover the bytes exactly, every real element in at least
	// one. Nil in packages written before it was recorded.
	Layout []Block
}

// Block is a rectangle of a binding's matrix held from byte Offset on in
// the packed bytes, in padded coordinates [RowLo, RowHi) x [ColLo, ColHi)
// (columns padded to 16 for AMP orders; rows past the matrix are padding
// rows) and element order Order; elements at rows >= RowEnd or columns >=
// ColEnd are padding (zero in inputs, ignored in outputs). RowEnd ==
// RowLo (or ColEnd == ColLo) is a block of padding only.
type Block struct {
	Offset         uint64
	RowLo, RowHi   uint32
	ColLo, ColHi   uint32
	RowEnd, ColEnd uint32
	Order          Order
}

// Rows and Cols are the block's padded extent.
func (b Block) Rows() uint32 { return b.RowHi - b.RowLo }
func (b Block) Cols() uint32 { return b.ColHi - b.ColLo }

// Order is the element order of a layout block.
type Order uint8

// Element orders of a layout block (compiler/mid plans with these same
// values: mid.Order is this type).
const (
	// RowMajor: [rows][cols], a row stride of the block's column count.
	RowMajor Order = iota
	// AMPLeft: the AMP left panel: for each 16-column group, every row's
	// 16 values (32 bytes).
	AMPLeft
	// AMPRight: 16x16 blocks (16 columns x 16 inner rows), column-group
	// major, inner-group minor; each column's 16 inner values together.
	AMPRight
	// AMPOut: byte for byte AMPLeft.
	AMPOut

	numOrders
)

// String is the order's name.
func (o Order) String() string {
	switch o {
	case RowMajor:
		return "row-major"
	case AMPLeft:
		return "amp-left"
	case AMPRight:
		return "amp-right"
	case AMPOut:
		return "amp-out"
	}
	return fmt.Sprintf("order(%d)", uint8(o))
}

// Matrix is the binding's tensor as a matrix: its last dimension is the
// columns, the product of the others the rows (1 for a vector); ok is
// false without a TensorShape or when the product overflows.
func (b Binding) Matrix() (rows, cols uint64, ok bool) {
	if len(b.TensorShape) == 0 {
		return 0, 0, false
	}
	rows, cols = 1, uint64(b.TensorShape[len(b.TensorShape)-1])
	for _, d := range b.TensorShape[:len(b.TensorShape)-1] {
		if d != 0 && rows > maxTensorBytes/uint64(d) {
			return 0, 0, false
		}
		rows *= uint64(d)
	}
	if cols != 0 && rows > maxTensorBytes/cols {
		return 0, 0, false
	}
	return rows, cols, true
}

// Elements is the product of the shape; ok is false when it overflows.
func (b Binding) Elements() (n uint64, ok bool) {
	n = 1
	for _, d := range b.Shape {
		if d != 0 && n > maxTensorBytes/uint64(d) {
			return 0, false
		}
		n *= uint64(d)
	}
	return n, true
}

// Bytes is the tensor size in bytes; ok is false for an unknown dtype or an
// overflowing shape.
func (b Binding) Bytes() (n uint64, ok bool) {
	e, ok := b.Elements()
	sz := uint64(b.DType.Size())
	if !ok || sz == 0 || e > maxTensorBytes/sz {
		return 0, false
	}
	return e * sz, true
}

// maxTensorBytes bounds a tensor: 1 TiB is far beyond a chip's 900 MiB of
// SRAM, so anything larger is a corrupt shape, and the bound keeps size
// arithmetic far from overflow.
const maxTensorBytes = 1 << 40

// Slice is a byte range of a tensor placed on one tile.
type Slice struct {
	Tile    uint32 // physical id
	Address uint32
	Offset  uint64 // byte offset in the tensor
	Length  uint32
}

// HostExchange is the plan for moving tensors between host and tiles.
//
// The host and device share pages of host memory. The host starts a call
// by writing the call's Command to the command word; every phase is then
// one rendezvous on a global sync, during which each participating tile
// reads (inputs, weights) or writes (outputs) its own SlotSize-byte slot of
// a page.
type HostExchange struct {
	Pages         []HostPage
	CommandPage   uint32 // HostPage.Index of the command word's page
	CommandOffset uint32 // byte offset of the command word in that page
	SlotSize      uint32
	Calls         []HostCall
}

// HostPage is one page of host memory shared with the device.
type HostPage struct {
	Index uint32
	Size  uint32
}

// HostCall is one entry point the host can invoke ("initialize", "run").
type HostCall struct {
	Name    string
	Command uint32
	Phases  []HostPhase
}

// HostPhase is one host/device rendezvous.
type HostPhase struct {
	Transfers []HostTransfer
}

// BindingKind says which binding list a transfer refers to, and so its
// direction: inputs and weights go to the device, outputs to the host.
type BindingKind uint8

// Binding kinds.
const (
	KindInput BindingKind = iota
	KindOutput
	KindWeight
)

// String is the name of the binding list ("inputs", "outputs", "weights").
func (k BindingKind) String() string {
	switch k {
	case KindInput:
		return "inputs"
	case KindOutput:
		return "outputs"
	case KindWeight:
		return "weights"
	}
	return "kind?"
}

// HostTransfer moves Length bytes of one binding slice, starting
// SliceOffset bytes into the slice, through a page at PageOffset.
type HostTransfer struct {
	Kind        BindingKind
	Binding     uint32 // index in Inputs/Outputs/Weights
	Slice       uint32 // index in that binding's Slices
	SliceOffset uint32
	Length      uint32
	Page        uint32 // HostPage.Index
	PageOffset  uint32
}

// ConfigWrite is one device configuration register write.
type ConfigWrite struct {
	Offset uint32
	Value  uint32
}

// Profile is the cycle-sample plan: at the end of each step a tile stores
// its cycle counter at one address; the runtime reads them back after a
// call.
type Profile struct {
	Steps []ProfileStep
	Tiles []TileProfile
}

// ProfileStep names a step of the program, shared by all tiles.
type ProfileStep struct {
	Name string
	Kind string // "exchange", "compute", "sync", ...
}

// TileProfile lists one tile's samples.
type TileProfile struct {
	Tile    uint32 // physical id
	Samples []ProfileSample
}

// ProfileSample is a 32-bit word at Address that holds the cycle counter
// sampled when step Step (an index in Profile.Steps) ends.
type ProfileSample struct {
	Address uint32
	Step    uint32
	// Detail is 0 for none, else n for Run.StepDetails[n-1]: what the
	// step this sample ends is.
	Detail uint32
}

// RunInfo is what a run needs besides the images and the host plan.
type RunInfo struct {
	// Workload is the full workload name the metrics line prints.
	Workload string
	// Assumptions names the emulator assumption set the package is
	// correct under (AssumptionsDefault, AssumptionsConservative).
	Assumptions string
	// Flops are the floating-point operations of one "run" call.
	Flops uint64
	Plan  PlanSummary
	// Phases are the device exchange phases as scheduled into the
	// package's rows.
	Phases []ExchangePhase
	// MemoryMaps are the distinct tile memory maps (Tile.MemoryMap).
	MemoryMaps []MemoryMap
	// StepDetails are the distinct sampled-step descriptions
	// (ProfileSample.Detail).
	StepDetails []StepDetail
}

// Names of the emulator assumption sets a package can be built for
// (device/emu's AssumptionSet.String; a launch test checks they agree).
const (
	AssumptionsDefault      = "amp-state-retained"
	AssumptionsConservative = "conservative"
)

// PlanSummary is the planner's summary of the package's plan.
type PlanSummary struct {
	PredictedCycles uint64
	Gemms           []PlanGemm
	Finalists       []PlanFinalist
}

// PlanGrid is a GEMM's tile grid: Rows x Cols output blocks, each K-split
// in Inner parts.
type PlanGrid struct{ Rows, Cols, Inner uint32 }

// PlanGemm is one GEMM of the plan.
type PlanGemm struct {
	Name    string
	M, K, N uint32
	Grid    PlanGrid
	Tiles   uint32
	Kernel  string
}

// PlanFinalist is one whole-graph plan the planner kept, with one grid per
// PlanSummary.Gemms entry.
type PlanFinalist struct {
	Rank                 uint32
	MidCycles, LowCycles uint64
	Grids                []PlanGrid
	Chosen               bool
}

// ExchangePhase is one device exchange phase as scheduled.
type ExchangePhase struct {
	ID       uint32
	Name     string
	Horizon  uint64 // scheduled length in cycles
	Bound    uint64 // endpoint lower bound in cycles
	Schedule string // "full-duplex", "paired"
	Windows  []PhaseWindow
}

// PhaseWindow is a tile's traffic in a phase: it sends in [SendStart,
// SendEnd) and receives in [RecvStart, RecvEnd), cycles from the phase
// start.
type PhaseWindow struct {
	Tile                 uint32 // physical id
	SendStart, SendEnd   uint32
	RecvStart, RecvEnd   uint32
	SendBytes, RecvBytes uint32
}

// MemoryMap is a tile's memory as a profile shows it.
type MemoryMap struct{ Ranges []MemoryRange }

// MemoryRange is one range of a tile memory map.
type MemoryRange struct {
	Kind    string // "code", "exchange-rows", "weights", "activations", "partials", "free"
	Address uint32
	Size    uint32
	Name    string
}

// StepDetail is what a sampled step is.
type StepDetail struct {
	Kernel    string
	Phase     int32 // exchange phase id; -1 for none
	Operation string
	Value     string
	Reason    string
}

// bindings returns the binding list of kind k.
func (p *Package) bindings(k BindingKind) []Binding {
	switch k {
	case KindInput:
		return p.Inputs
	case KindOutput:
		return p.Outputs
	case KindWeight:
		return p.Weights
	}
	return nil
}
