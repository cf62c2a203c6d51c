package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// TestBadInputs feeds every command inputs it must refuse: files of the
// wrong kind, outputs that would clobber inputs or cannot be written,
// absurd flag values. Each must fail with a clear error that names what was
// wrong, never a panic, a Go parser's words or a temporary file's name, and
// must leave every input as it was.
func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "hello.S", helloSrc)
	obj := filepath.Join(dir, "hello.o")
	exe := filepath.Join(dir, "hello.elf")
	prof := filepath.Join(dir, "run.prof")
	for _, args := range [][]string{
		{"asm", src, "-o", obj},
		{"link", obj, "--entry", "main", "-o", exe},
		{"profile", "synthetic", "--tiles", "8", "-o", prof},
	} {
		if code, _, errs := ipu(t, args...); code != 0 {
			t.Fatalf("ipu %s: %s", strings.Join(args, " "), errs)
		}
	}
	pkg := &ipuexe.Package{
		Target: "ipu21", CompilerVersion: Version,
		MemoryBase: ipu21.SRAMBase, MemorySize: ipu21.SRAMEnd - ipu21.SRAMBase,
		Tiles: []ipuexe.Tile{{Physical: 5, Entry: 0x4C010, Segments: []ipuexe.Segment{
			{Address: 0x4C010, MemSize: 8, Data: []byte{5, 0, 0x10, 0x19, 0, 0, 0xA0, 0x43}, Flags: ipuexe.FlagRead | ipuexe.FlagExec},
		}}},
	}
	data, err := pkg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app.ipuexe")
	if err := os.WriteFile(app, data, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.o") // a symbolic link to hello.o
	if err := os.Symlink("hello.o", link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nodir", "out")
	header := writeFile(t, dir, "defs.h", "#define FIVE 5\n")
	incSrc := writeFile(t, dir, "inc.S", "#include \"defs.h\"\n.section .text, \"ax\"\n.long FIVE\n")

	inputs := map[string][]byte{}
	for _, p := range []string{src, obj, exe, prof, app, header, incSrc} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs[p] = b
	}

	cases := []struct {
		name string
		args []string
		want string
	}{
		// Files of the wrong kind.
		{"asm of an ELF object", []string{"asm", obj, "-o", filepath.Join(dir, "x.o")}, "not assembly source: an ELF object"},
		{"objdump of a package", []string{"objdump", app}, "it is an application package (.ipuexe)"},
		{"objdump of a profile", []string{"objdump", prof}, "it is a profile"},
		{"link of an executable", []string{"link", exe, "-o", filepath.Join(dir, "x.elf")}, "a linked executable, not an object"},
		{"inspect of an ELF object", []string{"inspect", obj}, "it is an ELF file"},
		{"inspect of a profile", []string{"inspect", prof}, "it is a profile"},
		{"profile query of a package", []string{"profile", "query", app}, "it is an application package"},

		// Outputs that would overwrite inputs or cannot be written.
		{"link output over its input through a symlink", []string{"link", link, "--entry", "main", "-o", obj}, "would overwrite the input"},
		{"link output is a symlink to the input", []string{"link", obj, "--entry", "main", "-o", link}, "would overwrite the input"},
		{"asm output over an included file", []string{"asm", incSrc, "-o", header}, "would overwrite the input"},
		{"render output over its input", []string{"profile", "render", prof, "-o", prof}, "would overwrite the input"},
		{"asm output is a directory", []string{"asm", src, "-o", sub}, "output " + sub + " is a directory"},
		{"link output is a directory", []string{"link", obj, "--entry", "main", "-o", sub}, "is a directory"},
		{"render output is a directory", []string{"profile", "render", prof, "-o", sub}, "is a directory"},
		{"synthetic output is a directory", []string{"profile", "synthetic", "-o", sub}, "is a directory"},
		{"asm output in a missing directory", []string{"asm", src, "-o", missing}, "does not exist"},
		{"link output in a missing directory", []string{"link", obj, "--entry", "main", "-o", missing}, "does not exist"},
		{"render output in a missing directory", []string{"profile", "render", prof, "-o", missing}, "does not exist"},
		{"asm output under a file", []string{"asm", src, "-o", filepath.Join(src, "x.o")}, "is not a directory"},

		// Flags.
		{"missing include directory", []string{"asm", src, "-I", filepath.Join(dir, "nope"), "-o", filepath.Join(dir, "x.o")}, "-I " + filepath.Join(dir, "nope")},
		{"include directory is a file", []string{"asm", src, "-I", src, "-o", filepath.Join(dir, "x.o")}, "not a directory"},
		{"negative seed", []string{"kernel", "run", "copy_f16", "--no-cache", "--seed", "-1"}, `kernel run: --seed "-1": want a non-negative integer`},
		{"seed overflows uint64", []string{"kernel", "run", "copy_f16", "--no-cache", "--seed", "18446744073709551616"}, "out of range"},
		{"tiles overflow int64", []string{"diagnose", "--tiles", "99999999999999999999"}, `diagnose: --tiles "99999999999999999999"`},
		{"integer with a leading zero", []string{"diagnose", "--tiles", "010"}, `--tiles "010": want an integer without a leading zero`},
		{"duration without a unit", []string{"diagnose", "--lock-wait", "5"}, "want a duration with a unit"},
		{"negative lock wait", []string{"diagnose", "--tiles", "1", "--lock-wait", "-5s"}, "--lock-wait -5s"},
		{"empty device", []string{"diagnose", "--tiles", "1", "--device", ""}, `--device "": want a device backend`},
		{"unknown flag names the command", []string{"kernel", "run", "copy_f16", "--bogus"}, "kernel run: unknown flag: --bogus"},
		{"missing argument names the command", []string{"objdump"}, "objdump: accepts 1 arg"},
		{"gemm k past the 32-bit range", []string{"kernel", "run", "gemm_f16", "--no-cache", "--param", "k=2147483648"}, "parameter k=2147483648: must be a positive multiple of 16 up to 65536"},
		{"gemm c huge", []string{"kernel", "run", "gemm_f16_f32acc", "--no-cache", "--param", "c=4611686018427387904"}, "parameter c=4611686018427387904"},
		{"exchange passes absurd", []string{"exchange", "bench", "--passes", "2147483647", prof}, "--passes 2147483647: want 0 (the default) or 1..65536"},
		{"exchange passes negative", []string{"exchange", "bench", "--passes", "-5", prof}, "--passes -5"},
		{"query tile past the profile", []string{"profile", "query", prof, "--tiles", "99999"}, "the profile has 8 tiles (0..7)"},
		{"query negative phase", []string{"profile", "query", prof, "--phase", "-1"}, "--phase -1"},
		{"query unknown phase", []string{"profile", "query", prof, "--phase", "42"}, "phase 42: the profile has no such exchange phase"},
		{"query unknown kernel", []string{"profile", "query", prof, "--kernel", "gemm_f61"}, `kernel "gemm_f61": no step of the profile has it`},
		{"query unknown operation", []string{"profile", "query", prof, "--operation", "nope"}, `operation "nope"`},
		{"query negative limit", []string{"profile", "query", prof, "--limit", "-1"}, "--limit -1"},
		{"query bad group", []string{"profile", "query", prof, "--group-by", "colour"}, `--group-by "colour"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := ipu(t, c.args...)
			if code == 0 {
				t.Fatalf("ipu %s: exit 0, want an error with %q", strings.Join(c.args, " "), c.want)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("ipu %s: stderr %q lacks %q", strings.Join(c.args, " "), errs, c.want)
			}
			for _, bad := range []string{"panic", "goroutine", "strconv.", ".tmp"} {
				if strings.Contains(errs, bad) {
					t.Errorf("ipu %s: stderr %q contains %q", strings.Join(c.args, " "), errs, bad)
				}
			}
		})
	}
	for p, want := range inputs {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("input %s was changed or lost (%v)", p, err)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("symlink %s was replaced (%v)", link, err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if entries, _ := os.ReadDir(sub); len(entries) != 0 {
		t.Errorf("%d files written into %s", len(entries), sub)
	}
}

// TestFailedRenderKeepsOutput: a render that fails leaves an existing
// output file as it was.
func TestFailedRenderKeepsOutput(t *testing.T) {
	dir := t.TempDir()
	junk := writeFile(t, dir, "junk.prof", "IPUPROF\x00 but nothing else")
	out := writeFile(t, dir, "report.html", "keep me")
	if code, _, errs := ipu(t, "profile", "render", junk, "-o", out); code == 0 || !strings.Contains(errs, "junk.prof") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me" {
		t.Errorf("output overwritten: %q", b)
	}
}
