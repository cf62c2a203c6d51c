// reduce_add_f16: out[i] = sum over p < PARTS of in[p*N + i], i < N.
//
// ABI (supervisor entry reduce_add_f16): $m2 = out (N f16), $m3 = in
// (PARTS arrays of N f16, contiguous: part p at $m3 + 2*p*N), both 8-byte
// aligned; out may equal in (it then overwrites part 0) but must not
// otherwise overlap it. $m10 = return address. Clobbers $m0, $m1 and the
// kernel's vertex words. Parameters N (multiple of 4), PARTS >= 1.
//
// Arithmetic: each f16 is widened exactly to f32 (f16v2tof32); the sum is
// accumulated in f32 in part order, 0 first (f32v4add, each addition
// rounded to nearest even), and rounded once to f16 at the end
// (f32v2tof16, nearest even).
//
// Schedule: per 64-bit output word (4 values) a worker issues 3*PARTS+1
// bundles, one aux operation each: two f16v2tof32 for part 0, then for each
// further part two f16v2tof32 and one f32v4add, then two f32v2tof16. The
// main slots carry the PARTS loads (one 64-bit load per part, into $a8:9,
// issued in the bundle that makes the previous part's last read of it),
// the pointer updates, and the store of the previous word's result. The
// loop is aux-bound: 8*PARTS bytes read per 3*PARTS+1 bundles.
//
// Work split: WORDS = N/4; worker w takes Q + (w < R) words from word
// w*Q + min(w, R) (Q = WORDS/6, R = WORDS%6).

#include "common.inc"

#ifndef N
#error "N must be defined"
#endif
#ifndef PARTS
#error "PARTS must be defined"
#endif

	.set WORDS, N / 4
	.set Q, WORDS / 6
	.set R, WORDS % 6
	.set NB, 2 * N			// bytes between parts
	.set BACK, 8 - (PARTS - 1) * NB	// from the last part to the next word's part 0
	.set LASTB, 3 * PARTS		// bundles per word: 0..LASTB

	KERNEL_VERTEX reduce_add_f16
	.long NB, BACK

	KERNEL_ENTRY reduce_add_f16

// The part loaded by a load at bundle x (x = 1 or a multiple of 3):
// 1..PARTS-1, or PARTS for part 0 of the next word.
.macro RED_PART x
	.if (\x) == 1
		.set rpart, 1
	.else
		.set rpart, (\x) / 3 + 1
	.endif
	.if rpart > PARTS - 1
		.set rpart, PARTS
	.endif
.endm

// Bundle b of one word. st: store the previous word's result at bundle 0;
// ld: load part 0 of the next word.
.macro RED_BUNDLE b, st, ld
	.set rmain, 0			// 0 nop, 1 store, 2 load, 3 add NB, 4 add BACK
	.if (\b) == 0
		.if \st
			.set rmain, 1
		.endif
	.elseif ((\b) == 1) || (((\b) % 3 == 0) && ((\b) <= 3 * (PARTS - 1)))
		RED_PART \b
		.if (rpart < PARTS) || \ld
			.set rmain, 2
		.endif
	.elseif ((\b) == 2) || (((\b) % 3 == 1) && ((\b) >= 4) && ((\b) <= 3 * PARTS - 2))
		RED_PART (\b) - 1
		.if rpart < PARTS - 1
			.set rmain, 3
		.elseif rpart == PARTS - 1
			.set rmain, 4
		.elseif \ld
			.if PARTS > 1
				.set rmain, 3
			.else
				.set rmain, 4
			.endif
		.endif
	.endif
	{
	.if rmain == 1
		st64step $a10:11, $m2, $m5+=, 1
	.elseif rmain == 2
		ld64 $a8:9, $m3, $mzero, 0
	.elseif rmain == 3
		add $m3, $m3, $m6
	.elseif rmain == 4
		add $m3, $m3, $m7
	.else
		nop
	.endif
	.if (\b) == 0
		f16v2tof32 $a0:1, $a8
	.elseif (\b) == 1
		f16v2tof32 $a2:3, $a9
	.elseif (\b) == LASTB - 1
		f32v2tof16 $a10, $a0:1
	.elseif (\b) == LASTB
		f32v2tof16 $a11, $a2:3
	.elseif ((\b) + 1) % 3 == 0
		f16v2tof32 $a4:5, $a8
	.elseif ((\b) + 1) % 3 == 1
		f16v2tof32 $a6:7, $a9
	.else
		f32v4add $a0:3, $a0:3, $a4:7
	.endif
	}
.endm

.macro RED_WORD st, ld
	.set rb, 0
	.rept LASTB + 1
		RED_BUNDLE rb, \st, \ld
		.set rb, rb + 1
	.endr
.endm

	WORKER_BEGIN reduce_add_f16
	// $m1 = words of this worker, $m4 = its first word
	WORKER_SPLIT Q, R, count=$m1, first=$m4
	shl $m5, $m4, 3			// byte offset of the first word
	ld32 $m2, $mvertex_base, $mzero, 0
	ld32 $m3, $mvertex_base, $mzero, 1
	ld32 $m6, $mvertex_base, $mzero, 2
	ld32 $m7, $mvertex_base, $mzero, 3
	add $m3, $m3, $m5		// part 0 of the first word
	ld64 $a8:9, $m3, $mzero, 0
#if PARTS > 1
	add $m3, $m3, $m6
#else
	add $m3, $m3, $m7
#endif
	PIPELINED_WORDS RED_WORD, LASTB, $a10:11
9:
	WORKER_END reduce_add_f16
