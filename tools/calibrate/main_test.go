package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/asm"
)

// ownGemm is a kernel of our own with the reference GEMM's calling
// convention (m2 output, m10 return, m11 stack) and -D names: the
// supervisor does one sync 2 + runall per K16/C16 step, and worker w adds
// one to output word w per step, so the output proves the defines, the
// registers and the runs all arrived.
const ownGemm = `
	.set STEPS, (GEMM_INNER_BLOCK_DIMENSION / 16) * (GEMM_OUTPUT_COLUMNS / 16)
	.section .text.calib_own, "ax"
	.globl GEMM_INIT_SMALL_SYMBOL
	.type GEMM_INIT_SMALL_SYMBOL, @function
GEMM_INIT_SMALL_SYMBOL:
	.supervisor
	add $m11, $m11, -8
	st32 $m2, $m11, $m15, 0
	setzi $m6, STEPS
	setzi $m0, .Lworker
.Lstep:
	sync 2
	runall $m0, $m11, 0
	add $m6, $m6, -1
	brnz $m6, .Lstep
	sync 2
	add $m11, $m11, 8
	br $m10
	.size GEMM_INIT_SMALL_SYMBOL, .-GEMM_INIT_SMALL_SYMBOL
	.worker
	.p2align 3
.Lworker:
	ld32 $m1, $mvertex_base, $m15, 0
	get $m5, $WSR
	and $m5, $m5, 7
	shl $m5, $m5, 2
	ld32 $m3, $m1, $m5, 0
	add $m3, $m3, 1
	st32 $m3, $m1, $m5, 0
	exitz $m15
`

func writeOwn(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gemm_f16_amp.S"), []byte(ownGemm), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOwnKernelFollowsTheCallingConvention(t *testing.T) {
	dir := writeOwn(t)
	for _, f := range figures {
		src, _ := os.ReadFile(filepath.Join(dir, f.source))
		obj, err := asm.Assemble(f.source, src, asm.Options{Defines: f.defines})
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		// The fills would overwrite the counters' start values: zero them.
		f.fills = nil
		cycles, tile, err := runCall(obj, f)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		k, _ := atoi(f.defines["GEMM_INNER_BLOCK_DIMENSION"])
		c, _ := atoi(f.defines["GEMM_OUTPUT_COLUMNS"])
		steps := uint32(k / 16 * (c / 16))
		for w := uint32(0); w < 6; w++ {
			got, err := tile.ReadWord(outputBase + 4*w)
			if err != nil || got != steps {
				t.Errorf("%s: worker %d counted %d steps (%v), want %d", f.name, w, got, err, steps)
			}
		}
		// Each step costs at least the launch of a worker and its seven
		// bundles at one per 6 cycles.
		if cycles < uint64(steps)*(25+6*7) {
			t.Errorf("%s: %d cycles for %d steps", f.name, cycles, steps)
		}
	}
}

func atoi(s string) (int, error) {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n, nil
}

func TestRunPrintsTheTable(t *testing.T) {
	dir := writeOwn(t)
	var out, errb bytes.Buffer
	if code := run([]string{dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(figures)+2 || !strings.HasPrefix(lines[0], "figure") || !strings.HasPrefix(lines[len(lines)-1], "figures=") {
		t.Fatalf("table:\n%s", out.String())
	}
	// Deterministic: a second run prints the same bytes.
	var again bytes.Buffer
	run([]string{dir}, &again, &errb)
	if again.String() != out.String() {
		t.Fatal("two runs printed different tables")
	}
}

func TestMissingSourceIsAClearError(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	if code := run([]string{dir}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	want := filepath.Join(dir, "gemm_f16_amp.S")
	if !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "osmarks/ipu-stack") {
		t.Fatalf("error %q does not name %s and where to get it", errb.String(), want)
	}
}

func TestBadSourceNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "gemm_f16_amp.S"), []byte("\tnotaninstruction $m1\n"), 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{dir}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "gemm_f16_amp.S:1") {
		t.Fatalf("exit %d, error %q", code, errb.String())
	}
}

func TestUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "usage") {
		t.Fatalf("exit %d, %q", code, errb.String())
	}
}
