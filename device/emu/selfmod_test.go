package emu

import (
	"strings"
	"testing"
)

// A bundle whose main instruction stores over the bundle itself: the
// predecoded copy is invalidated mid-bundle, and the rest of the bundle
// must still run as fetched (the store takes effect for the next fetch),
// without a crash, in every co-issue ordering.
func TestStoreIntoExecutingBundle(t *testing.T) {
	cases := []struct {
		name string
		aux  in
	}{
		{"aux without $a", I("fnop")},
		{"aux writing $a", I("f32add", 3, 1, 2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl := NewTile(0)
			// $m1 = workerBase: the store writes the bundle's own first word
			// with the value of $m2 (a nop word), then the worker exits.
			prog := cat(setM(1, workerBase), setM(2, 0x19E00000))
			// Pad so the bundle is 8-byte aligned.
			if len(prog)%2 != 0 {
				prog = append(prog, I("nop"))
			}
			start := uint32(workerBase + 4*len(prog))
			prog = cat(setM(1, start), setM(2, 0x19E00000))
			if len(prog)%2 != 0 {
				prog = append(prog, I("nop"))
			}
			start = uint32(workerBase + 4*len(prog))
			prog = append(prog, Co("st32", 2, 1, 15, 0), c.aux, I("exitz", 15))
			runWorker(t, tl, 0, prog...)
			got, _ := tl.ReadWord(start)
			if got != 0x19E00000 {
				t.Fatalf("store into the bundle: word 0x%08x, want the nop", got)
			}
		})
	}
}

// $azeros ($a14:15) always reads as zero; naming $a14 alone or $aqzero is a
// clear fault rather than a wrong answer.
func TestZeroPair(t *testing.T) {
	tl := NewTile(0)
	// Store $azeros after an attempt to write it: memory must get zero.
	tl.WriteWords(dataBase, []uint32{7, 9})
	runWorker(t, tl, 0, I("ld64", 14, 14, 15, 0), I("st64", 14, 14, 15, 0), I("exitz", 15))
	lo, _ := tl.ReadWord(dataBase)
	hi, _ := tl.ReadWord(dataBase + 4)
	if lo != 0 || hi != 0 {
		t.Fatalf("$azeros stored 0x%08x 0x%08x, want zero", lo, hi)
	}
	for _, prog := range [][]in{
		{I("setzi.a", 14, 1), I("exitz", 15)},
		{I("f32v4add", 0, 12, 0), I("exitz", 15)},
	} {
		tl := NewTile(0)
		load(t, tl, workerBase, prog...)
		if err := tl.StartWorker(0, workerBase, dataBase); err != nil {
			t.Fatal(err)
		}
		f := faultOf(t, tl)
		if f.Kind != FaultNoEmulation || !strings.Contains(f.Reason, "$a") {
			t.Fatalf("fault %v", f)
		}
	}
}
