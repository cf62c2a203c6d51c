package bench

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

func TestFillZero(t *testing.T) {
	for _, n := range []int{8, 48, 56, 4096, 10000} {
		rep, err := Run("fill_zero", kernels.Params{"bytes": n}, 1, assemble.Cache{})
		if err != nil {
			t.Fatalf("bytes=%d: %v", n, err)
		}
		t.Logf("%s", rep)
	}
}
