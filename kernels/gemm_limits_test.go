package kernels

import (
	"strings"
	"testing"
)

// TestGemmDimBounds: k and c far past anything a tile holds are refused as
// parameters (naming the bound), not left to the assembler's immediates.
func TestGemmDimBounds(t *testing.T) {
	for _, name := range []string{"gemm_f16", "gemm_f16_f32acc"} {
		k, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []Params{{"k": 1 << 31}, {"c": 1 << 32}, {"k": 1 << 62}, {"k": GemmMaxDim + 16}} {
			if _, err := k.Resolve(p); err == nil || !strings.Contains(err.Error(), "up to 65536") {
				t.Errorf("%s %v: err %v, want the bound", name, p, err)
			}
		}
		if _, err := k.Resolve(Params{"k": GemmMaxDim, "c": 64}); err != nil {
			t.Errorf("%s k=%d: %v", name, GemmMaxDim, err)
		}
	}
}
