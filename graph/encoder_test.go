package graph

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestNewOpErrors(t *testing.T) {
	tests := []struct {
		name  string
		build func(g *Graph)
		want  string
	}{
		{"layernorm ok", func(g *Graph) {
			x := g.Input("x", F16, 2, 3, 8)
			s := g.Parameter("s", F16, 1, 8)
			b := g.Parameter("b", F16, 1, 8)
			g.Output("y", g.LayerNorm("ln", x, s, b, 1e-6))
		}, ""},
		{"layernorm scale width", func(g *Graph) {
			x := g.Input("x", F16, 3, 8)
			s := g.Parameter("s", F16, 1, 7)
			b := g.Parameter("b", F16, 1, 8)
			g.Output("y", g.LayerNorm("0.layer_norm1", x, s, b, 1e-6))
		}, `layernorm "0.layer_norm1": scale "s" is [7], want [8] (the last axis of "x" [3 8])`},
		{"layernorm bias rank", func(g *Graph) {
			x := g.Input("x", F16, 3, 8)
			s := g.Parameter("s", F16, 1, 8)
			b := g.Parameter("b", F16, 1, 1, 8)
			g.Output("y", g.LayerNorm("ln", x, s, b, 1e-6))
		}, `layernorm "ln": bias "b" is [1 8], want [8] (the last axis of "x" [3 8])`},
		{"layernorm dtype", func(g *Graph) {
			x := g.Input("x", F16, 3, 8)
			s := g.Parameter("s", F32, 1, 8)
			b := g.Parameter("b", F16, 1, 8)
			g.Output("y", g.LayerNorm("ln", x, s, b, 1e-6))
		}, `layernorm "ln": dtype mismatch: input "x" is f16, scale "s" is f32, bias "b" is f16`},
		{"layernorm eps", func(g *Graph) {
			x := g.Input("x", F16, 3, 8)
			s := g.Parameter("s", F16, 1, 8)
			b := g.Parameter("b", F16, 1, 8)
			g.Output("y", g.LayerNorm("ln", x, s, b, 0))
		}, `layernorm "ln": eps must be positive and finite, got 0`},
		{"layernorm eps nan", func(g *Graph) {
			x := g.Input("x", F16, 3, 8)
			s := g.Parameter("s", F16, 1, 8)
			b := g.Parameter("b", F16, 1, 8)
			g.Output("y", g.LayerNorm("ln", x, s, b, math.NaN()))
		}, `layernorm "ln": eps must be positive and finite, got NaN`},
		{"layernorm scalar", func(g *Graph) {
			x := g.Input("x", F16)
			s := g.Parameter("s", F16, 1, 1)
			b := g.Parameter("b", F16, 1, 1)
			g.Output("y", g.LayerNorm("ln", x, s, b, 1e-6))
		}, `layernorm "ln": input "x" is a scalar; it needs an axis to normalise over`},
		{"layernorm nil bias", func(g *Graph) {
			x := g.Input("x", F16, 3, 8)
			s := g.Parameter("s", F16, 1, 8)
			g.Output("y", g.LayerNorm("ln", x, s, nil, 1e-6))
		}, `layernorm "ln": operand 2 is nil (dangling value)`},
		{"softmax ok", func(g *Graph) {
			x := g.Input("x", F16, 2, 5, 5)
			g.Output("y", g.Softmax("sm", x, 0.125))
		}, ""},
		{"softmax scale", func(g *Graph) {
			x := g.Input("x", F16, 2, 5)
			g.Output("y", g.Softmax("0.self_attn.softmax", x, math.Inf(1)))
		}, `softmax "0.self_attn.softmax": scale must be positive and finite, got +Inf`},
		{"softmax negative scale", func(g *Graph) {
			x := g.Input("x", F16, 2, 5)
			g.Output("y", g.Softmax("sm", x, -1))
		}, `softmax "sm": scale must be positive and finite, got -1`},
		{"softmax scalar", func(g *Graph) {
			g.Output("y", g.Softmax("sm", g.Input("x", F32), 1))
		}, `softmax "sm": input "x" is a scalar; it needs an axis to normalise over`},
		{"reshape count", func(g *Graph) {
			x := g.Input("x", F16, 4, 6)
			g.Output("y", g.Reshape("r", x, 5, 5))
		}, `reshape "r": "x" [4 6] has 24 elements, shape [5 5] has 25`},
		{"reshape dim", func(g *Graph) {
			x := g.Input("x", F16, 4, 6)
			g.Output("y", g.Reshape("r", x, -1, 6))
		}, `reshape "r": dimension 0 of shape [-1 6] must be positive, got -1`},
		{"transpose rank", func(g *Graph) {
			x := g.Input("x", F16, 4, 6)
			g.Output("y", g.Transpose("t", x, 0, 1, 2))
		}, `transpose "t": perm [0 1 2] has 3 axes, "x" [4 6] has 2`},
		{"transpose not a permutation", func(g *Graph) {
			x := g.Input("x", F16, 4, 6, 2)
			g.Output("y", g.Transpose("t", x, 0, 2, 2))
		}, `transpose "t": perm [0 2 2] is not a permutation of 0..2`},
		{"transpose out of range", func(g *Graph) {
			x := g.Input("x", F16, 4, 6)
			g.Output("y", g.Transpose("t", x, 1, 2))
		}, `transpose "t": perm [1 2] is not a permutation of 0..1`},
		{"split heads", func(g *Graph) {
			x := g.Input("x", F16, 7, 12)
			g.Output("y", g.SplitHeads("0.self_attn.q_heads", x, 5))
		}, `transpose "0.self_attn.q_heads": cannot split "x" [7 12] into 5 heads (need rank >= 2 and heads dividing the last axis)`},
		{"split heads nil", func(g *Graph) {
			g.Output("y", g.SplitHeads("q", nil, 2))
		}, `reshape "q.reshape": operand 0 is nil (dangling value)`},
		{"merge heads rank", func(g *Graph) {
			x := g.Input("x", F16, 7, 12)
			g.Output("y", g.MergeHeads("m", x))
		}, `reshape "m": cannot merge the heads of "x" [7 12] (need rank >= 3: [..., heads, tokens, head_dim])`},
		{"no cascade", func(g *Graph) {
			x := g.Input("x", F16, 4, 6)
			r := g.Reshape("r", x, 5, 5)
			s := g.Softmax("sm", g.SplitHeads("h", g.Transpose("t", r, 1, 0), 5), 1)
			g.Output("y", g.MergeHeads("m", s)) // none of these reported again
		}, `reshape "r": "x" [4 6] has 24 elements, shape [5 5] has 25`},
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
		})
	}
}

func TestHeadSplitMerge(t *testing.T) {
	g := New()
	x := g.Input("x", F16, 2, 7, 12)
	q := g.SplitHeads("q", x, 3)
	k := g.SplitHeads("k", x, 3)
	s := g.Gemm("scores", q, k, GemmAttrs{TransB: true})
	p := g.Softmax("p", s, 0.5)
	c := g.Gemm("context", p, q, GemmAttrs{})
	m := g.MergeHeads("m", c)
	g.Output("y", m)
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    *Node
		want Shape
	}{
		{g.Node("q.reshape"), Shape{2, 7, 3, 4}},
		{q, Shape{2, 3, 7, 4}},
		{s, Shape{2, 3, 7, 7}},
		{c, Shape{2, 3, 7, 4}},
		{g.Node("m.transpose"), Shape{2, 7, 3, 4}},
		{m, Shape{2, 7, 12}},
	} {
		if !c.n.Shape.Equal(c.want) {
			t.Errorf("%s: shape %v, want %v", c.n.Name, c.n.Shape, c.want)
		}
	}
	if b, mm, kk, n := s.GemmDims(); b != 6 || mm != 7 || kk != 4 || n != 7 {
		t.Errorf("scores dims %d %d %d %d", b, mm, kk, n)
	}
	if src, heads, ok := q.HeadSplit(); !ok || src != x || heads != 3 {
		t.Errorf("HeadSplit(q) = %v %d %v", src, heads, ok)
	}
	if src, ok := m.HeadMerge(); !ok || src != c {
		t.Errorf("HeadMerge(m) = %v %v", src, ok)
	}
	// Not the patterns: another permutation, a reshape that is not a split, other ops.
	h := New()
	y := h.Input("y", F16, 2, 7, 12)
	r := h.Reshape("r", y, 2, 7, 3, 4)
	t1 := h.Transpose("t1", r, 1, 0, 2, 3)
	r2 := h.Reshape("r2", y, 2, 3, 7, 4)
	t2 := h.Transpose("t2", r2, 0, 2, 1, 3) // shapes work out but the reshape did not split the last axis
	m2 := h.Reshape("m2", t2, 2, 84)        // joins more than the last two axes
	for _, n := range []*Node{t1, t2, r, y} {
		if _, _, ok := n.HeadSplit(); ok {
			t.Errorf("HeadSplit accepted %s", n)
		}
	}
	for _, n := range []*Node{m2, r, t1, y} {
		if _, ok := n.HeadMerge(); ok {
			t.Errorf("HeadMerge accepted %s", n)
		}
	}
}

func TestNewOpStrings(t *testing.T) {
	g := New()
	x := g.Input("x", F16, 3, 8)
	s := g.ParameterInit("s", F16, 1, InitAroundOne, 8, 8)
	b := g.Parameter("b", F16, 1, 8)
	ln := g.LayerNorm("ln", x, s, b, 1e-6)
	sm := g.Softmax("sm", ln, 0.125)
	tr := g.Transpose("t", sm, 1, 0)
	r := g.Reshape("r", tr, 2, 12)
	g.Output("y", r)
	want := []string{
		`%3 = layernorm "ln" f16[3 8] (%0, %1, %2) eps=1e-06`,
		`%4 = softmax "sm" f16[3 8] (%3) scale=0.125`,
		`%5 = transpose "t" f16[8 3] (%4) perm=[1 0]`,
		`%6 = reshape "r" f16[2 12] (%5)`,
	}
	for i, n := range []*Node{ln, sm, tr, r} {
		if got := n.String(); got != want[i] {
			t.Errorf("String() = %s\nwant       %s", got, want[i])
		}
		if n.Flops() != 0 {
			t.Errorf("%s: flops %d", n.Name, n.Flops())
		}
	}
	if got := s.String(); got != `%1 = parameter "s" f16[8] seed=1 init=uniform(1±fan-in)` {
		t.Errorf("String() = %s", got)
	}
	if d := g.Dump(); !strings.Contains(d, want[0]+"\n") || !strings.HasSuffix(d, "output \"y\" = %6\ngemmFlops=0\n") {
		t.Errorf("Dump:\n%s", d)
	}
	lo, hi := s.Range()
	if math.Abs(lo-(1-1/math.Sqrt(8))) > 1e-15 || math.Abs(hi-(1+1/math.Sqrt(8))) > 1e-15 {
		t.Errorf("InitAroundOne range %v %v", lo, hi)
	}
	for _, v := range s.Data() {
		if float64(v) < lo-1e-3 || float64(v) > hi+1e-3 {
			t.Fatalf("value %v outside [%v, %v)", v, lo, hi)
		}
	}
	g = New()
	g.Output("p", g.ParameterInit("p", F16, 1, InitAroundOne, 0, 4))
	if err := g.Validate(); err == nil || err.Error() != `parameter "p": fan-in must be positive, got 0` {
		t.Errorf("InitAroundOne with fan-in 0: %v", err)
	}
}

func TestEncoderConfigValidate(t *testing.T) {
	ok := DefaultEncoder
	tests := []struct {
		mod  func(c *EncoderConfig)
		want string
	}{
		{func(c *EncoderConfig) {}, ""},
		{func(c *EncoderConfig) { c.Heads = 5 }, "--heads 5 does not divide --dim 1152"},
		{func(c *EncoderConfig) { c.Heads = 0 }, "--heads must be positive, got 0"},
		{func(c *EncoderConfig) { c.Layers = 0 }, "--layers must be positive, got 0"},
		{func(c *EncoderConfig) { c.Layers = MaxBlocks + 1 }, "--layers must be at most 1024, got 1025"},
		{func(c *EncoderConfig) { c.Tokens = -3 }, "--tokens must be positive, got -3"},
		{func(c *EncoderConfig) { c.Batch = 0; c.Hidden = 0 }, "--batch must be positive, got 0\n--hidden must be positive, got 0"},
		{func(c *EncoderConfig) { c.DType = InvalidDType }, "encoder dtype must be f16 or f32, got dtype(0)"},
		{func(c *EncoderConfig) { c.Acc = InvalidDType }, "encoder accumulation type must be f16 or f32, got dtype(0)"},
		{func(c *EncoderConfig) { c.Tokens = 1 << 20; c.Dim = 16; c.Heads = 16; c.Hidden = 16 },
			"--batch x --heads x --tokens x --tokens attention scores [1 16 1048576 1048576] has 1.759e+13 elements, more than the limit 1073741824"},
		{func(c *EncoderConfig) {
			c.Batch = MaxBatch
			c.Tokens = MaxDim
			c.Dim = MaxDim
			c.Heads = MaxDim
			c.Hidden = 1
		},
			"--batch x --tokens x --dim input [4294967296 1048576] has 4503599627370496 elements"},
	}
	for _, tc := range tests {
		c := ok
		tc.mod(&c)
		err := c.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: error %v\nwant prefix %q", c, err, tc.want)
		}
		if _, err := EncoderLayerGraph(c, 0); err == nil {
			t.Errorf("%+v: EncoderLayerGraph accepted it", c)
		}
	}
}

// hfParams are the Hugging Face SiglipEncoderLayer state_dict entries with their shapes.
func hfParams(d, h int) map[string]Shape {
	return map[string]Shape{
		"layer_norm1.weight": {d}, "layer_norm1.bias": {d},
		"self_attn.q_proj.weight": {d, d}, "self_attn.q_proj.bias": {d},
		"self_attn.k_proj.weight": {d, d}, "self_attn.k_proj.bias": {d},
		"self_attn.v_proj.weight": {d, d}, "self_attn.v_proj.bias": {d},
		"self_attn.out_proj.weight": {d, d}, "self_attn.out_proj.bias": {d},
		"layer_norm2.weight": {d}, "layer_norm2.bias": {d},
		"mlp.fc1.weight": {h, d}, "mlp.fc1.bias": {h},
		"mlp.fc2.weight": {d, h}, "mlp.fc2.bias": {d},
	}
}

func TestEncoderLayerGraph(t *testing.T) {
	tests := []EncoderConfig{
		DefaultEncoder,
		{Batch: 2, Tokens: 7, Dim: 16, Heads: 2, Hidden: 24, Layers: 3, DType: F32, Acc: F32},
		{Batch: 1, Tokens: 50, Dim: 24, Heads: 3, Hidden: 40, Layers: 1, DType: F16, Acc: F32},
	}
	for _, c := range tests {
		t.Run(fmt.Sprintf("b%d-t%d-d%d-heads%d-h%d-n%d", c.Batch, c.Tokens, c.Dim, c.Heads, c.Hidden, c.Layers), func(t *testing.T) {
			g, err := EncoderLayerGraph(c, 5)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]Shape{}
			for l := 0; l < c.Layers; l++ {
				for name, s := range hfParams(c.Dim, c.Hidden) {
					want[fmt.Sprintf("%d.%s", l, name)] = s
				}
			}
			ps := g.Parameters()
			if len(ps) != len(want) {
				t.Errorf("%d parameters, want %d", len(ps), len(want))
			}
			for _, p := range ps {
				s, ok := want[p.Name]
				if !ok || !p.Shape.Equal(s) || p.DType != c.DType {
					t.Errorf("parameter %s: want %v %v (known: %v)", p, c.DType, s, ok)
				}
				lo, hi := p.Range()
				switch {
				case strings.HasSuffix(p.Name, "layer_norm1.weight") || strings.HasSuffix(p.Name, "layer_norm2.weight"):
					if lo < 0.5 || hi > 1.5 {
						t.Errorf("%s: range [%v, %v), want near 1", p.Name, lo, hi)
					}
				case lo != -hi || hi > 1/math.Sqrt(float64(p.FanIn))+1e-15 || p.FanIn != s[len(s)-1] && len(s) == 2:
					t.Errorf("%s: range [%v, %v) fan-in %d", p.Name, lo, hi, p.FanIn)
				}
			}
			// Every Linear weight is read transposed ([out, in]), never stored transposed.
			for _, n := range g.Nodes() {
				if n.Op == OpGemm && n.Inputs[1].Op == OpParameter && !n.TransB {
					t.Errorf("%s reads its weight untransposed", n)
				}
			}
			in, out := g.Inputs(), g.Outputs()
			shape := Shape{c.Batch, c.Tokens, c.Dim}
			if len(in) != 1 || in[0].Name != "x" || !in[0].Shape.Equal(shape) || len(out) != 1 || out[0].Name != "y" || !out[0].Node.Shape.Equal(shape) {
				t.Errorf("inputs %v outputs %v", in, out)
			}
			last := fmt.Sprintf("%d.residual2", c.Layers-1)
			if out[0].Node.Name != last {
				t.Errorf("output is %s, want %s", out[0].Node.Name, last)
			}
			B, T, D, H := int64(c.Batch), int64(c.Tokens), int64(c.Dim), int64(c.Hidden)
			flops := int64(c.Layers) * (8*B*T*D*D + 4*B*T*T*D + 4*B*T*D*H)
			if g.GemmFlops() != flops {
				t.Errorf("flops %d, want %d", g.GemmFlops(), flops)
			}
			sm := g.Node("0.self_attn.softmax")
			if sm == nil || math.Abs(sm.Scale-1/math.Sqrt(float64(c.Dim/c.Heads))) > 1e-15 {
				t.Errorf("softmax %v", sm)
			}
			for _, name := range []string{"0.self_attn.q_heads", "0.self_attn.k_heads", "0.self_attn.v_heads"} {
				if _, heads, ok := g.Node(name).HeadSplit(); !ok || heads != c.Heads {
					t.Errorf("%s is not a split into %d heads", name, c.Heads)
				}
			}
			if _, ok := g.Node("0.self_attn.merge").HeadMerge(); !ok {
				t.Error("0.self_attn.merge is not a head merge")
			}
		})
	}
	// The so400m defaults, by value.
	if d := DefaultEncoder; d.Tokens != 729 || d.Dim != 1152 || d.Heads != 16 || d.HeadDim() != 72 || d.Hidden != 4304 || d.Batch != 1 || d.Layers != 1 || d.DType != F16 {
		t.Errorf("DefaultEncoder %+v", d)
	}
}
