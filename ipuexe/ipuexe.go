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

import "github.com/ipustack/ipustack/internal/envelope"

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
