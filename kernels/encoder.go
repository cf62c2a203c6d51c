package kernels

import "fmt"

// Encoder-layer kernels (issue 14): the residual add, layer norm, the
// attention softmax and the online-softmax merge of flash-style attention.
// See the sources (src/add.S, src/layer_norm.S, src/softmax.S,
// src/merge.S) for the instruction schedules and the exact arithmetic.

// encABI is the calling convention of the encoder-layer kernels; each
// kernel's Args list its operand registers.
const encABI = " ABI: operands in $m2.. as listed, $m10 = return; clobbers $m0, $m1, the kernel's vertex words (.data) " +
	"and worker registers $m0..$m12, $a0..$a13; operands 8-byte aligned, any region, no access tail " +
	"(the kernel reads only its operands and writes only its outputs)."

// zeroOrOne checks a flag parameter.
func zeroOrOne(v int, _ Params) error {
	if v != 0 && v != 1 {
		return fmt.Errorf("must be 0 or 1")
	}
	return nil
}

func init() {
	register(&Kernel{
		Name:   AddF16,
		Source: "add.S",
		Entry:  AddF16,
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

// LayerNormEps is layer_norm_f16's epsilon (f32 0x358637BD).
const LayerNormEps = float32(1e-6)

func init() {
	rowsWidth := func(p Params) int { return 2 * p["rows"] * p["width"] }
	register(&Kernel{
		Name:   LayerNormF16,
		Source: "layer_norm.S",
		Entry:  LayerNormF16,
		Doc: "layer norm over each of `rows` rows of `width` f16 values: s = x (residual=0) or s = f16(x + r), also " +
			"written to sum (residual=1); mean and biased variance in f32 (two passes), rstd = f32oorx(var + 1e-6); " +
			"stats[row] = (mean, var) as f32; out = f16(f16(f16((s-mean)*rstd) * scale) + bias). Every row is split " +
			"over all six workers by columns, in three worker runs (sums, squared deviations, apply); per 4 values " +
			"3 (5 with residual) + 7 + 11 worker bundles. panels=1: AMP panels, runs A and B on the same split (3 " +
			"bundles more per row), run C on whole panels per worker (1 fewer per row)." + encABI,
		Params: []Param{
			{Name: "rows", Default: 1, Doc: "rows (1..256)", Check: func(v int, _ Params) error {
				if v < 1 || v > 256 {
					return fmt.Errorf("must be 1..256 (the partial sums live in the vertex record)")
				}
				return nil
			}},
			{Name: "width", Default: 1152, Doc: "values per row, the normalised dimension (multiple of 4)", Check: func(v int, p Params) error {
				if v <= 0 || v%4 != 0 || v > 16384 {
					return fmt.Errorf("must be a positive multiple of 4 up to 16384")
				}
				if p["rows"]*v > 32768 {
					return fmt.Errorf("rows*width = %d exceeds 32768 (four operands of rows*width f16 fit the bench's data area)", p["rows"]*v)
				}
				return nil
			}},
			{Name: "residual", Default: 0, Doc: "1: normalise s = x + r and write s to sum (the fused residual add)", Check: zeroOrOne},
			{Name: "panels", Default: 0, Doc: "1: x, out, r and sum in AMP left/out order (out as the q/k/v or fc1 gemm reads " +
				"its left operand, r as the out_proj or fc2 gemm writes its output): width/16 panels of rows*32 bytes, row " +
				"i's values 16g..16g+15 at g*rows*32 + i*32 (scale, bias unchanged); width a multiple of 16; same results " +
				"bit for bit as panels=0", Check: func(v int, p Params) error {
				if err := zeroOrOne(v, p); err != nil {
					return err
				}
				if v == 1 && p["width"]%16 != 0 {
					return fmt.Errorf("panels=1 needs width a multiple of 16 (width = %d)", p["width"])
				}
				return nil
			}},
		},
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "rows*width f16, rows contiguous (panels=1: AMP panels, as x, r and sum), 8-byte aligned; may equal x"},
			{Reg: "$m3", Name: "x", Doc: "rows*width f16, 8-byte aligned"},
			{Reg: "$m4", Name: "scale", Doc: "width f16, 8-byte aligned"},
			{Reg: "$m5", Name: "bias", Doc: "width f16, 8-byte aligned"},
			{Reg: "$m6", Name: "stats", Doc: "rows pairs (mean, variance) of f32, 8-byte aligned"},
			{Reg: "$m7", Name: "r", Doc: "residual=1: rows*width f16, 8-byte aligned"},
			{Reg: "$m8", Name: "sum", Doc: "residual=1: rows*width f16 (x + r), 8-byte aligned; may equal x or r"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: rowsWidth},
			{Name: "x", Align: 8, Bytes: rowsWidth},
			{Name: "scale", Align: 8, Bytes: func(p Params) int { return 2 * p["width"] }},
			{Name: "bias", Align: 8, Bytes: func(p Params) int { return 2 * p["width"] }},
			{Name: "stats", Align: 8, Written: true, Bytes: func(p Params) int { return 8 * p["rows"] }},
			{Name: "r", Align: 8, Bytes: func(p Params) int { return p["residual"] * rowsWidth(p) }},
			{Name: "sum", Align: 8, Written: true, Bytes: func(p Params) int { return p["residual"] * rowsWidth(p) }},
		},
	})
}

func init() {
	rowsKeys := func(p Params) int { return 2 * p["rows"] * p["keys"] }
	register(&Kernel{
		Name:   SoftmaxF16,
		Source: "softmax.S",
		Entry:  SoftmaxF16,
		Doc: "p = softmax(x / sqrt(dk)) over the first `valid` of `keys` f16 scores of each of `rows` rows; the other " +
			"scores are ignored (any bits) and their p written as +0. m = f16 max of the valid scores; e = exp(s x - s m) " +
			"in f32 (s = f32oorx(dk), f32v2axpy, f32exp); the f32 sum of e; e16 = f16(e) staged in out; " +
			"p = f16(e16 * f32oox(sum)). Every row is split over all six workers by columns, in three worker runs " +
			"(maxima, exponentials and sums, normalisation); per 4 scores 2 + 12 + 7 worker bundles (stats=1: 2 + 12, " +
			"and the row's (s*m, sum) written instead of normalising). panels=1: the same split and arithmetic on AMP " +
			"panels (3 bundles more per row and run, the padding zeroed after run C)." + encABI,
		Params: []Param{
			{Name: "rows", Default: 8, Doc: "rows (1..256)", Check: func(v int, _ Params) error {
				if v < 1 || v > 256 {
					return fmt.Errorf("must be 1..256 (the partial sums live in the vertex record)")
				}
				return nil
			}},
			{Name: "keys", Default: 64, Doc: "scores per row, the row stride (multiple of 4, up to 4096)", Check: func(v int, p Params) error {
				if v <= 0 || v%4 != 0 || v > 4096 {
					return fmt.Errorf("must be a positive multiple of 4 up to 4096")
				}
				if p["rows"]*v > 65536 {
					return fmt.Errorf("rows*keys = %d exceeds 65536 (two operands fit the bench's data area)", p["rows"]*v)
				}
				return nil
			}},
			{Name: "valid", Default: 0, Doc: "valid scores per row (1..keys; 0: all keys)", Check: func(v int, p Params) error {
				if v < 0 || v > p["keys"] {
					return fmt.Errorf("must be 0..keys = %d", p["keys"])
				}
				return nil
			}},
			{Name: "dk", Default: 72, Doc: "the scale is 1/sqrt(dk) (1..65535; 1: no scaling)", Check: func(v int, _ Params) error {
				if v < 1 || v > 65535 {
					return fmt.Errorf("must be 1..65535")
				}
				return nil
			}},
			{Name: "stats", Default: 0, Doc: "1: the block step of flash-style attention: out keeps the unnormalised e16, " +
				"stats[row] = (s*m, sum) as f32 (attention_merge_f16's bstats)", Check: zeroOrOne},
			{Name: "panels", Default: 0, Doc: "1: in and out in AMP left/out order (the scores as gemm_f16 writes them, the " +
				"probabilities as the P.V gemm reads its left operand): keys/16 panels of rows*32 bytes, row i's keys " +
				"16g..16g+15 at g*rows*32 + i*32; keys a multiple of 16; same results bit for bit as panels=0", Check: func(v int, p Params) error {
				if err := zeroOrOne(v, p); err != nil {
					return err
				}
				if v == 1 && p["keys"]%16 != 0 {
					return fmt.Errorf("panels=1 needs keys a multiple of 16 (keys = %d)", p["keys"])
				}
				return nil
			}},
		},
		Args: []Arg{
			{Reg: "$m2", Name: "out", Doc: "rows*keys f16 probabilities (stats=1: e16), rows contiguous (panels=1: AMP panels), 8-byte aligned; may equal in"},
			{Reg: "$m3", Name: "in", Doc: "rows*keys f16 scores, rows contiguous (panels=1: AMP panels), 8-byte aligned"},
			{Reg: "$m4", Name: "stats", Doc: "stats=1: rows pairs (s*m, sum) of f32, 8-byte aligned"},
		},
		Operands: []Operand{
			{Name: "out", Align: 8, Written: true, Bytes: rowsKeys},
			{Name: "in", Align: 8, Bytes: rowsKeys},
			{Name: "stats", Align: 8, Written: true, Bytes: func(p Params) int { return 8 * p["rows"] * p["stats"] }},
		},
	})
}

func init() {
	rv := func(p Params) int { return p["rows"] * p["values"] }
	register(&Kernel{
		Name:   AttentionMergeF16,
		Source: "merge.S",
		Entry:  AttentionMergeF16,
		Doc: "online-softmax merge of flash-style attention on `rows` rows of `values` values: state acc (f32) and " +
			"stats (m, l) (f32 pairs), a block's bacc (f16, or f32 with bacc32=1) and bstats (mb, lb). mode=0 (initial): " +
			"acc = bacc, (m, l) = (mb, lb); mode=1 (update): m' = max(m, mb), a = exp(m - m'), b = exp(mb - m'), " +
			"acc = b*bacc + a*acc, l = a*l + b*lb, m = m' (f32, each step rounded); mode=2 (final): the update, then " +
			"out = f16(acc * (1/l)) (acc and stats read only). Every row is split over all six workers by columns; " +
			"the new statistics follow in a second worker run (rows split). Per 4 values 4 (initial), 8 (update; 7 " +
			"with bacc32) or 11 (final) worker bundles." + encABI + " Also clobbers $TAS.",
		Params: []Param{
			{Name: "rows", Default: 8, Doc: "rows (query rows of one head)", Check: func(v int, _ Params) error {
				if v < 1 || v > 4096 {
					return fmt.Errorf("must be 1..4096")
				}
				return nil
			}},
			{Name: "values", Default: 72, Doc: "values per row, the head dimension (multiple of 4)", Check: func(v int, p Params) error {
				if v <= 0 || v%4 != 0 || v > 4096 {
					return fmt.Errorf("must be a positive multiple of 4 up to 4096")
				}
				if p["rows"]*v > 32768 {
					return fmt.Errorf("rows*values = %d exceeds 32768 (the operands fit the bench's data area)", p["rows"]*v)
				}
				return nil
			}},
			{Name: "mode", Default: 1, Doc: "0 initial, 1 update, 2 final", Check: func(v int, _ Params) error {
				if v < 0 || v > 2 {
					return fmt.Errorf("must be 0 (initial), 1 (update) or 2 (final)")
				}
				return nil
			}},
			{Name: "bacc32", Default: 0, Doc: "0: the block's acc is f16; 1: f32", Check: zeroOrOne},
		},
		Args: []Arg{
			{Reg: "$m2", Name: "acc", Doc: "rows*values f32, 8-byte aligned; written in modes 0 and 1"},
			{Reg: "$m3", Name: "stats", Doc: "rows pairs (m, l) of f32, 8-byte aligned; written in modes 0 and 1"},
			{Reg: "$m4", Name: "bacc", Doc: "rows*values f16 (bacc32=0) or f32, 8-byte aligned"},
			{Reg: "$m5", Name: "bstats", Doc: "rows pairs (mb, lb) of f32, 8-byte aligned"},
			{Reg: "$m6", Name: "out", Doc: "mode 2: rows*values f16, 8-byte aligned"},
		},
		Operands: []Operand{
			// acc and stats are state: read by the update and the final
			// step, written by the initial step and the update.
			{Name: "acc", Align: 8, Written: true, ReadFirst: true, Bytes: func(p Params) int { return 4 * rv(p) }},
			{Name: "stats", Align: 8, Written: true, ReadFirst: true, Bytes: func(p Params) int { return 8 * p["rows"] }},
			{Name: "bacc", Align: 8, Bytes: func(p Params) int { return (2 + 2*p["bacc32"]) * rv(p) }},
			{Name: "bstats", Align: 8, Bytes: func(p Params) int { return 8 * p["rows"] }},
			{Name: "out", Align: 8, Written: true, Bytes: func(p Params) int {
				if p["mode"] == 2 {
					return 2 * rv(p)
				}
				return 0
			}},
		},
	})
}
