package bench

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

func TestGeluF16(t *testing.T) {
	for _, precise := range []int{0, 1} {
		for _, n := range []int{4, 8, 12, 20, 24, 28, 44, 100, 1004, 232 * 48} {
			rep, err := Run("gelu_f16", kernels.Params{"n": n, "precise": precise}, uint64(n), assemble.Cache{})
			if err != nil {
				t.Fatalf("n=%d precise=%d: %v", n, precise, err)
			}
			t.Logf("%s bytes/cycle=%.3f", rep, float64(2*n)/float64(rep.Cycles))
		}
	}
}

func TestReduceAddF16(t *testing.T) {
	for _, c := range []struct{ n, parts int }{{4, 1}, {4, 2}, {8, 3}, {20, 2}, {24, 4}, {28, 5}, {44, 1}, {100, 7}, {1004, 2}, {232 * 48, 4}, {64, 85}} {
		rep, err := Run("reduce_add_f16", kernels.Params{"n": c.n, "parts": c.parts}, uint64(c.n*c.parts), assemble.Cache{})
		if err != nil {
			t.Fatalf("n=%d parts=%d: %v", c.n, c.parts, err)
		}
		t.Logf("%s in bytes/cycle=%.3f", rep, float64(2*c.n*c.parts)/float64(rep.Cycles))
	}
}

func TestGeluF16CheckCatchesCorruption(t *testing.T) {
	layExpectCorruptionCaught(t, "gelu_f16", kernels.Params{"n": 1004}, 0, 1000, 2000)
	layExpectCorruptionCaught(t, "gelu_f16", kernels.Params{"n": 1004, "precise": 1}, 0, 1000, 2000)
}

func TestReduceAddF16CheckCatchesCorruption(t *testing.T) {
	layExpectCorruptionCaught(t, "reduce_add_f16", kernels.Params{"n": 1004, "parts": 3}, 0, 1000, 2000)
}

// TestGeluAccuracy measures both gelu_f16 variants' arithmetic
// (GeluF16Model and GeluF32Model, which the device matches bit for bit)
// over every finite f16 input against the float64 tanh-form GELU and the
// exact erf GELU, by range of x, and pins the documented bounds: absolute
// error <= geluAbsBound vs tanh-GELU for both, and for precise=1 at most
// one f16 step from the correctly rounded tanh-GELU.
func TestGeluAccuracy(t *testing.T) {
	ranges := []float64{math.Inf(-1), -8, -4, -3, -2, -1, 0, 1, 3, 8, math.Inf(1)}
	steps := func(a, b float16.Float16) int {
		k := func(h float16.Float16) int {
			v := int(h.Bits() & 0x7fff)
			if h.Signbit() {
				return -v
			}
			return v
		}
		d := k(a) - k(b)
		if d < 0 {
			d = -d
		}
		return d
	}
	for _, m := range []struct {
		name  string
		model func(float16.Float16) float16.Float16
	}{{"precise=0 (f16)", GeluF16Model}, {"precise=1 (f32)", GeluF32Model}} {
		for ri := 0; ri+1 < len(ranges); ri++ {
			var absT, absE float64
			maxSteps := 0
			for b := 0; b < 1<<16; b++ {
				x := float16.Frombits(uint16(b))
				xf := ewH2F(x)
				if x.IsNaN() || x.IsInf(0) || xf < ranges[ri] || xf >= ranges[ri+1] {
					continue
				}
				y := m.model(x)
				rt := GeluTanh64(xf)
				dt := math.Abs(ewH2F(y) - rt)
				absT = math.Max(absT, dt)
				absE = math.Max(absE, math.Abs(ewH2F(y)-GeluErf64(xf)))
				st := steps(y, ewF64toH(rt))
				if st > maxSteps {
					maxSteps = st
				}
				if dt > geluAbsBound {
					t.Errorf("%s: x=%g: error %g vs tanh-GELU exceeds %g", m.name, xf, dt, geluAbsBound)
				}
				if m.name[8] == '1' && st > 1 {
					t.Errorf("%s: x=%g: %d f16 steps from the correctly rounded tanh-GELU", m.name, xf, st)
				}
			}
			t.Logf("%s x in [%g, %g): max |err| vs tanh-GELU %.3g (%d f16 steps from correctly rounded), vs erf-GELU %.3g",
				m.name, ranges[ri], ranges[ri+1], absT, maxSteps, absE)
		}
	}
}

// TestElementwiseInPlace runs gelu_f16 and reduce_add_f16 with out == in,
// which their operand contracts allow.
func TestElementwiseInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{4, 28, 1004} {
		for _, precise := range []int{0, 1} {
			x := ewRandomF16(rng, n, 2)
			tile := layRunRaw(t, "gelu_f16", kernels.Params{"n": n, "precise": precise}, map[int]uint32{2: DataBase, 3: DataBase},
				func(tile *emu.Tile) { tile.Write(DataBase, ewF16Bytes(x)) })
			got := make([]byte, 2*n)
			tile.Read(DataBase, got)
			model := GeluF16Model
			if precise == 1 {
				model = GeluF32Model
			}
			for i, g := range ewBytesF16(got) {
				if w := model(x[i]); !ewSameF16(g, w) {
					t.Fatalf("gelu n=%d precise=%d in place: element %d is %v, want %v", n, precise, i, g, w)
				}
			}
		}
		const np = 3
		parts := make([][]float16.Float16, np)
		var all []float16.Float16
		for q := range parts {
			parts[q] = ewRandomF16(rng, n, 1)
			all = append(all, parts[q]...)
		}
		tile := layRunRaw(t, "reduce_add_f16", kernels.Params{"n": n, "parts": np}, map[int]uint32{2: DataBase, 3: DataBase},
			func(tile *emu.Tile) { tile.Write(DataBase, ewF16Bytes(all)) })
		got := make([]byte, 2*n)
		tile.Read(DataBase, got)
		for i, g := range ewBytesF16(got) {
			if w := ReduceAddF16Model(parts, i); !ewSameF16(g, w) {
				t.Fatalf("reduce n=%d in place: element %d is %v, want %v", n, i, g, w)
			}
		}
	}
}
