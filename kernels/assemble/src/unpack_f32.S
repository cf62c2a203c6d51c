// unpack_out_f32: AMP output panel f32 [ceil(C/8)][R][8] (byte
// (cg*R + row)*32 + 4n holds C[row][8cg+n], f32) to row-major f16 [R][C]
// with row stride STRIDE elements, rounding to nearest even (f32v2tof16).
//
// ABI (supervisor entry unpack_out_f32): $m2 = out (8-byte aligned; row i
// at $m2 + 2*i*STRIDE), $m3 = in (panel, 8-byte aligned, ceil(C/8)*R*32
// bytes, all read), no overlap. $m10 = return address. Clobbers $m0, $m1
// and the kernel's vertex words. Parameters R, C, STRIDE (multiple of 4,
// >= roundup(C, 4), <= 2044; 0 means C).
//
// What is written: columns [0, roundup(C, 4)) of every row; columns
// [C, roundup(C, 4)) receive the panel's padding columns, rounded.
//
// Work split as unpack_out_f16 (rows over workers, group by group). Per
// row and group four bundles: two ld2xst64pace (each loads two panel words
// = four f32 through two load addresses, 8 bytes apart, both +16 per load)
// and four f32v2tof16 on the aux slots; each ld2xst64pace stores one
// output word (four f16) of the previous row. Aux-bound: 32 panel bytes
// read and 16 bytes written per four bundles. Store increments: +8 after a
// row's first word, 2*STRIDE - 8 after its second (stride register bits
// 10..19); a last group of <= 4 columns stores one word per row
// (increment 2*STRIDE).

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
	.set GF, C / 8			// full groups
	.set CV, C % 8			// columns of the partial group
	.set PNWO, (CV + 3) / 4		// output words per row of the partial group

	.if (S % 4) || (S < ((C + 3) / 4) * 4)
	.error "STRIDE must be a multiple of 4 and at least C rounded up to 4"
	.endif

	// out (rows) and in (panel); panel bytes per group, output row stride
	PANEL_VERTEX unpack_out_f32, R, S
	KERNEL_ENTRY unpack_out_f32

// One row of a group: $a0:3 and $a4:7 take the row's f32, $a8:9 and
// $a10:11 the two output words. kind 0: loads only (first row),
// 1: loads and stores (of the previous row), 2: stores only (drain).
// nwo: output words per row (1 or 2).
.macro F_ROW kind, nwo
	{
	.if (\kind) == 0
		ld2x64pace $a0:1, $a2:3, $m4:5+=, $m6, 1 | (1 << 2)
	.elseif (\kind) == 1
		ld2xst64pace $a0:3, $a8:9, $m4:5+=, $m6, 1 | (1 << 2) | ((((\nwo) == 1) * 2) << 4)
	.else
		st64pace $a8:9, $m4:5+=, $m6, ((\nwo) == 1) * 2
	.endif
		f32v2tof16 $a10, $a4:5
	}
	{
		nop
		f32v2tof16 $a11, $a6:7
	}
	.if (\kind) != 2
	{
	.if ((\kind) == 0) || ((\nwo) == 1)
		ld2x64pace $a4:5, $a6:7, $m4:5+=, $m6, 1 | (1 << 2)
	.else
		ld2xst64pace $a4:7, $a10:11, $m4:5+=, $m6, 1 | (1 << 2) | (2 << 4)
	.endif
		f32v2tof16 $a8, $a0:1
	}
	{
		nop
		f32v2tof16 $a9, $a2:3
	}
	.elseif (\nwo) == 2
	{
		st64pace $a10:11, $m4:5+=, $m6, 2
		fnop
	}
	.endif
.endm

// All rows of one group. Expects $m4:5 = (word 0, word 1, store),
// $m1 = n-1.
.macro F_GROUP nwo
	F_ROW 0, \nwo
	{
		rpt $m1, 3
		fnop
	}
	F_ROW 1, \nwo
	F_ROW 2, \nwo
.endm

	WORKER_BEGIN unpack_out_f32
	// $m1 = rows of this worker - 1 (rpt count), $m4 = its first row
	WORKER_SPLIT Q, RR, count=$m1, first=$m4, rpt=1
	// $m3 = output: first row, column 0; $m2 = panel: first row, group 0
	PANEL_POINTERS $m3, 0, $m2, 1
	// Loads from $m2 and $m9 = $m2 + 8; + R*32 per group, stores +16
	// bytes (8 columns).
	PANEL_FULL_GROUPS GF, 2 | (((S / 4 - 1) & 0x3FF) << 10), ldinc=$m8, stinc=16, load2=$m9, F_GROUP 2
	PANEL_LAST_GROUP CV, 2 | (((S / 4 - (PNWO - 1)) & 0x3FF) << 10), load2=$m9, F_GROUP PNWO
9:
	WORKER_END unpack_out_f32
