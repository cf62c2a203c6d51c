package reference

import (
	"fmt"
	"math"
	"testing"

	"github.com/ipustack/ipustack/graph"
)

// hfLayer is an independent float64 implementation of one Hugging Face SiglipEncoderLayer on
// x [batch][tokens][dim], written as plain loops from the PyTorch module (not with this
// package's helpers). w holds the parameters by their HF names (without the layer prefix).
func hfLayer(x []float64, w map[string][]float64, batch, tokens, dim, heads, hidden int) []float64 {
	hd := dim / heads
	layerNorm := func(in []float64, wt, b []float64) []float64 {
		out := make([]float64, len(in))
		for r := 0; r < len(in)/dim; r++ {
			row := in[r*dim : (r+1)*dim]
			var mean, vr float64
			for _, v := range row {
				mean += v
			}
			mean /= float64(dim)
			for _, v := range row {
				vr += (v - mean) * (v - mean)
			}
			vr /= float64(dim)
			for i, v := range row {
				out[r*dim+i] = (v-mean)/math.Sqrt(vr+1e-6)*wt[i] + b[i]
			}
		}
		return out
	}
	// linear is nn.Linear: in [rows][nin] times weight [nout][nin] transposed, plus bias.
	linear := func(in []float64, name string, nin, nout int) []float64 {
		wt, b := w[name+".weight"], w[name+".bias"]
		rows := len(in) / nin
		out := make([]float64, rows*nout)
		for r := 0; r < rows; r++ {
			for o := 0; o < nout; o++ {
				s := b[o]
				for i := 0; i < nin; i++ {
					s += in[r*nin+i] * wt[o*nin+i]
				}
				out[r*nout+o] = s
			}
		}
		return out
	}
	h := layerNorm(x, w["layer_norm1.weight"], w["layer_norm1.bias"])
	q := linear(h, "self_attn.q_proj", dim, dim)
	k := linear(h, "self_attn.k_proj", dim, dim)
	v := linear(h, "self_attn.v_proj", dim, dim)
	attn := make([]float64, len(x))
	scale := 1 / math.Sqrt(float64(hd))
	scores := make([]float64, tokens)
	for b := 0; b < batch; b++ {
		base := b * tokens * dim
		for hh := 0; hh < heads; hh++ {
			for t := 0; t < tokens; t++ {
				mx := math.Inf(-1)
				for s := 0; s < tokens; s++ {
					var dot float64
					for j := 0; j < hd; j++ {
						dot += q[base+t*dim+hh*hd+j] * k[base+s*dim+hh*hd+j]
					}
					scores[s] = dot * scale
					mx = math.Max(mx, scores[s])
				}
				var sum float64
				for s := range scores {
					scores[s] = math.Exp(scores[s] - mx)
					sum += scores[s]
				}
				for j := 0; j < hd; j++ {
					var acc float64
					for s := 0; s < tokens; s++ {
						acc += scores[s] / sum * v[base+s*dim+hh*hd+j]
					}
					attn[base+t*dim+hh*hd+j] = acc
				}
			}
		}
	}
	o := linear(attn, "self_attn.out_proj", dim, dim)
	y := make([]float64, len(x))
	for i := range y {
		y[i] = x[i] + o[i]
	}
	m := linear(layerNorm(y, w["layer_norm2.weight"], w["layer_norm2.bias"]), "mlp.fc1", dim, hidden)
	for i, z := range m { // gelu_pytorch_tanh
		m[i] = 0.5 * z * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(z+0.044715*z*z*z)))
	}
	m = linear(m, "mlp.fc2", hidden, dim)
	for i := range y {
		y[i] += m[i]
	}
	return y
}

// hfStack runs hfLayer for every layer of g, reading the generated data of the graph's input and
// parameters (graph.Node.Data, not the reference's values).
func hfStack(g *graph.Graph, c graph.EncoderConfig) []float32 {
	x := f64(g.Node("x").Data())
	for l := 0; l < c.Layers; l++ {
		w := map[string][]float64{}
		for _, p := range g.Parameters() {
			if pre := fmt.Sprintf("%d.", l); len(p.Name) > len(pre) && p.Name[:len(pre)] == pre {
				w[p.Name[len(pre):]] = f64(p.Data())
			}
		}
		x = hfLayer(x, w, c.Batch, c.Tokens, c.Dim, c.Heads, c.Hidden)
	}
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func f64(v []float32) []float64 {
	r := make([]float64, len(v))
	for i, f := range v {
		r[i] = float64(f)
	}
	return r
}

func rms(v []float32) float64 { return math.Sqrt(meanSquare(v)) }

// TestEncoderLayerVsHF compares the reference evaluation of EncoderLayerGraph with the
// independent float64 Hugging Face layer, within the derived tolerance. With f32 values the
// model's Abs is checked with one f32 ulp relative instead of Rel's f16 ulp, which would hide an
// f32-level mistake; with f16 values at device precision the tolerance is the one a device run
// is judged by. Either way a structural mistake (a head mixed up, a transposed weight, a missing
// bias) is an O(1) error.
func TestEncoderLayerVsHF(t *testing.T) {
	tests := []struct {
		c      graph.EncoderConfig
		f32Rel bool
	}{
		{graph.EncoderConfig{Batch: 1, Tokens: 7, Dim: 16, Heads: 2, Hidden: 24, Layers: 1, DType: graph.F32, Acc: graph.F32}, true},
		{graph.EncoderConfig{Batch: 2, Tokens: 7, Dim: 16, Heads: 2, Hidden: 24, Layers: 2, DType: graph.F32, Acc: graph.F32}, true},
		{graph.EncoderConfig{Batch: 1, Tokens: 50, Dim: 24, Heads: 3, Hidden: 40, Layers: 1, DType: graph.F32, Acc: graph.F32}, true},
		{graph.EncoderConfig{Batch: 1, Tokens: 50, Dim: 48, Heads: 12, Hidden: 64, Layers: 1, DType: graph.F32, Acc: graph.F32}, true},
		{graph.EncoderConfig{Batch: 1, Tokens: 7, Dim: 16, Heads: 2, Hidden: 24, Layers: 1, DType: graph.F16, Acc: graph.F16}, false},
		{graph.EncoderConfig{Batch: 2, Tokens: 50, Dim: 24, Heads: 3, Hidden: 40, Layers: 2, DType: graph.F16, Acc: graph.F16}, false},
		{graph.EncoderConfig{Batch: 1, Tokens: 50, Dim: 48, Heads: 12, Hidden: 64, Layers: 1, DType: graph.F16, Acc: graph.F32}, false},
		{graph.EncoderConfig{Batch: 1, Tokens: 197, Dim: 72, Heads: 1, Hidden: 96, Layers: 1, DType: graph.F16, Acc: graph.F16}, false},
		// The so400m widths (16 heads of 72, hidden 4304) with few tokens.
		{graph.EncoderConfig{Batch: 1, Tokens: 9, Dim: 1152, Heads: 16, Hidden: 4304, Layers: 1, DType: graph.F16, Acc: graph.F16}, false},
		{graph.EncoderConfig{Batch: 1, Tokens: 9, Dim: 1152, Heads: 16, Hidden: 4304, Layers: 1, DType: graph.F32, Acc: graph.F32}, true},
	}
	for _, tc := range tests {
		c := tc.c
		t.Run(fmt.Sprintf("%v-acc%v-b%d-t%d-d%d-heads%d-h%d-n%d", c.DType, c.Acc, c.Batch, c.Tokens, c.Dim, c.Heads, c.Hidden, c.Layers), func(t *testing.T) {
			if testing.Short() && c.Dim > 100 {
				t.Skip("full width: -short")
			}
			g, err := graph.EncoderLayerGraph(c, 11)
			if err != nil {
				t.Fatal(err)
			}
			res, err := EvaluateDetailed(g, nil, Options{GenerateMissing: true})
			if err != nil {
				t.Fatal(err)
			}
			got, tol := res.Outputs["y"], res.Tolerances["y"]
			want := hfStack(g, c)
			if tc.f32Rel {
				tol.Rel = 2 * f32Unit
			}
			maxErr, worst, ok := Compare(got, want, tol)
			t.Logf("tolerance %v; max error %.3g at %d; output rms %.3g", tol, maxErr, worst, rms(want))
			if !ok {
				t.Fatalf("reference and HF layer differ by %.3g at %d (reference %v, HF %v), over %v", maxErr, worst, got[worst], want[worst], tol)
			}
			// The bound must stay tight enough to catch a wrong answer: an error of 2 % of the
			// output rms (f16; 2e-5 with f32 values) must fail.
			catch := 0.02
			if c.DType == graph.F32 {
				catch = 2e-5
			}
			if tol.Abs >= catch*rms(want) {
				t.Fatalf("tolerance %v is loose against the output rms %.3g", tol, rms(want))
			}
			bad := append([]float32(nil), got...)
			i := len(bad) / 2
			bad[i] += float32(catch*rms(want) + tol.Rel*math.Abs(float64(want[i])))
			if _, _, ok := Compare(bad, want, tol); ok {
				t.Fatalf("an error of %g of the output rms passed", catch)
			}
		})
	}
}

// FuzzEncoderEvaluate evaluates encoder layers of random small shapes: the reference must not
// panic, and every output and tolerance must be finite.
func FuzzEncoderEvaluate(f *testing.F) {
	f.Add(uint8(1), uint8(7), uint8(8), uint8(2), uint8(24), uint8(1), false, uint64(1))
	f.Add(uint8(2), uint8(1), uint8(3), uint8(3), uint8(1), uint8(2), true, uint64(9))
	f.Fuzz(func(t *testing.T, batch, tokens, headDim, heads, hidden, layers uint8, f32 bool, seed uint64) {
		c := graph.EncoderConfig{Batch: int(batch%3) + 1, Tokens: int(tokens%40) + 1, Heads: int(heads%6) + 1,
			Hidden: int(hidden%48) + 1, Layers: int(layers%2) + 1, DType: graph.F16, Acc: graph.F16}
		c.Dim = c.Heads * (int(headDim%12) + 1)
		if f32 {
			c.DType, c.Acc = graph.F32, graph.F32
		}
		g, err := graph.EncoderLayerGraph(c, seed)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		res, err := EvaluateDetailed(g, nil, Options{GenerateMissing: true})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		tol := res.Tolerances["y"]
		if math.IsNaN(tol.Abs) || math.IsInf(tol.Abs, 0) {
			t.Fatalf("%+v: tolerance %v", c, tol)
		}
		for i, v := range res.Outputs["y"] {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%+v: output %d is %v", c, i, v)
			}
		}
	})
}

func BenchmarkEncoderLayer(b *testing.B) {
	g, err := graph.EncoderLayerGraph(graph.DefaultEncoder, 1)
	if err != nil {
		b.Fatal(err)
	}
	in := map[string][]float32{"x": g.Node("x").Data()}
	for _, p := range g.Parameters() {
		in[p.Name] = p.Data()
	}
	for b.Loop() {
		if _, err := Evaluate(g, in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// deviceGemm is C[m][n] = sum_p a(i, p) b(p, j) as the device's f16 AMP computes it: exact
// products summed in f32 within 16-deep groups, the running partial rounded to f16 after every
// group (acc16), or f32 accumulation rounded to f16 at the end.
func deviceGemm(a, b func(i, j int) float32, m, k, n int, acc16 bool) []float32 {
	out := make([]float32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var partial float32
			for g := 0; g < k; g += 16 {
				s := partial
				for p := g; p < min(k, g+16); p++ {
					s += a(i, p) * b(p, j)
				}
				partial = s
				if acc16 {
					partial = f16(s)
				}
			}
			out[i*n+j] = f16(partial)
		}
	}
	return out
}

// deviceLayer is one f16 encoder layer with the device kernels' arithmetic (deviceGemm,
// deviceLayerNorm, deviceSoftmax, f16 bias adds, residuals and GELU), per batch element.
func deviceLayer(x []float32, w map[string][]float32, c graph.EncoderConfig) []float32 {
	T, D, H, hd := c.Tokens, c.Dim, c.Hidden, c.HeadDim()
	acc16 := c.Acc == graph.F16
	linear := func(in []float32, name string, nin, nout int) []float32 {
		wt, b := w[name+".weight"], w[name+".bias"]
		rows := len(in) / nin
		out := deviceGemm(func(i, p int) float32 { return in[i*nin+p] }, func(p, j int) float32 { return wt[j*nin+p] }, rows, nin, nout, acc16)
		for i := range out {
			out[i] = f16(out[i] + b[i%nout])
		}
		return out
	}
	out := make([]float32, 0, len(x))
	for bi := 0; bi < c.Batch; bi++ {
		xb := x[bi*T*D : (bi+1)*T*D]
		h := deviceLayerNorm(xb, w["layer_norm1.weight"], w["layer_norm1.bias"], D)
		q, k, v := linear(h, "self_attn.q_proj", D, D), linear(h, "self_attn.k_proj", D, D), linear(h, "self_attn.v_proj", D, D)
		attn := make([]float32, T*D)
		for hh := 0; hh < c.Heads; hh++ {
			o := hh * hd
			s := deviceGemm(func(i, p int) float32 { return q[i*D+o+p] }, func(p, j int) float32 { return k[j*D+o+p] }, T, hd, T, acc16)
			pr := deviceSoftmax(s, T, 1/math.Sqrt(float64(hd)))
			ctx := deviceGemm(func(i, p int) float32 { return pr[i*T+p] }, func(p, j int) float32 { return v[p*D+o+j] }, T, T, hd, acc16)
			for i := 0; i < T; i++ {
				copy(attn[i*D+o:i*D+o+hd], ctx[i*hd:(i+1)*hd])
			}
		}
		y := linear(attn, "self_attn.out_proj", D, D)
		for i := range y {
			y[i] = f16(xb[i] + y[i])
		}
		m := linear(deviceLayerNorm(y, w["layer_norm2.weight"], w["layer_norm2.bias"], D), "mlp.fc1", D, H)
		for i := range m {
			m[i] = f16(float32(Gelu(float64(m[i]), graph.GeluTanh)))
		}
		m = linear(m, "mlp.fc2", H, D)
		for i := range y {
			y[i] = f16(y[i] + m[i])
		}
		out = append(out, y...)
	}
	return out
}

// TestToleranceCoversDeviceEncoder runs f16 encoder layers with the device's arithmetic and
// checks the reference's derived tolerance covers them, while staying a few f16 ulps of the
// output (a 2 % error of the output rms must fail).
func TestToleranceCoversDeviceEncoder(t *testing.T) {
	tests := []graph.EncoderConfig{
		{Batch: 2, Tokens: 50, Dim: 24, Heads: 3, Hidden: 40, Layers: 2, DType: graph.F16, Acc: graph.F16},
		{Batch: 1, Tokens: 50, Dim: 48, Heads: 12, Hidden: 64, Layers: 1, DType: graph.F16, Acc: graph.F32},
		{Batch: 1, Tokens: 197, Dim: 64, Heads: 1, Hidden: 96, Layers: 1, DType: graph.F16, Acc: graph.F16},
		{Batch: 1, Tokens: 9, Dim: 1152, Heads: 16, Hidden: 4304, Layers: 1, DType: graph.F16, Acc: graph.F16},
	}
	for _, c := range tests {
		t.Run(fmt.Sprintf("acc%v-b%d-t%d-d%d-heads%d-h%d-n%d", c.Acc, c.Batch, c.Tokens, c.Dim, c.Heads, c.Hidden, c.Layers), func(t *testing.T) {
			if testing.Short() && c.Dim > 100 {
				t.Skip("full width: -short")
			}
			g, err := graph.EncoderLayerGraph(c, 23)
			if err != nil {
				t.Fatal(err)
			}
			res, err := EvaluateDetailed(g, nil, Options{GenerateMissing: true})
			if err != nil {
				t.Fatal(err)
			}
			dev := g.Node("x").Data()
			for l := 0; l < c.Layers; l++ {
				w := map[string][]float32{}
				pre := fmt.Sprintf("%d.", l)
				for _, p := range g.Parameters() {
					if len(p.Name) > len(pre) && p.Name[:len(pre)] == pre {
						w[p.Name[len(pre):]] = p.Data()
					}
				}
				dev = deviceLayer(dev, w, c)
			}
			want, tol := res.Outputs["y"], res.Tolerances["y"]
			maxErr, worst, ok := Compare(dev, want, tol)
			t.Logf("tolerance %v; device-style max error %.3g at %d; output rms %.3g", tol, maxErr, worst, rms(want))
			if !ok {
				t.Fatalf("device-style layer exceeds the tolerance: %.3g at %d (device %v, reference %v) > %v", maxErr, worst, dev[worst], want[worst], tol)
			}
			if tol.Abs >= 0.02*rms(want) {
				t.Fatalf("tolerance %v is loose against the output rms %.3g", tol, rms(want))
			}
		})
	}
}
