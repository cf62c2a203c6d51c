package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// --conservative builds the drained GEMM kernel, records it in the package
// and runs the emulator with the conservative assumptions; a package built
// for the default set is refused under --conservative rather than run to a
// wrong answer.
func TestRunConservative(t *testing.T) {
	dir := t.TempDir()
	small := []string{"--no-kernel-cache", "--workload", "mlp", "--tokens", "50", "--dim", "64", "--hidden", "96", "--tiles", "16"}
	code, out, errs := ipu(t, append([]string{"run", "--conservative"}, small...)...)
	if code != 0 || !strings.Contains(out, "numericalTest=PASS") || !strings.Contains(out, "assumptions=conservative") {
		t.Fatalf("run --conservative: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = ipu(t, append([]string{"run"}, small...)...)
	if code != 0 || !strings.Contains(out, "assumptions=amp-state-retained") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	def := filepath.Join(dir, "default.ipuexe")
	if code, _, errs := ipu(t, append([]string{"build", "-o", def}, small...)...); code != 0 {
		t.Fatalf("build: %s", errs)
	}
	code, _, errs = ipu(t, "run", def, "--conservative")
	if code == 0 || !strings.Contains(errs, "built for assumptions=amp-state-retained") || !strings.Contains(errs, "build it with --conservative") {
		t.Fatalf("run default package --conservative: exit %d, %s", code, errs)
	}
	cons := filepath.Join(dir, "conservative.ipuexe")
	if code, _, errs := ipu(t, append([]string{"build", "--conservative", "-o", cons}, small...)...); code != 0 {
		t.Fatalf("build --conservative: %s", errs)
	}
	// A conservative package is correct under both sets.
	for _, extra := range [][]string{nil, {"--conservative"}} {
		code, out, errs := ipu(t, append([]string{"run", cons}, extra...)...)
		if code != 0 || !strings.Contains(out, "numericalTest=PASS") {
			t.Fatalf("run conservative package %v: exit %d\n%s%s", extra, code, out, errs)
		}
	}
}
