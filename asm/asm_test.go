package asm

import (
	"encoding/binary"
	"fmt"
	"io/fs"
	"math"
	"reflect"
	"testing"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
)

func init() { catchPanics = false } // let tests and the fuzzer see panics

// memFS serves #include files from a map.
func memFS(files map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}

func mustAssemble(t *testing.T, src string, opts Options) *elf.Object {
	t.Helper()
	if opts.ReadFile == nil {
		opts.ReadFile = memFS(nil)
	}
	obj, err := Assemble("t.S", []byte(src), opts)
	if err != nil {
		t.Fatalf("assemble:\n%s\nerror:\n%v", src, err)
	}
	return obj
}

func findSection(obj *elf.Object, name string) *elf.Section {
	for _, s := range obj.Sections {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func findSymbol(obj *elf.Object, name string) *elf.Symbol {
	for _, s := range obj.Symbols {
		if s.Name == name {
			return s
		}
	}
	return nil
}

func words(s *elf.Section) []uint32 {
	if s == nil {
		return nil
	}
	w := make([]uint32, len(s.Data)/4)
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(s.Data[4*i:])
	}
	return w
}

// enc encodes one row by ID, for expected words.
func enc(t *testing.T, id string, coissue bool, vals ...int64) uint32 {
	t.Helper()
	r := isa.ByID(id)
	if r == nil {
		t.Fatalf("no row %s", id)
	}
	w, err := r.Encode(vals, coissue)
	if err != nil {
		t.Fatal(err)
	}
	return w[0]
}

// TestEquivalent checks features by assembling a source that uses them and a
// plain source that spells out the same bytes, section by section.
func TestEquivalent(t *testing.T) {
	files := map[string]string{
		"inc/defs.h":     "#define INCLUDED 7\n#include \"more.h\"\n",
		"inc/more.h":     "#define MORE 9\n",
		"sys/sysdefs.h":  "#define SYS 11\n",
		"inc/macros.inc": ".macro LOADC reg, v\n\tsetzi \\reg, \\v\n.endm\n",
	}
	cases := []struct {
		name, src, same string
		defines         map[string]string
	}{
		{"define", "#define X 5\nsetzi $m1, X", "setzi $m1, 5", nil},
		{"function macro", "#define ADD(a, b) ((a) + (b))\nsetzi $m1, ADD(2, 3) * 2", "setzi $m1, 10", nil},
		{"nested macros", "#define A B + 1\n#define B 4\nsetzi $m1, A", "setzi $m1, 5", nil},
		{"self reference stops", "#define nop nop\nnop", "nop", nil},
		{"undef", "#define X 1\n#undef X\n#ifdef X\nsetzi $m1, 1\n#else\nsetzi $m1, 2\n#endif", "setzi $m1, 2", nil},
		{"if elif else", "#define V 2\n#if V == 1\nnop\n#elif V == 2 && defined(V)\nsetzi $m1, 2\n#else\nsetzi $m1, 3\n#endif", "setzi $m1, 2", nil},
		{"if defined without parens", "#if defined V || !defined W\nsetzi $m1, 1\n#endif", "setzi $m1, 1", nil},
		{"nested if in false branch", "#if 0\n#if 1\nnop\n#endif\nbad ' text\n#else\nsetzi $m2, 4\n#endif", "setzi $m2, 4", nil},
		{"ifndef", "#ifndef NOPE\nsetzi $m1, 1\n#endif", "setzi $m1, 1", nil},
		{"defines option", "setzi $m1, N\n#if FLAG\nnop\n#endif", "setzi $m1, 42\nnop", map[string]string{"N": "42", "FLAG": ""}},
		{"include", "#include \"inc/defs.h\"\nsetzi $m1, INCLUDED + MORE", "setzi $m1, 16", nil},
		{"include dirs", "#include <sysdefs.h>\nsetzi $m1, SYS", "setzi $m1, 11", nil},
		{"include assembler macros", "#include \"inc/macros.inc\"\nLOADC $m3, 12", "setzi $m3, 12", nil},
		{"paste", "#define CAT(a, b) a ## b\nsetzi $m1, CAT(1, 2)", "setzi $m1, 12", nil},
		{"stringize", "#define S(x) #x\n.data\n.ascii S(hello)", ".data\n.ascii \"hello\"", nil},
		{"variadic", "#define F(a, ...) a + __VA_ARGS__\n.data\n.byte F(1, 2)", ".data\n.byte 3", nil},
		{"line continuation", "#define LONG 1 + \\\n 2\nsetzi $m1, LONG", "setzi $m1, 3", nil},
		{"ipu arch predefined", "#if __IPU_ARCH_VERSION__ >= 21\nnop\n#endif", "nop", nil},
		{"comments", "setzi $m1, 1 // one\n/* a\n block */ setzi $m2, /* two */ 2", "setzi $m1, 1\nsetzi $m2, 2", nil},
		{"semicolons", "setzi $m1, 1; setzi $m2, 2 ;nop", "setzi $m1, 1\nsetzi $m2, 2\nnop", nil},
		{"expressions", "setzi $m1, (1 << 4 | 3) ^ 1 & ~0\nsetzi $m2, 7 % 4 + 10 / 3 - -1\nsetzi $m3, (3 > 2) + (2 >= 2) + (1 < 0) + (1 == 1) + (1 != 1) + !0 + (1 && 0) + (0 || 2)",
			"setzi $m1, 18\nsetzi $m2, 7\nsetzi $m3, 5", nil},
		{"numbers", "setzi $m1, 0x1F + 0b101 + 010 + 'A'", "setzi $m1, 31 + 5 + 8 + 65", nil},
		{"set is resettable", ".set N, 1\nsetzi $m1, N\n.set N, N + 1\nsetzi $m1, N\nN = 10\nsetzi $m1, N\n.equ M, N * 2\nsetzi $m1, M",
			"setzi $m1, 1\nsetzi $m1, 2\nsetzi $m1, 10\nsetzi $m1, 20", nil},
		{"set forward", "setzi $m1, LATER + 1\n.set LATER, 4", "setzi $m1, 5", nil},
		{"set value at use", "setzi $m1, N + F\n.set N, 1\nsetzi $m2, N\n.set N, 2\n.set F, 0", "setzi $m1, 2\nsetzi $m2, 1", nil},
		{"label difference", "a: nop\nnop\nb: setzi $m1, b - a\nsetzi $m2, c - b\nnop\nc:", "nop\nnop\nsetzi $m1, 8\nsetzi $m2, 12\nnop", nil},
		{"numeric labels", "1: nop\n1: setzi $m1, 1b - 1b\nsetzi $m2, 1f - 1b\nnop\n1: setzi $m3, 2f - 1b\n2:", "nop\nsetzi $m1, 0\nsetzi $m2, 12\nnop\nsetzi $m3, 4", nil},
		{"numeric label back", "2: nop\nnop\nsetzi $m1, . - 2b\n.set D, . - 2b", "nop\nnop\nsetzi $m1, 8", nil},
		{"dot", "start: nop\nsetzi $m1, . - start\nsetzi $m2, end - .\nend:", "nop\nsetzi $m1, 4\nsetzi $m2, 4", nil},
		{"rept", ".rept 3\nnop\n.endr", "nop\nnop\nnop", nil},
		{"rept zero", ".rept 0\nbad\n.endr\nnop", "nop", nil},
		{"nested rept", ".set K, 0\n.rept 2\n.rept 2\n.set K, K + 1\nsetzi $m1, K\n.endr\n.endr", "setzi $m1, 1\nsetzi $m1, 2\nsetzi $m1, 3\nsetzi $m1, 4", nil},
		{"irp", ".irp r, $m1, $m2, $m3\nsetzi \\r, 1\n.endr", "setzi $m1, 1\nsetzi $m2, 1\nsetzi $m3, 1", nil},
		{"irpc", ".irpc d, 123\nsetzi $m\\d, \\d\n.endr", "setzi $m1, 1\nsetzi $m2, 2\nsetzi $m3, 3", nil},
		{"if elseif else", ".set V, 2\n.if V == 1\nnop\n.elseif V == 2\nsetzi $m1, 2\n.else\nsetzi $m1, 3\n.endif", "setzi $m1, 2", nil},
		{"if nested false", ".if 0\n.if 1\nnop\n.endif\n.else\nsetzi $m1, 1\n.endif", "setzi $m1, 1", nil},
		{"ifdef", "x: nop\n.ifdef x\nsetzi $m1, 1\n.endif\n.ifndef y\nsetzi $m1, 2\n.endif\n.ifdef y\nnop\n.endif", "nop\nsetzi $m1, 1\nsetzi $m1, 2", nil},
		{"ifeq family", ".ifeq 0\nsetzi $m1, 1\n.endif\n.ifne 0\nnop\n.endif\n.ifgt 1\nsetzi $m1, 2\n.endif\n.iflt 1\nnop\n.endif", "setzi $m1, 1\nsetzi $m1, 2", nil},
		{"ifc", ".ifc a, a\nsetzi $m1, 1\n.endif\n.ifnc a, b\nsetzi $m1, 2\n.endif", "setzi $m1, 1\nsetzi $m1, 2", nil},
		{"macro positional", ".macro SET r, v\nsetzi \\r, \\v\n.endm\nSET $m1, 3\nSET $m2, 4 + 1", "setzi $m1, 3\nsetzi $m2, 5", nil},
		{"macro named and default", ".macro SET r, v=7\nsetzi \\r, \\v\n.endm\nSET $m1\nSET v=2, r=$m2\nSET $m3,", "setzi $m1, 7\nsetzi $m2, 2\nsetzi $m3, 7", nil},
		{"macro vararg", ".macro ALL r:req, vs:vararg\n.irp v, \\vs\nsetzi \\r, \\v\n.endr\n.endm\nALL $m1, 1, 2, 3", "setzi $m1, 1\nsetzi $m1, 2\nsetzi $m1, 3", nil},
		{"macro ifb", ".macro M a\n.ifb \\a\nnop\n.else\nsetzi $m1, \\a\n.endif\n.endm\nM\nM 5", "nop\nsetzi $m1, 5", nil},
		{"macro counter", ".macro L\n.Lx_\\@: setzi $m1, .Lx_\\@ - .Lx_0 + \\@\n.endm\nL\nL\nL", "setzi $m1, 0\nsetzi $m1, 5\nsetzi $m1, 10", nil},
		{"macro nested call", ".macro INNER v\nsetzi $m1, \\v\n.endm\n.macro OUTER v\nINNER \\v + 1\nINNER \\v + 2\n.endm\nOUTER 10", "setzi $m1, 11\nsetzi $m1, 12", nil},
		{"macro defining macro", ".macro DEF name\n.macro \\name\nnop\n.endm\n.endm\nDEF foo\nfoo", "nop", nil},
		{"macro in name", ".macro FN name\n.section .text.\\name, \"ax\", @progbits\n\\name: nop\n.endm\nFN f1", ".section .text.f1, \"ax\"\nf1: nop", nil},
		{"macro concat", ".macro R n\nsetzi $m\\n\\(), \\n\n.endm\nR 4", "setzi $m4, 4", nil},
		{"exitm", ".macro M n\nsetzi $m1, \\n\n.if \\n > 1\n.exitm\n.endif\nnop\n.endm\nM 1\nM 2", "setzi $m1, 1\nnop\nsetzi $m1, 2", nil},
		{"recursive macro with stop", ".macro DOWN n\n.if \\n\nsetzi $m1, \\n\nDOWN \\n - 1\n.endif\n.endm\nDOWN 3", "setzi $m1, 3\nsetzi $m1, 2\nsetzi $m1, 1", nil},
		{"purgem then redefine", ".macro M\nnop\n.endm\n.purgem M\n.macro M\nsetzi $m1, 1\n.endm\nM", "setzi $m1, 1", nil},
		{"macro shadows mnemonic", ".macro nop\nsetzi $m1, 9\n.endm\nnop", "setzi $m1, 9", nil},
		{"data", ".data\n.byte 1, 255, -1\n.short 0x1234\n.hword -2\n.long 0xdeadbeef\n.word 1\n.quad 0x0102030405060708",
			".data\n.byte 1, 0xff, 0xff\n.byte 0x34, 0x12, 0xfe, 0xff\n.byte 0xef, 0xbe, 0xad, 0xde, 1, 0, 0, 0\n.byte 8, 7, 6, 5, 4, 3, 2, 1", nil},
		{"floats", ".data\n.float 1.5, -2\n.half 1.0\n.double 0.5", fmt.Sprintf(".data\n.long 0x%x, 0x%x\n.short 0x3c00\n.quad 0x%x", math.Float32bits(1.5), math.Float32bits(-2), math.Float64bits(0.5)), nil},
		{"strings", ".data\n.ascii \"ab\\n\"\n.asciz \"c\"\n.string \"\\x41\\101\"", ".data\n.byte 'a', 'b', 10, 'c', 0, 65, 65, 0", nil},
		{"space", ".data\n.byte 1\n.space 3\n.zero 2\n.space 2, 0xaa", ".data\n.byte 1, 0, 0, 0, 0, 0, 0xaa, 0xaa", nil},
		{"align data", ".data\n.byte 1\n.p2align 2\n.byte 2\n.balign 8, 0xff\n.byte 3\n.align 2\n.byte 4",
			".data\n.byte 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 3, 0, 4", nil},
		{"align code pads with nop", "setzi $m1, 1\n.p2align 3\nsetzi $m1, 2", "setzi $m1, 1\nnop\nsetzi $m1, 2", nil},
		{"label diff in data", ".data\na: .long b - a\nb: .short b - a", ".data\n.long 4\n.short 4", nil},
		{"forced variant", "add.zi $m1, $m2, 5\nadd $m1, $m2, 5", fmt.Sprintf(".long 0x%x, 0x%x", enc(t, "add.zi", false, 1, 2, 5), enc(t, "add.si", false, 1, 2, 5)), nil},
		{"row by value", "add $m1, $m2, -1\nadd $m1, $m2, 40000", fmt.Sprintf(".long 0x%x, 0x%x", enc(t, "add.si", false, 1, 2, -1), enc(t, "add.zi", false, 1, 2, 40000)), nil},
		{"row by register kind", ".worker\nld32 $m1, $m2, $m3, 4\nld32 $a1, $m2, $m3, 4\nld32 $m1, $m2, $m3, $m4",
			fmt.Sprintf(".long 0x%x, 0x%x, 0x%x", enc(t, "ld32", false, 1, 2, 3, 4), enc(t, "ld32.a", false, 1, 2, 3, 4), enc(t, "ld32.r", false, 1, 2, 3, 4)), nil},
		{"registers", ".worker\nld64step $a0:1, $mzero, $m7+=, 1\nld2x64pace $a0:1, $a2:3, $m10:11+=, $mzero, 0b0101\nld128 $a4:7, $sp, $m15, 1\nf16v4add $a0:1, $azeros, $a2:3",
			fmt.Sprintf(".long 0x%x, 0x%x, 0x%x, 0x%x", enc(t, "ld64step", false, 0, 15, 7, 1), enc(t, "ld2x64pace", false, 0, 2, 10, 15, 5),
				enc(t, "ld128", false, 4, 12, 15, 1), enc(t, "f16v4add", false, 0, 14, 2)), nil},
		{"csr by name and number", ".worker\nget $m1, $WSR\nget $m1, 1\nuput $FP_CLR, $a6\n.supervisor\nget $m2, $SSR\nput $CCCSLOAD, $m4",
			fmt.Sprintf(".long 0x%x, 0x%x, 0x%x, 0x%x, 0x%x", enc(t, "get", false, 1, 1), enc(t, "get", false, 1, 1), enc(t, "uput", false, 1, 6),
				enc(t, "get", false, 2, 1), enc(t, "put", false, 0x50, 4)), nil},
		{"case insensitive mnemonic", "SETZI $M1, 1", "setzi $m1, 1", nil},
		{"bundle", ".worker\n{ add $m1, $m2, $m3 ; f32add $a0, $a1, $a2 }\n{\n\tf32add $a0, $a1, $a2\n\tsetzi $m1, 3\n}",
			fmt.Sprintf(".long 0x%x, 0x%x, 0x%x, 0x%x", enc(t, "add", true, 1, 2, 3), enc(t, "f32add", false, 0, 1, 2),
				enc(t, "setzi", true, 1, 3), enc(t, "f32add", false, 0, 1, 2)), nil},
		{"bundle with macro", "#define AMP f16v4hihov4amp\n.worker\n{ ld64step $a0:1, $mzero, $m7+=, 1 ; AMP $a6:7, $a0:1, $azeros, 1 }",
			fmt.Sprintf(".long 0x%x, 0x%x", enc(t, "ld64step", true, 0, 15, 7, 1), enc(t, "f16v4hihov4amp", false, 6, 0, 14, 1)), nil},
		{"bundle forward constant", ".worker\n{ setzi $m1, N ; fnop }\n.set N, 3", fmt.Sprintf(".long 0x%x, 0x%x", enc(t, "setzi", true, 1, 3), enc(t, "fnop", false)), nil},
		{"instruction after label on same line", "x: y: setzi $m1, y - x", "setzi $m1, 0", nil},
		{"text data switch", ".text\nnop\n.data\n.byte 1\n.text\nnop\n.section .data\n.byte 2", "nop\nnop\n.data\n.byte 1, 2", nil},
		{"push pop previous", "nop\n.pushsection .data\n.byte 1\n.popsection\nnop\n.data\n.byte 2\n.previous\nnop", "nop\nnop\nnop\n.data\n.byte 1, 2", nil},
		{"allow optimizations", ".allow_optimizations\nnop", "nop", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := Options{Defines: c.defines, ReadFile: memFS(files), IncludeDirs: []string{"sys"}}
			got := mustAssemble(t, c.src, opts)
			want := mustAssemble(t, c.same, Options{})
			for _, ws := range want.Sections {
				gs := findSection(got, ws.Name)
				if gs == nil {
					t.Fatalf("no section %s", ws.Name)
				}
				if !reflect.DeepEqual(gs.Data, ws.Data) {
					t.Errorf("section %s:\n got % x\nwant % x", ws.Name, gs.Data, ws.Data)
				}
			}
		})
	}
}
