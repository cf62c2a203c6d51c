package emu

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/isa"
)

// Chip is the whole-chip device: tiles of the one-tile core, the global
// syncs and the exchange fabric between them. Execution is bulk
// synchronous: the tiles run in parallel (one goroutine per core, tiles
// handed out one at a time) until each stops — at a sync, at the end of an
// exchange segment, idle or faulted — then the chip resolves the exchange
// round from every tile's timed records, performs the incoming writes and
// releases what can go on. Nothing a tile does while running touches
// another tile, and the resolution reads other tiles only while nothing
// writes them, so results and cycle counts do not depend on GOMAXPROCS.
//
// Rules: docs/machine.md, "The chip: syncs and exchange".
type Chip struct {
	tiles  []*Tile            // in physical-id order
	index  [ipu21.Tiles]int32 // physical id -> index+1 (0: not on this chip)
	active []bool             // started: takes part in syncs
	stop   []Result           // each tile's latest stop
	order  []int              // scratch: tile indices to run

	// SyncCycles is what a global sync costs: every tile resumes at the
	// latest arrival plus SyncCycles. Default ipu21.GlobalSyncCycles.
	SyncCycles uint64
	// DeadlockCycles: a tile still running this many cycles after the
	// last arrival at a sync that others wait on is reported as a
	// deadlock. Default 1<<27.
	DeadlockCycles uint64
	// Slice is how many cycles a tile runs per parallel pass (deadlock
	// checks happen between passes). Default 1<<20.
	Slice uint64
	// Host, when set, is called once every active tile waits at the same
	// host sync zone (4..15); the host may read and write tile SRAM. When
	// it returns resume, the chip releases the sync and goes on; otherwise
	// Run returns with ChipHost. When Host is nil, Run always returns with
	// ChipHost. The next Run releases a host sync Run returned at.
	Host func(c *Chip, zone int) (resume bool, err error)
	// OnWrite, when set, sees every incoming exchange write after each
	// round, in tile order then cycle order: n items of size bytes from
	// tile src land at addr of tile dst, item k in cycle cycle+k.
	OnWrite func(dst int, cycle uint64, addr uint32, n uint32, size int, src int)

	hostPending bool
	stats       ChipStats
}

// ChipStats counts what the chip has done since it was made.
type ChipStats struct {
	Syncs  uint64 // global (chip-wide and host) syncs released
	Rounds uint64 // exchange resolutions
	Words  uint64 // 32-bit words written by the exchange
}

// ChipStop says why Chip.Run returned.
type ChipStop uint8

const (
	// ChipIdle: no active tile can issue (nothing was started, or every
	// supervisor is idle).
	ChipIdle ChipStop = iota + 1
	// ChipHost: every active tile waits at host sync zone Zone; do the
	// host's part and call Run again.
	ChipHost
	// ChipLimit: the cycle budget of the call ran out; Run again to go on.
	ChipLimit
)

func (s ChipStop) String() string {
	switch s {
	case ChipIdle:
		return "idle"
	case ChipHost:
		return "host"
	case ChipLimit:
		return "limit"
	}
	return fmt.Sprintf("ChipStop(%d)", uint8(s))
}

// ChipResult reports one Chip.Run call.
type ChipResult struct {
	Reason ChipStop
	Zone   int    // host sync zone for ChipHost
	Cycle  uint64 // the latest tile cycle
	Stats  ChipStats
}

// NewChip makes a chip of the given physical tiles (all 1472 when ids is
// empty). Tile ids must be distinct physical ids.
func NewChip(ids ...int) (*Chip, error) {
	if len(ids) == 0 {
		ids = make([]int, ipu21.Tiles)
		for i := range ids {
			ids[i] = i
		}
	}
	ids = append([]int(nil), ids...)
	sort.Ints(ids)
	c := &Chip{SyncCycles: ipu21.GlobalSyncCycles, DeadlockCycles: 1 << 27, Slice: 1 << 20}
	for i, id := range ids {
		if !ipu21.ValidPhysical(id) {
			return nil, fmt.Errorf("chip: %d is not a physical tile id (0..%d)", id, ipu21.Tiles-1)
		}
		if c.index[id] != 0 {
			return nil, fmt.Errorf("chip: tile %d listed twice", id)
		}
		c.index[id] = int32(i + 1)
		t := NewTile(id)
		t.x.chip = true
		c.tiles = append(c.tiles, t)
	}
	c.active = make([]bool, len(c.tiles))
	c.stop = make([]Result, len(c.tiles))
	return c, nil
}

// Tiles returns the chip's tiles in physical-id order.
func (c *Chip) Tiles() []*Tile { return c.tiles }

// Tile returns physical tile id, or nil when it is not on the chip. Load
// code and data with its Write/WriteWords before Start.
func (c *Chip) Tile(id int) *Tile { return c.tile(id) }

func (c *Chip) tile(id int) *Tile {
	if id < 0 || id >= ipu21.Tiles || c.index[id] == 0 {
		return nil
	}
	return c.tiles[c.index[id]-1]
}

// Start starts tile id's supervisor at pc. Started tiles are active: they
// take part in every chip-wide sync; tiles never started are not waited
// for.
func (c *Chip) Start(id int, pc uint32) error {
	if id < 0 || id >= ipu21.Tiles || c.index[id] == 0 {
		return fmt.Errorf("chip: no tile %d", id)
	}
	i := int(c.index[id]) - 1
	c.tiles[i].Start(pc)
	c.active[i] = true
	c.stop[i] = Result{}
	return nil
}

// Cycle returns the latest cycle of any tile.
func (c *Chip) Cycle() uint64 {
	var m uint64
	for _, t := range c.tiles {
		m = max(m, t.cycle)
	}
	return m
}

// Stats returns the chip's counters.
func (c *Chip) Stats() ChipStats { return c.stats }

// parallel calls f(k) for k in [0, n) on up to GOMAXPROCS goroutines.
func parallel(n int, f func(k int)) {
	procs := min(runtime.GOMAXPROCS(0), n)
	if procs <= 1 {
		for k := 0; k < n; k++ {
			f(k)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < procs; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				f(k)
			}
		}()
	}
	wg.Wait()
}

// isHostZone: zones 4..15 synchronise with the outside of the chip
// (Saghetti0/graphcore-ipu-research "sync zones": EXTERNAL/GS zones 4..7
// and 12..15; ipustack treats 8..11 the same).
func isHostZone(z int) bool { return z >= 4 }

// Run runs the chip until every active tile waits at a host sync (no Host
// hook), nothing can issue, or maxCycles cycles have passed on the latest
// tile. It returns a *Fault for the earliest fault (ties: lowest tile id)
// and a *DeadlockError when the tiles cannot all reach the sync some of
// them wait at.
func (c *Chip) Run(maxCycles uint64) (ChipResult, error) {
	deadline := c.Cycle() + maxCycles
	if deadline < maxCycles {
		deadline = never
	}
	if c.hostPending {
		c.hostPending = false
		c.releaseGlobal()
	}
	c.order = c.order[:0]
	for i, t := range c.tiles {
		if c.active[i] && t.fault == nil && c.runnable(i) {
			c.order = append(c.order, i)
		}
	}
	for {
		if err := c.runPasses(deadline); err != nil {
			return c.result(0, 0), err
		}
		if f := c.firstFault(); f != nil {
			return c.result(0, 0), f
		}
		for i := range c.tiles {
			if c.active[i] && c.stop[i].Reason == StopLimit {
				// Out of budget: resolve nothing yet, so that a transfer
				// is never split between two rounds; Run again goes on.
				return c.result(ChipLimit, 0), nil
			}
		}
		// Close the segments that ended, then resolve the round.
		for i, t := range c.tiles {
			if c.active[i] && c.stop[i].Reason == StopExchange {
				t.x.segOpen = false
				t.x.segEnd = c.stop[i].Cycle
			}
		}
		c.resolve()
		if f := c.firstFault(); f != nil {
			return c.result(0, 0), f
		}
		// Release what can go on without a chip-wide sync.
		c.order = c.order[:0]
		for i, t := range c.tiles {
			if !c.active[i] {
				continue
			}
			switch r := c.stop[i]; {
			case r.Reason == StopExchange:
				c.order = append(c.order, i)
			case r.Reason == StopSync && r.Zone == int(ipu21.SyncRecv) && t.Sup.CSR[csrIncomingDCount] == 0:
				t.SetCycle(max(t.cycle, t.x.lastW))
				t.ReleaseSync()
				c.order = append(c.order, i)
			}
		}
		if len(c.order) > 0 {
			continue
		}
		// Every active tile is parked: at a sync, idle, or at the deadline.
		zone, mixed, waiting, idle, recv := -1, false, 0, 0, false
		for i := range c.tiles {
			if !c.active[i] {
				continue
			}
			switch r := c.stop[i]; r.Reason {
			case StopIdle:
				idle++
			case StopSync:
				waiting++
				recv = recv || r.Zone == int(ipu21.SyncRecv)
				if zone < 0 {
					zone = r.Zone
				} else if zone != r.Zone {
					mixed = true
				}
			}
		}
		switch {
		case waiting == 0:
			return c.result(ChipIdle, 0), nil
		case idle > 0:
			return c.result(0, 0), c.deadlock("tiles wait at a sync that idle tiles will never reach")
		case recv:
			return c.result(0, 0), c.deadlock("tiles wait at sync 0 (RECV) for incoming words that never come (INCOMING_DCOUNT > 0)")
		case mixed:
			return c.result(0, 0), c.deadlock("tiles wait at different sync zones")
		case isHostZone(zone):
			resume := false
			if c.Host != nil {
				var err error
				if resume, err = c.Host(c, zone); err != nil {
					return c.result(0, 0), err
				}
			}
			if !resume {
				c.hostPending = true
				return c.result(ChipHost, zone), nil
			}
		}
		c.releaseGlobal()
	}
}

func (c *Chip) result(r ChipStop, zone int) ChipResult {
	return ChipResult{Reason: r, Zone: zone, Cycle: c.Cycle(), Stats: c.stats}
}

// runnable reports whether tile i can go on from its last stop without
// the chip (not started yet in this run, or out of budget).
func (c *Chip) runnable(i int) bool {
	r := c.stop[i].Reason
	return r == 0 || r == StopLimit
}

// runPasses runs the tiles in c.order in parallel passes of Slice cycles
// until each stops for a reason other than its slice.
func (c *Chip) runPasses(deadline uint64) error {
	for len(c.order) > 0 {
		order := c.order
		parallel(len(order), func(k int) {
			i := order[k]
			t := c.tiles[i]
			budget := min(c.Slice, deadline-min(deadline, t.cycle))
			res, _ := t.Run(budget)
			c.stop[i] = res
		})
		next := order[:0]
		for _, i := range order {
			if c.stop[i].Reason == StopLimit && c.tiles[i].cycle < deadline {
				next = append(next, i)
			}
		}
		c.order = next
		if len(next) == 0 || c.firstFault() != nil {
			c.order = c.order[:0]
			return nil
		}
		// Deadlock: tiles wait at a sync while another runs on far past
		// the last arrival.
		var arrival uint64
		waiting := false
		for i := range c.tiles {
			if c.active[i] && (c.stop[i].Reason == StopSync || c.stop[i].Reason == StopIdle) {
				waiting = true
				arrival = max(arrival, c.stop[i].Cycle)
			}
		}
		if waiting {
			for _, i := range next {
				if c.tiles[i].cycle > arrival+c.DeadlockCycles {
					c.order = c.order[:0]
					return c.deadlock(fmt.Sprintf("tiles run more than %d cycles past the last arrival at the sync others wait at (cycle %d)", c.DeadlockCycles, arrival))
				}
			}
		}
	}
	return nil
}

// releaseGlobal completes a chip-wide sync: every active tile resumes at
// the latest arrival plus SyncCycles.
func (c *Chip) releaseGlobal() {
	var arrival uint64
	for i := range c.tiles {
		if c.active[i] {
			arrival = max(arrival, c.stop[i].Cycle)
		}
	}
	resume := arrival + c.SyncCycles
	c.order = c.order[:0]
	for i, t := range c.tiles {
		if !c.active[i] {
			continue
		}
		t.SetCycle(resume)
		t.ReleaseSync()
		t.x.streamOpen = false
		c.stop[i] = Result{}
		c.order = append(c.order, i)
	}
	c.stats.Syncs++
}

// firstFault returns the earliest fault of any tile (ties: lowest id).
func (c *Chip) firstFault() *Fault {
	var best *Fault
	for _, t := range c.tiles {
		if f := t.fault; f != nil && (best == nil || f.Cycle < best.Cycle) {
			best = f
		}
	}
	return best
}

// resolve performs one exchange round over all tiles.
func (c *Chip) resolve() {
	any := false
	for _, t := range c.tiles {
		if len(t.x.sends) > 0 || len(t.x.ctrls) > 0 || t.x.rx.mux.src < ipu21.Tiles || t.x.rx.pair.src < ipu21.Tiles {
			any = true
			break
		}
	}
	if !any {
		for _, t := range c.tiles {
			t.x.fetches = t.x.fetches[:0]
		}
		return
	}
	n := len(c.tiles)
	parallel(n, func(k int) { sortCtrls(c.tiles[k]) })
	parallel(n, func(k int) { c.resolveTile(c.tiles[k]) })
	if c.firstFault() == nil {
		parallel(n, func(k int) { c.applyTile(c.tiles[k]) })
	}
	for _, t := range c.tiles {
		if c.OnWrite != nil && t.fault == nil {
			for _, r := range t.x.writes {
				c.OnWrite(t.ID, r.w, r.dst, r.n, int(r.size), int(r.src))
			}
		}
		c.stats.Words += t.x.words
		t.x.sends, t.x.ctrls, t.x.fetches = t.x.sends[:0], t.x.ctrls[:0], t.x.fetches[:0]
	}
	c.stats.Rounds++
}

// TileState says where a tile stands, for deadlock reports.
type TileState struct {
	Tile   int
	Cycle  uint64
	State  string // e.g. "waiting at sync 3 (arrived cycle 601)", "running"
	PC     uint32 // the supervisor's instruction (the sync it waits at)
	Disasm string
	// Workers lists running workers and their PCs.
	Workers string
}

func (s TileState) String() string {
	str := fmt.Sprintf("tile %d: %s, pc 0x%05x %q", s.Tile, s.State, s.PC, s.Disasm)
	if s.Workers != "" {
		str += "; " + s.Workers
	}
	return str
}

// DeadlockError reports tiles that cannot all reach the sync others wait
// at. Tiles lists every active tile; Culprits the ones not waiting.
type DeadlockError struct {
	Cycle    uint64
	Reason   string
	Culprits []TileState
	Tiles    []TileState
}

func (e *DeadlockError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deadlock at cycle %d: %s", e.Cycle, e.Reason)
	culprit := map[int]bool{}
	for _, s := range e.Culprits {
		culprit[s.Tile] = true
		b.WriteString("\n  ")
		b.WriteString(s.String())
	}
	shown := 0
	for _, s := range e.Tiles {
		if culprit[s.Tile] {
			continue
		}
		if shown == 8 {
			fmt.Fprintf(&b, "\n  ... and %d more waiting", len(e.Tiles)-len(e.Culprits)-shown)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(s.String())
		shown++
	}
	return b.String()
}

// deadlock builds the report. Culprits: tiles not at the most common sync
// zone (running, idle, at the deadline, or at another zone).
func (c *Chip) deadlock(reason string) *DeadlockError {
	e := &DeadlockError{Cycle: c.Cycle(), Reason: reason}
	count := map[int]int{}
	for i := range c.tiles {
		if c.active[i] && c.stop[i].Reason == StopSync && c.stop[i].Zone != int(ipu21.SyncRecv) {
			count[c.stop[i].Zone]++
		}
	}
	common, best := -1, 0
	for z, n := range count {
		if n > best || (n == best && z < common) {
			common, best = z, n
		}
	}
	for i, t := range c.tiles {
		if !c.active[i] {
			continue
		}
		s := c.where(t, c.stop[i])
		e.Tiles = append(e.Tiles, s)
		r := c.stop[i]
		if r.Reason != StopSync || r.Zone != common || r.Zone == int(ipu21.SyncRecv) {
			e.Culprits = append(e.Culprits, s)
		}
	}
	return e
}

func (c *Chip) where(t *Tile, r Result) TileState {
	s := TileState{Tile: t.ID, Cycle: t.cycle, PC: t.Sup.PC}
	switch r.Reason {
	case StopSync:
		s.PC = t.Sup.PC - 4
		s.State = fmt.Sprintf("waiting at sync %d (arrived cycle %d)", r.Zone, r.Cycle)
		if r.Zone == int(ipu21.SyncRecv) {
			s.State += fmt.Sprintf(", INCOMING_DCOUNT %d", t.Sup.CSR[csrIncomingDCount])
		}
	case StopIdle:
		s.State = "idle (never reaches the sync)"
	case StopLimit:
		s.State = fmt.Sprintf("still running at cycle %d", t.cycle)
	default:
		s.State = fmt.Sprintf("%s at cycle %d", r.Reason, t.cycle)
	}
	s.State += ", supervisor " + t.Sup.State.String()
	if ws := t.wordsAt(s.PC, 2); len(ws) > 0 && s.PC >= sramBase && s.PC&3 == 0 {
		if d, err := isa.Decode(ws); err == nil {
			s.Disasm = isa.Format(d)
		} else {
			s.Disasm = "?"
		}
	}
	var w []string
	for i := range t.Workers {
		if t.running&(1<<i) != 0 {
			w = append(w, fmt.Sprintf("worker %d running at pc 0x%05x", i, t.Workers[i].PC))
		}
	}
	s.Workers = strings.Join(w, ", ")
	return s
}
