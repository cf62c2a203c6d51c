package ipu21

// Tile SRAM map. Every tile has the same 624 KiB of SRAM at the same
// addresses; nothing lives below SRAMBase.
const (
	// SRAMBase and SRAMEnd bound tile SRAM (624 KiB). Source: ipu-stack
	// memory.rs (TILE_MEMORY_BASE, TILE_MEMORY_SIZE).
	SRAMBase = 0x4C000
	SRAMEnd  = 0xE8000

	// Region1Base splits SRAM in two. Region 0, [SRAMBase, Region1Base)
	// (208 KiB), is the only place instructions may be fetched from.
	// Region 1, [Region1Base, SRAMEnd) (416 KiB), interleaves pairs of
	// physical elements, which is what lets ld128 read 16 bytes at once; it
	// is not executable. Source: ipu-stack ipu21/memory.rs
	// (IPU21_EXECUTABLE_MEMORY_LIMIT = IPU21_INTERLEAVED_MEMORY_BASE);
	// ISA hover docs for ld128.
	Region1Base = 0x80000

	// ElementBytes is one physical memory element (TMEM_ELEMSIZE): the
	// granularity at which instruction fetch, a send's SRAM read and an
	// incoming exchange write contend. Source: ipu-stack memory.rs.
	ElementBytes = 0x4000

	// InterleavedElementBytes is the logical span of region 1 that one pair
	// of physical elements covers (interleave factor 2). Source: ipu-stack
	// ipu21/memory.rs (IPU21_INTERLEAVED_ELEMENT_SIZE).
	InterleavedElementBytes = 2 * ElementBytes

	// Region0Elements and Region1Elements count contention units (see
	// Element): 13 single elements and 13 interleaved pairs, i.e. 39
	// physical elements of 16 KiB = 624 KiB.
	Region0Elements = (Region1Base - SRAMBase) / ElementBytes
	Region1Elements = (SRAMEnd - Region1Base) / InterleavedElementBytes
	Elements        = Region0Elements + Region1Elements

	// LoadBytesPerCycle is the ordinary load bandwidth and
	// InterleavedLoadBytesPerCycle the bandwidth from interleaved memory.
	// Source: ipu-stack cost.rs (Poplar Target::getMemcpyBytesPerCycle and
	// the interleaved variant).
	LoadBytesPerCycle            = 8
	InterleavedLoadBytesPerCycle = 16

	// EntrySlot is where the secondary loader places an application image:
	// the SDK image's launch slot. Source: ipu-stack ipu21/loader_abi.rs
	// (APPLICATION_LOAD_BASE = TILE_MEMORY_BASE + 0x10).
	EntrySlot = SRAMBase + 0x10

	// LoadLimit is the end of what the loader can populate: 643 frames of
	// 992 payload bytes from EntrySlot. The last 0x450 bytes of SRAM exist
	// but cannot hold image data. Source: ipu-stack memory.rs
	// (IPU21_APPLICATION_MEMORY_LIMIT), loader_abi.rs.
	LoadLimit = 0xE7BB0
)

// Host exchange aperture: the SRAM window the host link reads from and
// writes to.
const (
	// HostApertureBase and HostApertureEnd bound the window (32 KiB).
	// Source: ipu-stack device/runtime_layout.def (EXCHANGE_WINDOW_BASE,
	// EXCHANGE_WINDOW_BYTES).
	HostApertureBase = 0x50000
	HostApertureEnd  = 0x58000

	// HostWriteEnd: a host->tile packet can only address the first 16 KiB
	// of the window, and its tile address must be HostWriteAlign aligned
	// (the packet header carries (address-base)>>5). Source: ipu-stack
	// exchange.rs (HOST_TO_TILE_WINDOW_BYTES, host_to_tile_packet).
	HostWriteEnd   = 0x54000
	HostWriteAlign = 32
)

// Runtime state: a fixed block right after the host aperture that the
// resident runtime and the host both know the address of.
//
// Layout (offsets from RuntimeStateBase):
//
//	+0x000  completion word (the host polls it)
//	+0x004  cycle counter sampled at the start of the profiled call
//	+0x008  cycle counter sampled at its end
//	+0x00C  reserved for the runtime, up to +0x040
//	+0x040  WorkerContexts areas of WorkerAreaBytes each
//	+0x640  end
//
// The first three words and the base come from ipu-stack
// device/runtime_layout.def and ipu21/runtime_layout.rs. The header size and
// the worker-area size are our assumption: ipu-stack reserves 0xE0 bytes of
// header and 0x100 bytes per worker; we keep the 256-byte worker areas (room
// for a worker's stack frame and its sync slot) but shrink the header to
// 64 bytes, which keeps every worker area 32-byte aligned (the alignment AMP
// and pace operands need).
const (
	RuntimeStateBase  = HostApertureEnd
	CompletionWord    = RuntimeStateBase
	ProfileStartCycle = RuntimeStateBase + 4
	ProfileEndCycle   = RuntimeStateBase + 8
	RuntimeHeaderSize = 0x40
	WorkerAreaBase    = RuntimeStateBase + RuntimeHeaderSize
	WorkerAreaBytes   = 0x100
	RuntimeStateEnd   = WorkerAreaBase + WorkerContexts*WorkerAreaBytes
)

// WorkerArea returns the address of worker context ctx's runtime area
// (ctx in [0, WorkerContexts)), or false for any other ctx.
func WorkerArea(ctx int) (uint32, bool) {
	if ctx < 0 || ctx >= WorkerContexts {
		return 0, false
	}
	return WorkerAreaBase + uint32(ctx)*WorkerAreaBytes, true
}

// Region reports which SRAM region addr lies in: 0 (executable, ordinary)
// or 1 (interleaved). ok is false outside SRAM.
func Region(addr uint32) (region int, ok bool) {
	switch {
	case addr < SRAMBase || addr >= SRAMEnd:
		return 0, false
	case addr < Region1Base:
		return 0, true
	default:
		return 1, true
	}
}

// Executable reports whether instructions may be fetched from addr
// (region 0 only).
func Executable(addr uint32) bool {
	return addr >= SRAMBase && addr < Region1Base
}

// Interleaved reports whether addr is in interleaved region 1, the only
// memory ld128 may read and the only memory that delivers
// InterleavedLoadBytesPerCycle.
func Interleaved(addr uint32) bool {
	return addr >= Region1Base && addr < SRAMEnd
}

// InSRAM reports whether the byte range [addr, addr+size) lies inside tile
// SRAM. An empty range is inside when addr is in [SRAMBase, SRAMEnd]. The
// sum is taken in 64 bits, so a range that wraps the 32-bit space is
// rejected rather than mistaken for a small one.
func InSRAM(addr, size uint32) bool {
	return addr >= SRAMBase && uint64(addr)+uint64(size) <= SRAMEnd
}

// Element returns the memory element (contention unit) holding addr, or -1
// outside SRAM. Two accesses can clash only if they fall in the same
// element.
//
// Numbering: region 0 has elements 0..12, one per 16 KiB physical element,
// counted from SRAMBase. Region 1 has elements 13..25, one per 32 KiB
// logical span: interleaving spreads each such span over a pair of physical
// elements, so any access in the span may touch either of them and the pair
// is treated as one unit. This is the rule ipu-stack uses for its clash
// checks (memory.rs memory_elements_for_words); it is conservative for
// narrow accesses, which hit only one element of the pair.
func Element(addr uint32) int {
	switch {
	case addr < SRAMBase || addr >= SRAMEnd:
		return -1
	case addr < Region1Base:
		return int((addr - SRAMBase) / ElementBytes)
	default:
		return Region0Elements + int((addr-Region1Base)/InterleavedElementBytes)
	}
}

// ElementBounds returns the address range [start, end) of element e, as
// numbered by Element; ok is false for e outside [0, Elements).
func ElementBounds(e int) (start, end uint32, ok bool) {
	switch {
	case e < 0 || e >= Elements:
		return 0, 0, false
	case e < Region0Elements:
		start = SRAMBase + uint32(e)*ElementBytes
		return start, start + ElementBytes, true
	default:
		start = Region1Base + uint32(e-Region0Elements)*InterleavedElementBytes
		return start, start + InterleavedElementBytes, true
	}
}
