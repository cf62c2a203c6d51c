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

// TestAssembledOracle: the oracle rows of reference/IPU21.md written as
// assembly text assemble to the published words, and run on a chip.
func TestAssembledOracle(t *testing.T) {
	rows := map[int]string{
		0:  "sync 3\n delay 134\n send 2, 0x0, 1\n br $m10\n",
		53: "sync 3\n delayxpic 112, 0, 0\n delayxpic 2, 0, 0x640\n delaypic 48, 0, 0\n delay 7\n br $m10\n",
	}
	want := map[int][]uint32{
		0:  {0x41800003, 0x40a00086, 0x78400001, 0x43a00000},
		53: {0x41800003, 0x641c0000, 0x64008640, 0x61800000, 0x40a00007, 0x43a00000},
	}
	c := newChip(t, 0, 53)
	for id, text := range rows {
		src := ".section .text.row, \"ax\"\n.supervisor\n" + text
		obj, err := asm.Assemble("row.S", []byte(src), asm.Options{})
		if err != nil {
			t.Skipf("assembler: %v", err)
		}
		var code []byte
		for _, s := range obj.Sections {
			if s.Name == ".text.row" {
				code = s.Data
			}
		}
		if len(code) != 4*len(want[id]) {
			t.Fatalf("tile %d: %d bytes", id, len(code))
		}
		for i, w := range want[id] {
			if got := uint32(code[4*i]) | uint32(code[4*i+1])<<8 | uint32(code[4*i+2])<<16 | uint32(code[4*i+3])<<24; got != w {
				t.Fatalf("tile %d word %d: %08x, want %08x", id, i, got, w)
			}
		}
		if err := c.Tile(id).Write(supBase, code); err != nil {
			t.Fatal(err)
		}
		c.Tile(id).WriteWords(endPC, encode(t, []in{I("sync", 7)}))
		c.Tile(id).Sup.M[10] = endPC
		c.Start(id, supBase)
	}
	data := fill(t, c.Tile(0), 0x80000, 3, 5)
	c.Tile(0).Sup.CSR[csrOutgoingBase] = 0x80000
	c.Tile(53).Sup.CSR[csrIncomingBase] = 0x90000
	runToHost(t, c)
	if got := readWords(t, c.Tile(53), 0x90000, 3); !equalWords(got, data) {
		t.Fatalf("received %x, want %x", got, data)
	}
}
