// layer_norm_f16: y = (s - mean) * rsqrt(var + eps) * scale + bias over
// each of ROWS rows of WIDTH f16 values, s = x (RESIDUAL=0) or
// s = f16(x + r) (RESIDUAL=1, s also written to `sum`); mean and the
// (biased) variance in f32, eps = 1e-6 (f32 0x358637BD).
//
// ABI (supervisor entry layer_norm_f16): $m2 = out (ROWS*WIDTH f16),
// $m3 = x (ROWS*WIDTH f16), $m4 = scale (WIDTH f16), $m5 = bias (WIDTH
// f16), $m6 = stats (ROWS pairs of f32: mean, variance), $m7 = r and
// $m8 = sum (ROWS*WIDTH f16 each; RESIDUAL=1 only, ignored otherwise), all
// 8-byte aligned. out may equal x (in place); sum may equal x or r; no
// other overlap. $m10 = return address. Clobbers $m0, $m1 and the
// kernel's vertex words (which hold the cross-worker partial sums).
//
// Work split: every worker takes a column slice of every row, words
// [f, f+c) of the row's WIDTH/4 words (c = Q + (w < R), f = w*Q + min(w,
// R), Q = (WIDTH/4)/6, R = (WIDTH/4)%6), so one row uses all six workers.
// Three worker runs, separated by sync 2:
//   A. per row, the f32 sum of the slice (f16v2tof32, f32v4add into four
//      lanes, lane j summing the slice's values 4k+j in order from +0;
//      then (l0+l2)+(l1+l3)), stored as partial w of the row; RESIDUAL=1
//      first forms and stores s = f16v4add(x, r).
//   B. per row, mean = (((((p0+p1)+p2)+p3)+p4)+p5) * (1/WIDTH) (1/WIDTH
//      is f32oox of f32fromi32 WIDTH, correctly rounded); the f32 sum of
//      (s - mean)^2 over the slice (f32v2sub, f32v2mul, f32v4add, reduced
//      as in A), stored as partial w.
//   C. per row, mean as in B, var = (((((q0+q1)+q2)+q3)+q4)+q5) * (1/WIDTH),
//      rstd = f32oorx(var + eps); stats[row] = (mean, var) (every worker
//      stores the same 8 bytes); per value z = (s - mean) * rstd (f32,
//      each step rounded), z16 = f16(z) (f32v4tof16), y = f16(f16(z16 *
//      scale) + bias) (f16v4mul, f16v4add).
// Per word (4 values) a worker issues 3 bundles in A (5 with RESIDUAL), 7
// in B and 11 in C, plus a fixed number per row (the partial sums, the
// statistics, the accumulator clears).
//
// PANELS=1 (WIDTH a multiple of 16): x, out and (RESIDUAL=1) r and sum are
// in AMP left / AMP out order, the block of ROWS x WIDTH values as WIDTH/16
// panels of P = ROWS*32 bytes, row i's values 16g..16g+15 at g*P + i*32:
// word k of row i at (k/4)*P + i*32 + (k%4)*8 (scale and bias stay WIDTH
// contiguous values). Layer norm's output is the left operand of the q/k/v
// (or fc1) gemms and the residual r the out_proj (or fc2) gemm's output,
// so no unpack or pack is needed around it. Runs A and B keep PANELS=0's
// split and order (the sums, hence every result, bit for bit the same on
// the same logical data): each row's slice is walked as a head (up to the
// first panel boundary, a word per rpt pass), the full panels (four words
// per pass, the fourth stepping P-24 bytes with a register stride, no
// extra bundle) and a tail, with one bundle between head and panels (the
// P-32 jump when the head ends on a boundary): 3 bundles more per row. Run
// C is elementwise, so it splits whole panels instead (worker w: panels
// [w*PQ + min(w, PR), +PQ + (w < PR)) of every row, PQ = (WIDTH/16)/6, PR =
// (WIDTH/16)%6): one rpt of four words per pass per row, its scale and
// bias contiguous, one bundle fewer per row than PANELS=0.

#include "common.inc"

#ifndef ROWS
#error "ROWS must be defined"
#endif
#ifndef WIDTH
#error "WIDTH must be defined"
#endif
#ifndef RESIDUAL
#define RESIDUAL 0
#endif
#ifndef PANELS
#define PANELS 0
#endif

	.set W4, WIDTH / 4		// words per row
	.set Q, W4 / 6
	.set R, W4 % 6
	.set PA, 9			// vertex word of partial A[0][0]
	.set PB, 9 + 6 * ROWS		// vertex word of partial B[0][0]
	.set PQ, WIDTH / 16 / 6		// PANELS=1, run C: panels per worker
	.set PR, WIDTH / 16 % 6
#if RESIDUAL
	.set LN_LASTA, 4		// the last bundle of run A's word
#else
	.set LN_LASTA, 2
#endif

	KERNEL_VERTEX layer_norm_f16
	.long 0, 0, 0, 0, 0		// scale, bias, stats, r, sum (words 2..6)
	.long WIDTH			// word 7
	.long 0x358637BD		// word 8: eps = 1e-6 (f32)
	.space 48 * ROWS		// partials A and B, [ROWS][6] f32 each

	SUPERVISOR_BEGIN layer_norm_f16
	setzi $m0, layer_norm_f16_vertex
	st32 $m2, $m0, $mzero, 0
	st32 $m3, $m0, $mzero, 1
	st32 $m4, $m0, $mzero, 2
	st32 $m5, $m0, $mzero, 3
	st32 $m6, $m0, $mzero, 4
	st32 $m7, $m0, $mzero, 5
	st32 $m8, $m0, $mzero, 6
	RUN_STAGE layer_norm_f16_worker
	RUN_STAGE layer_norm_f16_var_worker
	setzi $m1, layer_norm_f16_apply_worker
	runall $m1, $m0, 0
	SUPERVISOR_END layer_norm_f16

// The slice: $m0 = w, $m1 = c (words), $m7 = 8f (byte offset of the slice
// in a row), $m11 = 8*(W4 - c) (bytes from the slice's end to the next
// row's slice). $m4 = $m7 (the running data offset), $m6 = ROWS - 1.
// Clobbers $m9. 12 instructions. PANELS=1: $m7 = f, $m11 and $m4 not set
// (LN_WALK's); 8 instructions.
.macro LN_SLICE
	get $m0, $WSR
	and $m0, $m0, 7
	cmpult $m1, $m0, R
	add $m1, $m1, Q
	mul $m7, $m0, Q
	min $m9, $m0, R
	add $m7, $m7, $m9
	.if PANELS == 0
	shl $m7, $m7, 3
	sub $m11, W4, $m1
	shl $m11, $m11, 3
	add $m4, $m7, 0
	.endif
	setzi $m6, ROWS - 1
.endm

// PANELS=1: the walk of the $m1 words from word $m7 of every row. Out: $m7
// = $m4 = the byte offset of the first word in row 0 ((f/4)*P + (f%4)*8),
// h = head words (up to the first panel boundary, at most d = (4 -
// f%4)%4), $m1 = J (P - 32 when the head ends on the boundary, else 0:
// from the head's end to the next panel's first word), m = full panels, t
// = tail words, $m0 = PS = 4*ROWS - 3 (the stride in 8-byte units from a
// panel's last word to the next panel's first). Uses tmp. 17 instructions.
.macro LN_WALK tmp:req, h:req, m:req, t:req
	and \tmp, $m7, 3
	shr $m7, $m7, 2
	mul $m7, $m7, 32 * ROWS
	shl $m0, \tmp, 3
	add $m7, $m7, $m0
	sub \tmp, 4, \tmp
	and \tmp, \tmp, 3		// d
	min \h, $m1, \tmp
	sub \t, $m1, \h
	shr \m, \t, 2
	and \t, \t, 3
	cmpeq $m1, \h, \tmp
	cmpult $m0, $mzero, \tmp
	and $m1, $m1, $m0
	mul $m1, $m1, 32 * ROWS - 32	// J
	setzi $m0, 4 * ROWS - 3		// PS
	add $m4, $m7, 0
.endm

// PANELS=1: the head, J, the full panels and the tail of a row's walk
// (LN_WALK's h, m, t), word a macro issuing one word with its pointer step
// as its argument (1, or $m0 for a panel's last word) and last its bundles
// less one. 4 bundles and the words.
.macro LN_PANEL_WORDS h:req, m:req, t:req, word:req, last:req
	{
		rpt \h, \last
		fnop
	}
	\word 1
	{ add $m4, $m4, $m1 ; fnop }
	{
		rpt \m, 4 * (\last + 1) - 1
		fnop
	}
	.rept 3
	\word 1
	.endr
	\word $m0
	{
		rpt \t, \last
		fnop
	}
	\word 1
.endm

// The four f32 lanes of $a0:3 summed as (l0+l2)+(l1+l3) into $a0, stored as
// partial w of the row ($m9 + 4*off); $a0:3 and $a4:7 cleared for the next
// row, $m4 advanced to the next row's slice, the row loop closed
// (PANELS=1: $m7 and $m4 to the next row's slice, 32 bytes on).
.macro LN_PARTIAL off:req
	.if PANELS
	{
		add $m7, $m7, 32
		f32v4add $a0:3, $a0:3, $a4:7
	}
	{
		add $m4, $m7, 0
		f32v2add $a0:1, $a0:1, $a2:3
	}
	.else
	{
		add $m4, $m4, $m11
		f32v4add $a0:3, $a0:3, $a4:7
	}
	{ nop ; f32v2add $a0:1, $a0:1, $a2:3 }
	.endif
	{ nop ; f32add $a0, $a0, $a1 }
	{
		st32 $a0, $m9, $mzero, \off
		f32v2add $a0:1, $azeros, $azeros
	}
	{
		add $m9, $m9, 24
		f32v2add $a2:3, $azeros, $azeros
	}
	{ nop ; f32v2add $a4:5, $azeros, $azeros }
	{
		brnzdec $m6, 1b
		f32v2add $a6:7, $azeros, $azeros
	}
.endm

// Clears $a0:3 and $a4:7 (4 bundles).
.macro LN_CLEAR
	{ nop ; f32v2add $a0:1, $azeros, $azeros }
	{ nop ; f32v2add $a2:3, $azeros, $azeros }
	{ nop ; f32v2add $a4:5, $azeros, $azeros }
	{ nop ; f32v2add $a6:7, $azeros, $azeros }
.endm

// The sum of the row's six partials at vertex word off (from $m9, the row's
// partial base) into dst: (((((p0+p1)+p2)+p3)+p4)+p5) * $a10 (1/WIDTH).
// Uses $a8, $a9, $a11. 8 bundles.
.macro LN_COMBINE dst:req, off:req
	{ ld32 $a8, $m9, $mzero, (\off) ; fnop }
	{ ld32 $a9, $m9, $mzero, (\off) + 1 ; fnop }
	{ ld32 $a11, $m9, $mzero, (\off) + 2 ; f32add $a8, $a8, $a9 }
	{ ld32 $a9, $m9, $mzero, (\off) + 3 ; f32add $a8, $a8, $a11 }
	{ ld32 $a11, $m9, $mzero, (\off) + 4 ; f32add $a8, $a8, $a9 }
	{ ld32 $a9, $m9, $mzero, (\off) + 5 ; f32add $a8, $a8, $a11 }
	{ nop ; f32add $a8, $a8, $a9 }
	{ nop ; f32mul \dst, $a8, $a10 }
.endm

// 1/WIDTH into $a10 (3 instructions).
.macro LN_INVW
	ld32 $a10, $mvertex_base, $mzero, 7
	f32fromi32 $a10, $a10
	f32oox $a10, $a10
.endm

// One word of run A (pointer step \step): the previous word's values
// added to the lanes, this word's (s = x + r stored to sum first with
// RESIDUAL) widened to f32.
.macro LN_SUM_WORD step:req
#if RESIDUAL
	{
		ld64 $a8:9, $m3, $m4, 0
		f32v4add $a0:3, $a0:3, $a4:7
	}
	{ ld64 $a10:11, $m5, $m4, 0 ; fnop }
	{ nop ; f16v4add $a8:9, $a8:9, $a10:11 }
	{
		st64step $a8:9, $m2, $m4+=, \step
		f16v2tof32 $a4:5, $a8
	}
	{ nop ; f16v2tof32 $a6:7, $a9 }
#else
	{
		ld64step $a8:9, $m3, $m4+=, \step
		f32v4add $a0:3, $a0:3, $a4:7
	}
	{ nop ; f16v2tof32 $a4:5, $a8 }
	{ nop ; f16v2tof32 $a6:7, $a9 }
#endif
.endm

// Run A: the partial sums (and s = x + r).
	WORKER_BEGIN layer_norm_f16
	LN_SLICE
	ld32 $m3, $mvertex_base, $mzero, 1	// x
#if RESIDUAL
	ld32 $m5, $mvertex_base, $mzero, 5	// r
	ld32 $m2, $mvertex_base, $mzero, 6	// sum
#endif
	shl $m9, $m0, 2
	add $m9, $m9, $mvertex_base	// partial w of row 0, less 4*PA
	.if PANELS
	LN_WALK $m8, $m10, $m11, $m12
	.endif
	.p2align 3
	LN_CLEAR
1:
	.if PANELS
	LN_PANEL_WORDS $m10, $m11, $m12, LN_SUM_WORD, LN_LASTA
	.else
	{
		rpt $m1, LN_LASTA
		fnop
	}
	LN_SUM_WORD 1
	.endif
	LN_PARTIAL PA
	WORKER_END layer_norm_f16

// One word of run B (pointer step \step): the previous word's squares
// added to the lanes, this word's (s - mean)^2.
.macro LN_VAR_WORD step:req
	{
		ld64step $a8:9, $m3, $m4+=, \step
		f32v4add $a0:3, $a0:3, $a4:7
	}
	{ nop ; f16v2tof32 $a4:5, $a8 }
	{ nop ; f16v2tof32 $a6:7, $a9 }
	{ nop ; f32v2sub $a4:5, $a4:5, $a12:13 }
	{ nop ; f32v2sub $a6:7, $a6:7, $a12:13 }
	{ nop ; f32v2mul $a4:5, $a4:5, $a4:5 }
	{ nop ; f32v2mul $a6:7, $a6:7, $a6:7 }
.endm

// Run B: the partial sums of squared deviations.
	WORKER_BEGIN layer_norm_f16_var
	LN_SLICE
#if RESIDUAL
	ld32 $m3, $mvertex_base, $mzero, 6	// s = sum
#else
	ld32 $m3, $mvertex_base, $mzero, 1	// s = x
#endif
	shl $m10, $m0, 2
	add $m10, $m10, $mvertex_base	// partial w of row 0, less 4*PB
	add $m9, $mvertex_base, 0	// row 0's partials, less 4*PA
	LN_INVW
	.if PANELS
	LN_WALK $m8, $m2, $m11, $m12
	.endif
	.p2align 3
	LN_CLEAR
1:
	LN_COMBINE $a12, PA
	{ nop ; f32max $a13, $a12, $a12 }	// the mean pair
	.if PANELS
	LN_PANEL_WORDS $m2, $m11, $m12, LN_VAR_WORD, 6
	{
		add $m7, $m7, 32
		f32v4add $a0:3, $a0:3, $a4:7
	}
	{
		add $m4, $m7, 0
		f32v2add $a0:1, $a0:1, $a2:3
	}
	.else
	{
		rpt $m1, 6
		fnop
	}
	LN_VAR_WORD 1
	{
		add $m4, $m4, $m11
		f32v4add $a0:3, $a0:3, $a4:7
	}
	{ nop ; f32v2add $a0:1, $a0:1, $a2:3 }
	.endif
	{ nop ; f32add $a0, $a0, $a1 }
	{
		st32 $a0, $m10, $mzero, PB
		f32v2add $a0:1, $azeros, $azeros
	}
	{
		add $m10, $m10, 24
		f32v2add $a2:3, $azeros, $azeros
	}
	{
		add $m9, $m9, 24
		f32v2add $a4:5, $azeros, $azeros
	}
	{
		brnzdec $m6, 1b
		f32v2add $a6:7, $azeros, $azeros
	}
	WORKER_END layer_norm_f16_var

// One word of run C (out's pointer step \step): z = (s - mean) * rstd,
// f16(f16(f16(z) * scale) + bias).
.macro LN_APPLY_WORD step:req
	{ ld64 $a8:9, $m3, $m4, 0 ; fnop }
	{
		ld64 $a10:11, $m5, $m7, 0
		f16v2tof32 $a4:5, $a8
	}
	{
		ld64step $a0:1, $m8, $m7+=, 1
		f16v2tof32 $a6:7, $a9
	}
	{ nop ; f32v2sub $a4:5, $a4:5, $a12:13 }
	{ nop ; f32v2sub $a6:7, $a6:7, $a12:13 }
	{ nop ; f32v2mul $a4:5, $a4:5, $a2:3 }
	{ nop ; f32v2mul $a6:7, $a6:7, $a2:3 }
	{ nop ; f32v4tof16 $a4:5, $a4:7 }
	{ nop ; f16v4mul $a4:5, $a4:5, $a10:11 }
	{ nop ; f16v4add $a4:5, $a4:5, $a0:1 }
	{ st64step $a4:5, $m2, $m4+=, \step ; fnop }
.endm

// Run C: the statistics and the normalised, scaled and biased output.
	WORKER_BEGIN layer_norm_f16_apply
	.if PANELS
	// the worker's panels: $m1 = count, $m11 = the first's offset in row
	// 0, $m12 = its scale and bias offset, $m0 = PS (as LN_WALK's)
	get $m0, $WSR
	and $m0, $m0, 7
	cmpult $m1, $m0, PR
	add $m1, $m1, PQ
	mul $m12, $m0, PQ
	min $m0, $m0, PR
	add $m12, $m12, $m0
	mul $m11, $m12, 32 * ROWS
	shl $m12, $m12, 5
	setzi $m0, 4 * ROWS - 3
	setzi $m6, ROWS - 1
	.else
	LN_SLICE
	add $m12, $m7, 0		// the slice offset, for scale and bias
	.endif
	ld32 $m2, $mvertex_base, $mzero, 0	// out
#if RESIDUAL
	ld32 $m3, $mvertex_base, $mzero, 6	// s = sum
#else
	ld32 $m3, $mvertex_base, $mzero, 1	// s = x
#endif
	ld32 $m5, $mvertex_base, $mzero, 2	// scale
	ld32 $m8, $mvertex_base, $mzero, 3	// bias
	ld32 $m10, $mvertex_base, $mzero, 4	// stats
	add $m9, $mvertex_base, 0	// row 0's partials, less 4*PA
	.p2align 3
1:
	{ ld32 $a10, $mvertex_base, $mzero, 7 ; fnop }
	{ nop ; f32fromi32 $a10, $a10 }
	{ nop ; f32oox $a10, $a10 }
	LN_COMBINE $a0, PA
	LN_COMBINE $a1, PB
	{
		ld32 $a11, $mvertex_base, $mzero, 8
		f32max $a12, $a0, $a0
	}
	{
		st64step $a0:1, $mzero, $m10+=, 1
		f32max $a13, $a0, $a0
	}
	{ add $m7, $m12, 0 ; f32add $a2, $a1, $a11 }
	.if PANELS
	{ add $m4, $m11, 0 ; f32oorx $a2, $a2 }
	{ add $m11, $m11, 32 ; f32max $a3, $a2, $a2 }	// the rstd pair
	{
		rpt $m1, 43
		fnop
	}
	.rept 3
	LN_APPLY_WORD 1
	.endr
	LN_APPLY_WORD $m0
	.else
	{ nop ; f32oorx $a2, $a2 }
	{ nop ; f32max $a3, $a2, $a2 }		// the rstd pair
	{
		rpt $m1, 10
		fnop
	}
	LN_APPLY_WORD 1
	{ add $m4, $m4, $m11 ; fnop }
	.endif
	{ add $m9, $m9, 24 ; fnop }
	{ brnzdec $m6, 1b ; fnop }
	WORKER_END layer_norm_f16_apply
