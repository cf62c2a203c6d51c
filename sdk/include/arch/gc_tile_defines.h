// Stand-in for the Poplar SDK's arch/gc_tile_defines.h, written for the
// ipustack corpus check from public facts only. It is NOT Graphcore's file.
// Sources:
//  - CSR numbers: ipustack isa/csr.go (LLVM Colossus CSR list; upper worker
//    space written 0x100 + n as in Saghetti0/graphcore-ipu-research docs/csr.md)
//  - sync zones: Saghetti0/graphcore-ipu-research "docs/sync zones.md"
//  - field positions: ISA hover docs (graphcore/ipu_assembly_support) where
//    stated; otherwise the ipustack emulator's own choice (docs/machine.md),
//    marked "ipustack" below.
#ifndef GC_TILE_DEFINES_STANDIN_H
#define GC_TILE_DEFINES_STANDIN_H

#define CTXT_WORKERS 6

// Memory (the project's shared reference IPU21.md: SRAM 0x4C000..0xE8000)
#define TMEM_REGION0_BASE_ADDR 0x4C000
#define TMEM_BASE_ADDR 0x4C000
#define TMEM_ELEMSIZE 0x4000
#define TMEM_BYTE_MAX_ADDRESS_WIDTH 21
#define TMEM_FULL_ADDRESS_MASK ((1 << TMEM_BYTE_MAX_ADDRESS_WIDTH) - 1)

// Sync zones (docs/sync zones.md)
#define TEXCH_SYNCZONE_RECV 0
#define TEXCH_SYNCZONE_ANS 1
#define TEXCH_SYNCZONE_LOCAL 2
#define TEXCH_SYNCZONE_INTERNAL 3
#define TEXCH_SYNCZONE_GS1 4
#define TEXCH_SYNCZONE_GS1H 5
#define TEXCH_SYNCZONE_GS2 6
#define TEXCH_SYNCZONE_GS2H 7
#define TEXCH_SYNCZONE_GS1_MSR 12
#define TEXCH_SYNCZONE_GS1H_MSR 13
#define TEXCH_SYNCZONE_GS2_MSR 14
#define TEXCH_SYNCZONE_GS2H_MSR 15

// Supervisor CSRs
#define CSR_S_PC__INDEX 0x00
#define CSR_S_SSR__INDEX 0x01
#define CSR_S_CR__INDEX 0x02
#define CSR_S_TILE_ID__INDEX 0x03
#define CSR_S_FP_ICTL__INDEX 0x20
#define CSR_S_FP_ICTL__INV__SHIFT 0      // ipustack
#define CSR_S_FP_ICTL__INV__MASK 0x1
#define CSR_S_FP_ICTL__DIV0__SHIFT 1     // ipustack
#define CSR_S_FP_ICTL__DIV0__MASK 0x1
#define CSR_S_FP_ICTL__OFLO__SHIFT 2     // ipustack
#define CSR_S_FP_ICTL__OFLO__MASK 0x1
#define CSR_S_FP_ICTL__RND__SHIFT 3      // ipustack
#define CSR_S_FP_ICTL__RND__MASK 0x3
#define CSR_S_FP_ICTL__ESR__SHIFT 5      // ipustack
#define CSR_S_FP_ICTL__ESR__MASK 0x3
#define CSR_S_FP_ICTL__NANOO__SHIFT 7    // ipustack
#define CSR_S_FP_ICTL__NANOO__MASK 0x1
#define CSR_S_WORKER0_BASE__INDEX 0x21
#define CSR_S_FP_INFMT__INDEX 0x31
#define CSR_S_FP_ISCL__INDEX 0x33
#define CSR_S_CCCSLOAD__INDEX 0x50
#define CSR_S_SCOUNT_L__INDEX 0x60
#define CSR_S_SCOUNT_U__INDEX 0x61

// Worker CSRs
#define CSR_W_PC__INDEX 0x00
#define CSR_W_WSR__INDEX 0x01
#define CSR_W_WSR__CTXTID_M1__SHIFT 0    // $WSR low bits hold the context id - 1
#define CSR_W_WSR__CTXTID_M1__MASK 0x7
#define CSR_W_VERTEX_BASE__INDEX 0x02
#define CSR_W_WORKER_BASE__INDEX 0x03
#define CSR_W_REPEAT_COUNT__INDEX 0x04
#define CSR_W_REPEAT_COUNT__VALUE__SHIFT 0
#define CSR_W_REPEAT_COUNT__VALUE__MASK 0xFFF   // rpt count is a 12-bit field (ipustack isa rows)
#define CSR_W_REPEAT_FIRST__INDEX 0x05
#define CSR_W_REPEAT_END__INDEX 0x06
#define CSR_W_COUNT_L__INDEX 0x60
#define CSR_W_COUNT_U__INDEX 0x61
#define CSR_W_FP_STS__INDEX 0x100
#define CSR_W_FP_CLR__INDEX 0x101
#define CSR_W_FP_CLR__ZAACC__SHIFT 3     // public IPU1 constants (ipu1_consts.c); bits 0-2 are INV, DIV0, OFLO
#define CSR_W_FP_CLR__ZAACC__MASK 0x1
#define CSR_W_FP_CTL__INDEX 0x102
#define CSR_W_FP_CTL__ESR__SHIFT 5       // ipustack
#define CSR_W_FP_CTL__ESR__MASK 0x3
#define CSR_W_FP_NFMT__INDEX 0x109
#define CSR_W_FP_SCL__INDEX 0x10A

// AMP modes: ipustack's amp rows carry only the phase (isa/rows.go), so the
// engine-count variants all name the phase number.
#define TAMP_F16V4_E4_P0 0
#define TAMP_F16V4_E4_P1 1
#define TAMP_F16V4_E4_P2 2
#define TAMP_F16V4_E4_P3 3
#define TAMP_F16V4_E2_P0 0
#define TAMP_F16V4_E2_P1 1
#define TAMP_F16V4_E1_P0 0
#define TAMP_F8V8_E4_P0 0
#define TAMP_F8V8_E4_P1 1
#define TAMP_F8V8_E4_P2 2
#define TAMP_F8V8_E4_P3 3
#define TAMP_F32_E4_P0 0
#define TAMP_F32_E4_P1 1
#define TAMP_F32_E4_P2 2
#define TAMP_F32_E4_P3 3
#define TAMP_F32_E4_P4 4
#define TAMP_F32_E4_P5 5
#define TAMP_F32_E4_P6 6
#define TAMP_F32_E4_P7 7
#define TAMP_F32_E2_P0 0
#define TAMP_F32_E2_P1 1
#define TAMP_F32_E2_P2 2
#define TAMP_F32_E2_P3 3
#define TAMP_F32_E1_P0 0
#define TAMP_F32_E1_P1 1
#define TAMP_F32_E1_P2 2
#define TAMP_F32_E1_P3 3

// SLIC, istacc and stacc modes (poplibs passes them as the last operand of
// f16v4*slic, f16v4istacc and f16v4stacc: `f16v4hihoslic ...,
// TSLIC_F16V4_1x4_W0`, `f16v4istacc ..., TISTACC_P0`, `f16v4stacc ...,
// TSTACC_P0`). No public source gives their values; these
// are ipustack's, and select only bits of ipustack's own encodings of those
// rows, which the emulator does not execute ("not emulated", docs/isa.md).
#define TSLIC_F16V4_1x4_W0 0 // ipustack
#define TSLIC_F16V4_1x4_W1 1 // ipustack
#define TISTACC_P0 0         // ipustack
#define TISTACC_P1 1         // ipustack
#define TSTACC_P0 0          // ipustack
#define TSTACC_P1 1          // ipustack

#endif
