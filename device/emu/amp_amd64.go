//go:build amd64 && !purego

package emu

import "golang.org/x/sys/cpu"

// hihoAsm says whether hihoAVX may run: it needs AVX (256-bit float
// vectors, with the OS saving them) and F16C (the f16 <-> f32 conversions).
// A variable, so that TestAMPHihoGo can force the pure-Go path.
var hihoAsm = cpu.X86.HasAVX && cpu.X86.HasF16C

// hihoAVX is hihoGo in AVX + F16C assembly (amp_amd64.s). It is
// bit-identical to hihoGo except for NaN payloads, which no f32 operation
// order defines (the Go compiler itself picks operand order freely):
//   - products of two f16 values are exact in f32, and VMULPS/VADDPS round
//     each result to f32 under the default MXCSR (nearest even, no
//     flush-to-zero), so vector lane n computes exactly the scalar sequence
//     cur[n] + w0*x0 + w1*x1 + w2*x2 + w3*x3 added in j order;
//   - VCVTPH2PS widens f16 exactly, as the h2f table;
//   - VCVTPS2PH with immediate 0 rounds to nearest even with the same
//     overflow (to infinity), subnormal and NaN (quiet, top mantissa bits
//     kept) results as f2h.
//
// TestHihoAsm compares it with hihoGo on random and special values.
//
//go:noescape
func hihoAVX(acc *ampAcc, w *[4][16]float32, x, pp uint64, p int) uint64
