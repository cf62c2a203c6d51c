package emu

import (
	"math"

	"github.com/ipustack/ipustack/isa"
	"github.com/x448/float16"
)

// f16 helpers. Conversions f16 -> f32 are exact; f32 -> f16 rounds to
// nearest even (x448/float16; the stochastic variant is f2hSR in
// sround.go). An f16 add or multiply done in f32 and then rounded to f16 is
// correctly rounded: f32 has 24 >= 2*11+2 significand bits, so the double
// rounding is innocuous.
//
// Both sit on the AMP hot path, so f16 -> f32 is a table lookup and f32 ->
// f16 handles results in the f16 normal range with a few integer
// operations, leaving everything else (subnormal, overflow, NaN) to the
// library. TestF16Conversions checks both against the library exhaustively.
func h2f(h uint32) float32 { return h2fTable[h&0xFFFF] }

func f2h(f float32) uint32 {
	b := math.Float32bits(f)
	e := int32(b>>23&0xFF) - 127 + 15
	if e > 0 && e < 31 {
		h := b>>16&0x8000 | uint32(e)<<10 | b>>13&0x3FF
		// Round to nearest even on the 13 discarded bits; a carry out of
		// the mantissa correctly bumps the exponent (up to infinity).
		if rem := b & 0x1FFF; rem > 0x1000 || (rem == 0x1000 && h&1 != 0) {
			h++
		}
		return h
	}
	return f2hSlow(f)
}

// f2hSlow converts values outside the f16 normal range (kept out of f2h so
// that f2h inlines).
//
//go:noinline
func f2hSlow(f float32) uint32 { return uint32(float16.Fromfloat32(f).Bits()) }

var h2fTable = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return &t
}()

func lo16(v uint32) float32        { return h2f(v & 0xFFFF) }
func hi16(v uint32) float32        { return h2f(v >> 16) }
func pack16(lo, hi float32) uint32 { return f2h(lo) | f2h(hi)<<16 }

func f32(v uint32) float32   { return math.Float32frombits(v) }
func bitsf(f float32) uint32 { return math.Float32bits(f) }

// f32max follows the row's rule: a NaN operand gives the other operand.
func f32max(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a > b:
		return a
	case b > a:
		return b
	}
	// Equal (including +0 vs -0): prefer +0.
	if math.Signbit(float64(a)) {
		return b
	}
	return a
}

// Lane operations on 32-bit register words.
type laneOp func(a, b uint32) uint32

func f16x2(f func(a, b float32) float32) laneOp {
	return func(a, b uint32) uint32 { return pack16(f(lo16(a), lo16(b)), f(hi16(a), hi16(b))) }
}

func f32x1(f func(a, b float32) float32) laneOp {
	return func(a, b uint32) uint32 { return bitsf(f(f32(a), f32(b))) }
}

func fadd(a, b float32) float32 { return a + b }
func fsub(a, b float32) float32 { return a - b }
func fmul(a, b float32) float32 { return a * b }

// bindVec binds `op $d, $a, $b` over register groups of the row's width,
// applying op to each 32-bit word.
func bindVec(op laneOp, k isa.Kind) binder {
	n := int32(k.RegCount())
	mask := int32(16 - n) // aligns the group base
	return func(in *isa.Inst) (impl, error) {
		if len(in.Operands) == 3 && in.Operands[1].Kind.BcastSuffix() != "" && in.Operands[0].Kind == k && in.Operands[2].Kind == k {
			// A broadcast source: one register's f32 (:B) or f16 half
			// (:BL, :BU) in every lane.
			bk := in.Operands[1].Kind
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				d, b := o.v[0]&mask, o.v[2]&mask
				x := c.A[r4(o.v[1])]
				switch bk {
				case isa.KindABcastLo:
					x = x&0xFFFF | x<<16
				case isa.KindABcastHi:
					x = x>>16 | x&0xFFFF0000
				}
				var r [4]uint32
				for i := int32(0); i < n; i++ {
					r[i] = op(x, c.A[b+i])
				}
				for i := int32(0); i < n; i++ {
					c.A[d+i] = r[i]
				}
			}}, nil
		}
		if !shape(in, k, k, k) {
			return impl{}, layoutErr(in, k.String()+" x3")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			d, a, b := o.v[0]&mask, o.v[1]&mask, o.v[2]&mask
			var r [4]uint32
			for i := int32(0); i < n; i++ {
				r[i] = op(c.A[a+i], c.A[b+i])
			}
			for i := int32(0); i < n; i++ {
				c.A[d+i] = r[i]
			}
		}}, nil
	}
}

// bindUnary binds `op $d, $a` on single registers.
func bindUnary(f func(uint32) uint32) binder {
	return func(in *isa.Inst) (impl, error) {
		if !shape(in, kA, kA) {
			return impl{}, layoutErr(in, "areg, areg")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) { c.A[r4(o.v[0])] = f(c.A[r4(o.v[1])]) }}, nil
	}
}

// Transcendentals (docs/isa.md): the result is computed in float64 from
// the exactly widened input and rounded once to the output format, so f16
// results go float64 -> f16 directly (f64toh), never through f32.
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

func exph(h uint32) uint32  { return f64toh(math.Exp(float64(h2f(h)))) }
func tanhh(h uint32) uint32 { return f64toh(math.Tanh(float64(h2f(h)))) }

// f64toh rounds a float64 to binary16, to nearest even, keeping
// subnormals.
func f64toh(x float64) uint32 {
	var sign uint32
	if math.Signbit(x) {
		sign = 0x8000
	}
	a := math.Abs(x)
	switch {
	case a != a:
		return sign | 0x7E00
	case a >= 65520: // max f16 65504 plus half an ulp (16): rounds to inf
		return sign | 0x7C00
	case a < 0x1p-14:
		// Subnormal: units of 2^-24; the scaling is exact. 1024 units
		// is the smallest normal, whose encoding is the same number.
		return sign | uint32(math.RoundToEven(a*0x1p24))
	}
	frac, exp := math.Frexp(a) // a = frac * 2^exp, frac in [0.5, 1)
	e := exp - 1
	m := math.RoundToEven((frac*2 - 1) * 1024)
	if m == 1024 {
		m, e = 0, e+1
	}
	if e+15 >= 31 {
		return sign | 0x7C00
	}
	return sign | uint32(e+15)<<10 | uint32(m)
}

var floatBinders = map[string]binder{
	"f16v2add":  bindVec(f16x2(fadd), kA),
	"f16v2mul":  bindVec(f16x2(fmul), kA),
	"f16v4add":  bindVec(f16x2(fadd), kAP),
	"f16v4mul":  bindVec(f16x2(fmul), kAP),
	"f32add":    bindVec(f32x1(fadd), kA),
	"f32sub":    bindVec(f32x1(fsub), kA),
	"f32mul":    bindVec(f32x1(fmul), kA),
	"f32max":    bindVec(f32x1(f32max), kA),
	"f32v2add":  bindVec(f32x1(fadd), kAP),
	"f32v2mul":  bindVec(f32x1(fmul), kAP),
	"f32v2max":  bindVec(f32x1(f32max), kAP),
	"f32v4add":  bindVec(f32x1(fadd), kAQ),
	"f32v2axpy": bindAxpy,
	"f16v2exp":  bindUnary(func(v uint32) uint32 { return exph(v&0xFFFF) | exph(v>>16)<<16 }),
	"f16v2tanh": bindUnary(func(v uint32) uint32 { return tanhh(v&0xFFFF) | tanhh(v>>16)<<16 }),
	"f32exp":    bindUnary(func(v uint32) uint32 { return bitsf(expf(f32(v))) }),
	"f32oox":    bindUnary(func(v uint32) uint32 { return bitsf(1 / f32(v)) }),
	"f16tof32":  bindUnary(func(v uint32) uint32 { return bitsf(lo16(v)) }),
	"not":       bindUnary(func(v uint32) uint32 { return ^v }),
	"f16v2tof32": func(in *isa.Inst) (impl, error) {
		if !shape(in, kAP, kA) {
			return impl{}, layoutErr(in, "apair, areg")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			v, d := c.A[r4(o.v[1])], o.v[0]&14
			c.A[d], c.A[d+1] = bitsf(lo16(v)), bitsf(hi16(v))
		}}, nil
	},
	"f32v2tof16": func(in *isa.Inst) (impl, error) {
		if !shape(in, kA, kAP) {
			return impl{}, layoutErr(in, "areg, apair")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			s := o.v[1] & 14
			if !srOn(c) {
				c.A[r4(o.v[0])] = pack16(f32(c.A[s]), f32(c.A[s+1]))
				return
			}
			// Stochastic rounding (sround.go): one 64-bit draw, the low
			// lane uses bits 0..15 and the high lane bits 16..31.
			c.A[r4(o.v[0])] = pack16SR(f32(c.A[s]), f32(c.A[s+1]), uint32(c.next64()))
		}}, nil
	},
	"f32tof16": func(in *isa.Inst) (impl, error) {
		if !shape(in, kA, kA) {
			return impl{}, layoutErr(in, "areg, areg")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			// Hover text: "The 16-bit result of the conversion is broadcast
			// to (duplicated into) a single ARF register".
			v := f32(c.A[r4(o.v[1])])
			h := f2h(v)
			if srOn(c) {
				// Stochastic rounding (sround.go): one 64-bit draw, bits 0..15.
				h = f2hSR(v, uint32(c.next64()))
			}
			c.A[r4(o.v[0])] = h | h<<16
		}}, nil
	},
	"sort4x16lo": bindRR(func(a, b uint32) uint32 { return a&0xFFFF | b<<16 }),
	"sort4x16hi": bindRR(func(a, b uint32) uint32 { return a>>16 | b&0xFFFF0000 }),
	"fnop": func(in *isa.Inst) (impl, error) {
		return impl{fn: func(*Tile, *Context, *inst) {}}, nil
	},
	"urand64": func(in *isa.Inst) (impl, error) {
		if !shape(in, kAP) {
			return impl{}, layoutErr(in, "apair")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			v := c.next64()
			d := o.v[0] & 14
			c.A[d], c.A[d+1] = uint32(v), uint32(v>>32)
		}}, nil
	},
}

// bindAxpy: `f32v2axpy $d, $x, $y` (hover text: "z = a x + y The scalar
// multiplicand a is provided by the internal state element $TAS. Results
// are stored within the accumulator state. Destination registers are
// written with the previous accumulator state"). a is $TAS as f32; x is the
// first source (poplibs ScaledAdd2D_float.S: `f32v2axpy $azeros, $dataB0,
// $data0` for data + scale*dataB). The product is rounded to f32, then the
// sum (the row's Doc). The two results go to lanes 0 and 1 of the worker's
// MIX lanes, the ones f16v4mix and f16v4gacc use, and $d gets those lanes'
// previous values as f32, unrounded (named assumption
// axpy-shares-mix-lanes). Lanes 2 and 3 are left alone. The sources are
// read before $d is written, so $d may name one.
func bindAxpy(in *isa.Inst) (impl, error) {
	if !shape(in, kAP, kAP, kAP) {
		return impl{}, layoutErr(in, "apair x3")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		s := f32(c.CSR[csrTAS])
		d, x, y := o.v[0]&14, o.v[1]&14, o.v[2]&14
		// The explicit conversions round each product before the add
		// (Go may not fuse across them).
		r0 := float32(s*f32(c.A[x])) + f32(c.A[y])
		r1 := float32(s*f32(c.A[x+1])) + f32(c.A[y+1])
		lanes := &t.amp.acc[c.Worker].mix
		p0, p1 := lanes[0], lanes[1]
		lanes[0], lanes[1] = r0, r1
		c.A[d], c.A[d+1] = bitsf(p0), bitsf(p1)
	}}, nil
}

// The urand64 generator: xorshift128+ over the 128-bit state
// $PRNG_0 ($PRNG_0_1:$PRNG_0_0) and $PRNG_1 (docs/amp-and-pace.md names
// xorshift128+; the shift triple 23/17/26 is the standard one, our choice).
func (c *Context) next64() uint64 {
	s1, s0 := c.rng[0], c.rng[1]
	c.rng[0] = s0
	s1 ^= s1 << 23
	c.rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26)
	return c.rng[1] + s0
}

// seed applies the public $PRNG_SEED write rule (hover text for
// $PRNG_SEED) to a 32-bit value.
func (c *Context) seed(v uint64) {
	x := uint32(v)
	p00, p01 := x, ^x
	p10 := x<<13 | ^x>>19
	p11 := ^x<<13 | x>>19
	c.rng[0] = uint64(p00) | uint64(p01)<<32
	c.rng[1] = uint64(p10) | uint64(p11)<<32
}
