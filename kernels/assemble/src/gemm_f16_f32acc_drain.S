// gemm_f16_f32acc_drain: gemm_f16_f32acc (same layouts, ABI and f32
// partials) in the form that is correct without the amp-state-retained
// assumption: every worker run clears $AACC, feeds its partials in and
// drains its results out through memory (see gemm_drain.inc).

#define GEMM_ENTRY gemm_f16_f32acc_drain
#define GEMM_AMP f16v4sisoamp
#define GEMM_COLS 8
#define GEMM_PUTCS 16
#define GEMM_SUP_SECTION .text.gemm_f16_f32acc_drain
#define GEMM_WORKER_SECTION .text.gemm_f16_f32acc_drain_worker
#define GEMM_WORKER gemm_f16_f32acc_drain_worker
#include "gemm_drain.inc"
