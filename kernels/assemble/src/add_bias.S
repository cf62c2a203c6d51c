// add_bias_f16: out += bias broadcast over the rows of an AMP output panel.
//
// The operand is ROWS consecutive 16-value rows (32 bytes each) of an AMP
// output panel [groups][R][16] f16, starting at row FIRST of a column
// group: panel row p (0 <= p < ROWS) belongs to column group
// g = (FIRST + p) / R (counted from the operand's first group) and gets
// bias[16g + n] added to its value n. FIRST = 0 and ROWS = R*groups is a
// whole panel (a GEMM output plus its bias); other values describe a
// contiguous piece of a panel (a reduce-scatter piece, see compiler/low).
//
// ABI (supervisor entry add_bias_f16): $m2 = out (ROWS*32 bytes, read and
// written in place), $m3 = in = the bias of out's first column group
// (16*(ceil((FIRST+ROWS)/R)) f16), both 8-byte aligned, not overlapping.
// $m10 = return address. Clobbers $m0, $m1 and the kernel's vertex words.
//
// Arithmetic: f16v4add, one rounding to nearest even per value, as the
// reference's f16 add of two f16 values.
//
// Work split: worker w takes Q + (w < REM) rows from row w*Q + min(w, REM)
// (Q = ROWS/6, REM = ROWS%6). Its first row's group and its place in the
// group are assembly-time constants (vertex words 2+3w..4+3w): the output
// byte offset, the bias byte offset and the rows left in that group. Per
// row it issues 13 bundles (4 loads and 4 stores, the 4 adds in their
// bundles, pointer and counter updates; $a14:15 is the zero pair, so the
// row's words share three pairs), and reloads the 16 bias values
// (4 loads) when it enters the next group.

#include "common.inc"

#ifndef ROWS
#error "ROWS must be defined"
#endif
#ifndef R
#error "R must be defined"
#endif
#ifndef FIRST
#define FIRST 0
#endif

	.set Q, ROWS / 6
	.set REM, ROWS % 6

	KERNEL_VERTEX add_bias_f16
	.set w_, 0
	.rept 6
	.if w_ < REM
	.set p0_, w_ * (Q + 1)
	.else
	.set p0_, w_ * Q + REM
	.endif
	.long 32 * p0_, 32 * ((FIRST + p0_) / R), R - (FIRST + p0_) % R
	.set w_, w_ + 1
	.endr

	KERNEL_ENTRY add_bias_f16

	WORKER_BEGIN add_bias_f16
	// $m1 = rows of this worker - 1 (an rpt-style count for brnzdec)
	WORKER_SPLIT Q, REM, count=$m1, first=$m4, tmp=$m7, rpt=1
	setzi $m5, 12
	mul $m4, $m0, $m5
	add $m4, $m4, $mvertex_base	// this worker's table entry - 8
	ld32 $m2, $mvertex_base, $mzero, 0
	ld32 $m3, $mvertex_base, $mzero, 1
	ld32 $m5, $m4, $mzero, 2
	add $m2, $m2, $m5		// first output row
	ld32 $m5, $m4, $mzero, 3
	add $m3, $m3, $m5		// its group's bias
	ld32 $m6, $m4, $mzero, 4	// rows left in that group
1:
	ld64 $a6:7, $m3, $mzero, 0
	ld64 $a8:9, $m3, $mzero, 1
	ld64 $a10:11, $m3, $mzero, 2
	ld64 $a12:13, $m3, $mzero, 3
	.p2align 3			// the bundles below must be 8-byte aligned
2:
	ld64 $a0:1, $m2, $mzero, 0
	ld64 $a2:3, $m2, $mzero, 1
	{
		ld64 $a4:5, $m2, $mzero, 2
		f16v4add $a0:1, $a0:1, $a6:7
	}
	{
		st64 $a0:1, $m2, $mzero, 0
		f16v4add $a2:3, $a2:3, $a8:9
	}
	{
		ld64 $a0:1, $m2, $mzero, 3
		f16v4add $a4:5, $a4:5, $a10:11
	}
	{
		st64 $a2:3, $m2, $mzero, 1
		f16v4add $a0:1, $a0:1, $a12:13
	}
	st64 $a4:5, $m2, $mzero, 2
	st64 $a0:1, $m2, $mzero, 3
	add $m2, $m2, 32
	add $m6, $m6, -1
	brz $m1, 9f
	add $m1, $m1, -1
	brnz $m6, 2b
	// The next row starts the next column group.
	add $m3, $m3, 32
	setzi $m6, R
	bri 1b
9:
	WORKER_END add_bias_f16
