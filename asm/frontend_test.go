package asm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestFrontEnd checks the dialect of clang's assembler-with-cpp and GNU as
// macros, one case per feature: each source must give the same sections as
// a plain spelling of the same bytes.
func TestFrontEnd(t *testing.T) {
	cases := []struct{ name, src, same string }{
		// Preprocessor.
		{"$NAME expands", "#define IN_PTR m1\n#define V 3\nsetzi $IN_PTR, V", "setzi $m1, 3"},
		{"#define renames a .macro parameter and its $\\ref", "#define ONE m3\n#define TWO N\n.macro M ONE, TWO\nsetzi $\\ONE, \\TWO\n.endm\nM m4, 2", "setzi $m4, 2"},
		{"#define before :BL", "#define ONE a6\n.worker\n.macro M ONE\nf16v4sub $a0:1, $\\ONE:BL, $a2:3\n.endm\nM ONE", ".worker\nf16v4sub $a0:1, $a6:BL, $a2:3"},
		{"quoted macro arguments lose their quotes", ".macro V X Y=\"void\"\n.ifc \\Y, void\nsetzi $m1, 1\n.endif\n.ascii \"\\X\"\n.endm\nV \"ab c\"", "setzi $m1, 1\n.ascii \"ab c\""},
		{"quoted keyword argument", ".macro V Y=void\n.ifnc \\Y, void\nsetzi $m1, 2\n.endif\n.endm\nV Y=\"x\"", "setzi $m1, 2"},
		{"argument opens and closes bundles", ".worker\n.macro L P Q\n\\P f32v2max $a4:5, $a2:3, $a0:1\n\\Q \\P f32v2min $a0:1, $a2:3, $a0:1\n\\Q\n.endm\nL \"{nop;\" \"};\"",
			".worker\n{ nop ; f32v2max $a4:5, $a2:3, $a0:1 }\n{ nop ; f32v2min $a0:1, $a2:3, $a0:1 }"},
		{".ifnc with an empty first string", ".macro N X\n.ifnc, \\X, true\nsetzi $m1, 3\n.endif\n.ifc a, b, c\nsetzi $m1, 4\n.endif\n.ifc a,b, c, b, c\nsetzi $m2, 5\n.endif\n.ifc \"a, b\", a, b\nsetzi $m3, 6\n.endif\n.endm\nN true", "setzi $m1, 3\nsetzi $m3, 6"},
		{"empty ## operand is a placemarker", "#define S(x) a_ ## x ## _b\n#define T(x, y) x ## y\n.set S(), 1\n.set S(q), 2\n.set T(,c), 3\n.set T(d,), 4\nsetzi $m1, a__b + a_q_b + c + d", "setzi $m1, 10"},
		{"$NAME chain", "#define P Q\n#define Q m2\nsetzi $P, 1", "setzi $m2, 1"},
		{"dotted section name", "#define SYM foo\n.section .text.SYM, \"ax\"\nnop", ".section .text.foo, \"ax\"\nnop"},
		{"dotted function-like", "#define CS(x) __run_##x\n.section .data.CS(v), \"aw\"\n.byte 1", ".section .data.__run_v, \"aw\"\n.byte 1"},
		{"dotted middle piece", "#define K kern\n.section .text.K.hot, \"ax\"\nnop", ".section .text.kern.hot, \"ax\"\nnop"},
		{"hash comment lines", "# a comment\n## another\n#\n#not-a-directive either\nnop", "nop"},
		{"hash comment mid line", "setzi $m1, 1 # the rest is a comment, 2\nnop", "setzi $m1, 1\nnop"},
		{"paste left to right", "#define E(a, b, c) x_ ## a ## _ ## b ## _ ## c\n.set E(1, 2, 3), 5\nsetzi $m1, x_1_2_3", "setzi $m1, 5"},
		{"paste with gas escape", "#define S(p) sym_ ## p ## _2\n.macro M P\n.set S(\\P\\()), 7\n.endm\nM q\nsetzi $m1, sym_q_2", "setzi $m1, 7"},
		{"splice inside a name", ".set abc\\\ndef, 4\nsetzi $m1, abcdef", "setzi $m1, 4"},
		{"expansion joins the next name", "#define V(x) sym_##x\n.set V(a).kernel, 3\nsetzi $m1, sym_a.kernel", "setzi $m1, 3"},
		{"__LINE__", "nop\nsetzi $m1, __LINE__", "nop\nsetzi $m1, 2"},
		{"__FILE__", ".data\n.ascii __FILE__", ".data\n.ascii \"t.S\""},
		{"predefined", "#if defined(__IPU__) && __IPU_ARCH_VERSION__ == 21 && defined(__ASSEMBLER__)\nnop\n#endif", "nop"},
		{"elif chain", "#define V 3\n#if V == 1\nsetzi $m1, 1\n#elif V == 2\nsetzi $m1, 2\n#elif V == 3\nsetzi $m1, 3\n#endif", "setzi $m1, 3"},
		// gas macros.
		{"whitespace parameters", ".macro M a b=4\nsetzi $m1, \\a + \\b\n.endm\nM 1\nM 1 2", "setzi $m1, 5\nsetzi $m1, 3"},
		{"whitespace arguments", ".macro M r v op\nsetzi \\r, \\v\n\\op\n.endm\nM $m1 8 nop", "setzi $m1, 8\nnop"},
		{"parenthesised argument", ".macro M v s\nsetzi $m1, \\v\n.set \\s, 1\n.endm\nM (2 + 4) q", "setzi $m1, 6"},
		{"expression argument", ".macro M v\nsetzi $m1, \\v\n.endm\nM 2 + 4", "setzi $m1, 6"},
		{"empty quoted argument", ".macro M a=\"\" b=2\n.ifb \\a\nsetzi $m1, \\b\n.endif\n.endm\nM \"\" 3", "setzi $m1, 3"},
		{"default quoted empty", ".macro M n=\"\"\n.ifnb \\n\nnop\n.endif\nsetzi $m1, 1\n.endm\nM", "setzi $m1, 1"},
		{"vararg keeps the line", ".macro M first, rest:vararg\n.irp v, \\rest\nsetzi $m1, \\v\n.endr\n.endm\nM 0, 1, 2", "setzi $m1, 1\nsetzi $m1, 2"},
		{"ifc quoted", ".macro M s\n.ifnc \"\\s\", \"NONE\"\nsetzi $m1, 1\n.endif\n.endm\nM NONE\nM x", "setzi $m1, 1"},
		// Directives.
		{"extern", ".extern ext1, ext2\nnop", "nop"},
		{"globl whitespace list", ".globl a b\na: nop\nb: nop", "nop\nnop"},
		{"globl with @function", ".globl f, @function\nf: nop", "nop"},
		{"type without comma", ".type f @function\nf: nop", "nop"},
		{"hidden", ".hidden f\n.globl f\nf: nop", "nop"},
		{"dc", ".data\n.dc.b 1\n.dc.w 2\n.dc.l 3", ".data\n.byte 1\n.short 2\n.long 3"},
		{"leb128", ".data\n.uleb128 624485\n.sleb128 -123456, 63, -64", ".data\n.byte 0xe5, 0x8e, 0x26, 0xc0, 0xbb, 0x78, 0x3f, 0x40"},
		{"fill", ".data\n.fill 2, 2, 0x1234\n.fill 1", ".data\n.byte 0x34, 0x12, 0x34, 0x12, 0"},
		{"colossus switches", ".allow_invalid_repeat\n.warn_on_invalid_bundles\n.error_on_invalid_bundles\n.allow_invalid_operands\n.error_on_invalid_operands\n.allow_invalid_execution_mode\n.error_on_invalid_execution_mode\nnop", "nop"},
		{"debug directives", ".file \"x.c\"\n.loc 1 2 3\n.cfi_startproc\nnop\n.cfi_def_cfa_offset 8\n.cfi_endproc", "nop"},
		{"section name up to comma", ".macro M p\n.section .text.F(\\p), \"ax\"\nnop\n.endm\nM q", ".section .text.F(q), \"ax\"\nnop"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := mustAssemble(t, c.src, Options{})
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

// TestFrontEndErrors checks the messages of item 6: no cascade after a
// rejected instruction, and unknown $NAME explained.
func TestFrontEndErrors(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // every error, in order
	}{
		{"rejected instruction keeps its size",
			".worker\n.p2align 3\nbogus $m1\nnop\n{ add $m1, $m1, 1 ; fnop }\n{ add $m1, $m1, 1 ; fnop }",
			[]string{`t.S:3:1: unknown mnemonic "bogus"`}},
		{"rejected bundle keeps its size",
			".worker\n.p2align 3\n{ frob $a0 ; fnop }\n{ add $m1, $m1, 1 ; fnop }",
			[]string{`t.S:3:3: unknown mnemonic "frob"`}},
		{"bad operands keep the size",
			".worker\n.p2align 3\nsetzi $m1, $a1\nnop\n{ add $m1, $m1, 1 ; fnop }",
			[]string{`t.S:3:12: setzi: operand 2: expected an immediate, found $a1`}},
		{"macro defined later",
			"setzi $L, 1\n#define L m2",
			[]string{`t.S:1:7: setzi: unknown register or control register $L (L is a macro defined later, at t.S:2:9: #define it before its use)`}},
		{"function-like macro without arguments",
			"#define F(x) m1\nsetzi $F, 1",
			[]string{`t.S:2:7: setzi: unknown register or control register $F (F is a function-like macro, defined at t.S:1:9: it expands only when followed by its (arguments))`}},
		{"undefined macro",
			"#define U m1\n#undef U\nsetzi $U, 1",
			[]string{`t.S:3:7: setzi: unknown register or control register $U (U is a macro, defined at t.S:1:9, that is not in effect here: #undef?)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Assemble("t.S", []byte(c.src), Options{})
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error %v, want %s", err, strings.Join(c.want, "; "))
			}
			var got []string
			for _, e := range list {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}
