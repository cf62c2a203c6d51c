package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var metricKeys = strings.Fields("workload tiles activeTiles cycles minimumTileCycles deviceMicroseconds " +
	"effectiveGemmTflops peakTflops efficiencyPercent maximumAbsoluteError numericalTest device inputBytes weightBytes")

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
	if !strings.Contains(errs, "row_chunks=") || !strings.Contains(errs, "blocks=2") {
		t.Errorf("the plan log lacks the fit choices:\n%s", errs)
	}
}
