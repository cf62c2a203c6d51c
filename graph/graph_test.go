package graph

import (
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestValidationErrors(t *testing.T) {
	other := New()
	foreign := other.Input("z", F16, 4, 4)
	tests := []struct {
		name  string
		build func(g *Graph)
		want  string
	}{
		{"ok", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			w := g.Parameter("w", F16, 1, 8, 3)
			g.Output("y", g.Gemm("mm", x, w, GemmAttrs{}))
		}, ""},
		{"gemm inner mismatch", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			w := g.Parameter("w", F16, 1, 7, 3)
			g.Output("y", g.Gemm("block0.fc1", x, w, GemmAttrs{}))
		}, `gemm "block0.fc1": inner dimensions differ: A "x" [4 8] has k=8, B "w" [7 3] has k=7`},
		{"gemm transB mismatch", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			w := g.Parameter("w", F16, 1, 8, 3)
			g.Output("y", g.Gemm("mm", x, w, GemmAttrs{TransB: true}))
		}, `gemm "mm": inner dimensions differ: A "x" [4 8] has k=8, B "w" [8 3] (transposed) has k=3`},
		{"gemm dtype mismatch", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			w := g.Parameter("w", F32, 1, 8, 3)
			g.Output("y", g.Gemm("mm", x, w, GemmAttrs{}))
		}, `gemm "mm": dtype mismatch: A "x" is f16, B "w" is f32`},
		{"gemm rank", func(g *Graph) {
			x := g.Input("x", F16, 8)
			w := g.Parameter("w", F16, 1, 8, 3)
			g.Output("y", g.Gemm("mm", x, w, GemmAttrs{}))
		}, `gemm "mm": operands need rank >= 2, got A "x" [8] and B "w" [8 3]`},
		{"gemm batch mismatch", func(g *Graph) {
			x := g.Input("x", F16, 2, 4, 8)
			w := g.Parameter("w", F16, 1, 3, 8, 3)
			g.Output("y", g.Gemm("mm", x, w, GemmAttrs{}))
		}, `gemm "mm": batch axes of A "x" [2 4 8] and B "w" [3 8 3]: axis 1 from the end: 2 vs 3`},
		{"add shape mismatch", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			b := g.Parameter("b", F16, 1, 4)
			g.Output("y", g.Add("block0.fc1.add", x, b))
		}, `add "block0.fc1.add": shapes [4 8] ("x") and [4] ("b") do not broadcast: axis 1 from the end: 8 vs 4`},
		{"add dtype mismatch", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			b := g.Parameter("b", F32, 1, 8)
			g.Output("y", g.Add("a", x, b))
		}, `add "a": dtype mismatch: "x" is f16, "b" is f32`},
		{"duplicate name", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			g.Output("y", g.Gelu("x", x, GeluTanh))
		}, `gelu "x": duplicate name (already used by input node #0)`},
		{"nil operand", func(g *Graph) {
			g.Output("y", g.Gelu("act", nil, GeluTanh))
		}, `gelu "act": operand 0 is nil (dangling value)`},
		{"foreign operand", func(g *Graph) {
			g.Output("y", g.Cast("c", foreign, F32))
		}, `cast "c": operand 0 ("z") belongs to another graph (dangling value)`},
		{"unused value", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			g.Parameter("w", F16, 1, 8, 3)
			g.Output("y", g.Gelu("act", x, GeluErf))
		}, `parameter "w": value is never used and is not an output (dangling value)`},
		{"no outputs", func(g *Graph) { g.Input("x", F16, 4, 8) }, "graph has no outputs"},
		{"bad dim", func(g *Graph) { g.Output("y", g.Input("x", F16, 4, 0)) }, `input "x": dimension 1 of shape [4 0] must be positive, got 0`},
		{"bad dtype", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			g.Output("y", g.Cast("c", x, InvalidDType))
		}, `cast "c": invalid target dtype dtype(0)`},
		{"duplicate output", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			g.Output("y", x)
			g.Output("y", x)
		}, `output "y": duplicate output name`},
		{"no cascade", func(g *Graph) {
			x := g.Input("x", F16, 4, 8)
			w := g.Parameter("w", F16, 1, 7, 3)
			h := g.Gemm("mm", x, w, GemmAttrs{})
			g.Output("y", g.Gelu("act", h, GeluTanh)) // not reported again
		}, `gemm "mm": inner dimensions differ: A "x" [4 8] has k=8, B "w" [7 3] has k=7`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := New()
			tc.build(g)
			err := g.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error = %v\nwant    %s", err, tc.want)
			}
			if _, err := g.Build(); err == nil {
				t.Fatal("Build accepted an invalid graph")
			}
		})
	}
}

func TestBroadcast(t *testing.T) {
	tests := []struct {
		a, b, want Shape
		err        string
	}{
		{Shape{729, 4304}, Shape{4304}, Shape{729, 4304}, ""},
		{Shape{4304}, Shape{729, 4304}, Shape{729, 4304}, ""},
		{Shape{2, 1, 5}, Shape{3, 1}, Shape{2, 3, 5}, ""},
		{Shape{}, Shape{3, 4}, Shape{3, 4}, ""},
		{Shape{1}, Shape{1}, Shape{1}, ""},
		{Shape{3, 4}, Shape{3}, nil, "axis 1 from the end: 4 vs 3"},
		{Shape{2, 3, 4}, Shape{5, 1, 4}, nil, "axis 3 from the end: 2 vs 5"},
	}
	for _, tc := range tests {
		got, err := Broadcast(tc.a, tc.b)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Broadcast(%v, %v) error = %v, want %s", tc.a, tc.b, err, tc.err)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("Broadcast(%v, %v) = %v, %v; want %v", tc.a, tc.b, got, err, tc.want)
		}
	}
}

func TestGemmShapes(t *testing.T) {
	g := New()
	a := g.Input("a", F16, 2, 1, 5, 3)     // batch [2 1]; with TransA op(A) is [3][5]
	b := g.Parameter("b", F16, 1, 4, 7, 5) // batch [4]; with TransB op(B) is [5][7]
	c := g.Gemm("c", a, b, GemmAttrs{TransA: true, TransB: true, Acc: F16})
	g.Output("c", c)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	if want := (Shape{2, 4, 3, 7}); !c.Shape.Equal(want) {
		t.Fatalf("shape %v, want %v", c.Shape, want)
	}
	if bt, m, k, n := c.GemmDims(); bt != 8 || m != 3 || k != 5 || n != 7 {
		t.Fatalf("dims %d %d %d %d", bt, m, k, n)
	}
	if c.Flops() != 2*8*3*5*7 || g.GemmFlops() != c.Flops() {
		t.Fatalf("flops %d", c.Flops())
	}
	if c.DType != F16 || c.Acc != F16 {
		t.Fatalf("dtypes %v %v", c.DType, c.Acc)
	}
	if s := c.String(); s != `%2 = gemm "c" f16[2 4 3 7] (%0, %1) transA transB acc=f16 flops=1680` {
		t.Fatalf("String() = %s", s)
	}
}

func TestPresets(t *testing.T) {
	g, err := Preset("mlp", DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	if g.GemmFlops() != 2*2*729*1152*4304 {
		t.Errorf("flops %d", g.GemmFlops())
	}
	if n, _ := WorkloadName("siglip-mlp-f16", DefaultFlags()); n != "siglip-mlp-f16-b1-t729-d1152-h4304-n1" {
		t.Errorf("name %s", n)
	}
	w := 0
	for _, p := range g.Parameters() {
		w += p.Shape.Elements() * p.DType.Size()
	}
	if w != 19832832 { // the reference log's weightBytes
		t.Errorf("weight bytes %d", w)
	}
	if in := g.Inputs()[0]; in.Shape.Elements()*2 != 1679616 { // inputBytes
		t.Errorf("input %v", in.Shape)
	}
	f := DefaultFlags()
	f.MLP = MLPConfig{Batch: 2, Tokens: 3, Dim: 8, Hidden: 16, Blocks: 3, Biases: true}
	g, err = Preset("siglip-mlp-f16", f)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Parameters()) != 12 || g.Outputs()[0].Node.Name != "block2.fc2.add" || !g.Inputs()[0].Shape.Equal(Shape{6, 8}) {
		t.Errorf("unexpected graph:\n%s", g.Dump())
	}
	if f.MLP.Name() != "siglip-mlp-f16-b2-t3-d8-h16-n3-bias" {
		t.Errorf("name %s", f.MLP.Name())
	}
	f.Gemm = GemmConfig{M: 3, K: 5, N: 7}
	g, err = Preset("gemm", f)
	if err != nil || g.GemmFlops() != 2*3*5*7 || f.Gemm.Name() != "gemm-f16-m3-k5-n7" {
		t.Errorf("gemm preset: %v %v", err, g)
	}
	if _, err := Preset("resnet", f); err == nil || err.Error() != `unknown workload "resnet" (known: encoder, gemm, mlp, siglip-encoder-layer, siglip-mlp-f16)` {
		t.Errorf("unknown preset error: %v", err)
	}
}

// The encoder-layer preset: so400m's layer by default, the shared shape
// flags and --heads --layers through EncoderFlags, and a recipe of the
// other presets that does not mention it.
func TestEncoderPreset(t *testing.T) {
	g, err := Preset("encoder", DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	// Per layer: q, k, v, out projections (4 x 1152^2), fc1 and fc2, the
	// scores and the context (16 heads x 729^2 x 72 each), 2 flops per MAC.
	want := 2 * (729*1152*1152*4 + 729*1152*4304*2 + 16*729*729*72*2)
	if g.GemmFlops() != int64(want) {
		t.Errorf("flops %d, want %d", g.GemmFlops(), want)
	}
	if n, _ := WorkloadName("siglip-encoder-layer", DefaultFlags()); n != "siglip-encoder-layer-f16-b1-t729-d1152-a16-h4304-l1" {
		t.Errorf("name %s", n)
	}
	f := DefaultFlags()
	f.Encoder = EncoderFlags(MLPConfig{Batch: 2, Tokens: 50, Dim: 64, Hidden: 96, Blocks: 1}, 4, 3)
	g, err = Preset("siglip-encoder-layer", f)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := WorkloadName("encoder", f); n != "siglip-encoder-layer-f16-b2-t50-d64-a4-h96-l3" {
		t.Errorf("name %s", n)
	}
	if out := g.Outputs()[0]; out.Node.Name != "2.residual2" || !out.Node.Shape.Equal(Shape{2, 50, 64}) {
		t.Errorf("output %s %v", out.Node.Name, out.Node.Shape)
	}
	f.Encoder.Heads = 5
	if _, err := Preset("encoder", f); err == nil || !strings.Contains(err.Error(), "--heads 5 does not divide --dim 64") {
		t.Errorf("bad heads: %v", err)
	}
	b, err := json.Marshal(DefaultFlags())
	if err != nil || strings.Contains(string(b), "Encoder") {
		t.Errorf("the default flags' JSON names the encoder: %s %v", b, err)
	}
}

func TestFlagValidation(t *testing.T) {
	tests := []struct {
		cfg  MLPConfig
		want string
	}{
		{DefaultMLP, ""},
		{MLPConfig{Batch: 1, Tokens: 0, Dim: 1152, Hidden: 4304, Blocks: 1}, "--tokens must be positive, got 0"},
		{MLPConfig{Batch: -1, Tokens: 729, Dim: 1152, Hidden: 4304, Blocks: 1}, "--batch must be positive, got -1"},
		{MLPConfig{Batch: 1, Tokens: 729, Dim: 1152, Hidden: 4304, Blocks: 0}, "--blocks must be positive, got 0"},
		{MLPConfig{Batch: 1, Tokens: 729, Dim: 1 << 21, Hidden: 4304, Blocks: 1}, "--dim must be at most 1048576, got 2097152"},
		{MLPConfig{Batch: 1, Tokens: 729, Dim: 0, Hidden: 0, Blocks: 1}, "--dim must be positive, got 0\n--hidden must be positive, got 0"},
		{MLPConfig{Batch: 1, Tokens: 1 << 20, Dim: 1 << 20, Hidden: 8, Blocks: 1}, "--batch x --tokens x --dim input [1048576 1048576] has 1099511627776 elements"},
	}
	for _, tc := range tests {
		err := tc.cfg.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", tc.cfg, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
		if _, err := MLPGraph(tc.cfg, 0, GeluTanh); err == nil {
			t.Errorf("%+v: MLPGraph accepted it", tc.cfg)
		}
	}
	if err := (GemmConfig{M: 1, K: 0, N: 1}).Validate(); err == nil || err.Error() != "--k must be positive, got 0" {
		t.Errorf("gemm k: %v", err)
	}
}

func TestDataDeterministic(t *testing.T) {
	g, err := MLPGraph(MLPConfig{Batch: 1, Tokens: 37, Dim: 300, Hidden: 1000, Blocks: 1}, 42, GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	w := g.Node("block0.fc1.weight")
	prev := runtime.GOMAXPROCS(1)
	one := w.DataF16()
	runtime.GOMAXPROCS(max(4, prev))
	many := w.DataF16()
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(one, many) {
		t.Fatal("data depends on GOMAXPROCS")
	}
	// Pinned values: the generator's definition must not drift silently.
	if got, want := Generate(1, "x", F16, 4, -1, 1), []float32{-0.9038086, -0.7998047, -0.6225586, -0.26342773}; !slices.Equal(got, want) {
		t.Fatalf("Generate(1, x) = %v, want %v", got, want)
	}
	if slices.Equal(Generate(1, "x", F16, 64, -1, 1), Generate(2, "x", F16, 64, -1, 1)) ||
		slices.Equal(Generate(1, "x", F16, 64, -1, 1), Generate(1, "y", F16, 64, -1, 1)) {
		t.Fatal("seed or name does not change the data")
	}
	// Range and distribution: fan-in scaling, mean near 0, values exact in f16.
	d := w.Data()
	lim := 1 / 17.320508075688775 // 1/sqrt(300)
	var sum float64
	for _, v := range d {
		if float64(v) < -lim*1.001 || float64(v) > lim*1.001 {
			t.Fatalf("value %v outside ±%v", v, lim)
		}
		sum += float64(v)
	}
	if mean := sum / float64(len(d)); mean > lim/100 || mean < -lim/100 {
		t.Fatalf("mean %v", mean)
	}
	// Different chunks differ (per-chunk streams are not copies of each other).
	if slices.Equal(d[:1000], d[ChunkElements:ChunkElements+1000]) {
		t.Fatal("chunks repeat")
	}
}

func BenchmarkMLPData(b *testing.B) {
	g, err := Preset("mlp", DefaultFlags())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for _, p := range g.Parameters() {
			p.DataF16()
		}
	}
}
