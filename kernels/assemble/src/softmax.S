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
// each, rows contiguous (PANELS=0) or AMP panels (PANELS=1, below), 8-byte
// aligned; out may equal in, in place, but must not otherwise overlap it),
// $m4 = stats (STATS=1: ROWS pairs of f32, 8-byte aligned), $m10 = return
// address. Clobbers $m0, $m1 and the kernel's vertex words (which hold the
// cross-worker partial maxima and sums). Parameters ROWS, KEYS (multiple of 4), VALID (1..KEYS),
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
//
// PANELS=1 (KEYS a multiple of 16): in and out (the probabilities, or
// STATS=1's e16) are in AMP left / AMP out order, the scores as gemm_f16
// writes them and the probabilities as the P.V gemm reads its left
// operand: the ROWS x KEYS block is KEYS/16 panels of P = ROWS*32 bytes,
// row i's keys 16g..16g+15 at g*P + i*32, so word k (keys 4k..4k+3) of row
// i is at (k/4)*P + i*32 + (k%4)*8. The work split and every operation,
// in the same order, are those of PANELS=0 (so the results are bit for bit
// the same on the same logical matrix): a worker still takes words [f,
// f+c) of every row; only the addresses differ. Each row's slice is walked
// as a head (up to the first panel boundary, one word per rpt pass), the
// full panels (four words per pass, the fourth stepping P-24 bytes to the
// next panel with a register stride, so no extra bundle) and a tail,
// with one bundle between head and panels (the P-32 jump when the head
// ends on a boundary): 3 bundles more per row in runs A and B; run C
// (STATS=0) issues 17 + 7 per live word per row. The padding is zeroed
// after run C's rows: the words of the partial panel holding word NW (rows
// split over the workers, 4 - NW%4 stores per row) and the full padding
// panels, one contiguous range split by words.

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
#ifndef PANELS
#define PANELS 0
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
	// PANELS=1: the padding of the partial panel holding word NW (NZA
	// words per row from byte ZA0 of row 0, rows split RQ, RR) and the
	// full padding panels (ZB words from byte ZB0, split ZBQ, ZBR).
	.set NZA, (4 - NW % 4) % 4
	.set ZA0, (NW / 4) * 32 * ROWS + (NW % 4) * 8
	.set RQ, ROWS / 6
	.set RR, ROWS % 6
	.set ZB, (KW / 4 - (NW + 3) / 4) * 4 * ROWS
	.set ZB0, ((NW + 3) / 4) * 32 * ROWS
	.set ZBQ, ZB / 6
	.set ZBR, ZB % 6
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
// Clobbers $m9. 14 instructions (18 with VT). PANELS=1: $m7 = f (the
// offsets are SM_WALK's), $m11 and $m4 not set; 10 (14).
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
	.if PANELS == 0
	shl $m7, $m7, 3
	sub $m11, KW, $m1
	shl $m11, $m11, 3
	add $m4, $m7, 0
	.endif
	setzi $m6, ROWS - 1
	shl $m8, $m0, 2
	add $m8, $m8, $mvertex_base
.endm

// PANELS=1: the walk of $m1 words from word $m7 of every row. Out: $m7 =
// $m4 = the byte offset of the first word in row 0 ((f/4)*P + (f%4)*8);
// $m10 = head words (up to the first panel boundary, at most d = (4 -
// f%4)%4), $m1 = J (P - 32 when the head ends on the boundary, else 0:
// from the head's end to the next panel's first word), $m11 = full panels,
// $m12 = tail words, $m0 = PS = 4*ROWS - 3 (the stride in 8-byte units
// from a panel's last word to the next panel's first). Uses $m9. 17
// instructions.
.macro SM_WALK
	and $m9, $m7, 3
	shr $m7, $m7, 2
	mul $m7, $m7, 32 * ROWS
	shl $m0, $m9, 3
	add $m7, $m7, $m0
	sub $m9, 4, $m9
	and $m9, $m9, 3			// d
	min $m10, $m1, $m9		// head
	sub $m12, $m1, $m10
	shr $m11, $m12, 2		// full panels
	and $m12, $m12, 3		// tail
	cmpeq $m1, $m10, $m9
	cmpult $m0, $mzero, $m9
	and $m1, $m1, $m0
	mul $m1, $m1, 32 * ROWS - 32	// J
	setzi $m0, 4 * ROWS - 3		// PS
	add $m4, $m7, 0
.endm

// PANELS=1: the head, J, the full panels and the tail of the row's walk
// (SM_WALK's registers), word a macro issuing one word with its pointer
// step as its argument (1, or $m0 for a panel's last word) and last its
// bundles less one. 4 bundles (three rpts and J) and the words.
.macro SM_PANEL_WORDS word:req, last:req
	{
		rpt $m10, \last
		fnop
	}
	\word 1
	{ add $m4, $m4, $m1 ; fnop }
	{
		rpt $m11, 4 * (\last + 1) - 1
		fnop
	}
	.rept 3
	\word 1
	.endr
	\word $m0
	{
		rpt $m12, \last
		fnop
	}
	\word 1
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

// One word of run A: the load (pointer step \step) and the maximum.
.macro SM_MAX_WORD step:req
	{ ld64step $a8:9, $m3, $m4+=, \step ; fnop }
	{ nop ; f16v4max $a0:1, $a0:1, $a8:9 }
.endm

// Run A: the partial maxima (f16, in the low half of each partial word).
	WORKER_BEGIN softmax_f16
	SM_SLICE
	ld32 $m3, $mvertex_base, $mzero, 1	// in
	.if VT
	sub $m1, $m1, $m5		// full words
	.endif
	.if PANELS
	SM_WALK
	.endif
	.p2align 3
1:
	{ ld64 $a0:1, $mvertex_base, $mzero, 2 ; fnop }
	.if PANELS
	SM_PANEL_WORDS SM_MAX_WORD, 1
	.else
	{
		rpt $m1, 1
		fnop
	}
	SM_MAX_WORD 1
	.endif
	.if VT
	{ brz $m5, 2f ; fnop }
	SM_MASKED ld64step, $m4+=, 1
	{ nop ; f16v4max $a0:1, $a0:1, $a8:9 }
2:
	.endif
	.if PANELS
	{
		add $m7, $m7, 32
		f16v4maxc $a0, $a0:1
	}
	{
		add $m4, $m7, 0
		f16v4maxc $a0, $a0:1
	}
	.else
	{
		add $m4, $m4, $m11
		f16v4maxc $a0, $a0:1
	}
	{ nop ; f16v4maxc $a0, $a0:1 }
	.endif
	{ st32 $a0, $m8, $mzero, PA ; fnop }
	{ add $m8, $m8, 24 ; fnop }
	{ brnzdec $m6, 1b ; fnop }
	WORKER_END softmax_f16

// One word's exponentials from $a8:9 (x, f16): into $a4:7 (f32), added to
// the lanes $a0:3, e16 stored to out at $m2 + $m4 ($m4 += 8*step). 12
// bundles.
.macro SM_EXP step=1
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
	{ st64step $a8:9, $m2, $m4+=, \step ; fnop }
.endm

// One word of run B: load, exponentials, e16 stored (pointer step \step).
// 13 bundles.
.macro SM_EXP_WORD step:req
	{ ld64 $a8:9, $m3, $m4, 0 ; fnop }
	SM_EXP \step
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
	.if PANELS
	SM_WALK
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
	.if PANELS
	SM_PANEL_WORDS SM_EXP_WORD, 12
	.else
	{
		rpt $m1, 12
		fnop
	}
	SM_EXP_WORD 1
	.endif
	.if VT
	{ brz $m5, 2f ; fnop }
	SM_MASKED ld64, $m4, 0
	SM_EXP
2:
	.endif
	.if PANELS
	{
		add $m7, $m7, 32
		f32v2add $a0:1, $a0:1, $a2:3
	}
	{
		add $m4, $m7, 0
		f32add $a0, $a0, $a1
	}
	.else
	{
		add $m4, $m4, $m11
		f32v2add $a0:1, $a0:1, $a2:3
	}
	{ nop ; f32add $a0, $a0, $a1 }
	.endif
	{ st32 $a0, $m8, $mzero, PB ; fnop }
	{ add $m8, $m8, 24 ; fnop }
	{ add $m9, $m9, 24 ; fnop }
	{ brnzdec $m6, 1b ; fnop }
	WORKER_END softmax_f16_exp

// One word of run C: p = f16(e16 * (1/sum)) in place in out (pointer
// step \step). 7 bundles.
.macro SM_NORM_WORD step:req
	{ ld64 $a8:9, $m2, $m4, 0 ; fnop }
	{ nop ; f16v2tof32 $a4:5, $a8 }
	{ nop ; f16v2tof32 $a6:7, $a9 }
	{ nop ; f32v2mul $a4:5, $a4:5, $a10:11 }
	{ nop ; f32v2mul $a6:7, $a6:7, $a10:11 }
	{ nop ; f32v4tof16 $a8:9, $a4:7 }
	{ st64step $a8:9, $m2, $m4+=, \step ; fnop }
.endm

// PANELS=1, after run C's rows: +0 in the padding (out in $m2). The NZA
// padding words of the partial panel holding word NW, rows split over the
// workers (RQ, RR; each row's NZA stores, the last stepping to the next
// row's first), then the ZB words of the full padding panels, one
// contiguous range split by words (ZBQ, ZBR). 2 instructions, then 8
// instructions, the rpt and the stores for each of the two when present.
.macro SM_PANEL_PADDING
	get $m0, $WSR
	and $m0, $m0, 7
	.if NZA
	cmpult $m1, $m0, RR
	add $m1, $m1, RQ
	mul $m4, $m0, RQ
	min $m5, $m0, RR
	add $m4, $m4, $m5
	shl $m4, $m4, 5
	setzi $m5, ZA0
	add $m4, $m4, $m5
	{
		rpt $m1, NZA - 1
		fnop
	}
	.rept NZA - 1
	{ st64step $azeros, $m2, $m4+=, 1 ; fnop }
	.endr
	{ st64step $azeros, $m2, $m4+=, 5 - NZA ; fnop }
	.endif
	.if ZB
	cmpult $m1, $m0, ZBR
	add $m1, $m1, ZBQ
	mul $m4, $m0, ZBQ
	min $m5, $m0, ZBR
	add $m4, $m4, $m5
	shl $m4, $m4, 3
	setzi $m5, ZB0
	add $m4, $m4, $m5
	{
		rpt $m1, 0
		fnop
	}
	{ st64step $azeros, $m2, $m4+=, 1 ; fnop }
	.endif
.endm

// Run C: p = f16(e16 * (1/sum)) over the live words (STATS=0) or the row's
// (mf, sum) to stats (STATS=1: every worker stores the same 8 bytes, out
// keeps e16); +0 in the padding either way.
	WORKER_BEGIN softmax_f16_norm
	SM_SLICE
	ld32 $m2, $mvertex_base, $mzero, 0	// out
	.if PANELS
	.if STATS == 0
	SM_WALK
	.endif
	add $m9, $mvertex_base, 0	// row 0's partials, less 4*PA
	.else
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
	.endif
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
	.if PANELS
	SM_PANEL_WORDS SM_NORM_WORD, 6
	{ add $m7, $m7, 32 ; fnop }
	{ add $m4, $m7, 0 ; fnop }
	.else
	{
		rpt $m1, 6
		fnop
	}
	SM_NORM_WORD 1
	.endif
	.endif
	.if PANELS
	{ add $m9, $m9, 24 ; fnop }
	{ brnzdec $m6, 1b ; fnop }
	SM_PANEL_PADDING
	.else
	{
		rpt $m10, 0
		fnop
	}
	{ st64step $azeros, $m2, $m12+=, 1 ; fnop }
	{ add $m4, $m4, $m11 ; fnop }
	{ add $m12, $m12, $m5 ; fnop }
	{ add $m9, $m9, 24 ; fnop }
	{ brnzdec $m6, 1b ; fnop }
	.endif
	WORKER_END softmax_f16_norm
