// unpack_out_f16: AMP output panel f16 [ceil(C/16)][R][16] (byte
// (cg*R + row)*32 + 2n holds C[row][16cg+n]) to row-major f16 [R][C] with
// row stride STRIDE elements.
//
// ABI (supervisor entry unpack_out_f16): $m2 = out (8-byte aligned; row i
// at $m2 + 2*i*STRIDE), $m3 = in (panel, 8-byte aligned, ceil(C/16)*R*32
// bytes), no overlap. $m10 = return address. Clobbers $m0, $m1 and the
// kernel's vertex words. Parameters R, C, STRIDE (multiple of 4, >=
// roundup(C, 4), <= 2048; 0 means C).
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

	.section .data.unpack_out_f16_vertex, "aw"
	.p2align 3
unpack_out_f16_vertex:
	.long 0, 0			// out, in
	.long R * 32			// panel bytes per group
	.long 2 * S			// output row stride in bytes

	.supervisor
	.section .text.unpack_out_f16, "ax"
	.globl unpack_out_f16
	.type unpack_out_f16, @function
	.p2align 2
unpack_out_f16:
	setzi $m0, unpack_out_f16_vertex
	st32 $m2, $m0, $mzero, 0
	st32 $m3, $m0, $mzero, 1
	setzi $m1, unpack_out_f16_worker
	runall $m1, $m0, 0
	sync 2
	br $m10
	.size unpack_out_f16, .-unpack_out_f16

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

	.worker
	.section .text.unpack_out_f16_worker, "ax"
	.type unpack_out_f16_worker, @function
	.p2align 3
unpack_out_f16_worker:
	get $m0, $WSR
	and $m0, $m0, 7
	cmpult $m1, $m0, RR
	add $m1, $m1, Q			// rows of this worker
	brz $m1, 9f
	add $m1, $m1, -1		// rpt count
	mul $m4, $m0, Q
	min $m0, $m0, RR
	add $m4, $m4, $m0		// first row
	ld32 $m3, $mvertex_base, $mzero, 0
	ld32 $m0, $mvertex_base, $mzero, 3
	mul $m0, $m0, $m4
	add $m3, $m3, $m0		// output: first row, column 0
	ld32 $m2, $mvertex_base, $mzero, 1
	shl $m0, $m4, 5
	add $m2, $m2, $m0		// panel: first row, group 0
	ld32 $m8, $mvertex_base, $mzero, 2
	.if GF > 0
	setzi $m6, 1 | (((S / 4 - 3) & 0x3FF) << 10)
	setzi $m7, GF - 1
	.p2align 3
1:
	{
		tapack $m4:5, $m2, $m2, $m3
		fnop
	}
	U_GROUP 4
	{
		add $m2, $m2, $m8
		fnop
	}
	{
		add $m3, $m3, 32
		fnop
	}
	{
		brnzdec $m7, 1b
		fnop
	}
	.endif
	.if CV > 0
	setzi $m6, (5 - PNW) | (((S / 4 - (PNW - 1)) & 0x3FF) << 10)
	.p2align 3
	{
		tapack $m4:5, $m2, $m2, $m3
		fnop
	}
	U_GROUP PNW
	.endif
9:
	exitz $mzero
	.size unpack_out_f16_worker, .-unpack_out_f16_worker
