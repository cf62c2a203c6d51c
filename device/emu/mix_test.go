package emu

import "testing"

// TestMix: f16v4mix keeps a*x + b*y ($TAS: a in bits 15..0, b in 31..16)
// in four f32 accumulator lanes and returns the previous lanes as f16;
// f16v4gacc reads the lanes; ZAACC clears them (docs/isa.md, "MIX and AXPY").
func TestMix(t *testing.T) {
	x := regsA(hh(1, 2), hh(3, -4))   // $a0:1
	y := regsA(hh(10, 10), hh(10, 0)) // $a2:3
	cases := []tasCase{
		{name: "first mix returns the cleared lanes", tas: hh(0.5, -1), a: append(x, y...),
			prog: []in{I("f16v4mix", 4, 0, 2)},
			want: []regAt{wantA(4, 0), wantA(5, 0)}},
		{name: "second mix returns the first result", tas: hh(0.5, -1), a: append(x, y...),
			prog: []in{I("f16v4mix", 4, 0, 2), I("f16v4mix", 6, 2, 2)},
			want: []regAt{wantA(6, hh(-9.5, -9)), wantA(7, hh(-8.5, -2))}},
		{name: "gacc reads the lanes and keeps them", tas: hh(0.5, -1), a: append(x, y...),
			prog: []in{I("f16v4mix", 4, 0, 2), I("f16v4gacc", 6), I("f16v4gacc", 8)},
			want: []regAt{wantA(6, hh(-9.5, -9)), wantA(7, hh(-8.5, -2)), wantA(8, hh(-9.5, -9)), wantA(9, hh(-8.5, -2))}},
		{name: "dst may name a source", tas: hh(2, 0), a: append(x, y...),
			prog: []in{I("f16v4mix", 0, 0, 2), I("f16v4gacc", 2)},
			want: []regAt{wantA(0, 0), wantA(1, 0), wantA(2, hh(2, 4)), wantA(3, hh(6, -8))}},
		// 60000 - (-60000) overflows f16 but not the f32 lane, which
		// rounds to f16 (infinity) only when read.
		{name: "lanes are f32", tas: hh(1, -1), a: regsA(hh(60000, 0), 0, hh(-60000, 0), 0),
			prog: []in{I("f16v4mix", 4, 0, 2), I("f16v4gacc", 6)},
			want: []regAt{wantA(6, 0x7C00), wantA(7, 0)}},
		{name: "ZAACC clears the lanes", tas: hh(1, 1), a: append(x, y...),
			prog: []in{I("f16v4mix", 4, 0, 2), I("setzi.a", 8, fpClrZAACC), I("uput", csrFPClr&0xFF, 8), I("f16v4gacc", 6)},
			want: []regAt{wantA(6, 0), wantA(7, 0)}},
	}
	runTASCases(t, cases)
}

// tasCase is a worker program run with $TAS and $a registers preset, and
// the $a registers it must leave.
type tasCase struct {
	name string
	tas  uint32
	a    []uint32
	prog []in
	want []regAt
}

// runTASCases runs each case on worker 1 of a new tile (prog, then exitz)
// and checks its registers.
func runTASCases(t *testing.T, cases []tasCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTile(0)
			w := &tl.Workers[1]
			copy(w.A[:], tc.a)
			w.CSR[csrTAS] = tc.tas
			runWorker(t, tl, 1, append(tc.prog, I("exitz", mzero))...)
			for _, r := range tc.want {
				if w.A[r.r] != r.v {
					t.Errorf("$a%d = 0x%08x, want 0x%08x", r.r, w.A[r.r], r.v)
				}
			}
		})
	}
}
