// gemm_f16_f32acc: C[R][C] = A[R][K] * B[K][C] with f16 inputs and f32
// partials and results (f16v4sisoamp, 8 outputs x 4 inputs = 32 MAC per
// issue).
//
// Layouts (exactly what the compiler and the pack/unpack kernels use):
//   left  "AMP left panel":  byte (kg*R + row)*32 + 2*i        = A[row][16kg+i]
//   right "AMP right panel": byte ((cg*(K/16) + kg)*128 + n*16 + i)*2
//                                                            = B[16kg+i][8cg+n]
//         (8x16 blocks, output-major inner-minor, in (cg, kg) order; region 1,
//         16-byte aligned; streamed by ld128putcs 0, 2, ..., 30)
//   out   "AMP output panel", f32: byte (cg*R + row)*32 + 4*n = C[row][8cg+n]
// ABI: $m2 = out, $m3 = left, $m4 = right, $m10 = return. Parameters K
// (multiple of 16), C (multiple of 8), R (1..768). The schedule and the
// worker pipeline are described in gemm.inc.

#define GEMM_ENTRY gemm_f16_f32acc
#define GEMM_AMP f16v4sisoamp
#define GEMM_COLS 8
#define GEMM_PUTCS 16
#define GEMM_SUP_SECTION .text.gemm_f16_f32acc
#define GEMM_WORKER_SECTION .text.gemm_f16_f32acc_worker
#define GEMM_WORKER gemm_f16_f32acc_worker
#include "gemm.inc"
