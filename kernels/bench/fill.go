package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
)

func init() {
	register("fill_zero", func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		n := p["bytes"]
		// Garbage in the destination and a guard word on each side, which
		// must survive.
		buf := make([]byte, n+16)
		for i := range buf {
			buf[i] = byte(rng.Uint32() | 1)
		}
		if err := t.Write(DataBase, buf); err != nil {
			return nil, err
		}
		dst := uint32(DataBase + 8)
		return &Case{
			Args: map[int]uint32{2: dst},
			Check: func(t *emu.Tile) (float64, error) {
				got := make([]byte, n+16)
				if err := t.Read(DataBase, got); err != nil {
					return 0, err
				}
				for i := range got {
					inside := i >= 8 && i < 8+n
					if inside && got[i] != 0 {
						return 1, fmt.Errorf("byte %d of the destination is 0x%02x, want 0", i-8, got[i])
					}
					if !inside && got[i] != buf[i] {
						return 1, fmt.Errorf("guard byte at offset %d changed", i-8)
					}
				}
				return 0, nil
			},
		}, nil
	})
}
