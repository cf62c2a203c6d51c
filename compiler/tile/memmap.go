package tile

import "github.com/ipustack/ipustack/ipu21"

// The tile runtime's memory map: where compiler/place puts the code, the
// exchange rows and the data, where compiler/emit finds the host window,
// the row table and the loop indices, and what the lowering (compiler/low)
// may assume of them. The fixed parts are facts of the chip and of the
// runtime state block (package ipu21, docs/machine.md); the rest is the
// runtime's own layout, decided here once.
//
//	[0x4C010, 0x50000)  code: the runtime and its kernels (element 0)
//	[0x50000, 0x54000)  host write window (inputs and weights land here)
//	[0x54000, 0x58000)  exchange rows, 8-byte aligned (element 2: no data)
//	[0x58000, 0x58640)  runtime state: profile samples, row table, loop indices, worker areas
//	[DataBase, 0x80000) region 0 data
//	[0x80000, LoadLimit) region 1 data (interleaved: AMP right panels)
const (
	// CodeBase and CodeLimit bound the code area: the runtime and the
	// kernels it calls. CodeBytes is its size.
	CodeBase  = ipu21.EntrySlot
	CodeLimit = ipu21.HostApertureBase
	CodeBytes = CodeLimit - CodeBase

	// HostWindowBase and HostWindowEnd bound the host write window: the
	// host writes a call's command word at HostWindowBase and, in each
	// host phase, every tile's piece of a binding into the tile's slot,
	// the whole window (OpHostCopy copies from its start).
	HostWindowBase = ipu21.HostApertureBase
	HostWindowEnd  = ipu21.HostWriteEnd
	// SlotSize is the host slot of one tile per phase: the host write
	// window [0x50000, 0x54000).
	SlotSize = HostWindowEnd - HostWindowBase

	// RowBase and RowLimit bound the exchange rows.
	RowBase  = ipu21.HostWriteEnd
	RowLimit = ipu21.HostApertureEnd
	// RowTable holds one word per exchange phase: the address of the
	// tile's row (in the runtime header's reserved words).
	RowTable = ipu21.RuntimeStateBase + 0xC
	// LoopState holds the iteration index of each nesting level of the
	// runtime's loops (OpLoop): the last MaxLoopDepth words of the
	// header, kept in memory because kernels clobber the registers.
	LoopState = ipu21.RuntimeStateBase + ipu21.RuntimeHeaderSize - 4*MaxLoopDepth
	// MaxRowPhases is how many exchange phases the row table holds.
	MaxRowPhases = (LoopState - RowTable) / 4

	// DataBase, Region0End and Region1End bound the data: region 0 from
	// past the runtime state to Region1Base, region 1 from there to the
	// loader's limit.
	DataBase   = (ipu21.RuntimeStateEnd + 63) &^ 63
	Region0End = ipu21.Region1Base
	Region1End = ipu21.LoadLimit &^ 31
)

// ReservedPrefix starts the names of the runtime's own areas in a Ref or
// an address map (compiler/emit: the host window, the sample area); no
// plan buffer's name starts with it (Verify).
const ReservedPrefix = "\x00"
