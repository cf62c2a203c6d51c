package asm

import (
	"strconv"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
)

// assembleWords assembles src (worker code unless it says otherwise) and
// returns the words of .text.
func assembleWords(t *testing.T, src string) []uint32 {
	t.Helper()
	return words(findSection(mustAssemble(t, src, Options{}), ".text"))
}

func sameWords(t *testing.T, name, src, plain string) {
	t.Helper()
	got, want := assembleWords(t, src), assembleWords(t, plain)
	if len(got) != len(want) {
		t.Errorf("%s: %08x, want %08x", name, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: %08x, want %08x", name, got, want)
			return
		}
	}
}

// Each alias of the LLVM Colossus assembler gives the words of its
// expansion written out.
func TestAliases(t *testing.T) {
	for _, c := range []struct{ name, src, plain string }{
		{"addz", "addz $m0, $m1, 42", "add.zi $m0, $m1, 42"},
		{"adds", "adds $m0, $m1, 42", "add.si $m0, $m1, 42"},
		{"cmpeqz", "cmpeqz $m0, $m1, 42", "cmpeq.zi $m0, $m1, 42"},
		{"cmpeqs", "cmpeqs $m0, $m1, -2", "cmpeq.si $m0, $m1, -2"},
		{"maxz/mins", "maxz $m0, $m1, 7\nmins $m2, $m3, -7", "max.zi $m0, $m1, 7\nmin.si $m2, $m3, -7"},
		{"subz/subs", "subz $m0, 42, $m1\nsubs $m0, -42, $m1", "sub.zi $m0, 42, $m1\nsub.si $m0, -42, $m1"},
		{"sub imm", "sub $m0, $m0, 10\nsub $m1, $m2, -21\nsub $m3, $m3, 32767", "add $m0, $m0, -10\nadd $m1, $m2, 21\nadd $m3, $m3, -32767"},
		{"zero m", "zero $m3", "or $m3, $mzero, $mzero"},
		{"zero a", ".worker\nzero $a0", ".worker\nor $a0, $azero, $azero"},
		{"mov m", "mov $m1, $m0", "or $m1, $m0, 0"},
		{"mov a", ".worker\nmov $a1, $a0", ".worker\nor $a1, $a0, 0"},
		{"put/get a", ".worker\nput $FP_CLR, $a0\nget $a1, 2\nput 0x7, $a0", ".worker\nuput $FP_CLR, $a0\nuget $a1, 2\nuput 7, $a0"},
		{"ldconst 20 bits", "ldconst $m1, 0x12345", "setzi $m1, 74565"},
		{"ldconst 32 bits", "ldconst $m3, 0x12345678", "setzi $m3, 284280\nor $m3, $m3, 305135616"},
		{"ldconst set", ".set foo, 0x12345678\nldconst $m4, foo", "setzi $m4, 284280\nor $m4, $m4, 305135616"},
		{"ldconst a", ".worker\nldconst $a2, 0x123456", ".worker\nsetzi $a2, 144470\nor $a2, $a2, 1048576"},
		{"ldconst -1", "ldconst $m0, -1", "setzi $m0, 0xfffff\nor $m0, $m0, 0xfff00000"},
		{"ldconst half", ".worker\nldconst $m1, -2.0h\nldconst $a1, 1.0h", ".worker\nsetzi $m1, 49152\nsetzi $a1, 15360"},
		{"swap16 a", ".worker\nswap16 $a1, $a2", ".worker\nroll16 $a1, $a2, $a2"},
		{"swap16 m", "swap16 $m1, $m2", "roll16 $m1, $m2, $m2"},
		{"mov m a", ".worker\nmov $m1, $a2", ".worker\natom $m1, $a2"},
		{"reg offset", ".worker\nld64 $a0:1, $mzero, $m1, $m8\nst32 $a0, $m0, $mzero\nld32 $a1, $m2, $m3, $m4", ".worker\nld64.r $a0:1, $mzero, $m1, $m8\nst32.ar $a0, $m0, $mzero, $mzero\nld32.ar $a1, $m2, $m3, $m4"},
		{"broadcast cmp/sub", ".worker\nf16v4cmpgt $a0:1, $a3:BL, $a0:1\nf32v2cmpgt $a2:3, $a3:B, $a4:5\nf16v2sub $a1, $a2:BU, $a3", ".worker\nf16v4cmpgt.bl $a0:1, $a3:BL, $a0:1\nf32v2cmpgt.b $a2:3, $a3:B, $a4:5\nf16v2sub.bu $a1, $a2:BU, $a3"},
		{"$azero as $mzero", ".worker\nld32 $a1, $m2, $azero, 0\nst32 $m1, $m2, $a15, 3", ".worker\nld32.a $a1, $m2, $mzero, 0\nst32 $m1, $m2, $mzero, 3"},
		{"negative immz12", "or $m1, $mzero, ~0xffffff\nor $m2, $m2, -(1 << 20)", "or $m1, $mzero, 0xff000000\nor $m2, $m2, 0xfff00000"},
		{"or/and $a zimm12", ".worker\nor $a1, $a2, 0x80\nand $a1, $a1, 0xfff\nor $a3, $a3, 0x80000000", ".worker\nor.azi $a1, $a2, 0x80\nand.azi $a1, $a1, 0xfff\nor.aiz $a3, $a3, 0x80000000"},
		{"stm32", "stm32 $m8, $m11, $m9", ".long 0x4cb89000"},
		{"setzi $m14, 0 is nop", "setzi $m14, 0", "nop"},
		{"setzi $a13, 0 is fnop", ".worker\nsetzi $a13, 0", ".worker\nfnop"},
	} {
		sameWords(t, c.name, c.src, c.plain)
	}
}

// The three-operand memory forms imply the delta register $m15.
func TestShortMemoryForms(t *testing.T) {
	sameWords(t, "short",
		".worker\nld32 $m1, $m2, $m3\nld32 $m1, $m2, 4095\nst32 $a1, $m2, 1\nld64 $a0:1, $m0, 4\nst32 $m1, $m2, 0",
		".worker\nld32 $m1, $m2, $m15, $m3\nld32 $m1, $m2, $m15, 4095\nst32 $a1, $m2, $m15, 1\nld64 $a0:1, $m0, $m15, 4\nst32 $m1, $m2, $m15, 0")
}

// Half literals give their IEEE binary16 pattern, rounded to nearest even.
func TestHalfLiterals(t *testing.T) {
	for _, c := range []struct {
		lit  string
		want int64
	}{
		{"1.0h", 15360}, {"1.0009765625h", 15361}, {"-2.0h", 49152}, {"65504.0h", 31743},
		{"6.10352e-5h", 1024}, {"6.09756e-5h", 1023}, {"5.96046e-8h", 1}, {"0.0h", 0},
		{"-0.0h", 32768}, {"infh", 31744}, {"-infh", 64512}, {"0.333251953125h", 13653},
		{"65520.0h", 31744}, // rounds up past the largest finite half
	} {
		sameWords(t, c.lit, ".worker\nsetzi $a0, "+c.lit, ".worker\nsetzi $a0, "+strconv.FormatInt(c.want, 10))
	}
	_, err := Assemble("t.S", []byte(".worker\nsetzi $a0, 0.0\n"), Options{})
	if err == nil || !strings.Contains(err.Error(), "t.S:2:12: setzi: operand 2: missing h suffix from float16 operand 0.0") {
		t.Errorf("real without h: %v", err)
	}
}

// A bundle at 4 mod 8 is preceded by one nop; a label before it names the nop.
func TestBundlePadding(t *testing.T) {
	obj := mustAssemble(t, ".worker\nf32max $a0, $a0, $a0\nL: { add $m1, $m2, $m3 ; fnop }\n{ add $m1, $m2, $m3 ; fnop }\n", Options{})
	w := words(findSection(obj, ".text"))
	want := []uint32{enc(t, "f32max", false, 0, 0, 0), 0x19E00000, enc(t, "add", true, 1, 2, 3), enc(t, "fnop", false),
		enc(t, "add", true, 1, 2, 3), enc(t, "fnop", false)}
	if len(w) != len(want) {
		t.Fatalf("words %08x, want %08x", w, want)
	}
	for i := range w {
		if w[i] != want[i] {
			t.Fatalf("words %08x, want %08x", w, want)
		}
	}
	if s := findSymbol(obj, "L"); s == nil || s.Value != 4 {
		t.Errorf("label L = %+v, want the padding nop at 4", s)
	}
}

// The exchange rows take their operands as LLVM spells them: the fields.
func TestExchangeTextIsFields(t *testing.T) {
	sameWords(t, "delay/send", ".supervisor\ndelay 40\nsend 1, 6, 3\nbri 0x400fc", ".supervisor\n.long 0x40a00028, 0x78200033, 0x4081003f")
}

// run's vertex operand written as a symbol is a relocation even when the
// symbol is an assembly-time constant (the linker knows the image base).
func TestRunSymbolIsRelocation(t *testing.T) {
	obj := mustAssemble(t, ".supervisor\nrun $m0, $m1, vertex\n.set vertex, 262144\n", Options{})
	sec := findSection(obj, ".text")
	if len(sec.Relocs) != 1 || sec.Relocs[0].Type != isa.RelocRun || sec.Relocs[0].Symbol != "vertex" {
		t.Fatalf("relocations %+v, want one R_COLOSSUS_RUN against vertex", sec.Relocs)
	}
	if s := findSymbol(obj, "vertex"); s == nil || s.Section != elf.Absolute || s.Value != 262144 {
		t.Errorf("symbol vertex = %+v, want absolute 262144", s)
	}
}

// run's vertex operand as a literal: the hover text's zimm16 (words from
// the region-0 base, as poplibs writes `run $m, $m, 0`) or ipustack's
// region-0 address; the same word either way.
func TestRunVertexOffset(t *testing.T) {
	sameWords(t, "run zimm16", ".supervisor\nrun $m1, $m2, 0\nrun $m1, $m2, 4\nrun $m1, $m2, 65535",
		".supervisor\nrun $m1, $m2, 0x4c000\nrun $m1, $m2, 0x4c010\nrun $m1, $m2, 0x8bffc")
	_, err := Assemble("t.S", []byte(".supervisor\nrun $m1, $m2, 70000"), Options{})
	if want := "t.S:2:15: run: operand 3: 70000 is neither a vertex offset in words [0, 65535] nor a region-0 address [0x4c000, 0x8bffc]"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// The register-stride forms of ld*step/st*step.
func TestStepRegisterStride(t *testing.T) {
	sameWords(t, "step reg", ".worker\nld64step $a0:1, $mzero, $m1+=, $m3\nst64step $a2:3, $m4, $m1+=, $m3\nld32step $a0, $mzero, $m1+=, $m2\nst32step $a7, $mzero, $m1+=, $m2\nld32step $m0, $mzero, $m1+=, $m2",
		".worker\nld64step.r $a0:1, $mzero, $m1+=, $m3\nst64step.r $a2:3, $m4, $m1+=, $m3\nld32step.ar $a0, $mzero, $m1+=, $m2\nst32step.ar $a7, $mzero, $m1+=, $m2\nld32step $m0, $mzero, $m1+=, $m2")
}

// $aN:B, :BL and :BU select the broadcast rows.
func TestBroadcastOperands(t *testing.T) {
	sameWords(t, "bcast", ".worker\nf32v2mul $a0:1, $a4:B, $a6:7\nf16v2add $a2, $a8:BL, $a9\nf16v4mul $a2:3, $a5:BU, $a6:7",
		".worker\nf32v2mul.b $a0:1, $a4:B, $a6:7\nf16v2add.bl $a2, $a8:BL, $a9\nf16v4mul.bu $a2:3, $a5:BU, $a6:7")
	// The poplibs-only selector forms (rows that assemble but do not execute).
	sameWords(t, "poplibs bcast", ".worker\nf16v4mul $a2:3, $a0:B, $a4:5\nf32v2mul $a0:1, $a4:BL, $a0:1",
		".worker\nf16v4mul.b $a2:3, $a0:B, $a4:5\nf32v2mul.bl $a0:1, $a4:BL, $a0:1")
	if _, err := Assemble("t.S", []byte(".worker\nf32add $a0, $a1:B, $a2\n"), Options{}); err == nil || !strings.Contains(err.Error(), "t.S:2:13: f32add: operand 2: expected an $a register, found $a1:B") {
		t.Errorf("broadcast where none is taken: %v", err)
	}
}
