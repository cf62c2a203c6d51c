package exchange

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/isa"
)

// Row emission: each tile's timed sends and receive controls become a
// straight sequence of exchange instructions covering events 1..Events.
//
//   - Idle stretches: `delay` (up to 2^19 events per instruction).
//   - A single control outside a send: `delayxpic` (XPIC, <= 4096 events)
//     or `delaypic` (PIC, <= 128 events), preceded by a `delay` when the
//     gap is longer; both controls at one event: a directionless
//     one-event `sendpicp`.
//   - A send: `send` (<= 64 words) then `sendoff` (delta 0, <= 4096 words
//     each). A control falling inside a send splits it there: the piece
//     that starts at the control is a `sendpic` (one control, continuing
//     the stream) or a `sendpicp` (both controls, restarting the stream at
//     the piece's own address); a control on the send's very first event
//     makes the first piece a `sendpicp`, with a harmless second control
//     (pair source neutral, or INCOMING_FORMAT 0 = 32-bit words).
//   - `sendpicp` must start 8-byte aligned: when it would not, an earlier
//     instruction (after the previous sendpicp) covering two or more events
//     is split in two, which moves nothing in time.

type opcode uint8

const (
	opDelay opcode = iota
	opDelayPic
	opDelayXpic
	opSend
	opSendoff
	opSendpic
	opSendpicp
)

// ins is one abstract instruction; n is its events (= words for sends).
type ins struct {
	op     opcode
	n      int
	addr   uint32 // send / sendpicp byte address
	sctl   int
	sel    int    // delaypic/delayxpic/sendpic selector, sendpicp PIC selector
	val    uint32 // control value (PIC: word address), sendpicp PIC value
	xpic   uint32 // sendpicp inline XPIC (bit 13: pair flag)
	stream int    // sctl of the stream it continues (sendpic splitting)
}

const (
	maxDelay     = 1 << 19
	maxDelayPic  = 128
	maxDelayXpic = 4096
	maxSend      = 64
	maxSendoff   = 4096
	xpicPairFlag = 1 << 13
	// Harmless companions of a lone control in a sendpicp: the pair source
	// to neutral, and INCOMING_FORMAT to 0 (32-bit words). They are only
	// needed for a control on a send's first event, which the guard forbids
	// whenever the phase has paired receives (where they would not be
	// harmless); see Build.
	noopXpic   = xpicPairFlag | ipu21.MuxNeutral
	noopPicSel = 1
	noopPic    = 0
)

var (
	rowDelay     = isa.ByID("delay")
	rowDelayPic  = isa.ByID("delaypic")
	rowDelayXpic = isa.ByID("delayxpic")
	rowSend      = isa.ByID("send")
	rowSendoff   = isa.ByID("sendoff")
	rowSendpic   = isa.ByID("sendpic")
	rowSendpicp  = isa.ByID("sendpicp")
)

func (in *ins) size() int {
	if in.op == opSendpicp {
		return 2
	}
	return 1
}

func (in *ins) encode() ([]uint32, error) {
	switch in.op {
	case opDelay:
		return rowDelay.Encode([]int64{int64(in.n)}, false)
	case opDelayPic:
		return rowDelayPic.Encode([]int64{int64(in.n), int64(in.sel), int64(in.val)}, false)
	case opDelayXpic:
		return rowDelayXpic.Encode([]int64{int64(in.n), int64(in.sel), int64(in.val)}, false)
	case opSend:
		return rowSend.Encode([]int64{int64(in.n), int64(sendOperand(in.addr, in.sctl)), int64(in.sctl)}, false)
	case opSendoff:
		return rowSendoff.Encode([]int64{int64(in.n), 0, int64(in.sctl)}, false)
	case opSendpic:
		return rowSendpic.Encode([]int64{int64(in.n), int64(in.sel), int64(in.val)}, false)
	case opSendpicp:
		return rowSendpicp.Encode([]int64{int64(in.n), int64(sendOperand(in.addr, in.sctl)), int64(in.sctl), int64(in.sel), int64(in.xpic), int64(in.val)}, false)
	}
	return nil, fmt.Errorf("bad opcode %d", in.op)
}

// sendOperand is a send's address operand for byte address addr: the
// field counts items, and the operand is the field times 4 (the 32-bit
// case), so a paired send (8-byte items) takes half the byte address.
func sendOperand(addr uint32, sctl int) uint32 {
	if sctl&ipu21.SendPaired != 0 {
		return addr / 2
	}
	return addr
}

// rowBuilder accumulates a tile's instructions, keeping sendpicp aligned.
type rowBuilder struct {
	ins   []ins
	words int
	lastP int // index of the last sendpicp, -1 if none
	cur   int // last event covered
}

func (b *rowBuilder) add(in ins) error {
	if in.op == opSendpicp && b.words%2 == 1 && !b.fixAlign() && !b.mergeAlign() {
		return fmt.Errorf("cannot align sendpicp at event %d: no earlier instruction of two or more events to split or idle event to merge", b.cur+1)
	}
	if in.op == opSendpicp {
		b.lastP = len(b.ins)
	}
	b.ins = append(b.ins, in)
	b.words += in.size()
	b.cur += in.n
	return nil
}

// fixAlign splits the latest instruction covering >= 2 events that is not
// before the last sendpicp, adding one word without moving any event.
func (b *rowBuilder) fixAlign() bool {
	for i := len(b.ins) - 1; i >= 0 && i >= b.lastP; i-- {
		in := b.ins[i]
		if in.n < 2 {
			continue
		}
		var first, second ins
		first, second = in, in
		first.n, second.n = 1, in.n-1
		switch in.op {
		case opDelay:
		case opDelayPic, opDelayXpic:
			first = ins{op: opDelay, n: 1}
		case opSend, opSendoff:
			second = ins{op: opSendoff, n: in.n - 1, sctl: in.sctl}
		case opSendpic:
			second = ins{op: opSendoff, n: in.n - 1, sctl: in.stream}
		case opSendpicp:
			if in.sctl&3 != 0 {
				second = ins{op: opSendoff, n: in.n - 1, sctl: in.sctl}
			} else {
				second = ins{op: opDelay, n: in.n - 1}
			}
		}
		b.ins = slices.Insert(b.ins, i+1, second)
		b.ins[i] = first
		b.words++
		return true
	}
	return false
}

// mergeAlign removes one word without moving any event: a `delay` that
// follows an instruction whose controls (if any) apply at its first event
// and that sends nothing (a `delay`, a directionless `sendpicp`) is folded
// into it. Paired receives put controls two events apart (format, then
// pointer), so a row can reach a sendpicp with only one-event
// instructions since the last one, where fixAlign finds nothing to split.
func (b *rowBuilder) mergeAlign() bool {
	for i := len(b.ins) - 2; i >= 0 && i >= b.lastP; i-- {
		in, next := &b.ins[i], b.ins[i+1]
		if next.op != opDelay {
			continue
		}
		switch {
		case in.op == opDelay && in.n+next.n <= maxDelay:
		case in.op == opSendpicp && in.sctl&3 == 0 && in.n+next.n <= maxSend:
		default:
			continue
		}
		in.n += next.n
		b.ins = slices.Delete(b.ins, i+1, i+2)
		b.words--
		return true
	}
	return false
}

// delay advances the row to event e (the next instruction's first event is
// e+1).
func (b *rowBuilder) delayTo(e int) error {
	for b.cur < e {
		if err := b.add(ins{op: opDelay, n: min(e-b.cur, maxDelay)}); err != nil {
			return err
		}
	}
	return nil
}

// ctrl is the controls a tile applies at one event.
type ctrl struct {
	e          int
	hasX, hasP bool
	xsel       int    // XPIC selector: 0 ordinary mux, 1 the pair's source
	x          uint32 // XPIC value
	psel       int    // PIC selector: 0 write pointer, 1 INCOMING_FORMAT
	p          uint32 // PIC value: word address, or the format
}

// xpicInline is the ctrl's XPIC as sendpicp's inline field.
func (c ctrl) xpicInline() uint32 {
	if c.xsel == 1 {
		return xpicPairFlag | c.x
	}
	return c.x
}

// sendOp is a tile's send of a transfer.
type sendOp struct {
	s0, n int // first event, items
	addr  uint32
	sctl  int
	size  uint32 // bytes per item
}

// emitControl applies a control at event c.e outside any send.
func (b *rowBuilder) emitControl(c ctrl) error {
	switch {
	case c.hasX && c.hasP:
		if err := b.delayTo(c.e - 1); err != nil {
			return err
		}
		return b.add(ins{op: opSendpicp, n: 1, xpic: c.xpicInline(), sel: c.psel, val: c.p})
	case c.hasX:
		if err := b.delayTo(c.e - maxDelayXpic); err != nil {
			return err
		}
		return b.add(ins{op: opDelayXpic, n: c.e - b.cur, sel: c.xsel, val: c.x})
	default:
		if err := b.delayTo(c.e - maxDelayPic); err != nil {
			return err
		}
		return b.add(ins{op: opDelayPic, n: c.e - b.cur, sel: c.psel, val: c.p})
	}
}

// emitSend emits a send whose events may carry controls (ctrls, all
// inside [s.s0, s.s0+s.n)).
func (b *rowBuilder) emitSend(s sendOp, ctrls []ctrl) error {
	if err := b.delayTo(s.s0 - 1); err != nil {
		return err
	}
	k := 0
	ci := 0
	for k < s.n {
		a := s.s0 + k
		end := s.s0 + s.n // piece ends at the next control or the send's end
		if ci < len(ctrls) && ctrls[ci].e == a {
			c := ctrls[ci]
			ci++
			if ci < len(ctrls) {
				end = ctrls[ci].e
			}
			m := min(end-a, maxSend)
			addr := s.addr + s.size*uint32(k)
			switch {
			case c.hasX && c.hasP:
				err := b.add(ins{op: opSendpicp, n: m, addr: addr, sctl: s.sctl, xpic: c.xpicInline(), sel: c.psel, val: c.p})
				if err != nil {
					return err
				}
			case k == 0 && c.hasX:
				if err := b.add(ins{op: opSendpicp, n: m, addr: addr, sctl: s.sctl, xpic: c.xpicInline(), sel: noopPicSel, val: noopPic}); err != nil {
					return err
				}
			case k == 0:
				if err := b.add(ins{op: opSendpicp, n: m, addr: addr, sctl: s.sctl, xpic: noopXpic, sel: c.psel, val: c.p}); err != nil {
					return err
				}
			case c.hasX:
				if err := b.add(ins{op: opSendpic, n: m, sel: c.xsel, val: c.x, stream: s.sctl}); err != nil {
					return err
				}
			default:
				if err := b.add(ins{op: opSendpic, n: m, sel: 2 + c.psel, val: c.p, stream: s.sctl}); err != nil {
					return err
				}
			}
			k += m
		} else {
			if ci < len(ctrls) {
				end = ctrls[ci].e
			}
			if k == 0 {
				m := min(end-a, maxSend)
				if err := b.add(ins{op: opSend, n: m, addr: s.addr, sctl: s.sctl}); err != nil {
					return err
				}
				k += m
				continue
			}
		}
		// Continue the stream up to the next control.
		for a := s.s0 + k; a < end; a = s.s0 + k {
			m := min(end-a, maxSendoff)
			if err := b.add(ins{op: opSendoff, n: m, sctl: s.sctl}); err != nil {
				return err
			}
			k += m
		}
	}
	return nil
}

// emitRow builds a tile's row: sends sorted by first event, controls
// sorted by event, events the row's length.
func emitRow(sends []sendOp, ctrls []ctrl, events int) ([]uint32, error) {
	// About one instruction per send, control and gap between them.
	b := &rowBuilder{lastP: -1, ins: make([]ins, 0, 2*(len(sends)+len(ctrls))+1)}
	ci := 0
	for _, s := range sends {
		for ci < len(ctrls) && ctrls[ci].e < s.s0 {
			if err := b.emitControl(ctrls[ci]); err != nil {
				return nil, err
			}
			ci++
		}
		cj := ci
		for cj < len(ctrls) && ctrls[cj].e < s.s0+s.n {
			cj++
		}
		if err := b.emitSend(s, ctrls[ci:cj]); err != nil {
			return nil, err
		}
		ci = cj
	}
	for ; ci < len(ctrls); ci++ {
		if err := b.emitControl(ctrls[ci]); err != nil {
			return nil, err
		}
	}
	if err := b.delayTo(events); err != nil {
		return nil, err
	}
	if b.cur != events {
		return nil, fmt.Errorf("row covers %d events, want %d", b.cur, events)
	}
	words := make([]uint32, 0, b.words)
	for i := range b.ins {
		w, err := b.ins[i].encode()
		if err != nil {
			return nil, err
		}
		words = append(words, w...)
	}
	return words, nil
}

// rawCtrl is one control before merging per event.
type rawCtrl struct {
	e    int
	kind uint8 // rawOpen .. rawFormat
	v    uint32
}

const (
	rawOpen      = iota // ordinary window opens (XPIC 0)
	rawClose            // ordinary window closes (XPIC 0, neutral), unless one opens
	rawPairOpen         // the pair's window opens (XPIC 1)
	rawPairClose        // the pair's window closes (XPIC 1, neutral)
	rawPointer          // write pointer (PIC 0)
	rawFormat           // INCOMING_FORMAT (PIC 1)
)

// emitAll turns a placement into every participating tile's program.
func emitAll(pr *problem, pl *placement) ([]Program, error) {
	// Per tile, sends and raw controls in the order of pr.xs (the sorts
	// below see them so), from one buffer each, sized first: these were
	// maps of growing slices, a fifth of Build's time on large phases.
	nSends, nRaws := make([]int, ipu21.Tiles), make([]int, ipu21.Tiles)
	present := make([]bool, ipu21.Tiles)
	totalSends, totalRaws := 0, 0
	for i := range pr.xs {
		x := &pr.xs[i]
		nSends[x.src]++
		present[x.src] = true
		totalSends++
		for j, d := range x.dsts {
			k := 3
			if x.paired && x.leader(j) {
				k = 5
			}
			nRaws[d] += k
			present[d] = true
			totalRaws += k
		}
	}
	sends, raws := make([][]sendOp, ipu21.Tiles), make([][]rawCtrl, ipu21.Tiles)
	sendBuf, rawBuf := make([]sendOp, totalSends), make([]rawCtrl, totalRaws)
	for t := range sends {
		sends[t], sendBuf = sendBuf[:0:nSends[t]], sendBuf[nSends[t]:]
		raws[t], rawBuf = rawBuf[:0:nRaws[t]], rawBuf[nRaws[t]:]
	}
	events := make([]int, ipu21.Tiles)
	for i := range pr.xs {
		x := &pr.xs[i]
		ts := pl.ts[i]
		sends[x.src] = append(sends[x.src], sendOp{ts + 1, x.n, x.saddr, x.sctl, uint32(x.size)})
		events[x.src] = max(events[x.src], ts+x.n)
		for j, d := range x.dsts {
			u0 := ts + 1 + x.ttm[j]
			if x.paired {
				if x.leader(j) {
					raws[d] = append(raws[d],
						rawCtrl{u0, rawPairOpen, uint32(x.src)},
						rawCtrl{u0 + x.n, rawPairClose, ipu21.MuxNeutral})
				}
				raws[d] = append(raws[d],
					rawCtrl{u0 + x.lat[j] - 2, rawFormat, 1},
					rawCtrl{u0 + x.lat[j], rawPointer, x.daddr[j] >> 2},
					rawCtrl{u0 + x.n + x.lat[j] - 2, rawFormat, 0})
			} else {
				raws[d] = append(raws[d],
					rawCtrl{u0, rawOpen, uint32(x.src)},
					rawCtrl{u0 + x.n, rawClose, ipu21.MuxNeutral},
					rawCtrl{u0 + x.lat[j], rawPointer, x.daddr[j] >> 2})
			}
			events[d] = max(events[d], u0+x.lat[j]+x.n)
		}
	}
	var tiles []int
	for t, ok := range present {
		if ok {
			tiles = append(tiles, t)
		}
	}
	// Each tile's row depends on its own sends and controls only, so the
	// rows are built concurrently (a large phase has ~1500, and Build
	// emits only once its schedules are placed, so the phase's other work
	// is done); the error is the first tile's in tile order, as building
	// them in order would give.
	progs := make([]Program, len(tiles))
	errs := make([]error, len(tiles))
	parallelFor(len(tiles), func(k int) { progs[k], errs[k] = emitTile(tiles[k], sends[tiles[k]], raws[tiles[k]], events[tiles[k]]) })
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return progs, nil
}

// emitTile builds tile t's row from its sends and raw controls (sorted
// here, in place).
func emitTile(t int, ss []sendOp, rs []rawCtrl, events int) (Program, error) {
	slices.SortFunc(ss, func(a, b sendOp) int { return cmp.Compare(a.s0, b.s0) })
	slices.SortFunc(rs, func(a, b rawCtrl) int { return cmp.Or(cmp.Compare(a.e, b.e), cmp.Compare(a.kind, b.kind)) })
	cs := make([]ctrl, 0, len(rs))
	for _, r := range rs {
		if len(cs) == 0 || cs[len(cs)-1].e != r.e {
			cs = append(cs, ctrl{e: r.e})
		}
		c := &cs[len(cs)-1]
		switch r.kind {
		case rawOpen, rawPairOpen, rawPairClose:
			if c.hasX {
				return Program{}, fmt.Errorf("tile %d: two source controls at event %d", t, r.e)
			}
			c.hasX, c.x, c.xsel = true, r.v, 0
			if r.kind != rawOpen {
				c.xsel = 1
			}
		case rawClose:
			if c.hasX && c.xsel == 1 {
				return Program{}, fmt.Errorf("tile %d: two source controls at event %d", t, r.e)
			}
			if !c.hasX { // else a window opens here: it closes this one
				c.hasX, c.x = true, r.v
			}
		case rawPointer, rawFormat:
			if c.hasP {
				return Program{}, fmt.Errorf("tile %d: two write controls at event %d", t, r.e)
			}
			c.hasP, c.p, c.psel = true, r.v, 0
			if r.kind == rawFormat {
				c.psel = 1
			}
		}
	}
	words, err := emitRow(ss, cs, events)
	if err != nil {
		return Program{}, fmt.Errorf("tile %d: %w", t, err)
	}
	return Program{Tile: t, Words: words, Events: events}, nil
}

// parallelFor runs fn(0), ..., fn(n-1) on up to GOMAXPROCS goroutines,
// each taking the next index; fn(i) may only write what index i owns, so
// the result does not depend on GOMAXPROCS or on timing.
func parallelFor(n int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), n) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}
