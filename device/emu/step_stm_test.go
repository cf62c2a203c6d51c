package emu

import "testing"

// The register-stride step forms and stm32 (rows added for the LLVM
// Colossus operand forms) execute as their hover text says: the access at
// base + ptr, then ptr += access size * stride (signed); stm32 stores at
// base + 4*offset.
func TestStepRegisterStrideAndStm32(t *testing.T) {
	tl := NewTile(0)
	if err := tl.WriteWords(dataBase, []uint32{10, 20, 30, 40, 50, 60, 70, 80}); err != nil {
		t.Fatal(err)
	}
	// $m14 = dataBase: StartWorker passes it as the vertex base.
	runWorker(t, tl, 0, cat([]in{
		I("setzi", 5, 0),              // ptr
		I("setzi", 9, 2),              // stride 2
		I("ld64step.r", 0, 14, 5, 9),  // a0:1 = 10, 20; ptr = 16
		I("ld32step.ar", 2, 14, 5, 9), // a2 = mem[d+16] = 50; ptr = 24
	}, setM(9, 0xFFFFFFFF), []in{ // stride -1
		I("st32step.ar", 2, 14, 5, 9), // mem[d+24] = 50; ptr = 20
		I("setzi", 5, 8),
		I("setzi", 9, 1),
		I("st64step.r", 0, 14, 5, 9), // mem[d+8] = 10, 20; ptr = 16
		I("setzi", 6, 77),
		I("setzi", 7, 7),
		I("stm32", 6, 14, 7), // mem[d+28] = 77
		I("exitz", mzero),
	})...)
	w := &tl.Workers[0]
	checkRegs(t, "m", w.M[:], map[int]uint32{5: 16})
	checkRegs(t, "a", w.A[:], map[int]uint32{0: 10, 1: 20, 2: 50})
	for i, v := range []uint32{10, 20, 10, 20, 50, 60, 50, 77} {
		if got, _ := tl.ReadWord(dataBase + uint32(4*i)); got != v {
			t.Errorf("mem[d+%d] = %d, want %d", 4*i, got, v)
		}
	}
}

// Broadcast sources: :B uses one f32 in both lanes, :BL / :BU one f16
// half in every lane.
func TestBroadcastSources(t *testing.T) {
	tl := NewTile(0)
	h := func(lo, hi float32) uint32 { return pack16(lo, hi) }
	tl.Workers[0].A[4] = fb(3)
	tl.Workers[0].A[6], tl.Workers[0].A[7] = fb(2), fb(-5)
	tl.Workers[0].A[8] = h(1.5, -0.25)
	tl.Workers[0].A[9] = h(2, 4)
	runWorker(t, tl, 0,
		I("f32v2mul.b", 0, 4, 6),  // a0:1 = 3*2, 3*-5
		I("f16v2add.bl", 2, 8, 9), // a2 = 1.5+2, 1.5+4
		I("f16v2add.bu", 3, 8, 9), // a3 = -0.25+2, -0.25+4
		I("exitz", mzero))
	w := &tl.Workers[0]
	checkRegs(t, "a", w.A[:], map[int]uint32{0: fb(6), 1: fb(-15), 2: h(3.5, 5.5), 3: h(1.75, 3.75)})
}
