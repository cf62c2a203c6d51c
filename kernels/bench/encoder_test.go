package bench

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ipustack/ipustack/device/emu"

	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
	"github.com/ipustack/ipustack/reference"
	"github.com/x448/float16"
)

func TestAddF16(t *testing.T) {
	for _, n := range []int{4, 8, 20, 24, 28, 44, 100, 1004, 729 * 4, 1152 * 3} {
		rep, err := Run("add_f16", kernels.Params{"n": n}, uint64(n), assemble.Cache{})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		t.Logf("%s", rep)
	}
}

func TestAddF16CheckCatchesCorruption(t *testing.T) {
	layExpectCorruptionCaught(t, "add_f16", kernels.Params{"n": 1004}, 0, 1000, 2000)
}

// TestAddF16InPlace runs add_f16 with out == a and with out == b, which its
// operand contract allows.
func TestAddF16InPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{4, 28, 1004} {
		for _, outIs := range []int{3, 4} {
			a, b := ewRandomF16(rng, n, 2), ewRandomF16(rng, n, 2)
			bAddr := uint32(DataBase + 4*n + 64)
			args := map[int]uint32{2: DataBase, 3: DataBase, 4: bAddr}
			if outIs == 4 {
				args[2] = bAddr
			}
			tile := layRunRaw(t, "add_f16", kernels.Params{"n": n}, args, func(tile *emu.Tile) {
				tile.Write(DataBase, ewF16Bytes(a))
				tile.Write(bAddr, ewF16Bytes(b))
			})
			got := make([]byte, 2*n)
			tile.Read(args[2], got)
			for i, g := range ewBytesF16(got) {
				if w := AddF16Model(a[i], b[i]); !ewSameF16(g, w) {
					t.Fatalf("n=%d out=$m%d: element %d is %v, want %v", n, outIs, i, g, w)
				}
			}
		}
	}
}

func TestLayerNormF16(t *testing.T) {
	for _, c := range []struct{ rows, width, residual int }{
		{1, 4, 0}, {1, 24, 0}, {2, 28, 1}, {1, 144, 0}, {1, 144, 1}, {1, 576, 0}, {1, 1152, 0}, {1, 1152, 1},
		{3, 1152, 0}, {3, 1152, 1}, {7, 100, 1}, {5, 72, 0}, {13, 36, 1}, {256, 8, 0},
	} {
		p := kernels.Params{"rows": c.rows, "width": c.width, "residual": c.residual}
		rep, err := Run("layer_norm_f16", p, uint64(c.rows*c.width+c.residual), assemble.Cache{})
		if err != nil {
			t.Fatalf("%v: %v", p, err)
		}
		t.Logf("%s", rep)
	}
}

func TestLayerNormF16CheckCatchesCorruption(t *testing.T) {
	layExpectCorruptionCaught(t, "layer_norm_f16", kernels.Params{"rows": 3, "width": 100}, 0, 296, 592)
	layExpectCorruptionCaught(t, "layer_norm_f16", kernels.Params{"rows": 3, "width": 100, "residual": 1}, 0, 592)
}

// TestLayerNormF16InPlace runs layer_norm_f16 with out == x, and the fused
// form with sum == x, which its operand contract allows.
func TestLayerNormF16InPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const rows, width = 3, 100
	n := rows * width
	x, r := encNormal(rng, n, 0.3, 1.5), encNormal(rng, n, 0, 1)
	scale, bias := encNormal(rng, width, 1, 0.2), encNormal(rng, width, 0, 0.5)
	xa, ra, sa, ba, sta, outa := uint32(DataBase), uint32(DataBase+0x1000), uint32(DataBase+0x2000), uint32(DataBase+0x2400), uint32(DataBase+0x2800), uint32(DataBase+0x3000)
	for _, residual := range []int{0, 1} {
		args := map[int]uint32{2: xa, 3: xa, 4: sa, 5: ba, 6: sta}
		s := x
		if residual == 1 {
			args[2], args[7], args[8] = outa, ra, xa
			s = make([]float16.Float16, n)
			for i := range s {
				s[i] = AddF16Model(x[i], r[i])
			}
		}
		tile := layRunRaw(t, "layer_norm_f16", kernels.Params{"rows": rows, "width": width, "residual": residual}, args, func(tile *emu.Tile) {
			tile.Write(xa, ewF16Bytes(x))
			tile.Write(ra, ewF16Bytes(r))
			tile.Write(sa, ewF16Bytes(scale))
			tile.Write(ba, ewF16Bytes(bias))
		})
		got := make([]byte, 2*n)
		tile.Read(args[2], got)
		gotS := make([]byte, 2*n)
		tile.Read(xa, gotS)
		for row := 0; row < rows; row++ {
			want, _, _ := LayerNormF16Model(s[row*width:(row+1)*width], scale, bias)
			for i, g := range ewBytesF16(got[2*row*width : 2*(row+1)*width]) {
				if !ewSameF16(g, want[i]) {
					t.Fatalf("residual=%d row %d: element %d is %v, want %v", residual, row, i, g, want[i])
				}
			}
		}
		if residual == 1 {
			for i, g := range ewBytesF16(gotS) {
				if !ewSameF16(g, s[i]) {
					t.Fatalf("sum in place: element %d is %v, want %v", i, g, s[i])
				}
			}
		}
	}
}

func TestSoftmaxF16(t *testing.T) {
	for _, c := range []struct{ rows, keys, valid, dk int }{
		{8, 64, 0, 72}, {7, 64, 25, 72}, {8, 64, 25, 72}, {8, 768, 729, 72}, {7, 768, 729, 64}, {1, 4, 1, 72},
		{1, 4, 0, 1}, {3, 20, 18, 72}, {5, 100, 2, 72}, {2, 200, 197, 64}, {13, 52, 51, 72}, {1, 4096, 4093, 72},
	} {
		for _, stats := range []int{0, 1} {
			p := kernels.Params{"rows": c.rows, "keys": c.keys, "valid": c.valid, "dk": c.dk, "stats": stats}
			rep, err := Run("softmax_f16", p, uint64(c.rows*c.keys+c.valid), assemble.Cache{})
			if err != nil {
				t.Fatalf("%v: %v", p, err)
			}
			t.Logf("%s", rep)
		}
	}
}

func TestSoftmaxF16CheckCatchesCorruption(t *testing.T) {
	// Word 0 (valid probabilities), a word holding the masked lanes
	// (keys 24..27, valid 25) and a padding word (keys 28..31): the +0
	// padding is checked too.
	layExpectCorruptionCaught(t, "softmax_f16", kernels.Params{"rows": 3, "keys": 64, "valid": 25}, 0, 48, 56, 128+56)
	layExpectCorruptionCaught(t, "softmax_f16", kernels.Params{"rows": 3, "keys": 64, "valid": 25, "stats": 1}, 0, 48, 56, 128+56)
}

// TestSoftmaxF16InPlace runs softmax_f16 with out == in.
func TestSoftmaxF16InPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const rows, keys, valid = 3, 40, 37
	x := make([]float16.Float16, rows*keys)
	for i := range x {
		x[i] = ewF64toH(8 * rng.NormFloat64())
	}
	tile := layRunRaw(t, "softmax_f16", kernels.Params{"rows": rows, "keys": keys, "valid": valid}, map[int]uint32{2: DataBase, 3: DataBase},
		func(tile *emu.Tile) { tile.Write(DataBase, ewF16Bytes(x)) })
	got := make([]byte, 2*rows*keys)
	tile.Read(DataBase, got)
	g := ewBytesF16(got)
	for r := 0; r < rows; r++ {
		want := SoftmaxF16Model(x[r*keys:(r+1)*keys], valid, 72)
		for i, w := range want {
			if !ewSameF16(g[r*keys+i], w) {
				t.Fatalf("row %d: element %d is %v, want %v", r, i, g[r*keys+i], w)
			}
		}
	}
}

func TestAttentionMergeF16(t *testing.T) {
	for _, mode := range []int{0, 1, 2} {
		for _, b32 := range []int{0, 1} {
			for _, c := range []struct{ rows, values int }{{8, 72}, {7, 72}, {1, 4}, {13, 20}, {5, 100}, {64, 64}} {
				p := kernels.Params{"rows": c.rows, "values": c.values, "mode": mode, "bacc32": b32}
				rep, err := Run("attention_merge_f16", p, uint64(c.rows*c.values+mode), assemble.Cache{})
				if err != nil {
					t.Fatalf("%v: %v", p, err)
				}
				t.Logf("%s", rep)
			}
		}
	}
}

func TestAttentionMergeF16CheckCatchesCorruption(t *testing.T) {
	for _, mode := range []int{0, 1, 2} {
		layExpectCorruptionCaught(t, "attention_merge_f16", kernels.Params{"rows": 3, "values": 20, "mode": mode}, 0, 80, 232)
	}
}

// TestFlashAttentionComposes runs flash-style attention for 8 query rows
// over 729 keys in three key blocks on the emulator: per block
// softmax_f16 stats=1 (e16 and (s*m, sum)), the block's e16 times V on the
// host in float64 rounded to f32 (standing in for gemm_f16_f32acc), and
// attention_merge_f16 initial / update / final carrying the state from
// call to call. The result must match the float64 softmax(x/sqrt(72)) V
// within a bound derived from the steps: e16 carries half an f16 step
// (relative 2^-11, absolute 2^-25 below the normal range), every f32 step
// together at most 1e-5 relative (the kernels' own bounds are below 1e-6
// per step at these shapes), then the output's f16 rounding.
func TestFlashAttentionComposes(t *testing.T) {
	const rows, keys, dv, dk = 8, 729, 72, 72
	blocks := []struct{ first, valid, stride int }{{0, 256, 256}, {256, 256, 256}, {512, 217, 220}}
	rng := rand.New(rand.NewPCG(11, 12))
	x := make([]float16.Float16, rows*keys)
	for i := range x {
		x[i] = ewF64toH(8 * rng.NormFloat64())
	}
	v := encNormal(rng, keys*dv, 0, 1)
	f32b := func(b []byte) []float32 {
		out := make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
		}
		return out
	}
	const inA, outA, stA = DataBase, DataBase + 0x4000, DataBase + 0x8000
	const accA, sA, baccA, bsA, oA = DataBase + 0x10000, DataBase + 0x18000, DataBase + 0x20000, DataBase + 0x28000, DataBase + 0x30000
	var acc, stats []float32
	var out []float16.Float16
	for bi, b := range blocks {
		in := make([]float16.Float16, rows*b.stride)
		for r := 0; r < rows; r++ {
			copy(in[r*b.stride:r*b.stride+b.valid], x[r*keys+b.first:r*keys+b.first+b.valid])
		}
		tile := layRunRaw(t, "softmax_f16", kernels.Params{"rows": rows, "keys": b.stride, "valid": b.valid, "dk": dk, "stats": 1},
			map[int]uint32{2: outA, 3: inA, 4: stA}, func(tile *emu.Tile) { tile.Write(inA, ewF16Bytes(in)) })
		eb := make([]byte, 2*rows*b.stride)
		tile.Read(outA, eb)
		e16 := ewBytesF16(eb)
		sb := make([]byte, 8*rows)
		tile.Read(stA, sb)
		bacc := make([]float32, rows*dv)
		for r := 0; r < rows; r++ {
			for j := 0; j < dv; j++ {
				s := 0.0
				for k := 0; k < b.valid; k++ {
					s += ewH2F(e16[r*b.stride+k]) * ewH2F(v[(b.first+k)*dv+j])
				}
				bacc[r*dv+j] = float32(s)
			}
		}
		mode := min(bi, 1) // initial, then update
		if bi == len(blocks)-1 {
			mode = 2
		}
		mt := layRunRaw(t, "attention_merge_f16", kernels.Params{"rows": rows, "values": dv, "mode": mode, "bacc32": 1},
			map[int]uint32{2: accA, 3: sA, 4: baccA, 5: bsA, 6: oA}, func(tile *emu.Tile) {
				tile.Write(accA, encF32Bytes(acc))
				tile.Write(sA, encF32Bytes(stats))
				tile.Write(baccA, encF32Bytes(bacc))
				tile.Write(bsA, sb)
			})
		ab, stb := make([]byte, 4*rows*dv), make([]byte, 8*rows)
		mt.Read(accA, ab)
		mt.Read(sA, stb)
		acc, stats = f32b(ab), f32b(stb)
		if mode == 2 {
			ob := make([]byte, 2*rows*dv)
			mt.Read(oA, ob)
			out = ewBytesF16(ob)
		}
	}
	x64 := make([]float64, len(x))
	for i, h := range x {
		x64[i] = ewH2F(h)
	}
	p := reference.Softmax64(x64, rows, keys, keys, 1/math.Sqrt(dk))
	maxErr := 0.0
	for r := 0; r < rows; r++ {
		sumE := 0.0
		m := math.Inf(-1)
		for k := 0; k < keys; k++ {
			m = math.Max(m, x64[r*keys+k]/math.Sqrt(dk))
		}
		for k := 0; k < keys; k++ {
			sumE += math.Exp(x64[r*keys+k]/math.Sqrt(dk) - m)
		}
		for j := 0; j < dv; j++ {
			want, abs, absV := 0.0, 0.0, 0.0
			for k := 0; k < keys; k++ {
				vk := ewH2F(v[k*dv+j])
				want += p[r*keys+k] * vk
				abs += math.Abs(p[r*keys+k] * vk)
				absV += math.Abs(vk)
			}
			e := abs*(1.0/2048+1e-5) + math.Ldexp(absV, -25)/sumE
			bound := e + ewHalfStep(math.Abs(want)+e)
			d := math.Abs(ewH2F(out[r*dv+j]) - want)
			maxErr = math.Max(maxErr, d)
			if d > bound {
				t.Errorf("row %d value %d: %v, float64 attention %v: error %g exceeds %g", r, j, out[r*dv+j].Float32(), want, d, bound)
			}
		}
	}
	t.Logf("flash attention, 8 rows x 729 keys in 3 blocks: max |error| %.3g vs float64", maxErr)
}
