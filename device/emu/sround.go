package emu

import "math"

// Stochastic rounding (docs/amp-and-pace.md "Stochastic rounding",
// docs/machine.md "Arithmetic").
//
// fpCtlESR is the ESR (enable stochastic rounding) bit of a worker's $FP_CTL,
// which a started worker copies from the supervisor's $FP_ICTL. Bit 19 is
// the public layout of both registers (CSR_S_FP_ICTL__ESR__SHIFT and
// CSR_W_FP_CTL__ESR__SHIFT = 0x13 in Saghetti0/graphcore-ipu-research
// research/ipu1/ipu1_consts.c; same field in poplibs' use of
// CSR_S_FP_ICTL__ESR__SHIFT). The other $FP_CTL fields (exception enables,
// RND, NANOO) are stored but not modelled.
const fpCtlESR = 1 << 19

// srOn reports whether c rounds f32 -> f16 stochastically.
func srOn(c *Context) bool { return c.CSR[csrFPCtl]&fpCtlESR != 0 }

// f2hSR rounds f to binary16 stochastically with the 16 random bits in the
// low half of r (the upper half is ignored). Let lo be f truncated toward
// zero to f16 and hi the next f16 away from zero; the result is hi when
// r < floor(frac * 2^16), where frac in [0, 1) is the part of |f| beyond lo
// in units of lo's ulp, and lo otherwise. So:
//
//   - values exactly representable in f16 (frac = 0) never change, whatever r;
//   - in the f16 normal range the 13 discarded mantissa bits are compared with
//     the top 13 bits of r, and P(hi) = frac exactly;
//   - in the f16 subnormal range more bits are discarded; P(hi) is frac
//     truncated to 16 bits (a bias toward zero below 2^-16 ulp, i.e. 2^-40);
//   - 65504 < |f| < 2^16: hi is 2^16, which f16 encodes as infinity, so the
//     result is max or infinity with P(inf) = (|f| - 65504) / 32;
//     |f| >= 2^16 gives infinity (as round to nearest even does);
//   - infinities and NaN convert as with round to nearest even (f2h): NaN
//     stays NaN, infinity stays infinity; the sign is always kept (-0 -> -0).
func f2hSR(f float32, r uint32) uint32 {
	r &= 0xFFFF
	b := math.Float32bits(f)
	sign := b >> 16 & 0x8000
	a := b & 0x7FFFFFFF
	e := a >> 23 // biased f32 exponent
	switch {
	case e == 0xFF: // infinity or NaN
		return f2h(f)
	case e >= 127+16: // |f| >= 2^16
		return sign | 0x7C00
	case e >= 127-14: // f16 normal range [2^-14, 2^16)
		h := (e-112)<<10 | a>>13&0x3FF
		if r < (a&0x1FFF)<<3 {
			h++ // carries into the exponent (or to infinity) as it should
		}
		return sign | h
	}
	// f16 subnormal range: |f| = m * 2^-sh in units of 2^-24.
	m := a & 0x7FFFFF
	if e != 0 {
		m |= 1 << 23
	} else {
		e = 1 // f32 subnormal
	}
	sh := 126 - e // 14..125
	var h, frac16 uint32
	if sh < 40 { // else m * 2^-sh < 2^-16: frac16 = 0 and h = 0
		h = m >> sh
		frac16 = uint32((uint64(m) & (1<<sh - 1)) << 16 >> sh)
	}
	if r < frac16 {
		h++ // 0x3FF + 1 is the smallest normal, as it should be
	}
	return sign | h
}

// pack16SR rounds two f32 values to f16 lanes stochastically: the low lane
// uses bits 0..15 of r, the high lane bits 16..31.
func pack16SR(lo, hi float32, r uint32) uint32 {
	return f2hSR(lo, r) | f2hSR(hi, r>>16)<<16
}
