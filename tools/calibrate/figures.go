package main

import (
	"fmt"
	"math"
)

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

// The measurement sets, in the order printTable reports them. Each names
// where its figures come from and, after "src", the reference commit whose
// sources the figures are meant to be run with (docs/machine.md,
// "Calibration": which commits could be retrieved).
const (
	setGemm      = "gemm (IPU21.md, 0729e122)"
	setBefore    = "before-upgrade (KERNEL_LOOP_UPGRADE.md, 7a1192b)"
	setSoftmax   = "softmax (IPU21.md, 0729e122; src 15ce9043)"
	setMerge     = "merge (IPU21.md, 0729e122; src 15ce9043)"
	setPipelines = "softmax 1 row (KERNEL_PIPELINES_2026_09_13.md, 2de6a24d; src 15ce9043)"
)

// attentionHead is the head dimension of the measured attention kernels
// (the reference's SigLIP: 72 values per head, IPU21.md "7 or 8 rows, 72
// values"); the softmax scale is 1/sqrt(head) as an f32 bit pattern
// (crates/ipu-codegen/src/kernel/attention.rs: ATTENTION_SCALE_BITS).
const attentionHead = 72

func softmaxScaleBits() string {
	return fmt.Sprintf("0x%08x", math.Float32bits(float32(1/math.Sqrt(attentionHead))))
}

// Extra operand areas of the attention kernels (region 1, like the rest).
const (
	statsBase     = 0xA0000 // softmax maxima and sums; merge softmax state
	workspaceBase = 0xA8000 // softmax segment workspace
)

// softmaxFigure is the row softmax (attention_softmax_f16.S, src 15ce9043)
// of rows query rows, keys valid of padded keys, whole rows or (split) three
// segments per row. -D values as the reference's attention stage recipe
// passes them (attention.rs: ATTENTION_HEAD_DIMENSION, ATTENTION_FULL_BLOCK
// = keys == padded, ATTENTION_KEY_BLOCK_COLUMNS = padded,
// ATTENTION_SCALE_BITS, ATTENTION_SOFTMAX_SYMBOL); calling convention of
// that source's supervisor ("ABI: m2 probabilities, m3 scores, m4
// statistics, m5 reduction workspace, ... then rows/keys/mode"): m2
// probabilities, m3 scores (both in AMP-left panels of 16 keys, rows*32
// bytes a panel), m4 the f32 maxima then sums (rows each), m5 the segment
// workspace (2*rows*3 f32), m6 rows, m7 valid keys, m8 split. split is the
// reference planner's choice (cost.rs f16_softmax_split_rows: true for 7
// and 8 rows of 729/768 keys, false below 128 keys).
func softmaxFigure(set string, rows, keys, padded int, split bool, measured uint64) figure {
	sym := fmt.Sprintf("attention_softmax_d%d_p%d_f16", attentionHead, padded)
	full := 0
	if keys == padded {
		full = 1
	}
	mode := uint32(0)
	if split {
		mode = 1
	}
	name := fmt.Sprintf("softmax R%d K%d/%d", rows, keys, padded)
	if split {
		name += " split"
	}
	return figure{
		set:    set,
		name:   name,
		source: "attention_softmax_f16.S",
		entry:  sym,
		defines: map[string]string{
			"ATTENTION_HEAD_DIMENSION":    fmt.Sprint(attentionHead),
			"ATTENTION_FULL_BLOCK":        fmt.Sprint(full),
			"ATTENTION_KEY_BLOCK_COLUMNS": fmt.Sprint(padded),
			"ATTENTION_SCALE_BITS":        softmaxScaleBits(),
			"ATTENTION_SOFTMAX_SYMBOL":    sym,
		},
		regs: map[int]uint32{2: outputBase, 3: leftBase, 4: statsBase, 5: workspaceBase,
			6: uint32(rows), 7: uint32(keys), 8: mode, 11: stackTop},
		fills: []fill{
			{leftBase, uint32(rows * padded * 2)},
			{outputBase, uint32(rows * padded * 2)},
			{statsBase, uint32(rows * 8)},
			{workspaceBase, uint32(rows * 24)},
		},
		measured: measured,
	}
}

// mergeStage is which block of the online softmax a merge call is.
type mergeStage int

const (
	mergeInitial mergeStage = iota
	mergeUpdate
	mergeFinal
)

func (s mergeStage) String() string { return [...]string{"initial", "update", "final"}[s] }

// mergeFigure is the attention merge (attention_merge_f16.S, src 15ce9043)
// of rows query rows of 72 values: -D ATTENTION_VALUE_DIMENSION = 72,
// ATTENTION_PADDED_VALUE_DIMENSION = 72, ATTENTION_KEY_BLOCK_COLUMNS = 64,
// ATTENTION_MERGE_SYMBOL (attention.rs, Merge(values, padded, keys)); the
// supervisor's convention ("m2 accumulator, m3 block values, m4 softmax
// state, m5 initial-block flag, m6 final-block flag, m7 query rows"): m2
// the f32 accumulator rows (a stride of ceil((72+2)/16)*16 f32, the last
// two the running maximum and sum), m3 the block's f16 values in AMP-left
// panels, m4 the block's maxima then sums, m5 initial, m6 final, m7 rows.
func mergeFigure(rows int, stage mergeStage, measured uint64) figure {
	const values, keys = attentionHead, 64
	sym := fmt.Sprintf("attention_merge_v%d_p%d_k%d_f16", values, values, keys)
	stride := (values + 2 + 15) / 16 * 16
	var initial, final uint32
	switch stage {
	case mergeInitial:
		initial = 1
	case mergeFinal:
		final = 1
	}
	return figure{
		set:    setMerge,
		name:   fmt.Sprintf("merge R%d V%d %s", rows, values, stage),
		source: "attention_merge_f16.S",
		entry:  sym,
		defines: map[string]string{
			"ATTENTION_VALUE_DIMENSION":        fmt.Sprint(values),
			"ATTENTION_PADDED_VALUE_DIMENSION": fmt.Sprint(values),
			"ATTENTION_KEY_BLOCK_COLUMNS":      fmt.Sprint(keys),
			"ATTENTION_MERGE_SYMBOL":           sym,
		},
		regs: map[int]uint32{2: outputBase, 3: leftBase, 4: statsBase,
			5: initial, 6: final, 7: uint32(rows), 11: stackTop},
		fills: []fill{
			{outputBase, uint32(rows * stride * 4)},
			{leftBase, uint32(rows * (values + 15) / 16 * 32)},
			{statsBase, uint32(rows * 8)},
		},
		measured: measured,
	}
}

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
// 2026, and the reference docs named by each set). Only the figures whose
// kernels' sources could be retrieved are listed; the others (packed GEMM,
// the post-upgrade reduce and GELU, layer norm) are left out
// (docs/machine.md, "Calibration").
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

	// IPU21.md: softmax "7 or 8 rows: 64 keys -> 2,928; 25 of 64 keys ->
	// 2,682; 729 keys padded to 768 -> 21,780" (cost.rs: the same figure for
	// 7 and 8 rows), merge "7 or 8 rows, 72 values: initial 2,430; update
	// 3,378; final 3,438".
	softmaxFigure(setSoftmax, 7, 64, 64, false, 2928),
	softmaxFigure(setSoftmax, 8, 64, 64, false, 2928),
	softmaxFigure(setSoftmax, 7, 25, 64, false, 2682),
	softmaxFigure(setSoftmax, 8, 25, 64, false, 2682),
	softmaxFigure(setSoftmax, 7, 729, 768, true, 21780),
	softmaxFigure(setSoftmax, 8, 729, 768, true, 21780),
	mergeFigure(7, mergeInitial, 2430),
	mergeFigure(8, mergeInitial, 2430),
	mergeFigure(7, mergeUpdate, 3378),
	mergeFigure(8, mergeUpdate, 3378),
	mergeFigure(7, mergeFinal, 3438),
	mergeFigure(8, mergeFinal, 3438),

	// The reference's docs/KERNEL_PIPELINES_2026_09_13.md (commit 2de6a24d,
	// "Direct hardware measurements": one row, "Times include the kernel
	// call and worker setup"), the "After" column: whole-row softmax of 768
	// keys 12,258, segmented softmax of 729 keys 5,232. "After" is the
	// panel loop of attention_softmax_panels.inc at 2de6a24d (accumulators
	// cleared once before the loop), which the 15ce9043 softmax includes.
	softmaxFigure(setPipelines, 1, 768, 768, false, 12258),
	softmaxFigure(setPipelines, 1, 729, 768, true, 5232),
}
