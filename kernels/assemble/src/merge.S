// attention_merge_f16: the online-softmax merge of flash-style attention,
// on ROWS rows of VALUES values.
//
// State: acc (ROWS*VALUES f32, the running sum of exp-weighted value rows)
// and stats (ROWS pairs of f32: the running maximum m and sum l). A block:
// bacc (ROWS*VALUES, f16 or f32 by BACC32: the block's exp(s - mb) * V)
// and bstats (ROWS pairs (mb, lb)). Per row:
//   MODE=0 (initial): acc = f32(bacc); (m, l) = (mb, lb).
//   MODE=1 (update):  m' = max(m, mb); a = exp(m - m'); b = exp(mb - m')
//                     (f32max, f32sub, f32exp); acc = b*bacc + a*acc
//                     (f32v2mul, f32v2axpy with $TAS = b: each product and
//                     the sum rounded to f32); l' = (a*l) + (b*lb) (f32mul,
//                     f32mul, f32add); (m, l) = (m', l').
//   MODE=2 (final):   the update's acc and l', then out = f16(acc *
//                     f32oox(l')) (f32v2mul, f32v4tof16); acc and stats are
//                     read only.
//
// ABI (supervisor entry attention_merge_f16): $m2 = acc, $m3 = stats,
// $m4 = bacc, $m5 = bstats, $m6 = out (ROWS*VALUES f16; MODE=2 only), all
// 8-byte aligned, not overlapping. $m10 = return address. Clobbers $m0,
// $m1, the kernel's vertex words and $TAS.
//
// Work split: run 1 (the values) gives every worker a column slice of
// every row, words [f, f+c) of the row's VALUES/4 four-value words (c = Q
// + (w < R), f = w*Q + min(w, R)); each worker computes the row's a and b
// itself. Run 2 (MODE 0 and 1: the new statistics, after sync 2, so that
// no worker of run 1 reads a pair already replaced) splits the rows, QR +
// (w < RR) from row w*QR + min(w, RR). Per four values run 1 issues 4
// (initial), 10 (update; 9 with BACC32) or 13 (final) bundles: each
// f32v2axpy is primed into $azeros and its result flushed out in the next
// bundle (the instruction returns the previous result, hover text).

#include "common.inc"

#ifndef ROWS
#error "ROWS must be defined"
#endif
#ifndef VALUES
#error "VALUES must be defined"
#endif
#ifndef MODE
#define MODE 1
#endif
#ifndef BACC32
#define BACC32 0
#endif

	.set VW, VALUES / 4		// words per row
	.set Q, VW / 6
	.set R, VW % 6
	.set QR, ROWS / 6
	.set RR, ROWS % 6

	KERNEL_VERTEX attention_merge_f16	// words 0, 1: acc, stats
	.long 0, 0, 0			// words 2..4: bacc, bstats, out

	SUPERVISOR_BEGIN attention_merge_f16
	setzi $m0, attention_merge_f16_vertex
	st32 $m2, $m0, $mzero, 0
	st32 $m3, $m0, $mzero, 1
	st32 $m4, $m0, $mzero, 2
	st32 $m5, $m0, $mzero, 3
	st32 $m6, $m0, $mzero, 4
	setzi $m1, attention_merge_f16_worker
	runall $m1, $m0, 0
#if MODE != 2
	sync 2
	setzi $m1, attention_merge_f16_stats_worker
	runall $m1, $m0, 0
#endif
	SUPERVISOR_END attention_merge_f16

// One row's a (in $a10, duplicated to $a10:11) and b ($TAS), from the
// pairs (m, l) at $m3 + $m9 and (mb, lb) at $m5 + $m9 ($m9 += 8); with
// final=1 also 1/l' duplicated in $a12:13. Leaves l, lb in $a1, $a3. 9
// bundles (14 with final).
.macro MG_FACTORS final=0
	{ ld64 $a0:1, $m3, $m9, 0 ; fnop }
	{ ld64step $a2:3, $m5, $m9+=, 1 ; fnop }
	{ nop ; f32max $a4, $a0, $a2 }
	{ nop ; f32sub $a10, $a0, $a4 }
	{ nop ; f32sub $a11, $a2, $a4 }
	{ nop ; f32exp $a10, $a10 }
	{ nop ; f32exp $a11, $a11 }
	.if \final
	{ nop ; f32mul $a5, $a10, $a1 }
	{ nop ; f32mul $a6, $a11, $a3 }
	{ nop ; f32add $a5, $a5, $a6 }
	{ nop ; f32oox $a12, $a5 }
	{ nop ; f32max $a13, $a12, $a12 }
	.endif
	{ nop ; uput $TAS, $a11 }
	{ nop ; f32max $a11, $a10, $a10 }
.endm

// Run 1: the values.
	WORKER_BEGIN attention_merge_f16
	get $m0, $WSR
	and $m0, $m0, 7
	cmpult $m1, $m0, R
	add $m1, $m1, Q			// c
	mul $m7, $m0, Q
	min $m12, $m0, R
	add $m7, $m7, $m12		// f
	shl $m4, $m7, 4			// acc (f32) offset
	shl $m7, $m7, 3			// f16 offset (bacc, out)
	sub $m11, VW, $m1
	shl $m12, $m11, 3		// f16 row skip
	shl $m11, $m11, 4		// f32 row skip
	setzi $m10, ROWS - 1
	setzi $m9, 0
	ld32 $m2, $mvertex_base, $mzero, 0
	add $m0, $m2, 8			// acc + 8: each word's second pair
	ld32 $m3, $mvertex_base, $mzero, 1
	ld32 $m6, $mvertex_base, $mzero, 2
	ld32 $m5, $mvertex_base, $mzero, 3
	ld32 $m8, $mvertex_base, $mzero, 4
	.p2align 3
1:
#if MODE == 0
	{
		rpt $m1, 3
		fnop
	}
#if BACC32
	{ ld64 $a4:5, $m6, $m4, 0 ; fnop }
	{ ld64 $a6:7, $m6, $m4, 1 ; fnop }
	{ st64 $a4:5, $m2, $m4, 0 ; fnop }
	{ st64step $a6:7, $m0, $m4+=, 2 ; fnop }
#else
	{ ld64step $a8:9, $m6, $m7+=, 1 ; fnop }
	{ nop ; f16v2tof32 $a4:5, $a8 }
	{
		st64 $a4:5, $m2, $m4, 0
		f16v2tof32 $a6:7, $a9
	}
	{ st64step $a6:7, $m0, $m4+=, 2 ; fnop }
#endif
#elif MODE == 1
	MG_FACTORS
#if BACC32
	{
		rpt $m1, 8
		fnop
	}
	{ ld64 $a0:1, $m6, $m4, 0 ; fnop }
	{ ld64 $a4:5, $m2, $m4, 0 ; fnop }
	{
		ld64 $a6:7, $m2, $m4, 1
		f32v2mul $a4:5, $a4:5, $a10:11
	}
	{
		ld64 $a2:3, $m6, $m4, 1
		f32v2axpy $azeros, $a0:1, $a4:5
	}
	{ nop ; f32v2axpy $a4:5, $azeros, $azeros }	// the result (pipelined)
	{
		st64 $a4:5, $m2, $m4, 0
		f32v2mul $a6:7, $a6:7, $a10:11
	}
	{ nop ; f32v2axpy $azeros, $a2:3, $a6:7 }
	{ nop ; f32v2axpy $a6:7, $azeros, $azeros }	// the result (pipelined)
	{ st64step $a6:7, $m0, $m4+=, 2 ; fnop }
#else
	{
		rpt $m1, 9
		fnop
	}
	{ ld64step $a8:9, $m6, $m7+=, 1 ; fnop }
	{
		ld64 $a4:5, $m2, $m4, 0
		f16v2tof32 $a0:1, $a8
	}
	{
		ld64 $a6:7, $m2, $m4, 1
		f32v2mul $a4:5, $a4:5, $a10:11
	}
	{ nop ; f16v2tof32 $a2:3, $a9 }
	{ nop ; f32v2axpy $azeros, $a0:1, $a4:5 }
	{ nop ; f32v2axpy $a4:5, $azeros, $azeros }	// the result (pipelined)
	{
		st64 $a4:5, $m2, $m4, 0
		f32v2mul $a6:7, $a6:7, $a10:11
	}
	{ nop ; f32v2axpy $azeros, $a2:3, $a6:7 }
	{ nop ; f32v2axpy $a6:7, $azeros, $azeros }	// the result (pipelined)
	{ st64step $a6:7, $m0, $m4+=, 2 ; fnop }
#endif
#else
	MG_FACTORS final=1
	{
		rpt $m1, 12
		fnop
	}
#if BACC32
	{ ld64 $a0:1, $m6, $m4, 0 ; fnop }
	{ ld64 $a2:3, $m6, $m4, 1 ; fnop }
	{ ld64 $a4:5, $m2, $m4, 0 ; fnop }
	{
		ld64step $a6:7, $m0, $m4+=, 2
		f32v2mul $a4:5, $a4:5, $a10:11
	}
	{ nop ; f32v2axpy $azeros, $a0:1, $a4:5 }
	{ nop ; f32v2axpy $a4:5, $azeros, $azeros }	// the result (pipelined)
#else
	{ ld64 $a8:9, $m6, $m7, 0 ; fnop }
	{
		ld64 $a4:5, $m2, $m4, 0
		f16v2tof32 $a0:1, $a8
	}
	{
		ld64step $a6:7, $m0, $m4+=, 2
		f32v2mul $a4:5, $a4:5, $a10:11
	}
	{ nop ; f16v2tof32 $a2:3, $a9 }
	{ nop ; f32v2axpy $azeros, $a0:1, $a4:5 }
	{ nop ; f32v2axpy $a4:5, $azeros, $azeros }	// the result (pipelined)
#endif
	{ nop ; f32v2mul $a6:7, $a6:7, $a10:11 }
	{ nop ; f32v2axpy $azeros, $a2:3, $a6:7 }
	{ nop ; f32v2axpy $a6:7, $azeros, $azeros }	// the result (pipelined)
	{ nop ; f32v2mul $a4:5, $a4:5, $a12:13 }
	{ nop ; f32v2mul $a6:7, $a6:7, $a12:13 }
	{ nop ; f32v4tof16 $a4:5, $a4:7 }
	{ st64step $a4:5, $m8, $m7+=, 1 ; fnop }
#endif
	{ add $m4, $m4, $m11 ; fnop }
	{ add $m7, $m7, $m12 ; fnop }
	{ brnzdec $m10, 1b ; fnop }
	WORKER_END attention_merge_f16

#if MODE != 2
// Run 2: the new statistics, rows split over the workers.
	WORKER_BEGIN attention_merge_f16_stats
	WORKER_SPLIT QR, RR, count=$m10, first=$m9, tmp=$m12, rpt=1
	shl $m9, $m9, 3			// the first row's stats offset
	ld32 $m3, $mvertex_base, $mzero, 1
	ld32 $m5, $mvertex_base, $mzero, 3
	.p2align 3
1:
#if MODE == 0
	{ ld64 $a0:1, $m5, $m9, 0 ; fnop }
	{ st64step $a0:1, $m3, $m9+=, 1 ; fnop }
#else
	{ ld64 $a0:1, $m3, $m9, 0 ; fnop }
	{ ld64 $a2:3, $m5, $m9, 0 ; fnop }
	{ nop ; f32max $a4, $a0, $a2 }
	{ nop ; f32sub $a10, $a0, $a4 }
	{ nop ; f32sub $a11, $a2, $a4 }
	{ nop ; f32exp $a10, $a10 }
	{ nop ; f32exp $a11, $a11 }
	{ nop ; f32mul $a5, $a10, $a1 }
	{ nop ; f32mul $a6, $a11, $a3 }
	{ nop ; f32add $a5, $a5, $a6 }
	{ st64step $a4:5, $m3, $m9+=, 1 ; fnop }
#endif
	{ brnzdec $m10, 1b ; fnop }
9:
	WORKER_END attention_merge_f16_stats
#endif
