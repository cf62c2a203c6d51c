package emu

import (
	"math"
	"testing"

	"github.com/x448/float16"
)

func h(f float32) uint32          { return uint32(float16.Fromfloat32(f).Bits()) }
func hh(lo, hi float32) uint32    { return h(lo) | h(hi)<<16 }
func fb(f float32) uint32         { return math.Float32bits(f) }
func hbits(x float64) uint32      { return uint32(float16.Fromfloat32(float32(x)).Bits()) }
func nan32() uint32               { return 0x7FC00000 }
func regsA(v ...uint32) []uint32  { return v }
func wantA(r int, v uint32) regAt { return regAt{r, v} }

type regAt struct {
	r int
	v uint32
}

// TestFloat runs one aux instruction in a worker whose $a registers are
// preset, then checks destination registers.
func TestFloat(t *testing.T) {
	cases := []struct {
		name string
		a    []uint32 // $a0.. before
		op   in
		want []regAt
		tas  float32
	}{
		{name: "f16v2add", a: regsA(0, hh(1.5, -2), hh(0.25, 3)), op: I("f16v2add", 0, 1, 2), want: []regAt{wantA(0, hh(1.75, 1))}},
		{name: "f16v2add rounds to nearest even", a: regsA(0, hh(1, 2048), hh(0x1p-11, 1)), op: I("f16v2add", 0, 1, 2), want: []regAt{wantA(0, hh(1, 2048))}},
		{name: "f16v2mul", a: regsA(0, hh(1.5, -2), hh(4, 3)), op: I("f16v2mul", 0, 1, 2), want: []regAt{wantA(0, hh(6, -6))}},
		{name: "f16v4add", a: regsA(0, 0, hh(1, 2), hh(3, 4), hh(1, 1), hh(1, 1)), op: I("f16v4add", 0, 2, 4),
			want: []regAt{wantA(0, hh(2, 3)), wantA(1, hh(4, 5))}},
		{name: "f16v4mul", a: regsA(0, 0, hh(1, 2), hh(3, 4), hh(2, 2), hh(2, -1)), op: I("f16v4mul", 0, 2, 4),
			want: []regAt{wantA(0, hh(2, 4)), wantA(1, hh(6, -4))}},
		{name: "f32add", a: regsA(0, fb(1.25), fb(2)), op: I("f32add", 0, 1, 2), want: []regAt{wantA(0, fb(3.25))}},
		{name: "f32sub", a: regsA(0, fb(1.25), fb(2)), op: I("f32sub", 0, 1, 2), want: []regAt{wantA(0, fb(-0.75))}},
		{name: "f32mul", a: regsA(0, fb(1.5), fb(-4)), op: I("f32mul", 0, 1, 2), want: []regAt{wantA(0, fb(-6))}},
		{name: "f32max", a: regsA(0, fb(1.5), fb(-4)), op: I("f32max", 0, 1, 2), want: []regAt{wantA(0, fb(1.5))}},
		{name: "f32max NaN gives the other", a: regsA(0, nan32(), fb(-4)), op: I("f32max", 0, 1, 2), want: []regAt{wantA(0, fb(-4))}},
		{name: "f32v2add", a: regsA(0, 0, fb(1), fb(2), fb(10), fb(20)), op: I("f32v2add", 0, 2, 4), want: []regAt{wantA(0, fb(11)), wantA(1, fb(22))}},
		{name: "f32v2mul", a: regsA(0, 0, fb(1), fb(2), fb(10), fb(20)), op: I("f32v2mul", 0, 2, 4), want: []regAt{wantA(0, fb(10)), wantA(1, fb(40))}},
		{name: "f32v2max", a: regsA(0, 0, fb(1), fb(25), fb(10), fb(20)), op: I("f32v2max", 0, 2, 4), want: []regAt{wantA(0, fb(10)), wantA(1, fb(25))}},
		{name: "f32v4add", a: regsA(0, 0, 0, 0, fb(1), fb(2), fb(3), fb(4), fb(1), fb(1), fb(1), fb(1)), op: I("f32v4add", 0, 4, 8),
			want: []regAt{wantA(0, fb(2)), wantA(1, fb(3)), wantA(2, fb(4)), wantA(3, fb(5))}},
		{name: "f16v2tof32", a: regsA(0, 0, hh(1.5, -0.25)), op: I("f16v2tof32", 0, 2), want: []regAt{wantA(0, fb(1.5)), wantA(1, fb(-0.25))}},
		{name: "f32v2tof16", a: regsA(0, 0, fb(1.5), fb(65504)), op: I("f32v2tof16", 0, 2), want: []regAt{wantA(0, hh(1.5, 65504))}},
		{name: "f32tof16 ties to even", a: regsA(0, fb(1+0x1p-11)), op: I("f32tof16", 0, 1), want: []regAt{wantA(0, hh(1, 1))}},
		{name: "f32tof16 overflow", a: regsA(0, fb(70000)), op: I("f32tof16", 0, 1), want: []regAt{wantA(0, 0x7C007C00)}},
		{name: "f16tof32", a: regsA(0, 0xFFFF0000|h(-3)), op: I("f16tof32", 0, 1), want: []regAt{wantA(0, fb(-3))}},
		{name: "f16v2exp", a: regsA(0, hh(0, 1)), op: I("f16v2exp", 0, 1), want: []regAt{wantA(0, h(1)|hbits(math.E)<<16)}},
		{name: "f16v2tanh", a: regsA(0, hh(0.5, -20)), op: I("f16v2tanh", 0, 1), want: []regAt{wantA(0, f64toh(math.Tanh(0.5))|h(-1)<<16)}},
		{name: "f32exp", a: regsA(0, fb(1)), op: I("f32exp", 0, 1), want: []regAt{wantA(0, fb(float32(math.E)))}},
		{name: "f32oox", a: regsA(0, fb(4)), op: I("f32oox", 0, 1), want: []regAt{wantA(0, fb(0.25))}},
		{name: "not", a: regsA(0, 0x0F0F0F0F), op: I("not", 0, 1), want: []regAt{wantA(0, 0xF0F0F0F0)}},
		{name: "and.a", a: regsA(0, 0xFF00, 0x0FF0), op: I("and.a", 0, 1, 2), want: []regAt{wantA(0, 0x0F00)}},
		{name: "or.a", a: regsA(0, 0xFF00, 0x0FF0), op: I("or.a", 0, 1, 2), want: []regAt{wantA(0, 0xFFF0)}},
		{name: "xor.a", a: regsA(0, 0xFF00, 0x0FF0), op: I("xor.a", 0, 1, 2), want: []regAt{wantA(0, 0xF0F0)}},
		{name: "andc.a", a: regsA(0, 0xFF00, 0x0FF0), op: I("andc.a", 0, 1, 2), want: []regAt{wantA(0, 0xF000)}},
		{name: "or.aiz", a: regsA(0, 1), op: I("or.aiz", 0, 1, 0x3F800000), want: []regAt{wantA(0, 0x3F800001)}},
		{name: "setzi.a", op: I("setzi.a", 3, 0x12345), want: []regAt{wantA(3, 0x12345)}},
		{name: "sort4x16lo.a", a: regsA(0, 0x11112222, 0x33334444), op: I("sort4x16lo.a", 0, 1, 2), want: []regAt{wantA(0, 0x44442222)}},
		{name: "sort4x16hi.a", a: regsA(0, 0x11112222, 0x33334444), op: I("sort4x16hi.a", 0, 1, 2), want: []regAt{wantA(0, 0x33331111)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTile(0)
			w := &tl.Workers[1]
			copy(w.A[:], tc.a)
			w.CSR[csrTAS] = fb(tc.tas)
			runWorker(t, tl, 1, tc.op, I("exitz", mzero))
			for _, r := range tc.want {
				if w.A[r.r] != r.v {
					t.Errorf("$a%d = 0x%08x, want 0x%08x", r.r, w.A[r.r], r.v)
				}
			}
		})
	}
}

func TestF64ToF16(t *testing.T) {
	for _, x := range []float64{0, 1, -1, 0.1, 65504, 65519.99, 65520, 1e-8, 0x1p-24, 0x1p-25, 3 * 0x1p-26, 0x1p-14 * (1 - 0x1p-11), math.Inf(-1), 1.0009765625, 2049, 2051, -0.3333} {
		// For values exactly representable in f32 the reference rounding
		// f32 -> f16 is single and therefore correct.
		if float64(float32(x)) != x && !math.IsInf(x, 0) {
			continue
		}
		want := uint32(float16.Fromfloat32(float32(x)).Bits())
		if got := f64toh(x); got != want {
			t.Errorf("f64toh(%g) = 0x%04x, want 0x%04x", x, got, want)
		}
	}
	if f64toh(math.NaN())&0x7C00 != 0x7C00 {
		t.Error("NaN")
	}
}

func TestUrand64(t *testing.T) {
	tl := NewTile(0)
	w := &tl.Workers[0]
	runWorker(t, tl, 0, cat(seedPRNG(12345), []in{I("urand64", 0), I("urand64", 2), I("exitz", mzero)})...)
	// Reference: the public seed rule, then two xorshift128+ steps.
	var ref Context
	ref.seed(12345)
	a, b := ref.next64(), ref.next64()
	if uint64(w.A[0])|uint64(w.A[1])<<32 != a || uint64(w.A[2])|uint64(w.A[3])<<32 != b || a == b {
		t.Fatalf("urand64 %x %x, want %x %x", w.A[:2], w.A[2:4], a, b)
	}
	// Seed rule: $PRNG_0_1 = ^seed.
	if w.rng[0]>>32 == 0 {
		t.Fatal("state not advanced")
	}
}

// TestBundleReadsBeforeWrites checks that both instructions of a bundle
// read registers from before the bundle.
func TestBundleReadsBeforeWrites(t *testing.T) {
	tl := NewTile(0)
	w := &tl.Workers[0]
	w.A[0], w.A[4] = 5, 3
	tl.WriteWords(dataBase, []uint32{7, 0})
	runWorker(t, tl, 0,
		// main loads $a0 while aux reads it: aux sees the old 5.
		Co("ld32.a", 0, 14, mzero, 0), I("and.a", 1, 0, 0),
		// main stores $a4 while aux overwrites it: memory gets the old 3.
		Co("st32.a", 4, 14, mzero, 1), I("setzi.a", 4, 9),
		I("exitz", mzero))
	if w.A[1] != 5 || w.A[0] != 7 || w.A[4] != 9 {
		t.Fatalf("a0=%d a1=%d a4=%d, want 7 5 9", w.A[0], w.A[1], w.A[4])
	}
	if v, _ := tl.ReadWord(dataBase + 4); v != 3 {
		t.Fatalf("stored %d, want 3", v)
	}
}
