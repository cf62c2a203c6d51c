package bench

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
)

func TestFillZero(t *testing.T) {
	for _, n := range []int{8, 48, 56, 4096, 10000} {
		rep, err := Run("fill_zero", kernels.Params{"bytes": n}, 1, kernels.Cache{})
		if err != nil {
			t.Fatalf("bytes=%d: %v", n, err)
		}
		t.Logf("%s", rep)
	}
}
