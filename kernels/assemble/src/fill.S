// fill_zero: write BYTES zero bytes at $m2 with all six workers.
//
// ABI (supervisor entry fill_zero): $m2 = destination (8-byte aligned),
// $m10 = return address. Clobbers $m0. Parameters: BYTES (multiple of 8).
// Each worker zeroes one CHUNK of the destination; the last chunks may be
// shorter or empty.

#include "common.inc"

#ifndef BYTES
#error "BYTES must be defined"
#endif

	.set WORDS, BYTES / 8
	.set CHUNK_WORDS, (WORDS + 5) / 6
	.set CHUNK, CHUNK_WORDS * 8

	SUPERVISOR_BEGIN fill_zero
	setzi $m0, fill_zero_worker
	// Worker n starts with $mvertex_base = $m2 + n*CHUNK.
	runall $m0, $m2, CHUNK / 4
	SUPERVISOR_END fill_zero

	WORKER_BEGIN fill_zero
	get $m0, $WSR
	and $m0, $m0, 7
	// words = min(CHUNK_WORDS, WORDS - n*CHUNK_WORDS), skip when <= 0
	mul $m1, $m0, CHUNK_WORDS
	sub $m1, WORDS, $m1
	min $m1, $m1, CHUNK_WORDS
	brneg $m1, 1f
	setzi $m2, 0
	.p2align 3
	{
		rpt $m1, 0
		fnop
	}
	{
		st64step $azeros, $mvertex_base, $m2+=, 1
		fnop
	}
1:
	WORKER_END fill_zero
