package emu

import (
	"encoding/binary"

	"github.com/ipustack/ipustack/isa"
)

// Unchecked little-endian accessors; callers check range and alignment.
func (t *Tile) load32(a uint32) uint32 { return binary.LittleEndian.Uint32(t.mem[a-sramBase:]) }
func (t *Tile) load64(a uint32) uint64 { return binary.LittleEndian.Uint64(t.mem[a-sramBase:]) }

func (t *Tile) store32(a, v uint32) {
	binary.LittleEndian.PutUint32(t.mem[a-sramBase:], v)
	if a < region1Base {
		t.codeWrite(a, 4)
	}
}

func (t *Tile) store64(a uint32, v uint64) {
	binary.LittleEndian.PutUint64(t.mem[a-sramBase:], v)
	if a < region1Base {
		t.codeWrite(a, 8)
	}
}

// codeWrite invalidates predecoded bundles a store may have changed. Data
// in region 0 is common (stacks, the runtime block), so it only pays when a
// decoded page exists.
func (t *Tile) codeWrite(a, n uint32) {
	if t.pages[(a-sramBase)>>2>>pageShift] != nil || t.pages[(a+n-1-sramBase)>>2>>pageShift] != nil {
		t.invalidate(a, n)
	}
}

// check verifies a data access of size bytes (a power of two) at addr:
// naturally aligned and inside SRAM.
func (t *Tile) check(addr, size uint32, what string) bool {
	if addr&(size-1) != 0 {
		t.raise(FaultAccess, "%s of %d bytes at misaligned address 0x%x", what, size, addr)
		return false
	}
	if addr-sramBase > sramBytes-size {
		t.raise(FaultAccess, "%s of %d bytes at 0x%x outside SRAM [0x%x, 0x%x)", what, size, addr, sramBase, sramEnd)
		return false
	}
	return true
}

// memOp is what an addressing handler does at an address.
type memOp uint8

const (
	opLd32M memOp = iota // load into an $m register
	opLd32A
	opSt32M
	opSt32A
	opLd64
	opSt64
	opLd128
)

var memAtom = [...]uint32{4, 4, 4, 4, 8, 8, 16}

// access performs op for context c on register r at addr.
func (t *Tile) access(c *Context, op memOp, r int32, addr uint32) {
	switch op {
	case opLd32M:
		if t.check(addr, 4, "load") {
			c.M[r&15] = t.load32(addr)
		}
	case opLd32A:
		if t.check(addr, 4, "load") {
			c.A[r&15] = t.load32(addr)
		}
	case opSt32M:
		if t.check(addr, 4, "store") {
			t.store32(addr, c.M[r&15])
		}
	case opSt32A:
		if t.check(addr, 4, "store") {
			t.store32(addr, c.A[r&15])
		}
	case opLd64:
		if t.check(addr, 8, "load") {
			v := t.load64(addr)
			c.A[r&14], c.A[r&14|1] = uint32(v), uint32(v>>32)
		}
	case opSt64:
		if t.check(addr, 8, "store") {
			t.store64(addr, uint64(c.A[r&14])|uint64(c.A[r&14|1])<<32)
		}
	case opLd128:
		if !t.check(addr, 16, "128-bit load") {
			return
		}
		if addr < region1Base {
			t.raise(FaultInterleave, "ld128 at 0x%x: 128-bit loads need interleaved memory (region 1, from 0x%x)", addr, region1Base)
			return
		}
		v0, v1 := t.load64(addr), t.load64(addr+8)
		q := r & 12
		c.A[q], c.A[q|1], c.A[q|2], c.A[q|3] = uint32(v0), uint32(v0>>32), uint32(v1), uint32(v1>>32)
	}
}

// memKind maps a row's data operand kind and direction to a memOp.
func memKind(k isa.Kind, store bool) (memOp, bool) {
	switch {
	case k == kM && !store:
		return opLd32M, true
	case k == kM:
		return opSt32M, true
	case k == kA && !store:
		return opLd32A, true
	case k == kA:
		return opSt32A, true
	case k == kAP && !store:
		return opLd64, true
	case k == kAP:
		return opSt64, true
	case k == kAQ && !store:
		return opLd128, true
	}
	return 0, false
}

func aFlags(op memOp) impl {
	switch op {
	case opLd32A, opLd64, opLd128:
		return impl{writesA: true}
	case opSt32A, opSt64:
		return impl{readsA: true}
	}
	return impl{}
}

// bindMem handles `op data, $base, $delta, off` with off a register or an
// immediate: address = base + delta + atom*off (public MEMrrr/MEMrri).
func bindMem(store bool) binder {
	return func(in *isa.Inst) (impl, error) {
		if len(in.Operands) != 4 || in.Operands[1].Kind != kM || in.Operands[2].Kind != kM {
			return impl{}, layoutErr(in, "data, mreg, mreg, mreg|imm")
		}
		op, ok := memKind(in.Operands[0].Kind, store)
		if !ok {
			return impl{}, layoutErr(in, "mreg|areg|apair|aquad data")
		}
		atom := memAtom[op]
		im := aFlags(op)
		switch in.Operands[3].Kind {
		case kI:
			s := uint32(scale(in, 3, int32(atom)))
			if op == opLd32M {
				im.fn = func(t *Tile, c *Context, o *inst) {
					addr := c.M[r4(o.v[1])] + c.M[r4(o.v[2])] + uint32(o.v[3])*s
					if addr&3 == 0 && addr-sramBase <= sramBytes-4 {
						c.M[r4(o.v[0])] = t.load32(addr)
						return
					}
					t.access(c, op, o.v[0], addr)
				}
			} else {
				im.fn = func(t *Tile, c *Context, o *inst) {
					t.access(c, op, o.v[0], c.M[r4(o.v[1])]+c.M[r4(o.v[2])]+uint32(o.v[3])*s)
				}
			}
		case kM:
			im.fn = func(t *Tile, c *Context, o *inst) {
				t.access(c, op, o.v[0], c.M[r4(o.v[1])]+c.M[r4(o.v[2])]+c.M[r4(o.v[3])]*atom)
			}
		default:
			return impl{}, layoutErr(in, "data, mreg, mreg, mreg|imm")
		}
		return im, nil
	}
}

// bindStep handles `op data, $base, $ptr+=, step` with step a signed
// immediate or a register: access base+ptr, then ptr += atom*step.
func bindStep(store bool) binder {
	return func(in *isa.Inst) (impl, error) {
		if len(in.Operands) != 4 || in.Operands[1].Kind != kM || in.Operands[2].Kind != kMI {
			return impl{}, layoutErr(in, "data, mreg, mreg+=, mreg|imm")
		}
		op, ok := memKind(in.Operands[0].Kind, store)
		if !ok || op == opLd128 {
			return impl{}, layoutErr(in, "mreg|areg|apair data")
		}
		atom := memAtom[op]
		im := aFlags(op)
		switch in.Operands[3].Kind {
		case kI:
			s := uint32(scale(in, 3, int32(atom)))
			if op == opLd64 {
				// The tight-loop form: inline the common case.
				im.fn = func(t *Tile, c *Context, o *inst) {
					p := r4(o.v[2])
					addr := c.M[r4(o.v[1])] + c.M[p]
					c.M[p] += uint32(o.v[3]) * s
					if addr&7 == 0 && addr-sramBase <= sramBytes-8 {
						v := binary.LittleEndian.Uint64(t.mem[addr-sramBase:])
						d := o.v[0] & 14
						c.A[d], c.A[d|1] = uint32(v), uint32(v>>32)
						return
					}
					t.access(c, op, o.v[0], addr)
				}
			} else {
				im.fn = func(t *Tile, c *Context, o *inst) {
					p := r4(o.v[2])
					addr := c.M[r4(o.v[1])] + c.M[p]
					c.M[p] += uint32(o.v[3]) * s
					t.access(c, op, o.v[0], addr)
				}
			}
		case kM:
			im.fn = func(t *Tile, c *Context, o *inst) {
				p := r4(o.v[2])
				addr := c.M[r4(o.v[1])] + c.M[p]
				c.M[p] += c.M[r4(o.v[3])] * atom
				t.access(c, op, o.v[0], addr)
			}
		default:
			return impl{}, layoutErr(in, "data, mreg, mreg+=, mreg|imm")
		}
		return im, nil
	}
}

var memBinders = map[string]binder{
	"ld32":     bindMem(false),
	"st32":     bindMem(true),
	"ld64":     bindMem(false),
	"st64":     bindMem(true),
	"ld128":    bindMem(false),
	"ld32step": bindStep(false),
	"st32step": bindStep(true),
	"ld64step": bindStep(false),
	"st64step": bindStep(true),
	"stm32":    bindStoreNoDelta,
}

// bindStoreNoDelta handles `stm32 $src, $base, $off`: the store of st32
// without a delta register, address base + 4*off (ISA hover text: base
// plus an unsigned scaled register offset).
func bindStoreNoDelta(in *isa.Inst) (impl, error) {
	if len(in.Operands) != 3 || in.Operands[1].Kind != kM || in.Operands[2].Kind != kM {
		return impl{}, layoutErr(in, "data, mreg, mreg")
	}
	op, ok := memKind(in.Operands[0].Kind, true)
	if !ok {
		return impl{}, layoutErr(in, "mreg data")
	}
	atom := memAtom[op]
	im := aFlags(op)
	im.fn = func(t *Tile, c *Context, o *inst) {
		t.access(c, op, o.v[0], c.M[r4(o.v[1])]+c.M[r4(o.v[2])]*atom)
	}
	return im, nil
}
