// Package asm is the IPU21 assembler: it turns one assembly source file
// (plus the files it includes) into a relocatable elf.Object. Instructions
// are encoded from the isa table, so the text isa.Format prints assembles
// back to the same words.
//
//	obj, err := asm.Assemble("gemm.S", src, asm.Options{Defines: map[string]string{"ROWS": "12"}})
//
// Errors come back as an ErrorList of "file:line:col: message" entries that
// point at the text as written (through #include, #define and .macro); an
// error inside a macro expansion also names the call site.
//
// # Preprocessor
//
// A C preprocessor pass runs first, as clang's -x assembler-with-cpp:
// #define (object- and function-like, with # stringizing, ## pasting
// (left to right) and __VA_ARGS__), #undef, #if/#ifdef/#ifndef/#elif/#else/
// #endif with integer expressions and defined(X), #include "file" (relative
// to the including file, then Options.IncludeDirs; <file> searches the same
// list), #error, and Options.Defines as -D. Backslash-newline splices lines
// (also inside a name). __IPU__ (1), __IPU_ARCH_VERSION__ (21) and
// __ASSEMBLER__ (1) are predefined; __LINE__ and __FILE__ expand. A line
// whose # starts no directive (# text, ## text, #word) is a comment, as is
// the rest of a line after #. Macros expand inside $NAME ($ is not part of
// a name in this mode: #define IN_PTR m1 makes $IN_PTR $m1) and inside
// dotted names split at '.' (.text.SYM, .data.F(x)). Function-like macro
// calls must fit on one logical line.
//
// # Statements
//
// Comments are // and /* */. Statements are separated by newlines or ';'.
// A statement is any number of labels (name: or a numeric local label 1:),
// then a directive, a macro call, an instruction, a bundle, or an
// assignment NAME = expr. Mnemonics and directives are case-insensitive;
// symbols and macro names are not.
//
// Expressions use C operators and precedence: unary - ~ ! +, * / %, + -,
// << >>, comparisons, & ^ |, && ||, and parentheses. Numbers are decimal,
// 0x hex, 0b binary or 0-prefixed octal; 'c' is a character. `.` is the
// address of the current statement; 1f and 1b name the next and previous
// numeric label 1. Values are constants, section addresses (label + offset)
// or undefined symbols + offset. The difference of two addresses in one
// section is a constant; any value not known when it is written (a forward
// label, a later .set) is resolved at the end of the file. An address used
// where a number is encoded becomes a relocation against the label (or the
// section, for numeric labels and `.`) with the offset as addend; the
// operand's row must have a relocation type, else it is an error. Undefined
// symbols become global undefined symbols of the object. A data item may
// name its relocation with an LLVM Colossus symbol variant:
// `.short (x + 4)@relative@16@s2`, `.long x@abs18@s2`, `.long x@abs19@s2`.
// `.set $name, value` (and `$name = value`) defines a symbol whose name
// starts with `$` when the rest is not a register or control register name;
// once defined, `$name` is that value wherever an operand is written.
//
// # Directives
//
//	.section name[, "awx"[, @progbits|@nobits]]   .text .data .bss
//	.pushsection .popsection .previous
//	.globl/.global .local .weak sym, ...            .type sym, @function|@object|@notype
//	.size sym, expr                                 .set/.equ NAME, expr (re-settable), .equiv
//	.byte .short/.hword/.2byte .long/.word/.int/.4byte .quad/.8byte  expr, ...
//	.float/.single .double .half (IEEE f16)        .ascii .asciz/.string "..."
//	.space/.skip n[, fill]  .zero n                 .p2align n[, fill[, max]]
//	.align n / .balign n[, fill[, max]] (n bytes, a power of two)
//	.if .ifdef .ifndef .ifeq .ifne .iflt .ifle .ifgt .ifge .ifb .ifnb .ifc .ifnc
//	.elseif .else .endif                            .rept n / .irp p, a, b / .irpc p, abc ... .endr
//	.macro name [p[:req|:vararg][=default]], ...  ... .endm   .exitm  .purgem name
//	.supervisor .worker                             .error "msg"   .extern sym, ...
//	.hidden .internal .protected sym                .dc.b .dc.w .dc .dc.l .dc.a .dc.q  expr, ...
//	.uleb128 .sleb128 expr, ...                     .fill repeat[, size[, value]]
//	.allow_optimizations .allow_invalid_repeat .allow_invalid_operands .allow_invalid_execution_mode
//	.warn_on_invalid_bundles and their .error_on_ forms (LLVM Colossus switches: accepted, no effect)
//	.file .ident .loc .cfi_* .addrsig (debug and unwind information: accepted, dropped)
//
// Sections named .text* default to "ax", .data* to "aw", .bss* to "aw"
// @nobits, others to "a". A section's alignment is the largest one
// requested, at least 4 when it holds code and 8 when it holds bundles.
// Alignment padding in code is nop words; elsewhere it is the fill byte (0).
//
// Macro bodies refer to parameters as \name, also inside names and strings
// (.Lloop_\name, .text.\name); \() separates a parameter from following
// text; \@ is the number of macro expansions before this one, for unique
// labels. Parameters and arguments are separated by commas or, as in GNU
// as, white space (`.macro M a b=4`, `M x 8 nop`); parentheses group, and
// white space next to a binary operator does not split (`M x + 4` is one
// argument); "" is an empty argument. Arguments may be named (p=value);
// missing ones take their default, :req ones must be given, and a :vararg
// parameter takes the rest of the line, commas included. Expansion depth is
// limited to 100 and the total work of expansion is bounded, so recursive
// macros fail with an error rather than hang.
//
// # Instructions
//
// An instruction is `mnemonic op, op, ...`, or `mnemonic.variant ...` to
// force one isa row. Operands are registers ($m0..$m15, $a0..$a15 and the
// aliases isa.ParseRegister knows: $mzero $azero $lr $fp $sp $mworker_base
// $mvertex_base $azeros $aqzero $ap0..$ap15), register groups ($a0:1, $a4:7, $m2:3),
// post-incremented registers ($m3+=, $m2:3+=), the delta loads' forms
// ($m1++ a post-incremented pointer, $m3@ a delta register the load also
// writes, $m5>> a mini-delta, $a5:7 the upper three registers of a quad),
// control registers by name
// ($WSR, $FP_CLR: resolved in the row's CSR space and the current context)
// or by number, and expressions.
//
// Among the rows of a mnemonic the first whose operand kinds match the
// written operands and whose fields accept the values wins — the rule
// isa.Format relies on. Rows the current context (.supervisor or .worker)
// cannot execute are not considered, and naming only such rows is an error;
// before either directive every row is allowed.
//
// A bundle `{ inst ; inst }` (it may span lines) holds one main-pipe and one
// aux-pipe instruction, both co-issuable, in worker code. The main one is
// emitted first with isa.CoIssueBit set, whatever the written order. The
// bundle that would start at 4 mod 8 within its section is preceded by one
// nop (0x19E00000, the LLVM Colossus padding word), as Graphcore's assembler
// aligns bundles (docs/isa.md "Bundle alignment").
package asm
