package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateProfiles = flag.Bool("update", false, "rewrite testdata/profiles/*.prof")

// What a run of a package file must not log: the build's stages and the
// planner's and the scheduler's lines.
var planningLine = regexp.MustCompile(`stage=|construct_|mid plan|mid finalist|costed|exchange optimization|scheduled|schedule[ds]? phase|low pass`)

// A package describes itself: `ipu run FILE --profile` neither plans nor
// schedules (no such line in its log), and its profile is byte for byte
// the golden one. The goldens were written by the compiler as it was
// before packages described themselves (commit 406ff93, whose run side
// re-planned the recipe and re-placed and re-scheduled every phase for
// the profile), on an MLP, an MLP with two blocks and biases, and a GEMM
// (since rewritten for the GEMM's mid plan, at the same cycles, and for
// the runtime loop over blocks); -update rewrites them. The same workload
// built and run in one process (`ipu run --workload ...`) gives the same
// profile too.
func TestRunFileProfileGolden(t *testing.T) {
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	for _, c := range []struct {
		golden string
		flags  []string
	}{
		{"mlp-t50-d64-h96-tiles16", []string{"--workload", "mlp", "--tokens", "50", "--dim", "64", "--hidden", "96", "--tiles", "16"}},
		{"mlp-t50-d64-h96-n2-bias-tiles4", []string{"--workload", "mlp", "--tokens", "50", "--dim", "64", "--hidden", "96", "--tiles", "4", "--blocks", "2", "--biases"}},
		{"gemm-m100-k200-n300-tiles128", []string{"--workload", "gemm", "--m", "100", "--k", "200", "--n", "300", "--tiles", "128"}},
	} {
		t.Run(c.golden, func(t *testing.T) {
			dir := t.TempDir()
			pkg, prof := filepath.Join(dir, "w.ipuexe"), filepath.Join(dir, "file.prof")
			if code, out, errs := ipu(t, append([]string{"build", "-o", pkg}, c.flags...)...); code != 0 {
				t.Fatalf("build: exit %d\n%s\n%s", code, out, errs)
			}
			code, out, errs := ipu(t, "run", pkg, "--profile", prof)
			if code != 0 || !strings.Contains(out, "numericalTest=PASS") {
				t.Fatalf("run FILE: exit %d\n%s\n%s", code, out, errs)
			}
			for _, line := range strings.Split(errs, "\n") {
				if planningLine.MatchString(line) {
					t.Errorf("ipu run FILE plans or schedules: %s", line)
				}
			}
			got, err := os.ReadFile(prof)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "profiles", c.golden+".prof")
			if *updateProfiles {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("profile of the package file differs from %s (ipu profile diff %s NEW shows how)", golden, golden)
			}
			prof2 := filepath.Join(dir, "build.prof")
			if code, out, errs := ipu(t, append([]string{"run", "--profile", prof2}, c.flags...)...); code != 0 {
				t.Fatalf("build and run: exit %d\n%s\n%s", code, out, errs)
			}
			got2, err := os.ReadFile(prof2)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, got2) {
				t.Error("building and running in one process gives another profile than running the package file")
			}
		})
	}
}
