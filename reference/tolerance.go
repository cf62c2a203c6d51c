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
//     device's own evaluation error, assumed within an f16 ulp, plus output rounding: 3 u^2 ms / 3.
//   - Add: the operands' errors in quadrature plus output rounding. Cast: plus output rounding.
//   - Inputs and Parameters: 0 (host and device hold the same f16 bits).
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
	geluDevErr  = f16Unit * f16Unit / 3 // device GELU, per unit mean square
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

// node records the error estimate of n given its reference value v.
func (e *errorModel) node(n *graph.Node, v []float32) {
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
		v2 = geluSlope*geluSlope*e.var2[in] + geluDevErr*ms + e.roundTerm(n, ms)
	case graph.OpAdd:
		v2 = e.var2[n.Inputs[0].ID] + e.var2[n.Inputs[1].ID] + e.roundTerm(n, ms)
	case graph.OpCast:
		v2 = e.var2[n.Inputs[0].ID]
		if n.DType != n.Inputs[0].DType {
			v2 += e.roundTerm(n, ms)
		}
	}
	e.var2[n.ID] = v2
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
