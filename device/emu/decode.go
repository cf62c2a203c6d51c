package emu

import (
	"fmt"
	"sort"

	"github.com/ipustack/ipustack/isa"
)

// maxOps is the most operands a row may have for the emulator to run it.
const maxOps = 6

// handler executes one decoded instruction for context c. It reads operand
// values from o.v (in the row's operand order, as isa decodes them: register
// numbers, CSR numbers, immediates after shift and offset), updates state,
// and on error calls t.raise and returns. Control handlers write c.PC, which
// already holds the address of the next bundle.
type handler func(t *Tile, c *Context, o *inst)

// inst is one predecoded instruction.
type inst struct {
	fn  handler
	v   [maxOps]int32
	row *isa.Inst
}

// bundle is the predecoded unit of issue: one instruction, or a main and an
// aux instruction issued together.
type bundle struct {
	size uint8 // bytes; 0 = not decoded yet
	n    uint8 // instructions: 1 or 2
	// mode orders a co-issued pair so that both read their registers
	// before either writes them (see docs/machine-tile.md).
	mode   uint8
	ctx    isa.Context // contexts allowed to run every instruction of the bundle
	cost   uint8       // issue cost in the context's slots
	ctl    bool        // contains a control instruction
	gen    uint32      // code generation at which an rpt body was validated (rpt only)
	rptLen uint32      // validated rpt body length in bytes (rpt only)
	xch    bool        // a single exchange instruction (see impl.xch)
	// shared is, in modeSnapshot, the $a registers both instructions name:
	// the only ones whose pre-bundle values need saving.
	shared uint16
	i      [2]inst // i[0] main (or the only instruction), i[1] aux
}

const (
	modeMainFirst = iota // main reads $a but does not write it: main, then aux
	modeAuxFirst         // main writes $a but does not read it: aux, then main
	modeSnapshot         // main reads and writes $a: run both on the old values and merge
)

// impl is what a binder returns for a row.
type impl struct {
	fn handler
	// readsA / writesA describe a main-pipe instruction's use of the $a
	// file; they choose the co-issue mode.
	readsA, writesA bool
	// auxDst marks an aux-pipe instruction that writes no $a register but
	// those its operand 0 names and reads no $a register it does not name
	// (the AMP instructions). Paired with a main instruction that reads and
	// writes $a but names none of those, running aux first is the same as
	// the snapshot (see decodeBundle).
	auxDst bool
	// xch marks an exchange instruction (delay, send..., delay*pic, sans):
	// the chip device keeps a tile's exchange segment open across them.
	xch bool
}

// binder builds the handler of a row after checking that the row's operand
// kinds are a layout it knows. It returns an error naming what it expected
// when they are not, so a row shaped differently from the public syntax is
// a clear "no emulation" fault instead of a wrong answer.
type binder func(in *isa.Inst) (impl, error)

var (
	// binders maps a row ID or, failing that, a mnemonic to its binder.
	// Binding by mnemonic plus operand kinds lets rows named by variant
	// (add.zi, add.si, ld32.a ...) find their semantics without the
	// emulator knowing every variant name in advance. Package-level
	// initialisation (dependency ordered) fills it before init runs.
	binders = mergeBinders(intBinders, memBinders, floatBinders, ampBinders, exchangeBinders,
		extIntBinders, extFloatBinders, notEmulatedBinders)
	// handlers is indexed by isa row index; built once at init.
	handlers []impl
	// unbound says, per row index, why there is no handler.
	unbound []string
)

func mergeBinders(ms ...map[string]binder) map[string]binder {
	all := map[string]binder{}
	for _, m := range ms {
		for k, b := range m {
			if _, dup := all[k]; dup {
				panic("BUG: emu binder registered twice: " + k)
			}
			all[k] = b
		}
	}
	return all
}

// bindAll builds the handler table from isa.Table, once, at init.
func bindAll() {
	handlers = make([]impl, len(isa.Table))
	unbound = make([]string, len(isa.Table))
	for _, in := range isa.Table {
		b, ok := binders[in.ID()]
		if !ok {
			b, ok = binders[in.Mnemonic]
		}
		if !ok {
			unbound[in.Index()] = "no emulation for " + in.ID()
			continue
		}
		if len(in.Operands) > maxOps {
			unbound[in.Index()] = fmt.Sprintf("no emulation for %s: %d operands", in.ID(), len(in.Operands))
			continue
		}
		im, err := b(in)
		if err != nil {
			unbound[in.Index()] = fmt.Sprintf("no emulation for %s: %v", in.ID(), err)
			continue
		}
		handlers[in.Index()] = im
	}
}

func init() { bindAll() }

// Implemented lists the row IDs that have a handler, sorted.
func Implemented() []string {
	var ids []string
	for _, in := range isa.Table {
		if handlers[in.Index()].fn != nil {
			ids = append(ids, in.ID())
		}
	}
	sort.Strings(ids)
	return ids
}

// Unimplemented maps each row ID without a handler to the reason.
func Unimplemented() map[string]string {
	m := map[string]string{}
	for _, in := range isa.Table {
		if handlers[in.Index()].fn == nil {
			m[in.ID()] = unbound[in.Index()]
		}
	}
	return m
}

// Code pages: predecoded bundles are kept in pages allocated on first
// fetch, so a tile whose code is a few kilobytes costs a few pages, not a
// bundle per word of region 0 (1472 tiles share one process).
const (
	pageShift = 8
	pageWords = 1 << pageShift
	pageMask  = pageWords - 1
	numPages  = (codeWords + pageWords - 1) / pageWords
)

type codePage [pageWords]bundle

// fetch returns the predecoded bundle at pc, decoding it on first use. It
// raises a fault and returns nil when pc is not executable or the words do
// not form a legal bundle.
func (t *Tile) fetch(pc uint32) *bundle {
	if pc < sramBase || pc >= region1Base || pc&3 != 0 {
		t.raise(FaultFetch, "instruction fetch from 0x%x: only 4-byte aligned addresses in region 0 [0x%x, 0x%x) are executable", pc, sramBase, region1Base)
		return nil
	}
	idx := (pc - sramBase) >> 2
	pg := t.pages[idx>>pageShift]
	if pg == nil {
		pg = new(codePage)
		t.pages[idx>>pageShift] = pg
	}
	b := &pg[idx&pageMask]
	if b.size == 0 && !t.decodeBundle(pc, b) {
		return nil
	}
	return b
}

// decodeOne decodes the instruction at pc into o and returns its row.
func (t *Tile) decodeOne(pc uint32, o *inst) (*isa.Inst, bool) {
	if pc+4 > region1Base {
		t.raise(FaultFetch, "instruction at 0x%x runs past the end of region 0", pc)
		return nil, false
	}
	ws := t.wordsAt(pc, 2)
	if pc+8 > region1Base {
		ws = ws[:1]
	}
	in := isa.Lookup(ws[0])
	if in == nil {
		t.raise(FaultUnknownWord, "word 0x%08x at 0x%x matches no instruction", ws[0], pc)
		return nil, false
	}
	if in.Words > len(ws) {
		t.raise(FaultFetch, "%s at 0x%x needs %d words and runs past the end of region 0", in.ID(), pc, in.Words)
		return nil, false
	}
	im := handlers[in.Index()]
	if im.fn == nil {
		t.raise(FaultNoEmulation, "%s", unbound[in.Index()])
		return nil, false
	}
	o.fn, o.row = im.fn, in
	vals := in.Values(ws[:in.Words])
	for i, v := range vals {
		o.v[i] = int32(v)
		// Pair 14 is $azeros and quad 12 $aqzero (the public register
		// encoding). The emulator keeps $a14 and $a15 at zero so that
		// $azeros reads as zero; naming $a14 alone, or the quad, would
		// give a silently wrong answer, so it is a fault instead.
		switch k := in.Operands[i].Kind; {
		case k == isa.KindAReg && v == 14:
			t.raise(FaultNoEmulation, "%s names $a14: ipustack reserves it (it is the low half of $azeros, which always reads as zero)", in.ID())
			return nil, false
		case k == isa.KindAQuad && v == 12:
			t.raise(FaultNoEmulation, "%s names $aqzero ($a12:15): the zero quad is not emulated; use $azeros pairs", in.ID())
			return nil, false
		}
	}
	return in, true
}

// decodeBundle fills b with the bundle at pc.
func (t *Tile) decodeBundle(pc uint32, b *bundle) bool {
	var nb bundle
	in0, ok := t.decodeOne(pc, &nb.i[0])
	if !ok {
		return false
	}
	size := uint32(in0.Size())
	nb.n, nb.ctx, nb.cost, nb.ctl = 1, in0.Ctx, uint8(in0.Cycles), in0.Control
	nb.xch = handlers[in0.Index()].xch
	if in0.CoIssue && t.load32(pc)&isa.CoIssueBit != 0 {
		in1, ok := t.decodeOne(pc+size, &nb.i[1])
		if !ok {
			return false
		}
		if in1.CoIssue && t.load32(pc+size)&isa.CoIssueBit != 0 {
			t.raise(FaultIllegal, "co-issue bit set on the second instruction of a bundle (%s)", in1.ID())
			return false
		}
		if !in1.CoIssue {
			t.raise(FaultIllegal, "%s cannot be co-issued", in1.ID())
			return false
		}
		if in0.Pipe == in1.Pipe {
			t.raise(FaultIllegal, "a bundle needs one main and one aux instruction, have %s (%s) and %s (%s)", in0.ID(), in0.Pipe, in1.ID(), in1.Pipe)
			return false
		}
		main := in0
		if in0.Pipe == isa.Aux {
			nb.i[0], nb.i[1] = nb.i[1], nb.i[0]
			main = in1
		}
		size += uint32(in1.Size())
		nb.n = 2
		nb.xch = false
		nb.ctx &= in1.Ctx
		nb.ctl = nb.ctl || in1.Control
		if in1.Cycles > int(nb.cost) {
			nb.cost = uint8(in1.Cycles)
		}
		im := handlers[main.Index()]
		switch {
		case !im.writesA:
			nb.mode = modeMainFirst
		case !im.readsA:
			nb.mode = modeAuxFirst
		case handlers[nb.i[1].row.Index()].auxDst && aRegsOp(&nb.i[1], 0)&aRegs(&nb.i[0]) == 0:
			// Main reads and writes $a, but aux writes only registers
			// main does not name: aux first reads the pre-bundle values
			// and main can neither see nor overwrite aux's results, the
			// snapshot's outcome without its copying. {pace ; AMP}, the
			// matmul inner-loop bundle, is this case.
			nb.mode = modeAuxFirst
		default:
			nb.mode = modeSnapshot
			nb.shared = aRegs(&nb.i[0]) & aRegs(&nb.i[1])
		}
	}
	nb.size = uint8(size)
	*b = nb
	return true
}

// aRegs is the set of $a registers an instruction's operands name.
func aRegs(in *inst) uint16 {
	var m uint16
	for i := range in.row.Operands {
		m |= aRegsOp(in, i)
	}
	return m
}

// aRegsOp is the set of $a registers operand i names.
func aRegsOp(in *inst, i int) uint16 {
	k := in.row.Operands[i].Kind
	if k.RegFile() != "a" {
		return 0
	}
	var m uint16
	n := k.RegCount()
	first := int(in.v[i]) &^ (n - 1)
	for r := first; r < first+n && r < 16; r++ {
		m |= 1 << r
	}
	return m
}
