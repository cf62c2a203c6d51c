package kernels

import "fmt"

// Elementwise kernels: GELU and the reduction of partial sums. See the
// sources (src/gelu.S, src/reduce.S) for the instruction schedules.

func init() {
	register(&Kernel{
		Name:   GeluF16,
		Source: "gelu.S",
		Entry:  GeluF16,
		Doc: "y = GELU(x) on N f16 values, tanh form 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))); " +
			"precise=0: every step in f16 (f16v4 ops, f16v2tanh), 9 worker bundles per 4 values, " +
			"|error| <= 2.1e-3 (1 f16 step for x >= -1, but up to 4.4e-4 absolute = 100% relative in the tail x < -2); " +
			"precise=1: f32 steps x/(1+exp(-2s)) (f32exp, f32oox), one rounding to f16, 23 bundles per 4 values (f32v2axpy primed and flushed), " +
			"within 1 f16 step of the correctly rounded tanh-GELU." + layABI,
		Params: []Param{
			{Name: "n", Default: 1024, Doc: "number of f16 values (multiple of 4)", Check: func(v int, _ Params) error {
				if v <= 0 || v%4 != 0 || 2*v > maxOperandBytes {
					return fmt.Errorf("must be a positive multiple of 4 up to %d", maxOperandBytes/2)
				}
				return nil
			}},
			{Name: "precise", Default: 0, Doc: "0: f16 arithmetic (fast); 1: f32 arithmetic (accurate)", Check: func(v int, _ Params) error {
				if v != 0 && v != 1 {
					return fmt.Errorf("must be 0 or 1")
				}
				return nil
			}},
		},
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "n f16 results, 8-byte aligned"},
			{Reg: "$m3", Name: "in", Doc: "n f16 inputs, 8-byte aligned; may equal out (in place), must not otherwise overlap it"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: func(p Params) int { return 2 * p["n"] }},
			{Name: "in", Align: 8, Bytes: func(p Params) int { return 2 * p["n"] }},
		},
	})
}

func init() {
	register(&Kernel{
		Name:   ReduceAddF16,
		Source: "reduce.S",
		Entry:  ReduceAddF16,
		Doc: "out[i] = sum of PARTS contiguous f16 partial arrays (stride N): widened exactly to f32, " +
			"summed in f32 in part order (round to nearest even per addition), rounded once to f16; " +
			"3*PARTS+1 worker bundles per 4 outputs." + layABI,
		Params: []Param{
			{Name: "n", Default: 1024, Doc: "elements per partial array and of the output (multiple of 4)", Check: func(v int, _ Params) error {
				if v <= 0 || v%4 != 0 || 2*v > maxOperandBytes {
					return fmt.Errorf("must be a positive multiple of 4 up to %d", maxOperandBytes/2)
				}
				return nil
			}},
			{Name: "parts", Default: 2, Doc: "number of partial arrays (1..85)", Check: func(v int, p Params) error {
				if v < 1 || v > 85 {
					return fmt.Errorf("must be 1..85 (the rpt body holds 3*parts+1 <= 256 bundles)")
				}
				if int64(v)*int64(p["n"])*2 > 2*maxOperandBytes {
					return fmt.Errorf("parts*n*2 bytes exceed %d", 2*maxOperandBytes)
				}
				return nil
			}},
		},
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "n f16 sums, 8-byte aligned"},
			{Reg: "$m3", Name: "in", Doc: "parts arrays of n f16, contiguous (part p at in + 2*p*n), 8-byte aligned; out may equal in (overwriting part 0), must not otherwise overlap it"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: func(p Params) int { return 2 * p["n"] }},
			{Name: "in", Align: 8, Bytes: func(p Params) int { return 2 * p["n"] * p["parts"] }},
		},
	})
}
