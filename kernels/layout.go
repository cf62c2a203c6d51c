package kernels

import "fmt"

// Layout kernels: data movement between the row-major f16 layout and the
// AMP panels the GEMM kernels use, and plain copies. See docs in each
// source file (src/pack.S, src/unpack.S, src/copy.S).

func init() {
	register(&Kernel{
		Name:   CopyF16,
		Source: "copy.S",
		Entry:  CopyF16,
		Doc:    "copy n bytes (any data, e.g. f16) with six workers, 8 bytes per worker bundle (ldst64pace)." + layABI,
		Params: []Param{{Name: "n", Default: 4096, Doc: "bytes to copy (a multiple of 8)", Check: func(v int, _ Params) error {
			if v <= 0 || v%8 != 0 || v > maxOperandBytes {
				return fmt.Errorf("must be a positive multiple of 8 up to %d", maxOperandBytes)
			}
			return nil
		}}},
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "destination, 8-byte aligned"},
			{Reg: "$m3", Name: "in", Doc: "source, 8-byte aligned; may equal out, must not otherwise overlap it"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: func(p Params) int { return p["n"] }},
			{Name: "in", Align: 8, Bytes: func(p Params) int { return p["n"] }},
		},
	})
}

// layABI is the calling convention shared by the layout and elementwise
// kernels.
const layABI = " ABI: $m2 = out, $m3 = in, $m10 = return; clobbers $m0, $m1, the kernel's vertex words (.data) " +
	"and worker registers $m0..$m9, $a0..$a13 (gelu precise=1 also $TAS and the accumulator state f32v2axpy uses, left at 0); operands 8-byte aligned, any region, " +
	"no access tail (the kernel reads only its operands and writes only out)."

// layRowStride is the effective row stride (in elements) of a row-major
// operand: the "stride" parameter, or cols when it is 0.
func layRowStride(p Params, cols int) int {
	if s := p["stride"]; s != 0 {
		return s
	}
	return cols
}

// layStrideCheck validates a row stride parameter against the column count
// named cols: 0 (= cols), or a multiple of 4 at least roundup(cols, 4), at
// most max (the pace stride fields are 10-bit signed counts of 8 bytes).
func layStrideCheck(cols string, max int) func(int, Params) error {
	return func(v int, p Params) error {
		s := v
		if s == 0 {
			s = p[cols]
		}
		if s%4 != 0 || s < (p[cols]+3)/4*4 || s > max {
			return fmt.Errorf("effective row stride %d must be a multiple of 4, at least %s rounded up to 4, at most %d (0 means %s, which then must be a multiple of 4)", s, cols, max, cols)
		}
		return nil
	}
}

func layLimit(max int) func(int, Params) error {
	return func(v int, _ Params) error {
		if v <= 0 || v > max {
			return fmt.Errorf("must be 1..%d", max)
		}
		return nil
	}
}

func init() {
	register(&Kernel{
		Name:   PackLeftF16,
		Source: "pack.S",
		Entry:  PackLeftF16,
		Doc: "row-major f16 [r][k] (row stride `stride` elements) -> AMP left panel " +
			"[ceil(k/16)][r][16] (byte (kg*r+row)*32 + 2i = A[row][16kg+i], columns >= k zero); " +
			"six workers split the rows; 4 pace bundles (8 stored bytes each) per row and group." + layABI,
		Params: []Param{
			{Name: "r", Default: 232, Doc: "rows", Check: layLimit(4096)},
			{Name: "k", Default: 240, Doc: "columns (inner dimension); the panel pads it to a multiple of 16 with zeros", Check: layLimit(2044)},
			{Name: "stride", Default: 0, Doc: "input row stride in elements (0 = k); a multiple of 4, >= k, <= 2044 (a row step must fit the pace stride field, 511 x 8 bytes)", Check: layStrideCheck("k", 2044)},
		},
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "AMP left panel, ceil(k/16)*r*32 bytes, 8-byte aligned"},
			{Reg: "$m3", Name: "in", Doc: "row-major input, row i at in + 2*i*stride, 8-byte aligned; must not overlap out"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: func(p Params) int { return (p["k"] + 15) / 16 * p["r"] * 32 }},
			// Columns [k, roundup(k,4)) of each row are read (and masked to
			// zero), so the last row's read ends at roundup(k,4).
			{Name: "in", Align: 8, Bytes: func(p Params) int {
				return 2 * ((p["r"]-1)*layRowStride(p, p["k"]) + (p["k"]+3)/4*4)
			}},
		},
	})
}

// layUnpackOutBytes is the extent of a row-major [r][c] output with row
// stride s (elements) that the unpack kernels write: every row's columns
// [0, roundup(c, 4)).
func layUnpackOutBytes(p Params) int {
	c4 := (p["c"] + 3) / 4 * 4
	return 2 * ((p["r"]-1)*layRowStride(p, p["c"]) + c4)
}

// layUnpackGaps reports whether an unpack leaves bytes of its out extent
// untouched: a row stride wider than roundup(c, 4) columns.
func layUnpackGaps(p Params) bool {
	return layRowStride(p, p["c"]) != (p["c"]+3)/4*4
}

// unpackParams are the parameters both unpack kernels take.
func unpackParams() []Param {
	return []Param{
		{Name: "r", Default: 232, Doc: "rows", Check: layLimit(4096)},
		{Name: "c", Default: 48, Doc: "columns", Check: layLimit(2044)},
		{Name: "stride", Default: 0, Doc: "output row stride in elements (0 = c); a multiple of 4, >= roundup(c,4), <= 2044 (a row step must fit the pace stride field, 511 x 8 bytes)", Check: layStrideCheck("c", 2044)},
	}
}

func init() {
	register(&Kernel{
		Name:   UnpackOutF16,
		Source: "unpack.S",
		Entry:  UnpackOutF16,
		Doc: "AMP output panel f16 [ceil(c/16)][r][16] -> row-major f16 [r][c] (row stride `stride` elements); " +
			"six workers split the rows; one ldst64pace (8 bytes moved) per worker bundle." + layABI,
		Params: unpackParams(),
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "row-major output, row i at out + 2*i*stride, 8-byte aligned; columns [0, roundup(c,4)) of each row are written (columns >= c get the panel's padding columns), the rest of a strided row is untouched"},
			{Reg: "$m3", Name: "in", Doc: "AMP output panel f16, 8-byte aligned; must not overlap out"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: layUnpackOutBytes, Gaps: layUnpackGaps},
			{Name: "in", Align: 8, Bytes: func(p Params) int { return (p["c"] + 15) / 16 * p["r"] * 32 }},
		},
	})
	register(&Kernel{
		Name:   UnpackOutF32,
		Source: "unpack_f32.S",
		Entry:  UnpackOutF32,
		Doc: "AMP output panel f32 [ceil(c/8)][r][8] -> row-major f16 [r][c] (row stride `stride` elements), " +
			"rounded to nearest even (f32v2tof16); four worker bundles per row of 8 columns (aux-bound)." + layABI,
		Params: unpackParams(),
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "row-major f16 output, row i at out + 2*i*stride, 8-byte aligned; columns [0, roundup(c,4)) of each row are written (columns >= c get the panel's padding columns, rounded), the rest of a strided row is untouched"},
			{Reg: "$m3", Name: "in", Doc: "AMP output panel f32, 8-byte aligned; must not overlap out"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: layUnpackOutBytes, Gaps: layUnpackGaps},
			{Name: "in", Align: 8, Bytes: func(p Params) int { return (p["c"] + 7) / 8 * p["r"] * 32 }},
		},
	})
}
