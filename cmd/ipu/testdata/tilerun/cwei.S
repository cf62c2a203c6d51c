// cwei: reloads $CWEI while a worker issues AMP instructions, which the
// emulator must report as a fault (docs/machine.md, "Named assumptions").
	.supervisor
	.section .text.bad, "ax"
	.globl bad
bad:
	setzi $m0, amp_loop
	setzi $m1, 0x90000
	put $CCCSLOAD, $m1
	// run adds TMEM_REGION0_BASE_ADDR (0x4C000) to the vertex base
	setzi $m3, 0x4C000
	sub $m3, $m1, $m3
	run $m0, $m3, 0
	ld128putcs 0
	sync 2
	br $m10

	.worker
	.section .text.amp_loop, "ax"
	.p2align 3
amp_loop:
	{ setzi $m0, 100 ; fnop }
1:
	{ add $m0, $m0, -1 ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 0 }
	{ brnz $m0, 1b ; fnop }
	{ exitz $mzero ; fnop }
