package bench

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/x448/float16"
)

// ewF64toH rounds a float64 to binary16 once, to nearest even (subnormals
// kept): round to f32 with round-to-odd, then to f16 (f32 has more than
// 11+2 significand bits, so the second rounding is then correct).
func ewF64toH(x float64) float16.Float16 {
	f := float32(x)
	if float64(f) != x && !math.IsInf(float64(f), 0) && !math.IsNaN(x) {
		b := math.Float32bits(f)
		if math.Abs(float64(f)) > math.Abs(x) {
			b-- // truncate toward zero (sign-magnitude)
		}
		f = math.Float32frombits(b | 1)
	}
	return float16.Fromfloat32(f)
}

func ewH2F(h float16.Float16) float64 { return float64(h.Float32()) }

// geluAbsBound is gelu_f16's documented absolute error bound against
// float64 tanh-GELU, over all finite f16 inputs, for both precisions: the
// largest is about one f16 step (2^-9) at |y| in [2, 4); the f16 variant's
// tail error (x < -2) is at most 4.4e-4. Larger |y| are exact (|x| >= 8).
const geluAbsBound = 1.0 / 256

// f16 constants of gelu.S.
var (
	ewGeluC0   = float16.Frombits(0x3A62) // sqrt(2/pi)
	ewGeluC1   = float16.Frombits(0x2891) // 0.044715*sqrt(2/pi)
	ewGeluHalf = float16.Frombits(0x3800)
	ewGeluOne  = float16.Frombits(0x3C00)
)

// GeluF16Model is gelu_f16's exact arithmetic: each step computed in float64
// (exact for a product or sum of two f16) and rounded once to f16, as the
// device's f16v4 operations and f16v2tanh do.
func GeluF16Model(x float16.Float16) float16.Float16 {
	mul := func(a, b float16.Float16) float16.Float16 { return ewF64toH(ewH2F(a) * ewH2F(b)) }
	add := func(a, b float16.Float16) float16.Float16 { return ewF64toH(ewH2F(a) + ewH2F(b)) }
	x2 := mul(x, x)
	a := mul(x2, ewGeluC1)
	b := add(a, ewGeluC0)
	s := mul(b, x)
	h := mul(x, ewGeluHalf)
	t := ewF64toH(math.Tanh(ewH2F(s)))
	u := add(t, ewGeluOne)
	return mul(h, u)
}

// GeluF32Model is gelu_f16 precise=1: x/(1+exp(-2s)) in f32 steps, as
// the device computes them (f32v2axpy: product rounded, then the sum;
// f32exp and f32oox: float64 result rounded once to f32).
func GeluF32Model(x float16.Float16) float16.Float16 {
	c0 := math.Sqrt(2 / math.Pi)
	tas := float32(-2 * 0.044715 * c0)
	c := float32(-2 * c0)
	xf := x.Float32()
	q := xf * xf
	p := tas * q
	b := p + c
	e := b * xf
	ex := float32(math.Exp(float64(e)))
	d := ex + 1
	r := float32(1 / float64(d))
	return float16.Fromfloat32(xf * r)
}

// GeluTanh64 and GeluErf64 are the reference GELUs in float64.
func GeluTanh64(x float64) float64 {
	return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
}

func GeluErf64(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// ewSameF16 compares two f16 values bit for bit, treating every NaN as equal.
func ewSameF16(a, b float16.Float16) bool {
	if a.IsNaN() && b.IsNaN() {
		return true
	}
	return a == b
}

// ewF16Bytes/ewBytesF16 convert between f16 slices and little-endian bytes.
func ewF16Bytes(v []float16.Float16) []byte {
	b := make([]byte, 2*len(v))
	for i, h := range v {
		b[2*i], b[2*i+1] = byte(h.Bits()), byte(h.Bits()>>8)
	}
	return b
}

func ewBytesF16(b []byte) []float16.Float16 {
	v := make([]float16.Float16, len(b)/2)
	for i := range v {
		v[i] = float16.Frombits(uint16(b[2*i]) | uint16(b[2*i+1])<<8)
	}
	return v
}

// ewRandomF16 draws n values: mostly normal(0, scale), plus a sprinkling of
// special values (zeros, large, tiny, infinities).
func ewRandomF16(rng *rand.Rand, n int, scale float64) []float16.Float16 {
	special := []float64{0, math.Copysign(0, -1), 1e-7, -1e-7, 6e-5, 100, -100, 300, -300, 65504, -65504, math.Inf(1), 8, -8, 3, -3}
	v := make([]float16.Float16, n)
	for i := range v {
		if rng.IntN(16) == 0 {
			v[i] = ewF64toH(special[rng.IntN(len(special))])
		} else {
			v[i] = ewF64toH(rng.NormFloat64() * scale)
		}
	}
	return v
}

// ewCheckF16 reads n f16 at r (guards as written by layWriteGuarded) and
// compares them with want; tolerance 0 means bit-exact (NaN == NaN),
// otherwise |got-want| <= tol*max(1,|want|). It returns the largest
// absolute difference seen.
func ewCheckF16(t *emu.Tile, r layRegion, before []byte, want []float16.Float16, tol float64) (float64, error) {
	raw := make([]byte, layGuard+r.size+layGuard)
	if err := t.Read(r.addr-layGuard, raw); err != nil {
		return 0, err
	}
	for i := 0; i < layGuard; i++ {
		if raw[i] != before[i] || raw[layGuard+r.size+i] != before[layGuard+r.size+i] {
			return 1, fmt.Errorf("a layGuard byte around the destination changed")
		}
	}
	got := ewBytesF16(raw[layGuard : layGuard+r.size])
	maxErr := 0.0
	for i, w := range want {
		g := got[i]
		d := math.Abs(ewH2F(g) - ewH2F(w))
		if !math.IsNaN(d) && !math.IsInf(d, 0) && d > maxErr {
			maxErr = d
		}
		ok := ewSameF16(g, w)
		if !ok && tol > 0 && !w.IsNaN() && !w.IsInf(0) {
			ok = d <= tol*math.Max(1, math.Abs(ewH2F(w)))
		}
		if !ok {
			return maxErr, fmt.Errorf("element %d is %v (0x%04x), want %v (0x%04x)", i, g.Float32(), g.Bits(), w.Float32(), w.Bits())
		}
	}
	return maxErr, nil
}

func init() {
	register(kernels.GeluF16, func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		n := p["n"]
		var a layArena
		in, out := a.alloc(2*n), a.alloc(2*n)
		x := ewRandomF16(rng, n, 2)
		if _, err := layWriteGuarded(t, rng, in, ewF16Bytes(x)); err != nil {
			return nil, err
		}
		before, err := layWriteGuarded(t, rng, out, layRandomBytes(rng, 2*n))
		if err != nil {
			return nil, err
		}
		model := GeluF16Model
		if p["precise"] == 1 {
			model = GeluF32Model
		}
		want := make([]float16.Float16, n)
		for i, v := range x {
			want[i] = model(v)
		}
		return &Case{
			Args: map[int]uint32{2: out.addr, 3: in.addr},
			// The check is bit-exact against the host model of the same
			// steps (NaN matches any NaN). The reported error and
			// tolerance are against float64 tanh-GELU: the documented
			// bound, which TestGeluAccuracy proves for every f16 input.
			Tolerance: geluAbsBound,
			Check: func(t *emu.Tile) (float64, error) {
				if _, err := ewCheckF16(t, out, before, want, 0); err != nil {
					return 0, err
				}
				maxErr := 0.0
				for i, v := range x {
					if v.IsNaN() || v.IsInf(0) {
						continue
					}
					d := math.Abs(ewH2F(want[i]) - GeluTanh64(ewH2F(v)))
					maxErr = math.Max(maxErr, d)
					if d > geluAbsBound {
						return maxErr, fmt.Errorf("element %d: error %g vs tanh-GELU exceeds %g", i, d, geluAbsBound)
					}
				}
				return maxErr, nil
			},
		}, nil
	})
}

// ewHalfStep is half the spacing of f16 values at magnitude v (the
// rounding error bound of one rounding to f16; subnormal spacing 2^-24;
// infinite beyond the largest finite f16 + half a step).
func ewHalfStep(v float64) float64 {
	if v >= 65520 {
		return math.Inf(1)
	}
	e := math.Floor(math.Log2(math.Max(v, math.Ldexp(1, -14))))
	return math.Ldexp(1, int(e)-11)
}

// ReduceAddF16Model is reduce_add_f16's arithmetic: f32 accumulation in part
// order, one rounding to f16.
func ReduceAddF16Model(parts [][]float16.Float16, i int) float16.Float16 {
	acc := parts[0][i].Float32()
	for _, p := range parts[1:] {
		acc += p[i].Float32()
	}
	return float16.Fromfloat32(acc)
}

func init() {
	register(kernels.ReduceAddF16, func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		n, np := p["n"], p["parts"]
		var a layArena
		in, out := a.alloc(2*n*np), a.alloc(2*n)
		parts := make([][]float16.Float16, np)
		var all []float16.Float16
		for q := range parts {
			parts[q] = ewRandomF16(rng, n, 1)
			// Keep infinities out of most of the data so sums stay finite
			// and comparable; a few remain to exercise NaN/Inf paths.
			all = append(all, parts[q]...)
		}
		if _, err := layWriteGuarded(t, rng, in, ewF16Bytes(all)); err != nil {
			return nil, err
		}
		before, err := layWriteGuarded(t, rng, out, layRandomBytes(rng, 2*n))
		if err != nil {
			return nil, err
		}
		want := make([]float16.Float16, n)
		exact := make([]float64, n) // float64 sums (exact for f16 addends up to 2^13 parts)
		bound := make([]float64, n)
		tol := 0.0
		for i := range want {
			want[i] = ReduceAddF16Model(parts, i)
			abs := 0.0
			for _, q := range parts {
				exact[i] += ewH2F(q[i])
				abs += math.Abs(ewH2F(q[i]))
			}
			// Recursive f32 summation: |S' - S| <= (parts-1) 2^-24 sum|x|
			// (to first order; 2^-23 covers the rest), then one f16
			// rounding: half an f16 step at the larger magnitude.
			bound[i] = float64(np-1)*math.Ldexp(abs, -23) + ewHalfStep(math.Max(math.Abs(exact[i]), math.Abs(ewH2F(want[i]))))
			if !math.IsInf(bound[i], 0) && !math.IsNaN(bound[i]) {
				tol = math.Max(tol, bound[i])
			}
		}
		return &Case{
			Args: map[int]uint32{2: out.addr, 3: in.addr},
			// The check is bit-exact against the host model (same f32
			// additions in the same order, same final rounding). The
			// reported error is against the exact (float64) sum, checked
			// against the a-priori bound per element; the reported
			// tolerance is the largest such bound.
			Tolerance: tol,
			Check: func(t *emu.Tile) (float64, error) {
				if _, err := ewCheckF16(t, out, before, want, 0); err != nil {
					return 0, err
				}
				maxErr := 0.0
				for i, w := range want {
					if w.IsInf(0) || w.IsNaN() || math.IsInf(exact[i], 0) || math.IsNaN(exact[i]) {
						continue
					}
					d := math.Abs(ewH2F(w) - exact[i])
					maxErr = math.Max(maxErr, d)
					if d > bound[i] {
						return maxErr, fmt.Errorf("element %d: error %g vs the exact sum exceeds the bound %g", i, d, bound[i])
					}
				}
				return maxErr, nil
			},
		}, nil
	})
}
