package main

import "fmt"

// figure is one hardware measurement: a kernel entry of a reference source,
// the -D values and supervisor registers of the measured call, the operand
// areas to fill, and the cycles measured on a C600.
type figure struct {
	set      string // which measurement the figure belongs to (printTable)
	name     string
	source   string // file name in the reference directory
	entry    string
	defines  map[string]string
	regs     map[int]uint32 // supervisor $m registers before the call
	fills    []fill
	measured uint64
}

type fill struct {
	addr  uint32
	bytes uint32
}

// Operand placement shared by every figure: the supervisor stack below the
// output; operands in region 1 (the kernels use ld128 and ld128putcs on them).
const (
	stackTop   = 0x5F000
	outputBase = 0x80000
	leftBase   = 0x90000
	rightBase  = 0xC0000
)

// gemmFigure is the interleaved-weight f16 AMP GEMM (gemm_f16_amp.S) at
// R rows, K inner, C columns. -D values as the reference planner passes them
// for one row specialisation (crates/ipu-codegen/src/kernel.rs at
// 2026-08-17: GEMM_SMALL_ROWS/LARGE_ROWS, GEMM_OUTPUT_COLUMNS,
// GEMM_INNER_BLOCK_DIMENSION, the four symbols, GEMM_SINGLE_ROWS=1 for a
// single specialisation, GEMM_INTERLEAVED_WEIGHTS=1); calling convention of
// its GEMM_SUPERVISOR: m2 output, m3 packed left, m4 packed right, m10
// return, m11 the supervisor stack.
func gemmFigure(r, k, c int, measured uint64) figure {
	sym := fmt.Sprintf("ipu_stack_gemm_f16_interleaved_init_k%d_c%d_r%d", k, c, r)
	return figure{
		set:    setGemm,
		name:   fmt.Sprintf("gemm R%d K%d C%d", r, k, c),
		source: "gemm_f16_amp.S",
		entry:  sym,
		defines: map[string]string{
			"GEMM_SMALL_ROWS":              fmt.Sprint(r),
			"GEMM_LARGE_ROWS":              fmt.Sprint(r),
			"GEMM_OUTPUT_COLUMNS":          fmt.Sprint(c),
			"GEMM_INNER_BLOCK_DIMENSION":   fmt.Sprint(k),
			"GEMM_INIT_SMALL_SYMBOL":       sym,
			"GEMM_INIT_LARGE_SYMBOL":       sym + "_large",
			"GEMM_ACCUMULATE_SMALL_SYMBOL": sym + "_acc",
			"GEMM_ACCUMULATE_LARGE_SYMBOL": sym + "_acc_large",
			"GEMM_SINGLE_ROWS":             "1",
			"GEMM_INTERLEAVED_WEIGHTS":     "1",
		},
		regs: map[int]uint32{2: outputBase, 3: leftBase, 4: rightBase, 11: stackTop},
		fills: []fill{
			{leftBase, uint32(r * k * 2)},
			{rightBase, uint32(k * c * 2)},
			{outputBase, uint32(r * c * 2)},
		},
		measured: measured,
	}
}

// The measurement sets, in the order printTable reports them.
const (
	setGemm   = "gemm (IPU21.md, 0729e122)"
	setBefore = "before-upgrade (KERNEL_LOOP_UPGRADE.md, 7a1192b)"
)

// reduceFigure is the f16 partial-sum reduction (reduce_add_f16.S, entry
// ipu_stack_reduce_sum_f16) of `partials` rows of n halves. The reference
// planner compiles it with no -D values (crates/ipu-codegen/src/kernel.rs at
// ce7c7e9: KernelCompilation "reduce_add_f16.S", flags empty) and calls it
// with m2 output, m3 the initial partial, m4 the remote partials packed one
// n-element row after another, m5 num_partials = partials-1 (kernel.rs:
// scalar_arguments(2, ["num_partials", "element_count"]) and "num_partials"
// => partials - 1), m6 element_count, m10 return, m11 the stack.
func reduceFigure(n, partials int, measured uint64) figure {
	return figure{
		set:    setBefore,
		name:   fmt.Sprintf("reduce N%d P%d", n, partials),
		source: "reduce_add_f16.S",
		entry:  "ipu_stack_reduce_sum_f16",
		regs: map[int]uint32{2: outputBase, 3: leftBase, 4: rightBase,
			5: uint32(partials - 1), 6: uint32(n), 11: stackTop},
		fills: []fill{
			{leftBase, uint32(n * 2)},
			{rightBase, uint32(n * 2 * (partials - 1))},
			{outputBase, uint32(n * 2)},
		},
		measured: measured,
	}
}

// geluFigure is the contiguous f16 tanh GELU (gelu_f16.S, entry
// ipu_stack_gelu_tanh_approx_f16) of n halves: no -D values (kernel.rs at
// ce7c7e9, KernelCompilation "gelu_f16.S"); m2 output, m3 input, m4
// element_count (kernel.rs: input register 3, scalar argument register 4),
// m10 return, m11 the stack.
func geluFigure(n int, measured uint64) figure {
	return figure{
		set:      setBefore,
		name:     fmt.Sprintf("gelu N%d", n),
		source:   "gelu_f16.S",
		entry:    "ipu_stack_gelu_tanh_approx_f16",
		regs:     map[int]uint32{2: outputBase, 3: leftBase, 4: uint32(n), 11: stackTop},
		fills:    []fill{{leftBase, uint32(n * 2)}, {outputBase, uint32(n * 2)}},
		measured: measured,
	}
}

// figures are the measured calls (../shared/reference/IPU21.md, "Hardware
// measurements of the reference stack's own kernels": the reference's
// crates/ipu-codegen/src/kernel/cost.rs tests at commit 0729e122, September
// 2026). Only the figures whose kernels this tool can run are listed; the
// others (packed GEMM, the post-upgrade reduce and GELU, layer norm,
// softmax, merge) need
// sources or instructions ipustack does not accept yet (docs/machine.md,
// "Calibration").
var figures = []figure{
	gemmFigure(184, 288, 48, 48654),
	gemmFigure(182, 288, 48, 48180),
	gemmFigure(184, 288, 32, 32538),
	gemmFigure(146, 576, 32, 53718),
	gemmFigure(120, 80, 272, 55344),
	gemmFigure(81, 80, 80, 12402),

	// The "Before" column of the reference's docs/KERNEL_LOOP_UPGRADE.md
	// (osmarks/ipu-stack commit 7a1192b91cfeed9d751f5757d8da4aacf8d367ca,
	// "Hardware measurements": standalone C600 kernel cycles including
	// worker dispatch and completion) measures the kernels before the
	// September 6 loop upgrade (f817817^). The sources run here are the
	// 2026-08-17 ones (ce7c7e9), the latest public before-versions.
	geluFigure(2208, 13134),
	reduceFigure(2208, 4, 7734),
	reduceFigure(576, 15, 6978),
}
