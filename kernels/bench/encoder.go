package bench

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/reference"
	"github.com/x448/float16"
)

// Bench setups of the encoder-layer kernels (kernels/encoder.go). Each
// check is bit-exact against a host model of the kernel's own steps (the
// same f32/f16 operations in the same order, each rounded as the device
// rounds it), and also compares the result with the float64 reference of
// the operation (reference package) within a tolerance derived from the
// steps' roundings; the reported error and tolerance are the latter.

// AddF16Model is add_f16 on one value: the exact sum rounded once to f16.
func AddF16Model(a, b float16.Float16) float16.Float16 { return ewF64toH(ewH2F(a) + ewH2F(b)) }

func init() {
	register("add_f16", func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		n := p["n"]
		var ar layArena
		ra, rb, out := ar.alloc(2*n), ar.alloc(2*n), ar.alloc(2*n)
		a, b := ewRandomF16(rng, n, 2), ewRandomF16(rng, n, 2)
		if _, err := layWriteGuarded(t, rng, ra, ewF16Bytes(a)); err != nil {
			return nil, err
		}
		if _, err := layWriteGuarded(t, rng, rb, ewF16Bytes(b)); err != nil {
			return nil, err
		}
		before, err := layWriteGuarded(t, rng, out, layRandomBytes(rng, 2*n))
		if err != nil {
			return nil, err
		}
		want := make([]float16.Float16, n)
		exact := make([]float64, n)
		tol := 0.0
		for i := range want {
			want[i] = AddF16Model(a[i], b[i])
			exact[i] = ewH2F(a[i]) + ewH2F(b[i])
			if h := ewHalfStep(math.Abs(exact[i])); !math.IsInf(h, 0) && !math.IsNaN(h) {
				tol = math.Max(tol, h)
			}
		}
		return &Case{
			Args: map[int]uint32{2: out.addr, 3: ra.addr, 4: rb.addr},
			// Bit-exact against the model; the float64 sum is exact, so the
			// only error is the one rounding to f16: at most half an f16
			// step at the sum's magnitude (the reported tolerance is the
			// largest such bound over the data).
			Tolerance: tol,
			Check: func(t *emu.Tile) (float64, error) {
				if _, err := ewCheckF16(t, out, before, want, 0); err != nil {
					return 0, err
				}
				return encCheckAgainst(want, exact, func(i int) float64 { return ewHalfStep(math.Abs(exact[i])) })
			},
		}, nil
	})
}

// encCheckAgainst compares f16 results with float64 references: element i
// must be within bound(i) of exact[i]. Elements whose reference or bound is
// not finite (an overflowing sum, a NaN input) are skipped. It returns the
// largest absolute difference.
func encCheckAgainst(got []float16.Float16, exact []float64, bound func(i int) float64) (float64, error) {
	maxErr := 0.0
	for i, g := range got {
		b := bound(i)
		if math.IsInf(exact[i], 0) || math.IsNaN(exact[i]) || math.IsInf(b, 0) || math.IsNaN(b) {
			continue
		}
		d := math.Abs(ewH2F(g) - exact[i])
		if d > maxErr {
			maxErr = d
		}
		if !(d <= b) {
			return maxErr, fmt.Errorf("element %d is %v, the float64 reference %v: error %g exceeds the bound %g", i, g.Float32(), exact[i], d, b)
		}
	}
	return maxErr, nil
}

// encNormal draws n f16 values of normal(mean, sd), rounded once.
func encNormal(rng *rand.Rand, n int, mean, sd float64) []float16.Float16 {
	v := make([]float16.Float16, n)
	for i := range v {
		v[i] = ewF64toH(mean + sd*rng.NormFloat64())
	}
	return v
}

// encF32Bytes renders f32 values as little-endian bytes.
func encF32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		u := math.Float32bits(f)
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	return b
}

// EncToPanels reorders a row-major rows x cols block (cols a multiple of
// 16) into AMP left / AMP out order: cols/16 panels, row i's values
// 16g..16g+15 at g*rows*16 + i*16 (the panels=1 layout of softmax_f16 and
// layer_norm_f16).
func EncToPanels(v []float16.Float16, rows, cols int) []float16.Float16 {
	out := make([]float16.Float16, len(v))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[(j/16)*rows*16+i*16+j%16] = v[i*cols+j]
		}
	}
	return out
}

// EncFromPanels is the inverse of EncToPanels.
func EncFromPanels(v []float16.Float16, rows, cols int) []float16.Float16 {
	out := make([]float16.Float16, len(v))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[i*cols+j] = v[(j/16)*rows*16+i*16+j%16]
		}
	}
	return out
}

// encLayout is a kernel's data order: row-major, or with panels=1 AMP
// panels (EncToPanels).
func encLayout(p kernels.Params, v []float16.Float16, rows, cols int) []float16.Float16 {
	if p["panels"] == 1 {
		return EncToPanels(v, rows, cols)
	}
	return v
}

// encSlices is the column split of the encoder kernels over the six
// workers: worker w takes words [first, first+count) of words.
func encSlices(words int) (first, count [6]int) {
	q, r := words/6, words%6
	for w := 0; w < 6; w++ {
		count[w] = q
		if w < r {
			count[w]++
		}
		first[w] = w*q + min(w, r)
	}
	return first, count
}

// encLaneSum is the device's f32 sum of a slice (run A/B of layer_norm_f16):
// four lanes, lane j summing values 4k+j in order from +0, then
// (l0+l2)+(l1+l3).
func encLaneSum(v []float32) float32 {
	var l [4]float32
	for k := 0; k+3 < len(v); k += 4 {
		for j := range l {
			l[j] += v[k+j]
		}
	}
	return (l[0] + l[2]) + (l[1] + l[3])
}

// encCombine6 is (((((p0+p1)+p2)+p3)+p4)+p5) * inv in f32.
func encCombine6(p [6]float32, inv float32) float32 {
	s := p[0]
	for _, v := range p[1:] {
		s += v
	}
	return float32(s * inv)
}

// LayerNormF16Model is layer_norm_f16 on one row s (already x + r for the
// fused variant): its statistics and outputs exactly as the device
// computes them (src/layer_norm.S).
func LayerNormF16Model(s, scale, bias []float16.Float16) (out []float16.Float16, mean, variance float32) {
	width := len(s)
	inv := float32(1 / float64(width)) // f32oox(f32fromi32(width))
	first, count := encSlices(width / 4)
	sf := make([]float32, width)
	for i, v := range s {
		sf[i] = v.Float32()
	}
	var pa, pb [6]float32
	for w := range pa {
		pa[w] = encLaneSum(sf[4*first[w] : 4*(first[w]+count[w])])
	}
	mean = encCombine6(pa, inv)
	sq := make([]float32, width)
	for i, v := range sf {
		d := v - mean
		sq[i] = float32(d * d)
	}
	for w := range pb {
		pb[w] = encLaneSum(sq[4*first[w] : 4*(first[w]+count[w])])
	}
	variance = encCombine6(pb, inv)
	rstd := float32(1 / math.Sqrt(float64(variance+kernels.LayerNormEps)))
	out = make([]float16.Float16, width)
	for i, v := range sf {
		d := v - mean
		z := float16.Fromfloat32(float32(d * rstd))
		p := ewF64toH(ewH2F(z) * ewH2F(scale[i]))
		out[i] = ewF64toH(ewH2F(p) + ewH2F(bias[i]))
	}
	return out, mean, variance
}

// layerNormBounds derives the absolute error bounds of layer_norm_f16 on a
// row against the float64 reference (reference.LayerNorm64) from the
// kernel's roundings (u = 2^-24, gamma_k = k u / (1 - k u), n = width):
//   - mean: every f32 sum is a recursive sum of at most n terms, so
//     |mean' - mean| <= dm = gamma_(n+1) mean|s| (the last term the
//     multiply by the rounded 1/n);
//   - variance: each deviation carries dm + u|d|, each square and the sum
//     gamma_(n+4) relative, so |var' - var| <= dv, the sum of
//     gamma_(n+4) var, 2 dm mean|d| and dm^2 (1 + 2u);
//   - rstd: relative dv/(2(var+eps)) + 3u (first order, doubled for the
//     second) from the variance, the add and f32oorx;
//   - z = d rstd: |z' - z| <= ez = |d| er + rstd (dm + u|d|) + u|z|;
//   - then three f16 roundings, each at most half an f16 step at the
//     largest magnitude the value can have: z16, z16*scale, + bias.
//
// Stats bounds (dm, dv) are returned for the mean and variance checks.
func layerNormBounds(s []float64, scale, bias []float16.Float16, ref []float64, mean, variance float64) (out []float64, dm, dv float64) {
	n := float64(len(s))
	const u = 1.0 / (1 << 24)
	gamma := func(k float64) float64 { return k * u / (1 - k*u) }
	absS, absD := 0.0, 0.0
	for _, v := range s {
		absS += math.Abs(v)
		absD += math.Abs(v - mean)
	}
	absS /= n
	absD /= n
	dm = gamma(n+1) * absS
	dv = gamma(n+4)*variance + 2*dm*absD + dm*dm*(1+2*u)
	eps := float64(kernels.LayerNormEps)
	rstd := 1 / math.Sqrt(variance+eps)
	er := rstd * (dv/(variance+eps) + 6*u)
	out = make([]float64, len(s))
	for i, v := range s {
		d := math.Abs(v - mean)
		z := d * rstd
		ez := d*er + rstd*(dm+u*d) + u*z
		g := math.Abs(ewH2F(scale[i]))
		zm := z + ez
		e1 := ewHalfStep(zm)
		pm := (zm + e1) * g
		e2 := g*(ez+e1) + ewHalfStep(pm)
		ym := math.Abs(ref[i]) + e2
		out[i] = e2 + ewHalfStep(ym)
	}
	return out, dm, dv
}

func init() {
	register("layer_norm_f16", func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		rows, width, res := p["rows"], p["width"], p["residual"]
		n := rows * width
		var ar layArena
		rx, rout, rsc, rbi, rst := ar.alloc(2*n), ar.alloc(2*n), ar.alloc(2*width), ar.alloc(2*width), ar.alloc(8*rows)
		x := encNormal(rng, n, 0.3, 1.5)
		scale, bias := encNormal(rng, width, 1, 0.2), encNormal(rng, width, 0, 0.5)
		for _, w := range []struct {
			r layRegion
			v []float16.Float16
		}{{rx, encLayout(p, x, rows, width)}, {rsc, scale}, {rbi, bias}} {
			if _, err := layWriteGuarded(t, rng, w.r, ewF16Bytes(w.v)); err != nil {
				return nil, err
			}
		}
		beforeOut, err := layWriteGuarded(t, rng, rout, layRandomBytes(rng, 2*n))
		if err != nil {
			return nil, err
		}
		beforeSt, err := layWriteGuarded(t, rng, rst, layRandomBytes(rng, 8*rows))
		if err != nil {
			return nil, err
		}
		args := map[int]uint32{2: rout.addr, 3: rx.addr, 4: rsc.addr, 5: rbi.addr, 6: rst.addr}
		s := x
		var rsum layRegion
		var beforeSum []byte
		if res == 1 {
			rr := ar.alloc(2 * n)
			rsum = ar.alloc(2 * n)
			r := encNormal(rng, n, 0, 1)
			if _, err := layWriteGuarded(t, rng, rr, ewF16Bytes(encLayout(p, r, rows, width))); err != nil {
				return nil, err
			}
			if beforeSum, err = layWriteGuarded(t, rng, rsum, layRandomBytes(rng, 2*n)); err != nil {
				return nil, err
			}
			s = make([]float16.Float16, n)
			for i := range s {
				s[i] = AddF16Model(x[i], r[i])
			}
			args[7], args[8] = rr.addr, rsum.addr
		}
		want := make([]float16.Float16, 0, n)
		stats := make([]float32, 0, 2*rows)
		s64 := make([]float64, n)
		sc64, bi64 := make([]float64, width), make([]float64, width)
		for i, v := range s {
			s64[i] = ewH2F(v)
		}
		for i := range sc64 {
			sc64[i], bi64[i] = ewH2F(scale[i]), ewH2F(bias[i])
		}
		ref, mean, variance := reference.LayerNorm64(s64, sc64, bi64, rows, width, float64(kernels.LayerNormEps))
		var bound []float64
		var dms, dvs []float64
		tol := 0.0
		for r := 0; r < rows; r++ {
			o, m, v := LayerNormF16Model(s[r*width:(r+1)*width], scale, bias)
			want = append(want, o...)
			stats = append(stats, m, v)
			b, dm, dv := layerNormBounds(s64[r*width:(r+1)*width], scale, bias, ref[r*width:(r+1)*width], mean[r], variance[r])
			bound = append(bound, b...)
			dms, dvs = append(dms, dm), append(dvs, dv)
			for _, e := range b {
				tol = math.Max(tol, e)
			}
		}
		return &Case{
			Args: args,
			// Bit-exact against LayerNormF16Model (out, stats and, fused,
			// sum; with panels=1 in panel order); out within the derived bound of layerNormBounds of the
			// float64 layer norm of the same s (the reported tolerance is
			// the largest bound), the statistics within dm and dv.
			Tolerance: tol,
			Check: func(t *emu.Tile) (float64, error) {
				if _, err := ewCheckF16(t, rout, beforeOut, encLayout(p, want, rows, width), 0); err != nil {
					return 0, fmt.Errorf("out: %w", err)
				}
				if _, err := layCheckExact(t, rst, beforeSt, encF32Bytes(stats), nil); err != nil {
					return 0, fmt.Errorf("stats: %w", err)
				}
				if res == 1 {
					if _, err := ewCheckF16(t, rsum, beforeSum, encLayout(p, s, rows, width), 0); err != nil {
						return 0, fmt.Errorf("sum: %w", err)
					}
				}
				for r := 0; r < rows; r++ {
					if d := math.Abs(float64(stats[2*r]) - mean[r]); !(d <= dms[r]) {
						return 0, fmt.Errorf("row %d: mean %v, float64 %v: error %g exceeds %g", r, stats[2*r], mean[r], d, dms[r])
					}
					if d := math.Abs(float64(stats[2*r+1]) - variance[r]); !(d <= dvs[r]) {
						return 0, fmt.Errorf("row %d: variance %v, float64 %v: error %g exceeds %g", r, stats[2*r+1], variance[r], d, dvs[r])
					}
				}
				return encCheckAgainst(want, ref, func(i int) float64 { return bound[i] })
			},
		}, nil
	})
}

// encMax is f32max on the device: the other operand for a NaN, +0 for
// equal zeros.
func encMax(a, b float32) float32 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && a == 0:
		if math.Signbit(float64(a)) {
			return b
		}
		return a
	case a > b:
		return a
	}
	return b
}

// SoftmaxF16Stats is softmax_f16 stats=1 on one row of keys scores of
// which the first valid count, with scale f32oorx(dk), exactly as the
// device computes it (src/softmax.S): the unnormalised e16 (+0 beyond
// valid), the scaled maximum mf and the f32 sum of the e.
func SoftmaxF16Stats(x []float16.Float16, valid, dk int) (e16 []float16.Float16, mf, sum float32) {
	keys := len(x)
	s := float32(1 / math.Sqrt(float64(dk)))
	m := float32(math.Inf(-1))
	for _, v := range x[:valid] {
		m = encMax(m, v.Float32())
	}
	mf = float32(m * s)
	neg := float32(0) - mf
	nw := (valid + 3) / 4
	e := make([]float32, 4*nw)
	for i := range x[:valid] {
		p := float32(x[i].Float32() * s)
		e[i] = float32(math.Exp(float64(p + neg)))
	}
	first, count := encSlices(nw)
	for w := 0; w < 6; w++ {
		part := encLaneSum(e[4*first[w] : 4*(first[w]+count[w])])
		if w == 0 {
			sum = part
		} else {
			sum += part
		}
	}
	e16 = make([]float16.Float16, keys)
	for i := range x[:valid] {
		e16[i] = float16.Fromfloat32(e[i])
	}
	return e16, mf, sum
}

// SoftmaxF16Model is softmax_f16 (stats=0) on one row: the probabilities
// f16(f32(e16) * f32(1/sum)), +0 beyond valid.
func SoftmaxF16Model(x []float16.Float16, valid, dk int) []float16.Float16 {
	e16, _, sum := SoftmaxF16Stats(x, valid, dk)
	inv := float32(1 / float64(sum))
	out := make([]float16.Float16, len(x))
	for i := range x[:valid] {
		out[i] = float16.Fromfloat32(float32(e16[i].Float32() * inv))
	}
	return out
}

// softmaxBounds derives the absolute error bound of softmax_f16 on each
// element of a row against the float64 softmax (reference.Softmax64 with
// the exact scale s = 1/sqrt(dk)), from the kernel's roundings (u = 2^-24):
//   - the exponent s x - s m: the scale (f32oorx), both products and the
//     sum each round once, so its error is at most 4u s (|x| + |m|);
//   - e = exp(...) rounds once more: relative error rho = (1+u) e^(that) - 1;
//   - the sum of positive terms: relative error (1 + max rho) times
//     (1 + gamma_(valid+8)), less 1 (at most valid + 8 additions on any
//     path), and its reciprocal
//     (f32oox) that over one minus it, plus u;
//   - e16 = f16(e): half an f16 step at e (1 + rho); the product rounds
//     (u), the final f16 half an f16 step at the largest magnitude p can
//     have.
func softmaxBounds(x []float64, ref []float64, valid int, s float64) []float64 {
	const u = 1.0 / (1 << 24)
	m := math.Inf(-1)
	for _, v := range x[:valid] {
		m = math.Max(m, v)
	}
	rho := make([]float64, valid)
	maxRho := 0.0
	sum := 0.0
	for i, v := range x[:valid] {
		rho[i] = (1+u)*math.Exp(4*u*s*(math.Abs(v)+math.Abs(m))) - 1
		maxRho = math.Max(maxRho, rho[i])
		sum += math.Exp(s*v - s*m)
	}
	k := float64(valid + 8)
	rhoS := (1+maxRho)*(1+k*u/(1-k*u)) - 1
	rhoInv := rhoS/(1-rhoS)*(1+u) + u
	out := make([]float64, len(x))
	for i := range x[:valid] {
		e := math.Exp(s*x[i] - s*m)
		p := ref[i]
		d := p*((1+rho[i])*(1+rhoInv)*(1+u)-1) + ewHalfStep(e*(1+rho[i]))/sum*(1+rhoInv)*(1+u)
		out[i] = d + ewHalfStep(p+d)
	}
	return out
}

// softmaxStatsBounds is the stats=1 part of softmaxBounds: the float64
// e = exp(s x - s m) of each valid score with its bound e rho + half an f16
// step at e (1 + rho), the float64 s m with its bound 3u s |m| (the
// rounded scale and the product), and the float64 sum of e with its bound
// rhoS sum.
func softmaxStatsBounds(x []float64, valid int, s float64) (e, eB []float64, mf, mfB, sum, sumB float64) {
	const u = 1.0 / (1 << 24)
	m := math.Inf(-1)
	for _, v := range x[:valid] {
		m = math.Max(m, v)
	}
	e, eB = make([]float64, len(x)), make([]float64, len(x))
	maxRho := 0.0
	for i, v := range x[:valid] {
		rho := (1+u)*math.Exp(4*u*s*(math.Abs(v)+math.Abs(m))) - 1
		maxRho = math.Max(maxRho, rho)
		e[i] = math.Exp(s*v - s*m)
		eB[i] = e[i]*rho + ewHalfStep(e[i]*(1+rho))
		sum += e[i]
	}
	k := float64(valid + 8)
	rhoS := (1+maxRho)*(1+k*u/(1-k*u)) - 1
	return e, eB, s * m, 3 * u * s * math.Abs(m), sum, rhoS * sum
}

func init() {
	register("softmax_f16", func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		rows, keys, valid, dk := p["rows"], p["keys"], p["valid"], p["dk"]
		if valid == 0 {
			valid = keys
		}
		n := rows * keys
		var ar layArena
		rin, rout := ar.alloc(2*n), ar.alloc(2*n)
		x := make([]float16.Float16, n)
		pad := ewBytesF16(layRandomBytes(rng, 2*n)) // any bits, NaN and inf included
		for r := 0; r < rows; r++ {
			for i := 0; i < keys; i++ {
				if i < valid {
					x[r*keys+i] = ewF64toH(8 * rng.NormFloat64())
				} else {
					x[r*keys+i] = pad[r*keys+i]
				}
			}
		}
		if _, err := layWriteGuarded(t, rng, rin, ewF16Bytes(encLayout(p, x, rows, keys))); err != nil {
			return nil, err
		}
		before, err := layWriteGuarded(t, rng, rout, layRandomBytes(rng, 2*n))
		if err != nil {
			return nil, err
		}
		x64 := make([]float64, n)
		for i, v := range x {
			x64[i] = ewH2F(v)
		}
		scale := 1 / math.Sqrt(float64(dk))
		if p["stats"] == 1 {
			return softmaxStatsCase(t, rng, &ar, rin, rout, before, x, x64, p, valid, scale)
		}
		ref := reference.Softmax64(x64, rows, keys, valid, scale)
		want := make([]float16.Float16, 0, n)
		bound := make([]float64, 0, n)
		tol := 0.0
		for r := 0; r < rows; r++ {
			want = append(want, SoftmaxF16Model(x[r*keys:(r+1)*keys], valid, dk)...)
			b := softmaxBounds(x64[r*keys:(r+1)*keys], ref[r*keys:(r+1)*keys], valid, scale)
			bound = append(bound, b...)
			for _, e := range b {
				tol = math.Max(tol, e)
			}
		}
		return &Case{
			Args: map[int]uint32{2: rout.addr, 3: rin.addr},
			// Bit-exact against SoftmaxF16Model (the padding +0; with
			// panels=1 in panel order); within softmaxBounds of the
			// float64 softmax (the reported tolerance is the largest
			// bound).
			Tolerance: tol,
			Check: func(t *emu.Tile) (float64, error) {
				if _, err := ewCheckF16(t, rout, before, encLayout(p, want, rows, keys), 0); err != nil {
					return 0, err
				}
				return encCheckAgainst(want, ref, func(i int) float64 { return bound[i] })
			},
		}, nil
	})
}

// MergeState is one row's online-softmax state or block: the maximum, the
// sum and the accumulator, as the device holds them (f32; a block's f16
// accumulator widened exactly).
type MergeState struct {
	M, L float32
	Acc  []float32
}

// AttentionMergeF16Model is attention_merge_f16 on one row (src/merge.S):
// mode 0 returns the block; modes 1 and 2 the update of st by blk. The
// final mode's f16 output is AttentionMergeF16Out of the result.
func AttentionMergeF16Model(st, blk MergeState, mode int) MergeState {
	if mode == 0 {
		return MergeState{M: blk.M, L: blk.L, Acc: append([]float32(nil), blk.Acc...)}
	}
	mp := encMax(st.M, blk.M)
	a := float32(math.Exp(float64(st.M - mp)))
	b := float32(math.Exp(float64(blk.M - mp)))
	acc := make([]float32, len(st.Acc))
	for i := range acc {
		acc[i] = float32(b*blk.Acc[i]) + float32(a*st.Acc[i])
	}
	return MergeState{M: mp, L: float32(a*st.L) + float32(b*blk.L), Acc: acc}
}

// AttentionMergeF16Out is the final mode's output: f16(acc * f32(1/l)).
func AttentionMergeF16Out(st MergeState) []float16.Float16 {
	inv := float32(1 / float64(st.L))
	out := make([]float16.Float16, len(st.Acc))
	for i, v := range st.Acc {
		out[i] = float16.Fromfloat32(float32(v * inv))
	}
	return out
}

// mergeBounds derives the absolute error bounds of one update against the
// float64 merge (reference.AttentionMerge64), u = 2^-24: m - m' and mb - m'
// round once (relative u of |m - mb|) and exp once more, so a and b carry
// relative rho = (1+u) e^(u |m - mb|) - 1; each of the two products and
// their sum rounds once: |acc' - acc| <= |b bacc| ((1+rho)(1+u)^2 - 1) +
// |a acc| (the same), and l' likewise. The final output: 1/l' carries
// rho_i = (el/l)/(1 - el/l) (1+u) + u, the product u, then half an f16
// step at the largest magnitude it can have.
func mergeBounds(m, l float64, acc []float64, mb, lb float64, bacc []float64) (eacc []float64, el float64, eout []float64) {
	const u = 1.0 / (1 << 24)
	mp := math.Max(m, mb)
	a, b := math.Exp(m-mp), math.Exp(mb-mp)
	rho := (1+u)*math.Exp(u*math.Abs(m-mb)) - 1
	k := (1+rho)*(1+u)*(1+u) - 1
	el = (math.Abs(a*l) + math.Abs(b*lb)) * k
	lp := a*l + b*lb
	rl := el / lp
	ri := rl/(1-rl)*(1+u) + u
	eacc, eout = make([]float64, len(acc)), make([]float64, len(acc))
	for i := range acc {
		eacc[i] = (math.Abs(b*bacc[i]) + math.Abs(a*acc[i])) * k
		o := (a*acc[i] + b*bacc[i]) / lp
		e := eacc[i]/lp*(1+ri) + math.Abs(o)*ri
		e += (math.Abs(o) + e) * u
		eout[i] = e + ewHalfStep(math.Abs(o)+e)
	}
	return eacc, el, eout
}

func init() {
	register("attention_merge_f16", func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		rows, values, mode, b32 := p["rows"], p["values"], p["mode"], p["bacc32"]
		n := rows * values
		var ar layArena
		racc, rst, rbacc, rbst := ar.alloc(4*n), ar.alloc(8*rows), ar.alloc((2+2*b32)*n), ar.alloc(8*rows)
		st, blk := make([]MergeState, rows), make([]MergeState, rows)
		var accF, statsF, bstatsF []float32
		var baccH []float16.Float16
		var baccF []float32
		for r := 0; r < rows; r++ {
			st[r] = MergeState{M: float32(2 * rng.NormFloat64()), L: float32(1 + 49*rng.Float64()), Acc: make([]float32, values)}
			blk[r] = MergeState{M: float32(2 * rng.NormFloat64()), L: float32(1 + 49*rng.Float64()), Acc: make([]float32, values)}
			if r%5 == 3 {
				blk[r].M = st[r].M // equal maxima: a = b = 1
			}
			for i := 0; i < values; i++ {
				st[r].Acc[i] = float32(5 * rng.NormFloat64())
				if b32 == 1 {
					blk[r].Acc[i] = float32(5 * rng.NormFloat64())
					baccF = append(baccF, blk[r].Acc[i])
				} else {
					h := ewF64toH(5 * rng.NormFloat64())
					blk[r].Acc[i] = h.Float32()
					baccH = append(baccH, h)
				}
			}
			accF = append(accF, st[r].Acc...)
			statsF = append(statsF, st[r].M, st[r].L)
			bstatsF = append(bstatsF, blk[r].M, blk[r].L)
		}
		baccBytes := ewF16Bytes(baccH)
		if b32 == 1 {
			baccBytes = encF32Bytes(baccF)
		}
		if mode == 0 {
			// acc and stats are written only: start them as garbage.
			accF, statsF = nil, nil
		}
		accBytes, stBytes := encF32Bytes(accF), encF32Bytes(statsF)
		if mode == 0 {
			accBytes, stBytes = layRandomBytes(rng, 4*n), layRandomBytes(rng, 8*rows)
		}
		beforeAcc, err := layWriteGuarded(t, rng, racc, accBytes)
		if err != nil {
			return nil, err
		}
		beforeSt, err := layWriteGuarded(t, rng, rst, stBytes)
		if err != nil {
			return nil, err
		}
		if _, err := layWriteGuarded(t, rng, rbacc, baccBytes); err != nil {
			return nil, err
		}
		if _, err := layWriteGuarded(t, rng, rbst, encF32Bytes(bstatsF)); err != nil {
			return nil, err
		}
		args := map[int]uint32{2: racc.addr, 3: rst.addr, 4: rbacc.addr, 5: rbst.addr}
		var rout layRegion
		var beforeOut []byte
		if mode == 2 {
			rout = ar.alloc(2 * n)
			if beforeOut, err = layWriteGuarded(t, rng, rout, layRandomBytes(rng, 2*n)); err != nil {
				return nil, err
			}
			args[6] = rout.addr
		}
		// The device's results and the float64 references with their bounds.
		var wantAcc, wantSt []float32
		var wantOut []float16.Float16
		var refAcc, refOut, bAcc, bOut []float64
		var refL, bL []float64
		tol := 0.0
		for r := 0; r < rows; r++ {
			res := AttentionMergeF16Model(st[r], blk[r], mode)
			wantAcc = append(wantAcc, res.Acc...)
			wantSt = append(wantSt, res.M, res.L)
			if mode == 0 {
				continue
			}
			m64, l64 := []float64{float64(st[r].M)}, []float64{float64(st[r].L)}
			acc64, bacc64 := make([]float64, values), make([]float64, values)
			for i := range acc64 {
				acc64[i], bacc64[i] = float64(st[r].Acc[i]), float64(blk[r].Acc[i])
			}
			ea, el, eo := mergeBounds(m64[0], l64[0], acc64, float64(blk[r].M), float64(blk[r].L), bacc64)
			reference.AttentionMerge64(m64, l64, acc64, []float64{float64(blk[r].M)}, []float64{float64(blk[r].L)}, bacc64, 1, values)
			refAcc, bAcc = append(refAcc, acc64...), append(bAcc, ea...)
			refL, bL = append(refL, l64[0]), append(bL, el)
			if mode == 2 {
				wantOut = append(wantOut, AttentionMergeF16Out(res)...)
				for i := range acc64 {
					refOut = append(refOut, acc64[i]/l64[0])
				}
				bOut = append(bOut, eo...)
				for _, e := range eo {
					tol = math.Max(tol, e)
				}
			} else {
				for _, e := range ea {
					tol = math.Max(tol, e)
				}
			}
		}
		return &Case{
			Args: args,
			// Bit-exact against AttentionMergeF16Model (acc, stats and, in
			// the final mode, out; the final mode leaves acc and stats as
			// they were); within mergeBounds of the float64 merge. The
			// reported tolerance is the largest bound on what the mode
			// produces (acc, or out in the final mode).
			Tolerance: tol,
			Check: func(t *emu.Tile) (float64, error) {
				if mode == 2 {
					if _, err := layCheckExact(t, racc, beforeAcc, beforeAcc[layGuard:layGuard+4*n], nil); err != nil {
						return 0, fmt.Errorf("acc (read only in the final mode): %w", err)
					}
					if _, err := layCheckExact(t, rst, beforeSt, beforeSt[layGuard:layGuard+8*rows], nil); err != nil {
						return 0, fmt.Errorf("stats (read only in the final mode): %w", err)
					}
					if _, err := ewCheckF16(t, rout, beforeOut, wantOut, 0); err != nil {
						return 0, fmt.Errorf("out: %w", err)
					}
					return encCheckAgainst(wantOut, refOut, func(i int) float64 { return bOut[i] })
				}
				if _, err := layCheckExact(t, racc, beforeAcc, encF32Bytes(wantAcc), nil); err != nil {
					return 0, fmt.Errorf("acc: %w", err)
				}
				if _, err := layCheckExact(t, rst, beforeSt, encF32Bytes(wantSt), nil); err != nil {
					return 0, fmt.Errorf("stats: %w", err)
				}
				if mode == 0 {
					return 0, nil
				}
				maxErr := 0.0
				for i, g := range wantAcc {
					d := math.Abs(float64(g) - refAcc[i])
					maxErr = math.Max(maxErr, d)
					if !(d <= bAcc[i]) {
						return maxErr, fmt.Errorf("acc element %d is %v, the float64 merge %v: error %g exceeds %g", i, g, refAcc[i], d, bAcc[i])
					}
				}
				for r := range refL {
					if d := math.Abs(float64(wantSt[2*r+1]) - refL[r]); !(d <= bL[r]) {
						return maxErr, fmt.Errorf("row %d: l is %v, the float64 merge %v: error %g exceeds %g", r, wantSt[2*r+1], refL[r], d, bL[r])
					}
				}
				return maxErr, nil
			},
		}, nil
	})
}

// softmaxStatsCase finishes the softmax_f16 stats=1 setup: the stats
// operand, and a check that is bit-exact against SoftmaxF16Stats (e16 in
// out, (mf, sum) in stats) and within softmaxStatsBounds of float64.
func softmaxStatsCase(t *emu.Tile, rng *rand.Rand, ar *layArena, rin, rout layRegion, before []byte, x []float16.Float16, x64 []float64,
	p kernels.Params, valid int, scale float64) (*Case, error) {
	rows, keys, dk := p["rows"], p["keys"], p["dk"]
	rst := ar.alloc(8 * rows)
	beforeSt, err := layWriteGuarded(t, rng, rst, layRandomBytes(rng, 8*rows))
	if err != nil {
		return nil, err
	}
	var want []float16.Float16
	var stats []float32
	var eRef, eB, mRef, mB, sRef, sB []float64
	tol := 0.0
	for r := 0; r < rows; r++ {
		e16, mf, sum := SoftmaxF16Stats(x[r*keys:(r+1)*keys], valid, dk)
		want = append(want, e16...)
		stats = append(stats, mf, sum)
		e, b, m, mb, su, sb := softmaxStatsBounds(x64[r*keys:(r+1)*keys], valid, scale)
		eRef, eB = append(eRef, e...), append(eB, b...)
		mRef, mB, sRef, sB = append(mRef, m), append(mB, mb), append(sRef, su), append(sB, sb)
		for _, v := range b {
			tol = math.Max(tol, v)
		}
	}
	return &Case{
		Args: map[int]uint32{2: rout.addr, 3: rin.addr, 4: rst.addr},
		// Bit-exact against SoftmaxF16Stats; e16, mf and sum within
		// softmaxStatsBounds of float64 (the reported tolerance is the
		// largest e16 bound).
		Tolerance: tol,
		Check: func(t *emu.Tile) (float64, error) {
			if _, err := ewCheckF16(t, rout, before, encLayout(p, want, rows, keys), 0); err != nil {
				return 0, fmt.Errorf("out (e16): %w", err)
			}
			if _, err := layCheckExact(t, rst, beforeSt, encF32Bytes(stats), nil); err != nil {
				return 0, fmt.Errorf("stats: %w", err)
			}
			for r := 0; r < rows; r++ {
				if d := math.Abs(float64(stats[2*r]) - mRef[r]); !(d <= mB[r]) {
					return 0, fmt.Errorf("row %d: mf %v, float64 %v: error %g exceeds %g", r, stats[2*r], mRef[r], d, mB[r])
				}
				if d := math.Abs(float64(stats[2*r+1]) - sRef[r]); !(d <= sB[r]) {
					return 0, fmt.Errorf("row %d: sum %v, float64 %v: error %g exceeds %g", r, stats[2*r+1], sRef[r], d, sB[r])
				}
			}
			return encCheckAgainst(want, eRef, func(i int) float64 { return eB[i] })
		},
	}, nil
}
