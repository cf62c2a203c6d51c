// copy_f16: copy N bytes from $m3 to $m2 with all six workers.
//
// ABI (supervisor entry copy_f16): $m2 = out, $m3 = in (both 8-byte aligned),
// $m10 = return address. Clobbers $m0, $m1 and the kernel's vertex words.
// Parameter: N (bytes, a multiple of 8). out and in may be equal; other overlap
// is not allowed.
//
// The WORDS = N/8 words are split evenly: worker w copies
// Q + (w < R) words (Q = WORDS/6, R = WORDS%6) from word w*Q + min(w, R).
// Its loop is one ldst64pace per word: each bundle stores the word loaded by
// the bundle before it (the store reads the register before the load
// writes it), so a worker moves 8 bytes per bundle.

#include "common.inc"

#ifndef N
#error "N must be defined"
#endif

	.set WORDS, N / 8
	.set Q, WORDS / 6
	.set R, WORDS % 6

	KERNEL_VERTEX copy_f16
	KERNEL_ENTRY copy_f16

	WORKER_BEGIN copy_f16
	// $m5 = words of this worker, $m1 = its first word
	WORKER_SPLIT Q, R, count=$m5, first=$m1, tmp=$m4
	shl $m1, $m1, 3			// as a byte offset
	ld32 $m2, $mvertex_base, $mzero, 0
	ld32 $m3, $mvertex_base, $mzero, 1
	add $m2, $m2, $m1
	add $m3, $m3, $m1
	ld64 $a0:1, $m3, $mzero, 0
	add $m3, $m3, 8
	tapack $m6:7, $m3, $m3, $m2
	add $m5, $m5, -1
	.p2align 3
	{
		rpt $m5, 0
		fnop
	}
	{
		ldst64pace $a0:1, $a0:1, $m6:7+=, $mzero, 0
		fnop
	}
	st64pace $a0:1, $m6:7+=, $mzero, 0
9:
	WORKER_END copy_f16
