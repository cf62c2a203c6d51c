package kernels

import "fmt"

// GEMM kernels: C[r][c] = sum_k A[r][k] * B[k][c] on the AMP unit
// (src/gemm_f16.S, src/gemm_f16_f32acc.S, shared body src/gemm.inc).
//
// Panel layouts (the compiler and the pack/unpack kernels use exactly
// these; every panel row is 32 bytes):
//
//   - left (A), "AMP left panel": for each inner group kg (k/16), r rows of
//     16 f16: byte (kg*r + row)*32 + 2*i holds A[row][16kg+i].
//   - right (B), "AMP right panel": for each column group cg and within it
//     each kg, one block of G output columns x 16 inputs, output-major,
//     inner-minor: byte ((cg*(k/16) + kg)*16*G + n*16 + i)*2 holds
//     B[16kg+i][G*cg+n]; G = 16 for gemm_f16, 8 for gemm_f16_f32acc.
//   - out (C), "AMP output panel": for each cg, r rows of 32 bytes:
//     gemm_f16 byte (cg*r + row)*32 + 2*n holds C[row][16cg+n] (f16);
//     gemm_f16_f32acc byte (cg*r + row)*32 + 4*n holds C[row][8cg+n] (f32).

// GemmMaxRows is the largest r: a worker's row share n must satisfy
// 32n-8 <= 4096 bytes, the reach of a pace stride field.
const GemmMaxRows = 768

// GemmMaxDim bounds k and c. A larger k or c cannot fit in a tile (the
// right panel alone is k*c*2 bytes of its 416 KiB of interleaved memory),
// and the bound keeps the kernel's loop counts within its 20-bit immediates
// and the operand sizes far from overflow, so that a huge value is reported
// as a bad parameter rather than by the assembler.
const GemmMaxDim = 1 << 16

// The f16 GEMM kernels and the assumption each needs: GemmF16 keeps results
// in the AMP accumulators between worker runs (assumption
// amp-state-retained, docs/machine.md); GemmF16Drain does not.
const (
	GemmF16      = "gemm_f16"
	GemmF16Drain = "gemm_f16_drain"
)

// The f32-accumulating GEMM kernels (not called by the compiler), with the
// same assumption split.
const (
	GemmF16F32Acc      = "gemm_f16_f32acc"
	GemmF16F32AccDrain = "gemm_f16_f32acc_drain"
)

// GemmF16For names the f16 GEMM kernel to use: GemmF16Drain when the build
// must be correct under the conservative assumptions, else GemmF16. The
// compiler asks here (one place decides).
func GemmF16For(conservative bool) string {
	if conservative {
		return GemmF16Drain
	}
	return GemmF16
}

func gemmParams(cols int) []Param {
	return []Param{
		{Name: "k", Default: 240, Doc: "inner dimension (multiple of 16)", Check: multipleUpTo(16, GemmMaxDim)},
		{Name: "c", Default: 48, Doc: fmt.Sprintf("output columns (multiple of %d)", cols), Check: multipleUpTo(cols, GemmMaxDim)},
		{Name: "r", Default: 232, Doc: fmt.Sprintf("output rows (1..%d)", GemmMaxRows), Check: func(v int, _ Params) error {
			if v <= 0 || v > GemmMaxRows {
				return fmt.Errorf("must be in 1..%d", GemmMaxRows)
			}
			return nil
		}},
	}
}

func gemmKernel(name, source string, cols, outElem int, doc string) *Kernel {
	return &Kernel{
		Name:   name,
		Source: source,
		Entry:  name,
		Doc:    doc,
		Params: gemmParams(cols),
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "AMP output panel (written)"},
			{Reg: "$m3", Name: "left", Doc: "AMP left panel"},
			{Reg: "$m4", Name: "right", Doc: "AMP right panel, interleaved memory"},
		},
		Operands: []Operand{
			{Name: "out", Align: 32, Written: true, DistinctElementFrom: []string{"left"},
				Bytes: func(p Params) int { return p["r"] * p["c"] * outElem }},
			{Name: "left", Align: 32, DistinctElementFrom: []string{"out"},
				Bytes: func(p Params) int { return p["r"] * p["k"] * 2 }},
			{Name: "right", Align: 32, Region: Interleaved,
				Bytes: func(p Params) int { return p["k"] * p["c"] * 2 }},
		},
		MACs: func(p Params) int64 { return int64(p["r"]) * int64(p["k"]) * int64(p["c"]) },
	}
}

const gemmDocCommon = `Layouts: left (A) "AMP left panel": for each inner group kg (k/16), r rows of 16 f16, ` +
	`byte (kg*r + row)*32 + 2*i = A[row][16kg+i]. ` +
	`ABI: $m2 = out, $m3 = left, $m4 = right, $m10 = return; clobbers $m0, $m1, $m5..$m8, $CCCSLOAD, ` +
	`the weight state and all worker registers and accumulators. All operands 32-byte aligned; right in ` +
	`interleaved memory (region 1); out and left in different memory elements; no access tail (the kernel ` +
	`reads exactly its operands and writes only out). r <= 768. ` +
	`Schedule: the supervisor loops over (cg, kg) in right-panel order: sync 2, ld128putcs the block, runall; ` +
	`six workers split the rows (r/6, the first r%6 one more), one {pace ; AMP} bundle per issue, results ` +
	`carried between runs of a column group and drained at its last kg.`

func init() {
	register(gemmKernel(GemmF16, "gemm_f16.S", 16, 2,
		`C[r][c] = A[r][k] * B[k][c]: f16 inputs, f16 partials between 16-deep inner groups (f16v4hihov4amp, `+
			`64 MAC per issue), f16 results. `+gemmDocCommon+
			` Right (B) "AMP right panel": for each column group cg (c/16) and within it each kg, a 16x16 block `+
			`output-major inner-minor: byte ((cg*(k/16) + kg)*256 + n*16 + i)*2 = B[16kg+i][16cg+n]. `+
			`Out "AMP output panel": for each cg, r rows of 16 f16: byte (cg*r + row)*32 + 2*n = C[row][16cg+n].`))
	register(gemmKernel(GemmF16Drain, "gemm_f16_drain.S", 16, 2,
		`gemm_f16 (same layouts, ABI and f16 partials) correct without the amp-state-retained assumption: `+
			`every worker run clears its accumulators, feeds its partials in and drains every result out through `+
			`memory, as the reference's kernels do (4n+8 bundles per run for n rows instead of 4n+2). `+
			`The compiler picks it when building --conservative. See gemm_f16 for the layouts.`))
	register(gemmKernel(GemmF16F32Acc, "gemm_f16_f32acc.S", 8, 4,
		`C[r][c] = A[r][k] * B[k][c]: f16 inputs, f32 partials and results (f16v4sisoamp, 32 MAC per issue). `+
			gemmDocCommon+
			` Right (B) "AMP right panel": for each column group cg (c/8) and within it each kg, an 8x16 block `+
			`output-major inner-minor: byte ((cg*(k/16) + kg)*128 + n*16 + i)*2 = B[16kg+i][8cg+n]. `+
			`Out "AMP output panel": for each cg, r rows of 8 f32: byte (cg*r + row)*32 + 4*n = C[row][8cg+n].`))
	register(gemmKernel(GemmF16F32AccDrain, "gemm_f16_f32acc_drain.S", 8, 4,
		`gemm_f16_f32acc (same layouts, ABI and f32 partials) correct without the amp-state-retained assumption: `+
			`every worker run clears its accumulators, feeds its partials in and drains every result out through `+
			`memory. See gemm_f16_f32acc for the layouts.`))
}
