package emu

import (
	"fmt"
	"strings"

	"github.com/ipustack/ipustack/isa"
)

// FaultKind classifies faults so that callers and tests need not parse text.
type FaultKind uint8

const (
	FaultUnknownWord FaultKind = iota + 1 // a word that decodes to no row
	FaultNoEmulation                      // a row with no handler in this emulator
	FaultFetch                            // instruction fetch outside region 0 or misaligned
	FaultAccess                           // data access misaligned or outside SRAM
	FaultInterleave                       // ld128 / 128-bit access outside interleaved region 1
	FaultIllegal                          // instruction not allowed here (context, bundle, operands)
	FaultRepeat                           // illegal rpt body
	FaultRunall                           // runall while a worker runs
	FaultTrap                             // trap instruction
	FaultSync                             // sync misuse (e.g. from a worker)
	FaultExchange                         // exchange misuse: bad XPIC value, sendoff without a stream, 64-bit rules, lane conflicts
	FaultNoSender                         // a receive window whose selected source sends nothing
	FaultWrongSender                      // the word arriving comes from another tile than the one selected, or travels away
	FaultClash                            // fetch, send read and incoming write in one memory element in one cycle
	FaultIncoming                         // an incoming write outside SRAM, misaligned, or outside the exchange segment
	FaultWeights                          // $CWEI rewritten (ld64putcs/ld128putcs) while a worker runs
)

var faultKindNames = [...]string{"", "unknown word", "no emulation", "fetch", "access",
	"interleave", "illegal", "repeat", "runall", "trap", "sync",
	"exchange", "no sender", "wrong sender", "element clash", "incoming write", "weight state"}

func (k FaultKind) String() string {
	if int(k) < len(faultKindNames) {
		return faultKindNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// Fault is what stops a tile the way a hardware exception would. Error()
// names the tile, the context, the PC, the words of the bundle and their
// disassembly, and the reason.
type Fault struct {
	Tile    int
	Context string // "supervisor" or "worker N"
	Worker  int    // -1 for the supervisor
	PC      uint32
	Kind    FaultKind
	Words   []uint32 // the words at PC (the bundle, or the single word that failed to decode)
	Disasm  string   // disassembly of Words, "; "-separated; "?" for undecodable words
	Reason  string
	Code    uint32 // trap code for FaultTrap
	Cycle   uint64
}

func (f *Fault) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tile %d %s: fault at pc 0x%05x", f.Tile, f.Context, f.PC)
	if len(f.Words) > 0 {
		b.WriteString(" [")
		for i, w := range f.Words {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%08x", w)
		}
		b.WriteString("]")
	}
	if f.Disasm != "" {
		fmt.Fprintf(&b, " %q", f.Disasm)
	}
	fmt.Fprintf(&b, " (cycle %d): %s: %s", f.Cycle, f.Kind, f.Reason)
	return b.String()
}

// raise records a fault of the executing context at the bundle being
// executed and marks the context faulted. Only the first fault is kept.
func (t *Tile) raise(kind FaultKind, format string, args ...any) {
	if t.fault != nil {
		return
	}
	c := t.cur
	f := &Fault{Tile: t.ID, Kind: kind, PC: t.curPC, Reason: fmt.Sprintf(format, args...), Cycle: t.cycle}
	if c != nil {
		f.Context, f.Worker = c.Name(), c.Worker
		c.State = Faulted
		if c.Worker >= 0 {
			t.running &^= 1 << c.Worker
		}
	}
	f.Words, f.Disasm = t.describe(t.curPC)
	t.fault = f
}

// faultAt records a fault found by the chip device (exchange resolution,
// clash checks) against the supervisor instruction at pc, at cycle, unless
// the tile has one already. It returns the tile's fault.
func (t *Tile) faultAt(kind FaultKind, pc uint32, cycle uint64, format string, args ...any) *Fault {
	if t.fault != nil {
		return t.fault
	}
	f := &Fault{Tile: t.ID, Context: t.Sup.Name(), Worker: -1, Kind: kind, PC: pc, Reason: fmt.Sprintf(format, args...), Cycle: cycle}
	f.Words, f.Disasm = t.describe(pc)
	t.fault = f
	t.Sup.State = Faulted
	return f
}

// describe returns the words of the bundle at pc and their disassembly,
// decoding afresh (faults are rare; the predecoded entry may be the reason
// for the fault).
func (t *Tile) describe(pc uint32) ([]uint32, string) {
	if pc < sramBase || pc >= sramEnd || pc&3 != 0 {
		return nil, ""
	}
	var words []uint32
	var texts []string
	for n := 0; n < 2; n++ {
		avail := t.wordsAt(pc, 2)
		if len(avail) == 0 {
			break
		}
		d, err := isa.Decode(avail)
		if err != nil {
			words = append(words, avail[0])
			texts = append(texts, "?")
			break
		}
		words = append(words, d.Words...)
		texts = append(texts, isa.Format(d))
		if !d.CoIssue {
			break
		}
		pc += uint32(4 * len(d.Words))
	}
	return words, strings.Join(texts, "; ")
}

// wordsAt returns up to n words from pc, fewer at the end of SRAM.
func (t *Tile) wordsAt(pc uint32, n int) []uint32 {
	var ws []uint32
	for i := 0; i < n && pc+uint32(4*i)+4 <= sramEnd; i++ {
		ws = append(ws, t.load32(pc+uint32(4*i)))
	}
	return ws
}
