package emu

import "testing"

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
