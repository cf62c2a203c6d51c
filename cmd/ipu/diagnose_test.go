package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/internal/diag"
)

func runDiagnose(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	var out, errb bytes.Buffer
	code := run(append([]string{"diagnose", "--log-level", "warn"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestDiagnose64(t *testing.T) {
	code, out, errs := runDiagnose(t, "--tiles", "64")
	if code != 0 || !strings.HasPrefix(out, "PASS tiles=64 ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

func TestDiagnoseFullChip(t *testing.T) {
	// The whole chip takes well under a second on the emulator.
	code, out, errs := runDiagnose(t)
	if code != 0 || !strings.HasPrefix(out, "PASS tiles=1472 ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

func TestDiagnoseSmallChips(t *testing.T) {
	for _, n := range []string{"1", "2", "7", "31", "33"} {
		if code, out, errs := runDiagnose(t, "--tiles", n); code != 0 || !strings.HasPrefix(out, "PASS") {
			t.Fatalf("--tiles %s: exit %d\n%s%s", n, code, out, errs)
		}
	}
}

func TestDiagnoseReportsDifferences(t *testing.T) {
	diagnoseTamper = func(d *diag.Diagnostic) {
		// Expect wrong values: one word on tile 3 and the weight words of
		// every tile, far more than the report prints.
		d.Expected[3*diag.ResultsBytes+4*diag.WordSupervisor] ^= 0xFF
		for l := 0; l < d.N; l++ {
			d.Expected[l*diag.ResultsBytes+4*diag.WordWeight] ^= 1
		}
	}
	defer func() { diagnoseTamper = nil }()
	code, out, errs := runDiagnose(t, "--tiles", "64")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != maxDiagnoseLines+2 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), maxDiagnoseLines+2, out)
	}
	if !regexp.MustCompile(`^tile 0 \(physical 0\) weight word 0 at 0x60060: expected 0x[0-9a-f]{8}, got 0x[0-9a-f]{8}$`).MatchString(lines[0]) {
		t.Errorf("first line: %q", lines[0])
	}
	if !strings.Contains(out, "tile 3 (physical 66) supervisor signature at 0x6000c: expected 0x5ee000fc, got 0x5ee00003") {
		t.Errorf("the tampered supervisor word is not reported:\n%s", out)
	}
	if !strings.Contains(out, "... and 45 more differences (65 in all)") || !strings.HasPrefix(lines[len(lines)-1], "FAIL 65 differences") {
		t.Errorf("no count of the rest:\n%s", out)
	}
}

func TestDiagnoseBadArguments(t *testing.T) {
	if code, _, errs := runDiagnose(t, "--tiles", "0"); code != 1 || !strings.Contains(errs, "tile count 0") {
		t.Fatalf("--tiles 0: exit %d: %s", code, errs)
	}
	if code, _, errs := runDiagnose(t, "--tiles", "1473"); code != 1 || !strings.Contains(errs, "want 1..1472") {
		t.Fatalf("--tiles 1473: exit %d: %s", code, errs)
	}
	if code, _, errs := runDiagnose(t, "--device", "pcie0"); code != 1 || !strings.Contains(errs, `unknown device "pcie0"`) ||
		!strings.Contains(errs, "hardware backends are not built; use --device emu") {
		t.Fatalf("--device pcie0: exit %d: %s", code, errs)
	}
}
