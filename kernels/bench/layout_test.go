package bench

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

func TestCopyF16(t *testing.T) {
	for _, n := range []int{8, 16, 40, 48, 56, 104, 4096, 10000, 65536} {
		rep, err := Run("copy_f16", kernels.Params{"n": n}, uint64(n), assemble.Cache{})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		t.Logf("%s bytes/cycle=%.2f", rep, float64(n)/float64(rep.Cycles))
	}
}

func TestCopyF16CheckCatchesCorruption(t *testing.T) {
	layExpectCorruptionCaught(t, "copy_f16", kernels.Params{"n": 1000}, 0, 496, 992)
}

func TestPackLeftF16(t *testing.T) {
	for _, c := range []struct{ r, k, stride int }{
		{1, 16, 0}, {1, 4, 0}, {5, 16, 0}, {6, 32, 0}, {7, 48, 0}, {13, 37, 40}, {3, 1, 4}, {4, 2, 4},
		{5, 3, 4}, {9, 15, 16}, {11, 13, 20}, {12, 14, 16}, {17, 20, 0}, {2, 100, 0}, {31, 33, 36},
		{232, 240, 0}, {232, 240, 256}, {100, 1000, 0}, {6, 2044, 0}, {7, 2044, 0},
	} {
		p := kernels.Params{"r": c.r, "k": c.k, "stride": c.stride}
		rep, err := Run("pack_left_f16", p, uint64(c.r*1000+c.k), assemble.Cache{})
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		out := (c.k + 15) / 16 * c.r * 32
		t.Logf("%s out bytes/cycle=%.2f", rep, float64(out)/float64(rep.Cycles))
	}
}

func TestPackLeftF16CheckCatchesCorruption(t *testing.T) {
	// r=13, k=37: the corrupted words hold data (group 0, row 0 and row 3),
	// the masked word of group 2 (row 0) and two zero words after it.
	layExpectCorruptionCaught(t, "pack_left_f16", kernels.Params{"r": 13, "k": 37, "stride": 40}, 0, 8*13*4+8, 2*13*32+8, 2*13*32+16, 2*13*32+24)
}

var layUnpackShapes = []struct{ r, c, stride int }{
	{1, 16, 0}, {1, 8, 0}, {5, 16, 0}, {6, 32, 0}, {7, 48, 0}, {13, 37, 40}, {3, 1, 4}, {4, 2, 4},
	{5, 3, 4}, {9, 15, 16}, {11, 13, 20}, {12, 14, 16}, {17, 20, 0}, {2, 100, 0}, {31, 33, 36},
	{4, 4, 0}, {3, 12, 0}, {8, 5, 8}, {232, 48, 0}, {232, 48, 64}, {60, 1000, 0}, {6, 2044, 0},
}

func TestUnpackOut(t *testing.T) {
	for _, name := range []string{"unpack_out_f16", "unpack_out_f32"} {
		for _, c := range layUnpackShapes {
			p := kernels.Params{"r": c.r, "c": c.c, "stride": c.stride}
			rep, err := Run(name, p, uint64(c.r*1000+c.c), assemble.Cache{})
			if err != nil {
				t.Fatalf("%s %v: %v", name, p, err)
			}
			t.Logf("%s out bytes/cycle=%.2f", rep, float64(2*c.r*c.c)/float64(rep.Cycles))
		}
	}
}

func TestUnpackOutCheckCatchesCorruption(t *testing.T) {
	// r=13, c=37, stride 40: row 0, row 6 (offset 6*80), the last row's
	// partial word (columns 36..39).
	for _, name := range []string{"unpack_out_f16", "unpack_out_f32"} {
		layExpectCorruptionCaught(t, name, kernels.Params{"r": 13, "c": 37, "stride": 40}, 0, 6*80+16, 12*80+72)
	}
}
