package kernels

import "fmt"

func init() {
	register(&Kernel{
		Name:   FillZero,
		Source: "fill.S",
		Entry:  FillZero,
		Doc:    "zero BYTES bytes with six workers, 8 bytes per worker bundle",
		Params: []Param{{Name: "bytes", Default: 4096, Doc: "bytes to zero", Check: func(v int, _ Params) error {
			if v <= 0 || v%8 != 0 || v > 1<<18 {
				return fmt.Errorf("must be a positive multiple of 8 up to 256 KiB")
			}
			return nil
		}}},
		Args: []Arg{{Reg: "$m2", Name: "dst", Doc: "destination, 8-byte aligned"}},
		Operands: []Operand{{Name: "dst", Align: 8, Written: true,
			Bytes: func(p Params) int { return p["bytes"] }}},
	})
}
