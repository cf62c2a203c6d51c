package main

import (
	"bytes"
	"fmt"
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

// ownEcho is a kernel of our own for the single-call conventions (reduce,
// GELU, softmax, merge): the supervisor stores m3-m8 to output words 0-5
// and returns through m10, so the test sees which registers the tool set.
// ENTRY is replaced by the entry symbol, or by the -D macro naming it.
const ownEcho = `
	.section .text.calib_echo, "ax"
	.globl ENTRY
	.type ENTRY, @function
ENTRY:
	.supervisor
	st32 $m3, $m2, $m15, 0
	st32 $m4, $m2, $m15, 1
	st32 $m5, $m2, $m15, 2
	st32 $m6, $m2, $m15, 3
	st32 $m7, $m2, $m15, 4
	st32 $m8, $m2, $m15, 5
	br $m10
	.size ENTRY, .-ENTRY
`

// echoSources are the reference file names the echo kernel stands in for,
// with what replaces ENTRY.
var echoSources = map[string]string{
	"reduce_add_f16.S":        "ipu_stack_reduce_sum_f16",
	"gelu_f16.S":              "ipu_stack_gelu_tanh_approx_f16",
	"attention_softmax_f16.S": "ATTENTION_SOFTMAX_SYMBOL",
	"attention_merge_f16.S":   "ATTENTION_MERGE_SYMBOL",
}

// writeOwn writes our own kernels under the reference's file names: the
// GEMM always, the echo kernels if all is set.
func writeOwn(t *testing.T, all bool) string {
	dir := t.TempDir()
	files := map[string]string{"gemm_f16_amp.S": ownGemm}
	if all {
		for name, entry := range echoSources {
			files[name] = strings.ReplaceAll(ownEcho, "ENTRY", entry)
		}
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestEchoKernelSeesTheCallRegisters(t *testing.T) {
	dir := writeOwn(t, true)
	// Registers per the reference's conventions (figures.go): reduce m3
	// initial, m4 remote, m5 partials-1, m6 elements; GELU m3 input, m4
	// elements; softmax m3 scores, m4 statistics, m5 workspace, m6 rows, m7
	// keys, m8 split; merge m3 values, m4 state, m5 initial, m6 final, m7
	// rows.
	want := map[string][6]uint32{
		"reduce N2208 P4":           {leftBase, rightBase, 3, 2208},
		"reduce N576 P15":           {leftBase, rightBase, 14, 576},
		"gelu N2208":                {leftBase, 2208, 0, 0},
		"softmax R7 K64/64":         {leftBase, statsBase, workspaceBase, 7, 64, 0},
		"softmax R8 K25/64":         {leftBase, statsBase, workspaceBase, 8, 25, 0},
		"softmax R8 K729/768 split": {leftBase, statsBase, workspaceBase, 8, 729, 1},
		"softmax R1 K768/768":       {leftBase, statsBase, workspaceBase, 1, 768, 0},
		"merge R7 V72 initial":      {leftBase, statsBase, 1, 0, 7},
		"merge R8 V72 update":       {leftBase, statsBase, 0, 0, 8},
		"merge R8 V72 final":        {leftBase, statsBase, 0, 1, 8},
	}
	seen := 0
	for _, f := range figures {
		w, ok := want[f.name]
		if !ok {
			continue
		}
		seen++
		src, _ := os.ReadFile(filepath.Join(dir, f.source))
		obj, err := asm.Assemble(f.source, src, asm.Options{Defines: f.defines})
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		f.fills = nil
		_, tile, err := runCall(obj, f)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for i, v := range w {
			got, err := tile.ReadWord(outputBase + 4*uint32(i))
			if err != nil || got != v {
				t.Errorf("%s: register m%d = %d (%v), want %d", f.name, 3+i, got, err, v)
			}
		}
	}
	if seen != len(want) {
		t.Fatalf("figures.go lists %d of the %d figures checked here", seen, len(want))
	}
}

func TestOwnKernelFollowsTheCallingConvention(t *testing.T) {
	dir := writeOwn(t, false)
	for _, f := range figures {
		if f.set != setGemm {
			continue
		}
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
	dir := writeOwn(t, true)
	var out, errb bytes.Buffer
	if code := run([]string{dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if errb.Len() != 0 {
		t.Fatalf("notes with every source present: %s", errb.String())
	}
	sets := map[string]bool{}
	for _, f := range figures {
		sets[f.set] = true
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	// Header, one line per figure, one per set, the overall summary.
	if len(lines) != len(figures)+len(sets)+2 || !strings.HasPrefix(lines[0], "figure") || !strings.HasPrefix(lines[len(lines)-1], "figures=") {
		t.Fatalf("table:\n%s", out.String())
	}
	// Deterministic: a second run prints the same bytes.
	var again bytes.Buffer
	run([]string{dir}, &again, &errb)
	if again.String() != out.String() {
		t.Fatal("two runs printed different tables")
	}
}

func TestAbsentSourceSkipsItsFigures(t *testing.T) {
	dir := writeOwn(t, false)
	var out, errb bytes.Buffer
	if code := run([]string{dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	gemm := 0
	for _, f := range figures {
		if f.set == setGemm {
			gemm++
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != gemm+3 || !strings.HasPrefix(lines[len(lines)-1], fmt.Sprintf("figures=%d ", gemm)) {
		t.Fatalf("table:\n%s", out.String())
	}
	for name := range echoSources {
		if !strings.Contains(errb.String(), "skipped the figures of "+name+": not in "+dir) {
			t.Errorf("notes %q do not name the skipped %s", errb.String(), name)
		}
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

func TestAbsentDirectoryIsAClearError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	var out, errb bytes.Buffer
	if code := run([]string{dir}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "reference directory") || !strings.Contains(errb.String(), dir) {
		t.Fatalf("exit %d, error %q", code, errb.String())
	}
}
