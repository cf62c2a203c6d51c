package reference

import (
	"math"
	"testing"

	"github.com/ipustack/ipustack/graph"
	"github.com/x448/float16"
)

func f16(x float32) float32 { return float16.Fromfloat32(x).Float32() }

// naiveGemm is the triple loop with broadcast batch axes and transposes, accumulated in f64.
func naiveGemm(n *graph.Node, a, b []float32) []float32 {
	A, B := n.Inputs[0].Shape, n.Inputs[1].Shape
	batch, m, k, nn := n.GemmDims()
	out := make([]float32, n.Shape.Elements())
	bs := n.Shape[:len(n.Shape)-2]
	for bi := 0; bi < batch; bi++ {
		ao := broadcastIndex(bi, bs, A[:len(A)-2]) * m * k
		bo := broadcastIndex(bi, bs, B[:len(B)-2]) * k * nn
		for i := 0; i < m; i++ {
			for j := 0; j < nn; j++ {
				var s float64
				for p := 0; p < k; p++ {
					av := a[ao+i*k+p]
					if n.TransA {
						av = a[ao+p*m+i]
					}
					bv := b[bo+p*nn+j]
					if n.TransB {
						bv = b[bo+j*k+p]
					}
					s += float64(av) * float64(bv)
				}
				out[bi*m*nn+i*nn+j] = float32(s)
			}
		}
	}
	return out
}

func TestGemmVsNaive(t *testing.T) {
	tests := []struct {
		name   string
		a, b   []int
		ta, tb bool
	}{
		{"plain", []int{5, 7}, []int{7, 3}, false, false},
		{"transA", []int{7, 5}, []int{7, 3}, true, false},
		{"transB", []int{5, 7}, []int{3, 7}, false, true},
		{"both", []int{7, 5}, []int{3, 7}, true, true},
		{"rows over a block", []int{130, 33}, []int{33, 17}, false, false},
		{"rows over a block transA", []int{33, 130}, []int{33, 17}, true, false},
		{"batched broadcast", []int{2, 1, 4, 6}, []int{3, 6, 5}, false, false},
		{"batched B only", []int{4, 6}, []int{3, 6, 5}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.New()
			a := g.Input("a", graph.F32, tc.a...)
			b := g.Parameter("b", graph.F32, 3, tc.b...)
			c := g.Gemm("c", a, b, graph.GemmAttrs{TransA: tc.ta, TransB: tc.tb})
			g.Output("c", c)
			if err := g.Validate(); err != nil {
				t.Fatal(err)
			}
			res, err := EvaluateDetailed(g, nil, Options{GenerateMissing: true, KeepAll: true})
			if err != nil {
				t.Fatal(err)
			}
			want := naiveGemm(c, res.Values["a"], res.Values["b"])
			if maxErr, worst, ok := Compare(res.Outputs["c"], want, Tolerance{Abs: 1e-5, Rel: 1e-5}); !ok {
				t.Fatalf("max error %g at %d", maxErr, worst)
			}
		})
	}
}

func TestAddBroadcast(t *testing.T) {
	tests := []struct{ a, b []int }{
		{[]int{4, 6}, []int{6}},
		{[]int{6}, []int{4, 6}},
		{[]int{2, 3, 1}, []int{4}},
		{[]int{2, 1, 4}, []int{3, 1}},
		{[]int{1}, []int{3, 2}},
	}
	for _, tc := range tests {
		g := graph.New()
		a := g.Input("a", graph.F16, tc.a...)
		b := g.Parameter("b", graph.F16, 9, tc.b...)
		s := g.Add("s", a, b)
		g.Output("s", s)
		res, err := EvaluateDetailed(g, nil, Options{GenerateMissing: true, KeepAll: true})
		if err != nil {
			t.Fatal(err)
		}
		av, bv, got := res.Values["a"], res.Values["b"], res.Outputs["s"]
		// Naive: unravel each output index and clamp broadcast axes.
		out := s.Shape
		for i := range got {
			idx := make([]int, len(out))
			r := i
			for ax := len(out) - 1; ax >= 0; ax-- {
				idx[ax] = r % out[ax]
				r /= out[ax]
			}
			at := func(sh []int, v []float32) float32 {
				off := 0
				for ax := range sh {
					c := idx[len(out)-len(sh)+ax]
					if sh[ax] == 1 {
						c = 0
					}
					off = off*sh[ax] + c
				}
				return v[off]
			}
			if want := f16(at(tc.a, av) + at(tc.b, bv)); got[i] != want {
				t.Fatalf("%v + %v: element %d = %v, want %v", tc.a, tc.b, i, got[i], want)
			}
		}
	}
}

func TestDevicePrecisionRounds(t *testing.T) {
	g := graph.New()
	x := g.Input("x", graph.F16, 1, 2)
	g.Output("y", g.Cast("y", g.Cast("x32", x, graph.F32), graph.F16))
	in := map[string][]float32{"x": {1 + 0x1p-13, 3.14159}}
	out, err := Evaluate(g, in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if out["y"][0] != 1 || out["y"][1] != f16(3.14159) {
		t.Fatalf("device precision did not round: %v", out["y"])
	}
	out, err = Evaluate(g, in, Options{Precision: F32})
	if err != nil || out["y"][0] != 1+0x1p-13 {
		t.Fatalf("f32 precision rounded: %v %v", out["y"], err)
	}
	if _, err := Evaluate(g, map[string][]float32{"x": {1}}, Options{}); err == nil || err.Error() != `reference: input "x": got 1 values, shape [1 2] needs 2` {
		t.Fatalf("short input: %v", err)
	}
	if _, err := Evaluate(g, nil, Options{}); err == nil || err.Error() != `reference: input "x": no data given` {
		t.Fatalf("missing input: %v", err)
	}
}

func TestGeluForms(t *testing.T) {
	// The tanh form is within 5e-4 of the exact (erf) form everywhere; the largest difference,
	// about 4.7e-4, is near |x| = 2.
	var maxDiff float64
	for x := -8.0; x <= 8; x += 1.0 / 1024 {
		d := math.Abs(Gelu(x, graph.GeluTanh) - Gelu(x, graph.GeluErf))
		maxDiff = max(maxDiff, d)
	}
	if maxDiff > 5e-4 || maxDiff < 1e-4 {
		t.Fatalf("max |tanh - erf| = %g", maxDiff)
	}
	for _, c := range []struct{ x, want float64 }{{0, 0}, {1, 0.8413447460685429}, {-1, -0.15865525393145707}, {10, 10}} {
		if got := Gelu(c.x, graph.GeluErf); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("gelu_erf(%v) = %v, want %v", c.x, got, c.want)
		}
		if got := Gelu(c.x, graph.GeluTanh); math.Abs(got-c.want) > 5e-4 {
			t.Errorf("gelu_tanh(%v) = %v, want %v ± 5e-4", c.x, got, c.want)
		}
	}
}

func TestCompare(t *testing.T) {
	tol := Tolerance{Abs: 0.01, Rel: 0.1}
	if e, w, ok := Compare([]float32{1, 2.15, 3}, []float32{1, 2, 3}, tol); !ok || w != 1 || math.Abs(e-0.15) > 1e-6 {
		t.Errorf("within: %v %v %v", e, w, ok)
	}
	if _, w, ok := Compare([]float32{1, 2.25, 3}, []float32{1, 2, 3}, tol); ok || w != 1 {
		t.Errorf("outside: %v %v", w, ok)
	}
	if e, _, ok := Compare([]float32{float32(math.NaN())}, []float32{1}, tol); ok || !math.IsInf(e, 1) {
		t.Errorf("NaN accepted")
	}
	if _, w, ok := Compare([]float32{1}, []float32{1, 2}, tol); ok || w != -1 {
		t.Errorf("length mismatch accepted")
	}
}

// deviceMLP evaluates one block of the MLP (rows of x) as the device's f16 AMP does: exact
// products accumulated in f32 within 16-deep groups, the running partial rounded to f16 after
// every group, GELU rounded to f16.
func deviceMLP(x, w1, w2 []float32, rows, d, h int) []float32 {
	layer := func(a, b []float32, m, k, n int) []float32 {
		out := make([]float32, m*n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var partial float32
				for g := 0; g < k; g += 16 {
					s := partial
					for p := g; p < min(k, g+16); p++ {
						s += a[i*k+p] * b[p*n+j]
					}
					partial = f16(s)
				}
				out[i*n+j] = partial
			}
		}
		return out
	}
	hid := layer(x, w1, rows, d, h)
	for i, v := range hid {
		hid[i] = f16(float32(Gelu(float64(v), graph.GeluTanh)))
	}
	return layer(hid, w2, rows, h, d)
}

func TestToleranceCoversDeviceAccumulation(t *testing.T) {
	cfg := graph.DefaultMLP
	cfg.Tokens = 6 // the full inner depths (1152, 4304), few rows
	if testing.Short() {
		cfg.Tokens = 2
	}
	g, err := graph.MLPGraph(cfg, 7, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	res, err := EvaluateDetailed(g, nil, Options{GenerateMissing: true, KeepAll: true})
	if err != nil {
		t.Fatal(err)
	}
	dev := deviceMLP(res.Values["x"], res.Values["block0.fc1.weight"], res.Values["block0.fc2.weight"], cfg.Rows(), cfg.Dim, cfg.Hidden)
	tol := res.Tolerances["y"]
	maxErr, worst, ok := Compare(dev, res.Outputs["y"], tol)
	t.Logf("tolerance %v; device-style max error %.3g at %d", tol, maxErr, worst)
	if !ok {
		t.Fatalf("device-style accumulation exceeds the tolerance: %.3g > %v", maxErr, tol)
	}
	// The bound must still catch real mistakes: it is a few f16 ulps of the outputs, not more.
	if tol.Abs > 0.01 || maxErr < tol.Abs/20 {
		t.Fatalf("tolerance %v is out of proportion to the observed error %.3g", tol, maxErr)
	}
	// A wrong answer (say one inner group dropped) must fail.
	bad := append([]float32(nil), dev...)
	bad[3] += 0.05
	if _, _, ok := Compare(bad, res.Outputs["y"], tol); ok {
		t.Fatal("a 0.05 error passed")
	}
}

func BenchmarkSigLIPMLP(b *testing.B) {
	g, err := graph.Preset("mlp", graph.DefaultFlags())
	if err != nil {
		b.Fatal(err)
	}
	in := map[string][]float32{"x": g.Node("x").Data()}
	for b.Loop() {
		if _, err := Evaluate(g, in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
}
