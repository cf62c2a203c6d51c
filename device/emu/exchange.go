package emu

import (
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/isa"
)

// The tile side of the exchange: the supervisor's exchange instructions
// (delay, delaypic, delayxpic, send, sendoff, sendpic, sendpicp, sans) and
// puts to the exchange CSRs. They do not move data: each records what it
// schedules — words on the outgoing stream, controls of the receive path —
// with the cycle it happens in, and the chip resolves the fabric from the
// records of every tile (fabric.go). Timing rules: docs/machine.md, "The
// chip: syncs and exchange".
//
// Event numbering: an exchange instruction issued in cycle c that advances
// N events occupies the supervisor for cycles c .. c+N-1 and its events are
// cycles c+1 .. c+N (the numbering ipu-stack's row arithmetic uses). A
// delaypic/delayxpic control happens at its last event, c+N; a
// sendpic/sendpicp control at its first, c+1; item k of a send is on the
// outgoing stream in cycle c+1+k.

// Exchange CSRs with side effects (ipu21/csr.go; INCOMING_DELTA and
// OUTGOING_DELTA from isa/csr.go: the incoming write cursor and the
// outgoing read cursor, as ipu-stack's delta diagnostic observed them).
const (
	csrIncomingMux     = int(ipu21.CSRIncomingMux)     // 0xA0
	csrIncomingMuxPair = int(ipu21.CSRIncomingMuxPair) // 0xA1
	csrIncomingDelta   = 0xA2
	csrIncomingFormat  = int(ipu21.CSRIncomingFormat) // 0xA3
	csrIncomingBase    = int(ipu21.CSRIncomingBase)   // 0xA4
	csrIncomingDCount  = int(ipu21.CSRIncomingDCount) // 0xA6
	csrOutgoingBase    = int(ipu21.CSROutgoingBase)   // 0xA7
	csrOutgoingDelta   = 0xA8
)

// Incoming mux values other than tiles (target).
const (
	muxHostFirst = ipu21.MuxHost    // 0x600: host link ports 0x600..0x63F
	muxNeutral   = ipu21.MuxNeutral // 0x640: nothing selected
	xpicMask     = 0x1FFF           // 13-bit XPIC value
	xpicPairBit  = 1 << 13          // sendpicp inline XPIC: the paired-source flag
)

// sendRec is one send-family instruction's run of items on the outgoing
// stream: items ev, ev+1, ... ev+n-1 (cycles), read from addr, addr+size ...
type sendRec struct {
	ev   uint64
	n    uint32
	addr uint32
	pc   uint32
	size uint8 // 4 (32-bit word) or 8 (paired 64-bit item)
	dirs uint8 // sctl direction bits (1, 2 or 3)
}

type ctrlKind uint8

const (
	ctrlMux  ctrlKind = iota // XPIC: ordinary source (INCOMING_MUX)
	ctrlPair                 // XPIC with the pair flag: the receiving pair's 64-bit source
	ctrlPtr                  // PIC selector 0: the write pointer (absolute byte address)
	ctrlFmt                  // PIC selector 1: INCOMING_FORMAT (0 = 32-bit words, else 64-bit items)
)

// ctrlRec is one receive control taking effect at cycle ev.
type ctrlRec struct {
	ev   uint64
	val  uint32
	pc   uint32
	kind ctrlKind
}

// fetchRec is an instruction fetch during an exchange segment.
type fetchRec struct {
	cycle uint64
	pc    uint32
}

// xstate is a tile's exchange interface.
type xstate struct {
	chip    bool // the tile belongs to a Chip: exchange segments stop Run
	segOpen bool // the supervisor is inside an exchange segment
	// segEnd is the cycle the latest exchange segment ended (^0 while one
	// is open or stopped at `sync 0`); incoming writes must land before it.
	segEnd uint64

	// Records of the current round (cleared by the chip after resolving).
	sends   []sendRec
	ctrls   []ctrlRec
	fetches []fetchRec

	// The outgoing stream that sendoff/sendpic continue.
	streamOpen bool
	streamNext uint32
	streamSize uint8
	streamDirs uint8

	rx rxState // receive state carried from round to round (fabric.go)

	// Scratch of the resolution (fabric.go), reused between rounds.
	pieces []piece
	writes []writeRun
	buf    []byte
	items  uint64 // items written in the last resolution
	words  uint64 // 32-bit words written in the last resolution
	lastW  uint64 // cycle of the last incoming write, +1 (0: none yet)
}

// openSegment: a tile of a Chip enters an exchange segment. A tile alone
// keeps the exchange timing but records nothing (there is no fabric).
func (t *Tile) openSegment() {
	if t.x.chip {
		t.x.segOpen = true
		t.x.segEnd = never
	}
}

func (t *Tile) record(kind ctrlKind, ev uint64, val uint32) {
	if t.x.chip {
		t.x.ctrls = append(t.x.ctrls, ctrlRec{ev: ev, val: val, pc: t.curPC, kind: kind})
	}
}

// xpic records an XPIC control (paired selects the pair source).
func (t *Tile) xpic(ev uint64, paired bool, v uint32) bool {
	if v >= ipu21.Tiles && v != muxNeutral && (v < muxHostFirst || v >= muxNeutral) {
		t.raise(FaultExchange, "XPIC value 0x%x is not a physical tile (< %d), a host port (0x600..0x63f) or neutral (0x640)", v, ipu21.Tiles)
		return false
	}
	if paired {
		t.Sup.CSR[csrIncomingMuxPair] = v
		t.record(ctrlPair, ev, v)
	} else {
		t.Sup.CSR[csrIncomingMux] = v
		t.record(ctrlMux, ev, v)
	}
	return true
}

// pic records a PIC control: selector 0 sets the write pointer to
// INCOMING_BASE + 4*value, selector 1 sets INCOMING_FORMAT.
func (t *Tile) pic(ev uint64, sel, v uint32) {
	if sel&1 == 0 {
		t.record(ctrlPtr, ev, t.Sup.CSR[csrIncomingBase]+4*v)
	} else {
		t.Sup.CSR[csrIncomingFormat] = v
		t.record(ctrlFmt, ev, v)
	}
}

// emit puts n items from addr on the outgoing stream from cycle ev.
func (t *Tile) emit(ev uint64, n, addr, sctl uint32) bool {
	size := uint32(4)
	if sctl&4 != 0 {
		size = 8
	}
	if addr%size != 0 || !ipu21.InSRAM(addr, n*size) {
		t.raise(FaultAccess, "send reads [0x%x, 0x%x) (%d items of %d bytes): outside SRAM or misaligned", addr, uint64(addr)+uint64(n*size), n, size)
		return false
	}
	if sctl&3 != 0 && t.x.chip {
		t.x.sends = append(t.x.sends, sendRec{ev: ev, n: n, addr: addr, pc: t.curPC, size: uint8(size), dirs: uint8(sctl & 3)})
	}
	t.x.streamOpen, t.x.streamNext, t.x.streamSize, t.x.streamDirs = true, addr+n*size, uint8(size), uint8(sctl&7)
	t.Sup.CSR[csrOutgoingDelta] = t.x.streamNext
	return true
}

// exchangeOp wraps an exchange handler: supervisor only (the row's context
// already says so), opens the segment, and holds the supervisor for n
// events.
func xop(f func(t *Tile, c *Context, o *inst) uint32) impl {
	return impl{xch: true, fn: func(t *Tile, c *Context, o *inst) {
		t.openSegment()
		n := f(t, c, o)
		if n > 0 {
			c.next = t.cycle + uint64(n)
		}
	}}
}

var exchangeBinders = map[string]binder{
	"delay": func(in *isa.Inst) (impl, error) {
		if !shape(in, kI) {
			return impl{}, layoutErr(in, "imm")
		}
		return xop(func(t *Tile, c *Context, o *inst) uint32 { return uint32(o.v[0]) }), nil
	},
	"sans": func(in *isa.Inst) (impl, error) {
		if !shape(in, kI) {
			return impl{}, layoutErr(in, "imm")
		}
		// Our definition: one event, no other effect (ANS is not modelled).
		return xop(func(t *Tile, c *Context, o *inst) uint32 { return 1 }), nil
	},
	"delaypic": func(in *isa.Inst) (impl, error) {
		if !shape(in, kI, kI, kI) {
			return impl{}, layoutErr(in, "events, sel, value")
		}
		return xop(func(t *Tile, c *Context, o *inst) uint32 {
			n := uint32(o.v[0])
			t.pic(t.cycle+uint64(n), uint32(o.v[1]), uint32(o.v[2]))
			return n
		}), nil
	},
	"delayxpic": func(in *isa.Inst) (impl, error) {
		if !shape(in, kI, kI, kI) {
			return impl{}, layoutErr(in, "events, sel, value")
		}
		return xop(func(t *Tile, c *Context, o *inst) uint32 {
			n := uint32(o.v[0])
			if !t.xpic(t.cycle+uint64(n), o.v[1]&1 != 0, uint32(o.v[2])&xpicMask) {
				return 0
			}
			return n
		}), nil
	},
	"send": func(in *isa.Inst) (impl, error) {
		if !shape(in, kI, kI, kI) {
			return impl{}, layoutErr(in, "words, addr, sctl")
		}
		return xop(func(t *Tile, c *Context, o *inst) uint32 {
			n, sctl := uint32(o.v[0]), uint32(o.v[2])
			if !t.emit(t.cycle+1, n, sendAddr(t, uint32(o.v[1]), sctl), sctl) {
				return 0
			}
			return n
		}), nil
	},
	"sendoff": func(in *isa.Inst) (impl, error) {
		if !shape(in, kI, kI, kI) {
			return impl{}, layoutErr(in, "words, delta, sctl")
		}
		return xop(func(t *Tile, c *Context, o *inst) uint32 {
			n, delta, sctl := uint32(o.v[0]), uint32(o.v[1]), uint32(o.v[2])
			if !t.x.streamOpen {
				t.raise(FaultExchange, "sendoff continues no outgoing stream (no send since the last sync)")
				return 0
			}
			if sctl&4 != 0 {
				delta *= 2 // the delta field counts items, like send's address
			}
			if !t.emit(t.cycle+1, n, t.x.streamNext+delta, sctl) {
				return 0
			}
			return n
		}), nil
	},
	"sendpic": func(in *isa.Inst) (impl, error) {
		if !shape(in, kI, kI, kI) {
			return impl{}, layoutErr(in, "words, sel, value")
		}
		return xop(func(t *Tile, c *Context, o *inst) uint32 {
			n, sel, v := uint32(o.v[0]), uint32(o.v[1]), uint32(o.v[2])
			ev := t.cycle + 1
			if sel < 2 {
				if !t.xpic(ev, sel&1 != 0, v&xpicMask) {
					return 0
				}
			} else {
				t.pic(ev, sel&1, v)
			}
			if t.x.streamOpen {
				if !t.emit(ev, n, t.x.streamNext, uint32(t.x.streamDirs)) {
					return 0
				}
			}
			return n
		}), nil
	},
	"sendpicp": func(in *isa.Inst) (impl, error) {
		if !shape(in, kI, kI, kI, kI, kI, kI) {
			return impl{}, layoutErr(in, "words, addr, sctl, picsel, xpic, pic")
		}
		return xop(func(t *Tile, c *Context, o *inst) uint32 {
			if t.curPC&7 != 0 {
				t.raise(FaultIllegal, "sendpicp must start 8-byte aligned")
				return 0
			}
			n, sctl := uint32(o.v[0]), uint32(o.v[2])
			x := uint32(o.v[4])
			ev := t.cycle + 1
			if !t.xpic(ev, x&xpicPairBit != 0, x&xpicMask) {
				return 0
			}
			t.pic(ev, uint32(o.v[3]), uint32(o.v[5]))
			if sctl&3 != 0 {
				if !t.emit(ev, n, sendAddr(t, uint32(o.v[1]), sctl), sctl) {
					return 0
				}
			}
			return n
		}), nil
	},
}

// sendAddr turns a send's address operand (decoded as a byte address, i.e.
// the field times 4) into the SRAM address: OUTGOING_BASE plus the field
// in item units — 4 bytes, or 8 for a paired send (ipu-stack
// patch_sender_instruction shifts the byte address by 3 for 64-bit items).
func sendAddr(t *Tile, decoded, sctl uint32) uint32 {
	if sctl&4 != 0 {
		decoded *= 2
	}
	return t.Sup.CSR[csrOutgoingBase] + decoded
}

// putExchangeCSR applies a supervisor put to an exchange CSR; it returns
// false for CSRs without exchange side effects. The control takes effect
// in the cycle after the put.
func (t *Tile) putExchangeCSR(n int, v uint32) bool {
	ev := t.cycle + 1
	switch n {
	case csrIncomingMux:
		t.xpic(ev, false, v&xpicMask)
	case csrIncomingMuxPair:
		t.xpic(ev, true, v&xpicMask)
	case csrIncomingDelta:
		t.Sup.CSR[n] = v
		t.record(ctrlPtr, ev, v)
	case csrIncomingFormat:
		t.Sup.CSR[n] = v
		t.record(ctrlFmt, ev, v)
	case csrOutgoingDelta:
		t.Sup.CSR[n] = v
		t.x.streamNext = v
	default:
		return false
	}
	return true
}

// isRecvSync reports whether b is `sync 0` (RECV): on a chip it stays
// inside the exchange segment, so the incoming words it waits for may land
// after it.
func isRecvSync(b *bundle) bool {
	return b.n == 1 && b.i[0].row.Mnemonic == "sync" && b.i[0].v[0] == int32(ipu21.SyncRecv)
}
