// gelu_f16: y = GELU(x) on N f16 values, tanh form
// 0.5x(1 + tanh(s)), s = sqrt(2/pi)(x + 0.044715x^3); f16 arithmetic
// (PRECISE=0) or f32 arithmetic (PRECISE=1).
//
// ABI (supervisor entry gelu_f16): $m2 = out, $m3 = in (both 8-byte
// aligned; out == in allowed, other overlap not), $m10 = return address.
// Clobbers $m0, $m1 and the kernel's vertex words. Parameters N (multiple
// of 4), PRECISE (0 or 1).
//
// PRECISE=0. Per four values (one 64-bit word) a worker issues nine bundles, one aux
// operation each (f16v4 unless noted), all rounded to f16, nearest even:
//   x2 = x*x; a = x2*C1; b = a + C0; s = b*x      (s = sqrt(2/pi)(x + 0.044715x^3))
//   h = x*0.5; t = tanh(s) (f16v2tanh, twice); u = t + 1; y = h*u
// with C0 = f16(sqrt(2/pi)) = 0x3A62, C1 = f16(0.044715 sqrt(2/pi)) = 0x2891.
// (1 + t) is exact for t in [-1, -0.5] (Sterbenz), so the negative tail
// carries only tanh's own rounding. The main slots carry the load of the
// next word (bundle 4) and the store of the previous result (bundle 0):
// the loop is aux-bound at 9 bundles per 8 bytes.
//
// PRECISE=1. The same function as x * sigmoid(2s) = x / (1 + e^(-2s)),
// every step in f32 (round to nearest even), one rounding to f16 at the
// end. Per four values 23 bundles: two f16v2tof32; q = x*x, b = TAS*q + C
// (f32v2axpy, $TAS = -2*0.044715*sqrt(2/pi), C = -2*sqrt(2/pi), both f32:
// three issues for two pairs, as f32v2axpy writes its destination with the
// previous result, so the word primes and flushes it), e = b*x (= -2s);
// four f32exp; d = e^(-2s) + 1; four f32oox; y = x*(1/d); two f32v2tof16.
// Each word leaves the accumulator state at 0 and never reads what it held
// before (the prime's destination is $azeros), so the kernel needs no ZAACC
// and is correct whatever a previous run left (named assumptions
// amp-state-retained, axpy-shares-mix-lanes). Large negative x: e^(-2s)
// overflows to +inf, 1/d = 0, y = -0; large positive x: 1/d = 1, y = x.
//
// Both: x = -inf gives NaN (0 * -inf); NaN gives NaN.
//
// Work split: WORDS = N/4; worker w takes Q + (w < R) words from word
// w*Q + min(w, R) (Q = WORDS/6, R = WORDS%6) and reads/writes only those.

#include "common.inc"

#ifndef N
#error "N must be defined"
#endif
#ifndef PRECISE
#define PRECISE 0
#endif

	.set WORDS, N / 4
	.set Q, WORDS / 6
	.set R, WORDS % 6

	KERNEL_VERTEX gelu_f16
	.short 0x2891, 0x2891, 0x2891, 0x2891	// C1
	.short 0x3A62, 0x3A62, 0x3A62, 0x3A62	// C0
	.short 0x3800, 0x3800, 0x3800, 0x3800	// 0.5
	.short 0x3C00, 0x3C00, 0x3C00, 0x3C00	// 1.0
	// PRECISE=1 (f32): C pair, 1.0 pair, TAS
	.long 0xBFCC422A, 0xBFCC422A		// -2*sqrt(2/pi)
	.long 0x3F800000, 0x3F800000		// 1.0
	.long 0xBD922279			// -2*0.044715*sqrt(2/pi)

	KERNEL_ENTRY gelu_f16

// One word: X = $a0:1 holds x (loaded before); T = $a2:3; H = $a4:5 holds
// the previous result until bundle 4. st: store H first; ld: load the next x.
.macro GELU_WORD st, ld
	{
	.if \st
		st64step $a4:5, $m2, $m5+=, 1
	.else
		nop
	.endif
		f16v4mul $a2:3, $a0:1, $a0:1
	}
	{ nop ; f16v4mul $a2:3, $a2:3, $a6:7 }
	{ nop ; f16v4add $a2:3, $a2:3, $a8:9 }
	{ nop ; f16v4mul $a2:3, $a2:3, $a0:1 }
	{
	.if \ld
		ld64step $a0:1, $m3, $m4+=, 1
	.else
		nop
	.endif
		f16v4mul $a4:5, $a0:1, $a10:11
	}
	{ nop ; f16v2tanh $a2, $a2 }
	{ nop ; f16v2tanh $a3, $a3 }
	{ nop ; f16v4add $a2:3, $a2:3, $a12:13 }
	{ nop ; f16v4mul $a4:5, $a4:5, $a2:3 }
.endm

// PRECISE=1: one word. $a0:1 holds x (f16); $a2:3, $a4:5 take x as f32 and
// $a2:3 the previous result until bundle 0 of this word.
.macro GELU32_WORD st, ld
	{
	.if \st
		st64step $a2:3, $m2, $m5+=, 1
	.else
		nop
	.endif
		f16v2tof32 $a2:3, $a0
	}
	{ nop ; f16v2tof32 $a4:5, $a1 }
	{
	.if \ld
		ld64step $a0:1, $m3, $m4+=, 1
	.else
		nop
	.endif
		f32v2mul $a6:7, $a2:3, $a2:3
	}
	// f32v2axpy returns the previous accumulator state (docs/isa.md,
	// "MIX and AXPY"): prime with the low pair, get it back with the
	// high pair, flush the high pair with $azeros.
	{ nop ; f32v2axpy $azeros, $a6:7, $a10:11 }
	{ nop ; f32v2mul $a8:9, $a4:5, $a4:5 }
	{ nop ; f32v2axpy $a6:7, $a8:9, $a10:11 }
	{ nop ; f32v2axpy $a8:9, $azeros, $azeros }
	{ nop ; f32v2mul $a6:7, $a6:7, $a2:3 }
	{ nop ; f32v2mul $a8:9, $a8:9, $a4:5 }
	{ nop ; f32exp $a6, $a6 }
	{ nop ; f32exp $a7, $a7 }
	{ nop ; f32exp $a8, $a8 }
	{ nop ; f32exp $a9, $a9 }
	{ nop ; f32v2add $a6:7, $a6:7, $a12:13 }
	{ nop ; f32v2add $a8:9, $a8:9, $a12:13 }
	{ nop ; f32oox $a6, $a6 }
	{ nop ; f32oox $a7, $a7 }
	{ nop ; f32oox $a8, $a8 }
	{ nop ; f32oox $a9, $a9 }
	{ nop ; f32v2mul $a6:7, $a6:7, $a2:3 }
	{ nop ; f32v2mul $a8:9, $a8:9, $a4:5 }
	{ nop ; f32v2tof16 $a2, $a6:7 }
	{ nop ; f32v2tof16 $a3, $a8:9 }
.endm

#if PRECISE
#define WORD GELU32_WORD
#define RESULT $a2:3
#define LASTB 22
#else
#define WORD GELU_WORD
#define RESULT $a4:5
#define LASTB 8
#endif

	WORKER_BEGIN gelu_f16
	// $m1 = words of this worker, $m4 = its first word
	WORKER_SPLIT Q, R, count=$m1, first=$m4
	shl $m4, $m4, 3			// byte offset of the first word
	add $m5, $m4, 0
	ld32 $m2, $mvertex_base, $mzero, 0
	ld32 $m3, $mvertex_base, $mzero, 1
#if PRECISE
	ld64 $a10:11, $mvertex_base, $mzero, 5
	ld64 $a12:13, $mvertex_base, $mzero, 6
	ld32 $a0, $mvertex_base, $mzero, 14
	uput $TAS, $a0			// $TAS is an upper-space CSR
#else
	ld64 $a6:7, $mvertex_base, $mzero, 1
	ld64 $a8:9, $mvertex_base, $mzero, 2
	ld64 $a10:11, $mvertex_base, $mzero, 3
	ld64 $a12:13, $mvertex_base, $mzero, 4
#endif
	ld64step $a0:1, $m3, $m4+=, 1
	PIPELINED_WORDS WORD, LASTB, RESULT
9:
	WORKER_END gelu_f16
