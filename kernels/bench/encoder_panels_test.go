package bench

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/x448/float16"
)

// The panels=1 forms of softmax_f16 and layer_norm_f16: the bench's host
// checks in panel order, corruption caught anywhere in the panels, and the
// results bit for bit those of panels=0 on the same logical data (the two
// layouts run on the emulator, the outputs compared after reordering).

func TestSoftmaxF16Panels(t *testing.T) {
	for _, c := range []struct{ rows, keys, valid, dk int }{
		{8, 64, 0, 72}, {7, 64, 25, 72}, {8, 736, 729, 72}, {7, 768, 729, 64}, {1, 16, 1, 72}, {1, 16, 0, 1},
		{3, 48, 45, 72}, {5, 112, 2, 72}, {2, 208, 197, 64}, {13, 64, 51, 72}, {1, 4096, 4093, 72}, {256, 32, 17, 72},
	} {
		for _, stats := range []int{0, 1} {
			p := kernels.Params{"rows": c.rows, "keys": c.keys, "valid": c.valid, "dk": c.dk, "stats": stats, "panels": 1}
			rep, err := Run("softmax_f16", p, uint64(c.rows*c.keys+c.valid), kernels.Cache{})
			if err != nil {
				t.Fatalf("%v: %v", p, err)
			}
			t.Logf("%s", rep)
		}
	}
}

func TestSoftmaxF16PanelsCheckCatchesCorruption(t *testing.T) {
	// rows=3: panels of 96 bytes, word k of row i at (k/4)*96 + i*32 +
	// (k%4)*8. Row 0's word 0; its word 6 (keys 24..27, the masked lanes
	// of valid 25); its word 7 (padding in the partial panel); row 1's
	// word 8 (padding in a full padding panel, keys 32..47); row 2's last
	// word.
	offs := []uint32{0, 96 + 16, 96 + 24, 192 + 32, 3*96 + 64 + 24}
	layExpectCorruptionCaught(t, "softmax_f16", kernels.Params{"rows": 3, "keys": 64, "valid": 25, "panels": 1}, offs...)
	layExpectCorruptionCaught(t, "softmax_f16", kernels.Params{"rows": 3, "keys": 64, "valid": 25, "stats": 1, "panels": 1}, offs...)
}

// smRun runs softmax_f16 on the logical rows x keys scores x laid out as
// p["panels"] says (in place when inPlace) and returns the logical output
// and the stats bytes.
func smRun(t *testing.T, p kernels.Params, x []float16.Float16, inPlace bool) ([]float16.Float16, []byte) {
	t.Helper()
	rows, keys := p["rows"], p["keys"]
	const inA, outA, stA = DataBase, DataBase + 0x20000, DataBase + 0x40000
	args := map[int]uint32{2: outA, 3: inA, 4: stA}
	if inPlace {
		args[2] = inA
	}
	tile := layRunRaw(t, "softmax_f16", p, args, func(tile *emu.Tile) { tile.Write(inA, ewF16Bytes(encLayout(p, x, rows, keys))) })
	ob := make([]byte, 2*rows*keys)
	tile.Read(args[2], ob)
	out := ewBytesF16(ob)
	if p["panels"] == 1 {
		out = EncFromPanels(out, rows, keys)
	}
	var sb []byte
	if p["stats"] == 1 {
		sb = make([]byte, 8*rows)
		tile.Read(stA, sb)
	}
	return out, sb
}

// TestSoftmaxF16PanelsMatchesRowMajor runs panels=0 and panels=1 on the
// same scores (the padding any bits, NaN and infinities included) and
// requires the same outputs and statistics bit for bit; panels=1 also in
// place (out == in).
func TestSoftmaxF16PanelsMatchesRowMajor(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct{ rows, keys, valid int }{
		{1, 16, 1}, {8, 736, 729}, {7, 64, 25}, {5, 112, 2}, {13, 208, 197}, {3, 48, 0}, {256, 32, 31}, {6, 4096, 4095},
	} {
		x := ewBytesF16(layRandomBytes(rng, 2*c.rows*c.keys))
		valid := c.valid
		if valid == 0 {
			valid = c.keys
		}
		for r := 0; r < c.rows; r++ {
			for i := 0; i < valid; i++ {
				x[r*c.keys+i] = ewF64toH(8 * rng.NormFloat64())
			}
		}
		for _, stats := range []int{0, 1} {
			p := kernels.Params{"rows": c.rows, "keys": c.keys, "valid": c.valid, "stats": stats}
			want, wantSt := smRun(t, p, x, false)
			p["panels"] = 1
			for _, inPlace := range []bool{false, true} {
				got, gotSt := smRun(t, p, x, inPlace)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%v in place %v: row %d key %d is %#04x, panels=0 %#04x", p, inPlace, i/c.keys, i%c.keys, uint16(got[i]), uint16(want[i]))
					}
				}
				if !bytes.Equal(gotSt, wantSt) {
					t.Fatalf("%v in place %v: stats %x, panels=0 %x", p, inPlace, gotSt, wantSt)
				}
			}
		}
	}
}

func TestPanelsReorder(t *testing.T) {
	v := make([]float16.Float16, 3*32)
	for i := range v {
		v[i] = float16.Float16(i)
	}
	p := EncToPanels(v, 3, 32)
	// row 1, column 17: panel 1 (offset 3*16 values), row 1 (16), lane 1.
	if p[48+16+1] != v[32+17] {
		t.Fatalf("EncToPanels: %d at row 1 column 17's place, want %d", p[48+16+1], v[32+17])
	}
	back := EncFromPanels(p, 3, 32)
	for i := range v {
		if back[i] != v[i] {
			t.Fatalf("EncFromPanels(EncToPanels(v))[%d] = %d", i, back[i])
		}
	}
}
