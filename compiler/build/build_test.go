package build

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/kernels"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func gemmRecipe(m, k, n, tiles int) Recipe {
	f := graph.DefaultFlags()
	f.Gemm = graph.GemmConfig{M: m, K: k, N: n}
	return Recipe{Workload: "gemm", Flags: f, Tiles: tiles}
}

func mlpRecipe(tokens, dim, hidden, tiles int) Recipe {
	f := graph.DefaultFlags()
	f.MLP = graph.MLPConfig{Batch: 1, Tokens: tokens, Dim: dim, Hidden: hidden, Blocks: 1}
	return Recipe{Workload: "mlp", Flags: f, Tiles: tiles}
}

func compile(t *testing.T, r Recipe) *Result {
	t.Helper()
	res, err := Compile(context.Background(), Config{Recipe: r, Logger: quiet, CompilerVersion: "test"})
	if err != nil {
		t.Fatalf("compile %+v: %v", r, err)
	}
	return res
}

// buildAndRun compiles r, passes the package through its file format and
// runs it on the emulator.
func buildAndRun(t *testing.T, r Recipe) *Metrics {
	t.Helper()
	res := compile(t, r)
	data, err := res.Package.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Fatal("empty package")
	}
	// Run from the recipe stored in the package, as `ipu run FILE` does.
	rr, err := RecipeOf(res.Package)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Run(context.Background(), res.Package, rr, nil, nil, RunOptions{Logger: quiet,
		DeviceOptions: device.Options{NoLock: true}})
	if err != nil {
		t.Fatalf("run %+v: %v", r, err)
	}
	if m.NumericalTest != "PASS" {
		t.Fatalf("%+v: %s", r, m.Line())
	}
	if m.Cycles == 0 || m.EfficiencyPercent <= 0 || m.EfficiencyPercent > 100 {
		t.Fatalf("%+v: implausible metrics %s", r, m.Line())
	}
	t.Log(m.Line())
	return m
}

func TestGemmSmallShapes(t *testing.T) {
	for _, r := range []Recipe{
		gemmRecipe(64, 64, 64, 4),
		gemmRecipe(50, 40, 70, 16), // nothing a multiple of 16
		gemmRecipe(33, 17, 100, 8), // padded K and N
		gemmRecipe(1, 16, 16, 4),   // a single row
		gemmRecipe(100, 200, 300, 64),
		gemmRecipe(129, 48, 33, 64),
	} {
		t.Run(r.Flags.Gemm.Name()+"-t"+itoa(r.Tiles), func(t *testing.T) { buildAndRun(t, r) })
	}
}

func TestMLPSmall(t *testing.T) {
	for _, r := range []Recipe{
		mlpRecipe(50, 64, 96, 16),
		mlpRecipe(77, 72, 200, 64), // non-multiples of 16
		mlpRecipe(20, 32, 48, 1),   // one tile: no exchange at all
		mlpRecipe(64, 128, 512, 64),
	} {
		t.Run(r.Flags.MLP.Name()+"-t"+itoa(r.Tiles), func(t *testing.T) { buildAndRun(t, r) })
	}
}

// The MLP tests must exercise the reduce-scatter (grid columns > 1).
func TestMLPUsesReduceScatter(t *testing.T) {
	for _, r := range []Recipe{mlpRecipe(77, 72, 200, 64), mlpRecipe(64, 128, 512, 64)} {
		if g := compile(t, r).Plan.Grid; g.C < 2 || g.R < 2 {
			t.Errorf("%+v: grid %dx%d, want at least 2x2", r.Flags.MLP, g.R, g.C)
		}
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// TestDeterministic: the same recipe gives byte-identical packages whatever
// GOMAXPROCS and the kernel cache state.
func TestDeterministic(t *testing.T) {
	r := mlpRecipe(77, 72, 200, 64)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	a, err := compile(t, r).Package.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(2)
	cache := kernels.Cache{Dir: t.TempDir()}
	for i := 0; i < 2; i++ { // cold, then warm cache
		res, err := Compile(context.Background(), Config{Recipe: r, Logger: quiet, CompilerVersion: "test", Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		b, err := res.Package.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("build %d differs from the GOMAXPROCS=1 build (%d vs %d bytes)", i, len(b), len(a))
		}
	}
}

func TestUnsupportedAndBadRecipes(t *testing.T) {
	f := graph.DefaultFlags()
	f.MLP = graph.MLPConfig{Batch: 1, Tokens: 8, Dim: 16, Hidden: 16, Blocks: 2}
	blocks := Recipe{Workload: "mlp", Flags: f, Tiles: 4}
	f.MLP.Blocks, f.MLP.Biases = 1, true
	biases := Recipe{Workload: "mlp", Flags: f, Tiles: 4}
	for _, c := range []struct {
		r    Recipe
		want string
	}{
		{blocks, "not supported yet"},
		{biases, "not supported yet"},
		{gemmRecipe(0, 16, 16, 4), "--m must be positive"},
		{gemmRecipe(16, -1, 16, 4), "--k must be positive"},
		{gemmRecipe(16, 16, 16, 0), "--tiles must be 1..1472"},
		{gemmRecipe(16, 16, 16, 1473), "--tiles must be 1..1472"},
		{Recipe{Workload: "nosuch", Flags: graph.DefaultFlags(), Tiles: 4}, `unknown workload "nosuch"`},
		// Too big for one tile.
		{gemmRecipe(768, 1152, 4304, 1), "does not fit"},
	} {
		_, err := Compile(context.Background(), Config{Recipe: c.r, Logger: quiet})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got error %v, want %q", c.r, err, c.want)
		}
	}
}

func TestMetricsLineKeys(t *testing.T) {
	m := &Metrics{Workload: "w", NumericalTest: "PASS", Device: "emu"}
	var keys []string
	for _, kv := range strings.Fields(m.Line()) {
		keys = append(keys, strings.SplitN(kv, "=", 2)[0])
	}
	want := "workload tiles activeTiles cycles minimumTileCycles deviceMicroseconds effectiveGemmTflops peakTflops efficiencyPercent maximumAbsoluteError numericalTest device inputBytes weightBytes"
	if got := strings.Join(keys, " "); got != want {
		t.Fatalf("keys %q, want %q", got, want)
	}
}

// TestSiglipFullChip builds and runs the default workload on all 1472
// tiles (about 7 s and 2 GB on a 2-core machine; skipped with -short).
func TestSiglipFullChip(t *testing.T) {
	if testing.Short() {
		t.Skip("full-chip SigLIP MLP run")
	}
	r := Recipe{Workload: "siglip-mlp-f16", Flags: graph.DefaultFlags(), Tiles: 1472}
	m := buildAndRun(t, r)
	if m.ActiveTiles < 1400 || m.EfficiencyPercent < 30 {
		t.Errorf("v0 regressed: %s", m.Line())
	}
}
