// pack_left_f16: row-major f16 [R][K] (row stride STRIDE elements) to the
// AMP left panel: for each inner group kg < ceil(K/16) and row < R, the 32
// bytes at (kg*R + row)*32 hold A[row][16kg .. 16kg+15], columns >= K zero.
//
// ABI (supervisor entry pack_left_f16): $m2 = out (panel, 8-byte aligned,
// ceil(K/16)*R*32 bytes, all written), $m3 = in (8-byte aligned; row i at
// $m3 + 2*i*STRIDE; only columns < roundup(K, 4) of each row are read), no
// overlap. $m10 = return address. Clobbers $m0, $m1 and the kernel's vertex
// words. Parameters R, K, STRIDE (multiple of 4, >= K, <= 2044; the bench
// passes 0 for "K").
//
// Work split: worker w packs rows [r0, r0 + n) with n = Q + (w < RR),
// r0 = w*Q + min(w, RR) (Q = R/6, RR = R%6), for every group, group by
// group: its output for one group is n*32 contiguous bytes. Per row and
// group four bundles, one pace instruction each: a load of the row's next
// input word and a store of an output word loaded LAG bundles before
// (ldst64pace; st64pace where there is nothing to load), so a worker stores
// 8 bytes per bundle. Increments: loads +8 within a row, then +2*STRIDE-8*(NL-1)
// (stride register bits 0..9); stores always +8.
//
// Last, partial group (K % 16 = KV != 0): NL = ceil(KV/4) words are loaded;
// output words past them are stored from the zero pair $a12:13. When
// KV % 4 != 0 the word holding column K-1 is masked with one aux op
// (sort4x16lo with $azero, or a copy into $a8 whose partner $a9 is zero)
// in the bundle after its load, and stored two bundles after it (LAG 2).

#include "common.inc"

#ifndef R
#error "R must be defined"
#endif
#ifndef K
#error "K must be defined"
#endif
#ifndef STRIDE
#error "STRIDE must be defined"
#endif

#if STRIDE == 0
	.set S, K
#else
	.set S, STRIDE
#endif
	.set Q, R / 6
	.set RR, R % 6
	.set GF, K / 16			// full groups
	.set KV, K % 16			// columns of the partial group
	.set PNL, (KV + 3) / 4		// words loaded per row of the partial group
	.set PFW, KV / 4		// full words in it
	.set PKM, KV % 4		// columns of the masked word

	.if (S % 4) || (S < K)
	.error "STRIDE must be a multiple of 4 and at least K"
	.endif

	// out (panel) and in (rows); output bytes per group, input row stride
	PANEL_VERTEX pack_left_f16, R, S
	KERNEL_ENTRY pack_left_f16

// The register pair holding output word q of a row (for nl loads, fw full
// words, km masked columns) is set in PSRC.
.macro PACK_SRC q, nl, fw, km
	.if (\q) < (\fw)
		.set psrc, 2 * (\q)		// R_q = $a(2q):(2q+1)
	.elseif ((\q) == (\fw)) && (\km)
		.if (\km) == 3
			.set psrc, 2 * (\fw)	// masked in place
		.else
			.set psrc, 8		// $a8:9
		.endif
	.else
		.set psrc, 12		// zeros
	.endif
.endm

// Register dispatch: the assembler cannot compute register names, so
// these macros pick the text for a pair number (0, 2, .., 12).
.macro P_LDST_S dt, s, inc
	.if (\s) == 0
		ldst64pace \dt, $a0:1, $m4:5+=, $m6, \inc
	.elseif (\s) == 2
		ldst64pace \dt, $a2:3, $m4:5+=, $m6, \inc
	.elseif (\s) == 4
		ldst64pace \dt, $a4:5, $m4:5+=, $m6, \inc
	.elseif (\s) == 6
		ldst64pace \dt, $a6:7, $m4:5+=, $m6, \inc
	.elseif (\s) == 8
		ldst64pace \dt, $a8:9, $m4:5+=, $m6, \inc
	.elseif (\s) == 12
		ldst64pace \dt, $a12:13, $m4:5+=, $m6, \inc
	.endif
.endm
.macro P_LDST d, s, inc
	.if (\d) == 0
		P_LDST_S $a0:1, \s, \inc
	.elseif (\d) == 2
		P_LDST_S $a2:3, \s, \inc
	.elseif (\d) == 4
		P_LDST_S $a4:5, \s, \inc
	.elseif (\d) == 6
		P_LDST_S $a6:7, \s, \inc
	.endif
.endm
.macro P_LD2X d, inc
	.if (\d) == 0
		ld2x64pace $a0:1, $a10:11, $m4:5+=, $m6, \inc
	.elseif (\d) == 2
		ld2x64pace $a2:3, $a10:11, $m4:5+=, $m6, \inc
	.elseif (\d) == 4
		ld2x64pace $a4:5, $a10:11, $m4:5+=, $m6, \inc
	.elseif (\d) == 6
		ld2x64pace $a6:7, $a10:11, $m4:5+=, $m6, \inc
	.endif
.endm
.macro P_ST s
	.if (\s) == 0
		st64pace $a0:1, $m4:5+=, $m6, 0
	.elseif (\s) == 2
		st64pace $a2:3, $m4:5+=, $m6, 0
	.elseif (\s) == 4
		st64pace $a4:5, $m4:5+=, $m6, 0
	.elseif (\s) == 6
		st64pace $a6:7, $m4:5+=, $m6, 0
	.elseif (\s) == 8
		st64pace $a8:9, $m4:5+=, $m6, 0
	.elseif (\s) == 12
		st64pace $a12:13, $m4:5+=, $m6, 0
	.endif
.endm
// The mask of the partial word (see the header): km columns valid in the
// word of pair 2*fw.
.macro P_MASK km, fw
	.if ((\km) == 1) && ((\fw) == 0)
		sort4x16lo $a8, $a0, $azero
	.elseif ((\km) == 1) && ((\fw) == 1)
		sort4x16lo $a8, $a2, $azero
	.elseif ((\km) == 1) && ((\fw) == 2)
		sort4x16lo $a8, $a4, $azero
	.elseif ((\km) == 1) && ((\fw) == 3)
		sort4x16lo $a8, $a6, $azero
	.elseif ((\km) == 2) && ((\fw) == 0)
		or $a8, $a0, $azero
	.elseif ((\km) == 2) && ((\fw) == 1)
		or $a8, $a2, $azero
	.elseif ((\km) == 2) && ((\fw) == 2)
		or $a8, $a4, $azero
	.elseif ((\km) == 2) && ((\fw) == 3)
		or $a8, $a6, $azero
	.elseif ((\km) == 3) && ((\fw) == 0)
		sort4x16lo $a1, $a1, $azero
	.elseif ((\km) == 3) && ((\fw) == 1)
		sort4x16lo $a3, $a3, $azero
	.elseif ((\km) == 3) && ((\fw) == 2)
		sort4x16lo $a5, $a5, $azero
	.elseif ((\km) == 3) && ((\fw) == 3)
		sort4x16lo $a7, $a7, $azero
	.else
		fnop
	.endif
.endm

// One bundle b (0..3) of a row. kind 0: prologue (loads only), 1: body
// (loads and stores), 2: epilogue (stores only). lag: how many bundles a
// word's store follows its load.
.macro PACK_BUNDLE b, kind, lag, nl, fw, km
	.set pld, ((\kind) != 2) && ((\b) < (\nl))
	.set pst, (\kind) != 0
	.if (\b) == (\nl) - 1
		.set pli, 1			// row jump (stride register bits 0..9)
	.else
		.set pli, 0			// +8
	.endif
	PACK_SRC ((\b) - (\lag) + 4) % 4, \nl, \fw, \km
	.set paux, (\km) && ((\b) == ((\fw) + 1) % 4)
	.if pld || pst || paux
	{
	.if pld && pst
		P_LDST 2 * (\b), psrc, pli
	.elseif pld
		P_LD2X 2 * (\b), pli | (3 << 2)
	.elseif pst
		P_ST psrc
	.else
		nop
	.endif
	.if paux
		P_MASK \km, \fw
	.else
		fnop
	.endif
	}
	.endif
.endm

// All rows of one group: prologue, rpt over n-1 rows, last row, epilogue.
// Expects $m4:5 packed (load, load, store) and $m1 = n-1.
.macro PACK_GROUP lag, nl, fw, km
	.set pb, 0
	.rept \lag
		PACK_BUNDLE pb, 0, \lag, \nl, \fw, \km
		.set pb, pb + 1
	.endr
	{
		rpt $m1, 3
		fnop
	}
	.set pb, \lag
	.rept 4
		PACK_BUNDLE pb % 4, 1, \lag, \nl, \fw, \km
		.set pb, pb + 1
	.endr
	.set pb, \lag
	.rept 4 - (\lag)
		PACK_BUNDLE pb, 1, \lag, \nl, \fw, \km
		.set pb, pb + 1
	.endr
	.set pb, 0
	.rept \lag
		PACK_BUNDLE pb, 2, \lag, \nl, \fw, \km
		.set pb, pb + 1
	.endr
.endm

	WORKER_BEGIN pack_left_f16
	// $m1 = rows of this worker - 1 (rpt count), $m4 = its first row
	WORKER_SPLIT Q, RR, count=$m1, first=$m4, rpt=1
	// $m2 = input: first row, group 0; $m3 = output: first row, group 0
	PANEL_POINTERS $m2, 1, $m3, 0
	setzi $a9, 0
	setzi $a12, 0
	setzi $a13, 0
	// Loads +32 bytes per group (16 columns), stores + R*32.
	PANEL_FULL_GROUPS GF, (S / 4 - 3) & 0x3FF, ldinc=32, stinc=$m8, load2=$m2, PACK_GROUP 1, 4, 4, 0
	PANEL_LAST_GROUP KV, (S / 4 - (PNL - 1)) & 0x3FF, load2=$m2, PACK_GROUP 1 + (PKM != 0), PNL, PFW, PKM
9:
	WORKER_END pack_left_f16
