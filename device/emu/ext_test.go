package emu

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/isa"
)

// Tests for the rows of isa/rows_ext.go. Expected values are computed here
// by hand or by an independent path (float64 arithmetic, then x448/float16
// or a float32 conversion), never by calling the handlers' helpers.

func TestExtIntegerMRF(t *testing.T) {
	neg := func(v int32) uint32 { return uint32(v) }
	cases := []struct {
		name string
		a, b uint32
		op   in // operates on $m1, $m2 into $m3
		want uint32
	}{
		{"bitrev8", 0x01804F12, 0, I("bitrev8", 3, 1), 0x8001F248},
		{"cms zero", 0, 0, I("cms", 3, 1), 31},
		{"cms minus one", neg(-1), 0, I("cms", 3, 1), 31},
		{"cms 0x40000000", 0x40000000, 0, I("cms", 3, 1), 0},
		{"cms 0x00ff0000", 0x00FF0000, 0, I("cms", 3, 1), 7},
		{"cms 0xfff00000", 0xFFF00000, 0, I("cms", 3, 1), 11},
		{"clz zero", 0, 0, I("clz", 3, 1), 32},
		{"clz one", 1, 0, I("clz", 3, 1), 31},
		{"clz top", 0x80000000, 0, I("clz", 3, 1), 0},
		{"popc", 0xF00F0001, 0, I("popc", 3, 1), 9},
		{"abs negative", neg(-42), 0, I("abs", 3, 1), 42},
		{"abs positive", 42, 0, I("abs", 3, 1), 42},
		{"abs most negative", 0x80000000, 0, I("abs", 3, 1), 0x80000000},
		{"roll16", 0x11112222, 0x33334444, I("roll16", 3, 1, 2), 0x44441111},
		{"xnor", 0xF0F0FFFF, 0x0FF0FFFF, I("xnor", 3, 1, 2), 0x00FFFFFF},
		{"shrs", neg(-8), 1, I("shrs", 3, 1, 2), neg(-4)},
		{"shrs 40", neg(-8), 40, I("shrs", 3, 1, 2), neg(-1)},
		{"shrs.zi", 0x80000000, 0, I("shrs.zi", 3, 1, 31), neg(-1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := runSup(t, cat(setM(1, tc.a), setM(2, tc.b), []in{tc.op, I("sync", 3)})...)
			if got := tl.Sup.M[3]; got != tc.want {
				t.Errorf("$m3 = 0x%x, want 0x%x", got, tc.want)
			}
		})
	}
}

// narrowData: bytes 01 80 FE FF 80 01 80 7F at dataBase.
var narrowData = []uint32{0xFFFE8001, 0x7F800180}

func TestExtNarrowLoads(t *testing.T) {
	neg := func(v int32) uint32 { return uint32(v) }
	cases := []struct {
		name    string
		op      in // $m1 = dataBase, $m2 = 2 (delta, offset, ptr or step); result in $m3
		want    uint32
		wantPtr uint32 // $m2 after the instruction
	}{
		{"ldz16 imm", I("ldz16", 3, 1, mzero, 1), 0xFFFE, 2},
		{"lds16 imm", I("lds16", 3, 1, mzero, 1), neg(-2), 2},
		{"ldz8 imm", I("ldz8", 3, 1, mzero, 1), 0x80, 2},
		{"lds8 imm", I("lds8", 3, 1, mzero, 1), neg(-128), 2},
		{"lds8 imm positive", I("lds8", 3, 1, mzero, 7), 0x7F, 2},
		{"ldz16 delta", I("ldz16", 3, 1, 2, 1), 0x0180, 2},
		{"ldz16.r", I("ldz16.r", 3, 1, mzero, 2), 0x0180, 2},
		{"lds16.r", I("lds16.r", 3, 1, mzero, mzero), 0xFFFF8001, 2},
		{"ldz8.r", I("ldz8.r", 3, 1, 2, 2), 0x80, 2},
		{"lds8.r", I("lds8.r", 3, 1, 2, 2), neg(-128), 2},
		{"ldz16step.si", I("ldz16step.si", 3, 1, 2, 2), 0xFFFE, 6},
		{"lds16step.si", I("lds16step.si", 3, 1, 2, -1), neg(-2), 0},
		{"ldz8step.si", I("ldz8step.si", 3, 1, 2, 3), 0xFE, 5},
		{"lds8step.si", I("lds8step.si", 3, 1, 2, -1), neg(-2), 1},
		{"ldz16step", I("ldz16step", 3, 1, 2, 2), 0xFFFE, 6},
		{"lds8step", I("lds8step", 3, 1, 2, 2), neg(-2), 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTile(0)
			if err := tl.WriteWords(dataBase, narrowData); err != nil {
				t.Fatal(err)
			}
			load(t, tl, supBase, cat(setM(1, dataBase), setM(2, 2), []in{tc.op, I("sync", 3)})...)
			tl.Start(supBase)
			if res, err := tl.Run(1 << 20); err != nil || res.Reason != StopSync {
				t.Fatalf("run: %v %v", res, err)
			}
			if got := tl.Sup.M[3]; got != tc.want {
				t.Errorf("$m3 = 0x%x, want 0x%x", got, tc.want)
			}
			if got := tl.Sup.M[2]; got != tc.wantPtr {
				t.Errorf("$m2 = 0x%x, want 0x%x", got, tc.wantPtr)
			}
		})
	}
}

// A 16-bit access at an odd address faults (natural alignment, public
// text), in every addressing form.
func TestExtNarrowLoadFaults(t *testing.T) {
	for _, op := range []in{I("ldz16", 3, 1, 2, 0), I("lds16step.si", 3, 1, 2, 1), I("ldz16.r", 3, 1, 2, mzero)} {
		tl := NewTile(0)
		load(t, tl, supBase, cat(setM(1, dataBase), setM(2, 1), []in{op, I("sync", 3)})...)
		tl.Start(supBase)
		f := faultOf(t, tl)
		if f.Kind != FaultAccess || !strings.Contains(f.Reason, "misaligned") {
			t.Errorf("%s: fault %v, want a misaligned access", op.id, f)
		}
	}
}

func TestExtWorkerMemory(t *testing.T) {
	tl := NewTile(0)
	w := &tl.Workers[0]
	if err := tl.WriteWords(dataBase, narrowData); err != nil {
		t.Fatal(err)
	}
	quad := []uint32{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}
	if err := tl.WriteWords(ilvBase, quad); err != nil {
		t.Fatal(err)
	}
	// $m14 is the vertex base (dataBase) in a started worker.
	runWorker(t, tl, 0, cat(
		setM(1, 2), setM(2, 0), setM(3, ilvBase), setM(4, 0), setM(5, 1),
		[]in{
			I("ldb16", 0, 14, mzero, 1),   // halves at +2: 0xFFFE
			I("ldb16.r", 1, 14, mzero, 1), // +2*$m1 = +4: 0x0180
			I("ldb16step", 2, 14, 2, 3),   // +0: 0x8001, $m2 += 6
			I("ldb16step.r", 3, 14, 2, 5), // +6: 0x7F80, $m2 += 2*$m5 = 8
			I("ld128step", 4, 3, 4, 1),    // quad at ilvBase, $m4 += 16
			I("ld128step.r", 8, 3, 4, 5),  // quad at ilvBase+16, $m4 += 16
			I("stm32step", 1, 14, 5),      // mem32[dataBase] = 2, $m14 += 4
			I("stm32step", 5, 14, 5),      // mem32[dataBase+4] = 1
			I("exitz", mzero),
		})...)
	want := []uint32{0xFFFEFFFE, 0x01800180, 0x80018001, 0x7F807F80, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}
	for i, v := range want {
		if w.A[i] != v {
			t.Errorf("$a%d = 0x%08x, want 0x%08x", i, w.A[i], v)
		}
	}
	if w.M[2] != 8 || w.M[4] != 32 || w.M[14] != dataBase+8 {
		t.Errorf("$m2 = %d, $m4 = %d, $m14 = 0x%x; want 8, 32, 0x%x", w.M[2], w.M[4], w.M[14], dataBase+8)
	}
	for i, v := range []uint32{2, 1} {
		if got, _ := tl.ReadWord(dataBase + uint32(4*i)); got != v {
			t.Errorf("stored word %d = %d, want %d", i, got, v)
		}
	}
}

func TestExtLd128StepNeedsInterleaved(t *testing.T) {
	tl := NewTile(0)
	load(t, tl, workerBase, I("ld128step", 0, 14, mzero, 1), I("exitz", mzero))
	if err := tl.StartWorker(0, workerBase, dataBase); err != nil {
		t.Fatal(err)
	}
	if f := faultOf(t, tl); f.Kind != FaultInterleave {
		t.Fatalf("fault %v, want interleave", f)
	}
}

func TestExtExitNegPos(t *testing.T) {
	for _, tc := range []struct {
		id   string
		v    uint32
		want uint32
	}{
		{"exitneg", 0xFFFFFFFF, 1}, {"exitneg", 0, 0}, {"exitneg", 5, 0},
		{"exitpos", 5, 1}, {"exitpos", 0, 0}, {"exitpos", 0x80000000, 0},
	} {
		tl := NewTile(0)
		runWorker(t, tl, 2, cat(setM(1, tc.v), []in{I(tc.id, 1)})...)
		if got := tl.Workers[2].ExitStatus; got != tc.want {
			t.Errorf("%s 0x%x: status %d, want %d", tc.id, tc.v, got, tc.want)
		}
	}
}

// h64 is the f16 value of a float64 computed independently (via float32,
// exact for the inputs used here, then x448/float16).
func h64(x float64) uint32 { return hbits(x) }

func TestExtFloat(t *testing.T) {
	negz := uint32(0x80000000)
	const t16 = 0xFFFF
	cases := []struct {
		name string
		a    []uint32
		op   in
		want []regAt
		fp   uint32 // $FP_CTL
	}{
		{name: "f16v2sub", a: regsA(0, hh(1.5, -2), hh(0.25, 3)), op: I("f16v2sub", 0, 1, 2), want: []regAt{wantA(0, hh(1.25, -5))}},
		{name: "f16v4sub", a: regsA(0, 0, hh(1, 2), hh(3, 4), hh(1, 1), hh(8, 1)), op: I("f16v4sub", 0, 2, 4),
			want: []regAt{wantA(0, hh(0, 1)), wantA(1, hh(-5, 3))}},
		{name: "f32v2sub", a: regsA(0, 0, fb(1), fb(2), fb(10), fb(0.5)), op: I("f32v2sub", 0, 2, 4), want: []regAt{wantA(0, fb(-9)), wantA(1, fb(1.5))}},
		{name: "f16v2max NaN gives other", a: regsA(0, 0x7E00|h(3)<<16, hh(-1, 2)), op: I("f16v2max", 0, 1, 2), want: []regAt{wantA(0, hh(-1, 3))}},
		{name: "f16v2min", a: regsA(0, hh(5, -3), hh(-1, 2)), op: I("f16v2min", 0, 1, 2), want: []regAt{wantA(0, hh(-1, -3))}},
		{name: "f16v4max", a: regsA(0, 0, hh(1, 9), hh(3, -4), hh(2, 2), hh(2, -8)), op: I("f16v4max", 0, 2, 4),
			want: []regAt{wantA(0, hh(2, 9)), wantA(1, hh(3, -4))}},
		{name: "f16v4min", a: regsA(0, 0, hh(1, 9), hh(3, -4), hh(2, 2), hh(2, -8)), op: I("f16v4min", 0, 2, 4),
			want: []regAt{wantA(0, hh(1, 2)), wantA(1, hh(2, -8))}},
		{name: "f32min", a: regsA(0, fb(1.5), fb(-4)), op: I("f32min", 0, 1, 2), want: []regAt{wantA(0, fb(-4))}},
		{name: "f32min zeros", a: regsA(0, 0, negz), op: I("f32min", 0, 1, 2), want: []regAt{wantA(0, negz)}},
		{name: "f32min NaN", a: regsA(0, nan32(), fb(2)), op: I("f32min", 0, 1, 2), want: []regAt{wantA(0, fb(2))}},
		{name: "f32v2min", a: regsA(0, 0, fb(1), fb(25), fb(10), fb(20)), op: I("f32v2min", 0, 2, 4), want: []regAt{wantA(0, fb(1)), wantA(1, fb(20))}},
		{name: "f16v2absadd", a: regsA(0, hh(-1.5, 2), hh(0.25, -3)), op: I("f16v2absadd", 0, 1, 2), want: []regAt{wantA(0, hh(1.75, 5))}},
		{name: "f16v4absadd", a: regsA(0, 0, hh(-1, -2), hh(3, 4), hh(-1, 1), hh(1, -1)), op: I("f16v4absadd", 0, 2, 4),
			want: []regAt{wantA(0, hh(2, 3)), wantA(1, hh(4, 5))}},
		{name: "f32absadd", a: regsA(0, fb(-1.25), fb(-2)), op: I("f32absadd", 0, 1, 2), want: []regAt{wantA(0, fb(3.25))}},
		{name: "f32v2absadd", a: regsA(0, 0, fb(-1), fb(2), fb(-10), fb(-20)), op: I("f32v2absadd", 0, 2, 4), want: []regAt{wantA(0, fb(11)), wantA(1, fb(22))}},
		{name: "f16v2absmax", a: regsA(0, hh(-7, 2), hh(3, -5)), op: I("f16v2absmax", 0, 1, 2), want: []regAt{wantA(0, hh(7, 5))}},
		{name: "f16v4absmax", a: regsA(0, 0, hh(-7, 2), hh(1, 0), hh(3, -5), hh(-2, 0)), op: I("f16v4absmax", 0, 2, 4),
			want: []regAt{wantA(0, hh(7, 5)), wantA(1, hh(2, 0))}},
		{name: "f32absmax", a: regsA(0, fb(-7), fb(3)), op: I("f32absmax", 0, 1, 2), want: []regAt{wantA(0, fb(7))}},
		{name: "f32v2absmax", a: regsA(0, 0, fb(-7), fb(1), fb(3), fb(-9)), op: I("f32v2absmax", 0, 2, 4), want: []regAt{wantA(0, fb(7)), wantA(1, fb(9))}},
		{name: "f16v2clamp", a: regsA(0, hh(-3, 0.5), hh(-1, 1)), op: I("f16v2clamp", 0, 1, 2), want: []regAt{wantA(0, hh(-1, 0.5))}},
		{name: "f16v4clamp", a: regsA(0, 0, hh(-3, 0.5), hh(7, 1), hh(0, 2)), op: I("f16v4clamp", 0, 2, 4),
			want: []regAt{wantA(0, hh(0, 0.5)), wantA(1, hh(2, 1))}},
		{name: "f32clamp", a: regsA(0, fb(9), fb(-1), fb(4)), op: I("f32clamp", 0, 1, 2), want: []regAt{wantA(0, fb(4))}},
		{name: "f32clamp NaN gives the bound", a: regsA(0, nan32(), fb(-1), fb(4)), op: I("f32clamp", 0, 1, 2), want: []regAt{wantA(0, fb(-1))}},
		{name: "f32v2clamp", a: regsA(0, 0, fb(-9), fb(2), fb(-1), fb(4)), op: I("f32v2clamp", 0, 2, 4), want: []regAt{wantA(0, fb(-1)), wantA(1, fb(2))}},
		{name: "f32div", a: regsA(0, fb(1), fb(3)), op: I("f32div", 0, 1, 2), want: []regAt{wantA(0, fb(float32(1.0/3.0)))}},
		{name: "f32div by zero", a: regsA(0, fb(-1), 0), op: I("f32div", 0, 1, 2), want: []regAt{wantA(0, fb(float32(math.Inf(-1))))}},
		{name: "and64", a: regsA(0, 0, 0xFF00, 0xF0, 0x0FF0, 0x30), op: I("and64", 0, 2, 4), want: []regAt{wantA(0, 0x0F00), wantA(1, 0x30)}},
		{name: "andc64", a: regsA(0, 0, 0xFF00, 0xF0, 0x0FF0, 0x30), op: I("andc64", 0, 2, 4), want: []regAt{wantA(0, 0xF000), wantA(1, 0xC0)}},
		{name: "or64", a: regsA(0, 0, 0xFF00, 0xF0, 0x0FF0, 0x30), op: I("or64", 0, 2, 4), want: []regAt{wantA(0, 0xFFF0), wantA(1, 0xF0)}},
		{name: "not64", a: regsA(0, 0, 0x0F0F0F0F, 0), op: I("not64", 0, 2), want: []regAt{wantA(0, 0xF0F0F0F0), wantA(1, 0xFFFFFFFF)}},
		{name: "roll16.a", a: regsA(0, 0x11112222, 0x33334444), op: I("roll16.a", 0, 1, 2), want: []regAt{wantA(0, 0x44441111)}},
		{name: "roll32", a: regsA(0, 0, 1, 2, 3, 4), op: I("roll32", 0, 2, 4), want: []regAt{wantA(0, 2), wantA(1, 3)}},
		{name: "sort4x32lo", a: regsA(0, 0, 1, 2, 3, 4), op: I("sort4x32lo", 0, 2, 4), want: []regAt{wantA(0, 1), wantA(1, 3)}},
		{name: "sort4x32hi", a: regsA(0, 0, 1, 2, 3, 4), op: I("sort4x32hi", 0, 2, 4), want: []regAt{wantA(0, 2), wantA(1, 4)}},
		{name: "f32fromi32", a: regsA(0, uint32(0xFFFFFFF9)), op: I("f32fromi32", 0, 1), want: []regAt{wantA(0, fb(-7))}},
		{name: "f32fromi32 rounds to even", a: regsA(0, 16777219), op: I("f32fromi32", 0, 1), want: []regAt{wantA(0, fb(16777220))}},
		{name: "f32fromui32", a: regsA(0, 0xFFFFFFFF), op: I("f32fromui32", 0, 1), want: []regAt{wantA(0, fb(4294967296))}},
		{name: "f16v2sum", a: regsA(0, hh(1.5, 2048)), op: I("f16v2sum", 0, 1), want: []regAt{wantA(0, fb(2049.5))}},
		{name: "f16v4sum", a: regsA(0, 0, hh(1, 2), hh(-3, 0.5)), op: I("f16v4sum", 0, 2), want: []regAt{wantA(0, fb(3)), wantA(1, fb(-2.5))}},
		{name: "f16v4maxc", a: regsA(0, 0, hh(1, 2), hh(-3, -4)), op: I("f16v4maxc", 0, 2), want: []regAt{wantA(0, hh(2, -3))}},
		{name: "f32v4tof16", a: regsA(0, 0, 0, 0, fb(1.5), fb(-2), fb(65504), fb(1+0x1p-11)), op: I("f32v4tof16", 0, 4),
			want: []regAt{wantA(0, hh(1.5, -2)), wantA(1, hh(65504, 1))}},
		{name: "f16v2cmpeq", a: regsA(0, hh(1, 2), hh(1, 3)), op: I("f16v2cmpeq", 0, 1, 2), want: []regAt{wantA(0, t16)}},
		{name: "f16v2cmpne NaN", a: regsA(0, 0x7E00|h(2)<<16, 0x7E00|h(2)<<16), op: I("f16v2cmpne", 0, 1, 2), want: []regAt{wantA(0, t16)}},
		{name: "f16v2cmplt", a: regsA(0, hh(1, 5), hh(2, 3)), op: I("f16v2cmplt", 0, 1, 2), want: []regAt{wantA(0, t16)}},
		{name: "f16v2cmple", a: regsA(0, hh(2, 5), hh(2, 3)), op: I("f16v2cmple", 0, 1, 2), want: []regAt{wantA(0, t16)}},
		{name: "f16v2cmpgt", a: regsA(0, hh(2, 5), hh(2, 3)), op: I("f16v2cmpgt", 0, 1, 2), want: []regAt{wantA(0, t16<<16)}},
		{name: "f16v2cmpge", a: regsA(0, hh(2, 1), hh(2, 3)), op: I("f16v2cmpge", 0, 1, 2), want: []regAt{wantA(0, t16)}},
		{name: "f16v4cmpeq", a: regsA(0, 0, hh(1, 2), hh(0, 4), hh(1, 3), hh(float32(math.Copysign(0, -1)), 4)), op: I("f16v4cmpeq", 0, 2, 4),
			want: []regAt{wantA(0, t16), wantA(1, 0xFFFFFFFF)}},
		{name: "f16v4cmplt", a: regsA(0, 0, hh(1, 2), hh(0, 4), hh(2, 2), hh(1, 4)), op: I("f16v4cmplt", 0, 2, 4),
			want: []regAt{wantA(0, t16), wantA(1, t16)}},
		{name: "f32cmpeq", a: regsA(0, fb(2), fb(2)), op: I("f32cmpeq", 0, 1, 2), want: []regAt{wantA(0, 0xFFFFFFFF)}},
		{name: "f32cmpeq zeros", a: regsA(0, 0, negz), op: I("f32cmpeq", 0, 1, 2), want: []regAt{wantA(0, 0xFFFFFFFF)}},
		{name: "f32cmpeq NaN", a: regsA(0, nan32(), nan32()), op: I("f32cmpeq", 0, 1, 2), want: []regAt{wantA(0, 0)}},
		{name: "f32cmpge NaN", a: regsA(0, nan32(), fb(1)), op: I("f32cmpge", 0, 1, 2), want: []regAt{wantA(0, 0)}},
		{name: "f32cmpgt", a: regsA(0, fb(3), fb(1)), op: I("f32cmpgt", 0, 1, 2), want: []regAt{wantA(0, 0xFFFFFFFF)}},
		{name: "f32cmple", a: regsA(0, fb(3), fb(1)), op: I("f32cmple", 0, 1, 2), want: []regAt{wantA(0, 0)}},
		{name: "f32cmplt", a: regsA(0, fb(-3), fb(1)), op: I("f32cmplt", 0, 1, 2), want: []regAt{wantA(0, 0xFFFFFFFF)}},
		{name: "f32cmpne", a: regsA(0, fb(-3), fb(1)), op: I("f32cmpne", 0, 1, 2), want: []regAt{wantA(0, 0xFFFFFFFF)}},
		{name: "f32v2cmpeq", a: regsA(0, 0, fb(1), fb(2), fb(1), fb(3)), op: I("f32v2cmpeq", 0, 2, 4), want: []regAt{wantA(0, 0xFFFFFFFF), wantA(1, 0)}},
		{name: "f32v2cmpgt", a: regsA(0, 0, fb(1), fb(4), fb(1), fb(3)), op: I("f32v2cmpgt", 0, 2, 4), want: []regAt{wantA(0, 0), wantA(1, 0xFFFFFFFF)}},
		// Broadcast sources (bcastRows): $a1 holds 2.0 low, 5.0 high.
		{name: "f16v4cmpgt.bl", a: regsA(0, hh(2, 5), hh(1, 2), hh(3, -1)), op: I("f16v4cmpgt.bl", 4, 1, 2),
			want: []regAt{wantA(4, t16), wantA(5, t16<<16)}},
		{name: "f16v4cmple.bu", a: regsA(0, hh(2, 5), hh(5, 4), hh(6, 9)), op: I("f16v4cmple.bu", 4, 1, 2),
			want: []regAt{wantA(4, t16), wantA(5, t16|t16<<16)}},
		{name: "f16v4sub.bu", a: regsA(0, hh(2, 5), hh(1, 2), hh(3, -1)), op: I("f16v4sub.bu", 4, 1, 2),
			want: []regAt{wantA(4, hh(4, 3)), wantA(5, hh(2, 6))}},
		{name: "f16v2sub.bl", a: regsA(0, hh(2, 5), hh(0.5, 4)), op: I("f16v2sub.bl", 4, 1, 2), want: []regAt{wantA(4, hh(1.5, -2))}},
		{name: "f16v2cmpeq.bu", a: regsA(0, hh(2, 5), hh(5, 4)), op: I("f16v2cmpeq.bu", 4, 1, 2), want: []regAt{wantA(4, t16)}},
		{name: "f32v2cmpgt.b", a: regsA(0, fb(2), fb(1), fb(3)), op: I("f32v2cmpgt.b", 4, 1, 2), want: []regAt{wantA(4, 0xFFFFFFFF), wantA(5, 0)}},
		{name: "f32v2sub.b", a: regsA(0, fb(2), fb(1), fb(3)), op: I("f32v2sub.b", 4, 1, 2), want: []regAt{wantA(4, fb(1)), wantA(5, fb(-1))}},
		{name: "f16v2exp2", a: regsA(0, hh(3, -1)), op: I("f16v2exp2", 0, 1), want: []regAt{wantA(0, hh(8, 0.5))}},
		{name: "f16v2ln", a: regsA(0, hh(1, 3)), op: I("f16v2ln", 0, 1), want: []regAt{wantA(0, h64(0)|h64(math.Log(3))<<16)}},
		{name: "f16v2log2", a: regsA(0, hh(0.25, 1024)), op: I("f16v2log2", 0, 1), want: []regAt{wantA(0, hh(-2, 10))}},
		{name: "f16v2sigm", a: regsA(0, hh(0, 2)), op: I("f16v2sigm", 0, 1), want: []regAt{wantA(0, h64(0.5)|h64(1/(1+math.Exp(-2)))<<16)}},
		{name: "f32exp2", a: regsA(0, fb(-3)), op: I("f32exp2", 0, 1), want: []regAt{wantA(0, fb(0.125))}},
		{name: "f32ln", a: regsA(0, fb(10)), op: I("f32ln", 0, 1), want: []regAt{wantA(0, fb(float32(math.Log(10))))}},
		{name: "f32ln zero", a: regsA(0, 0), op: I("f32ln", 0, 1), want: []regAt{wantA(0, fb(float32(math.Inf(-1))))}},
		{name: "f32log2", a: regsA(0, fb(1<<20)), op: I("f32log2", 0, 1), want: []regAt{wantA(0, fb(20))}},
		{name: "f32sigm", a: regsA(0, fb(1)), op: I("f32sigm", 0, 1), want: []regAt{wantA(0, fb(float32(1/(1+math.Exp(-1)))))}},
		{name: "f32tanh", a: regsA(0, fb(0.5)), op: I("f32tanh", 0, 1), want: []regAt{wantA(0, fb(float32(math.Tanh(0.5))))}},
		{name: "f32oorx", a: regsA(0, fb(0.25)), op: I("f32oorx", 0, 1), want: []regAt{wantA(0, fb(2))}},
		{name: "f32sqrt", a: regsA(0, fb(2)), op: I("f32sqrt", 0, 1), want: []regAt{wantA(0, fb(float32(math.Sqrt(2))))}},
		{name: "f32sqrt negative", a: regsA(0, fb(-1)), op: I("f32sqrt", 0, 1), want: []regAt{{0, 0}}}, // checked as NaN below
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTile(0)
			w := &tl.Workers[1]
			copy(w.A[:], tc.a)
			runWorker(t, tl, 1, tc.op, I("exitz", mzero))
			if tc.name == "f32sqrt negative" {
				if f := f32(w.A[0]); f == f {
					t.Errorf("sqrt(-1) = %v, want NaN", f)
				}
				return
			}
			for _, r := range tc.want {
				if w.A[r.r] != r.v {
					t.Errorf("$a%d = 0x%08x, want 0x%08x", r.r, w.A[r.r], r.v)
				}
			}
		})
	}
}

// f32v4tof16 follows $FP_CTL.ESR like f32v2tof16: with stochastic
// rounding on, a value halfway between two f16 lands on either.
func TestExtF32v4tof16Stochastic(t *testing.T) {
	seen := map[uint32]bool{}
	for seed := uint32(1); seed < 40 && len(seen) < 2; seed++ {
		a := regsA(0, 0, 0, 0, fb(1+0x1p-11), fb(1), fb(1), fb(1))
		tl := srWorker(t, fpCtlESR, a, cat(seedPRNG(seed), []in{I("f32v4tof16", 0, 4), I("exitz", mzero)})...)
		seen[tl.Workers[0].A[0]&0xFFFF] = true
	}
	if !seen[h(1)] || !seen[h(1)+1] {
		t.Fatalf("stochastic rounding gave %v, want both neighbours of 1+2^-11", seen)
	}
}

func TestExtUrand32(t *testing.T) {
	tl := NewTile(0)
	runWorker(t, tl, 0, cat(seedPRNG(777), []in{I("urand32", 0), I("urand32", 1), I("exitz", mzero)})...)
	var ref Context
	ref.seed(777)
	a, b := uint32(ref.next64()), uint32(ref.next64())
	if w := tl.Workers[0].A; w[0] != a || w[1] != b {
		t.Fatalf("urand32 %x %x, want %x %x", w[0], w[1], a, b)
	}
}

// Every row whose Doc says the public text leaves its result open faults
// when executed, with "not emulated: MNEMONIC" and the usual fault
// context; every other new row has a handler.
func TestExtNotEmulated(t *testing.T) {
	n := 0
	for _, row := range isa.Table {
		if !strings.Contains(row.Doc, notEmulatedMark) {
			if handlers[row.Index()].fn == nil {
				t.Errorf("%s: no handler (%s)", row.ID(), unbound[row.Index()])
			}
			continue
		}
		n++
		vals := make([]int64, len(row.Operands))
		for i := range row.Operands {
			lo, _ := row.Operands[i].Range()
			vals[i] = lo
		}
		w, err := row.Encode(vals, false)
		if err != nil {
			t.Fatalf("%s: %v", row.ID(), err)
		}
		tl := NewTile(0)
		if err := tl.WriteWords(workerBase, w); err != nil {
			t.Fatal(err)
		}
		if err := tl.StartWorker(3, workerBase, dataBase); err != nil {
			t.Fatal(err)
		}
		_, err = tl.Run(1 << 16)
		var f *Fault
		if !errors.As(err, &f) {
			t.Errorf("%s: ran without a fault (%v)", row.ID(), err)
			continue
		}
		msg := f.Error()
		if f.Kind != FaultNoEmulation || !strings.HasPrefix(f.Reason, "not emulated: "+row.Mnemonic+" (") ||
			!strings.Contains(msg, "tile 0 worker 3") || !strings.Contains(msg, "pc 0x4e000") || !strings.Contains(msg, row.Mnemonic) {
			t.Errorf("%s: fault %q", row.ID(), msg)
		}
	}
	if n < 40 {
		t.Errorf("only %d not-emulated rows: the Doc marks changed?", n)
	}
}

// TestExtAssembled assembles poplibs-style text using new mnemonics (the
// misaligned half-load idiom of popops' reductions: ldb16, ld32step,
// roll16; a compare used as a mask; a zero-extending step load) and runs
// it.
func TestExtAssembled(t *testing.T) {
	src := `
	.section .text.ext, "ax"
	.worker
	ldb16 $a0, $m14, $mzero, 1
	setzi $m1, 4
	ld32step $a1, $m14, $m1+=, 1
	roll16 $a0, $a0, $a1
	f16v2cmpgt $a2, $a0, $azero
	and $a3, $a0, $a2
	setzi $m3, 2
	ldz16step $m2, $m14, $m3+=, 1
	exitpos $m2
`
	obj, err := asm.Assemble("ext.S", []byte(src), asm.Options{})
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	var code []byte
	for _, s := range obj.Sections {
		if s.Name == ".text.ext" {
			code = s.Data
		}
	}
	tl := NewTile(0)
	// f16 halves at dataBase: pad, x0 = 1.5, x1 = -2, x2 = 3.
	tl.WriteWords(dataBase, []uint32{h(1.5) << 16, hh(-2, 3)})
	if err := tl.Write(workerBase, code); err != nil {
		t.Fatal(err)
	}
	tl.StartWorker(0, workerBase, dataBase)
	if res, err := tl.Run(1000); err != nil || res.Reason != StopIdle {
		t.Fatal(res, err)
	}
	w := &tl.Workers[0]
	if w.A[0] != hh(1.5, -2) || w.A[2] != 0xFFFF || w.A[3] != h(1.5) || w.M[2] != h(1.5) || w.M[3] != 4 || w.ExitStatus != 1 {
		t.Fatalf("a0=%08x a2=%08x a3=%08x m2=%x m3=%d status %d", w.A[0], w.A[2], w.A[3], w.M[2], w.M[3], w.ExitStatus)
	}
}

// atom copies $a bits unchanged; movnz copies only when its condition
// register is non-zero (popfix rows, docs/isa.md).
func TestAtomMovnz(t *testing.T) {
	for _, tc := range []struct {
		name       string
		a3, m1, m2 uint32 // $a3, the condition $m1, the source $m2
		op         in     // into $m4, which starts at 7
		want       uint32
	}{
		{"atom", 0xBF800000, 0, 0, I("atom", 4, 3), 0xBF800000},
		{"atom zero", 0, 0, 0, I("atom", 4, 3), 0},
		{"movnz taken", 0, 1, 0xDEAD, I("movnz", 4, 1, 2), 0xDEAD},
		{"movnz taken negative", 0, 0x80000000, 9, I("movnz", 4, 1, 2), 9},
		{"movnz not taken", 0, 0, 0xDEAD, I("movnz", 4, 1, 2), 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTile(0)
			runWorker(t, tl, 1, cat(
				setM(1, tc.m1), setM(2, tc.m2), setM(4, 7), setM(5, tc.a3),
				[]in{I("st32", 5, 14, mzero, 0), I("ld32.a", 3, 14, mzero, 0), tc.op, I("exitz", mzero)})...)
			if got := tl.Workers[1].M[4]; got != tc.want {
				t.Errorf("$m4 = 0x%x, want 0x%x", got, tc.want)
			}
		})
	}
}

// The register-offset worker loads and stores: address = base + delta +
// size*off, with off an $m register.
func TestRegisterOffsetMemory(t *testing.T) {
	tl := NewTile(0)
	w := &tl.Workers[0]
	quad := []uint32{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}
	if err := tl.WriteWords(ilvBase, quad); err != nil {
		t.Fatal(err)
	}
	runWorker(t, tl, 0, cat(
		setM(1, ilvBase), setM(2, 4), setM(3, 1), setM(5, 2),
		[]in{
			I("ld32.ar", 0, 1, 2, 3),      // ilvBase + 4 + 4: 0x33
			I("ld64.r", 2, 1, mzero, 3),   // ilvBase + 8: 0x33, 0x44
			I("ld128.r", 4, 1, mzero, 3),  // ilvBase + 16: 0x55..0x88
			I("st32.ar", 0, 14, mzero, 3), // mem32[dataBase + 4] = 0x33
			I("st64.r", 6, 14, mzero, 5),  // mem64[dataBase + 16] = 0x77, 0x88
			I("exitz", mzero),
		})...)
	want := []uint32{0x33, 0, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}
	for i, v := range want {
		if i != 1 && w.A[i] != v {
			t.Errorf("$a%d = 0x%08x, want 0x%08x", i, w.A[i], v)
		}
	}
	for addr, v := range map[uint32]uint32{dataBase + 4: 0x33, dataBase + 16: 0x77, dataBase + 20: 0x88} {
		if got, _ := tl.ReadWord(addr); got != v {
			t.Errorf("word at 0x%x = 0x%x, want 0x%x", addr, got, v)
		}
	}
}

// The zero-extended imm12 forms of or/and on $a registers.
func TestALogicZimm12(t *testing.T) {
	for _, tc := range []struct {
		op   in // on $a1 (0xF0F0F00F) into $a2
		want uint32
	}{
		{I("or.azi", 2, 1, 0x0F0), 0xF0F0F0FF},
		{I("and.azi", 2, 1, 0xFFF), 0x0000000F},
		{I("or.azi", 2, 1, 0), 0xF0F0F00F},
	} {
		tl := NewTile(0)
		runWorker(t, tl, 0, cat(setM(1, 0xF0F0F00F), []in{I("st32", 1, 14, mzero, 0), I("ld32.a", 1, 14, mzero, 0), tc.op, I("exitz", mzero)})...)
		if got := tl.Workers[0].A[2]; got != tc.want {
			t.Errorf("%s: $a2 = 0x%08x, want 0x%08x", tc.op.id, got, tc.want)
		}
	}
}

// The hover text's delta loads, assembled as poplibs writes them
// (popsparse SparseGatherElementWise.S: `ldd16b16 $a0, $indicesPtr++,
// $rInPtr, $delta@`): each loads data at base + the current delta, the
// next delta from the pointer, and advances the pointer.
func TestDeltaLoads(t *testing.T) {
	src := `
	.section .text.d, "ax"
	.worker
	add $m1, $m14, 0
	add $m2, $m14, 32
	setzi $m3, 8
	ldd16a32 $a0, $m1++, $m2, $m3@
	ldd16b16 $a1, $m1++, $m2, $m3@
	ldd16a64 $a2:3, $m1++, $m2, $m3@
	mov $m9, $m1
	add $m1, $m14, 8
	setzi $m3, 0xC0000
	ldd16v2a32 $a4, $m1++, $m2, $m3@
	mov $m10, $m3
	add $m1, $m14, 16
	ld64a32 $a5:7, $m1++, $m2, $m3
	exitz $mzero
`
	obj, err := asm.Assemble("d.S", []byte(src), asm.Options{})
	if err != nil {
		t.Fatalf("assemble: %v", err)
	}
	tl := NewTile(0)
	tl.WriteWords(dataBase, []uint32{
		0x00080004, 0x000C0000, 0x00100004, 0, // deltas (u16 4, 8, 0, 12), a delta pair (4, 16)
		0xAAAA0001, 0xAAAA0002, 0, 0, // a 64-bit value for ld64a32 at +16
		0x11111111, 0xBBBB2222, 0x33333333, 0x44444444, // data at base = +32
	})
	if err := tl.Write(workerBase, obj.Sections[len(obj.Sections)-1].Data); err != nil {
		t.Fatal(err)
	}
	tl.StartWorker(0, workerBase, dataBase)
	if res, err := tl.Run(1000); err != nil || res.Reason != StopIdle {
		t.Fatal(res, err)
	}
	w := &tl.Workers[0]
	want := []uint32{0x33333333, 0x22222222, 0x33333333, 0x44444444, 0x44444444, 0xBBBB2222, 0xAAAA0001, 0xAAAA0002}
	for i, v := range want {
		if w.A[i] != v {
			t.Errorf("$a%d = 0x%08x, want 0x%08x", i, w.A[i], v)
		}
	}
	// ldd16*: the pointer advanced by 2 per load, the delta register holds
	// the third delta (0); ldd16v2a32: +4 and the pair; ld64a32: +8, and
	// the delta register is only read.
	if w.M[9] != dataBase+6 || w.M[10] != 0x00100004 || w.M[1] != dataBase+24 || w.M[3] != 0x00100004 {
		t.Errorf("$m9 = 0x%x, $m10 = 0x%x, $m1 = 0x%x, $m3 = 0x%x", w.M[9], w.M[10], w.M[1], w.M[3])
	}
}

// A delta load whose data address is misaligned faults and writes no
// register.
func TestDeltaLoadFaults(t *testing.T) {
	tl := NewTile(0)
	tl.WriteWords(dataBase, []uint32{0x00000002})
	load(t, tl, workerBase, I("ldd16a32", 0, 1, 14, 3), I("exitz", mzero))
	w := &tl.Workers[0]
	if err := tl.StartWorker(0, workerBase, dataBase); err != nil {
		t.Fatal(err)
	}
	w.M[1], w.M[3] = dataBase, 2
	_, err := tl.Run(100)
	var f *Fault
	if !errors.As(err, &f) || f.Kind != FaultAccess || !strings.Contains(f.Reason, "misaligned") {
		t.Fatalf("fault %v, want a misaligned access", err)
	}
	if w.M[1] != dataBase || w.M[3] != 2 {
		t.Errorf("$m1 = 0x%x, $m3 = %d after the fault; want unchanged", w.M[1], w.M[3])
	}
}
