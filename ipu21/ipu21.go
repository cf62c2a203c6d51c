// Package ipu21 describes the Graphcore IPU21 (the chip of the C600 card)
// as plain data plus a few small functions.
//
// It owns every machine fact the rest of ipustack relies on: tile count and
// clock, peak rates, the tile SRAM map (regions, memory elements, loader and
// runtime addresses), the logical-to-physical tile order, the closed-form
// route delay of the exchange fabric, the exchange/sync constants and the CSR
// numbers used by exchange code. The compiler and the emulator both read
// these facts from here, so they cannot drift apart.
//
// Sources. Facts are collected in the project's reference/IPU21.md, which
// cites the public repositories they were read from: osmarks/ipu-stack
// (crates/ipu-target/src/{topology,memory,exchange,cost}.rs,
// crates/ipu-target/src/ipu21/*.rs, device/runtime_layout.def),
// Saghetti0/graphcore-ipu-research (docs/csr.md, docs/sync zones.md), the
// Graphcore C600 datasheet and the seed build-and-run log. Each number below
// names its source; where the public record is silent the comment says "our
// assumption". docs/machine.md ("Target facts") lists the same facts as a
// table.
//
// The package imports no other package of this module, so every layer
// (compiler, assembler, emulator, runtime) can depend on it.
package ipu21

import "fmt"

// Chip-level facts of the IPU21 on a C600 card.
const (
	// Tiles is the number of compute tiles on a C600 IPU21.
	// Source: ipu-stack ipu21 c600.rs (COMPUTE_TILES); C600 datasheet.
	Tiles = 1472

	// PhysicalRows and PhysicalColumns give the physical tile grid: a physical
	// tile id is row*64 + column. 23*64 = 1472, so every physical id in
	// [0, Tiles) is a real tile. Source: ipu-stack topology.rs (the mapping
	// produces row*64+column with 23 rows; its test checks the ids are exactly
	// 0..1471).
	PhysicalRows    = 23
	PhysicalColumns = 64

	// ClockHz is the tile clock. Source: seed log, 282786 cycles reported as
	// 188.524 µs.
	ClockHz = 1.5e9

	// WorkerContexts is the number of worker contexts per tile (besides the
	// supervisor). Source: Graphcore assembly guide; ipu-stack ipu21/mod.rs
	// WORKER_CONTEXTS.
	WorkerContexts = 6

	// IssueSlots is the number of barrel-scheduler slots: contexts issue
	// round-robin, so one context issues one bundle every IssueSlots cycles.
	// Source: Graphcore assembly guide (IPU21.md "threads").
	IssueSlots = 6

	// Peak floating-point operations per cycle per tile (a multiply-add
	// counts as two). f16: seed log peakTflops = 1472*128*1.5e9 =
	// 282.624 TFLOP/s; f32 and f8 from the C600 datasheet (70 and 560
	// TFLOP/s).
	FlopsPerCycleF16 = 128
	FlopsPerCycleF32 = 32
	FlopsPerCycleF8  = 256

	// AMPMACsPerCycleF16 is the accumulating matrix product unit's f16
	// throughput: f16v4hihov4amp computes 16 outputs x 4 inputs per issue.
	// 64 MAC = 128 flop, matching FlopsPerCycleF16. Source: IPU21.md
	// (ipu-stack device/*.S, ISA hover docs).
	AMPMACsPerCycleF16 = 64
)

// Exchange and synchronisation costs.
const (
	// ExchangeBytesPerCycle is each tile's exchange bandwidth in each
	// direction: one 32-bit word per cycle out and one in. Source: ipu-stack
	// cost.rs (Poplar Target::getExchangeBytesPerCycle).
	ExchangeBytesPerCycle = 4

	// ExchangeWordBytes is what one exchange event moves: one word, and one
	// event is one tile cycle. Source: IPU21.md (exchange.rs).
	ExchangeWordBytes = 4

	// GlobalSyncCycles is the cost charged for one global sync plus the
	// fixed overhead of an exchange phase. Source: ipu-stack cost.rs
	// (Poplar Target::getGlobalSyncCycles).
	GlobalSyncCycles = 600

	// KernelLaunchCycles is the supervisor overhead of starting a kernel.
	// Source: ipu-stack cost.rs (popops basicOpSupervisorOverhead).
	KernelLaunchCycles = 11

	// LoaderBatchTiles is the number of tiles the secondary loader fills per
	// batch; the host-exchange hand-off mark is Tiles/LoaderBatchTiles = 23.
	// Source: ipu-stack ipu21/loader_abi.rs (TILES_PER_BATCH,
	// HOST_EXCHANGE_HANDOFF_MARK).
	LoaderBatchTiles = 64

	// HostPacketInBytes and HostPacketOutBytes bound one host->tile and one
	// tile->host packet's payload. Source: ipu-stack exchange.rs
	// (HOST_LONG_MAX_BYTES, TILE_TO_HOST_MAX_BYTES).
	HostPacketInBytes  = 1024
	HostPacketOutBytes = 256
)

// Incoming-mux selector values written to CSRIncomingMux. Any value below
// Tiles selects that physical tile as the source.
const (
	// MuxNeutral disconnects the receiver from every source; a receive
	// sequence ends by selecting it so the tile stops listening. Source:
	// ipu-stack exchange.rs (TILE_MUX_EXCHANGE).
	MuxNeutral = 0x640
	// MuxHost is the first selector of the host links (0x600 + link).
	// Source: ipu-stack exchange.rs (TILE_MUX_HOST).
	MuxHost = 0x600
)

// Target describes one chip: the numbers the compiler plans with and the
// emulator models. IPU21 returns the only chip ipustack knows today; the
// struct exists so that planning code is written against a description and
// not against scattered constants, and so a package can record which target
// it was built for.
type Target struct {
	// Name is the value of the --target flag and of the package header.
	Name string

	Tiles           int
	PhysicalRows    int
	PhysicalColumns int
	ClockHz         float64
	WorkerContexts  int
	IssueSlots      int

	FlopsPerCycleF16   int
	FlopsPerCycleF32   int
	FlopsPerCycleF8    int
	AMPMACsPerCycleF16 int

	Memory   Memory
	Exchange Exchange
	Host     Host
	Runtime  Runtime
}

// Memory is the tile SRAM map. Addresses are byte addresses in the tile's
// 21-bit address space; ranges are half-open [start, end).
type Memory struct {
	SRAMBase, SRAMEnd uint32
	// Region 0 is [SRAMBase, Region1Base): executable, not interleaved.
	// Region 1 is [Region1Base, SRAMEnd): interleaved, not executable.
	Region1Base uint32
	// ElementBytes is one physical memory element; InterleavedElementBytes
	// the logical span that covers one pair of elements in region 1.
	ElementBytes            uint32
	InterleavedElementBytes uint32
	Elements                int // contention units, see Element
	// LoadBytesPerCycle is the ordinary load bandwidth; interleaved region 1
	// reads both elements of a pair and so delivers twice as much.
	LoadBytesPerCycle            int
	InterleavedLoadBytesPerCycle int
	EntrySlot                    uint32 // where a tile image starts
	LoadLimit                    uint32 // end of what the loader can populate
}

// Exchange holds the tile-to-tile exchange facts.
type Exchange struct {
	BytesPerCycle      int
	WordBytes          int
	GlobalSyncCycles   int
	KernelLaunchCycles int
	MuxNeutral         int
	MuxHost            int
}

// Host holds the host-link facts.
type Host struct {
	ApertureBase, ApertureEnd uint32 // tile addresses the host exchange uses
	WriteEnd                  uint32 // host writes land in [ApertureBase, WriteEnd)
	WriteAlign                uint32
	PacketInBytes             int
	PacketOutBytes            int
	LoaderBatchTiles          int
}

// Runtime is the fixed per-tile runtime state block.
type Runtime struct {
	StateBase         uint32
	CompletionWord    uint32
	ProfileStartCycle uint32
	ProfileEndCycle   uint32
	WorkerAreaBase    uint32
	WorkerAreaBytes   uint32
	StateEnd          uint32
}

// IPU21 returns the description of the IPU21 on a C600 card. Each call
// returns a fresh value, so a caller may adjust its copy (for instance a
// reduced tile count in a test) without affecting anyone else.
func IPU21() *Target {
	return &Target{
		Name:               "ipu21",
		Tiles:              Tiles,
		PhysicalRows:       PhysicalRows,
		PhysicalColumns:    PhysicalColumns,
		ClockHz:            ClockHz,
		WorkerContexts:     WorkerContexts,
		IssueSlots:         IssueSlots,
		FlopsPerCycleF16:   FlopsPerCycleF16,
		FlopsPerCycleF32:   FlopsPerCycleF32,
		FlopsPerCycleF8:    FlopsPerCycleF8,
		AMPMACsPerCycleF16: AMPMACsPerCycleF16,
		Memory: Memory{
			SRAMBase:                     SRAMBase,
			SRAMEnd:                      SRAMEnd,
			Region1Base:                  Region1Base,
			ElementBytes:                 ElementBytes,
			InterleavedElementBytes:      InterleavedElementBytes,
			Elements:                     Elements,
			LoadBytesPerCycle:            LoadBytesPerCycle,
			InterleavedLoadBytesPerCycle: InterleavedLoadBytesPerCycle,
			EntrySlot:                    EntrySlot,
			LoadLimit:                    LoadLimit,
		},
		Exchange: Exchange{
			BytesPerCycle:      ExchangeBytesPerCycle,
			WordBytes:          ExchangeWordBytes,
			GlobalSyncCycles:   GlobalSyncCycles,
			KernelLaunchCycles: KernelLaunchCycles,
			MuxNeutral:         MuxNeutral,
			MuxHost:            MuxHost,
		},
		Host: Host{
			ApertureBase:     HostApertureBase,
			ApertureEnd:      HostApertureEnd,
			WriteEnd:         HostWriteEnd,
			WriteAlign:       HostWriteAlign,
			PacketInBytes:    HostPacketInBytes,
			PacketOutBytes:   HostPacketOutBytes,
			LoaderBatchTiles: LoaderBatchTiles,
		},
		Runtime: Runtime{
			StateBase:         RuntimeStateBase,
			CompletionWord:    CompletionWord,
			ProfileStartCycle: ProfileStartCycle,
			ProfileEndCycle:   ProfileEndCycle,
			WorkerAreaBase:    WorkerAreaBase,
			WorkerAreaBytes:   WorkerAreaBytes,
			StateEnd:          RuntimeStateEnd,
		},
	}
}

// Lookup returns the target called name (the --target flag's value).
func Lookup(name string) (*Target, error) {
	switch name {
	case "ipu21", "c600":
		return IPU21(), nil
	}
	return nil, fmt.Errorf("target: unknown target %q (known: ipu21)", name)
}

// PeakFlopsPerSecond is the chip's f16 peak: tiles x flop/cycle x clock.
// It is the denominator of the efficiency metric (DESIGN.md "Numbers").
func (t *Target) PeakFlopsPerSecond() float64 {
	return float64(t.Tiles) * float64(t.FlopsPerCycleF16) * t.ClockHz
}

// Microseconds converts a tile cycle count to wall time at the tile clock.
func (t *Target) Microseconds(cycles int64) float64 {
	return float64(cycles) / t.ClockHz * 1e6
}
