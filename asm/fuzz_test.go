package asm

import (
	"testing"
)

// fuzzSeeds are whole programs exercising most of the language.
var fuzzSeeds = []string{
	// LLVM Colossus aliases, short memory forms, half literals, padding.
	".worker\nzero $a0\nzero $m1\nmov $m1, $m0\nmov $a1, $a0\nldconst $a2, 0x123456\nldconst $m1, -2.0h\nsetzi $a0, -infh\n",
	"sub $m0, $m0, 12345\naddz $m0, $m1, 42\nsubs $m0, 42, $m1\nld32 $m1, $m2, 4095\nst32 $m1, $m2, $m3\nput 0x7, $a0\nget $a0, 1\n",
	".worker\nnop\nL: { add $m1, $m2, $m3 ; fnop }\n{ ldconst $m1, 5 ; fnop }\nsetzi $a0, 1.0\n",
	".supervisor\nrun $m0, $m1, v\n.set v, 262144\ndelay 40\nsend 1, 6, 3\nbri 0x400fc\n",
	".worker\nf32v2mul $a0:1, $a4:B, $a6:7\nf16v2add $a2, $a8:BL, $a9\nld64step $a0:1, $mzero, $m1+=, $m3\nmov $a2:3, $azeros\n",
	kernelLike,
	"#define X(a, b) a ## b\n.set N, X(1, 2)\n.rept N\nnop\n.endr",
	".macro M a, b=2, c:vararg\n.Lm\\@: setzi $m1, \\a + \\b\n.ifnb \\c\nM \\c\n.endif\n.endm\nM 1, 2, 3, 4, 5",
	".worker\n.p2align 3\n{ ld64step $a0:1, $mzero, $m7+=, 1 ; f16v4hihov4amp $a6:7, $a0:1, $azeros, 1 }\n1: brnzdec $m1, 1b",
	".data\n.long 1f - 0f\n0: .asciz \"x\\n\"\n1: .float 1.5\n.half -2\n.quad ext",
	".section .bss.x, \"aw\", @nobits\n.space 16\n.globl x\n.type x, @object\nx: .zero 4\n.size x, . - x",
	".irp r, 1, 2, 3\nsetzi $m\\r, \\r\n.endr\n.irpc c, 456\nsetzi $m\\c, \\c\n.endr",
	"#if defined(A) && A > 1\nnop\n#elif !defined(B)\nsetzi $m1, 1\n#else\n#error no\n#endif",
}

// kernelLike is written in the style of the public IPU kernels.
const kernelLike = `
#define STRIDE 16
#ifndef ROWS
#define ROWS 12
#endif
	.set COLS, 64
	.set GROUPS, COLS / STRIDE

	.macro PARTITION
	get $m4, $WSR
	and $m4, $m4, 7
	ld32 $m5, $mvertex_base, $m15, 9
	mul $m6, $m4, $m5
	.endm

	.macro SUPER name, rows, worker
	.section .text.\name, "ax", @progbits
	.globl \name
	.p2align 2
	.type \name, @function
\name:
	.supervisor
	add $m11, $m11, -48
	setzi $m0, (\rows) / 6
	st32 $m0, $m11, $m15, 9
	setzi $m0, \worker
	runall $m0, $m11, 0
	sync 1
	br $m10
	.size \name, . - \name
	.endm

	SUPER kernel_small, ROWS, kernel_worker

	.section .text.kernel_worker, "ax", @progbits
	.worker
	.p2align 3
kernel_worker:
	PARTITION
	brz $m5, .Ldone_\@
	setzi $a6, 4
	{
		add $m7, $m2, 0
		uput $FP_CLR, $a6
	}
	tapack $m10:11, $m7, $m3, $m9
	nop // bundles must start 8-byte aligned; the assembler does not pad
	.rept GROUPS
	{
		ld2x64pace $a0:1, $a2:3, $m10:11+=, $mzero, 0b0000
		f16v4hihov4amp $a6:7, $a0:1, $a2:3, 1
	}
	.endr
1:	st64pace $a6:7, $m10:11+=, $mzero, 0b00
	brnzdec $m5, 1b
.Ldone_\@:
	exitz $mzero
	.size kernel_worker, . - kernel_worker
`

func TestKernelLike(t *testing.T) {
	obj := mustAssemble(t, kernelLike, Options{})
	if s := findSymbol(obj, "kernel_small"); s == nil || s.Size != 28 {
		t.Errorf("kernel_small = %+v", s)
	}
	if s := findSection(obj, ".text.kernel_worker"); s == nil || s.Align != 8 {
		t.Errorf("worker section = %+v", s)
	}
}

// FuzzAssemble: any input terminates quickly with an object or errors, and
// never panics (catchPanics is off in tests).
func FuzzAssemble(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	for _, c := range errorCases {
		f.Add(c.src)
	}
	files := map[string]string{"a.h": "#include \"b.h\"\n.macro INC\nnop\n.endm\n", "b.h": "#define B 1\n"}
	f.Fuzz(func(t *testing.T, src string) {
		obj, err := Assemble("f.S", []byte(src), Options{ReadFile: memFS(files)})
		if (obj == nil) == (err == nil) {
			t.Fatalf("object %v and error %v", obj != nil, err)
		}
		if err != nil {
			for _, e := range err.(ErrorList) {
				if e.Line < 1 || e.Col < 1 || e.File == "" {
					t.Fatalf("bad position in %v", e)
				}
			}
		}
	})
}

// FuzzPreprocess runs the C preprocessor alone: it must end, bounded, on
// any input, and every error must have a position.
func FuzzPreprocess(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add("#define IN m1\n#define S(x) .text.x\n.section S(a).IN\n$IN $S ## #\n# c\n#define P(a,b) a##_##b##_\\\n1\nP(1,2)")
	f.Fuzz(func(t *testing.T, src string) {
		errs := &errSink{file: "f.S"}
		p := newCPP(Options{ReadFile: memFS(map[string]string{"a.h": "#include \"a.h\"\n"})}, errs)
		p.file("f.S", []byte(src))
		for _, e := range errs.list {
			if e.Line < 1 || e.Col < 1 || e.File == "" {
				t.Fatalf("bad position in %v", e)
			}
		}
	})
}

// FuzzMacro puts the input inside a gas macro and calls it with gas-style
// arguments, so that the fuzzer explores substitution and argument splitting.
func FuzzMacro(f *testing.F) {
	f.Add("setzi \\a, \\b", "$m1 2")
	f.Add(".irp r, \\b\nsetzi $m\\r, \\@\n.endr", "x 1, 2 (3 + 4) \"\"")
	f.Add("\\a\\()_x: M \\b", "l, y")
	f.Fuzz(func(t *testing.T, body, args string) {
		src := ".macro M a b=1 c:vararg\n" + body + "\n.endm\nM " + args + "\n"
		obj, err := Assemble("f.S", []byte(src), Options{})
		if (obj == nil) == (err == nil) {
			t.Fatalf("object %v and error %v", obj != nil, err)
		}
		if err != nil {
			for _, e := range err.(ErrorList) {
				if e.Line < 1 || e.Col < 1 || e.File == "" {
					t.Fatalf("bad position in %v", e)
				}
			}
		}
	})
}
