package exchange

import (
	"github.com/ipustack/ipustack/ipu21"
)

// The exchange phases of a Megatron-style SigLIP so400m MLP plan on the
// whole chip (729 tokens, d = 1152, h = 4304, f16 activations, f32
// partial sums), as a planner that maps one token block to each of the 23
// physical rows of 64 tiles would produce them:
//
//   - phase 0, row-block multicast of X: tile j of row r holds 1/64 of
//     its row's token block (tokens x 18 columns of X, 288 words for 32
//     tokens) and multicasts it to the other 63 tiles of the row, which
//     assemble the block at the same address;
//   - phase 1, reduce-scatter of the second matmul's partial sums: every
//     tile has a tokens x 1152 f32 partial of its row's output and sends
//     the 18 columns tile k owns to tile k (63 point-to-point transfers of
//     576 words each per tile);
//   - phase 2, a row shift: every tile passes its reduced output block
//     (tokens x 18 f16, 288 words) to the same column of the next row
//     (long routes, small bound: the latency allowance dominates).
//
// 729 tokens over 23 rows: 22 rows of 32 tokens and one of 25.
const (
	mlpTokens  = 729
	mlpDim     = 1152
	mlpRows    = ipu21.PhysicalRows
	mlpCols    = ipu21.PhysicalColumns
	mlpColsPer = mlpDim / mlpCols // 18 columns of d per tile
)

func mlpRowTokens(r int) int {
	return min(32, mlpTokens-32*r)
}

func mlpPhases() []Phase {
	tile := func(r, c int) int { return r*mlpCols + c }
	var ph [3]Phase
	for i := range ph {
		ph[i].ID = i
	}
	for r := 0; r < mlpRows; r++ {
		tok := mlpRowTokens(r)
		xWords := tok * mlpColsPer / 2 // f16 slice of X
		pWords := tok * mlpColsPer     // f32 partial chunk
		for c := 0; c < mlpCols; c++ {
			s := tile(r, c)
			x := Transfer{Src: s, SrcAddr: 0x60000, Words: xWords}
			for k := 0; k < mlpCols; k++ {
				if k != c {
					x.Dsts = append(x.Dsts, Dest{tile(r, k), 0x80000 + uint32(4*xWords*c)})
				}
			}
			ph[0].Transfers = append(ph[0].Transfers, x)
			for k := 0; k < mlpCols; k++ {
				if k == c {
					continue
				}
				ph[1].Transfers = append(ph[1].Transfers, Transfer{Src: s, SrcAddr: 0x80000 + uint32(4*pWords*k), Words: pWords,
					Dsts: []Dest{{tile(r, k), 0xA8000 + uint32(4*pWords*c)}}})
			}
			ph[2].Transfers = append(ph[2].Transfers, Transfer{Src: s, SrcAddr: 0x60800, Words: xWords,
				Dsts: []Dest{{tile((r+1)%mlpRows, c), 0x94000}}})
		}
	}
	return ph[:]
}
