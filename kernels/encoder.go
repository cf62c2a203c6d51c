package kernels

import "fmt"

// Encoder-layer kernels (issue 14): the residual add, layer norm, the
// attention softmax and the online-softmax merge of flash-style attention.
// See the sources (src/add.S, src/layer_norm.S, src/softmax.S,
// src/merge.S) for the instruction schedules and the exact arithmetic.

// encABI is the calling convention of the encoder-layer kernels; each
// kernel's Args list its operand registers.
const encABI = " ABI: operands in $m2.. as listed, $m10 = return; clobbers $m0, $m1, the kernel's vertex words (.data) " +
	"and worker registers $m0..$m9, $a0..$a15; operands 8-byte aligned, any region, no access tail " +
	"(the kernel reads only its operands and writes only its outputs)."

// f16Words checks a positive multiple of 4 f16 values whose bytes fit
// maxOperandBytes.
func f16Words(v int, _ Params) error {
	if v <= 0 || v%4 != 0 || 2*v > maxOperandBytes {
		return fmt.Errorf("must be a positive multiple of 4 up to %d", maxOperandBytes/2)
	}
	return nil
}

// zeroOrOne checks a flag parameter.
func zeroOrOne(v int, _ Params) error {
	if v != 0 && v != 1 {
		return fmt.Errorf("must be 0 or 1")
	}
	return nil
}

func init() {
	register(&Kernel{
		Name:   "add_f16",
		Source: "add.S",
		Entry:  "add_f16",
		Doc: "out = a + b on n f16 values (the residual add): f16v4add, the exact sum rounded once to f16; " +
			"3 worker bundles per 4 values (main-slot bound: two loads and a store)." + encABI,
		Params: []Param{
			{Name: "n", Default: 1024, Doc: "number of f16 values (multiple of 4, up to 65536: three operands fit the bench's data area)", Check: multipleUpTo(4, 65536)},
		},
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "n f16 sums, 8-byte aligned; may equal a or b (in place), must not otherwise overlap them"},
			{Reg: "$m3", Name: "a", Doc: "n f16, 8-byte aligned"},
			{Reg: "$m4", Name: "b", Doc: "n f16, 8-byte aligned"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: func(p Params) int { return 2 * p["n"] }},
			{Name: "a", Align: 8, Bytes: func(p Params) int { return 2 * p["n"] }},
			{Name: "b", Align: 8, Bytes: func(p Params) int { return 2 * p["n"] }},
		},
	})
}
