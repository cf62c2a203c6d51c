package bench

import (
	"math/rand/v2"
	"testing"

	"github.com/ipustack/ipustack/device/emu"

	"github.com/ipustack/ipustack/kernels"
)

func TestAddF16(t *testing.T) {
	for _, n := range []int{4, 8, 20, 24, 28, 44, 100, 1004, 729 * 4, 1152 * 3} {
		rep, err := Run("add_f16", kernels.Params{"n": n}, uint64(n), kernels.Cache{})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		t.Logf("%s", rep)
	}
}

func TestAddF16CheckCatchesCorruption(t *testing.T) {
	layExpectCorruptionCaught(t, "add_f16", kernels.Params{"n": 1004}, 0, 1000, 2000)
}

// TestAddF16InPlace runs add_f16 with out == a and with out == b, which its
// operand contract allows.
func TestAddF16InPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{4, 28, 1004} {
		for _, outIs := range []int{3, 4} {
			a, b := ewRandomF16(rng, n, 2), ewRandomF16(rng, n, 2)
			bAddr := uint32(DataBase + 4*n + 64)
			args := map[int]uint32{2: DataBase, 3: DataBase, 4: bAddr}
			if outIs == 4 {
				args[2] = bAddr
			}
			tile := layRunRaw(t, "add_f16", kernels.Params{"n": n}, args, func(tile *emu.Tile) {
				tile.Write(DataBase, ewF16Bytes(a))
				tile.Write(bAddr, ewF16Bytes(b))
			})
			got := make([]byte, 2*n)
			tile.Read(args[2], got)
			for i, g := range ewBytesF16(got) {
				if w := AddF16Model(a[i], b[i]); !ewSameF16(g, w) {
					t.Fatalf("n=%d out=$m%d: element %d is %v, want %v", n, outIs, i, g, w)
				}
			}
		}
	}
}
