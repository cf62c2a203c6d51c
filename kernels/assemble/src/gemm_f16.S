// gemm_f16: C[R][C] = A[R][K] * B[K][C] with f16 inputs and f16 partials
// between 16-deep inner groups (f16v4hihov4amp, 64 MAC per issue).
//
// Layouts (exactly what the compiler and the pack/unpack kernels use):
//   left  "AMP left panel":  byte (kg*R + row)*32 + 2*i        = A[row][16kg+i]
//   right "AMP right panel": byte ((cg*(K/16) + kg)*256 + n*16 + i)*2
//                                                            = B[16kg+i][16cg+n]
//         (16x16 blocks, output-major inner-minor, in (cg, kg) order; region 1,
//         16-byte aligned; streamed by ld128putcs 0, 2, ..., 62)
//   out   "AMP output panel": byte (cg*R + row)*32 + 2*n       = C[row][16cg+n]
// ABI: $m2 = out, $m3 = left, $m4 = right, $m10 = return. Parameters K
// (multiple of 16), C (multiple of 16), R (1..768). The schedule and the
// worker pipeline are described in gemm.inc.

#define GEMM_ENTRY gemm_f16
#define GEMM_AMP f16v4hihov4amp
#define GEMM_COLS 16
#define GEMM_PUTCS 32
#define GEMM_SUP_SECTION .text.gemm_f16
#define GEMM_WORKER_SECTION .text.gemm_f16_worker
#define GEMM_WORKER gemm_f16_worker
#include "gemm.inc"
