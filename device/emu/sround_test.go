package emu

import (
	"math"
	"testing"
)

// srNeighbours returns the two f16 values around f (lo toward zero, hi away
// from zero; lo == hi when f is exact in f16), found from the RNE
// conversion independently of f2hSR. hi may be infinity (above max).
func srNeighbours(f float32) (lo, hi uint32) {
	rne := f2h(f)
	v := h2f(rne)
	switch {
	case v == f:
		return rne, rne
	case math.Abs(float64(v)) < math.Abs(float64(f)):
		return rne, rne + 1 // sign-magnitude: +1 is one ulp away from zero
	}
	return rne - 1, rne
}

// h2f64 is h2f with infinity read as 2^16, the value just above the f16 max
// that stochastic rounding treats as the upper neighbour.
func h2f64(h uint32) float64 {
	switch h {
	case 0x7C00:
		return 65536
	case 0xFC00:
		return -65536
	}
	return float64(h2f(h))
}

func isNaN16(h uint32) bool { return h&0x7C00 == 0x7C00 && h&0x3FF != 0 }

func TestSRExactUnchanged(t *testing.T) {
	var rng Context
	rng.seed(7)
	rs := []uint32{0, 1, 0x7FFF, 0x8000, 0xFFFF, 0xFFFFFFFF}
	for i := 0; i < 4; i++ {
		rs = append(rs, uint32(rng.next64()))
	}
	for hb := uint32(0); hb <= 0xFFFF; hb++ {
		f := h2f(hb)
		for _, r := range rs {
			got := f2hSR(f, r)
			if isNaN16(hb) {
				if !isNaN16(got) || got&0x8000 != hb&0x8000 {
					t.Fatalf("f2hSR(NaN 0x%04x, 0x%x) = 0x%04x, want a NaN of the same sign", hb, r, got)
				}
				continue
			}
			if got != hb {
				t.Fatalf("f2hSR(%v = 0x%04x, 0x%x) = 0x%04x: an exact value changed", f, hb, r, got)
			}
		}
	}
	// f32 NaN, infinities, beyond 2^16, and f32 subnormals far below the f16
	// subnormal ulp (whose fraction truncates to 0 in 16 bits).
	for _, r := range rs {
		if got := f2hSR(f32(nan32()), r); !isNaN16(got) {
			t.Errorf("f2hSR(NaN) = 0x%04x", got)
		}
		for _, c := range []struct {
			f    float32
			want uint32
		}{
			{float32(math.Inf(1)), 0x7C00}, {float32(math.Inf(-1)), 0xFC00},
			{65536, 0x7C00}, {-1e30, 0xFC00}, {math.MaxFloat32, 0x7C00},
			{0x1p-45, 0}, {-0x1p-140, 0x8000}, {f32(0x80000000), 0x8000},
		} {
			if got := f2hSR(c.f, r); got != c.want {
				t.Errorf("f2hSR(%g, 0x%x) = 0x%04x, want 0x%04x", c.f, r, got, c.want)
			}
		}
	}
}

// TestSRRoundMean: many stochastic roundings of a value between two f16
// neighbours give only those neighbours, and their mean is the exact value
// to within a few standard errors. Seeds are fixed, so the test is
// deterministic.
func TestSRRoundMean(t *testing.T) {
	const n = 1 << 15
	for i, f := range []float32{
		1 + 0.3*0x1p-10, // normal, p = 0.3 (to f32 precision)
		-3.14159265,
		1000.123,
		0.0999,
		1e-6,           // f16 subnormal
		-2.5 * 0x1p-24, // subnormal, p = 0.5
		0x1p-30,        // below the smallest subnormal: 0 or 2^-24, p = 2^-6
		0x1p-14 - 0x1p-26,
		65519, // between max and 2^16 (infinity): p = 15/32
		-65530,
	} {
		lo, hi := srNeighbours(f)
		if lo == hi {
			t.Fatalf("%g is exact in f16; pick another value", f)
		}
		flo, fhi := h2f64(lo), h2f64(hi)
		p := (float64(f) - flo) / (fhi - flo)
		var c Context
		c.seed(uint64(1000 + i))
		ups, sum := 0, 0.0
		for k := 0; k < n; k++ {
			got := f2hSR(f, uint32(c.next64()))
			switch got {
			case lo:
			case hi:
				ups++
			default:
				t.Fatalf("f2hSR(%g) = 0x%04x, not a neighbour (0x%04x, 0x%04x)", f, got, lo, hi)
			}
			sum += h2f64(got)
		}
		mean := sum / n
		se := math.Abs(fhi-flo) * math.Sqrt(p*(1-p)/n)
		if d := math.Abs(mean - float64(f)); d > 4*se {
			t.Errorf("%g: mean of %d roundings %g, off by %.3g = %.1f standard errors (p %.4f, ups %d)", f, n, mean, d, d/se, p, ups)
		}
	}
}

// srWorker runs prog in worker 0 of a fresh tile with $a preset and the
// supervisor's $FP_ICTL set to ictl.
func srWorker(t *testing.T, ictl uint32, a []uint32, prog ...in) *Tile {
	t.Helper()
	tl := NewTile(0)
	tl.Sup.CSR[csrFPICTL] = ictl
	copy(tl.Workers[0].A[:], a)
	runWorker(t, tl, 0, prog...)
	return tl
}

var srConvProg = []in{
	I("f32tof16", 4, 1),
	I("f32v2tof16", 5, 2),
	I("f32tof16", 6, 1),
	I("f32v2tof16", 7, 2),
	I("exitz", mzero),
}

func TestSROffIsRNE(t *testing.T) {
	x, y, z := float32(1+0x1p-11+0x1p-20), float32(-2.0003), float32(70000)
	a := regsA(0, fb(x), fb(y), fb(z))
	// Every $FP_ICTL field but ESR (bit 19): exception enables, RND, NANOO.
	for _, ictl := range []uint32{0, 0x7 | 7<<16 | 1<<20, ^uint32(fpCtlESR)} {
		tl := srWorker(t, ictl, a, srConvProg...)
		w := &tl.Workers[0]
		checkRegs(t, "a", w.A[:], map[int]uint32{4: hh(x, x), 5: hh(y, z), 6: hh(x, x), 7: hh(y, z)})
		ref := NewTile(0)
		if w.rng != ref.Workers[0].rng {
			t.Errorf("FP_ICTL 0x%x: the generator advanced with ESR off", ictl)
		}
	}
}

// TestSRConversions: with ESR on, f32tof16 and f32v2tof16 round to one of
// the two neighbours, drawing one 64-bit value per instruction (bits 0..15
// for the low lane, 16..31 for the high lane).
func TestSRConversions(t *testing.T) {
	x, y, z := float32(1+0x1p-11+0x1p-20), float32(-2.0003), float32(65519)
	a := regsA(0, fb(x), fb(y), fb(z))
	check := func(name string, tl *Tile, ref *Context) {
		t.Helper()
		w := &tl.Workers[0]
		for _, r := range []int{4, 5, 6, 7} {
			var want uint32
			v := uint32(ref.next64())
			if r == 4 || r == 6 {
				want = f2hSR(x, v) * 0x10001 // broadcast into both halves
			} else {
				want = f2hSR(y, v) | f2hSR(z, v>>16)<<16
			}
			if w.A[r] != want {
				t.Errorf("%s: $a%d = 0x%08x, want 0x%08x", name, r, w.A[r], want)
			}
		}
		for _, c := range []struct {
			f float32
			h uint32
		}{{x, w.A[4] & 0xFFFF}, {x, w.A[4] >> 16}, {x, w.A[6] & 0xFFFF}, {x, w.A[6] >> 16}, {y, w.A[5] & 0xFFFF}, {z, w.A[5] >> 16}, {y, w.A[7] & 0xFFFF}, {z, w.A[7] >> 16}} {
			if lo, hi := srNeighbours(c.f); c.h != lo && c.h != hi || c.h > 0xFFFF {
				t.Errorf("%s: %g rounded to 0x%x, not 0x%04x or 0x%04x", name, c.f, c.h, lo, hi)
			}
		}
		if w.rng != ref.rng {
			t.Errorf("%s: generator state %x, want %x (one draw per instruction)", name, w.rng, ref.rng)
		}
	}

	// ESR from the supervisor's $FP_ICTL (copied to $FP_CTL at start).
	tl := srWorker(t, fpCtlESR, a, srConvProg...)
	ref := NewTile(0).Workers[0]
	check("FP_ICTL", tl, &ref)

	// ESR set by the worker itself (uput $FP_CTL) after reseeding.
	a2 := append(regsA(fpCtlESR), a[1:]...)
	prog := cat(seedPRNG(4242), []in{I("uput", 0x02, 0)}, srConvProg)
	tl = srWorker(t, 0, a2, prog...)
	var ref2 Context
	ref2.seed(4242)
	check("uput", tl, &ref2)
}

func TestSRDeterminism(t *testing.T) {
	run := func(seed uint32) [16]uint32 {
		prog := cat(seedPRNG(seed), srConvProg)
		a := regsA(0, fb(1.0001), fb(-7.777), fb(0.33333))
		return srWorker(t, fpCtlESR, a, prog...).Workers[0].A
	}
	a, b := run(99), run(99)
	if a != b {
		t.Fatalf("same seed, different results:\n%x\n%x", a, b)
	}
	// Same seed, same results also over many draws of the unit function.
	var c1, c2 Context
	c1.seed(5)
	c2.seed(5)
	for i := 0; i < 1000; i++ {
		f := float32(i)*0.0137 - 3
		if f2hSR(f, uint32(c1.next64())) != f2hSR(f, uint32(c2.next64())) {
			t.Fatalf("draw %d differs", i)
		}
	}
}

// TestAMPSR: f16v4hihov4amp with ESR on (set by the supervisor with put
// $FP_ICTL) drains each output as one of the two f16 neighbours of its
// exact f32 sum, using lane i of the 64-bit draw for output 4p+i;
// with ESR off the same program gives round to nearest even.
func TestAMPSR(t *testing.T) {
	var W [16][16]float32
	var flat []float32
	for n := 0; n < 16; n++ {
		for k := 0; k < 16; k++ {
			W[n][k] = 1 + float32((n*5+k*3)%7)/1024
			flat = append(flat, W[n][k])
		}
	}
	var X [3][16]float32 // row 2 is the zero drain row
	var xs []float32
	for r := 0; r < 3; r++ {
		for k := 0; k < 16 && r < 2; k++ {
			X[r][k] = 1 + float32((r*7+k*11)%13)/512
		}
		xs = append(xs, X[r][:]...)
	}
	// The f32 sums as the AMP forms them: exact products added in k order.
	var sums [2][16]float32
	for r := 0; r < 2; r++ {
		for n := 0; n < 16; n++ {
			var s float32
			for k := 0; k < 16; k++ {
				s += float32(W[n][k] * X[r][k])
			}
			sums[r][n] = s
		}
	}

	run := func(ictl uint32) (*Tile, []float32, Context) {
		tl := NewTile(0)
		putHalves(t, tl, ilvBase, flat)
		putHalves(t, tl, dataBase, xs)
		sup := cat(setM(1, ilvBase), []in{I("put", 0x50, 1)})
		for s := 0; s < 64; s += 2 {
			sup = append(sup, I("ld128putcs", int64(s)))
		}
		sup = append(sup, setM(2, ictl)...)
		sup = append(sup, I("put", 0x20, 2), I("sync", 3))
		load(t, tl, supBase, sup...)
		tl.Start(supBase)
		if res, err := tl.Run(1 << 20); err != nil || res.Reason != StopSync {
			t.Fatal(res, err)
		}
		before := tl.Workers[3]
		var prog []in
		prog = append(prog, I("setzi", 5, 0))
		prog = append(prog, setM(6, dataBase+0x200)...)
		prog = append(prog, I("setzi", 7, 0))
		for r := 0; r < 3; r++ {
			for p := 0; p < 4; p++ {
				prog = append(prog,
					I("ld64step", 0, 14, 5, 1),
					I("f16v4hihov4amp", 2, 0, 8, int64(p)),
					I("st64step", 2, 6, 7, 1))
			}
		}
		prog = append(prog, I("exitz", mzero))
		runWorker(t, tl, 3, prog...)
		return tl, getHalves(t, tl, dataBase+0x200, 48), before
	}

	// ESR off: round to nearest even, generator untouched.
	tl, out, before := run(0)
	for r := 0; r < 2; r++ {
		for n := 0; n < 16; n++ {
			if got, want := out[16*(r+1)+n], h2f(f2h(sums[r][n])); got != want {
				t.Errorf("ESR off: row %d output %d = %v, want %v (RNE of %v)", r, n, got, want, sums[r][n])
			}
		}
	}
	if tl.Workers[3].rng != before.rng {
		t.Error("ESR off: the generator advanced")
	}

	// ESR on.
	tl, out, before = run(fpCtlESR)
	ref := Context{rng: before.rng}
	inexact, notRNE := 0, 0
	for r := 0; r < 3; r++ {
		for p := 0; p < 4; p++ {
			v := ref.next64()
			for i := 0; i < 4; i++ {
				got := f2h(out[16*r+4*p+i])
				if r == 0 {
					if got != 0 {
						t.Errorf("warm-up output %d = 0x%04x, want 0", 4*p+i, got)
					}
					continue
				}
				s := sums[r-1][4*p+i]
				lo, hi := srNeighbours(s)
				if got != lo && got != hi {
					t.Errorf("row %d output %d = 0x%04x (%v), not a neighbour of %v (0x%04x, 0x%04x)", r-1, 4*p+i, got, h2f(got), s, lo, hi)
				}
				if want := f2hSR(s, uint32(v>>(16*i))); got != want {
					t.Errorf("row %d output %d = 0x%04x, want 0x%04x (lane %d of draw %d)", r-1, 4*p+i, got, want, i, 4*r+p)
				}
				if lo != hi {
					inexact++
				}
				if got != f2h(s) {
					notRNE++
				}
			}
		}
	}
	if tl.Workers[3].rng != ref.rng {
		t.Error("ESR on: want exactly one draw per f16v4hihov4amp")
	}
	if inexact < 16 || notRNE == 0 {
		t.Errorf("test data too weak: %d inexact sums, %d outputs differ from RNE", inexact, notRNE)
	}
}
