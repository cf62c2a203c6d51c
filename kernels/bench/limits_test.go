package bench

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// TestParameterExtremes runs kernels at the largest parameters their
// records accept: an accepted specialisation must assemble, fit and pass.
func TestParameterExtremes(t *testing.T) {
	cases := []struct {
		name string
		p    kernels.Params
	}{
		{"fill_zero", kernels.Params{"bytes": 1 << 18}},
		{"copy_f16", kernels.Params{"n": 192 << 10}},
		{"gelu_f16", kernels.Params{"n": 96 << 10}},
		{"reduce_add_f16", kernels.Params{"n": 4096, "parts": 24}},
		{"gemm_f16", kernels.Params{"k": 16, "c": 16, "r": 768}},
		{"pack_left_f16", kernels.Params{"k": 2044, "r": 7}},
		{"pack_left_f16", kernels.Params{"k": 2020, "r": 7, "stride": 2044}},
		{"unpack_out_f16", kernels.Params{"c": 2044, "r": 7}},
		{"unpack_out_f16", kernels.Params{"c": 2020, "r": 7, "stride": 2044}},
		{"unpack_out_f32", kernels.Params{"c": 2020, "r": 7, "stride": 2044}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Run(c.name, c.p, 3, assemble.Cache{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
