// add_f16: out[i] = a[i] + b[i] on N f16 values (the residual add).
//
// ABI (supervisor entry add_f16): $m2 = out, $m3 = a, $m4 = b (all 8-byte
// aligned; out may equal a or b, in place, but must not otherwise overlap
// them), $m10 = return address. Clobbers $m0, $m1 and the kernel's vertex
// words. Parameter N (multiple of 4).
//
// Arithmetic: f16v4add, the exact sum of two f16 values rounded once to
// f16 (nearest even).
//
// Schedule: per 64-bit word (4 values) a worker issues 3 bundles inside an
// rpt body: {load a' ; add}, {load b' ; fnop}, {store ; fnop}. The add
// reads the a and b loaded in the previous iteration (a main load
// co-issued with an aux read gives the aux the old value, docs/machine.md
// "Bundles"); the last word's add and store follow the body. The loop is
// main-slot bound: 3 memory accesses per word.
//
// Work split: WORDS = N/4; worker w takes Q + (w < R) words from word
// w*Q + min(w, R) (Q = WORDS/6, R = WORDS%6).

#include "common.inc"

#ifndef N
#error "N must be defined"
#endif

	.set WORDS, N / 4
	.set Q, WORDS / 6
	.set R, WORDS % 6

	KERNEL_VERTEX add_f16
	.long 0				// b (word 2)

	SUPERVISOR_BEGIN add_f16
	setzi $m0, add_f16_vertex
	st32 $m2, $m0, $mzero, 0
	st32 $m3, $m0, $mzero, 1
	st32 $m4, $m0, $mzero, 2
	setzi $m1, add_f16_worker
	runall $m1, $m0, 0
	SUPERVISOR_END add_f16

	WORKER_BEGIN add_f16
	// $m1 = words of this worker - 1, $m4 = its first word
	WORKER_SPLIT Q, R, count=$m1, first=$m4, rpt=1
	shl $m4, $m4, 3			// byte offset of the first word
	add $m5, $m4, 0			// out offset
	add $m7, $m4, 0			// b offset
	ld32 $m2, $mvertex_base, $mzero, 0
	ld32 $m3, $mvertex_base, $mzero, 1
	ld32 $m6, $mvertex_base, $mzero, 2
	ld64step $a0:1, $m3, $m4+=, 1
	ld64step $a2:3, $m6, $m7+=, 1
	.p2align 3
	{
		rpt $m1, 2
		fnop
	}
	{
		ld64step $a0:1, $m3, $m4+=, 1
		f16v4add $a4:5, $a0:1, $a2:3
	}
	{
		ld64step $a2:3, $m6, $m7+=, 1
		fnop
	}
	{
		st64step $a4:5, $m2, $m5+=, 1
		fnop
	}
	f16v4add $a4:5, $a0:1, $a2:3
	st64step $a4:5, $m2, $m5+=, 1
9:
	WORKER_END add_f16
