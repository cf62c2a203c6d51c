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
