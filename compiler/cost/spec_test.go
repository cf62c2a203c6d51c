package cost

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
)

// TestCycles checks that Cycles maps each spec to its kernel's model with
// the spec's parameters, and that Kernel (name and params, defaults filled
// by the registry) agrees.
func TestCycles(t *testing.T) {
	cases := []struct {
		s    kernels.Spec
		want int64
	}{
		{kernels.Gemm{K: 128, C: 64, R: 50}, GemmF16(128, 64, 50)},
		{kernels.Gemm{K: 128, C: 64, R: 50, Conservative: true}, GemmF16Drain(128, 64, 50)},
		{kernels.Gemm{K: 128, C: 64, R: 50, F32Acc: true}, GemmF16F32Acc(128, 64, 50)},
		{kernels.Gemm{K: 128, C: 64, R: 50, F32Acc: true, Conservative: true}, GemmF16F32AccDrain(128, 64, 50)},
		{kernels.Copy{N: 4096}, CopyF16(4096)},
		{kernels.ReduceAdd{N: 256, Parts: 4}, ReduceAddF16(256, 4)},
		{kernels.Gelu{N: 1024}, GeluF16(1024, 0)},
		{kernels.Gelu{N: 1024, Precise: true}, GeluF16(1024, 1)},
		{kernels.AddBias{Rows: 40, R: 12, First: 3}, AddBiasF16(40, 12, 3)},
		{kernels.UnpackOut{R: 50, C: 72}, UnpackOutF16(50, 72)},
		{kernels.UnpackOut{R: 50, C: 72, Stride: 80}, UnpackOutF16(50, 72)},
		{kernels.UnpackOut{R: 50, C: 72, F32: true}, UnpackOutF32(50, 72)},
		{kernels.PackLeft{R: 50, K: 72, Stride: 80}, PackLeftF16(50, 72)},
		{kernels.Fill{Bytes: 4096}, FillZero(4096)},
		{kernels.Add{N: 1024}, AddF16(1024)},
		{kernels.LayerNorm{Rows: 4, Width: 1152, Residual: true}, LayerNormF16(4, 1152, 1, 0)},
		{kernels.LayerNorm{Rows: 4, Width: 1152, Residual: true, Panels: true}, LayerNormF16(4, 1152, 1, 1)},
		{kernels.Softmax{Rows: 8, Keys: 64, Valid: 50, DK: 72, Stats: true}, SoftmaxF16(8, 64, 50, 1, 0)},
		{kernels.Softmax{Rows: 8, Keys: 64, Valid: 50, DK: 72, Panels: true}, SoftmaxF16(8, 64, 50, 0, 1)},
		{kernels.AttentionMerge{Rows: 8, Values: 72, Mode: kernels.MergeFinal, Bacc32: true}, AttentionMergeF16(8, 72, 2, 1)},
	}
	for _, c := range cases {
		if got := Cycles(c.s); got != c.want || got <= 0 {
			t.Errorf("Cycles(%#v) = %d, want %d", c.s, got, c.want)
		}
		if got, err := Kernel(c.s.Name(), c.s.Params()); err != nil || got != c.want {
			t.Errorf("Kernel(%s, %s) = %d, %v; want %d", c.s.Name(), c.s.Params(), got, err, c.want)
		}
	}
	// Every registered kernel has a model (with its default parameters).
	for _, name := range kernels.Names() {
		if _, err := Kernel(name, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Kernel("no_such_kernel", nil); err == nil {
		t.Error("Kernel accepted an unknown kernel")
	}
	if _, ok := cycles(unmodelled{}); ok {
		t.Error("cycles claims a model for a spec type it does not know")
	}
	if a, b := Cycles(kernels.Gemm{K: 128, C: 64, R: 50}), Cycles(kernels.Gemm{K: 128, C: 64, R: 50, Conservative: true}); a >= b {
		t.Errorf("gemm_f16 %d cycles, gemm_f16_drain %d: the drain variant should be slower", a, b)
	}
}

// unmodelled is a spec type the cost model does not know.
type unmodelled struct{ kernels.Copy }
