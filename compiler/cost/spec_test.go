package cost

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
)

// TestCyclesMatchesKernel checks that Cycles on a spec and Kernel on its
// name and params (defaults filled by the registry) agree.
func TestCyclesMatchesKernel(t *testing.T) {
	for _, s := range []kernels.Spec{
		kernels.Gemm{K: 128, C: 64, R: 50}, kernels.Gemm{K: 128, C: 64, R: 50, Conservative: true},
		kernels.Copy{N: 4096}, kernels.ReduceAdd{N: 256, Parts: 4},
		kernels.Gelu{N: 1024}, kernels.Gelu{N: 1024, Precise: true},
		kernels.AddBias{Rows: 40, R: 12, First: 3}, kernels.UnpackOut{R: 50, C: 72},
	} {
		want, err := Kernel(s.Name(), s.Params())
		if err != nil {
			t.Fatal(err)
		}
		if got := Cycles(s); got != want || got <= 0 {
			t.Errorf("Cycles(%#v) = %d, Kernel = %d", s, got, want)
		}
	}
	if a, b := Cycles(kernels.Gemm{K: 128, C: 64, R: 50}), Cycles(kernels.Gemm{K: 128, C: 64, R: 50, Conservative: true}); a >= b {
		t.Errorf("gemm_f16 %d cycles, gemm_f16_drain %d: the drain variant should be slower", a, b)
	}
}
