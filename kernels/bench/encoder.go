package bench

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/x448/float16"
)

// Bench setups of the encoder-layer kernels (kernels/encoder.go). Each
// check is bit-exact against a host model of the kernel's own steps (the
// same f32/f16 operations in the same order, each rounded as the device
// rounds it), and also compares the result with the float64 reference of
// the operation (reference package) within a tolerance derived from the
// steps' roundings; the reported error and tolerance are the latter.

// AddF16Model is add_f16 on one value: the exact sum rounded once to f16.
func AddF16Model(a, b float16.Float16) float16.Float16 { return ewF64toH(ewH2F(a) + ewH2F(b)) }

func init() {
	register("add_f16", func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		n := p["n"]
		var ar layArena
		ra, rb, out := ar.alloc(2*n), ar.alloc(2*n), ar.alloc(2*n)
		a, b := ewRandomF16(rng, n, 2), ewRandomF16(rng, n, 2)
		if _, err := layWriteGuarded(t, rng, ra, ewF16Bytes(a)); err != nil {
			return nil, err
		}
		if _, err := layWriteGuarded(t, rng, rb, ewF16Bytes(b)); err != nil {
			return nil, err
		}
		before, err := layWriteGuarded(t, rng, out, layRandomBytes(rng, 2*n))
		if err != nil {
			return nil, err
		}
		want := make([]float16.Float16, n)
		exact := make([]float64, n)
		tol := 0.0
		for i := range want {
			want[i] = AddF16Model(a[i], b[i])
			exact[i] = ewH2F(a[i]) + ewH2F(b[i])
			if h := ewHalfStep(math.Abs(exact[i])); !math.IsInf(h, 0) && !math.IsNaN(h) {
				tol = math.Max(tol, h)
			}
		}
		return &Case{
			Args: map[int]uint32{2: out.addr, 3: ra.addr, 4: rb.addr},
			// Bit-exact against the model; the float64 sum is exact, so the
			// only error is the one rounding to f16: at most half an f16
			// step at the sum's magnitude (the reported tolerance is the
			// largest such bound over the data).
			Tolerance: tol,
			Check: func(t *emu.Tile) (float64, error) {
				if _, err := ewCheckF16(t, out, before, want, 0); err != nil {
					return 0, err
				}
				return encCheckAgainst(want, exact, func(i int) float64 { return ewHalfStep(math.Abs(exact[i])) })
			},
		}, nil
	})
}

// encCheckAgainst compares f16 results with float64 references: element i
// must be within bound(i) of exact[i]. Elements whose reference or bound is
// not finite (an overflowing sum, a NaN input) are skipped. It returns the
// largest absolute difference.
func encCheckAgainst(got []float16.Float16, exact []float64, bound func(i int) float64) (float64, error) {
	maxErr := 0.0
	for i, g := range got {
		b := bound(i)
		if math.IsInf(exact[i], 0) || math.IsNaN(exact[i]) || math.IsInf(b, 0) || math.IsNaN(b) {
			continue
		}
		d := math.Abs(ewH2F(g) - exact[i])
		if d > maxErr {
			maxErr = d
		}
		if !(d <= b) {
			return maxErr, fmt.Errorf("element %d is %v, the float64 reference %v: error %g exceeds the bound %g", i, g.Float32(), exact[i], d, b)
		}
	}
	return maxErr, nil
}
