package emu

import (
	"testing"

	"github.com/ipustack/ipustack/asm"
)

// TestAssembledWorker runs a worker program written as IPU21 assembly
// text (bundles, rpt, register pairs, post-increment). The assembler is
// developed in parallel; if it cannot assemble this text the test says so
// and skips rather than failing the emulator.
func TestAssembledWorker(t *testing.T) {
	src := `
	.section .text.loop, "ax"
	.worker
	.p2align 3
loop:
	setzi $m5, 0
	nop
	{ rpt 3, 0 ; fnop }
	{ ld64step $a0:1, $m14, $m5+=, 1 ; f32v2add $a2:3, $a2:3, $a0:1 }
	exitz $mzero
`
	obj, err := asm.Assemble("loop.S", []byte(src), asm.Options{})
	if err != nil {
		t.Skipf("assembler: %v", err)
	}
	var code []byte
	for _, s := range obj.Sections {
		if s.Name == ".text.loop" {
			code = s.Data
		}
	}
	if len(code) != 28 || len(obj.Sections[0].Relocs) > 0 {
		t.Skipf("assembler gave %d bytes for the loop", len(code))
	}
	tl := NewTile(0)
	tl.WriteWords(dataBase, []uint32{fb(1), fb(10), fb(2), fb(20), fb(3), fb(30)})
	if err := tl.Write(workerBase, code); err != nil {
		t.Fatal(err)
	}
	tl.StartWorker(0, workerBase, dataBase)
	if res, err := tl.Run(1000); err != nil || res.Reason != StopIdle {
		t.Fatal(res, err)
	}
	w := &tl.Workers[0]
	if f32(w.A[2]) != 3 || f32(w.A[3]) != 30 || w.M[5] != 24 {
		t.Fatalf("sums %v %v ptr %d", f32(w.A[2]), f32(w.A[3]), w.M[5])
	}
}
