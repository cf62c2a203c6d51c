//go:build amd64 && !purego

#include "textflag.h"

// func hihoAVX(acc *ampAcc, w *[4][16]float32, x, pp uint64, p int) uint64
//
// Steps 1 (round to nearest even), 2, 3 and 4 of f16v4hihov4amp on AVX +
// F16C; see hihoGo in exec_amp.go for the reference it matches bit for bit.
// acc: cur at 0, done at 64. w: the phase's weights, w[j][n] at 64j+4n.
TEXT ·hihoAVX(SB), NOSPLIT, $0-48
	MOVQ acc+0(FP), DI
	MOVQ w+8(FP), SI
	MOVQ p+32(FP), CX
	MOVQ CX, AX
	SHLQ $4, AX                  // byte offset of outputs 4p..4p+3

	// 1. Drain done[4p..4p+3] to f16, round to nearest even (imm 0).
	VMOVUPS     64(DI)(AX*1), X0
	VCVTPS2PH   $0, X0, X0
	VMOVQ       X0, ret+40(FP)

	// 2. x0..x3 widened (exact) into both 128-bit halves of Y1.
	VMOVQ       x+16(FP), X1
	VCVTPH2PS   X1, X1
	VINSERTF128 $1, X1, Y1, Y1
	VMOVUPS     0(DI), Y2        // cur[0:8]
	VMOVUPS     32(DI), Y3       // cur[8:16]

	// For j = 0..3: cur += w[j] * x_j, the products exact in f32, each add
	// rounded: the scalar sequence, eight outputs at a time.
	VPERMILPS   $0x00, Y1, Y4
	VMULPS      0(SI), Y4, Y5
	VMULPS      32(SI), Y4, Y6
	VADDPS      Y5, Y2, Y2
	VADDPS      Y6, Y3, Y3

	VPERMILPS   $0x55, Y1, Y4
	VMULPS      64(SI), Y4, Y5
	VMULPS      96(SI), Y4, Y6
	VADDPS      Y5, Y2, Y2
	VADDPS      Y6, Y3, Y3

	VPERMILPS   $0xAA, Y1, Y4
	VMULPS      128(SI), Y4, Y5
	VMULPS      160(SI), Y4, Y6
	VADDPS      Y5, Y2, Y2
	VADDPS      Y6, Y3, Y3

	VPERMILPS   $0xFF, Y1, Y4
	VMULPS      192(SI), Y4, Y5
	VMULPS      224(SI), Y4, Y6
	VADDPS      Y5, Y2, Y2
	VADDPS      Y6, Y3, Y3

	VMOVUPS     Y2, 0(DI)
	VMOVUPS     Y3, 32(DI)

	// 3. Partials in: cur[4p..4p+3] += pp widened.
	VMOVQ       pp+24(FP), X4
	VCVTPH2PS   X4, X4
	VMOVUPS     0(DI)(AX*1), X5
	VADDPS      X4, X5, X5
	VMOVUPS     X5, 0(DI)(AX*1)

	// 4. Row complete after phase 3: done = cur, cur = 0.
	CMPQ        CX, $3
	JNE         ret
	VMOVUPS     0(DI), Y2
	VMOVUPS     32(DI), Y3
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	VXORPS      Y0, Y0, Y0
	VMOVUPS     Y0, 0(DI)
	VMOVUPS     Y0, 32(DI)

ret:
	VZEROUPPER
	RET
