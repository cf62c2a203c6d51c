package kernels

import "fmt"

// add_bias_f16 (src/add_bias.S): the bias of a GEMM output, broadcast over
// the rows of its AMP output panel, or of a contiguous piece of one.

func init() {
	register(&Kernel{
		Name:   AddBiasF16,
		Source: "add_bias.S",
		Entry:  AddBiasF16,
		Doc: "out += bias on `rows` consecutive 16-value rows of an AMP output panel [groups][r][16] f16 starting at " +
			"row `first` of a column group: panel row p gets bias[16*((first+p)/r) + n] added to value n " +
			"(f16v4add, one rounding); first=0, rows=r*groups is a whole panel. 10 worker bundles per row, " +
			"plus 4 loads per column group entered." + layABI +
			" Here out is read and written in place and in is the bias of out's first column group.",
		Params: []Param{
			{Name: "rows", Default: 64, Doc: "16-value panel rows to update", Check: func(v int, _ Params) error {
				if v <= 0 || 32*v > maxOperandBytes {
					return fmt.Errorf("must be 1..%d", maxOperandBytes/32)
				}
				return nil
			}},
			{Name: "r", Default: 16, Doc: "rows per column group of the panel (1..4096)", Check: layLimit(4096)},
			{Name: "first", Default: 0, Doc: "row of the first column group where out starts (0..r-1)", Check: func(v int, p Params) error {
				if v < 0 || v >= p["r"] {
					return fmt.Errorf("must be 0..r-1 = %d", p["r"]-1)
				}
				return nil
			}},
		},
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "rows*32 bytes of panel rows, updated in place, 8-byte aligned"},
			{Reg: "$m3", Name: "in", Doc: "the bias of out's first column group: 16 f16 per group out touches, 8-byte aligned; must not overlap out"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, ReadFirst: true, Bytes: func(p Params) int { return 32 * p["rows"] }},
			{Name: "in", Align: 8, Bytes: func(p Params) int { return 32 * ((p["first"] + p["rows"] + p["r"] - 1) / p["r"]) }},
		},
	})
}
