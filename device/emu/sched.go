package emu

import (
	"fmt"
	"math/bits"

	"github.com/ipustack/ipustack/isa"
)

// StopReason says why Tile.Run returned.
type StopReason uint8

const (
	// StopLimit: the cycle budget of the call ran out; Run again to go on.
	StopLimit StopReason = iota + 1
	// StopIdle: no context can issue: the supervisor is idle (never
	// started) and no worker runs.
	StopIdle
	// StopSync: the supervisor waits at a sync zone that needs other
	// tiles (anything but LOCAL); the chip device resolves it and calls
	// ReleaseSync.
	StopSync
	// StopFault: a context faulted; Run also returns the *Fault.
	StopFault
	// StopExchange: only on a tile of a Chip. The supervisor ended an
	// exchange segment: after one or more exchange instructions it is about
	// to issue another instruction (in the returned Cycle). The chip
	// resolves the exchange fabric, then runs the tile on.
	StopExchange
)

var stopNames = [...]string{"", "limit", "idle", "sync", "fault", "exchange"}

func (r StopReason) String() string {
	if int(r) < len(stopNames) {
		return stopNames[r]
	}
	return fmt.Sprintf("StopReason(%d)", uint8(r))
}

// Result reports one Tile.Run call.
type Result struct {
	Reason  StopReason
	Zone    int    // sync zone for StopSync
	Cycle   uint64 // tile cycle counter when Run returned
	Bundles uint64 // bundles issued during the call
}

func (r Result) String() string {
	switch r.Reason {
	case StopSync:
		return fmt.Sprintf("sync zone %d needs the whole-chip device (cycle %d)", r.Zone, r.Cycle)
	case StopLimit:
		return fmt.Sprintf("cycle limit reached (cycle %d)", r.Cycle)
	case StopIdle:
		return fmt.Sprintf("idle: no context can issue (cycle %d)", r.Cycle)
	case StopExchange:
		return fmt.Sprintf("exchange segment ended (cycle %d)", r.Cycle)
	}
	return fmt.Sprintf("%s (cycle %d)", r.Reason, r.Cycle)
}

// ReleaseSync lets a supervisor blocked at a chip-level sync zone continue
// with the bundle after its sync, no earlier than the current cycle.
func (t *Tile) ReleaseSync() {
	if t.Sup.State == WaitingSync {
		t.Sup.State = Running
		if t.Sup.next < t.cycle {
			t.Sup.next = t.cycle
		}
	}
}

// SetCycle moves the tile's clock forward to c (the chip device uses it to
// account for time spent outside the tile, e.g. in a global sync). Moving
// backwards is ignored.
func (t *Tile) SetCycle(c uint64) {
	if c > t.cycle {
		t.cycle = c
	}
}

// Run executes bundles until maxCycles tile cycles have passed or the tile
// stops (idle, chip-level sync, fault). The returned error is the *Fault
// when Reason is StopFault, else nil.
//
// Scheduling (docs/machine-tile.md): cycle c belongs to slot c mod 6; a
// running worker w issues only in slot w, one bundle per 6 cycles (times
// the bundle's issue cost); the supervisor owns every slot without a
// running worker and issues in each of them. The loop jumps
// from one issuing cycle to the next, so idle cycles cost nothing.
func (t *Tile) Run(maxCycles uint64) (Result, error) {
	res := Result{}
	if t.fault != nil {
		res.Reason, res.Cycle = StopFault, t.cycle
		return res, t.fault
	}
	limit := t.cycle + maxCycles
	if limit < t.cycle {
		limit = ^uint64(0)
	}
	sup := &t.Sup
	for {
		// Fast path: the worker owning this cycle's slot is ready. Nothing
		// can issue earlier, and the supervisor may not take a running
		// worker's slot, so it is the next issuer.
		if s := t.cycle % slots; t.running&(1<<s) != 0 && t.Workers[s].next == t.cycle && t.cycle < limit {
			t.issue(&t.Workers[s])
			res.Bundles++
			t.cycle++
			if t.fault != nil {
				res.Reason, res.Cycle = StopFault, t.cycle
				return res, t.fault
			}
			continue
		}
		// Pick the context that issues next: the earliest candidate.
		best := (*Context)(nil)
		bestC := ^uint64(0)
		for m := t.running; m != 0; m &= m - 1 {
			w := &t.Workers[bits.TrailingZeros8(m)]
			if w.next < bestC {
				bestC, best = w.next, w
			}
		}
		if sup.State == WaitingSync && sup.syncZone == uint32(localZone) && t.running == 0 {
			// The LOCAL barrier completes once every worker has exited;
			// the supervisor continues after the rendezvous latency
			// (latency.go).
			sup.State = Running
			sup.next = max(sup.next, localSyncResume(t.lastExit))
		}
		if sup.State == Running && t.running != 0x3F {
			c := max(sup.next, t.cycle)
			for t.running&(1<<(c%slots)) != 0 {
				c++
			}
			if c < bestC {
				bestC, best = c, sup
			}
		}
		if best == nil {
			switch {
			case sup.State == WaitingSync:
				res.Reason, res.Zone = StopSync, int(sup.syncZone)
			case sup.State == WaitingRun:
				// Cannot happen: run waits only while all workers run.
				res.Reason = StopIdle
			default:
				res.Reason = StopIdle
			}
			res.Cycle = t.cycle
			return res, nil
		}
		if bestC >= limit {
			t.cycle = limit
			res.Reason, res.Cycle = StopLimit, t.cycle
			return res, nil
		}
		if best == sup && t.x.segOpen && t.x.chip {
			// An exchange segment ends before the first supervisor
			// instruction that is not an exchange instruction.
			t.cur, t.curPC = sup, sup.PC
			b := t.fetch(sup.PC)
			if b == nil {
				res.Reason, res.Cycle = StopFault, t.cycle
				return res, t.fault
			}
			if !b.xch && !isRecvSync(b) {
				// Its fetch, in the segment's last cycle, still meets
				// the segment's sends and incoming writes.
				t.x.fetches = append(t.x.fetches, fetchRec{cycle: bestC, pc: sup.PC})
				t.cycle = bestC
				res.Reason, res.Cycle = StopExchange, t.cycle
				return res, nil
			}
		}
		t.cycle = bestC
		t.issue(best)
		res.Bundles++
		t.cycle++
		if t.fault != nil {
			res.Reason, res.Cycle = StopFault, t.cycle
			return res, t.fault
		}
	}
}

const localZone = 2 // ipu21.SyncLocal

// issue executes one bundle of context c at cycle t.cycle.
func (t *Tile) issue(c *Context) {
	pc := c.PC
	t.cur, t.curPC = c, pc
	b := t.fetch(pc)
	if b == nil {
		return
	}
	kind := isa.Worker
	if c.Worker < 0 {
		kind = isa.Supervisor
	}
	if b.ctx&kind == 0 {
		t.raise(FaultIllegal, "%s is not allowed in a %s context", bundleIDs(b), kindName(kind))
		return
	}
	if c.Worker < 0 {
		// The supervisor owns every slot no worker holds and issues in
		// each of them (docs/machine.md, "Issue model").
		c.next = t.cycle + uint64(b.cost)
	} else {
		c.next = t.cycle + slots*uint64(b.cost)
	}
	c.PC = pc + uint32(b.size)
	t.issuing = true
	if b.n == 1 {
		b.i[0].fn(t, c, &b.i[0])
	} else {
		t.execPair(c, b)
	}
	t.issuing = false
	if t.exited {
		t.exited = false
		if !t.assume.Has(AssumeAMPStateRetained) {
			// Conservative alternative of amp-state-retained: the AMP
			// pipeline (the partial sums being accumulated and the
			// finished sums not yet drained) does not survive the exit.
			// Applied after the whole bundle, so an AMP instruction
			// co-issued with the exit completes first.
			t.amp.acc[c.Worker] = ampAcc{}
		}
	}
	if t.clearAfterIssue {
		t.clearAfterIssue = false
		t.invalidate(pc, 4)
	}
	if t.x.segOpen {
		// Instruction fetches during an exchange segment take part in
		// the memory-element clash check (docs/machine.md).
		t.x.fetches = append(t.x.fetches, fetchRec{cycle: t.cycle, pc: pc})
	}
	// $mzero and $azero read as zero whatever was written to them, and so
	// does $azeros ($a14:15; see decode).
	c.M[regZero] = 0
	c.A[regZero] = 0
	c.A[regZero-1] = 0
	// Zero-overhead repeat: falling out of the body's last bundle goes
	// back to its first while iterations remain.
	if c.PC == c.rptEnd && c.rptCount > 0 {
		c.rptCount--
		c.PC = c.rptFirst
	}
}

// execPair runs a co-issued main+aux bundle so that both instructions read
// the register values from before the bundle (docs/machine-tile.md).
func (t *Tile) execPair(c *Context, b *bundle) {
	m, a := &b.i[0], &b.i[1]
	switch b.mode {
	case modeMainFirst:
		m.fn(t, c, m)
		a.fn(t, c, a)
	case modeAuxFirst:
		a.fn(t, c, a)
		m.fn(t, c, m)
	default:
		// Both read and write $a: run main, set aside its values of the
		// registers the aux instruction also names, give aux the
		// pre-bundle values, then let main's writes win.
		var old, mainNew [16]uint32
		for s := b.shared; s != 0; s &= s - 1 {
			r := bits.TrailingZeros16(s)
			old[r] = c.A[r]
		}
		m.fn(t, c, m)
		for s := b.shared; s != 0; s &= s - 1 {
			r := bits.TrailingZeros16(s)
			mainNew[r], c.A[r] = c.A[r], old[r]
		}
		a.fn(t, c, a)
		for s := b.shared; s != 0; s &= s - 1 {
			r := bits.TrailingZeros16(s)
			if mainNew[r] != old[r] {
				c.A[r] = mainNew[r]
			}
		}
	}
}

func kindName(k isa.Context) string {
	if k == isa.Supervisor {
		return "supervisor"
	}
	return "worker"
}

func bundleIDs(b *bundle) string {
	if b.n == 1 {
		return b.i[0].row.ID()
	}
	return b.i[0].row.ID() + " + " + b.i[1].row.ID()
}
