package reference

import (
	"fmt"
	"math"

	"github.com/ipustack/ipustack/graph"
)

// The tolerance model.
//
// An element passes when |got - want| <= Abs + Rel*|want|.
//
// Rel = 2^-10 (one f16 ulp relative, twice the unit roundoff u = 2^-11) covers the last rounding:
// device and reference round slightly different sums to f16 and may land on neighbouring values.
//
// Abs = Lambda * sigma + 2^-24, where sigma is an estimate of the RMS difference between the
// device's and the reference's value, propagated through the graph from these per-op terms
// (ms(X) is the mean square of the reference tensor X, u = 2^-11 the f16 unit roundoff):
//
//   - Gemm C = A B, inner depth K. The device's f16 AMP accumulates exact products in f32 within
//     a 16-deep group and rounds the running partial sum S_j to f16 after each of the
//     G = ceil(K/16) groups (docs/amp-and-pace.md); with f32 accumulation G = K and u = 2^-24
//     per addition. Each rounding error is uniform within ±u|S_j| (variance u^2 S_j^2 / 3) and
//     they are independent, so they add in quadrature; for the random-signed dot products of the
//     workload E[S_j^2] <= ms(C). Accumulation: G u^2 ms(C) / 3. The worst case, G u sum|a||b|
//     (0.13 sum|a||b| for K = 4304 in f16), would be far too loose to catch a wrong answer; the
//     statistical bound (Higham & Mary, "A new approach to probabilistic rounding error
//     analysis", 2019) grows like sqrt(G) instead, and Lambda sets its confidence.
//     Propagated operand error: K (eA^2 ms(B) + eB^2 ms(A)) (again random signs).
//     Output rounding, device and reference each: 2 u^2 ms(C) / 3.
//   - Gelu: the input error times the largest slope of GELU (1.13 for both forms), plus the
//     device's own evaluation error, assumed within an ulp of the output type (u^2 ms / 3; f16
//     for the device's f16 kernel, f32 for an f32 graph), plus output rounding: 3 u^2 ms / 3.
//   - Add: the operands' errors in quadrature plus output rounding. Cast: plus output rounding.
//   - Inputs and Parameters: 0 (host and device hold the same f16 bits).
//   - Reshape and Transpose: the input's error (pure data movement, exact on both sides).
//   - LayerNorm, modelled on the device kernel (kernels/assemble/src/layer_norm.S): z = (x - mean) * rstd
//     in f32 with two-pass f32 statistics, z16 = f16(z), y = f16(f16(z16 * scale) + bias). Per
//     element of row r, with s_r^2 = var_r + eps, zh = (x - mean_r)/s_r exact, gamma its column's
//     scale, uo^2/3 the unit rounding variance of the output type (f16; an f32 graph keeps f32):
//     propagated input error, the derivative of y in x_i being gamma (1 - 1/W - zh_i zh_j/W)/s_r,
//     at most gamma^2 eX^2 / s_r^2 (the subtracted mean and variance only remove error);
//     the f32 statistics, in zh units: the mean's W-term f32 sum rounds partial sums bounded by
//     sum|x| <= W rms_r(x), each rounding of variance u32^2 (W rms_r)^2/3, so var(mean) <=
//     W ms_r(x) u32^2/3 and zh moves by that over s_r; the variance's sum of W nonnegative terms
//     has partial sums bounded by the total, so its relative variance is <= W u32^2/3, halved in
//     rstd's relative error (variance /4); plus the +eps and 1/W roundings (relative, /4 each),
//     the rsqrt (within one f32 ulp: 4 u32^2/3) and z's subtraction and product (u32^2/3 each):
//     (u32^2/3) (W ms_r(x)/s_r^2 + zh^2 (W/4 + 7)) with the constants rounded up;
//     the two f16 roundings inside the kernel (z16 and the scale product): 2 (uo^2/3) (gamma zh)^2;
//     then the output rounding, device and reference each. Scale and bias errors, were they
//     computed values: eScale^2 ms(zh) + eBias^2.
//   - Softmax, modelled on kernels/assemble/src/softmax.S: m the row's maximum (exact), mf = f32(m) s,
//     a_i = s x_i - mf (product and sum rounded in f32), e_i = exp(a_i) in f32 (within one ulp),
//     sum of the e_i in f32, e16_i = f16(e_i), p_i = f16(e16_i * (1/sum)). Every error is relative
//     to p_i: the propagated input error s (dx_i - sum_j p_j dx_j), of variance <= 2 s^2 eX^2;
//     the argument's absolute rounding error (s x_i, a_i, mf, and s itself rounded to f32, which
//     moves a_i by u32 |a_i|): (u32^2/3)(s^2 x_i^2 + 2 a_i^2 + mf^2), relative in e_i; exp's ulp
//     (4 u32^2/3); the W-term sum of positive values (partial sums bounded by the total: W u32^2/3);
//     1/sum and the product (2 u32^2/3); e16's rounding (uo^2/3). Summed and weighted by p_i^2,
//     then the output rounding, device and reference each.
//
// The reference computes LayerNorm and Softmax in f64 and rounds once, at its output, so the
// terms inside the kernels are the device's alone. The f32 statistics' terms are 10^-5 of the
// f16 ones at the SigLIP width (W = 1152): what dominates is the f16 storage of z16, of the scale
// product and of the output, and, for the softmax, of e16 and p.
//
// The element-wise bound uses the RMS over the whole tensor; for a softmax read directly as an
// output the few large probabilities of a row carry most of the error, which Rel (one f16 ulp of
// the value) covers. Inside the encoder layer the probabilities are summed against v first.
//
// Lambda = 6: for a Gaussian sum of many independent rounding errors, the chance that one
// element exceeds 6 sigma is 2e-9, about 2e-3 for the 840 k outputs of the SigLIP MLP. For the
// default MLP (K = 1152 then 4304, f16 accumulation) sigma is about 8e-4 against an output RMS of
// about 0.13, so Abs is about 5e-3 (the reference system reported a maximum error of 0.000977 on
// hardware whose accumulation is more precise than this model allows for).
//
// The model assumes data like the workload's (independent, zero-mean, similar magnitudes across
// elements); it is not a worst-case bound for adversarial inputs.

// Lambda is the confidence multiple of the estimated RMS error.
const Lambda = 6

const (
	f16Unit     = 0x1p-11 // f16 unit roundoff
	f32Unit     = 0x1p-24
	geluSlope   = 1.13                  // max |GELU'(x)|, tanh and erf forms (1.1289 at x = 2.4)
	ampGroup    = 16                    // inner depth of one f16 AMP accumulation group
	toleranceRl = 2 * f16Unit           // Rel: one f16 ulp
	toleranceAb = 0x1p-24               // smallest f16 subnormal
	roundVar    = f16Unit * f16Unit / 3 // one f16 rounding, per unit mean square
	f32RoundVar = f32Unit * f32Unit / 3 // one f32 rounding
)

// Tolerance is the per-element bound |got - want| <= Abs + Rel*|want|.
type Tolerance struct {
	Abs, Rel float64
	// Sigma is the model's estimated RMS device-minus-reference difference (Abs = Lambda*Sigma
	// + 2^-24); informational.
	Sigma float64
}

// String formats the tolerance for logs.
func (t Tolerance) String() string {
	return fmt.Sprintf("abs=%.3g rel=%.3g sigma=%.3g", t.Abs, t.Rel, t.Sigma)
}

type errorModel struct {
	ms   []float64 // mean square of each node's reference value
	var2 []float64 // estimated variance of the device-minus-reference error
}

func newErrorModel(n int) *errorModel {
	return &errorModel{ms: make([]float64, n), var2: make([]float64, n)}
}

func meanSquare(v []float32) float64 {
	if len(v) == 0 {
		return 0
	}
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return s / float64(len(v))
}

func (e *errorModel) roundTerm(n *graph.Node, ms float64) float64 {
	if n.DType == graph.F16 {
		return 2 * roundVar * ms
	}
	return 2 * f32RoundVar * ms
}

// unitVar is the variance of one rounding to dt per unit mean square: u^2/3.
func unitVar(dt graph.DType) float64 {
	if dt == graph.F16 {
		return roundVar
	}
	return f32RoundVar
}

// node records the error estimate of n given its reference value v and its operands' values ins.
func (e *errorModel) node(n *graph.Node, v []float32, ins [][]float32) {
	ms := meanSquare(v)
	e.ms[n.ID] = ms
	var v2 float64
	switch n.Op {
	case graph.OpGemm:
		a, b := n.Inputs[0].ID, n.Inputs[1].ID
		_, _, k, _ := n.GemmDims()
		K := float64(k)
		v2 = K * (e.var2[a]*e.ms[b] + e.var2[b]*e.ms[a])
		if n.Acc == graph.F16 {
			groups := math.Ceil(K / ampGroup)
			v2 += groups * roundVar * ms
		} else {
			v2 += K * f32RoundVar * ms
		}
		v2 += e.roundTerm(n, ms)
	case graph.OpGelu:
		in := n.Inputs[0].ID
		v2 = geluSlope*geluSlope*e.var2[in] + unitVar(n.DType)*ms + e.roundTerm(n, ms)
	case graph.OpAdd:
		v2 = e.var2[n.Inputs[0].ID] + e.var2[n.Inputs[1].ID] + e.roundTerm(n, ms)
	case graph.OpCast:
		v2 = e.var2[n.Inputs[0].ID]
		if n.DType != n.Inputs[0].DType {
			v2 += e.roundTerm(n, ms)
		}
	case graph.OpReshape, graph.OpTranspose:
		v2 = e.var2[n.Inputs[0].ID]
	case graph.OpLayerNorm:
		v2 = e.layerNorm(n, ins[0], ins[1]) + e.roundTerm(n, ms)
	case graph.OpSoftmax:
		v2 = e.softmax(n, ins[0], v) + e.roundTerm(n, ms)
	}
	e.var2[n.ID] = v2
}

// layerNorm is the LayerNorm variance before the output rounding (see the model above).
func (e *errorModel) layerNorm(n *graph.Node, x, scale []float32) float64 {
	w := len(scale)
	rows := len(x) / w
	eX, eS, eB := e.var2[n.Inputs[0].ID], e.var2[n.Inputs[1].ID], e.var2[n.Inputs[2].ID]
	uo := unitVar(n.DType)
	W := float64(w)
	var total float64
	for r := 0; r < rows; r++ {
		row := x[r*w : (r+1)*w]
		var mean, msx float64
		for _, f := range row {
			mean += float64(f)
			msx += float64(f) * float64(f)
		}
		mean /= W
		msx /= W
		var q float64
		for _, f := range row {
			d := float64(f) - mean
			q += d * d
		}
		s2 := q/W + n.Eps
		var sum float64
		for i, f := range row {
			zh2 := (float64(f) - mean) * (float64(f) - mean) / s2
			g2 := float64(scale[i]) * float64(scale[i])
			stats := f32RoundVar * (W*msx/s2 + zh2*(W/4+7))
			sum += g2*(eX/s2+stats+2*uo*zh2) + eS*zh2
		}
		total += sum
	}
	return total/float64(len(x)) + eB
}

// softmax is the Softmax variance before the output rounding (see the model above); p is the
// reference output.
func (e *errorModel) softmax(n *graph.Node, x, p []float32) float64 {
	w := n.Shape[len(n.Shape)-1]
	rows := len(x) / w
	eX := e.var2[n.Inputs[0].ID]
	s := n.Scale
	W := float64(w)
	fixed := 2*s*s*eX + unitVar(n.DType) + f32RoundVar*(4+W+2)
	var total float64
	for r := 0; r < rows; r++ {
		row := x[r*w : (r+1)*w]
		m := math.Inf(-1)
		for _, f := range row {
			m = math.Max(m, float64(f))
		}
		mf := s * m
		for i, f := range row {
			a := s*float64(f) - mf
			rel := fixed + f32RoundVar*(s*s*float64(f)*float64(f)+2*a*a+mf*mf)
			pi := float64(p[r*w+i])
			total += pi * pi * rel
		}
	}
	return total / float64(len(x))
}

func (e *errorModel) tolerance(n *graph.Node) Tolerance {
	s := math.Sqrt(e.var2[n.ID])
	return Tolerance{Abs: Lambda*s + toleranceAb, Rel: toleranceRl, Sigma: s}
}

// Compare checks got against want element by element under tol. It returns the largest absolute
// error, the index of that element (-1 when the lengths differ or both are empty), and whether
// every element is within tolerance. A NaN or infinity in got where want is finite fails and
// counts as an infinite error.
func Compare(got, want []float32, tol Tolerance) (maxAbsErr float64, worst int, ok bool) {
	if len(got) != len(want) {
		return math.Inf(1), -1, false
	}
	worst, ok = -1, true
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		d := math.Abs(g - w)
		if g == w {
			d = 0 // also equal infinities
		} else if math.IsNaN(d) {
			if math.IsNaN(g) && math.IsNaN(w) {
				continue
			}
			d = math.Inf(1)
		}
		if d > tol.Abs+tol.Rel*math.Abs(w) {
			ok = false
		}
		if worst < 0 || d > maxAbsErr {
			maxAbsErr, worst = d, i
		}
	}
	return maxAbsErr, worst, ok
}
