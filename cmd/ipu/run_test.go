package main

import (
	"encoding/json"
	"fmt"
	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/profile"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var metricKeys = strings.Fields("workload tiles activeTiles cycles minimumTileCycles deviceMicroseconds " +
	"effectiveGemmTflops peakTflops efficiencyPercent maximumAbsoluteError numericalTest device inputBytes weightBytes data assumptions")

func metricsOf(t *testing.T, line string) map[string]string {
	t.Helper()
	m := map[string]string{}
	var keys []string
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("metrics line %q: %q is not key=value", line, kv)
		}
		m[k] = v
		keys = append(keys, k)
	}
	if strings.Join(keys, " ") != strings.Join(metricKeys, " ") {
		t.Fatalf("metrics keys %v, want %v", keys, metricKeys)
	}
	return m
}

func TestRunGemm(t *testing.T) {
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	code, out, errs := ipu(t, "run", "--no-kernel-cache", "--workload", "gemm", "--m", "64", "--k", "64", "--n", "64", "--tiles", "4")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("want exactly one line on stdout, got %q", out)
	}
	m := metricsOf(t, strings.TrimSpace(out))
	if m["numericalTest"] != "PASS" || m["workload"] != "gemm-f16-m64-k64-n64" || m["tiles"] != "4" || m["device"] != "emu" {
		t.Errorf("metrics %v", m)
	}
	if m["inputBytes"] != "8192" || m["weightBytes"] != "8192" || m["peakTflops"] != "0.768" {
		t.Errorf("metrics %v", m)
	}
	for _, want := range []string{"stage=construct_low", "stage=lower_exchanges", "stage=build_tile_images", "busy_ms="} {
		if !strings.Contains(errs, want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

func TestBuildThenRunFileJSON(t *testing.T) {
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	dir := t.TempDir()
	pkg := filepath.Join(dir, "mlp.ipuexe")
	args := []string{"build", "--no-kernel-cache", "--workload", "mlp", "--tokens", "50", "--dim", "64", "--hidden", "96", "--tiles", "16", "-o", pkg}
	if code, out, errs := ipu(t, args...); code != 0 {
		t.Fatalf("build: exit %d\n%s\n%s", code, out, errs)
	}
	a, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	// A second build is byte-identical.
	pkg2 := filepath.Join(dir, "mlp2.ipuexe")
	args[len(args)-1] = pkg2
	if code, _, errs := ipu(t, args...); code != 0 {
		t.Fatal(errs)
	}
	if b, _ := os.ReadFile(pkg2); string(a) != string(b) {
		t.Fatal("two builds differ")
	}
	code, out, errs := ipu(t, "run", pkg, "--json")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("--json output %q: %v", out, err)
	}
	for _, k := range metricKeys {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out)
		}
	}
	if m["numericalTest"] != "PASS" || m["workload"] != "siglip-mlp-f16-b1-t50-d64-h96-n1" {
		t.Errorf("metrics %s", out)
	}
	// Shape flags do not combine with a package file.
	if code, _, errs := ipu(t, "run", pkg, "--tiles", "4"); code == 0 || !strings.Contains(errs, "a package file carries its own workload") {
		t.Errorf("run FILE --tiles: exit %d, %s", code, errs)
	}
	// Global flags do: they are not build flags.
	if code, _, errs := ipu(t, "run", pkg, "--log-level", "warn"); code != 0 || strings.Contains(errs, "level=INFO") {
		t.Errorf("run FILE --log-level warn: exit %d, %s", code, errs)
	}
}

func TestBuildRunBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.ipuexe")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"build", "--workload", "gemm", "--m", "0", "-o", out}, "--m must be positive"},
		{[]string{"build", "--workload", "gemm", "--k", "-3", "-o", out}, "--k must be positive"},
		{[]string{"build", "--workload", "mlp", "--hidden", "0", "-o", out}, "--hidden must be positive"},
		{[]string{"build", "--workload", "nosuch", "-o", out}, `unknown workload "nosuch"`},
		{[]string{"build", "--tiles", "1473", "-o", out}, "--tiles must be 1..1472"},
		{[]string{"build", "--tiles", "0", "-o", out}, "--tiles must be 1..1472"},
		{[]string{"build", "--workload", "gemm"}, "-o FILE.ipuexe is required"},
		{[]string{"build", "--workload", "mlp", "--blocks", "1000", "--tokens", "8", "--dim", "1024", "--hidden", "1024", "--tiles", "4", "-o", out}, "does not fit"},
		{[]string{"build", "--workload", "mlp", "--batch", "0", "-o", out}, "--batch must be positive"},
		{[]string{"build", "--target", "ipu9", "-o", out}, "unknown target"},
		{[]string{"build", "--workload", "encoder", "--heads", "7", "-o", out}, "--heads 7 does not divide --dim 1152"},
		{[]string{"build", "--workload", "siglip-encoder-layer", "--layers", "0", "-o", out}, "--layers must be positive"},
		// The encoder layer is planned but not lowered: the build says
		// what it planned, or what does not fit where.
		{[]string{"build", "--workload", "encoder", "--tokens", "50", "--dim", "64", "--heads", "4", "--hidden", "96", "-o", out},
			`siglip-encoder-layer-f16-b1-t50-d64-a4-h96-l1 on 1472 tiles: planned (`},
		{[]string{"build", "--workload", "encoder", "--tokens", "50", "--dim", "64", "--heads", "4", "--hidden", "96", "-o", out},
			`but the lowering of the encoder layer to tile programs is not built yet`},
		{[]string{"build", "--workload", "encoder", "--tiles", "16", "-o", out},
			`on 16 tiles: does not fit: mid: encoder: 0.self_attn.q_proj (729x1152x1280) does not fit: on 16 tiles its smallest grid needs`},
		{[]string{"build", "--workload", "encoder", "--layers", "2", "--tokens", "50", "--dim", "64", "--heads", "4", "--hidden", "96", "-o", out},
			`not supported yet: mid: encoder: only one layer is planned`},
		{[]string{"run", "--workload", "gemm", "--n", "-1"}, "--n must be positive"},
		{[]string{"run", "--tiles", "5000"}, "--tiles must be 1..1472"},
		{[]string{"run", filepath.Join(t.TempDir(), "missing.ipuexe")}, "no such file"},
	} {
		code, _, errs := ipu(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
		if strings.Contains(errs, "panic") {
			t.Errorf("%v panicked: %s", c.args, errs)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed build wrote its output")
	}
}

// TestRunMLPBlocksBiases: a chain of blocks with biases, shapes not
// multiples of 16, through the CLI.
func TestRunMLPBlocksBiases(t *testing.T) {
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	code, out, errs := ipu(t, "run", "--no-kernel-cache", "--workload", "mlp", "--blocks", "2", "--biases",
		"--batch", "2", "--tokens", "37", "--dim", "72", "--hidden", "150", "--tiles", "32")
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	m := metricsOf(t, strings.TrimSpace(out))
	if m["numericalTest"] != "PASS" || m["workload"] != "siglip-mlp-f16-b2-t37-d72-h150-n2-bias" {
		t.Errorf("metrics %v", m)
	}
	// 2 x (72x150 + 150x72 + 150 + 72) f16 values.
	if m["weightBytes"] != "87288" {
		t.Errorf("weightBytes %s", m["weightBytes"])
	}
	// The chosen plan's line: the grid of every GEMM of both blocks, or of
	// one block and the blocks looped.
	unrolled := strings.Contains(errs, "block1.fc2=")
	looped := strings.Contains(errs, "block0.fc2=") && strings.Contains(errs, "blocks_looped=2")
	if !strings.Contains(errs, `msg="mid plan"`) || (!unrolled && !looped) {
		t.Errorf("the plan log lacks the plan's choices:\n%s", errs)
	}
}

// ipu run --profile writes a real profile: it validates (profile query
// reads it), its per-kind totals add up to the run's cycles and its steps
// name the kernels and graph operations.
func TestRunProfile(t *testing.T) {
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	prof := filepath.Join(t.TempDir(), "mlp.prof")
	code, out, errs := ipu(t, "run", "--no-kernel-cache", "--workload", "mlp", "--tokens", "50", "--dim", "64", "--hidden", "96",
		"--tiles", "16", "--profile", prof)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	line := map[string]string{}
	var keys []string
	for _, kv := range strings.Fields(out) {
		k, v, _ := strings.Cut(kv, "=")
		line[k] = v
		keys = append(keys, k)
	}
	if want := strings.Join(append(append([]string(nil), metricKeys...), "profile", "samples"), " "); strings.Join(keys, " ") != want {
		t.Fatalf("metrics keys %v, want %s", keys, want)
	}
	if line["profile"] != prof || line["samples"] == "0" || line["numericalTest"] != "PASS" {
		t.Fatalf("metrics %v", line)
	}
	var cycles, minCycles, active uint64
	for k, p := range map[string]*uint64{"cycles": &cycles, "minimumTileCycles": &minCycles, "activeTiles": &active} {
		if _, err := fmt.Sscan(line[k], p); err != nil {
			t.Fatal(err)
		}
	}

	// The plan summary carries the finalist rerank, one of them chosen.
	pf, err := profile.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	chosen := 0
	for _, f := range pf.Plan.Finalists {
		if f.Chosen {
			chosen++
		}
	}
	if len(pf.Plan.Finalists) == 0 || chosen != 1 {
		t.Errorf("plan finalists %+v: want some, exactly one chosen", pf.Plan.Finalists)
	}
	code, out, errs = ipu(t, "profile", "query", prof, "--group-by", "kind", "--json")
	if code != 0 {
		t.Fatalf("query: exit %d\n%s\n%s", code, out, errs)
	}
	var r struct {
		Tiles  int    `json:"tiles"`
		Cycles uint64 `json:"cycles"`
		Groups []struct {
			Key        string `json:"key"`
			Tiles      int    `json:"tiles"`
			WorkCycles uint64 `json:"workCycles"`
		} `json:"groups"`
		Total struct {
			WorkCycles uint64 `json:"workCycles"`
		} `json:"total"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("query --json %q: %v", out, err)
	}
	// The profile's span runs from the earliest tile's run.start to the
	// latest run.end: the run's longest tile span plus the skew of the
	// tiles' starts (each starts after copying its last piece of the input
	// from the host window: at most one slot's copy).
	skew := uint64(cost.CopyF16(tile.SlotSize))
	if r.Tiles != 16 || r.Cycles < cycles || r.Cycles > cycles+skew {
		t.Fatalf("profile of %d tiles, %d cycles; the run: 16 tiles, %d cycles", r.Tiles, r.Cycles, cycles)
	}
	var busy, sum uint64
	kinds := map[string]bool{}
	for _, g := range r.Groups {
		sum += g.WorkCycles
		kinds[g.Key] = true
		if g.Key != "idle" {
			busy += g.WorkCycles
		}
	}
	if sum != r.Total.WorkCycles || sum != r.Cycles*16 {
		t.Errorf("kind totals %d (total %d), want cycles x tiles = %d", sum, r.Total.WorkCycles, r.Cycles*16)
	}
	// Every active tile's steps cover its span run.start..run.end: the
	// busy work lies between active x minimum and active x maximum span.
	if busy < active*minCycles || busy > active*cycles {
		t.Errorf("busy work %d not within [%d, %d]", busy, active*minCycles, active*cycles)
	}
	for _, k := range []string{"compute", "exchange", "sync"} {
		if !kinds[k] {
			t.Errorf("no %s steps: %s", k, out)
		}
	}

	code, out, errs = ipu(t, "profile", "query", prof, "--group-by", "kernel")
	if code != 0 {
		t.Fatalf("query: exit %d\n%s", code, errs)
	}
	for _, k := range []string{"gemm_f16", "gelu_f16", "copy_f16"} {
		if !strings.Contains(out, k) {
			t.Errorf("kernel query lacks %s:\n%s", k, out)
		}
	}
	code, out, _ = ipu(t, "profile", "query", prof, "--group-by", "operation")
	if code != 0 || !strings.Contains(out, "block0.fc1") || !strings.Contains(out, "block0.fc2") || !strings.Contains(out, "block0.gelu") {
		t.Errorf("operation query:\n%s", out)
	}
}
