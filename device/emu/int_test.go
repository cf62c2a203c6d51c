package emu

import (
	"testing"
)

func TestIntegerALU(t *testing.T) {
	neg := func(v int32) uint32 { return uint32(v) }
	cases := []struct {
		name string
		a, b uint32
		op   in // operates on $m1, $m2 into $m3
		want uint32
	}{
		{"add", 5, 7, I("add", 3, 1, 2), 12},
		{"add.si", 5, 0, I("add.si", 3, 1, -6), neg(-1)},
		{"add.zi", 5, 0, I("add.zi", 3, 1, 0xFFFF), 0x10004},
		{"sub", 5, 7, I("sub", 3, 1, 2), neg(-2)},
		{"sub.si reverse", 0, 7, I("sub.si", 3, -1, 2), neg(-8)},
		{"sub.zi reverse", 0, 7, I("sub.zi", 3, 100, 2), 93},
		{"mul", neg(-3), 7, I("mul", 3, 1, 2), neg(-21)},
		{"mul.si", 6, 0, I("mul.si", 3, 1, -2), neg(-12)},
		{"and", 0xF0F0, 0xFF00, I("and", 3, 1, 2), 0xF000},
		{"and.zi", 0xF0F0, 0, I("and.zi", 3, 1, 0x0FF), 0xF0},
		{"andc", 0xF0F0, 0xFF00, I("andc", 3, 1, 2), 0x00F0},
		{"or", 0xF000, 0x000F, I("or", 3, 1, 2), 0xF00F},
		{"or.iz", 1, 0, I("or.iz", 3, 1, 0xABC00000), 0xABC00001},
		{"xor", 0xFF, 0x0F, I("xor", 3, 1, 2), 0xF0},
		{"shl", 1, 4, I("shl", 3, 1, 2), 16},
		{"shl 32", 1, 32, I("shl", 3, 1, 2), 0},
		{"shl.zi", 3, 0, I("shl.zi", 3, 1, 31), 0x80000000},
		{"shr", 0x80000000, 31, I("shr", 3, 1, 2), 1},
		{"shr.zi", 0xF0, 0, I("shr.zi", 3, 1, 4), 0xF},
		{"min signed", neg(-5), 3, I("min", 3, 1, 2), neg(-5)},
		{"max signed", neg(-5), 3, I("max", 3, 1, 2), 3},
		{"min.si", 4, 0, I("min.si", 3, 1, -1), neg(-1)},
		{"max.zi", neg(-4), 0, I("max.zi", 3, 1, 9), 9},
		{"cmpeq", 4, 4, I("cmpeq", 3, 1, 2), 1},
		{"cmpeq.si", neg(-4), 0, I("cmpeq.si", 3, 1, -4), 1},
		{"cmpne", 4, 4, I("cmpne", 3, 1, 2), 0},
		{"cmpult", 1, neg(-1), I("cmpult", 3, 1, 2), 1},
		{"cmpslt", 1, neg(-1), I("cmpslt", 3, 1, 2), 0},
		{"cmpslt.si", neg(-9), 0, I("cmpslt.si", 3, 1, -8), 1},
		{"cmpult.zi", 7, 0, I("cmpult.zi", 3, 1, 8), 1},
		{"sort4x16lo", 0x11112222, 0x33334444, I("sort4x16lo", 3, 1, 2), 0x44442222},
		{"sort4x16hi", 0x11112222, 0x33334444, I("sort4x16hi", 3, 1, 2), 0x33331111},
		{"setzi", 0, 0, I("setzi", 3, 0xFFFFF), 0xFFFFF},
		{"mzero reads zero", 9, 0, I("add", 3, 1, mzero), 9},
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

func TestWritesToZeroRegisterVanish(t *testing.T) {
	tl := runSup(t, I("setzi", mzero, 5), I("add", 3, mzero, mzero), I("sync", 3))
	if tl.Sup.M[3] != 0 || tl.Sup.M[mzero] != 0 {
		t.Fatalf("$mzero kept a value: m3=%d m15=%d", tl.Sup.M[3], tl.Sup.M[mzero])
	}
}

func TestBranches(t *testing.T) {
	// Each program counts in $m3 how often a loop body ran, or marks the
	// taken path. Addresses: supBase + 4*index.
	at := func(i int) int64 { return int64(supBase + 4*i) }
	cases := []struct {
		name string
		prog []in
		want uint32
	}{
		{"brnzdec runs count+1 times", []in{
			I("setzi", 1, 4),       // 0
			I("add.zi", 3, 3, 1),   // 1: body
			I("brnzdec", 1, at(1)), // 2
			I("sync", 3),           // 3
		}, 5},
		{"brz taken", []in{
			I("brz", mzero, at(3)), I("setzi", 3, 1), I("sync", 3), I("setzi", 3, 2), I("sync", 3),
		}, 2},
		{"brnz not taken", []in{
			I("brnz", mzero, at(3)), I("setzi", 3, 1), I("sync", 3), I("setzi", 3, 2), I("sync", 3),
		}, 1},
		{"brneg", []in{
			I("add.si", 1, mzero, -1), I("brneg", 1, at(4)), I("setzi", 3, 1), I("sync", 3), I("setzi", 3, 2), I("sync", 3),
		}, 2},
		{"brpos on zero not taken", []in{
			I("brpos", mzero, at(3)), I("setzi", 3, 1), I("sync", 3), I("setzi", 3, 2), I("sync", 3),
		}, 1},
		{"bri", []in{
			I("bri", at(2)), I("setzi", 3, 1), I("setzi", 3, 7), I("sync", 3),
		}, 7},
		{"call and br return", []in{
			I("call", 10, at(3)),   // 0
			I("add.zi", 3, 3, 100), // 1: after return
			I("sync", 3),           // 2
			I("setzi", 3, 5),       // 3: callee
			I("br", 10),            // 4
		}, 105},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := runSup(t, tc.prog...)
			if got := tl.Sup.M[3]; got != tc.want {
				t.Errorf("$m3 = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestLoadStore(t *testing.T) {
	tl := NewTile(0)
	if err := tl.WriteWords(dataBase, []uint32{10, 20, 30, 40, 50, 60, 70, 80}); err != nil {
		t.Fatal(err)
	}
	if err := tl.WriteWords(ilvBase, []uint32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	// $m14 = dataBase: StartWorker passes it as the vertex base.
	runWorker(t, tl, 0, cat(setM(10, ilvBase), []in{
		I("setzi", 2, 8),
		I("ld32", 1, 14, 2, 1),         // m1 = mem[d+8+4] = 40
		I("setzi", 4, 1),               //
		I("ld32.r", 3, 14, 2, 4),       // m3 = mem[d+8+4*1] = 40
		I("st32", 1, 14, mzero, 8),     // mem[d+32] = 40
		I("ld32.a", 0, 14, mzero, 4),   // a0 = mem[d+16] = 50
		I("ld64", 4, 14, mzero, 1),     // a4:5 = mem[d+8] = 30, 40
		I("st64", 4, 14, mzero, 5),     // mem[d+40] = 30, 40
		I("setzi", 5, 0),               // ptr
		I("ld32step.si", 6, 14, 5, 2),  // m6 = mem[d+0] = 10; ptr = 8
		I("ld32step.si", 7, 14, 5, -1), // m7 = mem[d+8] = 30; ptr = 4
		I("st32step", 7, 14, 5, 1),     // mem[d+4] = 30; ptr = 8
		I("setzi", 9, 2),               //
		I("ld32step", 8, 14, 5, 9),     // m8 = mem[d+8] = 30; ptr = 16
		I("ld64step", 6, 14, 5, 1),     // a6:7 = 50, 60; ptr = 24
		I("st64step", 6, 14, 5, 1),     // mem[d+24] = 50, 60; ptr = 32
		I("ld32step.a", 8, 14, 5, -2),  // a8 = mem[d+32] = 40; ptr = 24
		I("st32step.a", 8, 14, 5, 0),   // mem[d+24] = 40
		I("ld128", 8, 10, mzero, 0),    // a8:11 = 1, 2, 3, 4
		I("exitz", mzero),
	})...)
	w := &tl.Workers[0]
	checkRegs(t, "m", w.M[:], map[int]uint32{1: 40, 3: 40, 5: 24, 6: 10, 7: 30, 8: 30})
	checkRegs(t, "a", w.A[:], map[int]uint32{0: 50, 4: 30, 5: 40, 6: 50, 7: 60, 8: 1, 9: 2, 10: 3, 11: 4, 14: 0, 15: 0})
	want := []uint32{10, 30, 30, 40, 50, 60, 40, 60, 40, 0, 30, 40}
	for i, v := range want {
		got, _ := tl.ReadWord(dataBase + uint32(4*i))
		if got != v {
			t.Errorf("mem[d+%d] = %d, want %d", 4*i, got, v)
		}
	}
}

func checkRegs(t *testing.T, file string, regs []uint32, want map[int]uint32) {
	t.Helper()
	for r, v := range want {
		if regs[r] != v {
			t.Errorf("$%s%d = %d (0x%x), want %d", file, r, regs[r], regs[r], v)
		}
	}
}
