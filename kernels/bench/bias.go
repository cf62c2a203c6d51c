package bench

import (
	"math/rand/v2"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/x448/float16"
)

// AddBiasF16Model is add_bias_f16's arithmetic on one value: the exact sum
// of two f16 values rounded once to f16 (f16v4add).
func AddBiasF16Model(x, b float16.Float16) float16.Float16 {
	return ewF64toH(ewH2F(x) + ewH2F(b))
}

func init() {
	register(kernels.AddBiasF16, func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		rows, r, first := p["rows"], p["r"], p["first"]
		groups := (first + rows + r - 1) / r
		var a layArena
		out, bias := a.alloc(32*rows), a.alloc(32*groups)
		x := ewRandomF16(rng, 16*rows, 4)
		b := ewRandomF16(rng, 16*groups, 1)
		before, err := layWriteGuarded(t, rng, out, ewF16Bytes(x))
		if err != nil {
			return nil, err
		}
		if _, err := layWriteGuarded(t, rng, bias, ewF16Bytes(b)); err != nil {
			return nil, err
		}
		want := make([]float16.Float16, 16*rows)
		for row := 0; row < rows; row++ {
			g := (first + row) / r
			for n := 0; n < 16; n++ {
				want[16*row+n] = AddBiasF16Model(x[16*row+n], b[16*g+n])
			}
		}
		return &Case{
			Args: map[int]uint32{2: out.addr, 3: bias.addr},
			// Bit-exact against the host model (one f16 rounding per
			// value), every NaN matching any NaN.
			Check: func(t *emu.Tile) (float64, error) {
				return ewCheckF16(t, out, before, want, 0)
			},
		}, nil
	})
}
