package emu

import (
	"encoding/binary"
	"math/bits"
	"strings"

	"github.com/ipustack/ipustack/isa"
)

// Semantics of the rows added by isa/rows_ext.go: integer, bit
// permutation and narrow-load rows (this file), floating point
// (exec_ext_float.go), and the rows whose result the public text does not
// define, which fault with "not emulated: MNEMONIC" (notEmulatedBinders).

// m32 are the $m-file operations of the new integer rows, named after the
// public mnemonics (hover text in each comment).
var m32Unary = map[string]func(uint32) uint32{
	// "Reverse the bit order of each bit inside each byte of a register."
	"bitrev8": func(v uint32) uint32 { return bits.ReverseBytes32(bits.Reverse32(v)) },
	// "the number of higher order bits that match the sign-bit (bit 31).
	// Result is always in the range [0..31]": bit 31 itself is not counted.
	"cms": func(v uint32) uint32 { return uint32(bits.LeadingZeros32(v^uint32(int32(v)>>31))) - 1 },
	"clz": func(v uint32) uint32 { return uint32(bits.LeadingZeros32(v)) },
	"popc": func(v uint32) uint32 {
		return uint32(bits.OnesCount32(v))
	},
	// "Absolute value of signed 32-bit integer": the most negative value
	// has no positive counterpart and stays as it is (two's complement
	// negation; our assumption, docs/isa.md).
	"abs": func(v uint32) uint32 {
		if int32(v) < 0 {
			return -v
		}
		return v
	},
}

// roll16 is the middle word of the 64-bit value b:a (a the low word): the
// upper half of a, then the lower half of b. The public text calls it a
// roll of the 16-bit values across two registers; poplibs' misaligned
// half loads (popops ReductionsCommon.h.S: ldb16 of x0, ld32 of x1:x2,
// `roll16 $v, $v, $s` giving x0:x1) fix the order (docs/isa.md).
func roll16(a, b uint32) uint32 { return a>>16 | b<<16 }

func bindM32Unary(f func(uint32) uint32) binder {
	return func(in *isa.Inst) (impl, error) {
		if !shape(in, kM, kM) {
			return impl{}, layoutErr(in, "mreg, mreg")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) { c.M[r4(o.v[0])] = f(c.M[r4(o.v[1])]) }}, nil
	}
}

// bindRR binds `op $d, $a, $b` on either file with one 32-bit function
// (the $a forms are aux-pipe rows, so no co-issue flags are needed).
func bindRR(f func(a, b uint32) uint32) binder {
	return func(in *isa.Inst) (impl, error) {
		switch {
		case shape(in, kM, kM, kM):
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				c.M[r4(o.v[0])] = f(c.M[r4(o.v[1])], c.M[r4(o.v[2])])
			}}, nil
		case shape(in, kA, kA, kA):
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				c.A[r4(o.v[0])] = f(c.A[r4(o.v[1])], c.A[r4(o.v[2])])
			}}, nil
		}
		return impl{}, layoutErr(in, "mreg x3", "areg x3")
	}
}

// bindPair2 binds `op $d:d+1, $a:a+1, $b:b+1` with a function of the four
// source words (64-bit logic, roll32, sort4x32*).
func bindPair2(f func(a0, a1, b0, b1 uint32) (uint32, uint32)) binder {
	return func(in *isa.Inst) (impl, error) {
		if !shape(in, kAP, kAP, kAP) {
			return impl{}, layoutErr(in, "apair x3")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			d, a, b := o.v[0]&14, o.v[1]&14, o.v[2]&14
			c.A[d], c.A[d+1] = f(c.A[a], c.A[a+1], c.A[b], c.A[b+1])
		}}, nil
	}
}

// narrow describes a load of fewer than 32 bits.
type narrow struct {
	size      uint32 // 1 or 2 bytes
	signed    bool   // sign-extend (lds*), else zero-extend (ldz*)
	broadcast bool   // ldb16: the 16-bit value in both halves of an $a register
}

func (n narrow) value(raw uint32) uint32 {
	switch {
	case n.broadcast:
		return raw | raw<<16
	case n.signed && n.size == 1:
		return uint32(int32(int8(raw)))
	case n.signed:
		return uint32(int32(int16(raw)))
	}
	return raw
}

// loadNarrow reads size bytes at addr (checked: aligned and inside SRAM).
func (t *Tile) loadNarrow(addr, size uint32) (uint32, bool) {
	if !t.check(addr, size, "load") {
		return 0, false
	}
	if size == 1 {
		return uint32(t.mem[addr-sramBase]), true
	}
	return uint32(binary.LittleEndian.Uint16(t.mem[addr-sramBase:])), true
}

// bindNarrow binds the narrow loads: `op $d, $base, $delta, off` (off an
// immediate in access-size units or a register) and, with step, `op $d,
// $base, $ptr+=, step` (access base+ptr, then ptr += size*step). The
// destination is an $m register (ldz*, lds*) or an $a register (ldb16*).
func bindNarrow(n narrow, step bool) binder {
	return func(in *isa.Inst) (impl, error) {
		second := kM
		if step {
			second = kMI
		}
		if len(in.Operands) != 4 || in.Operands[1].Kind != kM || in.Operands[2].Kind != second ||
			(in.Operands[3].Kind != kI && in.Operands[3].Kind != kM) {
			return impl{}, layoutErr(in, "mreg|areg, mreg, mreg or mreg+=, imm|mreg")
		}
		toA := in.Operands[0].Kind == kA
		if !toA && in.Operands[0].Kind != kM {
			return impl{}, layoutErr(in, "mreg|areg data")
		}
		immOff := in.Operands[3].Kind == kI
		s := uint32(scale(in, 3, int32(n.size)))
		im := impl{writesA: toA}
		im.fn = func(t *Tile, c *Context, o *inst) {
			var off uint32
			if immOff {
				off = uint32(o.v[3]) * s
			} else {
				off = c.M[r4(o.v[3])] * n.size
			}
			var addr uint32
			if step {
				p := r4(o.v[2])
				addr = c.M[r4(o.v[1])] + c.M[p]
				c.M[p] += off
			} else {
				addr = c.M[r4(o.v[1])] + c.M[r4(o.v[2])] + off
			}
			raw, ok := t.loadNarrow(addr, n.size)
			if !ok {
				return
			}
			if toA {
				c.A[r4(o.v[0])] = n.value(raw)
			} else {
				c.M[r4(o.v[0])] = n.value(raw)
			}
		}
		return im, nil
	}
}

// bindLd128Step: `ld128step $q, $base, $ptr+=, step`: the quad load of
// ld128 (interleaved memory, 16-byte aligned) at base+ptr, then ptr +=
// 16*step (step an immediate or a register).
func bindLd128Step(in *isa.Inst) (impl, error) {
	if len(in.Operands) != 4 || !shape(in, kAQ, kM, kMI, in.Operands[3].Kind) ||
		(in.Operands[3].Kind != kI && in.Operands[3].Kind != kM) {
		return impl{}, layoutErr(in, "aquad, mreg, mreg+=, imm|mreg")
	}
	immStep := in.Operands[3].Kind == kI
	s := uint32(scale(in, 3, 16))
	return impl{writesA: true, fn: func(t *Tile, c *Context, o *inst) {
		p := r4(o.v[2])
		addr := c.M[r4(o.v[1])] + c.M[p]
		if immStep {
			c.M[p] += uint32(o.v[3]) * s
		} else {
			c.M[p] += c.M[r4(o.v[3])] * 16
		}
		t.access(c, opLd128, o.v[0], addr)
	}}, nil
}

// bindStm32Step: `stm32step $src, $base+=, $stride`: store at base, then
// base += 4*stride (the public text: the base register is post-incremented
// by the signed stride register, scaled to the atom size).
func bindStm32Step(in *isa.Inst) (impl, error) {
	if !shape(in, kM, kMI, kM) {
		return impl{}, layoutErr(in, "mreg, mreg+=, mreg")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		b := r4(o.v[1])
		addr := c.M[b]
		c.M[b] += c.M[r4(o.v[2])] * 4
		t.access(c, opSt32M, o.v[0], addr)
	}}, nil
}

var extIntBinders = func() map[string]binder {
	m := map[string]binder{}
	for name, f := range m32Unary {
		m[name] = bindM32Unary(f)
	}
	m["atom"] = bindAtom
	m["movnz"] = bindMovnz
	m["roll16"] = bindRR(roll16)
	m["xnor"] = bindRR(func(a, b uint32) uint32 { return ^(a ^ b) })
	m["and64"] = bindPair2(func(a0, a1, b0, b1 uint32) (uint32, uint32) { return a0 & b0, a1 & b1 })
	m["andc64"] = bindPair2(func(a0, a1, b0, b1 uint32) (uint32, uint32) { return a0 &^ b0, a1 &^ b1 })
	m["or64"] = bindPair2(func(a0, a1, b0, b1 uint32) (uint32, uint32) { return a0 | b0, a1 | b1 })
	// The 32-bit analogues of roll16 and sort4x16lo/hi (docs/isa.md).
	m["roll32"] = bindPair2(func(a0, a1, b0, b1 uint32) (uint32, uint32) { return a1, b0 })
	m["sort4x32lo"] = bindPair2(func(a0, a1, b0, b1 uint32) (uint32, uint32) { return a0, b0 })
	m["sort4x32hi"] = bindPair2(func(a0, a1, b0, b1 uint32) (uint32, uint32) { return a1, b1 })
	m["not64"] = func(in *isa.Inst) (impl, error) {
		if !shape(in, kAP, kAP) {
			return impl{}, layoutErr(in, "apair, apair")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			d, a := o.v[0]&14, o.v[1]&14
			c.A[d], c.A[d+1] = ^c.A[a], ^c.A[a+1]
		}}, nil
	}
	for _, l := range []struct {
		name string
		n    narrow
	}{
		{"ldz16", narrow{size: 2}}, {"ldz8", narrow{size: 1}},
		{"lds16", narrow{size: 2, signed: true}}, {"lds8", narrow{size: 1, signed: true}},
		{"ldb16", narrow{size: 2, broadcast: true}},
	} {
		m[l.name] = bindNarrow(l.n, false)
		m[l.name+"step"] = bindNarrow(l.n, true)
	}
	for name, size := range map[string]uint32{"ldd16a32": 4, "ldd16a64": 8, "ldd16b16": 2, "ldd16v2a32": 4} {
		m[name] = bindDeltaLoad(size)
	}
	m["ld64a32"] = bindLd64a32
	m["ld128step"] = bindLd128Step
	m["stm32step"] = bindStm32Step
	m["urand32"] = func(in *isa.Inst) (impl, error) {
		if !shape(in, kA) {
			return impl{}, layoutErr(in, "areg")
		}
		// The low word of urand64's draw (docs/isa.md).
		return impl{fn: func(t *Tile, c *Context, o *inst) { c.A[r4(o.v[0])] = uint32(c.next64()) }}, nil
	}
	return m
}()

// notEmulatedMark is how a row's Doc (isa/rows_ext.go) says that the public
// text does not define its result. The Doc is the one place that records
// the decision; the emulator binds such rows to a handler that faults.
const notEmulatedMark = "Not emulated:"

// notEmulatedBinders gives every such row a handler that raises
// FaultNoEmulation "not emulated: MNEMONIC (what the text leaves open)"
// when it executes, so a program that uses one stops with a fault naming
// tile, context, PC and instruction instead of computing a guess.
var notEmulatedBinders = func() map[string]binder {
	m := map[string]binder{}
	for _, in := range isa.Table {
		_, why, ok := strings.Cut(in.Doc, notEmulatedMark)
		if !ok {
			continue
		}
		reason := "not emulated: " + in.Mnemonic + " (" + strings.TrimSpace(why) + ")"
		m[in.ID()] = func(*isa.Inst) (impl, error) {
			return impl{fn: func(t *Tile, c *Context, o *inst) { t.raise(FaultNoEmulation, "%s", reason) }}, nil
		}
	}
	return m
}()

// bindAtom: `atom $m, $a` copies the 32 bits of an $a register to an $m
// register unchanged (hover text: "No format conversion is performed").
func bindAtom(in *isa.Inst) (impl, error) {
	if !shape(in, kM, kA) {
		return impl{}, layoutErr(in, "mreg, areg")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) { c.M[r4(o.v[0])] = c.A[r4(o.v[1])] }}, nil
}

// bindMovnz: `movnz $d, $cond, $src` sets d = src when cond is non-zero
// and leaves d alone otherwise (poplibs writes `movnz $value, $ifVal,
// $trueVal`; docs/isa.md "popfix rows").
func bindMovnz(in *isa.Inst) (impl, error) {
	if !shape(in, kM, kM, kM) {
		return impl{}, layoutErr(in, "mreg x3")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		if c.M[r4(o.v[1])] != 0 {
			c.M[r4(o.v[0])] = c.M[r4(o.v[2])]
		}
	}}, nil
}

// bindDeltaLoad binds the hover text's delta loads `ldd16a32 $d, $addr++,
// $base, $delta@` (and ldd16a64, ldd16b16, ldd16v2a32): the data at base +
// delta (bytes; ldd16v2a32 takes the delta from the upper 16 bits of the
// register, "located in the msbs") goes to $d (ldd16b16 broadcasts its 16
// bits to both halves); the next delta, read at addr, goes to the delta
// register (16 bits zero-extended; ldd16v2a32 reads the next 32-bit pair of
// deltas); addr advances by the width read there (2 or 4). Both addresses
// come from the registers before the instruction and both are checked
// before any register is written. The data width is size bytes.
func bindDeltaLoad(size uint32) binder {
	return func(in *isa.Inst) (impl, error) {
		dk := kA
		if size == 8 {
			dk = kAP
		}
		if !shape(in, dk, isa.KindMRegPostInc, kM, isa.KindMRegDelta) {
			return impl{}, layoutErr(in, dk.String()+", mreg++, mreg, mreg@")
		}
		pair := in.Mnemonic == "ldd16v2a32"
		step := uint32(2)
		if pair {
			step = 4
		}
		return impl{writesA: true, fn: func(t *Tile, c *Context, o *inst) {
			p, dr := r4(o.v[1]), r4(o.v[3])
			delta := c.M[dr] & 0xFFFF
			if pair {
				delta = c.M[dr] >> 16
			}
			daddr, paddr := c.M[r4(o.v[2])]+delta, c.M[p]
			if !t.check(daddr, size, "load") || !t.check(paddr, step, "load") {
				return
			}
			var next uint32
			if pair {
				next = t.load32(paddr)
			} else {
				next, _ = t.loadNarrow(paddr, 2)
			}
			d := o.v[0]
			switch size {
			case 2:
				raw, _ := t.loadNarrow(daddr, 2)
				c.A[r4(d)] = raw | raw<<16
			case 4:
				c.A[r4(d)] = t.load32(daddr)
			case 8:
				v := t.load64(daddr)
				c.A[d&14], c.A[d&14|1] = uint32(v), uint32(v>>32)
			}
			c.M[dr] = next
			c.M[p] = paddr + step
		}}, nil
	}
}

// bindLd64a32: `ld64a32 $aN+1:N+3, $addr++, $base, $delta`: the 64-bit
// value at addr goes to the top half of the quad ($aN+2:N+3), the 32-bit
// value at base + delta[15:0] to its second register ($aN+1); the first
// register is unchanged; addr += 8 (hover text). The triple $a13:15 would
// write the zero registers, so it faults.
func bindLd64a32(in *isa.Inst) (impl, error) {
	if !shape(in, isa.KindATriple, isa.KindMRegPostInc, kM, kM) {
		return impl{}, layoutErr(in, "atriple, mreg++, mreg, mreg")
	}
	return impl{writesA: true, fn: func(t *Tile, c *Context, o *inst) {
		q := o.v[0] &^ 3
		if q == 12 {
			t.raise(FaultNoEmulation, "ld64a32 names $a13:15: $a14:15 are $azeros, which always read as zero")
			return
		}
		p := r4(o.v[1])
		daddr, paddr := c.M[r4(o.v[2])]+c.M[r4(o.v[3])]&0xFFFF, c.M[p]
		if !t.check(paddr, 8, "load") || !t.check(daddr, 4, "load") {
			return
		}
		v := t.load64(paddr)
		c.A[q+1] = t.load32(daddr)
		c.A[q+2], c.A[q+3] = uint32(v), uint32(v>>32)
		c.M[p] = paddr + 8
	}}, nil
}
