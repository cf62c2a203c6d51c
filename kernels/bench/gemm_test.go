package bench

import (
	"testing"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

type gemmShape struct{ k, c, r int }

func (s gemmShape) params() kernels.Params { return kernels.Params{"k": s.k, "c": s.c, "r": s.r} }

func gemmShapes(cols int) []gemmShape {
	var shapes []gemmShape
	// Small: every row split up to two full rounds of workers and past the
	// small/fast path boundary (r = 12), one column group, one inner group.
	for r := 1; r <= 13; r++ {
		shapes = append(shapes, gemmShape{16, cols, r})
	}
	shapes = append(shapes,
		gemmShape{32, 48, 7},   // small path, several groups
		gemmShape{32, 48, 12},  // fast path, two kg (first + last)
		gemmShape{48, 16, 13},  // fast path with a middle kg, one column group
		gemmShape{16, 48, 20},  // one kg per column group (first and last at once)
		gemmShape{64, 32, 100}, // uneven rows
		gemmShape{240, 48, 232},
	)
	return shapes
}

func TestGemmF16(t *testing.T) {
	for _, s := range gemmShapes(16) {
		rep, err := Run("gemm_f16", s.params(), 7, assemble.Cache{})
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		t.Logf("%s", rep)
	}
}

func TestGemmF16F32Acc(t *testing.T) {
	shapes := gemmShapes(8)
	shapes = append(shapes, gemmShape{16, 8, 3}, gemmShape{32, 24, 19})
	for _, s := range shapes {
		rep, err := Run("gemm_f16_f32acc", s.params(), 11, assemble.Cache{})
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		t.Logf("%s", rep)
	}
}

// Several seeds on the target block and odd shapes.
func TestGemmSeeds(t *testing.T) {
	for _, name := range []string{"gemm_f16", "gemm_f16_f32acc"} {
		for seed := uint64(1); seed <= 3; seed++ {
			for _, s := range []gemmShape{{48, 48, 37}, {16, 16, 5}} {
				if _, err := Run(name, s.params(), seed, assemble.Cache{}); err != nil {
					t.Fatalf("%s %v seed %d: %v", name, s, seed, err)
				}
			}
		}
	}
}

// The target block: gemm_f16 at k=240, c=48, r=232 must reach 85 % of the
// AMP peak (64 MAC per cycle) in simulated cycles, which are deterministic.
func TestGemmF16Peak(t *testing.T) {
	rep, err := Run("gemm_f16", kernels.Params{"k": 240, "c": 48, "r": 232}, 1, assemble.Cache{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep)
	if rep.PeakPercent < 85 {
		t.Errorf("gemm_f16 k=240 c=48 r=232: %.2f %% of AMP peak (%d cycles), want >= 85 %%", rep.PeakPercent, rep.Cycles)
	}
	// f16v4sisoamp does 32 MAC per issue, so its ceiling is 50 % of the f16
	// peak; require 40 %.
	rep, err = Run("gemm_f16_f32acc", kernels.Params{"k": 240, "c": 48, "r": 232}, 1, assemble.Cache{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep)
	if rep.PeakPercent < 40 {
		t.Errorf("gemm_f16_f32acc k=240 c=48 r=232: %.2f %% of the f16 AMP peak (%d cycles), want >= 40 %%", rep.PeakPercent, rep.Cycles)
	}
}

// gemmRun runs a kernel like Run does but hands back the tile and the
// case, so a test can tamper with the result before checking it.
func gemmRun(t *testing.T, name string, params kernels.Params, seed uint64) (*emu.Tile, *Case) {
	t.Helper()
	p, err := prepare(name, params, seed, assemble.Cache{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.execute(); err != nil {
		t.Fatal(err)
	}
	return p.tile, p.c
}

// The check must catch a wrong element: corrupt one output element of a
// correct run (a factor of 2 on one element, 2^-6 relative on another) and
// expect a failure each time; a byte written outside the output must fail
// too.
func TestGemmCheckCatchesCorruption(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f32   bool
		shape gemmShape
	}{
		{"gemm_f16", false, gemmShape{240, 48, 232}},
		{"gemm_f16_f32acc", true, gemmShape{240, 48, 232}},
	} {
		p := tc.shape.params()
		v := gemmVariant{cols: 16}
		if tc.f32 {
			v = gemmVariant{cols: 8, f32Out: true}
		}
		pl, err := gemmPlace(v, tc.shape.k, tc.shape.c, tc.shape.r)
		if err != nil {
			t.Fatal(err)
		}
		tile, c := gemmRun(t, tc.name, p, 5)
		if _, err := c.Check(tile); err != nil {
			t.Fatalf("%s: clean run fails its check: %v", tc.name, err)
		}
		// Output element C[100][37]: panel cg = 37/cols, n = 37%cols.
		row, col := 100, 37
		cg, n := col/v.cols, col%v.cols
		elem := 2
		if v.f32Out {
			elem = 4
		}
		addr := pl.out + uint32((cg*tc.shape.r+row)*32+elem*n)
		orig := make([]byte, elem)
		if err := tile.Read(addr, orig); err != nil {
			t.Fatal(err)
		}
		// Flip the lowest exponent bit (a factor of 2 or 1/2) ...
		bad := append([]byte(nil), orig...)
		if v.f32Out {
			bad[2] ^= 0x80 // f32 exponent bit 23
		} else {
			bad[1] ^= 0x04 // f16 exponent bit 10
		}
		if err := tile.Write(addr, bad); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Check(tile); err == nil {
			t.Errorf("%s: check passed with C[%d][%d] scaled by 2", tc.name, row, col)
		} else {
			t.Logf("%s: corrupted element caught: %v", tc.name, err)
		}
		// ... and a change of 2^-6 relative (mantissa bit 4 of an f16,
		// bit 17 of an f32) on another element.
		if err := tile.Write(addr, orig); err != nil {
			t.Fatal(err)
		}
		addr2 := pl.out + uint32((0*tc.shape.r+3)*32+elem*5)
		w := make([]byte, elem)
		if err := tile.Read(addr2, w); err != nil {
			t.Fatal(err)
		}
		flip := func() {
			if v.f32Out {
				w[2] ^= 0x02
			} else {
				w[0] ^= 0x10
			}
			if err := tile.Write(addr2, w); err != nil {
				t.Fatal(err)
			}
		}
		flip()
		if _, err := c.Check(tile); err == nil {
			t.Errorf("%s: check passed with C[3][5] perturbed by 2^-6", tc.name)
		} else {
			t.Logf("%s: perturbed element caught: %v", tc.name, err)
		}
		flip()
		if _, err := c.Check(tile); err != nil {
			t.Fatalf("%s: restored run fails: %v", tc.name, err)
		}
		// A stray write just past the output.
		past := []byte{0}
		if err := tile.Read(pl.out+uint32(pl.outBytes), past); err != nil {
			t.Fatal(err)
		}
		past[0] ^= 1
		if err := tile.Write(pl.out+uint32(pl.outBytes), past); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Check(tile); err == nil {
			t.Errorf("%s: check passed with a byte past the output changed", tc.name)
		}
	}
}

func TestGemmLayoutsRoundTrip(t *testing.T) {
	// gemmPackRight/gemmUnpackOut index arithmetic against the documented formulas.
	k, c, g := 32, 32, 16
	b := make([]uint16, k*c)
	for i := range b {
		b[i] = uint16(i)
	}
	buf := gemmPackRight(b, k, c, g)
	kk, cc := 17, 21 // B[17][21]: kg 1, i 1, cg 1, n 5
	off := ((1*(k/16)+1)*256 + 5*16 + 1) * 2
	if got := uint16(buf[off]) | uint16(buf[off+1])<<8; got != b[kk*c+cc] {
		t.Fatalf("right panel: got %d at byte %d, want %d", got, off, b[kk*c+cc])
	}
}

// Edge shapes: the largest r (a worker share of 128 rows puts the pace
// stride field at its limit, -511), shares of 2 and 3 rows around the
// small/fast boundary, and a sweep of row counts with several groups.
func TestGemmEdgeShapes(t *testing.T) {
	shapes := []gemmShape{{16, 16, 768}, {32, 16, 767}, {16, 16, 17}, {16, 16, 18}, {32, 32, 14}}
	for r := 19; r <= 60; r += 7 {
		shapes = append(shapes, gemmShape{48, 32, r})
	}
	for _, name := range []string{"gemm_f16", "gemm_f16_f32acc"} {
		for _, s := range shapes {
			rep, err := Run(name, s.params(), uint64(s.r), assemble.Cache{})
			if err != nil {
				t.Fatalf("%s %v: %v", name, s, err)
			}
			t.Logf("%s", rep)
		}
	}
}

func TestGemmParamChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    kernels.Params
	}{
		{"gemm_f16", kernels.Params{"r": 769}},
		{"gemm_f16", kernels.Params{"r": 0}},
		{"gemm_f16", kernels.Params{"k": 24}},
		{"gemm_f16", kernels.Params{"c": 8}},
		{"gemm_f16_f32acc", kernels.Params{"c": 12}},
	} {
		k, err := kernels.Lookup(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Resolve(tc.p); err == nil {
			t.Errorf("%s %v: accepted", tc.name, tc.p)
		}
	}
	k, _ := kernels.Lookup("gemm_f16_f32acc")
	if _, err := k.Resolve(kernels.Params{"c": 8, "k": 16, "r": 1}); err != nil {
		t.Errorf("gemm_f16_f32acc c=8: %v", err)
	}
}
