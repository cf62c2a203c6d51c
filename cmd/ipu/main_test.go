package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/isa"
)

// ipu runs the CLI in-process and returns its exit status and output.
func ipu(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

const helloSrc = `
        .supervisor
        .section .text.main, "ax"
        .globl main
        .type main, @function
main:   setzi $m1, 5
        call  $m10, helper
        br    $m10
        .size main, .-main
        .section .text.helper, "ax"
        .globl helper
helper: sync 3
        br $m10
        .section .text.unused, "ax"
unused: br $m10
`

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var dumpLine = regexp.MustCompile(`^([0-9a-f]{8})  ([0-9a-f]{8})  (.*)$`)

// words extracts the WORD column and the disassembly text of objdump output.
func dumpColumns(out string) (words []string, text string) {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if m := dumpLine.FindStringSubmatch(l); m != nil {
			words = append(words, m[2])
			asm := m[3]
			if i := strings.Index(asm, "  //"); i >= 0 {
				asm = asm[:i]
			}
			b.WriteString(asm + "\n")
		}
	}
	return words, b.String()
}

func TestAsmObjdumpRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "hello.S", helloSrc)
	obj := filepath.Join(dir, "hello.o")
	if code, _, errs := ipu(t, "asm", src, "-o", obj); code != 0 {
		t.Fatalf("asm: %s", errs)
	}
	code, out, errs := ipu(t, "objdump", obj)
	if code != 0 {
		t.Fatalf("objdump: %s", errs)
	}
	for _, want := range []string{"19100005  setzi $m1, 5", "43a00000  br $m10", "41800003  sync 3", "main:", "R_COLOSSUS_19_S2 helper"} {
		if !strings.Contains(out, want) {
			t.Errorf("objdump output lacks %q:\n%s", want, out)
		}
	}
	words, text := dumpColumns(out)
	// Reassemble the disassembly column and compare the words.
	again := writeFile(t, dir, "again.S", ".supervisor\n.section .text, \"ax\"\n"+text)
	obj2 := filepath.Join(dir, "again.o")
	if code, _, errs := ipu(t, "asm", again, "-o", obj2); code != 0 {
		t.Fatalf("reassemble: %s\n%s", errs, text)
	}
	_, out2, _ := ipu(t, "objdump", obj2)
	words2, _ := dumpColumns(out2)
	if strings.Join(words, " ") != strings.Join(words2, " ") {
		t.Errorf("words differ after reassembly:\n%v\n%v", words, words2)
	}
}

func TestLink(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "hello.S", helloSrc)
	obj := filepath.Join(dir, "hello.o")
	exe := filepath.Join(dir, "hello.elf")
	if code, _, errs := ipu(t, "asm", src, "-o", obj); code != 0 {
		t.Fatalf("asm: %s", errs)
	}
	if code, _, errs := ipu(t, "link", obj, "--entry", "main", "-o", exe); code != 0 {
		t.Fatalf("link: %s", errs)
	}
	code, out, errs := ipu(t, "objdump", exe)
	if code != 0 {
		t.Fatalf("objdump: %s", errs)
	}
	// main at 0x4C010 calls helper at 0x4C01C: call $m10, 0x4c01c encodes addr>>2.
	for _, want := range []string{"0004c010  19100005  setzi $m1, 5", "0004c01c  41800003  sync 3", "helper:"} {
		if !strings.Contains(out, want) {
			t.Errorf("linked objdump lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "unused") {
		t.Errorf("unreachable section kept:\n%s", out)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := elf.Load(exe, data); err != nil {
		t.Fatal(err)
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "bad.S", ".supervisor\n.text\n  setzi $m1, 5\n  frobnicate $m1\n")
	good := writeFile(t, dir, "good.S", helloSrc)
	obj := filepath.Join(dir, "good.o")
	if code, _, errs := ipu(t, "asm", good, "-o", obj); code != 0 {
		t.Fatal(errs)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown mnemonic names file:line:col", []string{"asm", src, "-o", filepath.Join(dir, "bad.o")}, "bad.S:4:3"},
		{"missing input", []string{"asm", filepath.Join(dir, "nope.S")}, "no such file"},
		{"output over input", []string{"asm", good, "-o", good}, "would overwrite the input"},
		{"bad define", []string{"asm", good, "-D", "1X=2", "-o", filepath.Join(dir, "x.o")}, "not a valid macro name"},
		{"undefined entry", []string{"link", obj, "--entry", "nosuch", "-o", filepath.Join(dir, "x.elf")}, "nosuch"},
		{"link needs -o", []string{"link", obj}, "-o FILE is required"},
		{"objdump of garbage", []string{"objdump", src}, "bad.S"},
		{"bad log format", []string{"--log-format", "xml", "version"}, "--log-format"},
		{"run of an unknown workload", []string{"run", "--workload", "nosuch"}, `unknown workload "nosuch"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := ipu(t, c.args...)
			if code == 0 {
				t.Fatalf("exit 0, want failure")
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr %q lacks %q", errs, c.want)
			}
		})
	}
	if b, _ := os.ReadFile(good); string(b) != helloSrc {
		t.Errorf("input was modified")
	}
}

func TestDefines(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "d.S", ".supervisor\n.text\n  setzi $m1, VALUE\n#ifdef FLAG\n  sync 3\n#endif\n")
	obj := filepath.Join(dir, "d.o")
	if code, _, errs := ipu(t, "asm", src, "-D", "VALUE=7", "-D", "FLAG", "-o", obj); code != 0 {
		t.Fatal(errs)
	}
	_, out, _ := ipu(t, "objdump", obj)
	if !strings.Contains(out, "19100007  setzi $m1, 7") || !strings.Contains(out, "sync 3") {
		t.Errorf("defines not applied:\n%s", out)
	}
}

func TestKernelRun(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	code, out, errs := ipu(t, "kernel", "run", "fill_zero", "--param", "bytes=512")
	if code != 0 || !strings.Contains(out, "numericalTest=PASS") || !strings.Contains(out, "cycles=") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = ipu(t, "kernel", "run", "fill_zero", "--param", "bytes=512", "--json")
	if code != 0 || !strings.Contains(out, `"cached":true`) || !strings.HasPrefix(out, "{") {
		t.Fatalf("second run should hit the cache and print JSON: %s", out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"kernel", "run", "nosuch"}, "unknown kernel"},
		{[]string{"kernel", "run", "fill_zero", "--param", "bytes"}, "want NAME=INTEGER"},
		{[]string{"kernel", "run", "fill_zero", "--param", "bytes=7"}, "multiple of 8"},
	} {
		code, _, errs := ipu(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}

func TestInspect(t *testing.T) {
	dir := t.TempDir()
	good := &ipuexe.Package{
		Target: "ipu21", CompilerVersion: Version,
		MemoryBase: ipu21.SRAMBase, MemorySize: ipu21.SRAMEnd - ipu21.SRAMBase,
		Tiles: []ipuexe.Tile{{Physical: 5, Entry: 0x4C010, Segments: []ipuexe.Segment{
			{Address: 0x4C010, MemSize: 8, Data: []byte{5, 0, 0x10, 0x19, 0, 0, 0xA0, 0x43}, Flags: ipuexe.FlagRead | ipuexe.FlagExec},
		}}},
	}
	data, err := good.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "good.ipuexe")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := ipu(t, "inspect", path)
	if code != 0 || !strings.Contains(out, "tiles") {
		t.Fatalf("inspect: exit %d\n%s\n%s", code, out, errs)
	}
	// Executable bytes outside region 0: decodes, summarises, fails validation.
	bad := *good
	bad.Tiles = []ipuexe.Tile{{Physical: 5, Entry: 0x90000, Segments: []ipuexe.Segment{
		{Address: 0x90000, MemSize: 8, Data: make([]byte, 8), Flags: ipuexe.FlagRead | ipuexe.FlagExec},
	}}}
	data, err = bad.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "bad.ipuexe")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = ipu(t, "inspect", path)
	if code == 0 || !strings.Contains(errs, "tile 5") || out == "" {
		t.Fatalf("bad package: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	os.WriteFile(path, []byte("not a package"), 0o644)
	if code, _, errs := ipu(t, "inspect", path); code == 0 || !strings.Contains(errs, "bad.ipuexe") {
		t.Fatalf("garbage accepted: %s", errs)
	}
}

// TestObjdumpRoundTripEveryRow writes one instance of every instruction row
// as raw words, disassembles the object with objdump and assembles the
// disassembly column back: the words must be identical.
func TestObjdumpRoundTripEveryRow(t *testing.T) {
	dir := t.TempDir()
	for _, ctx := range []isa.Context{isa.Supervisor, isa.Worker} {
		var src strings.Builder
		mode := ".supervisor"
		if ctx == isa.Worker {
			mode = ".worker"
		}
		fmt.Fprintf(&src, "%s\n.section .text, \"ax\"\n", mode)
		n := 0
		for _, in := range isa.Table {
			if in.Ctx&ctx == 0 {
				continue
			}
			vals := make([]int64, len(in.Operands))
			for i := range in.Operands {
				op := &in.Operands[i]
				lo, hi := op.Range()
				v := hi // the largest aligned value exercises every field bit
				for op.Check(v) != nil && v > lo {
					v--
				}
				vals[i] = v
			}
			words, err := in.Encode(vals, false)
			if err != nil {
				// A few rows refuse values that would decode as another
				// row (nop inside setzi); fall back to the smallest values.
				for i := range in.Operands {
					lo, _ := in.Operands[i].Range()
					for in.Operands[i].Check(lo) != nil {
						lo++
					}
					vals[i] = lo
				}
				if words, err = in.Encode(vals, false); err != nil {
					t.Fatalf("%s: %v", in.ID(), err)
				}
			}
			for _, w := range words {
				fmt.Fprintf(&src, ".long 0x%08x\n", w)
			}
			n++
		}
		path := writeFile(t, dir, "rows.S", src.String())
		obj := filepath.Join(dir, "rows.o")
		if code, _, errs := ipu(t, "asm", path, "-o", obj); code != 0 {
			t.Fatalf("asm: %s", errs)
		}
		_, out, _ := ipu(t, "objdump", obj)
		words, text := dumpColumns(out)
		again := writeFile(t, dir, "again.S", mode+"\n.section .text, \"ax\"\n"+text)
		obj2 := filepath.Join(dir, "again.o")
		if code, _, errs := ipu(t, "asm", again, "-o", obj2); code != 0 {
			t.Fatalf("%s: reassembling objdump output: %s", mode, errs)
		}
		_, out2, _ := ipu(t, "objdump", obj2)
		words2, _ := dumpColumns(out2)
		if strings.Join(words, " ") != strings.Join(words2, " ") {
			t.Fatalf("%s: words differ after the round trip", mode)
		}
		if strings.Contains(text, ".long") {
			t.Errorf("%s: some row did not disassemble:\n%s", mode, text)
		}
		t.Logf("%s: %d rows, %d words round-tripped", mode, n, len(words))
	}
}
