// sum: a hand-written tile kernel for `ipu tile run` tests. Supervisor
// entry sum: $m2 = N f16 values (N even, default 64); one worker adds them
// in f32, in order, and stores the sum as f32 right after the input.
#ifndef N
#define N 64
#endif
	.supervisor
	.section .text.sum, "ax"
	.globl sum
	.type sum, @function
sum:
	setzi $m0, sum_worker
	// run adds TMEM_REGION0_BASE_ADDR (0x4C000) to the vertex base
	setzi $m3, 0x4C000
	sub $m3, $m2, $m3
	run $m0, $m3, 0
	sync 2
	br $m10
	.size sum, .-sum

	.worker
	.section .text.sum_worker, "ax"
	.p2align 3
sum_worker:
	setzi $m1, N / 2 - 1
	setzi $m2, 0
	setzi $a2, 0
1:
	ld32step $a0, $mvertex_base, $m2+=, 1
	f16v2tof32 $a4:5, $a0
	f32add $a2, $a2, $a4
	f32add $a2, $a2, $a5
	brnzdec $m1, 1b
	st32 $a2, $mvertex_base, $mzero, N / 2
	exitz $mzero
