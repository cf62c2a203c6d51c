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

#ifndef N
#error "N must be defined"
#endif

	.set WORDS, N / 8
	.set Q, WORDS / 6
	.set R, WORDS % 6

	.section .data.copy_f16_vertex, "aw"
	.p2align 3
copy_f16_vertex:
	.long 0, 0			// out, in

	.supervisor
	.section .text.copy_f16, "ax"
	.globl copy_f16
	.type copy_f16, @function
	.p2align 2
copy_f16:
	setzi $m0, copy_f16_vertex
	st32 $m2, $m0, $mzero, 0
	st32 $m3, $m0, $mzero, 1
	setzi $m1, copy_f16_worker
	runall $m1, $m0, 0
	sync 2
	br $m10
	.size copy_f16, .-copy_f16

	.worker
	.section .text.copy_f16_worker, "ax"
	.type copy_f16_worker, @function
	.p2align 3
copy_f16_worker:
	get $m0, $WSR
	and $m0, $m0, 7
	// count = Q + (w < R)
	cmpult $m5, $m0, R
	add $m5, $m5, Q
	brz $m5, 9f
	// first word = w*Q + min(w, R), as a byte offset
	mul $m1, $m0, Q
	min $m4, $m0, R
	add $m1, $m1, $m4
	shl $m1, $m1, 3
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
	exitz $mzero
	.size copy_f16_worker, .-copy_f16_worker
