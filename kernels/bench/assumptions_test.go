package bench

import (
	"bytes"
	"testing"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// gemmOut runs a GEMM kernel with seed 3 on a tile with the assumption
// set and returns its output panel, the tile and the case.
func gemmOut(t *testing.T, name string, sh gemmShape, set emu.AssumptionSet) ([]byte, *emu.Tile, *Case) {
	t.Helper()
	p, err := prepareAssuming(name, sh.params(), 3, assemble.Cache{}, set)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.execute(); err != nil {
		t.Fatal(err)
	}
	pl, err := gemmPlace(gemmVariant{cols: 16}, sh.k, sh.c, sh.r)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, pl.outBytes)
	if err := p.tile.Read(pl.out, out); err != nil {
		t.Fatal(err)
	}
	return out, p.tile, p.c
}

// TestConservativeBreaksRetainedGemm: gemm_f16 depends on
// amp-state-retained (a run leaves its last row in the accumulators for the
// next run to drain); the conservative emulator clears them at each exit,
// so the kernel must produce wrong rows there — exactly the last row of
// every worker's share, in every column group — and fail the host check.
// gemm_f16_drain is bit-identical to gemm_f16 under the default set and
// stays so under the conservative one.
func TestConservativeBreaksRetainedGemm(t *testing.T) {
	sh := gemmShape{k: 240, c: 48, r: 232}
	good, tile, c := gemmOut(t, "gemm_f16", sh, emu.DefaultAssumptions)
	if _, err := c.Check(tile); err != nil {
		t.Fatalf("gemm_f16 with the default assumptions: %v", err)
	}
	bad, tile, c := gemmOut(t, "gemm_f16", sh, emu.ConservativeAssumptions)
	if _, err := c.Check(tile); err == nil {
		t.Fatal("gemm_f16 passes its host check under the conservative assumptions; it must not (it keeps results in $AACC between runs)")
	}
	// Which output rows differ from the correct run.
	lastRows := map[int]bool{}
	r0 := 0
	for _, n := range rowsOfWorkers(sh.r) {
		lastRows[r0+n-1] = true
		r0 += n
	}
	wrong := 0
	for cg := 0; cg < sh.c/16; cg++ {
		for row := 0; row < sh.r; row++ {
			off := (cg*sh.r + row) * 32
			differs := !bytes.Equal(good[off:off+32], bad[off:off+32])
			if differs {
				wrong++
			}
			if differs != lastRows[row] {
				t.Errorf("column group %d row %d: differs=%v, want %v (only each worker's last row is carried in $AACC)", cg, row, differs, lastRows[row])
			}
		}
	}
	if want := 6 * sh.c / 16; wrong != want {
		t.Errorf("%d wrong rows, want %d (one per worker per column group)", wrong, want)
	}
	for _, set := range []emu.AssumptionSet{emu.DefaultAssumptions, emu.ConservativeAssumptions} {
		got, tile, c := gemmOut(t, "gemm_f16_drain", sh, set)
		if _, err := c.Check(tile); err != nil {
			t.Errorf("gemm_f16_drain (%s): %v", set, err)
		}
		if !bytes.Equal(got, good) {
			t.Errorf("gemm_f16_drain (%s) differs from gemm_f16 (default)", set)
		}
	}
}

// rowsOfWorkers is the kernels' work split: worker w takes r/6 rows, the
// first r%6 one more.
func rowsOfWorkers(r int) []int {
	n := make([]int, emu.NumWorkers)
	for w := range n {
		n[w] = r / emu.NumWorkers
		if w < r%emu.NumWorkers {
			n[w]++
		}
	}
	return n
}

// TestKernelsUnderConservative: every kernel but gemm_f16 and
// gemm_f16_f32acc (the two that rely on amp-state-retained) passes on the conservative emulator at its
// default parameters, and none trips the $CWEI fault in either mode.
func TestKernelsUnderConservative(t *testing.T) {
	for _, name := range kernels.Names() {
		if _, ok := setups[name]; !ok {
			continue
		}
		for _, set := range []emu.AssumptionSet{emu.DefaultAssumptions, emu.ConservativeAssumptions} {
			rep, err := RunAssuming(name, nil, 1, assemble.Cache{}, set)
			if (name == kernels.GemmF16 || name == "gemm_f16_f32acc") && set == emu.ConservativeAssumptions {
				if err == nil || rep == nil || rep.Pass {
					t.Errorf("%s passes under %s", name, set)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s (%s): %v", name, set, err)
				continue
			}
			if rep.Assumptions != set.String() {
				t.Errorf("%s: report says assumptions=%s, want %s", name, rep.Assumptions, set)
			}
		}
	}
}

// TestGemmDrainShapes: the drained variants pass every GEMM test shape on
// the conservative emulator (what they are for) and on the default one.
func TestGemmDrainShapes(t *testing.T) {
	for _, v := range []struct {
		name string
		cols int
	}{{kernels.GemmF16Drain, 16}, {"gemm_f16_f32acc_drain", 8}} {
		for _, s := range gemmShapes(v.cols) {
			for _, set := range []emu.AssumptionSet{emu.DefaultAssumptions, emu.ConservativeAssumptions} {
				if _, err := RunAssuming(v.name, s.params(), 7, assemble.Cache{}, set); err != nil {
					t.Errorf("%s %v (%s): %v", v.name, s, set, err)
				}
			}
		}
	}
}
