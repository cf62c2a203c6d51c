package driver

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

// packW1 packs a [K][N] weight (a GEMM's w, or an MLP block's W1) into
// the column blocks' AMP right panels, concatenated in j order (K padded
// to Kp).
func packW1(pl *low.Plan, w []uint16) []byte {
	p, g := pl.Problem, &pl.Grid
	out := make([]byte, g.Kp*16*g.GroupStart[g.C]*2)
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
	out := make([]byte, g.Kp*16*g.GroupStart[g.C]*2)
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

// packB1 packs an MLP block's b1 [N]: the column blocks' slices in j order,
// each padded to its 16-column groups.
func packB1(pl *low.Plan, b []uint16) []byte {
	p, g := pl.Problem, &pl.Grid
	out := make([]byte, 2*16*g.GroupStart[g.C])
	for col := 0; col < p.N; col++ {
		put(out, col, b[col])
	}
	return out
}

// packB2 packs an MLP block's b2 [K]: every column block gets all of it
// (padded to Kp), C copies.
func packB2(pl *low.Plan, b []uint16) []byte {
	p, g := pl.Problem, &pl.Grid
	out := make([]byte, 2*g.Kp*g.C)
	for j := 0; j < g.C; j++ {
		for col := 0; col < p.K; col++ {
			put(out, j*g.Kp+col, b[col])
		}
	}
	return out
}

// mlpActivations visits the MLP's activation layout (compiler/low mlp.go):
// for every grid tile in logical order and each of its chunk pieces, each
// value's index in the packed binding and its row and column in the
// [M][K] matrix (row >= M or col >= K for padding).
func mlpActivations(pl *low.Plan, visit func(idx, row, col int)) {
	g := &pl.Grid
	idx := 0
	for i := 0; i < g.R; i++ {
		rc := g.ChunkRows(i)
		for j := 0; j < g.C; j++ {
			start, n := g.Piece(rc, j)
			for q := 0; q < g.Q; q++ {
				row0 := g.RowStart[i] + q*rc
				for f := start; f < start+n; f++ {
					row := (f / 16) % rc
					col := 16*(f/(16*rc)) + f%16
					r := row0 + row
					if q*rc+row >= g.Rows(i) {
						r = pl.Problem.M // padding row
					}
					visit(idx, r, col)
					idx++
				}
			}
		}
	}
}

// packActivations packs the MLP input x [M][K] into the activation layout.
func packActivations(pl *low.Plan, x []uint16) []byte {
	p := pl.Problem
	out := make([]byte, pl.Inputs[0].Bytes)
	mlpActivations(pl, func(idx, row, col int) {
		if row < p.M && col < p.K {
			put(out, idx, x[row*p.K+col])
		}
	})
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
	if p.Kind == low.KindMLP {
		y := make([]float32, p.M*p.K)
		mlpActivations(pl, func(idx, row, col int) {
			if row < p.M && col < p.K {
				y[row*p.K+col] = get(idx)
			}
		})
		return y, nil
	}
	y := make([]float32, p.M*p.N)
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
