package mid

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// encoderFlops is the layer's useful flops by hand: 2*M*K*N of every
// matrix product (q, k, v, out_proj, fc1, fc2), and per batch element
// and head the scores and the context, 2*T*T*hd each.
func encoderFlops(c graph.EncoderConfig) int64 {
	m, d, f := int64(c.Batch*c.Tokens), int64(c.Dim), int64(c.Hidden)
	t, hd := int64(c.Tokens), int64(c.HeadDim())
	return 4*2*m*d*d + 2*2*m*d*f + int64(c.Batch*c.Heads)*2*2*t*t*hd
}

// planEncoder plans one layer of c on tiles tiles and checks the plan's
// structure: the data presence (Check), every call's cycles those of
// its kernel's model, every compute stage's cycles its busiest tile's,
// every exchange stage's the phase of its busiest endpoints, the
// per-operator breakdown adding up to the total.
func planEncoder(t *testing.T, c graph.EncoderConfig, tiles int) *Plan {
	t.Helper()
	g, err := graph.EncoderLayerGraph(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	tg := ipu21.IPU21()
	start := time.Now()
	res, err := SearchEncoder(g, tg, Options{Tiles: tiles})
	if err != nil {
		t.Fatalf("%+v on %d tiles: %v", c, tiles, err)
	}
	elapsed := time.Since(start)
	p := res.Finalists[0]
	if err := p.Check(); err != nil {
		t.Fatalf("%+v: Check: %v", c, err)
	}
	if p.Flops != encoderFlops(c) {
		t.Errorf("flops %d, want %d", p.Flops, encoderFlops(c))
	}
	memo := map[string]int64{}
	var sum int64
	for _, st := range p.Stages {
		sum += st.Cycles
		if !strings.HasPrefix(st.Name, "0.") {
			t.Errorf("stage %q does not carry a graph node's name", st.Name)
		}
		switch st.Kind {
		case ComputeStage:
			busy := map[int]int64{}
			var most int64
			for _, call := range st.Calls {
				key := call.Spec.Name() + " " + call.Spec.Params().String()
				want, ok := memo[key]
				if !ok {
					k, err := cost.Kernel(call.Spec.Name(), call.Spec.Params())
					if err != nil {
						t.Fatalf("stage %s: %v", st.Name, err)
					}
					want = k + cost.CallCycles
					memo[key] = want
				}
				if call.Cycles != want {
					t.Fatalf("stage %s: %s %v costs %d cycles, the model %d", st.Name, call.Spec.Name(), call.Spec.Params(), call.Cycles, want)
				}
				if call.Tile < 0 || call.Tile >= tiles {
					t.Fatalf("stage %s: call on tile %d of %d", st.Name, call.Tile, tiles)
				}
				busy[call.Tile] += call.Cycles
				most = max(most, busy[call.Tile])
			}
			if most != st.Cycles {
				t.Errorf("stage %s: %d cycles, its busiest tile %d", st.Name, st.Cycles, most)
			}
		case ExchangeStage:
			recv := map[int]int{}
			for _, tr := range st.Transfers {
				if tr.Bytes <= 0 || tr.Bytes%4 != 0 {
					t.Errorf("stage %s: transfer of %v moves %d bytes, not whole words", st.Name, tr.Ref, tr.Bytes)
				}
				for _, to := range tr.To {
					recv[to] += tr.Bytes
				}
			}
			mr := 0
			for _, v := range recv {
				mr = max(mr, v)
			}
			// Paired 64-bit items halve some receives, and their sender
			// borrows its partner's lane (exchange): a receiver's figure
			// is at most its plain sum, a sender's is not bounded by its
			// own transfers.
			if st.MaxRecv > mr || st.Cycles != cost.Phase(tg, st.MaxSend, st.MaxRecv) {
				t.Errorf("stage %s: maxSend %d maxRecv %d cycles %d; transfers receive %d", st.Name, st.MaxSend, st.MaxRecv, st.Cycles, mr)
			}
		}
	}
	if sum != p.Cycles {
		t.Errorf("stages add up to %d cycles, the plan says %d", sum, p.Cycles)
	}
	var ops, opFlops int64
	next := 0
	for _, o := range p.Encoder.Ops {
		opFlops += o.Flops
		if o.First != next {
			t.Errorf("operator %s starts at stage %d, want %d", o.Name, o.First, next)
		}
		next = o.First + o.Count
		ops += o.Cycles
	}
	if opFlops != p.Flops {
		t.Errorf("operators' flops add up to %d, the plan's %d", opFlops, p.Flops)
	}
	if ops != p.Cycles || next != len(p.Stages) {
		t.Errorf("operators add up to %d cycles over %d stages, the plan %d over %d", ops, next, p.Cycles, len(p.Stages))
	}
	// Every parameter and every value held between operators has a
	// format, on tiles of the plan.
	names := []string{"x", "0.layer_norm1", "0.self_attn.q_proj.add", "0.self_attn.k_proj.add", "0.self_attn.v_proj",
		"0.self_attn.merge", "0.self_attn.out_proj.add", "0.residual1", "0.layer_norm2", "0.residual2"}
	if p.Encoder.MLPChunks == 0 {
		names = append(names, "0.mlp.gelu", "0.mlp.fc2.add")
	}
	for _, nd := range g.Nodes() {
		if nd.Op == graph.OpParameter {
			names = append(names, nd.Name)
		}
	}
	for _, name := range names {
		f := p.Formats[g.Node(name).ID]
		if f == nil || len(f.Pieces) == 0 {
			t.Errorf("%s has no format", name)
			continue
		}
		for _, pc := range f.Pieces {
			if pc.Tile < 0 || pc.Tile >= tiles {
				t.Errorf("%s: a piece on tile %d of %d", name, pc.Tile, tiles)
			}
		}
	}
	if p.PeakBytes > res.Budget {
		t.Errorf("peak %d bytes over the budget %d", p.PeakBytes, res.Budget)
	}
	if e := p.Estimate(); e.Total != int(p.Cycles) {
		t.Errorf("estimate %+v, cycles %d", e, p.Cycles)
	}
	t.Logf("%+v on %d tiles: planned in %v\n%s", c, tiles, elapsed.Round(time.Millisecond), p.Summary())
	return p
}

// TestEncoderSo400m plans the so400m layer on the whole chip and prints
// its predicted cycles, efficiency and breakdown (go test -run
// TestEncoderSo400m -v ./compiler/mid).
func TestEncoderSo400m(t *testing.T) {
	p := planEncoder(t, graph.DefaultEncoder, 1472)
	if p.ActiveTiles != 1472 {
		t.Errorf("%d active tiles, want all 1472", p.ActiveTiles)
	}
	e := p.Encoder
	if e.Attention == nil || e.Materialized == nil || e.Flash == nil {
		t.Fatalf("attention forms: chosen %v, materialized %v, flash %v", e.Attention, e.Materialized, e.Flash)
	}
	if e.Attention != e.Materialized && e.Attention != e.Flash {
		t.Error("the chosen attention is neither form's best")
	}
	if e.Attention.Cycles > min(e.Materialized.Cycles, e.Flash.Cycles) {
		t.Errorf("chose %d cycles of attention over %d and %d", e.Attention.Cycles, e.Materialized.Cycles, e.Flash.Cycles)
	}
	// The operators in order; the projections are one operator each or
	// side by side (one operator named after all of them).
	want := []string{"0.layer_norm1", "0.self_attn.q_proj", "0.self_attn.k_proj", "0.self_attn.v_proj", "0.self_attn.attention",
		"0.self_attn.merge", "0.self_attn.out_proj", "0.layer_norm2", "0.mlp.fc1", "0.mlp.fc2", "0.residual2"}
	var got []string
	for _, o := range e.Ops {
		for _, part := range strings.Split(o.Name, "+") {
			if !strings.HasPrefix(part, "0.") {
				part = "0.self_attn." + part
			}
			got = append(got, part)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("operators %v, want %v (projections: %s)", got, want, e.Projections)
	}
	for _, name := range []string{"0.self_attn.scores", "0.self_attn.softmax", "0.self_attn.context"} {
		found := false
		for _, st := range p.Stages {
			found = found || strings.HasPrefix(st.Name, name)
		}
		if !found {
			t.Errorf("no stage named %s", name)
		}
	}
	t.Logf("so400m on 1472 tiles: %d cycles, %.2f%% of peak (%.1f us at %.2f GHz); attention: materialized %d, flash %d cycles",
		p.Cycles, 100*p.Efficiency(), p.Target.Microseconds(p.Cycles), p.Target.ClockHz/1e9, e.Materialized.Cycles, e.Flash.Cycles)
}

// TestEncoderShapes plans odd shapes: token counts that are not
// multiples of 16, 12 heads of 64, batch 2, a quarter of the chip, and a
// small layer whose dims and heads are not multiples of 16.
func TestEncoderShapes(t *testing.T) {
	vitB := graph.EncoderConfig{Batch: 1, Tokens: 197, Dim: 768, Heads: 12, Hidden: 3072, Layers: 1, DType: graph.F16, Acc: graph.F16}
	cases := []struct {
		name  string
		c     graph.EncoderConfig
		tiles int
	}{
		{"197 tokens, 12 heads of 64", vitB, 1472},
		{"577 tokens", func() graph.EncoderConfig { c := graph.DefaultEncoder; c.Tokens = 577; return c }(), 1472},
		{"50 tokens", func() graph.EncoderConfig { c := graph.DefaultEncoder; c.Tokens = 50; return c }(), 1472},
		{"197 tokens, 12 heads of 64 on 368 tiles", vitB, 368},
		{"so400m on 368 tiles", graph.DefaultEncoder, 368},
		{"batch 2", func() graph.EncoderConfig { c := graph.DefaultEncoder; c.Batch = 2; return c }(), 1472},
		{"37 tokens, dim 100, 4 heads of 25, batch 3, 64 tiles",
			graph.EncoderConfig{Batch: 3, Tokens: 37, Dim: 100, Heads: 4, Hidden: 200, Layers: 1, DType: graph.F16, Acc: graph.F16}, 64},
		{"one token on 8 tiles", graph.EncoderConfig{Batch: 1, Tokens: 1, Dim: 64, Heads: 1, Hidden: 64, Layers: 1, DType: graph.F16, Acc: graph.F16}, 8},
		{"16 tokens on 3 tiles", graph.EncoderConfig{Batch: 1, Tokens: 16, Dim: 32, Heads: 2, Hidden: 48, Layers: 1, DType: graph.F16, Acc: graph.F16}, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := planEncoder(t, tc.c, tc.tiles)
			if p.Encoder.Rows.Count > tc.tiles || p.ActiveTiles > tc.tiles {
				t.Errorf("%d layer-norm tiles, %d active, of %d", p.Encoder.Rows.Count, p.ActiveTiles, tc.tiles)
			}
		})
	}
}

// TestEncoderDoesNotFit: shapes whose weights and working sets cannot
// fit say which operator does not fit, on which tile, with how many
// bytes: so400m on 16 tiles (no grid of the first projection fits) and on
// 128 tiles.
func TestEncoderDoesNotFit(t *testing.T) {
	g, err := graph.EncoderLayerGraph(graph.DefaultEncoder, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tiles := range []int{16, 128} {
		_, err = SearchEncoder(g, ipu21.IPU21(), Options{Tiles: tiles})
		if err == nil {
			t.Errorf("so400m on %d tiles planned", tiles)
			continue
		}
		var u *UnsupportedError
		if errors.As(err, &u) {
			t.Fatalf("not fitting reported as unsupported: %v", err)
		}
		for _, w := range []string{"does not fit", "tile ", "bytes", "0."} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
		t.Logf("%d tiles: %v", tiles, err)
	}
}

// TestEncoderUnsupported: the MLP graph is not an encoder layer, and two
// layers are refused as unsupported (a runtime loop, later).
func TestEncoderUnsupported(t *testing.T) {
	c := graph.DefaultEncoder
	c.Layers = 2
	g, err := graph.EncoderLayerGraph(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !IsEncoderLayer(g) {
		t.Error("a two-layer encoder is not recognised")
	}
	var u *UnsupportedError
	if _, err := SearchEncoder(g, ipu21.IPU21(), Options{}); !errors.As(err, &u) {
		t.Errorf("two layers: %v, want an UnsupportedError", err)
	}
}

// TestSideBySide: stages of operators on disjoint tiles merge stage by
// stage; a merged compute stage costs its busiest tile, a merged phase
// its busiest receiver and, when the operators share senders, the sum of
// their busiest senders.
func TestSideBySide(t *testing.T) {
	tg := ipu21.IPU21()
	g, err := graph.EncoderLayerGraph(graph.DefaultEncoder, 1)
	if err != nil {
		t.Fatal(err)
	}
	x := g.Node("0.layer_norm1")
	call := func(tile int, n int) Call {
		s := kernels.Copy{N: n}
		return Call{Tile: tile, Spec: s, Cycles: cost.Call(s)}
	}
	phase := func(from, to, bytes int) Stage {
		return Stage{Kind: ExchangeStage, Name: "a.in", MaxSend: bytes, MaxRecv: bytes, Cycles: cost.Phase(tg, bytes, bytes),
			Transfers: []Transfer{{Ref: Ref{x, -1, Span{Lo: 0, Hi: 1}, Span{Lo: 0, Hi: 16}}, From: from, To: []int{to}, Bytes: bytes}}}
	}
	compute := func(c Call) Stage {
		return Stage{Kind: ComputeStage, Name: "a.gemm", Calls: []Call{c}, Cycles: c.Cycles}
	}
	a := []Stage{phase(0, 2, 4096), compute(call(2, 4096))}
	b := []Stage{phase(0, 4, 8192), compute(call(4, 64))}
	m := sideBySide(tg, "ab", a, b)
	if len(m) != 2 || m[0].Name != "ab.in" || m[1].Name != "ab.gemm" {
		t.Fatalf("merged %d stages %v", len(m), m)
	}
	if m[0].MaxSend != 4096+8192 || m[0].MaxRecv != 8192 || m[0].Cycles != cost.Phase(tg, 4096+8192, 8192) {
		t.Errorf("shared sender: maxSend %d maxRecv %d cycles %d", m[0].MaxSend, m[0].MaxRecv, m[0].Cycles)
	}
	if m[1].Cycles != max(a[1].Cycles, b[1].Cycles) || len(m[1].Calls) != 2 {
		t.Errorf("compute: %d cycles, %d calls", m[1].Cycles, len(m[1].Calls))
	}
	b[0] = phase(6, 4, 8192) // disjoint senders (and their partners)
	if m := sideBySide(tg, "ab", a, b); m[0].MaxSend != 8192 {
		t.Errorf("disjoint senders: maxSend %d, want 8192", m[0].MaxSend)
	}
	if m := sideBySide(tg, "ab", a, b[1:]); len(m) != 3 {
		t.Errorf("different stage kinds: %d stages, want the 3 one after the other", len(m))
	}
}

// TestEncoderConservative: with Options.Conservative every GEMM call is
// the drain kernel (kernels.GemmF16For(true)) and costed as such.
func TestEncoderConservative(t *testing.T) {
	c := graph.EncoderConfig{Batch: 1, Tokens: 197, Dim: 768, Heads: 12, Hidden: 3072, Layers: 1, DType: graph.F16, Acc: graph.F16}
	g, err := graph.EncoderLayerGraph(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := SearchEncoder(g, ipu21.IPU21(), Options{Conservative: true})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Finalists[0]
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, st := range p.Stages {
		for _, call := range st.Calls {
			if s, ok := call.Spec.(kernels.Gemm); ok {
				n++
				if !s.Conservative || call.Spec.Name() != kernels.GemmF16For(true) || call.Cycles != cost.Call(s) {
					t.Fatalf("stage %s: %s %v (%d cycles)", st.Name, call.Spec.Name(), call.Spec.Params(), call.Cycles)
				}
			}
		}
	}
	for _, gp := range p.Gemms {
		if gp.Kernel != kernels.GemmF16For(true) {
			t.Errorf("%s: kernel %s", gp.Node.Name, gp.Kernel)
		}
	}
	if n == 0 {
		t.Error("no GEMM calls")
	}
}
