package emu

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
)

// The exchange fabric: resolving one round of timed sends and receive
// controls into incoming writes. The rules are in docs/machine.md ("The
// chip: syncs and exchange"); in short, for receiver d with latency
// L = PayloadLatency + 2*row(d):
//
//   - an item put on s's outgoing stream in cycle e reaches d's incoming
//     mux in cycle u = e + ttm(s, d); a 64-bit item reaches the receiving
//     pair's mux in u = e + PairedTimeToMux(s, d) - 1 (see pairedDelay);
//   - while d's mux selects s, each sampled word is written in cycle
//     u + L (a 64-bit item in u + L + 1) at the write pointer, which then
//     advances by 4 (8); INCOMING_FORMAT in force in cycle u + L - 1 must
//     say 32-bit for a word and 64-bit for an item;
//   - a receive window (from an XPIC selecting a tile to the next XPIC)
//     must start with a word and receive one word per cycle until its
//     stream stops; after that the source must stay silent while the
//     window is open.

// rxWin is the state of one receive path's source window.
type rxWin struct {
	src   uint32 // selected value: tile, host port or neutral
	since uint64 // cycle of the first sample
	pc    uint32 // the control that opened the window
	words bool   // the window's stream has started
	ended bool   // its stream has stopped (at endAt)
	endAt uint64
}

// rxState is a tile's receive state, carried from round to round.
type rxState struct {
	mux, pair rxWin
	ptr       uint32 // next write address
	ptrPC     uint32
	fmt       uint32 // INCOMING_FORMAT
	fmtPC     uint32
}

// piece is a run of consecutive incoming items from one send run.
type piece struct {
	w     uint64 // write cycle of the first item
	stage uint64 // cycle whose INCOMING_FORMAT applies to the first item
	n     uint32
	src   int32 // sending tile (physical id)
	saddr uint32
	pc    uint32 // the control that opened the window
	size  uint8
}

// writeRun is a run of consecutive incoming writes to consecutive addresses.
type writeRun struct {
	w     uint64
	n     uint32
	dst   uint32
	src   int32
	saddr uint32
	pc    uint32 // the PIC control that set the pointer
	size  uint8
	off   int // offset of the data in xstate.buf
}

const never = ^uint64(0)

// pairedDelay is the route delay of a 64-bit item from s to the pair of d:
// PairedTimeToMux - 1, the earlier of the two members' ttm (they differ
// by one). Source: ipu-stack's SDK-matched paired rows (exchange.rs
// paired_multicast: the pair's XPIC at the send's timeline position plus
// paired_time_to_mux, where an ordinary window opens one event later).
func pairedDelay(s, d int) int64 { return int64(ipu21.PairedTimeToMux(s, d)) - 1 }

// latency returns the cycles from a receiver's mux sample to its memory
// write of a 32-bit word.
func latency(d int) uint64 { return uint64(ipu21.PayloadLatency + 2*ipu21.Row(d)) }

// resolveTile computes tile d's incoming writes of the round and gathers
// their data from the senders' SRAM (read only: runs in parallel over
// tiles). It also checks d's paired sends against its partner's lane.
// Faults are recorded on d.
func (c *Chip) resolveTile(d *Tile) {
	x := &d.x
	x.pieces, x.writes, x.buf = x.pieces[:0], x.writes[:0], x.buf[:0]
	x.items, x.words = 0, 0
	if !c.checkLanes(d) {
		return
	}
	if !c.rxPath(d, false) || !c.rxPath(d, true) {
		return
	}
	if !c.buildWrites(d) {
		return
	}
	total := 0
	for i := range x.writes {
		total += int(x.writes[i].n) * int(x.writes[i].size)
	}
	x.buf = slices.Grow(x.buf[:0], total)[:total]
	for i := range x.writes {
		r := &x.writes[i]
		src := c.tile(int(r.src))
		nb := int(r.n) * int(r.size)
		copy(x.buf[r.off:r.off+nb], src.mem[r.saddr-sramBase:])
		x.items += uint64(r.n)
		x.words += uint64(nb / 4)
	}
}

// sortCtrls puts a tile's controls in cycle order (they are recorded in
// issue order, which is already cycle order for rows of exchange
// instructions). It runs in its own parallel pass, before any tile reads
// its partner's controls.
func sortCtrls(t *Tile) {
	slices.SortStableFunc(t.x.ctrls, func(a, b ctrlRec) int { return cmp.Compare(a.ev, b.ev) })
}

// checkLanes: a paired send borrows the partner tile's outgoing lane, so
// the partner must not send meanwhile (ipu-stack EXCHANGE_INSTRUCTION_REFERENCE
// "Paired sender lane reservation").
func (c *Chip) checkLanes(s *Tile) bool {
	p := c.tile(ipu21.Partner(s.ID))
	if p == nil {
		return true
	}
	for _, r := range s.x.sends {
		if r.size != 8 {
			continue
		}
		for _, q := range p.x.sends {
			if q.ev < r.ev+uint64(r.n) && r.ev < q.ev+uint64(q.n) {
				at := max(q.ev, r.ev)
				s.faultAt(FaultExchange, r.pc, at, "paired send borrows the outgoing lane of partner tile %d, which sends in cycle %d (its send at pc 0x%05x)", p.ID, at, q.pc)
				return false
			}
		}
	}
	return true
}

// rxPath walks one receive path's source windows over the round.
func (c *Chip) rxPath(d *Tile, paired bool) bool {
	x := &d.x
	kind, win := ctrlMux, &x.rx.mux
	if paired {
		kind, win = ctrlPair, &x.rx.pair
	}
	var ctrls []ctrlRec
	if paired {
		// The pair's 64-bit source is shared: an XPIC with the pair flag
		// on either tile of the receiving pair sets it for both (ipu-stack
		// issues it on one tile of the pair only).
		ctrls = pairCtrls(d, c.tile(ipu21.Partner(d.ID)))
	} else {
		ctrls = x.ctrls
	}
	for i := 0; ; i++ {
		for i < len(ctrls) && ctrls[i].kind != kind {
			i++
		}
		end := never
		if i < len(ctrls) {
			end = ctrls[i].ev
		}
		if !c.window(d, win, end, paired) {
			return false
		}
		if i == len(ctrls) {
			return true
		}
		*win = rxWin{src: ctrls[i].val, since: ctrls[i].ev, pc: ctrls[i].pc}
	}
}

// pairCtrls merges the paired-source controls of a receiving pair, in
// cycle order (ties: the even tile of the pair first).
func pairCtrls(d, p *Tile) []ctrlRec {
	var out []ctrlRec
	add := func(t *Tile) {
		if t == nil {
			return
		}
		for _, r := range t.x.ctrls {
			if r.kind == ctrlPair {
				out = append(out, r)
			}
		}
	}
	first, second := d, p
	if d.ID&2 != 0 {
		first, second = p, d
	}
	add(first)
	add(second)
	slices.SortStableFunc(out, func(a, b ctrlRec) int { return cmp.Compare(a.ev, b.ev) })
	return out
}

// seg is a part of a send run seen through a window: samples [u0, u1).
type seg struct {
	u0, u1 uint64
	tile   *Tile
	run    *sendRec
}

// window resolves the samples [w.since, end) of a window on tile d.
func (c *Chip) window(d *Tile, w *rxWin, end uint64, paired bool) bool {
	if end <= w.since || w.src >= ipu21.Tiles {
		return true
	}
	var segs [8]seg
	list := segs[:0]
	srcs := []int{int(w.src)}
	if paired {
		srcs = append(srcs, int(w.src)^2)
	}
	for _, sid := range srcs {
		s := c.tile(sid)
		if s == nil {
			continue
		}
		var delay int64
		if paired {
			delay = pairedDelay(sid, d.ID)
		} else {
			delay = int64(ipu21.TimeToMux(sid, d.ID))
		}
		// Samples [since, end) see events [since-delay, end-delay).
		lo := int64(w.since) - delay
		runs := s.x.sends
		i, _ := slices.BinarySearchFunc(runs, lo, func(r sendRec, ev int64) int {
			if int64(r.ev)+int64(r.n) <= ev {
				return -1
			}
			return 1
		})
		for ; i < len(runs); i++ {
			r := &runs[i]
			if (r.size == 8) != paired {
				continue
			}
			e0 := int64(r.ev) + delay
			u1 := uint64(max(e0+int64(r.n), 0))
			u0 := uint64(max(e0, 0))
			if u0 >= end {
				break
			}
			if max(u0, w.since) >= min(u1, end) {
				continue
			}
			list = append(list, seg{u0: max(u0, w.since), u1: min(u1, end), tile: s, run: r})
		}
	}
	if paired && len(list) > 1 {
		slices.SortFunc(list, func(a, b seg) int { return cmp.Compare(a.u0, b.u0) })
	}
	L := latency(d.ID)
	cursor := w.since
	for _, sg := range list {
		switch {
		case w.ended:
			return c.noSender(d, w, w.endAt, paired, fmt.Sprintf("the stream from tile %d stopped in cycle %d and resumes in cycle %d while the window is still open (close it with XPIC 0x640 when the stream ends)", sg.tile.ID, w.endAt, sg.u0))
		case !w.words && sg.u0 != w.since:
			return c.noSender(d, w, w.since, paired, "")
		case w.words && sg.u0 != cursor:
			return c.noSender(d, w, cursor, paired, fmt.Sprintf("the stream from tile %d pauses in cycle %d and resumes in cycle %d", sg.tile.ID, cursor, sg.u0))
		}
		if dir := ipu21.SendDirection(sg.tile.ID, d.ID); int(sg.run.dirs)&dir == 0 {
			d.faultAt(FaultWrongSender, w.pc, sg.u0, "the selected tile %d sends in cycle %d with direction bits %d (send at pc 0x%05x), away from this tile (direction %d): the word never arrives", sg.tile.ID, sg.u0, sg.run.dirs, sg.run.pc, dir)
			return false
		}
		// Index of the first item of this segment inside its run.
		var delay int64
		if paired {
			delay = pairedDelay(sg.tile.ID, d.ID)
		} else {
			delay = int64(ipu21.TimeToMux(sg.tile.ID, d.ID))
		}
		idx := uint32(int64(sg.u0) - delay - int64(sg.run.ev))
		p := piece{
			n: uint32(sg.u1 - sg.u0), src: int32(sg.tile.ID), saddr: sg.run.addr + idx*uint32(sg.run.size),
			pc: w.pc, size: sg.run.size, stage: sg.u0 + L - 1, w: sg.u0 + L,
		}
		if paired {
			p.w++
		}
		d.x.pieces = append(d.x.pieces, p)
		w.words = true
		cursor = sg.u1
	}
	if !w.words {
		return c.noSender(d, w, w.since, paired, "")
	}
	if cursor < end && !w.ended {
		w.ended, w.endAt = true, cursor
	}
	return true
}

// noSender reports a window sample with no word from the selected tile:
// a wrong-sender fault when another tile's word reaches the mux in that
// cycle, else a no-sender fault.
func (c *Chip) noSender(d *Tile, w *rxWin, u uint64, paired bool, why string) bool {
	what := "word"
	if paired {
		what = "64-bit item"
	}
	if why == "" {
		why = fmt.Sprintf("tile %d sends no %s that reaches this tile in cycle %d", w.src, what, u)
		if s := c.tile(int(w.src)); s != nil {
			delay := int64(ipu21.TimeToMux(s.ID, d.ID))
			if paired {
				delay = pairedDelay(s.ID, d.ID)
			}
			if r := runAt(s.x.sends, int64(u)-delay); r != nil {
				if r.size == 8 {
					why += " (it sends 64-bit items then: receive them on the paired path)"
				} else {
					why += " (it sends 32-bit words then: receive them on the ordinary path)"
				}
			}
		} else {
			why = fmt.Sprintf("tile %d is not part of the chip", w.src)
		}
	}
	// Another tile whose word reaches this tile's mux at u?
	for _, t := range c.tiles {
		if t.ID == int(w.src) || (paired && t.ID == int(w.src)^2) {
			continue
		}
		delay := int64(ipu21.TimeToMux(t.ID, d.ID))
		if paired {
			delay = pairedDelay(t.ID, d.ID)
		}
		r := runAt(t.x.sends, int64(u)-delay)
		if r == nil || (r.size == 8) != paired || int(r.dirs)&ipu21.SendDirection(t.ID, d.ID) == 0 {
			continue
		}
		d.faultAt(FaultWrongSender, w.pc, u, "receive window selects tile %d (since cycle %d), but the %s reaching this tile in cycle %d comes from tile %d (its send at pc 0x%05x): %s", w.src, w.since, what, u, t.ID, r.pc, why)
		return false
	}
	d.faultAt(FaultNoSender, w.pc, u, "receive window selects tile %d since cycle %d: %s", w.src, w.since, why)
	return false
}

// runAt returns the send run with an item on the stream in cycle ev.
func runAt(runs []sendRec, ev int64) *sendRec {
	i, _ := slices.BinarySearchFunc(runs, ev, func(r sendRec, ev int64) int {
		if int64(r.ev)+int64(r.n) <= ev {
			return -1
		}
		return 1
	})
	if i < len(runs) && int64(runs[i].ev) <= ev {
		return &runs[i]
	}
	return nil
}

// buildWrites turns the round's pieces into write runs through the PIC
// pointer and checks format, addresses and the exchange segment.
func (c *Chip) buildWrites(d *Tile) bool {
	x := &d.x
	ps := x.pieces
	slices.SortFunc(ps, func(a, b piece) int { return cmp.Compare(a.w, b.w) })
	for i := 1; i < len(ps); i++ {
		if ps[i].w < ps[i-1].w+uint64(ps[i-1].n) {
			d.faultAt(FaultExchange, ps[i].pc, ps[i].w, "two incoming streams write in cycle %d (from tiles %d and %d): the ordinary and the paired receive path overlap", ps[i].w, ps[i-1].src, ps[i].src)
			return false
		}
	}
	rx := &x.rx
	ctrls := x.ctrls
	var ptrs, fmts []ctrlRec
	for _, r := range ctrls {
		switch r.kind {
		case ctrlPtr:
			ptrs = append(ptrs, r)
		case ctrlFmt:
			fmts = append(fmts, r)
		}
	}
	pi, fi := 0, 0
	off := 0
	for _, p := range ps {
		for k := uint32(0); k < p.n; {
			wc, sc := p.w+uint64(k), p.stage+uint64(k)
			for pi < len(ptrs) && ptrs[pi].ev <= wc {
				rx.ptr, rx.ptrPC = ptrs[pi].val, ptrs[pi].pc
				pi++
			}
			for fi < len(fmts) && fmts[fi].ev <= sc {
				rx.fmt, rx.fmtPC = fmts[fi].val, fmts[fi].pc
				fi++
			}
			m := p.n - k
			if pi < len(ptrs) {
				m = uint32(min(uint64(m), ptrs[pi].ev-wc))
			}
			if fi < len(fmts) {
				m = uint32(min(uint64(m), fmts[fi].ev-sc))
			}
			size := uint32(p.size)
			if (size == 8) != (rx.fmt != 0) {
				pc := rx.fmtPC
				if pc == 0 {
					pc = p.pc
				}
				if size == 8 {
					d.faultAt(FaultExchange, pc, wc, "a 64-bit item from tile %d arrives while INCOMING_FORMAT is 0 (32-bit words): set the paired format (PIC selector 1) two cycles before the pointer", p.src)
				} else {
					d.faultAt(FaultExchange, pc, wc, "a 32-bit word from tile %d arrives while INCOMING_FORMAT is %d (64-bit items)", p.src, rx.fmt)
				}
				return false
			}
			ptrPC := rx.ptrPC
			if ptrPC == 0 {
				ptrPC = p.pc
			}
			if rx.ptr%size != 0 {
				d.faultAt(FaultIncoming, ptrPC, wc, "incoming write pointer 0x%x is not %d-byte aligned", rx.ptr, size)
				return false
			}
			if !ipu21.InSRAM(rx.ptr, m*size) {
				bad, at := rx.ptr, wc
				if rx.ptr >= sramBase && rx.ptr < sramEnd {
					j := (sramEnd - rx.ptr) / size
					bad, at = rx.ptr+j*size, wc+uint64(j)
				}
				d.faultAt(FaultIncoming, ptrPC, at, "incoming write to 0x%x (from tile %d) is outside SRAM [0x%x, 0x%x)", bad, p.src, sramBase, sramEnd)
				return false
			}
			if last := wc + uint64(m) - 1; last >= x.segEnd {
				at := max(wc, x.segEnd)
				d.faultAt(FaultIncoming, ptrPC, at, "incoming write in cycle %d (from tile %d) lands after this tile's exchange segment ended in cycle %d: keep the supervisor in exchange instructions (delay) until the last word has landed", at, p.src, x.segEnd)
				return false
			}
			x.writes = append(x.writes, writeRun{
				w: wc, n: m, dst: rx.ptr, src: p.src, saddr: p.saddr + k*size,
				pc: ptrPC, size: p.size, off: off,
			})
			off += int(m * size)
			rx.ptr += m * size
			k += m
		}
	}
	for ; pi < len(ptrs); pi++ {
		rx.ptr, rx.ptrPC = ptrs[pi].val, ptrs[pi].pc
	}
	for ; fi < len(fmts); fi++ {
		rx.fmt, rx.fmtPC = fmts[fi].val, fmts[fi].pc
	}
	return true
}

// applyTile checks tile d's memory-element clashes of the round and then
// performs its incoming writes (runs in parallel over tiles: it touches
// only d).
func (c *Chip) applyTile(d *Tile) {
	x := &d.x
	if d.fault != nil {
		return
	}
	if !c.checkClashes(d) {
		return
	}
	for i := range x.writes {
		r := &x.writes[i]
		nb := int(r.n) * int(r.size)
		copy(d.mem[r.dst-sramBase:], x.buf[r.off:r.off+nb])
		d.invalidate(r.dst, uint32(nb))
	}
	if n := len(x.writes); n > 0 {
		last := &x.writes[n-1]
		x.lastW = last.w + uint64(last.n)
		dc := &d.Sup.CSR[csrIncomingDCount]
		if uint64(*dc) > x.items {
			*dc -= uint32(x.items)
		} else {
			*dc = 0
		}
	}
	d.Sup.CSR[csrIncomingDelta] = x.rx.ptr
	d.Sup.CSR[csrIncomingFormat] = x.rx.fmt
}

// element access of a run at cycle cy.
func runElem(addr0 uint32, size uint8, c0, cy uint64) (int, uint32) {
	a := addr0 + uint32(cy-c0)*uint32(size)
	return ipu21.Element(a), a
}

// nextChange returns the first cycle after cy at which a run's element
// changes (the run reads/writes addr0 + size*(cycle-c0)).
func nextChange(addr0 uint32, size uint8, c0, cy uint64) uint64 {
	_, a := runElem(addr0, size, c0, cy)
	_, hi, _ := ipu21.ElementBounds(ipu21.Element(a))
	return cy + uint64((hi-a+uint32(size)-1)/uint32(size))
}

// checkClashes: instruction fetch, a send's SRAM read and an incoming
// write may not use the same memory element in the same cycle
// (ipu-stack memory.rs / exchange.rs; IPU21.md "element hazards").
func (c *Chip) checkClashes(d *Tile) bool {
	x := &d.x
	sends, writes := x.sends, x.writes
	for _, f := range x.fetches {
		fe := ipu21.Element(f.pc)
		if r := runAt(sends, int64(f.cycle)); r != nil {
			if e, a := runElem(r.addr, r.size, r.ev, f.cycle); e == fe {
				d.faultAt(FaultClash, f.pc, f.cycle, "instruction fetch at 0x%05x and the send at pc 0x%05x reading 0x%x use memory element %d in cycle %d", f.pc, r.pc, a, e, f.cycle)
				return false
			}
		}
		if r := writeAt(writes, f.cycle); r != nil {
			if e, a := runElem(r.dst, r.size, r.w, f.cycle); e == fe {
				d.faultAt(FaultClash, f.pc, f.cycle, "instruction fetch at 0x%05x and the incoming write to 0x%x (from tile %d, pointer set at pc 0x%05x) use memory element %d in cycle %d", f.pc, a, r.src, r.pc, e, f.cycle)
				return false
			}
		}
	}
	i := 0
	for _, s := range sends {
		s0, s1 := s.ev, s.ev+uint64(s.n)
		for i < len(writes) && writes[i].w+uint64(writes[i].n) <= s0 {
			i++
		}
		for j := i; j < len(writes) && writes[j].w < s1; j++ {
			r := &writes[j]
			lo, hi := max(s0, r.w), min(s1, r.w+uint64(r.n))
			for cy := lo; cy < hi; {
				es, as := runElem(s.addr, s.size, s.ev, cy)
				ew, aw := runElem(r.dst, r.size, r.w, cy)
				if es == ew {
					d.faultAt(FaultClash, s.pc, cy, "the send at pc 0x%05x reading 0x%x and the incoming write to 0x%x (from tile %d, pointer set at pc 0x%05x) use memory element %d in cycle %d", s.pc, as, aw, r.src, r.pc, es, cy)
					return false
				}
				cy = min(nextChange(s.addr, s.size, s.ev, cy), nextChange(r.dst, r.size, r.w, cy))
			}
		}
	}
	return true
}

func writeAt(runs []writeRun, cy uint64) *writeRun {
	i, _ := slices.BinarySearchFunc(runs, cy, func(r writeRun, cy uint64) int {
		if r.w+uint64(r.n) <= cy {
			return -1
		}
		return 1
	})
	if i < len(runs) && runs[i].w <= cy {
		return &runs[i]
	}
	return nil
}
