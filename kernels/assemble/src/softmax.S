// softmax_f16: p = softmax(s * x) over the first VALID of KEYS f16 scores
// of each of ROWS rows, s = f32oorx(DK) (1/sqrt(DK), correctly rounded; DK
// = 1: no scaling); scores VALID..KEYS-1 are ignored (any bits, NaN
// included) and their probabilities written as +0 (the row padded).
// VALID = 0 means KEYS.
//
// STATS=1 (the block step of flash-style attention, for
// attention_merge_f16): out keeps the unnormalised e16 and stats[row] =
// (mf, sum) as f32 (the block's maximum, already scaled, and its sum).
//
// ABI (supervisor entry softmax_f16): $m2 = out, $m3 = in (ROWS*KEYS f16
// each, rows contiguous, 8-byte aligned; out may equal in, in place, but
// must not otherwise overlap it), $m4 = stats (STATS=1: ROWS pairs of f32,
// 8-byte aligned), $m10 = return address. Clobbers $m0,
// $m1 and the kernel's vertex words (which hold the cross-worker partial
// maxima and sums). Parameters ROWS, KEYS (multiple of 4), VALID (1..KEYS),
// DK (>= 1).
//
// Arithmetic, per row: m = the f16 maximum of the valid scores (f16v4max,
// exact); mf = f32(m) * s; e_i = exp(s * x_i - mf) in f32 (f32v2axpy with
// $TAS = s: the product rounded, then the sum; f32exp), so the maximum's
// e is exactly 1; sum = the f32 sum of the e_i (four lanes, lane j summing
// values 4k+j of a worker's slice in order from +0, then (l0+l2)+(l1+l3),
// then the six workers' partials in worker order); e16_i = f16(e_i),
// written to out; p_i = f16(f32(e16_i) * (1/sum)) (f32oox, f32v2mul,
// f32v4tof16).
//
// Work split: every worker takes a column slice of every row, words [f,
// f+c) of the row's NW = ceil(VALID/4) live words (c = Q + (w < R), f =
// w*Q + min(w, R)); the worker whose slice ends with a partial word
// (VALID % 4 != 0) masks it: valid lanes kept, the others set to f16 -inf
// (0xFC00), whose exp is 0. The KEYS/4 - NW padding words are split the
// same way for the zero stores. Three worker runs, separated by sync 2:
// A the partial maxima (2 bundles per word), B the exponentials and
// partial sums, e16 written to out (13 bundles per word), C the
// normalisation (7 bundles per word; STATS=1: the statistics, none per
// word) and the zero padding (1 per word).

#include "common.inc"

#ifndef ROWS
#error "ROWS must be defined"
#endif
#ifndef KEYS
#error "KEYS must be defined"
#endif
#ifndef VALID
#define VALID 0
#endif
#ifndef DK
#define DK 1
#endif
#ifndef STATS
#define STATS 0
#endif

	.set KW, KEYS / 4		// words per row
	.set VLD, VALID			// 0: every key is valid
	.if VLD == 0
	.set VLD, KEYS
	.endif
	.set NW, (VLD + 3) / 4		// live words per row
	.set VT, VLD % 4		// valid lanes of a partial last word (0: none)
	.set ZW, KW - NW		// padding words per row
	.set Q, NW / 6
	.set R, NW % 6
	.set ZQ, ZW / 6
	.set ZR, ZW % 6
	.set PA, 10			// vertex word of partial maximum [0][0]
	.set PB, 10 + 6 * ROWS		// vertex word of partial sum [0][0]
	.if VT == 1
	.set MASK0, 0x0000FFFF
	.set MASK1, 0
	.elseif VT == 2
	.set MASK0, 0xFFFFFFFF
	.set MASK1, 0
	.else
	.set MASK0, 0xFFFFFFFF
	.set MASK1, 0x0000FFFF
	.endif

	KERNEL_VERTEX softmax_f16
	.long DK, 0			// words 2, 3: DK, stats
	.long 0xFC00FC00, 0xFC00FC00	// words 4, 5: -inf (f16) in every lane
	.long MASK0, MASK1		// words 6, 7: lanes kept in a partial word
	.long 0xFC00FC00 & ~MASK0, 0xFC00FC00 & ~MASK1	// words 8, 9: -inf elsewhere
	.space 48 * ROWS		// partial maxima and sums, [ROWS][6] each

	SUPERVISOR_BEGIN softmax_f16
	setzi $m0, softmax_f16_vertex
	st32 $m2, $m0, $mzero, 0
	st32 $m3, $m0, $mzero, 1
	st32 $m4, $m0, $mzero, 3
	RUN_STAGE softmax_f16_worker
	RUN_STAGE softmax_f16_exp_worker
	setzi $m1, softmax_f16_norm_worker
	runall $m1, $m0, 0
	SUPERVISOR_END softmax_f16

// The slice: $m0 = w, $m1 = c (live words), $m5 = 1 for the worker owning
// the partial word (VT != 0 only), $m7 = 8f, $m11 = 8*(KW - c) (from the
// slice's end to the next row's slice), $m4 = $m7 (the running offset),
// $m6 = ROWS - 1, $m8 = the worker's partial of row 0 (less 4*PA).
// Clobbers $m9. 14 instructions (18 with VT).
.macro SM_SLICE
	get $m0, $WSR
	and $m0, $m0, 7
	cmpult $m1, $m0, R
	add $m1, $m1, Q
	mul $m7, $m0, Q
	min $m9, $m0, R
	add $m7, $m7, $m9
	.if VT
	add $m5, $m7, $m1
	cmpeq $m5, $m5, NW
	cmpult $m9, $mzero, $m1
	and $m5, $m5, $m9
	.endif
	shl $m7, $m7, 3
	sub $m11, KW, $m1
	shl $m11, $m11, 3
	add $m4, $m7, 0
	setzi $m6, ROWS - 1
	shl $m8, $m0, 2
	add $m8, $m8, $mvertex_base
.endm

// The partial word into $a8:9 from in at $m3 + $m4 (ldinst: ld64 or
// ld64step), masked: valid lanes kept, the others -inf. 6 bundles; uses
// $a4:7.
.macro SM_MASKED ldinst:req, post:vararg
	{ \ldinst $a8:9, $m3, \post ; fnop }
	{ ld64 $a4:5, $mvertex_base, $mzero, 3 ; fnop }
	{
		ld64 $a6:7, $mvertex_base, $mzero, 4
		and $a8, $a8, $a4
	}
	{ nop ; and $a9, $a9, $a5 }
	{ nop ; or $a8, $a8, $a6 }
	{ nop ; or $a9, $a9, $a7 }
.endm

// Run A: the partial maxima (f16, in the low half of each partial word).
	WORKER_BEGIN softmax_f16
	SM_SLICE
	ld32 $m3, $mvertex_base, $mzero, 1	// in
	.if VT
	sub $m1, $m1, $m5		// full words
	.endif
	.p2align 3
1:
	{ ld64 $a0:1, $mvertex_base, $mzero, 2 ; fnop }
	{
		rpt $m1, 1
		fnop
	}
	{ ld64step $a8:9, $m3, $m4+=, 1 ; fnop }
	{ nop ; f16v4max $a0:1, $a0:1, $a8:9 }
	.if VT
	{ brz $m5, 2f ; fnop }
	SM_MASKED ld64step, $m4+=, 1
	{ nop ; f16v4max $a0:1, $a0:1, $a8:9 }
2:
	.endif
	{
		add $m4, $m4, $m11
		f16v4maxc $a0, $a0:1
	}
	{ nop ; f16v4maxc $a0, $a0:1 }
	{ st32 $a0, $m8, $mzero, PA ; fnop }
	{ add $m8, $m8, 24 ; fnop }
	{ brnzdec $m6, 1b ; fnop }
	WORKER_END softmax_f16

// One word's exponentials from $a8:9 (x, f16): into $a4:7 (f32), added to
// the lanes $a0:3, e16 stored to out at $m2 + $m4 ($m4 += 8). 12 bundles.
.macro SM_EXP
	{ nop ; f16v2tof32 $a4:5, $a8 }
	{ nop ; f16v2tof32 $a6:7, $a9 }
	// f32v2axpy returns the previous result (a one-stage pipeline, hover
	// text): prime, chain, flush.
	{ nop ; f32v2axpy $azeros, $a4:5, $a10:11 }
	{ nop ; f32v2axpy $a4:5, $a6:7, $a10:11 }
	{ nop ; f32v2axpy $a6:7, $azeros, $azeros }
	{ nop ; f32exp $a4, $a4 }
	{ nop ; f32exp $a5, $a5 }
	{ nop ; f32exp $a6, $a6 }
	{ nop ; f32exp $a7, $a7 }
	{ nop ; f32v4add $a0:3, $a0:3, $a4:7 }
	{ nop ; f32v4tof16 $a8:9, $a4:7 }
	{ st64step $a8:9, $m2, $m4+=, 1 ; fnop }
.endm

// The row's scaled maximum mf into $a4 (f32), from its six partial maxima
// at vertex words PA.. of $m9, the first two already loaded into $a4 and
// $a5 by the caller's bundles (run B and run C pair them differently);
// the scale s in $a12. 7 bundles.
.macro SM_ROW_MF
	{ ld32 $a6, $m9, $mzero, PA + 2 ; f16v2max $a4, $a4, $a5 }
	{ ld32 $a5, $m9, $mzero, PA + 3 ; f16v2max $a4, $a4, $a6 }
	{ ld32 $a6, $m9, $mzero, PA + 4 ; f16v2max $a4, $a4, $a5 }
	{ ld32 $a5, $m9, $mzero, PA + 5 ; f16v2max $a4, $a4, $a6 }
	{ nop ; f16v2max $a4, $a4, $a5 }
	{ nop ; f16v2tof32 $a4:5, $a4 }
	{ nop ; f32mul $a4, $a4, $a12 }		// mf
.endm

// Run B: the exponentials, e16 to out, the partial sums.
	WORKER_BEGIN softmax_f16_exp
	SM_SLICE
	ld32 $m2, $mvertex_base, $mzero, 0	// out
	ld32 $m3, $mvertex_base, $mzero, 1	// in
	.if VT
	sub $m1, $m1, $m5
	.endif
	add $m9, $mvertex_base, 0	// row 0's partials, less 4*PA
	ld32 $a12, $mvertex_base, $mzero, 2
	f32fromi32 $a12, $a12
	f32oorx $a12, $a12		// s
	uput $TAS, $a12
	.p2align 3
1:
	{ ld32 $a4, $m9, $mzero, PA ; fnop }
	{ ld32 $a5, $m9, $mzero, PA + 1 ; fnop }
	SM_ROW_MF
	{ nop ; f32sub $a10, $azero, $a4 }
	{ nop ; f32max $a11, $a10, $a10 }	// the -mf pair
	{ nop ; f32v2add $a0:1, $azeros, $azeros }
	{ nop ; f32v2add $a2:3, $azeros, $azeros }
	{
		rpt $m1, 12
		fnop
	}
	{ ld64 $a8:9, $m3, $m4, 0 ; fnop }
	SM_EXP
	.if VT
	{ brz $m5, 2f ; fnop }
	SM_MASKED ld64, $m4, 0
	SM_EXP
2:
	.endif
	{
		add $m4, $m4, $m11
		f32v2add $a0:1, $a0:1, $a2:3
	}
	{ nop ; f32add $a0, $a0, $a1 }
	{ st32 $a0, $m8, $mzero, PB ; fnop }
	{ add $m8, $m8, 24 ; fnop }
	{ add $m9, $m9, 24 ; fnop }
	{ brnzdec $m6, 1b ; fnop }
	WORKER_END softmax_f16_exp

// Run C: p = f16(e16 * (1/sum)) over the live words (STATS=0) or the row's
// (mf, sum) to stats (STATS=1: every worker stores the same 8 bytes, out
// keeps e16); +0 in the padding either way.
	WORKER_BEGIN softmax_f16_norm
	SM_SLICE
	ld32 $m2, $mvertex_base, $mzero, 0	// out
	add $m9, $mvertex_base, 0	// row 0's partials, less 4*PA
	// the padding words: $m10 = count, $m12 = offset, $m5 = row skip
	cmpult $m10, $m0, ZR
	add $m10, $m10, ZQ
	mul $m12, $m0, ZQ
	min $m0, $m0, ZR
	add $m12, $m12, $m0
	shl $m12, $m12, 3
	add $m12, $m12, 8 * NW
	sub $m5, KW, $m10
	shl $m5, $m5, 3
	.if STATS
	ld32 $m8, $mvertex_base, $mzero, 3	// stats
	ld32 $a12, $mvertex_base, $mzero, 2
	f32fromi32 $a12, $a12
	f32oorx $a12, $a12		// s
	.endif
	.p2align 3
1:
	.if STATS
	{ ld32 $a8, $m9, $mzero, PB ; fnop }
	{ ld32 $a9, $m9, $mzero, PB + 1 ; fnop }
	{ ld32 $a10, $m9, $mzero, PB + 2 ; f32add $a8, $a8, $a9 }
	{ ld32 $a9, $m9, $mzero, PB + 3 ; f32add $a8, $a8, $a10 }
	{ ld32 $a10, $m9, $mzero, PB + 4 ; f32add $a8, $a8, $a9 }
	{ ld32 $a9, $m9, $mzero, PB + 5 ; f32add $a8, $a8, $a10 }
	{ ld32 $a4, $m9, $mzero, PA ; f32add $a8, $a8, $a9 }	// sum
	{ ld32 $a5, $m9, $mzero, PA + 1 ; fnop }
	SM_ROW_MF
	{ nop ; f32max $a5, $a8, $a8 }
	{ st64step $a4:5, $mzero, $m8+=, 1 ; fnop }
	.else
	{ ld32 $a4, $m9, $mzero, PB ; fnop }
	{ ld32 $a5, $m9, $mzero, PB + 1 ; fnop }
	{ ld32 $a6, $m9, $mzero, PB + 2 ; f32add $a4, $a4, $a5 }
	{ ld32 $a5, $m9, $mzero, PB + 3 ; f32add $a4, $a4, $a6 }
	{ ld32 $a6, $m9, $mzero, PB + 4 ; f32add $a4, $a4, $a5 }
	{ ld32 $a5, $m9, $mzero, PB + 5 ; f32add $a4, $a4, $a6 }
	{ nop ; f32add $a4, $a4, $a5 }
	{ nop ; f32oox $a10, $a4 }
	{ nop ; f32max $a11, $a10, $a10 }	// the 1/sum pair
	{
		rpt $m1, 6
		fnop
	}
	{ ld64 $a8:9, $m2, $m4, 0 ; fnop }
	{ nop ; f16v2tof32 $a4:5, $a8 }
	{ nop ; f16v2tof32 $a6:7, $a9 }
	{ nop ; f32v2mul $a4:5, $a4:5, $a10:11 }
	{ nop ; f32v2mul $a6:7, $a6:7, $a10:11 }
	{ nop ; f32v4tof16 $a8:9, $a4:7 }
	{ st64step $a8:9, $m2, $m4+=, 1 ; fnop }
	.endif
	{
		rpt $m10, 0
		fnop
	}
	{ st64step $azeros, $m2, $m12+=, 1 ; fnop }
	{ add $m4, $m4, $m11 ; fnop }
	{ add $m12, $m12, $m5 ; fnop }
	{ add $m9, $m9, 24 ; fnop }
	{ brnzdec $m6, 1b ; fnop }
	WORKER_END softmax_f16_norm
