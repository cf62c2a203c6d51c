package reference

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/ipustack/ipustack/graph"
)

func TestTransposeVsNaive(t *testing.T) {
	tests := []struct {
		shape []int
		perm  []int
	}{
		{[]int{2, 3, 4}, []int{0, 1, 2}},
		{[]int{2, 3, 4}, []int{0, 2, 1}},
		{[]int{2, 3, 4}, []int{1, 0, 2}},
		{[]int{2, 3, 4}, []int{1, 2, 0}},
		{[]int{2, 3, 4}, []int{2, 0, 1}},
		{[]int{2, 3, 4}, []int{2, 1, 0}},
		{[]int{2, 7, 3, 4}, []int{0, 2, 1, 3}},
		{[]int{3, 1, 2, 5}, []int{3, 1, 0, 2}},
		{[]int{5}, []int{0}},
		{[]int{1, 1}, []int{1, 0}},
		{[]int{65, 70}, []int{1, 0}}, // more rows than one parallel chunk
	}
	for _, tc := range tests {
		g := graph.New()
		x := g.Input("x", graph.F32, tc.shape...)
		y := g.Transpose("t", x, tc.perm...)
		g.Output("y", y)
		res, err := EvaluateDetailed(g, nil, Options{GenerateMissing: true, KeepAll: true})
		if err != nil {
			t.Fatal(err)
		}
		in, got := res.Values["x"], res.Outputs["y"]
		// Naive: unravel every output index, permute it, ravel in the input.
		for o := range got {
			idx := make([]int, len(tc.shape))
			r := o
			for ax := len(idx) - 1; ax >= 0; ax-- {
				idx[ax] = r % y.Shape[ax]
				r /= y.Shape[ax]
			}
			src := make([]int, len(idx))
			for i, p := range tc.perm {
				src[p] = idx[i]
			}
			off := 0
			for ax, d := range tc.shape {
				off = off*d + src[ax]
			}
			if got[o] != in[off] {
				t.Fatalf("%v perm %v: element %d = %v, want %v", tc.shape, tc.perm, o, got[o], in[off])
			}
		}
		if res.Tolerances["y"].Sigma != 0 {
			t.Errorf("transpose of an input has an error estimate %v", res.Tolerances["y"])
		}
	}
}

func TestSplitMergeRoundTrip(t *testing.T) {
	g := graph.New()
	x := g.Input("x", graph.F16, 2, 5, 12)
	m := g.MergeHeads("m", g.SplitHeads("s", x, 4))
	g.Output("y", m)
	res, err := EvaluateDetailed(g, nil, Options{GenerateMissing: true, KeepAll: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Outputs["y"], res.Values["x"]) {
		t.Fatal("merge(split(x)) != x")
	}
	// Head h of token t is columns h*3..h*3+2 of x's row t.
	s := res.Values["s"] // [2 4 5 3]
	xv := res.Values["x"]
	for b := 0; b < 2; b++ {
		for h := 0; h < 4; h++ {
			for tk := 0; tk < 5; tk++ {
				for j := 0; j < 3; j++ {
					if s[((b*4+h)*5+tk)*3+j] != xv[(b*5+tk)*12+h*3+j] {
						t.Fatalf("split head %d token %d", h, tk)
					}
				}
			}
		}
	}
	if res.Tolerances["y"].Sigma != 0 {
		t.Errorf("data movement has an error estimate %v", res.Tolerances["y"])
	}
}

// deviceLayerNorm follows kernels/assemble/src/layer_norm.S's arithmetic on f16 data: two-pass f32
// statistics (sums in order), rstd = 1/sqrt(var + eps) in f32, z = (x - mean) * rstd in f32,
// z16 = f16(z), y = f16(f16(z16 * scale) + bias).
func deviceLayerNorm(x, scale, bias []float32, w int) []float32 {
	out := make([]float32, len(x))
	invW := float32(1) / float32(w)
	for r := 0; r < len(x)/w; r++ {
		row := x[r*w : (r+1)*w]
		var s float32
		for _, v := range row {
			s += v
		}
		mean := s * invW
		var q float32
		for _, v := range row {
			d := v - mean
			q += d * d
		}
		rstd := float32(1 / math.Sqrt(float64(q*invW+float32(1e-6))))
		for i, v := range row {
			z16 := f16((v - mean) * rstd)
			out[r*w+i] = f16(f16(z16*scale[i]) + bias[i])
		}
	}
	return out
}

// deviceSoftmax follows kernels/assemble/src/softmax.S: m the f16 maximum, mf = m*s in f32 with s the f32
// 1/sqrt(dk), e = exp(s*x - mf) in f32, the f32 sum, e16 = f16(e), p = f16(e16 * (1/sum)).
func deviceSoftmax(x []float32, w int, scale float64) []float32 {
	out := make([]float32, len(x))
	s := float32(scale)
	for r := 0; r < len(x)/w; r++ {
		row := x[r*w : (r+1)*w]
		m := row[0]
		for _, v := range row {
			m = max(m, v)
		}
		mf := m * s
		var sum float32
		e16 := make([]float32, w)
		for i, v := range row {
			e := float32(math.Exp(float64(s*v - mf)))
			sum += e
			e16[i] = f16(e)
		}
		inv := 1 / sum
		for i := range row {
			out[r*w+i] = f16(e16[i] * inv)
		}
	}
	return out
}

// TestLayerNormSoftmaxDeviceStyle checks the LayerNorm and Softmax tolerance terms against
// emulations of the device kernels' arithmetic, and the reference against a naive float64
// formula. The tolerance must cover the kernel and stay within a few f16 ulps.
func TestLayerNormSoftmaxDeviceStyle(t *testing.T) {
	type data func(i int) float64
	tests := []struct {
		name    string
		op      string
		rows, w int
		x       data
		scale   float64 // softmax
	}{
		{"ln so400m width", "ln", 6, 1152, func(i int) float64 { return 0.3 + 1.5*math.Sin(float64(i)*0.37) }, 0},
		{"ln residual-sized", "ln", 4, 1152, func(i int) float64 { return 6 * math.Sin(float64(i)*1.3) * math.Cos(float64(i)*0.011) }, 0},
		{"ln narrow offset", "ln", 9, 16, func(i int) float64 { return 40 + math.Sin(float64(i)) }, 0},
		{"ln 144", "ln", 3, 144, func(i int) float64 { return math.Sin(float64(i) * 0.7) }, 0},
		{"softmax 729 keys", "softmax", 8, 729, func(i int) float64 { return 6 * math.Sin(float64(i)*0.91) }, 1 / math.Sqrt(72)},
		{"softmax peaked", "softmax", 7, 64, func(i int) float64 { return 30 * math.Sin(float64(i)*2.1) }, 1 / math.Sqrt(64)},
		{"softmax flat", "softmax", 5, 50, func(i int) float64 { return 0.01 * math.Sin(float64(i)) }, 0.125},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New()
			x := g.Input("x", graph.F16, tc.rows, tc.w)
			xv := make([]float32, tc.rows*tc.w)
			for i := range xv {
				xv[i] = f16(float32(tc.x(i)))
			}
			var y *graph.Node
			if tc.op == "ln" {
				s := g.ParameterInit("s", graph.F16, 3, graph.InitAroundOne, tc.w, tc.w)
				b := g.ParameterInit("b", graph.F16, 3, graph.InitUniformFanIn, tc.w, tc.w)
				y = g.LayerNorm("ln", x, s, b, 1e-6)
			} else {
				y = g.Softmax("sm", x, tc.scale)
			}
			g.Output("y", y)
			res, err := EvaluateDetailed(g, map[string][]float32{"x": xv}, Options{KeepAll: true})
			if err != nil {
				t.Fatal(err)
			}
			ref, tol := res.Outputs["y"], res.Tolerances["y"]
			var dev []float32
			naive := make([]float32, len(xv))
			if tc.op == "ln" {
				sv, bv := res.Values["s"], res.Values["b"]
				dev = deviceLayerNorm(xv, sv, bv, tc.w)
				for r := 0; r < tc.rows; r++ {
					var m, q float64
					for i := 0; i < tc.w; i++ {
						m += float64(xv[r*tc.w+i])
					}
					m /= float64(tc.w)
					for i := 0; i < tc.w; i++ {
						d := float64(xv[r*tc.w+i]) - m
						q += d * d
					}
					q /= float64(tc.w)
					for i := 0; i < tc.w; i++ {
						naive[r*tc.w+i] = f16(float32((float64(xv[r*tc.w+i])-m)/math.Sqrt(q+1e-6)*float64(sv[i]) + float64(bv[i])))
					}
				}
			} else {
				dev = deviceSoftmax(xv, tc.w, tc.scale)
				for r := 0; r < tc.rows; r++ {
					var sum float64
					e := make([]float64, tc.w)
					for i := range e {
						e[i] = math.Exp(tc.scale * float64(xv[r*tc.w+i])) // small inputs: no max needed
						sum += e[i]
					}
					for i := range e {
						naive[r*tc.w+i] = f16(float32(e[i] / sum))
					}
				}
			}
			if maxErr, worst, ok := Compare(ref, naive, Tolerance{Abs: 0x1p-24, Rel: 0x1p-10}); !ok {
				t.Fatalf("reference vs naive float64: %.3g at %d", maxErr, worst)
			}
			maxErr, worst, ok := Compare(dev, ref, tol)
			t.Logf("tolerance %v; device-style max error %.3g at %d (value %v); output rms %.3g", tol, maxErr, worst, ref[worst], rms(ref))
			if !ok {
				t.Fatalf("device-style %s exceeds the tolerance: %.3g at %d > %v", tc.op, maxErr, worst, tol)
			}
			if tol.Abs > 16*0x1p-11*rms(ref) {
				t.Fatalf("tolerance %v is loose against the output rms %.3g", tol, rms(ref))
			}
		})
	}
}

func TestNewOpsRejectBadInputs(t *testing.T) {
	g := graph.New()
	x := g.Input("x", graph.F16, 2, 4)
	g.Output("y", g.Softmax("sm", x, 1))
	if _, err := Evaluate(g, map[string][]float32{"x": {1, 2, 3}}, Options{}); err == nil || err.Error() != `reference: input "x": got 3 values, shape [2 4] needs 8` {
		t.Fatalf("short input: %v", err)
	}
	bad := graph.New()
	bad.Output("y", bad.Softmax("sm", bad.Input("x", graph.F16, 2, 4), 0))
	if _, err := Evaluate(bad, nil, Options{GenerateMissing: true}); err == nil {
		t.Fatal("evaluated an invalid graph")
	} else if want := fmt.Sprintf("reference: invalid graph: %s", `softmax "sm": scale must be positive and finite, got 0`); err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
}
