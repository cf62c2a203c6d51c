package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/x448/float16"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// gemmVariant describes one of the AMP GEMM kernels' panel formats.
type gemmVariant struct {
	cols   int  // output columns per weight block (16 hiho, 8 siso)
	f32Out bool // f32 partials and results (f16v4sisoamp)
}

func init() {
	register(kernels.GemmF16, gemmSetup(gemmVariant{cols: 16}))
	register(kernels.GemmF16Drain, gemmSetup(gemmVariant{cols: 16}))
	register("gemm_f16_f32acc", gemmSetup(gemmVariant{cols: 8, f32Out: true}))
	register("gemm_f16_f32acc_drain", gemmSetup(gemmVariant{cols: 8, f32Out: true}))
}

// gemmPlacement is where a setup puts the three panels: left first in the
// data area, out at the next interleaved element boundary after it (the
// kernel's rule: out and left in different memory elements), right after
// out, 32-byte aligned (region 1, as ld128putcs needs).
type gemmPlacement struct {
	left, out, right                uint32
	leftBytes, outBytes, rightBytes int
}

func gemmPlace(v gemmVariant, k, c, r int) (gemmPlacement, error) {
	outElem := 2
	if v.f32Out {
		outElem = 4
	}
	pl := gemmPlacement{leftBytes: r * k * 2, outBytes: r * c * outElem, rightBytes: k * c * 2}
	alignUp := func(a, n uint32) uint32 { return (a + n - 1) &^ (n - 1) }
	pl.left = DataBase
	pl.out = alignUp(pl.left+uint32(pl.leftBytes), ipu21.InterleavedElementBytes)
	pl.right = alignUp(pl.out+uint32(pl.outBytes), 32)
	if end := pl.right + uint32(pl.rightBytes); end > ipu21.SRAMEnd {
		return pl, fmt.Errorf("panels need %d bytes of region 1 (left %d, out %d, right %d); only %d available",
			end-DataBase, pl.leftBytes, pl.outBytes, pl.rightBytes, ipu21.SRAMEnd-DataBase)
	}
	// The operand contract, checked rather than assumed.
	lo, hi := ipu21.Element(pl.left+uint32(pl.leftBytes)-1), ipu21.Element(pl.out)
	if lo >= hi {
		return pl, fmt.Errorf("BUG: left and out share memory element %d", hi)
	}
	return pl, nil
}

// gemmPackLeft lays A (r x k, row-major f16 bits) out as the AMP left panel.
func gemmPackLeft(a []uint16, k, r int) []byte {
	buf := make([]byte, r*k*2)
	for kg := 0; kg < k/16; kg++ {
		for row := 0; row < r; row++ {
			for i := 0; i < 16; i++ {
				binary.LittleEndian.PutUint16(buf[(kg*r+row)*32+2*i:], a[row*k+16*kg+i])
			}
		}
	}
	return buf
}

// gemmPackRight lays B (k x c, row-major f16 bits) out as the AMP right panel
// with column groups of g.
func gemmPackRight(b []uint16, k, c, g int) []byte {
	buf := make([]byte, k*c*2)
	kgs := k / 16
	for cg := 0; cg < c/g; cg++ {
		for kg := 0; kg < kgs; kg++ {
			for n := 0; n < g; n++ {
				for i := 0; i < 16; i++ {
					off := ((cg*kgs+kg)*16*g + n*16 + i) * 2
					binary.LittleEndian.PutUint16(buf[off:], b[(16*kg+i)*c+g*cg+n])
				}
			}
		}
	}
	return buf
}

// gemmUnpackOut reads the AMP output panel back into row-major r x c.
func gemmUnpackOut(buf []byte, v gemmVariant, c, r int) []float64 {
	got := make([]float64, r*c)
	g := v.cols
	for cg := 0; cg < c/g; cg++ {
		for row := 0; row < r; row++ {
			for n := 0; n < g; n++ {
				var x float64
				if v.f32Out {
					x = float64(math.Float32frombits(binary.LittleEndian.Uint32(buf[(cg*r+row)*32+4*n:])))
				} else {
					x = float64(float16.Frombits(binary.LittleEndian.Uint16(buf[(cg*r+row)*32+2*n:])).Float32())
				}
				got[row*c+g*cg+n] = x
			}
		}
	}
	return got
}

// gemmRandomF16 returns n values uniform in [-1, 1) rounded to f16, as bits and
// as the exactly widened float64.
func gemmRandomF16(rng *rand.Rand, n int) ([]uint16, []float64) {
	bits := make([]uint16, n)
	vals := make([]float64, n)
	for i := range bits {
		h := float16.Fromfloat32(rng.Float32()*2 - 1)
		bits[i], vals[i] = uint16(h), float64(h.Float32())
	}
	return bits, vals
}

// gemmReference computes, with gonum BLAS in float64 from the f16-rounded
// inputs, the exact product C = A*B (to f64 precision) and a rigorous
// per-element bound on the kernel's error.
//
// Tolerance argument. The kernel processes k in G = k/16 groups. Let T_g be
// the exact sum over the first g groups and S_g the kernel's partial after
// group g (S_0 = T_0 = 0), e_g a bound on |S_g - T_g|. Within a group the
// AMP adds 16 exact f16 x f16 products and the incoming partial S_{g-1} into
// an f32 accumulator starting at 0, one addition at a time
// (docs/amp-and-pace.md); each of the at most 17 additions errs by at most
// 2^-24 times the magnitude of its result, which is at most the sum of the
// magnitudes of all terms, so the f32 error is
//
//	d_g <= 17 * 2^-24 * (A_g + |T_{g-1}| + e_{g-1}),  A_g = sum over the group of |a*b|.
//
// gemm_f16 then rounds to f16 (round to nearest even: relative error
// 2^-11 for normal results, absolute 2^-25 for subnormal ones):
//
//	e_g <= e_{g-1} + d_g + 2^-11 * (|T_g| + e_{g-1} + d_g) + 2^-25.
//
// gemm_f16_f32acc keeps the f32 partial (no rounding besides d_g; f32
// subnormal additions add at most 2^-150 each). The recursion is evaluated
// per element with the reference's own T_g and A_g, so the bound is
// rigorous for a correct kernel whatever the data, and it is tight: it
// scales with the sizes of the partial sums, not with sum |a*b| over all of
// k (for gemm_f16 it is at most about (G+1) * 2^-11 * sum |a*b|, the simple
// bound; for the f32 kernel about 17 * 2^-13 ~ 2^-9 times that). A small slack of
// 2^-40 * sum |a*b| covers the float64 reference's own rounding.
func gemmReference(a, b []float64, k, c, r int, f32Out bool) (ref, tol []float64) {
	ref = make([]float64, r*c) // T_g, accumulated group by group
	tol = make([]float64, r*c) // e_g
	absA, absB := make([]float64, len(a)), make([]float64, len(b))
	for i, x := range a {
		absA[i] = math.Abs(x)
	}
	for i, x := range b {
		absB[i] = math.Abs(x)
	}
	grp := make([]float64, r*c)   // A_g
	total := make([]float64, r*c) // sum |a*b| over all of k
	prev := make([]float64, r*c)  // |T_{g-1}|
	gen := func(d []float64, rows, cols, stride int) blas64.General {
		return blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: d}
	}
	const (
		u32 = 1.0 / (1 << 24)
		u16 = 1.0 / (1 << 11)
		sub = 1.0 / (1 << 25)
	)
	for g := 0; g < k/16; g++ {
		for i := range ref {
			prev[i] = math.Abs(ref[i])
		}
		ag, bg := gen(a[16*g:], r, 16, k), gen(b[16*g*c:], 16, c, c)
		aag, abg := gen(absA[16*g:], r, 16, k), gen(absB[16*g*c:], 16, c, c)
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, ag, bg, 1, gen(ref, r, c, c))
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, aag, abg, 0, gen(grp, r, c, c))
		for i := range tol {
			e := tol[i]
			d := 17 * u32 * (grp[i] + prev[i] + e)
			if f32Out {
				e += d + 17*0x1p-150
			} else {
				e += d + u16*(math.Abs(ref[i])+e+d) + sub
			}
			tol[i] = e
			total[i] += grp[i]
		}
	}
	for i := range tol {
		tol[i] += 0x1p-40 * total[i]
	}
	return ref, tol
}

// gemmCheck compares the kernel's output with the reference element by
// element; NaN or anything outside the bound fails.
func gemmCheck(got, ref, tol []float64, c int) (maxAbs float64, err error) {
	for i := range got {
		d := math.Abs(got[i] - ref[i])
		if d > maxAbs || math.IsNaN(d) {
			maxAbs = d
		}
		if !(d <= tol[i]) && err == nil {
			err = fmt.Errorf("element C[%d][%d] = %g, want %g (|error| %g > bound %g)", i/c, i%c, got[i], ref[i], d, tol[i])
		}
	}
	return maxAbs, err
}

func gemmSetup(v gemmVariant) Setup {
	return func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		k, c, r := p["k"], p["c"], p["r"]
		pl, err := gemmPlace(v, k, c, r)
		if err != nil {
			return nil, err
		}
		// Garbage everywhere in the data area (also in out: the kernel must
		// not read it before writing), so that stray reads show up as
		// wrong results and stray writes as changed bytes.
		before := make([]byte, ipu21.SRAMEnd-DataBase)
		for i := range before {
			before[i] = byte(rng.Uint32())
		}
		ab, a := gemmRandomF16(rng, r*k)
		bb, b := gemmRandomF16(rng, k*c)
		copy(before[pl.left-DataBase:], gemmPackLeft(ab, k, r))
		copy(before[pl.right-DataBase:], gemmPackRight(bb, k, c, v.cols))
		if err := t.Write(DataBase, before); err != nil {
			return nil, err
		}
		ref, tol := gemmReference(a, b, k, c, r, v.f32Out)
		maxTol := 0.0
		for _, x := range tol {
			maxTol = max(maxTol, x)
		}
		return &Case{
			Args:      map[int]uint32{2: pl.out, 3: pl.left, 4: pl.right},
			Tolerance: maxTol,
			Check: func(t *emu.Tile) (float64, error) {
				after := make([]byte, len(before))
				if err := t.Read(DataBase, after); err != nil {
					return 0, err
				}
				o0, o1 := int(pl.out-DataBase), int(pl.out-DataBase)+pl.outBytes
				for i := range after {
					if (i < o0 || i >= o1) && after[i] != before[i] {
						return 0, fmt.Errorf("byte at 0x%x outside the output changed (left 0x%x, out 0x%x, right 0x%x)",
							DataBase+i, pl.left, pl.out, pl.right)
					}
				}
				got := gemmUnpackOut(after[o0:o1], v, c, r)
				return gemmCheck(got, ref, tol, c)
			},
		}, nil
	}
}
