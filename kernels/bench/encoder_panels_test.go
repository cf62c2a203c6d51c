package bench

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
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
			rep, err := Run("softmax_f16", p, uint64(c.rows*c.keys+c.valid), assemble.Cache{})
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

func TestLayerNormF16Panels(t *testing.T) {
	for _, c := range []struct{ rows, width, residual int }{
		{1, 16, 0}, {1, 16, 1}, {2, 32, 1}, {1, 144, 0}, {1, 1152, 1}, {8, 1152, 0}, {8, 1152, 1}, {3, 1152, 1},
		{7, 112, 1}, {5, 80, 0}, {13, 48, 1}, {3, 208, 0}, {256, 16, 0}, {256, 128, 1}, {2, 16384, 1},
	} {
		p := kernels.Params{"rows": c.rows, "width": c.width, "residual": c.residual, "panels": 1}
		rep, err := Run("layer_norm_f16", p, uint64(c.rows*c.width+c.residual), assemble.Cache{})
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		t.Logf("%s", rep)
	}
}

func TestLayerNormF16PanelsCheckCatchesCorruption(t *testing.T) {
	// rows=3, width=112: 7 panels of 96 bytes, word k of row i at
	// (k/4)*96 + i*32 + (k%4)*8. Row 0's word 0, row 1's word 5, row 2's
	// last word.
	offs := []uint32{0, 96 + 32 + 8, 6*96 + 2*32 + 24}
	layExpectCorruptionCaught(t, "layer_norm_f16", kernels.Params{"rows": 3, "width": 112, "panels": 1}, offs...)
	layExpectCorruptionCaught(t, "layer_norm_f16", kernels.Params{"rows": 3, "width": 112, "residual": 1, "panels": 1}, offs...)
}

// lnRun runs layer_norm_f16 on logical rows x width x (and r with
// residual=1) laid out as p["panels"] says and returns the logical out,
// the stats bytes and the logical sum. alias: "" (separate operands),
// "out=x", "sum=x" or "sum=r".
func lnRun(t *testing.T, p kernels.Params, x, r, scale, bias []float16.Float16, alias string) (out []float16.Float16, stats []byte, sum []float16.Float16) {
	t.Helper()
	rows, width := p["rows"], p["width"]
	n := rows * width
	const xa, ra, oa, sa, sca, ba, sta = DataBase, DataBase + 0x10000, DataBase + 0x20000, DataBase + 0x30000, DataBase + 0x40000, DataBase + 0x48000, DataBase + 0x50000
	args := map[int]uint32{2: oa, 3: xa, 4: sca, 5: ba, 6: sta, 7: ra, 8: sa}
	switch alias {
	case "out=x":
		args[2] = xa
	case "sum=x":
		args[8] = xa
	case "sum=r":
		args[8] = ra
	}
	tile := layRunRaw(t, "layer_norm_f16", p, args, func(tile *emu.Tile) {
		tile.Write(xa, ewF16Bytes(encLayout(p, x, rows, width)))
		tile.Write(ra, ewF16Bytes(encLayout(p, r, rows, width)))
		tile.Write(sca, ewF16Bytes(scale))
		tile.Write(ba, ewF16Bytes(bias))
	})
	read := func(addr uint32) []float16.Float16 {
		b := make([]byte, 2*n)
		tile.Read(addr, b)
		v := ewBytesF16(b)
		if p["panels"] == 1 {
			v = EncFromPanels(v, rows, width)
		}
		return v
	}
	stats = make([]byte, 8*rows)
	tile.Read(sta, stats)
	out = read(args[2])
	if p["residual"] == 1 {
		sum = read(args[8])
	}
	return out, stats, sum
}

// TestLayerNormF16PanelsMatchesRowMajor runs panels=0 and panels=1 on the
// same data and requires the same out, stats and sum bit for bit, panels=1
// also in place (out == x; fused, sum == x and sum == r).
func TestLayerNormF16PanelsMatchesRowMajor(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, c := range []struct{ rows, width int }{{1, 16}, {3, 112}, {8, 1152}, {13, 48}, {5, 208}, {256, 32}, {2, 4096}} {
		n := c.rows * c.width
		x, r := encNormal(rng, n, 0.3, 1.5), encNormal(rng, n, 0, 1)
		scale, bias := encNormal(rng, c.width, 1, 0.2), encNormal(rng, c.width, 0, 0.5)
		for _, residual := range []int{0, 1} {
			p := kernels.Params{"rows": c.rows, "width": c.width, "residual": residual}
			want, wantSt, wantSum := lnRun(t, p, x, r, scale, bias, "")
			p["panels"] = 1
			aliases := []string{"", "out=x"}
			if residual == 1 {
				aliases = []string{"", "sum=x", "sum=r"}
			}
			for _, alias := range aliases {
				got, gotSt, gotSum := lnRun(t, p, x, r, scale, bias, alias)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%v %q: out row %d column %d is %#04x, panels=0 %#04x", p, alias, i/c.width, i%c.width, uint16(got[i]), uint16(want[i]))
					}
				}
				for i := range wantSum {
					if gotSum[i] != wantSum[i] {
						t.Fatalf("%v %q: sum row %d column %d is %#04x, panels=0 %#04x", p, alias, i/c.width, i%c.width, uint16(gotSum[i]), uint16(wantSum[i]))
					}
				}
				if !bytes.Equal(gotSt, wantSt) {
					t.Fatalf("%v %q: stats %x, panels=0 %x", p, alias, gotSt, wantSt)
				}
			}
		}
	}
}
