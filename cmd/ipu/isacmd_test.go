package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/isa"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
	"github.com/ipustack/ipustack/kernels/bench"
)

// TestMain lets the test binary stand in for the ipu command in
// subprocesses (the stand-in SDK assembler, and commands run with --isa,
// which installs encodings once per process).
func TestMain(m *testing.M) {
	if os.Getenv("IPU_TEST_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// self runs the test binary as ipu with args and returns its stdout.
func self(t *testing.T, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "IPU_TEST_AS_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ipu %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// TestISALearnRoundTrip is the learned-overlay round trip with the
// permuted stand-in assembler (issue 15): learn every row from `ipu
// --isa-permute 1 asm`; the overlay must be exactly the permuted table;
// under it every kernel assembles to the permuted assembler's bytes and
// runs on the emulator with the default table's cycles and results; and a
// whole application package (tile runtime, kernels, exchange code) built
// under it is the permuted build, bit for bit, and runs like the default.
func TestISALearnRoundTrip(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("IPU_TEST_AS_MAIN", "1") // for the assembler subprocess
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	tmpl := "'" + exe + "' --isa-permute 1 asm {in} -o {out}"
	ovPath := filepath.Join(dir, "isa-overlay.json")
	code, out, errs := ipu(t, "isa", "learn", "--assembler", tmpl, "-o", ovPath)
	if code != 0 {
		t.Fatalf("isa learn: exit %d\n%s%s", code, out, errs)
	}
	if want := fmt.Sprintf("learned %d of %d rows", len(isa.Table), len(isa.Table)); !strings.Contains(out, want) {
		t.Errorf("isa learn printed %q; want %q", out, want)
	}
	if strings.Contains(out, "not learned") {
		t.Errorf("rows not learned:\n%s", out)
	}
	data, err := os.ReadFile(ovPath)
	if err != nil {
		t.Fatal(err)
	}
	// Determinism: learning again gives the same bytes.
	ov2 := filepath.Join(dir, "again.json")
	if code, out, errs := ipu(t, "isa", "learn", "--assembler", tmpl, "-o", ov2); code != 0 {
		t.Fatalf("isa learn again: %s%s", out, errs)
	}
	if again, _ := os.ReadFile(ov2); !bytes.Equal(again, data) {
		t.Error("learning twice gave different overlay bytes")
	}
	learned, err := isa.ParseOverlay(ovPath, data)
	if err != nil {
		t.Fatal(err)
	}
	perm, err := isa.PermutedOverlay(1)
	if err != nil {
		t.Fatal(err)
	}
	bare := *learned
	bare.Assembler = ""
	if !bytes.Equal(bare.Marshal(), perm.Marshal()) {
		t.Fatal("the learned overlay is not the permuted table")
	}

	// Every kernel: the assembler under the learned overlay gives the
	// permuted assembler's bytes; the default table's differ.
	assembleObj := func(ov *isa.Overlay, name string) []byte {
		t.Helper()
		restore, err := isa.Swap(ov)
		if err != nil {
			t.Fatal(err)
		}
		defer restore()
		k, err := kernels.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		b, err := assemble.Build(k, nil, assemble.Cache{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		obj, err := b.Object.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	benchJSON := func(ov *isa.Overlay, name string) string {
		t.Helper()
		restore, err := isa.Swap(ov)
		if err != nil {
			t.Fatal(err)
		}
		defer restore()
		rep, err := bench.Run(name, nil, 1, assemble.Cache{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !rep.Pass {
			t.Errorf("%s fails its host check: %s", name, rep)
		}
		return rep.JSON()
	}
	for _, name := range kernels.Names() {
		l, p, d := assembleObj(learned, name), assembleObj(perm, name), assembleObj(nil, name)
		if !bytes.Equal(l, p) {
			t.Errorf("%s: assembled under the learned overlay differs from the permuted assembler's object", name)
		}
		if bytes.Equal(l, d) {
			t.Errorf("%s: the permuted encodings do not change its object (the test would prove nothing)", name)
		}
		if got, want := benchJSON(learned, name), benchJSON(nil, name); got != want {
			t.Errorf("%s on the emulator: overlay %s, default %s", name, got, want)
		}
	}

	// A whole package through the CLI: build under --isa and under the
	// stand-in are identical; run under --isa matches the default run.
	shape := []string{"--workload", "gemm", "--m", "64", "--k", "64", "--n", "64", "--tiles", "16", "--no-kernel-cache"}
	pkg := func(name string, pre ...string) []byte {
		path := filepath.Join(dir, name)
		self(t, append(append(pre, "build", "-o", path), shape...)...)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pl, pp, pd := pkg("l.ipuexe", "--isa", ovPath), pkg("p.ipuexe", "--isa-permute", "1"), pkg("d.ipuexe")
	if !bytes.Equal(pl, pp) {
		t.Error("package built under the learned overlay differs from the permuted build")
	}
	if bytes.Equal(pl, pd) {
		t.Error("package built under the overlay equals the default build (the permutation changed nothing)")
	}
	got := self(t, "--isa", ovPath, "run", filepath.Join(dir, "l.ipuexe"))
	want := self(t, "run", filepath.Join(dir, "d.ipuexe"))
	if got != want || !strings.Contains(got, "numericalTest=PASS") {
		t.Errorf("run under the overlay:\n%s\ndefault:\n%s", got, want)
	}
	// IPUSTACK_ISA works like --isa, for asm and objdump: the object is the
	// permuted assembler's, and its disassembly under the overlay is the
	// default object's disassembly.
	src := writeFile(t, dir, "w.S", workerSrc)
	lo, po, do := filepath.Join(dir, "l.o"), filepath.Join(dir, "p.o"), filepath.Join(dir, "d.o")
	t.Setenv("IPUSTACK_ISA", ovPath)
	self(t, "asm", src, "-o", lo)
	lDump := self(t, "objdump", lo)
	t.Setenv("IPUSTACK_ISA", "")
	self(t, "--isa-permute", "1", "asm", src, "-o", po)
	self(t, "asm", src, "-o", do)
	dDump := self(t, "objdump", do)
	lb, _ := os.ReadFile(lo)
	pb, _ := os.ReadFile(po)
	db, _ := os.ReadFile(do)
	if !bytes.Equal(lb, pb) || bytes.Equal(lb, db) {
		t.Errorf("IPUSTACK_ISA asm: learned == permuted %v (want true), learned == default %v (want false)", bytes.Equal(lb, pb), bytes.Equal(lb, db))
	}
	_, lText := dumpColumns(lDump)
	_, dText := dumpColumns(dDump)
	if lText != dText || !strings.Contains(dText, "f32add") {
		t.Errorf("objdump under the overlay:\n%s\ndefault:\n%s", lText, dText)
	}
}

const workerSrc = `
	.worker
	.section .text, "ax"
	f32add $a0, $a1, $a2
	ld64 $a0:1, $m1, $m2, 3
	.p2align 3
	{ ld32 $m1, $m2, $mzero, 1 ; f16v4add $a0:1, $a2:3, $a4:5 }
	uget $a3, $FP_CTL
	exitz $m0
`

// TestISAFlagErrors: a bad overlay or conflicting flags are one clear
// error naming the file (or flag), exit 1, nothing installed.
func TestISAFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.json", `{"schema":"ipustack-isa-overlay","version":1,"rows":[{"id":"nosuch","words":1,"match":["0x0"],"operands":[]}]}`)
	cases := []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--isa", filepath.Join(dir, "missing.json"), "version"}, "", "--isa: isa overlay: open"},
		{[]string{"--isa", bad, "version"}, "", "--isa: " + bad + ": row 1 (nosuch): unknown row"},
		{[]string{"version"}, bad, "IPUSTACK_ISA: " + bad + ": row 1 (nosuch)"},
		{[]string{"--isa", bad, "--isa-permute", "1", "version"}, "", "give one encoding table"},
		{[]string{"isa", "learn", "-o", filepath.Join(dir, "o.json")}, "", "--assembler is required"},
		{[]string{"isa", "learn", "--assembler", "popc {in}", "-o", filepath.Join(dir, "o.json")}, "", "must contain both"},
		{[]string{"isa", "check", bad}, "", "unknown row"},
	}
	for _, c := range cases {
		t.Setenv("IPUSTACK_ISA", c.env)
		code, _, errs := ipu(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
			t.Errorf("ipu %v (IPUSTACK_ISA=%q): exit %d, stderr %q; want one line containing %q", c.args, c.env, code, errs, c.want)
		}
	}
	if isa.Fingerprint() != "" {
		t.Error("a failed --isa left an overlay installed")
	}
}
