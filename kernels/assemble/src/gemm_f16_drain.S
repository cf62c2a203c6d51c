// gemm_f16_drain: gemm_f16 (same layouts, ABI and f16 partials) in the form
// that is correct without the amp-state-retained assumption: every worker
// run clears $AACC, feeds its partials in and drains its results out
// through memory (see gemm_drain.inc). The compiler picks it when it builds
// for the conservative assumptions (--conservative).

#define GEMM_ENTRY gemm_f16_drain
#define GEMM_AMP f16v4hihov4amp
#define GEMM_COLS 16
#define GEMM_PUTCS 32
#define GEMM_SUP_SECTION .text.gemm_f16_drain
#define GEMM_WORKER_SECTION .text.gemm_f16_drain_worker
#define GEMM_WORKER gemm_f16_drain_worker
#include "gemm_drain.inc"
