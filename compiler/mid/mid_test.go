package mid

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
)

func search(t testing.TB, g *graph.Graph, opt Options) *Result {
	t.Helper()
	res, err := Search(g, ipu21.IPU21(), opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkResult asserts what every search must give: 1..Finalists plans,
// cheapest first, each fitting memory, with consistent totals and a data
// placement that the checker accepts.
func checkResult(t *testing.T, res *Result, tiles int) {
	t.Helper()
	most := 8
	if len(res.Finalists) > 0 && res.Finalists[0].Chunks > 1 {
		most = 2 * (chunkTries + 1) // the cheapest and the smallest of each chunking
	}
	for _, p := range res.Finalists {
		if p.Period > 0 {
			most += 8 // the looped finalists join the unrolled ones
			break
		}
	}
	if len(res.Finalists) == 0 || len(res.Finalists) > most {
		t.Fatalf("%d finalists", len(res.Finalists))
	}
	for i, p := range res.Finalists {
		if err := p.Check(); err != nil {
			t.Fatalf("finalist %d: %v\n%s", i, err, p.Summary())
		}
		if p.PeakBytes > res.Budget || p.PeakBytes <= 0 {
			t.Errorf("finalist %d: peak %d bytes, budget %d", i, p.PeakBytes, res.Budget)
		}
		if p.ActiveTiles > tiles {
			t.Errorf("finalist %d uses %d tiles of %d", i, p.ActiveTiles, tiles)
		}
		if i > 0 && p.Cycles < res.Finalists[i-1].Cycles {
			t.Errorf("finalists not ordered: %d < %d", p.Cycles, res.Finalists[i-1].Cycles)
		}
		for _, g := range p.Gemms {
			if g.Rows.Block > 768 || g.Cols.Block%16 != 0 || g.Inner.Block%16 != 0 {
				t.Errorf("finalist %d: %s block r=%d c=%d k=%d breaks the kernel rules", i, g.Node.Name, g.Rows.Block, g.Cols.Block, g.Inner.Block)
			}
		}
	}
	for _, s := range res.Stats {
		if s.Candidates <= 0 {
			t.Errorf("%s: no candidates", s.Name)
		}
	}
}

func TestSiglipMLP(t *testing.T) {
	g, err := graph.Preset("siglip-mlp-f16", graph.DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	var log []string
	res := search(t, g, Options{Logf: func(f string, a ...any) { log = append(log, f) }})
	checkResult(t, res, ipu21.Tiles)
	if len(res.Finalists) != 8 {
		t.Errorf("%d finalists, want the default 8", len(res.Finalists))
	}
	best := res.Finalists[0]
	t.Logf("best plan:\n%s", best.Summary())
	if eff := best.Efficiency(); eff < 0.27 {
		t.Errorf("predicted efficiency %.2f%% is below the reference's 27%%", 100*eff)
	}
	if len(res.Stats) != 2 || len(log) < 2+len(res.Finalists) {
		t.Errorf("stats %d, log lines %d", len(res.Stats), len(log))
	}
	if !strings.Contains(log[0], "candidates=") {
		t.Errorf("first log line %q", log[0])
	}
}

func TestGemmPreset(t *testing.T) {
	g, err := graph.GemmGraph(graph.GemmConfig{M: 729, K: 1152, N: 4304}, 1)
	if err != nil {
		t.Fatal(err)
	}
	res := search(t, g, Options{})
	checkResult(t, res, ipu21.Tiles)
	t.Logf("best gemm plan:\n%s", res.Finalists[0].Summary())
}

func TestFewerTiles(t *testing.T) {
	g, err := graph.Preset("siglip-mlp-f16", graph.DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	res := search(t, g, Options{Tiles: 368})
	checkResult(t, res, 368)
	t.Logf("tiles=368: %s", strings.SplitN(res.Finalists[0].Summary(), "\n", 2)[0])
	// 64 tiles: the weights alone (19.8 MB) take 310 KB of every tile and
	// one pass over 729 rows needs more than the rest: only row chunks
	// (the chain run on a few rows at a time, the input and result of all
	// chunks kept on the device) fit.
	res = search(t, g, Options{Tiles: 64})
	checkResult(t, res, 64)
	for i, p := range res.Finalists {
		if p.Chunks < 2 {
			t.Errorf("64 tiles, finalist %d: %d chunks", i, p.Chunks)
		}
	}
	t.Logf("tiles=64: %d chunks: %s", res.Finalists[0].Chunks, res.Finalists[0].Summary())
	small, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 256, Hidden: 1024, Blocks: 1}, 1, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	res = search(t, small, Options{Tiles: 64})
	checkResult(t, res, 64)
	t.Logf("tiles=64 (729x256x1024 MLP): %s", strings.SplitN(res.Finalists[0].Summary(), "\n", 2)[0])
}

func TestOddShapes(t *testing.T) {
	mlp, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 37, Dim: 50, Hidden: 77, Blocks: 1}, 3, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	res := search(t, mlp, Options{Tiles: 100})
	checkResult(t, res, 100)
	for _, g := range res.Finalists[0].Gemms {
		if g.Kp%16 != 0 || g.Np%16 != 0 || g.Kp < g.K || g.Np < g.N {
			t.Errorf("%s padded to %d x %d from %d x %d", g.Node.Name, g.Kp, g.Np, g.K, g.N)
		}
	}
	gm, err := graph.GemmGraph(graph.GemmConfig{M: 1000, K: 33, N: 7}, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, search(t, gm, Options{}), ipu21.Tiles)
	two, err := graph.MLPGraph(graph.MLPConfig{Batch: 2, Tokens: 61, Dim: 96, Hidden: 200, Blocks: 2}, 3, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, search(t, two, Options{Tiles: 256}), 256)
}

func TestDeterministic(t *testing.T) {
	g, err := graph.Preset("siglip-mlp-f16", graph.DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	a := search(t, g, Options{Tiles: 368})
	b := search(t, g, Options{Tiles: 368})
	for i := range a.Finalists {
		if a.Finalists[i].Summary() != b.Finalists[i].Summary() {
			t.Fatalf("finalist %d differs:\n%s\n%s", i, a.Finalists[i].Summary(), b.Finalists[i].Summary())
		}
	}
}

func TestParetoRetention(t *testing.T) {
	mk := func(c int64, p int) *state { return &state{cycles: c, peak: p} }
	in := []*state{mk(100, 500), mk(90, 600), mk(120, 400), mk(95, 650), mk(130, 450), mk(80, 900), mk(100, 500)}
	// Front: 80/900, 90/600, 100/500, 120/400.
	got := pareto(append([]*state(nil), in...), 4)
	want := [][2]int{{80, 900}, {90, 600}, {100, 500}, {120, 400}}
	for i, w := range want {
		if got[i].cycles != int64(w[0]) || got[i].peak != w[1] {
			t.Fatalf("front[%d] = %d/%d, want %v", i, got[i].cycles, got[i].peak, w)
		}
	}
	// A wider beam keeps the whole front and fills with the cheapest
	// dominated states, ordered by cycles.
	got = pareto(append([]*state(nil), in...), 6)
	if len(got) != 6 {
		t.Fatalf("%d states", len(got))
	}
	front := 0
	for _, s := range got {
		for _, w := range want {
			if s.cycles == int64(w[0]) && s.peak == w[1] {
				front++
				break
			}
		}
	}
	if front < 4 {
		t.Errorf("front states lost: %d kept", front)
	}
	for i := 1; i < len(got); i++ {
		if got[i].cycles < got[i-1].cycles {
			t.Errorf("not ordered by cycles")
		}
	}
	// No kept front state is dominated by any input.
	for _, s := range got[:1] {
		for _, o := range in {
			if o.cycles < s.cycles && o.peak < s.peak {
				t.Errorf("%d/%d is dominated by %d/%d", s.cycles, s.peak, o.cycles, o.peak)
			}
		}
	}
}

func TestCheckerCatchesMissingData(t *testing.T) {
	g, err := graph.Preset("siglip-mlp-f16", graph.DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	p := search(t, g, Options{Tiles: 368, Finalists: 1}).Finalists[0]
	for si := range p.Stages {
		st := &p.Stages[si]
		if st.Kind != ExchangeStage || len(st.Transfers) == 0 {
			continue
		}
		saved := st.Transfers
		st.Transfers = saved[1:]
		if err := p.Check(); err == nil {
			t.Errorf("stage %s: dropping a transfer went unnoticed", st.Name)
		}
		st.Transfers = saved
	}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
}

// Biases are fused into their GEMM (add_bias_f16 on the block holder,
// before the GELU) and every finalist passes the data check.
func TestBiases(t *testing.T) {
	c := graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: 2, Biases: true}
	g, err := graph.MLPGraph(c, 1, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Search(g, ipu21.IPU21(), Options{Tiles: 64, Finalists: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range res.Finalists {
		if err := p.Check(); err != nil {
			t.Fatalf("finalist %d: %v", i, err)
		}
		for _, gp := range p.Gemms {
			if gp.Bias == nil || gp.Epilogue[0].Op != graph.OpAdd {
				t.Fatalf("finalist %d: %s: bias %v, epilogue %v", i, gp.Node.Name, gp.Bias, gp.Epilogue)
			}
		}
	}
}

func TestUnsupported(t *testing.T) {
	g, err := graph.MLPGraph(graph.DefaultMLP, 1, graph.GeluErf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Search(g, ipu21.IPU21(), Options{}); err == nil || !strings.Contains(err.Error(), "tanh") {
		t.Errorf("erf GELU: err = %v", err)
	}
}

func BenchmarkSearchSiglipMLP(b *testing.B) {
	g, err := graph.Preset("siglip-mlp-f16", graph.DefaultFlags())
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := Search(g, ipu21.IPU21(), Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Rebuild regenerates a finalist from its grids alone (what a package
// records), and rejects grids that are not candidates.
func TestRebuild(t *testing.T) {
	g, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: 2, Biases: true}, 1, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Search(g, ipu21.IPU21(), Options{Tiles: 64, Finalists: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range res.Finalists {
		var grids []Grid
		for _, gp := range p.Body() {
			grids = append(grids, gp.Grid())
		}
		q, err := Rebuild(g, ipu21.IPU21(), 64, grids, 1, p.Loop())
		if err != nil {
			t.Fatalf("finalist %d: %v", i, err)
		}
		if q.Summary() != p.Summary() {
			t.Fatalf("finalist %d rebuilt differs:\n%s\n%s", i, p.Summary(), q.Summary())
		}
	}
	for _, bad := range [][]Grid{
		{{1, 1, 1, false}}, // too few GEMMs
		{{1, 1, 1, false}, {1, 1, 1, false}, {1, 1, 1, false}, {1000, 1, 1, false}}, // more row blocks than rows
		{{0, 1, 1, false}, {1, 1, 1, false}, {1, 1, 1, false}, {1, 1, 1, false}},    // no row block
		{{8, 8, 8, false}, {8, 8, 8, false}, {8, 8, 8, false}, {8, 8, 8, false}},    // more cells than tiles
		{{1, 1, 1, true}, {1, 1, 1, false}, {1, 1, 1, false}, {1, 1, 1, false}},     // streamed, unrolled
	} {
		if _, err := Rebuild(g, ipu21.IPU21(), 64, bad, 1, 0); err == nil {
			t.Errorf("grids %v: no error", bad)
		}
	}
}

// A chain of repeated blocks is also planned as a runtime loop over its
// blocks: one block's stages on grids every block shares, every block's
// weights on the same tiles, the input where the block's last GEMM
// leaves its result. Bounded to the runtime's phases, the unrolled chain
// of four full-size blocks has no plan; its loop does.
func TestBlockLoop(t *testing.T) {
	for _, tc := range []struct {
		cfg       graph.MLPConfig
		tiles     int
		maxPhases int
		unrolled  bool // unrolled finalists exist too
	}{
		{graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 1152, Hidden: 4304, Blocks: 4}, 1472, 10, false},
		{graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: 3, Biases: true}, 64, 0, true},
		// 12 blocks' weights and 400 rows: only in row chunks, each
		// running every block (the blocks' loop inside the chunks').
		{graph.MLPConfig{Batch: 1, Tokens: 400, Dim: 128, Hidden: 256, Blocks: 12, Biases: true}, 4, 10, false},
	} {
		g, err := graph.MLPGraph(tc.cfg, 1, graph.GeluTanh)
		if err != nil {
			t.Fatal(err)
		}
		res := search(t, g, Options{Tiles: tc.tiles, MaxPhases: tc.maxPhases})
		checkResult(t, res, tc.tiles)
		loops, unrolled := 0, 0
		for i, p := range res.Finalists {
			phases := 0
			for _, st := range p.Stages {
				if st.Kind == ExchangeStage {
					phases++
				}
			}
			if tc.maxPhases > 0 && phases > tc.maxPhases {
				t.Errorf("%+v finalist %d: %d exchange phases, bound %d", tc.cfg, i, phases, tc.maxPhases)
			}
			if p.Period == 0 {
				unrolled++
				continue
			}
			loops++
			if p.Period != 2 || p.Repeat() != tc.cfg.Blocks || len(p.Gemms) != 2*tc.cfg.Blocks || len(p.Body()) != 2 {
				t.Fatalf("%+v finalist %d: period %d, %d blocks, %d GEMMs", tc.cfg, i, p.Period, p.Repeat(), len(p.Gemms))
			}
			for b, gp := range p.Gemms {
				body := p.Gemms[b%2]
				if gp.Rows != body.Rows || gp.Cols != body.Cols || gp.Inner != body.Inner {
					t.Fatalf("finalist %d: GEMM %d (%s) is not on its body GEMM's grid", i, b, gp.Node.Name)
				}
				if gp.Right != g.Node(fmt.Sprintf("block%d.fc%d.weight", b/2, b%2+1)) {
					t.Fatalf("finalist %d: GEMM %d has weight %s", i, b, gp.Right.Name)
				}
			}
			// The input is where the body's last GEMM leaves its result.
			if in := p.Formats[g.Inputs()[0].ID]; in.Order != AMPOut {
				t.Errorf("finalist %d: input order %v, want AMP output order", i, in.Order)
			}
			// One block's stages, run once per block (and chunk).
			var sum, once int64
			for _, st := range p.Stages {
				sum += st.Cycles
			}
			for _, st := range append(p.Prologue, p.Epilogue...) {
				once += st.Cycles
			}
			if (p.Chunks > 1) != (len(p.Prologue) == 1 && len(p.Epilogue) == 1) {
				t.Errorf("finalist %d: %d chunks, %d prologue and %d epilogue stages", i, p.Chunks, len(p.Prologue), len(p.Epilogue))
			}
			if p.Cycles != int64(p.Chunks)*(sum*int64(tc.cfg.Blocks)+once) {
				t.Errorf("finalist %d: %d cycles, %d chunks x (stages %d x %d blocks + %d)", i, p.Cycles, p.Chunks, sum, tc.cfg.Blocks, once)
			}
			if p.WeightBytes > res.Budget {
				t.Errorf("finalist %d: %d weight bytes per tile", i, p.WeightBytes)
			}
		}
		if loops == 0 {
			t.Fatalf("%+v: no looped finalist", tc.cfg)
		}
		if (unrolled > 0) != tc.unrolled {
			t.Errorf("%+v: %d unrolled finalists", tc.cfg, unrolled)
		}
	}
}

// Every block's weights count: so400m's 27 MLP blocks (535 MB of weights)
// do not fit 368 tiles (230 MB of memory), and the error says so for the
// loop too. (On 1472 tiles the planner finds streamed loops in row
// chunks; the driver's TestMLPStreamedWeights builds one.)
func TestBlockLoopMemory(t *testing.T) {
	g, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 1152, Hidden: 4304, Blocks: 27}, 1, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Search(g, ipu21.IPU21(), Options{Tiles: 368, MaxPhases: 10})
	if err == nil || !strings.Contains(err.Error(), "as a runtime loop over 27 blocks") {
		t.Fatalf("27 blocks on 368 tiles: err %v, want a memory error naming the loop", err)
	}
}

// A block loop's plan rebuilt from one block's grids is the searched one.
func TestRebuildLoop(t *testing.T) {
	g, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: 3, Biases: true}, 1, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	res := search(t, g, Options{Tiles: 64})
	n := 0
	for i, p := range res.Finalists {
		if p.Period == 0 {
			continue
		}
		n++
		var grids []Grid
		for _, gp := range p.Body() {
			grids = append(grids, gp.Grid())
		}
		q, err := Rebuild(g, ipu21.IPU21(), 64, grids, 1, p.Repeat())
		if err != nil {
			t.Fatalf("finalist %d: %v", i, err)
		}
		if q.Summary() != p.Summary() || q.Cycles != p.Cycles || q.Period != p.Period {
			t.Fatalf("finalist %d rebuilt differs:\n%s\n%s", i, p.Summary(), q.Summary())
		}
		if err := q.Check(); err != nil {
			t.Fatal(err)
		}
		// One block's grids for a loop over a count that does not divide
		// the chain, or all blocks' grids with a loop count, are refused.
		if _, err := Rebuild(g, ipu21.IPU21(), 64, grids, 1, 2); err == nil {
			t.Errorf("loop over 2 of 3 blocks: no error")
		}
		if _, err := Rebuild(g, ipu21.IPU21(), 64, append(append(grids, grids...), grids...), 1, 3); err == nil {
			t.Errorf("every block's grids with loop=3: no error")
		}
	}
	if n == 0 {
		t.Fatal("no looped finalist")
	}
}

// A chain looped over its one block in row chunks (Loop 1) rebuilds to
// the plan the search made, cost record included: the body's result is
// not unpacked in either (loopBody), which Rebuild once missed.
func TestRebuildChunkLoop(t *testing.T) {
	g, err := graph.MLPGraph(graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 256, Hidden: 1024, Blocks: 1}, 1, graph.GeluTanh)
	if err != nil {
		t.Fatal(err)
	}
	res := search(t, g, Options{Tiles: 4})
	n := 0
	for i, p := range res.Finalists {
		if p.Loop() != 1 || p.Chunks < 2 {
			continue
		}
		n++
		var grids []Grid
		for _, gp := range p.Body() {
			grids = append(grids, gp.Grid())
		}
		q, err := Rebuild(g, ipu21.IPU21(), 4, grids, p.Chunks, p.Loop())
		if err != nil {
			t.Fatalf("finalist %d: %v", i, err)
		}
		if q.Summary() != p.Summary() || q.Cycles != p.Cycles || q.Estimate() != p.Estimate() {
			t.Fatalf("finalist %d rebuilt differs:\n%s%+v\n%s%+v", i, p.Summary(), p.Estimate(), q.Summary(), q.Estimate())
		}
		if err := q.Check(); err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatal("no finalist looped over its one block in row chunks")
	}
}
