package asm

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
)

func TestRelocations(t *testing.T) {
	src := `
	.text
	.globl f
	.type f, @function
f:
	setzi $m1, ext + 8          // absolute address of an external symbol
	call $m10, g                // a label later in this section
	bri 1f                      // a numeric label: the section symbol
	nop
1:	setzi $m2, f - 4            // a label minus a constant
	brnz $m1, .                 // the current location
g:	br $m10
	.size f, . - f
	.data
	.long f, ext2 - 4
	.quad g
	.short 1b
	.byte f - f
`
	obj := mustAssemble(t, src, Options{})
	text := findSection(obj, ".text")
	want := []elf.Reloc{
		{Offset: 0, Type: isa.Reloc20, Symbol: "ext", Addend: 8},
		{Offset: 4, Type: isa.Reloc19S2, Symbol: "g", Addend: 0},
		{Offset: 8, Type: isa.Reloc19S2, Symbol: ".text", Addend: 16},
		{Offset: 16, Type: isa.Reloc20, Symbol: "f", Addend: -4},
		{Offset: 20, Type: isa.Reloc19S2, Symbol: ".text", Addend: 20},
	}
	if !reflect.DeepEqual(text.Relocs, want) {
		t.Errorf("text relocs\n got %+v\nwant %+v", text.Relocs, want)
	}
	// Symbolic fields are encoded as 0 for the linker to patch.
	if w := words(text); w[0] != enc(t, "setzi", false, 1, 0) || w[1] != enc(t, "call", false, 10, 0) {
		t.Errorf("words %08x", w)
	}
	data := findSection(obj, ".data")
	wantData := []elf.Reloc{
		{Offset: 0, Type: isa.Reloc32, Symbol: "f"},
		{Offset: 4, Type: isa.Reloc32, Symbol: "ext2", Addend: -4},
		{Offset: 8, Type: isa.Reloc64, Symbol: "g"},
		{Offset: 16, Type: isa.Reloc16, Symbol: ".text", Addend: 16},
	}
	if !reflect.DeepEqual(data.Relocs, wantData) {
		t.Errorf("data relocs\n got %+v\nwant %+v", data.Relocs, wantData)
	}
	f := findSymbol(obj, "f")
	if f == nil || f.Bind != elf.Global || f.Type != elf.Func || f.Size != 28 || f.Section != 0 || f.Value != 0 {
		t.Errorf("f = %+v", f)
	}
	if g := findSymbol(obj, "g"); g == nil || g.Bind != elf.Local || g.Value != 24 {
		t.Errorf("g = %+v", g)
	}
	for _, name := range []string{"ext", "ext2"} {
		if s := findSymbol(obj, name); s == nil || s.Section != elf.Undefined || s.Bind != elf.Global {
			t.Errorf("%s = %+v", name, s)
		}
	}
	if s := findSymbol(obj, ".text"); s == nil || s.Section != 0 || s.Bind != elf.Local {
		t.Errorf("section symbol = %+v", s)
	}
}

func TestSectionsAndSymbols(t *testing.T) {
	src := `
	.section .text.k, "ax", @progbits
	.globl k
	.p2align 4
k:	nop
	.section .rodata.t, "a"
	.weak w
w:	.long 1
	.section .bss.buf, "aw", @nobits
	.p2align 3
	.type buf, @object
buf: .space 64
	.size buf, 64
	.local hidden
hidden:
	.globl exported_const, undefined_global
	.set exported_const, 0x1234
	.set private_const, 5
	.worker
	.section .text.w
	.balign 8
	{ nop ; fnop }
`
	obj := mustAssemble(t, src, Options{})
	type sec struct {
		name   string
		flags  elf.SectionFlags
		align  uint32
		nobits bool
		size   uint32
	}
	var got []sec
	for _, s := range obj.Sections {
		got = append(got, sec{s.Name, s.Flags, s.Align, s.NoBits, s.Len()})
	}
	want := []sec{
		{".text.k", elf.FlagAlloc | elf.FlagExec, 16, false, 4},
		{".rodata.t", elf.FlagAlloc, 1, false, 4},
		{".bss.buf", elf.FlagAlloc | elf.FlagWrite, 8, true, 64},
		{".text.w", elf.FlagAlloc | elf.FlagExec, 8, false, 8},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sections\n got %+v\nwant %+v", got, want)
	}
	check := func(name string, want elf.Symbol) {
		t.Helper()
		s := findSymbol(obj, name)
		if s == nil {
			t.Errorf("no symbol %s", name)
			return
		}
		want.Name = name
		if *s != want {
			t.Errorf("%s = %+v, want %+v", name, *s, want)
		}
	}
	check("k", elf.Symbol{Section: 0, Bind: elf.Global})
	check("w", elf.Symbol{Section: 1, Bind: elf.Weak})
	check("buf", elf.Symbol{Section: 2, Size: 64, Type: elf.DataSym})
	check("hidden", elf.Symbol{Section: 2, Value: 64})
	check("exported_const", elf.Symbol{Section: elf.Absolute, Value: 0x1234, Bind: elf.Global})
	check("undefined_global", elf.Symbol{Section: elf.Undefined, Bind: elf.Global})
	if findSymbol(obj, "private_const") != nil {
		t.Errorf("private .set constants should stay out of the symbol table")
	}
}

// TestErrors checks positions and messages for bad input.
func TestErrors(t *testing.T) {
	for _, c := range errorCases {
		_, err := Assemble("t.S", []byte(c.src), Options{ReadFile: memFS(errorFiles)})
		if err == nil {
			t.Errorf("%q: no error, want %s", c.src, c.want)
			continue
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Errorf("%q: error %T is not an ErrorList", c.src, err)
			continue
		}
		if got := list[0].Error(); got != c.want {
			t.Errorf("%q:\n got %s\nwant %s\n(all: %v)", c.src, got, c.want, err)
		}
	}
}

var errorFiles = map[string]string{
	"a.h":   "#include \"b.h\"\n",
	"b.h":   "#include \"a.h\"\n",
	"bad.h": "\n  setzi $m1, $a2\n",
}

var errorCases = []struct{ src, want string }{
	{"f16v4ad $a0, $a1", `t.S:1:1: unknown mnemonic "f16v4ad"`},
	{"add.xx $m1, $m2, $m3", `t.S:1:1: add has no variant "xx"`},
	{".worker\n  ld32 $m1, $a3, $m2, 0", `t.S:2:13: ld32: operand 2: expected an $m register, found $a3`},
	{"add $m1, $m2, 70000", `t.S:1:15: value 70000 out of range [-32768, 65535] for operand 3 of add`},
	{"add $m1, $m2", `t.S:1:1: add: expected 3 operands, found 2`},
	{"add $m1, , $m2", `t.S:1:8: add: operand 2 is empty`},
	{"sub $m0, $m0,", `t.S:1:13: sub: operand 3 is empty`}, // an alias form (fuzz crasher 58362839709dc4b9)
	{"addz $m0, $m1,", `t.S:1:14: add.zi: operand 3 is empty`},
	{"setzi $m16, 1", `t.S:1:7: setzi: unknown register or control register $m16`},
	{".supervisor\nsetzi $m1+=, 1", `t.S:2:7: setzi: operand 1: expected an $m register, found $m1+=`},
	{"setzi $m1+=, 1", `t.S:1:7: setzi: operand 1: expected an $m register or an $a register, found $m1+=`},
	{".worker\nf32v2add $a1:2, $a0:1, $a2:3", `t.S:2:10: f32v2add: operand 1: $a1:2 is not aligned to a group of 2 registers`},
	{".worker\nf32add $a0:2, $a0, $a1", `t.S:2:8: f32add: $a0:2 is not a register, register pair or quad the machine has`},
	{".supervisor\nf32add $a0, $a1, $a2", `t.S:2:1: f32add is a worker instruction: not allowed in supervisor code`},
	{".worker\nsync 1", `t.S:2:1: sync is a supervisor instruction: not allowed in worker code`},
	{".supervisor\nget $m1, $WSR", `t.S:2:10: get: operand 2: $WSR is not a control register of the supervisor space`},
	{"add $m1, $m2, undefined_sym", `t.S:1:15: add: operand 3: undefined_sym is an address, known only at link time, and this operand takes no relocation`},
	{"setzi $m1, 1 +", `t.S:1:15: expected an operand, found end of line`},
	{"setzi $m1, (1", `t.S:1:14: expected ) to close ( at 1:12`},
	{"setzi $m1, 1 / 0", `t.S:1:14: division by zero`},
	{".data\na: .long 1\n.text\nb: setzi $m1, b - a", `t.S:4:17: cannot subtract address of a from address of b: not in the same section`},
	{"bri 1f", `t.S:1:5: local label 1f has no definition 1: after this point`},
	{"setzi $m1, 1b", `t.S:1:12: local label 1b: no label 1: before this point`},
	{"x: nop\nx: nop", `t.S:2:1: symbol x is already defined`},
	{".frobnicate 1", `t.S:1:1: unknown directive .frobnicate`},
	{".if 1\nnop", `t.S:1:1: .if without .endif`},
	{".endif", `t.S:1:1: .endif without .if`},
	{".if later\n.endif\nlater = 1", `t.S:1:5: later is not defined at this point (the value must be known here)`},
	{".rept 3\nnop", `t.S:1:1: .rept without .endr`},
	{".macro M\nnop", `t.S:1:1: .macro without .endm`},
	{".macro M a:req\nnop\n.endm\nM", `t.S:4:1: macro M: missing value for required argument a`},
	{".macro M a\nnop\n.endm\nM 1, 2", `t.S:4:6: macro M takes 1 arguments, found 2`},
	{".macro M\nsetzi $m1, 1 +\n.endm\n\n  M", `t.S:2:15: expected an operand, found end of line (in macro M called at t.S:5:3)`},
	{".macro M\nM\n.endm\nM", `t.S:2:1: macro M: expansion nested more than 100 deep (recursive macro?) (in macro M called at t.S:2:1, ...)`},
	{".macro M\nnop\n.endm\n.purgem M\nM", `t.S:5:1: unknown mnemonic "M"`},
	{".worker\n{ add $m1, $m2, $m3 ; add $m1, $m2, $m3 }", `t.S:2:1: a bundle needs one main-pipe and one aux-pipe instruction: add and add both use the main pipe`},
	{".worker\n{ nop ; fnop ; fnop }", `t.S:2:1: a bundle holds exactly two instructions (one main, one aux), found 3`},
	{".worker\n{ nop }", `t.S:2:1: a bundle holds exactly two instructions (one main, one aux), found 1`},
	{".supervisor\n{ nop ; fnop }", `t.S:2:1: bundles are only allowed in worker code (the supervisor has no aux pipe)`},
	{".worker\n{ nop ; fnop", `t.S:2:1: bundle { without }`},
	{"nop }", `t.S:1:5: } without {`},
	{".worker\n{ nop ; .long 1 }", `t.S:2:9: directive .long inside a bundle`},
	{".worker\n{ x: nop ; fnop }", `t.S:2:3: label x inside a bundle`},
	{".data\n.byte 1\n.text\n.data\nnop", `t.S:5:1: instruction at .data+0x1 is not 4-byte aligned`},
	{".bss\n.long 1", `t.S:2:7: section .bss is @nobits: it cannot hold data`},
	{".data\n.byte 256", `t.S:2:7: value 256 does not fit in 1 bytes`},
	{".p2align 3\n.align 3", `t.S:2:8: .align 3 is not a power of two in [1, 65536]`},
	{".section .x, \"q\"", `t.S:1:14: .section: unknown flag 'q' (want a, w or x)`},
	{".type f, @thing", `t.S:1:10: .type: unknown symbol type "@thing" (want @function, @object or @notype)`},
	{".set a, b\n.set b, a\nsetzi $m1, a", `t.S:2:9: circular definition of a`},
	{"setzi $m1, \"str\"", `t.S:1:12: expected an operand, found "\"str\""`},
	{"setzi $m1, 'x", `t.S:1:12: unterminated character constant`},
	{"#include \"a.h\"", `b.h:1:2: #include cycle: t.S -> a.h -> b.h -> a.h`},
	{"#include \"nope.h\"", `t.S:1:2: #include: cannot find "nope.h" (looked in nope.h)`},
	{"#include \"bad.h\"", `bad.h:2:14: setzi: operand 2: expected an immediate, found $a2`},
	{"#if 1\nnop", `t.S:1:2: #if without #endif`},
	{"#else", `t.S:1:2: #else without #if`},
	{"#if 1 +\n#endif", `t.S:1:8: #if: expected an operand, found end of line`},
	{"#error stop here", `t.S:1:2: #error stop here`},
	{"#define F(a) a\nsetzi $m1, F(1, 2)", `t.S:2:12: macro F takes 1 arguments, found 2`},
	{"/* never closed\nnop", `t.S:1:1: unterminated /* comment`},
	{".rept 1 << 30\n.endr", `t.S:1:1: .rept count 1073741824 out of range [0, 1048576]`},
	{".error \"custom failure\"", `t.S:1:1: custom failure`},
	{"#define BAD $a1\n  setzi $m1, BAD", `t.S:2:14: setzi: operand 2: expected an immediate, found $a1`},
}

func TestErrorListLimit(t *testing.T) {
	src := strings.Repeat("bogus\n", 50)
	_, err := Assemble("t.S", []byte(src), Options{})
	list := err.(ErrorList)
	if len(list) != 50 {
		t.Fatalf("%d errors", len(list))
	}
	msg := err.Error()
	if strings.Count(msg, "\n") != maxReported || !strings.HasSuffix(msg, "(and 30 more errors)") {
		t.Errorf("message:\n%s", msg)
	}
}

func TestLimits(t *testing.T) {
	for _, src := range []string{
		".macro A\nA\nA\n.endm\nA",                                // exponential recursion
		".rept 1000000\n.rept 1000000\nnop\n.endr\n.endr",         // huge repeat
		"#define A A A\n#define B A B A\nB",                       // self-referencing C macros
		"#define X(a) X(a a)\nX(1)",                               // growing C macro
		".macro A x\nA \\x\\x\\x\\x\n.endm\nA 1",                  // growing arguments
		".macro M a\nM\x18\\a\\a\\()\n.endm\nM A\xa9\xb8",         // growing re-lexed names (FuzzMacro 9fa17545f4ad942b)
		".space 0x7fffffff",                                       // huge output
		"#define F(x) F(x) F(x)\nF(F(F(F(F(F(F(F(F(F(1))))))))))", // argument pre-expansion
	} {
		_, err := Assemble("t.S", []byte(src), Options{})
		if err == nil {
			t.Errorf("%q: no error", src)
		}
	}
}

func TestIncludeFromDisk(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.h"), []byte("#define K 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "main.S")
	obj, err := Assemble(main, []byte("#include \"k.h\"\nsetzi $m1, K\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := words(findSection(obj, ".text")); len(w) != 1 || w[0] != enc(t, "setzi", false, 1, 3) {
		t.Errorf("words %08x", w)
	}
}

func TestEquivAndLocal(t *testing.T) {
	if _, err := Assemble("t.S", []byte(".equiv A, 1\n.equiv A, 2\n"), Options{}); err == nil || !strings.Contains(err.Error(), "t.S:2:8: .equiv: symbol A is already defined") {
		t.Errorf("equiv: %v", err)
	}
	if _, err := Assemble("t.S", []byte(".local nowhere\nsetzi $m1, nowhere\n"), Options{}); err == nil || !strings.Contains(err.Error(), "declared .local but never defined") {
		t.Errorf("local: %v", err)
	}
}
