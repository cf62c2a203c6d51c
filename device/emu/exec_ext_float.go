package emu

import (
	"math"

	"github.com/ipustack/ipustack/isa"
)

// Floating-point semantics of the rows added by isa/rows_ext.go. They reuse
// the existing decisions (exec_float.go, docs/isa.md): f16 lanes are
// widened exactly, computed in f32 and rounded once to f16 to nearest even;
// max and min give the other operand when one is NaN; transcendentals are
// computed in float64 and rounded once to the output format.

// f32min is f32max's mirror: a NaN operand gives the other operand; equal
// values (+0 and -0) give -0.
func f32min(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a < b:
		return a
	case b < a:
		return b
	}
	if math.Signbit(float64(a)) {
		return a
	}
	return b
}

func fabs(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

func fabsadd(a, b float32) float32 { return fabs(a) + fabs(b) }
func fabsmax(a, b float32) float32 { return f32max(fabs(a), fabs(b)) }
func fdiv(a, b float32) float32    { return a / b }

// clamp is "min-of-maximum": min(max(x, lo), hi) with the NaN rule of
// f32max/f32min. lo is the first (lower-addressed) bound of the second
// operand and hi the second (docs/isa.md).
func clamp(x, lo, hi float32) float32 { return f32min(f32max(x, lo), hi) }

// IEEE comparisons (a NaN makes every relation but != false); true is all
// ones in the lane (docs/isa.md: poplibs uses the results as masks).
type cmpFn func(a, b float32) bool

var cmps = map[string]cmpFn{
	"eq": func(a, b float32) bool { return a == b },
	"ne": func(a, b float32) bool { return a != b },
	"lt": func(a, b float32) bool { return a < b },
	"le": func(a, b float32) bool { return a <= b },
	"gt": func(a, b float32) bool { return a > b },
	"ge": func(a, b float32) bool { return a >= b },
}

func f16cmp(f cmpFn) laneOp {
	return func(a, b uint32) uint32 {
		var r uint32
		if f(lo16(a), lo16(b)) {
			r |= 0xFFFF
		}
		if f(hi16(a), hi16(b)) {
			r |= 0xFFFF0000
		}
		return r
	}
}

func f32cmp(f cmpFn) laneOp {
	return func(a, b uint32) uint32 {
		if f(f32(a), f32(b)) {
			return 0xFFFFFFFF
		}
		return 0
	}
}

// Transcendentals: float64 result rounded once (f16 via f64toh).
var f64fns = map[string]func(float64) float64{
	"exp2": math.Exp2,
	"ln":   math.Log,
	"log2": math.Log2,
	"sigm": func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
	"tanh": math.Tanh,
	"oorx": func(x float64) float64 { return 1 / math.Sqrt(x) },
	"sqrt": math.Sqrt,
}

func f16fn(f func(float64) float64) func(uint32) uint32 {
	return func(v uint32) uint32 {
		return f64toh(f(float64(lo16(v)))) | f64toh(f(float64(hi16(v))))<<16
	}
}

func f32fn(f func(float64) float64) func(uint32) uint32 {
	return func(v uint32) uint32 { return bitsf(float32(f(float64(f32(v))))) }
}

// bindClamp binds the clamps: x is a register or a group of the row's
// data kind, the bounds are the two f16 halves of one register (f16 rows)
// or the two registers of a pair (f32 rows).
func bindClamp(half bool) binder {
	return func(in *isa.Inst) (impl, error) {
		if len(in.Operands) != 3 || in.Operands[0].Kind != in.Operands[1].Kind {
			return impl{}, layoutErr(in, "data, data, bounds")
		}
		dk, bk := in.Operands[0].Kind, in.Operands[2].Kind
		if (dk != kA && dk != kAP) || (half && bk != kA) || (!half && bk != kAP) {
			return impl{}, layoutErr(in, "areg|apair, areg|apair, areg (f16) | apair (f32)")
		}
		n := int32(dk.RegCount())
		mask := int32(16 - n)
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			d, a := o.v[0]&mask, o.v[1]&mask
			var lo, hi float32
			if half {
				b := c.A[r4(o.v[2])]
				lo, hi = lo16(b), hi16(b)
			} else {
				b := o.v[2] & 14
				lo, hi = f32(c.A[b]), f32(c.A[b+1])
			}
			var r [2]uint32
			for i := int32(0); i < n; i++ {
				v := c.A[a+i]
				if half {
					r[i] = pack16(clamp(lo16(v), lo, hi), clamp(hi16(v), lo, hi))
				} else {
					r[i] = bitsf(clamp(f32(v), lo, hi))
				}
			}
			for i := int32(0); i < n; i++ {
				c.A[d+i] = r[i]
			}
		}}, nil
	}
}

// bindGroupUnary binds `op $d, $a` with d and a groups of the given kinds
// and f mapping the source words to the destination words.
func bindGroupUnary(dk, ak isa.Kind, f func(c *Context, src []uint32, dst []uint32)) binder {
	return func(in *isa.Inst) (impl, error) {
		if !shape(in, dk, ak) {
			return impl{}, layoutErr(in, dk.String()+", "+ak.String())
		}
		nd, na := int32(dk.RegCount()), int32(ak.RegCount())
		md, ma := int32(16-nd), int32(16-na)
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			var src, dst [4]uint32
			a, d := o.v[1]&ma, o.v[0]&md
			copy(src[:na], c.A[a:a+na])
			f(c, src[:na], dst[:nd])
			copy(c.A[d:d+nd], dst[:nd])
		}}, nil
	}
}

// tof16x2 rounds two f32 values to one f16v2 word the way f32v2tof16 does:
// to nearest even, or stochastically with one draw when $FP_CTL.ESR is set.
func tof16x2(c *Context, lo, hi float32) uint32 {
	if !srOn(c) {
		return pack16(lo, hi)
	}
	return pack16SR(lo, hi, uint32(c.next64()))
}

// bindMix: `f16v4mix $d, $x, $y` (hover text: "z = a*x + b*y ... The scalar
// multiplicands a and b are provided by the internal state element $TAS.
// Results are stored within the accumulator state. Destination registers
// are written with the previous accumulator state"). a is $TAS bits 15..0
// and b bits 31..16 (poplibs NonLinearityGrad2D_gelu.S: "$TAS <- (a &
// 0xffff) | ((b & 0xffff) << 16)"). The four lanes are kept in f32: each
// a*x + b*y is formed exactly and rounded once to f32 (the reference's
// attention_softmax_f16.S: "MIX forms the difference in FP32"); reads
// round to f16, to nearest even. The sources are read before dst is
// written, so dst may name a source.
func bindMix(in *isa.Inst) (impl, error) {
	if !shape(in, kAP, kAP, kAP) {
		return impl{}, layoutErr(in, "apair x3")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		d, x, y := o.v[0]&14, o.v[1]&14, o.v[2]&14
		tas := c.CSR[csrTAS]
		a, b := float64(lo16(tas)), float64(hi16(tas))
		xs := [4]uint32{c.A[x] & 0xFFFF, c.A[x] >> 16, c.A[x+1] & 0xFFFF, c.A[x+1] >> 16}
		ys := [4]uint32{c.A[y] & 0xFFFF, c.A[y] >> 16, c.A[y+1] & 0xFFFF, c.A[y+1] >> 16}
		acc := &t.amp.acc[c.Worker]
		prev := acc.mix
		for i := range acc.mix {
			acc.mix[i] = float32(a*float64(h2f(xs[i])) + b*float64(h2f(ys[i])))
		}
		c.A[d], c.A[d+1] = pack16(prev[0], prev[1]), pack16(prev[2], prev[3])
	}}, nil
}

// bindGacc: `f16v4gacc $d` ("Read 4 internal accumulator values as a
// half-precision vector"): the four lanes f16v4mix writes, rounded to f16
// to nearest even; the accumulators keep their values.
func bindGacc(in *isa.Inst) (impl, error) {
	if !shape(in, kAP) {
		return impl{}, layoutErr(in, "apair")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		d, m := o.v[0]&14, &t.amp.acc[c.Worker].mix
		c.A[d], c.A[d+1] = pack16(m[0], m[1]), pack16(m[2], m[3])
	}}, nil
}

var extFloatBinders = func() map[string]binder {
	m := map[string]binder{
		"f16v4mix":    bindMix,
		"f16v4gacc":   bindGacc,
		"f16v2sub":    bindVec(f16x2(fsub), kA),
		"f16v4sub":    bindVec(f16x2(fsub), kAP),
		"f32v2sub":    bindVec(f32x1(fsub), kAP),
		"f16v2max":    bindVec(f16x2(f32max), kA),
		"f16v2min":    bindVec(f16x2(f32min), kA),
		"f16v4max":    bindVec(f16x2(f32max), kAP),
		"f16v4min":    bindVec(f16x2(f32min), kAP),
		"f32min":      bindVec(f32x1(f32min), kA),
		"f32v2min":    bindVec(f32x1(f32min), kAP),
		"f16v2absadd": bindVec(f16x2(fabsadd), kA),
		"f16v4absadd": bindVec(f16x2(fabsadd), kAP),
		"f32absadd":   bindVec(f32x1(fabsadd), kA),
		"f32v2absadd": bindVec(f32x1(fabsadd), kAP),
		"f16v2absmax": bindVec(f16x2(fabsmax), kA),
		"f16v4absmax": bindVec(f16x2(fabsmax), kAP),
		"f32absmax":   bindVec(f32x1(fabsmax), kA),
		"f32v2absmax": bindVec(f32x1(fabsmax), kAP),
		"f32div":      bindVec(f32x1(fdiv), kA),
		"f16v2clamp":  bindClamp(true),
		"f16v4clamp":  bindClamp(true),
		"f32clamp":    bindClamp(false),
		"f32v2clamp":  bindClamp(false),
		"f32fromi32":  bindUnary(func(v uint32) uint32 { return bitsf(float32(int32(v))) }),
		"f32fromui32": bindUnary(func(v uint32) uint32 { return bitsf(float32(v)) }),
		"f16v2sum":    bindUnary(func(v uint32) uint32 { return bitsf(lo16(v) + hi16(v)) }),
		"f16v4sum": bindGroupUnary(kAP, kAP, func(_ *Context, s, d []uint32) {
			d[0], d[1] = bitsf(lo16(s[0])+hi16(s[0])), bitsf(lo16(s[1])+hi16(s[1]))
		}),
		"f16v4maxc": bindGroupUnary(kA, kAP, func(_ *Context, s, d []uint32) {
			d[0] = pack16(f32max(lo16(s[0]), hi16(s[0])), f32max(lo16(s[1]), hi16(s[1])))
		}),
		"f32v4tof16": bindGroupUnary(kAP, kAQ, func(c *Context, s, d []uint32) {
			d[0], d[1] = tof16x2(c, f32(s[0]), f32(s[1])), tof16x2(c, f32(s[2]), f32(s[3]))
		}),
	}
	for rel, f := range cmps {
		m["f16v2cmp"+rel] = bindVec(f16cmp(f), kA)
		m["f16v4cmp"+rel] = bindVec(f16cmp(f), kAP)
		m["f32cmp"+rel] = bindVec(f32cmp(f), kA)
		m["f32v2cmp"+rel] = bindVec(f32cmp(f), kAP)
	}
	for name, f := range f64fns {
		if name != "tanh" && name != "oorx" && name != "sqrt" {
			m["f16v2"+name] = bindUnary(f16fn(f))
		}
		m["f32"+name] = bindUnary(f32fn(f))
	}
	return m
}()
