// unpack_out_f16: AMP output panel f16 [ceil(C/16)][R][16] (byte
// (cg*R + row)*32 + 2n holds C[row][16cg+n]) to row-major f16 [R][C] with
// row stride STRIDE elements.
//
// ABI (supervisor entry unpack_out_f16): $m2 = out (8-byte aligned; row i
// at $m2 + 2*i*STRIDE), $m3 = in (panel, 8-byte aligned, ceil(C/16)*R*32
// bytes), no overlap. $m10 = return address. Clobbers $m0, $m1 and the
// kernel's vertex words. Parameters R, C, STRIDE (multiple of 4, >=
// roundup(C, 4), <= 2044; 0 means C).
//
// What is written: columns [0, roundup(C, 4)) of every row; columns
// [C, roundup(C, 4)) receive the panel's padding columns (zero when the
// GEMM's padded inputs were zero); columns from roundup(C, 4) to STRIDE are
// not touched. Only the panel's first roundup(C,4)-16*(groups-1) columns of
// the last group are read.
//
// Work split: worker w unpacks rows [r0, r0 + n), n = Q + (w < RR),
// r0 = w*Q + min(w, RR) (Q = R/6, RR = R%6), group by group; its panel rows
// of one group are n*32 contiguous bytes. Per row and group NW bundles
// (NW = 4, or ceil(CV/4) for a last group of CV < 16 columns), one
// ldst64pace each: it stores the word the previous bundle loaded (same
// register; the store reads it before the load writes it) and loads the
// next, so a worker moves 8 bytes per bundle. Increments: loads +8, after a
// row's last word +8*(5-NW) (stride register bits 0..9); stores +8, after a
// row's last word 2*STRIDE - 8*(NW-1) (bits 10..19).

#include "common.inc"

#ifndef R
#error "R must be defined"
#endif
#ifndef C
#error "C must be defined"
#endif
#ifndef STRIDE
#error "STRIDE must be defined"
#endif

#if STRIDE == 0
	.set S, C
#else
	.set S, STRIDE
#endif
	.set Q, R / 6
	.set RR, R % 6
	.set GF, C / 16			// full groups
	.set CV, C % 16			// columns of the partial group
	.set PNW, (CV + 3) / 4		// words per row of the partial group

	.if (S % 4) || (S < ((C + 3) / 4) * 4)
	.error "STRIDE must be a multiple of 4 and at least C rounded up to 4"
	.endif

	// out (rows) and in (panel); panel bytes per group, output row stride
	PANEL_VERTEX unpack_out_f16, R, S
	KERNEL_ENTRY unpack_out_f16

// Bundle b of a row with nw words. kind 0: load only, 1: load and store
// the previous word, 2: store only.
.macro U_BUNDLE b, kind, nw
	.set uli, (\b) == (\nw) - 1		// row end: selector 01
	.set usi, 2 * ((\b) == 0)		// storing word nw-1: selector 10
	{
	.if (\kind) == 0
		ld2x64pace $a0:1, $a10:11, $m4:5+=, $m6, uli | (3 << 2)
	.elseif (\kind) == 1
		ldst64pace $a0:1, $a0:1, $m4:5+=, $m6, uli | (usi << 2)
	.else
		st64pace $a0:1, $m4:5+=, $m6, 2
	.endif
		fnop
	}
.endm

// All rows of one group. Expects $m4:5 = (load, load, store), $m1 = n-1.
.macro U_GROUP nw
	U_BUNDLE 0, 0, \nw
	{
		rpt $m1, (\nw) - 1
		fnop
	}
	.set ub, 1
	.rept \nw
		U_BUNDLE ub % (\nw), 1, \nw
		.set ub, ub + 1
	.endr
	.set ub, 1
	.rept (\nw) - 1
		U_BUNDLE ub, 1, \nw
		.set ub, ub + 1
	.endr
	U_BUNDLE 0, 2, \nw
.endm

	WORKER_BEGIN unpack_out_f16
	// $m1 = rows of this worker - 1 (rpt count), $m4 = its first row
	WORKER_SPLIT Q, RR, count=$m1, first=$m4, rpt=1
	// $m3 = output: first row, column 0; $m2 = panel: first row, group 0
	PANEL_POINTERS $m3, 0, $m2, 1
	// Loads + R*32 per group, stores +32 bytes (16 columns).
	PANEL_FULL_GROUPS GF, 1 | (((S / 4 - 3) & 0x3FF) << 10), ldinc=$m8, stinc=32, load2=$m2, U_GROUP 4
	PANEL_LAST_GROUP CV, (5 - PNW) | (((S / 4 - (PNW - 1)) & 0x3FF) << 10), load2=$m2, U_GROUP PNW
9:
	WORKER_END unpack_out_f16
