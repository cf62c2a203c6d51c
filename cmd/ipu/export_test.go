package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/ipustack/ipustack/ipuexe"
)

// TestBuildExportExchange: `ipu build --export-exchange DIR` writes one
// snapshot per exchange phase that `ipu exchange bench` reads back, and the
// package records its recipe.
func TestBuildExportExchange(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	pkg := filepath.Join(dir, "g.ipuexe")
	snaps := filepath.Join(dir, "snaps")
	code, _, errs := ipu(t, "build", "--workload", "gemm", "--m", "64", "--k", "64", "--n", "64", "--tiles", "4",
		"--export-exchange", snaps, "-o", pkg)
	if code != 0 {
		t.Fatalf("build: %s", errs)
	}
	files, err := filepath.Glob(filepath.Join(snaps, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no snapshots written: %v", err)
	}
	for _, f := range files {
		if _, err := exchange.ReadSnapshotFile(f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	code, out, errs := ipu(t, append([]string{"exchange", "bench"}, files...)...)
	if code != 0 || !strings.Contains(out, "bound") {
		t.Fatalf("bench: exit %d\n%s\n%s", code, out, errs)
	}
	data, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ipuexe.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Recipe, `"workload":"gemm"`) {
		t.Errorf("recipe %q", p.Recipe)
	}
	// A build whose output directory does not exist fails before compiling.
	code, _, errs = ipu(t, "build", "--workload", "gemm", "--m", "64", "--k", "64", "--n", "64", "--tiles", "4",
		"-o", filepath.Join(dir, "nodir", "x.ipuexe"))
	if code == 0 || !strings.Contains(errs, "nodir") {
		t.Fatalf("missing output directory: exit %d, %s", code, errs)
	}
}
