package emu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/isa"
)

func TestFaults(t *testing.T) {
	at := func(i int) int64 { return int64(workerBase + 4*i) }
	cases := []struct {
		name   string
		worker bool // program runs in worker 4, else in the supervisor
		prog   []in
		raw    []uint32 // words loaded after prog (for undecodable words)
		kind   FaultKind
		pcIdx  int    // index of the faulting word
		disasm string // expected disassembly in the report
		reason string // expected substring of the reason
	}{
		{name: "misaligned load", worker: true,
			prog: cat(setM(1, dataBase+2), []in{I("ld32", 2, 1, mzero, 0)}),
			kind: FaultAccess, pcIdx: 2, disasm: "ld32 $m2, $m1, $mzero, 0", reason: "misaligned address 0x60002"},
		{name: "load outside SRAM", worker: true,
			prog: []in{I("setzi", 1, 0x1000), I("ld32", 2, 1, mzero, 0)},
			kind: FaultAccess, pcIdx: 1, disasm: "ld32 $m2, $m1, $mzero, 0", reason: "outside SRAM"},
		{name: "store past the end of SRAM", worker: true,
			prog: cat(setM(1, 0xE7FF8), []in{I("st64", 0, 1, mzero, 1)}),
			kind: FaultAccess, pcIdx: 2, disasm: "st64 $a0:1, $m1, $mzero, 1", reason: "at 0xe8000 outside SRAM"},
		{name: "fetch outside region 0",
			prog: cat(setM(1, 0x80000), []in{I("br", 1)}),
			kind: FaultFetch, pcIdx: -1, reason: "instruction fetch from 0x80000"},
		{name: "ld128 outside interleaved memory", worker: true,
			prog: cat(setM(1, dataBase), []in{I("ld128", 0, 1, mzero, 0)}),
			kind: FaultInterleave, pcIdx: 2, disasm: "ld128 $a0:3, $m1, $mzero, 0", reason: "interleaved memory"},
		{name: "rpt body with a control instruction", worker: true,
			prog: []in{Co("rpt.i", 2, 0), I("fnop"), Co("brz", mzero, at(0)), I("fnop")},
			kind: FaultRepeat, pcIdx: 0, disasm: "rpt 2, 0; fnop", reason: "control instruction (brz + fnop)"},
		{name: "rpt body with a solo instruction", worker: true,
			prog: []in{Co("rpt.i", 2, 0), I("fnop"), I("nop"), I("nop")},
			kind: FaultRepeat, pcIdx: 0, disasm: "rpt 2, 0; fnop", reason: "solo instruction"},
		{name: "rpt body not 8-byte aligned", worker: true,
			prog: []in{I("rpt.i", 2, 0), Co("nop"), I("fnop")},
			kind: FaultRepeat, pcIdx: 0, disasm: "rpt 2, 0", reason: "not 8-byte aligned"},
		{name: "runall while workers run",
			prog: cat(setM(1, workerBase+0x100), []in{I("run", 1, mzero, 0x4C000), I("runall", 1, mzero, 0)}),
			kind: FaultRunall, pcIdx: 3, disasm: "runall $m1, $mzero, 0", reason: "runall while workers are running"},
		{name: "unknown word", worker: true,
			prog: []in{I("nop")}, raw: []uint32{0x00000000},
			kind: FaultUnknownWord, pcIdx: 1, disasm: "?", reason: "matches no instruction"},
		{name: "trap", prog: []in{I("nop"), I("trap", 7)},
			kind: FaultTrap, pcIdx: 1, disasm: "trap 7", reason: "trap 7"},
		{name: "row without emulation", prog: []in{I("delay", 5)},
			kind: FaultNoEmulation, pcIdx: 0, disasm: "delay 5", reason: "no emulation for delay"},
		{name: "supervisor-only row in a worker", worker: true, prog: []in{I("sync", 2)},
			kind: FaultIllegal, pcIdx: 0, disasm: "sync 2", reason: "not allowed in a worker context"},
		{name: "worker-only row in the supervisor", prog: []in{I("exitz", mzero)},
			kind: FaultIllegal, pcIdx: 0, disasm: "exitz $mzero", reason: "not allowed in a supervisor context"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.kind == FaultUnknownWord && isa.Lookup(tc.raw[0]) != nil {
				t.Skipf("word 0x%08x decodes now", tc.raw[0])
			}
			if tc.kind == FaultNoEmulation {
				if _, ok := Unimplemented()[tc.prog[0].id]; !ok {
					t.Skipf("%s has a handler now (exchange.go)", tc.prog[0].id)
				}
			}
			tl := NewTile(3)
			base := uint32(supBase)
			if tc.worker {
				base = workerBase
			}
			words := append(encode(t, tc.prog), tc.raw...)
			if err := tl.WriteWords(base, words); err != nil {
				t.Fatal(err)
			}
			// A parked worker program for the runall case.
			load(t, tl, workerBase+0x100, I("setzi", 1, 100), I("brnzdec", 1, workerBase+0x104), I("exitz", mzero))
			ctx := "supervisor"
			if tc.worker {
				ctx = "worker 4"
				if err := tl.StartWorker(4, base, dataBase); err != nil {
					t.Fatal(err)
				}
			} else {
				tl.Start(base)
			}
			f := faultOf(t, tl)
			msg := f.Error()
			if f.Kind != tc.kind || f.Tile != 3 || f.Context != ctx {
				t.Fatalf("fault %v: kind %v tile %d context %q; want %v, 3, %q", msg, f.Kind, f.Tile, f.Context, tc.kind, ctx)
			}
			if !strings.Contains(f.Reason, tc.reason) {
				t.Errorf("reason %q lacks %q", f.Reason, tc.reason)
			}
			for _, want := range []string{"tile 3", ctx, tc.reason} {
				if !strings.Contains(msg, want) {
					t.Errorf("report %q lacks %q", msg, want)
				}
			}
			if tc.pcIdx >= 0 {
				pc := base + uint32(4*tc.pcIdx)
				if f.PC != pc || !strings.Contains(msg, fmt.Sprintf("pc 0x%05x", pc)) {
					t.Errorf("pc 0x%x, want 0x%x (%s)", f.PC, pc, msg)
				}
				if len(f.Words) == 0 || f.Words[0] != words[tc.pcIdx] || !strings.Contains(msg, fmt.Sprintf("%08x", words[tc.pcIdx])) {
					t.Errorf("words %x, want %08x first (%s)", f.Words, words[tc.pcIdx], msg)
				}
				if f.Disasm != tc.disasm || !strings.Contains(msg, tc.disasm) {
					t.Errorf("disassembly %q, want %q", f.Disasm, tc.disasm)
				}
			}
			if tl.Workers[4].State != Faulted && tc.worker {
				t.Errorf("worker state %v", tl.Workers[4].State)
			}
			// A faulted tile stays stopped.
			if _, err := tl.Run(10); err != f {
				t.Errorf("second Run: %v", err)
			}
		})
	}
}

func TestTrapCode(t *testing.T) {
	tl := NewTile(0)
	load(t, tl, supBase, I("trap", 9))
	tl.Start(supBase)
	if f := faultOf(t, tl); f.Code != 9 {
		t.Fatalf("code %d", f.Code)
	}
}

func TestWriteReadBounds(t *testing.T) {
	tl := NewTile(0)
	if err := tl.Write(0x4BFFF, []byte{1}); err == nil {
		t.Error("write below SRAM accepted")
	}
	if err := tl.Write(0xE7FFF, []byte{1, 2}); err == nil {
		t.Error("write past SRAM accepted")
	}
	if err := tl.Read(0xE7FFC, make([]byte, 4)); err != nil {
		t.Error(err)
	}
}

// Self-modifying code: a store into region 0 replaces a predecoded bundle.
func TestStoreInvalidatesCode(t *testing.T) {
	tl := NewTile(0)
	newWord := encode(t, []in{I("setzi", 3, 77)})[0]
	prog := cat(setM(1, supBase+4*6), setM(2, newWord), []in{
		I("setzi", 3, 1), // 4: executed once before the store... (predecoded)
		I("st32", 2, 1, mzero, 0),
		I("setzi", 3, 5), // 6: replaced by setzi $m3, 77 before it runs
		I("sync", 3),
	})
	load(t, tl, supBase, prog...)
	tl.fetch(supBase + 4*6) // predecode the word that will be overwritten
	tl.Start(supBase)
	if res, err := tl.Run(1000); err != nil || res.Reason != StopSync {
		t.Fatal(res, err)
	}
	if tl.Sup.M[3] != 77 {
		t.Fatalf("$m3 = %d: stale predecoded code ran", tl.Sup.M[3])
	}
}
