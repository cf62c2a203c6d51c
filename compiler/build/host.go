package build

import (
	"encoding/binary"
	"fmt"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/x448/float16"
)

// Host-side layouts of the v0 plan (see compiler/low's package comment):
// the host packs inputs and weights into AMP panels before upload and
// unpacks the output panels after read-back, dropping padding.

func put(b []byte, idx int, v uint16) { binary.LittleEndian.PutUint16(b[2*idx:], v) }

// packInput packs x [M][K] (f16 bits) into the row blocks' left panels.
func packInput(pl *low.Plan, x []uint16) []byte {
	p, g := pl.Problem, &pl.Grid
	out := make([]byte, pl.Inputs[0].Bytes)
	base := 0
	for i := 0; i < g.R; i++ {
		r, row0 := g.Rows(i), g.RowStart[i]
		for kg := 0; kg < g.Kp/16; kg++ {
			for row := 0; row < r; row++ {
				for e := 0; e < 16; e++ {
					k := 16*kg + e
					if k < p.K {
						put(out, base+(kg*r+row)*16+e, x[(row0+row)*p.K+k])
					}
				}
			}
		}
		base += r * g.Kp
	}
	return out
}

// packRight packs, per column block j, the right panel of a [kRows][nCols]
// weight. colBlock selects the weight's columns of block j: for W1 (and a
// GEMM's w) the block's columns with K = Kp; for W2 the block's rows
// become the inner dimension and the columns are all of dim.
func packW1(pl *low.Plan, w []uint16) []byte {
	p, g := pl.Problem, &pl.Grid
	out := make([]byte, pl.Weights[0].Bytes)
	base := 0
	for j := 0; j < g.C; j++ {
		cols, c0 := g.Cols(j), 16*g.GroupStart[j]
		kgs := g.Kp / 16
		for cg := 0; cg < cols/16; cg++ {
			for kg := 0; kg < kgs; kg++ {
				for n := 0; n < 16; n++ {
					col := c0 + 16*cg + n
					if col >= p.N {
						continue
					}
					for e := 0; e < 16; e++ {
						k := 16*kg + e
						if k < p.K {
							put(out, base+(cg*kgs+kg)*256+n*16+e, w[k*p.N+col])
						}
					}
				}
			}
		}
		base += g.Kp * cols
	}
	return out
}

// packW2 packs W2 [N][K] (hidden x dim): block j's inner dimension is the
// hidden columns of block j, its output columns all of dim.
func packW2(pl *low.Plan, w []uint16) []byte {
	p, g := pl.Problem, &pl.Grid
	out := make([]byte, pl.Weights[1].Bytes)
	base := 0
	for j := 0; j < g.C; j++ {
		cols, h0 := g.Cols(j), 16*g.GroupStart[j]
		kgs := cols / 16
		for cg := 0; cg < g.Kp/16; cg++ {
			for kg := 0; kg < kgs; kg++ {
				for n := 0; n < 16; n++ {
					col := 16*cg + n
					if col >= p.K {
						continue
					}
					for e := 0; e < 16; e++ {
						h := h0 + 16*kg + e
						if h < p.N {
							put(out, base+(cg*kgs+kg)*256+n*16+e, w[h*p.K+col])
						}
					}
				}
			}
		}
		base += cols * g.Kp
	}
	return out
}

// unpackOutput turns the output binding's bytes into the row-major result.
func unpackOutput(pl *low.Plan, b []byte) ([]float32, error) {
	p, g := pl.Problem, &pl.Grid
	if len(b) != pl.Outputs[0].Bytes {
		return nil, fmt.Errorf("output %q: %d bytes, want %d", pl.Outputs[0].Name, len(b), pl.Outputs[0].Bytes)
	}
	get := func(idx int) float32 {
		return float16.Frombits(binary.LittleEndian.Uint16(b[2*idx:])).Float32()
	}
	cols := p.N
	if p.Kind == low.KindMLP {
		cols = p.K
	}
	y := make([]float32, p.M*cols)
	if p.Kind == low.KindGemm {
		for s, sl := range pl.Outputs[0].Slices {
			i, j := s/g.C, s%g.C
			r, row0, c0 := g.Rows(i), g.RowStart[i], 16*g.GroupStart[j]
			base := sl.Offset / 2
			for cg := 0; cg < g.Cols(j)/16; cg++ {
				for row := 0; row < r; row++ {
					for n := 0; n < 16; n++ {
						if col := c0 + 16*cg + n; col < p.N {
							y[(row0+row)*p.N+col] = get(base + (cg*r+row)*16 + n)
						}
					}
				}
			}
		}
		return y, nil
	}
	base := 0
	for i := 0; i < g.R; i++ {
		r, row0 := g.Rows(i), g.RowStart[i]
		for cg := 0; cg < g.Kp/16; cg++ {
			for row := 0; row < r; row++ {
				for n := 0; n < 16; n++ {
					if col := 16*cg + n; col < p.K {
						y[(row0+row)*p.K+col] = get(base + (cg*r+row)*16 + n)
					}
				}
			}
		}
		base += r * g.Kp
	}
	return y, nil
}
