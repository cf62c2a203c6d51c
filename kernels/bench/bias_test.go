package bench

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

func TestAddBiasF16(t *testing.T) {
	for _, c := range []struct{ rows, r, first int }{
		{1, 1, 0}, {5, 1, 0}, {6, 3, 0}, {7, 3, 2}, {64, 16, 0}, {100, 27, 26}, {13, 100, 50},
		{27 * 4, 27, 0}, {576 / 16 * 3, 27, 9}, {1000, 43, 17}, {6144, 768, 0},
	} {
		rep, err := Run("add_bias_f16", kernels.Params{"rows": c.rows, "r": c.r, "first": c.first}, uint64(c.rows*c.r+c.first), assemble.Cache{})
		if err != nil {
			t.Fatalf("rows=%d r=%d first=%d: %v", c.rows, c.r, c.first, err)
		}
		t.Logf("%s cycles/row=%.2f", rep, float64(rep.Cycles)/float64(c.rows))
	}
}

func TestAddBiasF16CheckCatchesCorruption(t *testing.T) {
	layExpectCorruptionCaught(t, "add_bias_f16", kernels.Params{"rows": 100, "r": 27, "first": 3}, 0, 1000, 3198)
}

func TestAddBiasF16BadParams(t *testing.T) {
	k, err := kernels.Lookup("add_bias_f16")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []kernels.Params{{"rows": 0, "r": 1}, {"rows": 4, "r": 4, "first": 4}, {"rows": 4, "r": 0}, {"rows": 1 << 20, "r": 4}, {"rows": 4, "r": 4, "first": -1}} {
		if _, err := k.Resolve(p); err == nil {
			t.Errorf("%v accepted", p)
		}
	}
}
