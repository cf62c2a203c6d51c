package emu

import (
	"encoding/binary"
	"fmt"

	"github.com/ipustack/ipustack/ipu21"
)

// Memory map and thread counts come from package ipu21 so the compiler and
// the emulator cannot disagree.
const (
	sramBase    = ipu21.SRAMBase
	sramEnd     = ipu21.SRAMEnd
	region1Base = ipu21.Region1Base
	sramBytes   = sramEnd - sramBase
	codeWords   = (region1Base - sramBase) / 4
	// NumWorkers is the number of worker contexts of a tile.
	NumWorkers = ipu21.WorkerContexts
	slots      = ipu21.IssueSlots
)

// CSR numbers the core gives meaning to. Sources: isa/csr.go and target for
// WORKERn_BASE, CCCSLOAD and the exchange registers; the others from
// Saghetti0/graphcore-ipu-research docs/csr.md (supervisor and worker CSR
// maps of the Tile Vertex ISA). The worker upper space (uget/uput) starts at
// 0x100.
const (
	csrSSR        = 0x01 // supervisor
	csrCR         = 0x02 // supervisor
	csrTileID     = 0x03 // supervisor
	csrFPICTL     = 0x20 // supervisor: initial $FP_CTL of a started worker
	csrWorkerBase = 0x21 // supervisor: 0x21..0x26, one per worker context
	csrCCCSLoad   = 0x50 // supervisor: AMP weight-load address
	csrCountL     = 0x60 // both: tile cycle counter, low word
	csrCountU     = 0x61 // both: high word
	csrCtxtSts    = 0x72 // supervisor: context status (read only)

	csrWSR         = 0x01 // worker: context status; low bits hold the context id
	csrVertexBase  = 0x02 // worker
	csrWorkerBaseW = 0x03 // worker: read alias of WORKERn_BASE
	csrRepeatCount = 0x04 // worker
	csrRepeatFirst = 0x05 // worker
	csrRepeatEnd   = 0x06 // worker
	csrFPSts       = 0x100
	csrFPClr       = 0x101
	// fpClrZAACC is $FP_CLR's ZAACC bit: bit 3, after the sticky-flag clears
	// INV, DIV0 and OFLO (bits 0-2), as the public IPU1 register constants
	// give it (graphcore-ipu-research research/ipu1/ipu1_consts.c,
	// CSR_W_FP_CLR__ZAACC__SHIFT = 3; ghidra/register_list.json lists the
	// fields in that order). Code built against the SDK header writes 1<<3.
	fpClrZAACC  = 1 << 3
	csrFPCtl    = 0x102
	csrPRNGSeed = 0x107 // worker upper space: writing it reseeds the generator (isa/csr.go)
	csrTAS      = 0x108 // worker upper space: f32v2axpy scale (isa/csr.go)
	csrPRNG00   = 0x103 // 0x103..0x106: the urand64 generator state
	numCSRs     = 0x200
)

// Register aliases used by worker start (isa/format.go names them).
const (
	regWorkerBase = 13 // $mworker_base
	regVertexBase = 14 // $mvertex_base
	regZero       = 15 // $mzero / $azero read as zero
)

// State is a context's scheduling state.
type State uint8

const (
	// Idle: not started (supervisor) or exited (worker).
	Idle State = iota
	// Running: issues a bundle whenever its slot comes.
	Running
	// WaitingSync: the supervisor blocked in `sync`.
	WaitingSync
	// WaitingRun: the supervisor blocked in `run` until a worker context is free.
	WaitingRun
	// Faulted: the context stopped the tile with a Fault.
	Faulted
)

var stateNames = [...]string{"idle", "running", "waiting-sync", "waiting-run", "faulted"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// Context is one hardware thread: the supervisor (Worker == -1) or worker
// context 0..5. Fields are exported for inspection by tests and the chip
// device; change them only while the tile is stopped.
type Context struct {
	Worker int // -1 for the supervisor
	PC     uint32
	M      [16]uint32
	A      [16]uint32 // workers only; the supervisor has no $a file
	State  State
	// ExitStatus is the Boolean status of the last exitz/exitnz (workers).
	ExitStatus uint32
	// Exits counts worker terminations, so a test can tell "exited with 0"
	// from "never ran".
	Exits int

	// CSR holds this context's view of the CSR space. Registers with
	// side effects (counters, WORKERn_BASE...) are handled in get/put.
	CSR [numCSRs]uint32

	next uint64 // earliest cycle this context may issue again

	// Repeat state of an active rpt: body [rptFirst, rptEnd), remaining
	// iterations after the current one in rptCount.
	rptFirst, rptEnd uint32
	rptCount         uint32

	rng [2]uint64 // urand64 generator (xoroshiro128+), see docs/machine-tile.md
	// Sync zone the supervisor is blocked on while WaitingSync.
	syncZone uint32
}

// Name is "supervisor" or "worker N", as faults print it.
func (c *Context) Name() string {
	if c.Worker < 0 {
		return "supervisor"
	}
	return fmt.Sprintf("worker %d", c.Worker)
}

// Tile is one IPU21 tile: SRAM, seven contexts and the AMP state. It is not
// safe for concurrent use; the chip device runs different tiles in parallel.
type Tile struct {
	ID  int
	mem []byte // [sramBase, sramEnd)

	// pages is the predecoded view of region 0: one entry per word, each
	// the bundle that starts there, in pages allocated on first fetch.
	// Entries are filled lazily and cleared by writes into region 0.
	pages [numPages]*codePage
	// codeGen counts writes into region 0; cached rpt-body checks compare it.
	codeGen uint32

	Sup     Context
	Workers [NumWorkers]Context

	cycle   uint64
	running uint8 // bit w set while worker w is Running

	// AMP state: $CWEI weight registers written through $CCCSLOAD, and the
	// accumulators. See amp.go.
	amp ampState
	// assume is the set of switchable assumptions in force (assumptions.go).
	assume AssumptionSet

	fault *Fault
	// cur is the context executing and curPC the PC of the bundle being
	// executed, so that handlers can build faults without parameters.
	cur   *Context
	curPC uint32
	// issuing is true while a bundle's handlers run; clearAfterIssue
	// records that a store covered that very bundle (see invalidate).
	issuing, clearAfterIssue bool
	// exited is set by a worker exit in the bundle being executed.
	exited bool
	// lastExit is the cycle of the latest worker exit (sync LOCAL resumes
	// the supervisor after it).
	lastExit uint64

	// x is the tile's exchange interface: the timed sends and receive
	// controls its supervisor issued, resolved by the chip (exchange.go).
	x xstate
}

// NewTile returns a tile with zeroed SRAM, every context idle.
func NewTile(id int) *Tile {
	t := &Tile{ID: id, mem: make([]byte, sramBytes), assume: DefaultAssumptions}
	t.Sup.Worker = -1
	t.Sup.CSR[csrTileID] = uint32(id)
	// The receive paths start with nothing selected (our assumption).
	t.Sup.CSR[csrIncomingMux], t.Sup.CSR[csrIncomingMuxPair] = muxNeutral, muxNeutral
	t.x.rx.mux.src, t.x.rx.pair.src = muxNeutral, muxNeutral
	for w := range t.Workers {
		c := &t.Workers[w]
		c.Worker = w
		c.CSR[csrWSR] = uint32(w)
		// Default seed, our choice: distinct per tile and context, so two
		// workers never draw the same stream unless software reseeds.
		c.seed(uint64(id)*NumWorkers + uint64(w) + 1)
	}
	return t
}

// Cycle is the tile cycle counter ($COUNT_L/$COUNT_U).
func (t *Tile) Cycle() uint64 { return t.cycle }

// Fault is the fault that stopped the tile, or nil.
func (t *Tile) Fault() *Fault { return t.fault }

// Write copies data into SRAM at addr. It invalidates predecoded code
// overlapping the range.
func (t *Tile) Write(addr uint32, data []byte) error {
	if !ipu21.InSRAM(addr, uint32(len(data))) || uint64(len(data)) > sramBytes {
		return fmt.Errorf("tile %d: write [0x%x, 0x%x) outside SRAM [0x%x, 0x%x)", t.ID, addr, uint64(addr)+uint64(len(data)), sramBase, sramEnd)
	}
	copy(t.mem[addr-sramBase:], data)
	t.invalidate(addr, uint32(len(data)))
	return nil
}

// Read copies SRAM [addr, addr+len(buf)) into buf.
func (t *Tile) Read(addr uint32, buf []byte) error {
	if !ipu21.InSRAM(addr, uint32(len(buf))) || uint64(len(buf)) > sramBytes {
		return fmt.Errorf("tile %d: read [0x%x, 0x%x) outside SRAM [0x%x, 0x%x)", t.ID, addr, uint64(addr)+uint64(len(buf)), sramBase, sramEnd)
	}
	copy(buf, t.mem[addr-sramBase:])
	return nil
}

// WriteWords stores little-endian 32-bit words at addr (a convenience for
// loading code).
func (t *Tile) WriteWords(addr uint32, words []uint32) error {
	b := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return t.Write(addr, b)
}

// ReadWord returns the 32-bit word at addr (must be in SRAM, 4-aligned).
func (t *Tile) ReadWord(addr uint32) (uint32, error) {
	var b [4]byte
	if addr&3 != 0 {
		return 0, fmt.Errorf("tile %d: word read at misaligned 0x%x", t.ID, addr)
	}
	if err := t.Read(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// invalidate drops predecoded bundles that may include bytes in
// [addr, addr+n): a bundle is at most 4 words, so entries up to 12 bytes
// before addr can reach into the range.
func (t *Tile) invalidate(addr, n uint32) {
	if n == 0 || addr >= region1Base {
		return
	}
	lo := int64(addr) - 12
	if lo < sramBase {
		lo = sramBase
	}
	hi := uint64(addr) + uint64(n)
	if hi > region1Base {
		hi = region1Base
	}
	t.codeGen++
	// The bundle being executed may be among those cleared (a store over
	// the running code): its handlers are still running, so clearing it
	// is deferred until it completes (issue does it).
	cur := int64(-1)
	if t.issuing {
		cur = int64(t.curPC-sramBase) / 4
	}
	for i := (lo - sramBase) / 4; i < int64(hi-sramBase+3)/4; i++ {
		if i == cur {
			t.clearAfterIssue = true
			continue
		}
		if pg := t.pages[i>>pageShift]; pg != nil {
			pg[i&pageMask] = bundle{}
		}
	}
}

// Start makes the supervisor run from pc. Workers keep their state.
func (t *Tile) Start(pc uint32) {
	t.Sup.PC = pc
	t.Sup.State = Running
	if t.Sup.next < t.cycle {
		t.Sup.next = t.cycle
	}
	t.fault = nil
}

// StartWorker starts worker w at pc with $mvertex_base = vertex, as `run`
// would. It lets tests and the chip device drive workers directly.
func (t *Tile) StartWorker(w int, pc, vertex uint32) error {
	if w < 0 || w >= NumWorkers {
		return fmt.Errorf("tile %d: no worker context %d", t.ID, w)
	}
	if t.Workers[w].State == Running {
		return fmt.Errorf("tile %d: worker %d is running", t.ID, w)
	}
	t.startWorker(w, pc, vertex)
	return nil
}

// startWorker initialises a worker's registers the way run/runall do:
// $mvertex_base and $VERTEX_BASE get the vertex pointer, $mworker_base the
// supervisor's WORKERn_BASE, $FP_CTL the supervisor's $FP_ICTL. Other
// registers keep their values (the hardware retains them between runs).
func (t *Tile) startWorker(w int, pc, vertex uint32) {
	c := &t.Workers[w]
	c.PC = pc
	c.M[regVertexBase] = vertex
	c.M[regWorkerBase] = t.Sup.CSR[csrWorkerBase+w]
	c.CSR[csrVertexBase] = vertex
	c.CSR[csrWorkerBaseW] = t.Sup.CSR[csrWorkerBase+w]
	c.CSR[csrFPCtl] = t.Sup.CSR[csrFPICTL]
	c.rptCount, c.rptEnd = 0, 0
	c.State = Running
	// A worker issues only in its own slot (cycle mod 6 == w), from the
	// first such slot after its launch latency (latency.go).
	c.next = workerFirstIssue(t.cycle, w)
	t.running |= 1 << w
}

// nextSlot returns the first cycle >= c whose slot is s.
func nextSlot(c uint64, s int) uint64 {
	d := (uint64(s) + slots - c%slots) % slots
	return c + d
}
