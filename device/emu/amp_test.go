package emu

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func TestUputUget(t *testing.T) {
	tl := NewTile(0)
	w := &tl.Workers[0]
	w.A[1] = 0xABC
	runWorker(t, tl, 0, I("uput", 0x02, 1), I("uget", 2, 0x02), I("exitz", mzero))
	if w.A[2] != 0xABC || w.CSR[csrFPCtl] != 0xABC {
		t.Fatalf("uget $FP_CTL = 0x%x", w.A[2])
	}
}

// putHalves writes f16 values at addr.
func putHalves(t *testing.T, tl *Tile, addr uint32, vals []float32) {
	b := make([]byte, 2*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(h(v)))
	}
	if err := tl.Write(addr, b); err != nil {
		t.Fatal(err)
	}
}

func getHalves(t *testing.T, tl *Tile, addr uint32, n int) []float32 {
	b := make([]byte, 2*n)
	if err := tl.Read(addr, b); err != nil {
		t.Fatal(err)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = h2f(uint32(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return out
}

// TestAMPHiho loads a 16x16 f16 weight block with ld128putcs, feeds two
// input rows through f16v4hihov4amp (plus one drain row) and checks the
// outputs, which lag one row, against exact dot products. Small integers
// keep every sum exact.
func TestAMPHiho(t *testing.T) {
	tl := NewTile(0)
	var W [16][16]float32
	var flat []float32
	for n := 0; n < 16; n++ {
		for k := 0; k < 16; k++ {
			W[n][k] = float32((n*3+k*5)%7 - 3)
			flat = append(flat, W[n][k])
		}
	}
	putHalves(t, tl, ilvBase, flat)
	var X [3][16]float32 // row 2 is the zero drain row
	for r := 0; r < 2; r++ {
		for k := 0; k < 16; k++ {
			X[r][k] = float32((r*7+k*3)%5 - 2)
		}
	}
	var xs []float32
	for r := 0; r < 3; r++ {
		xs = append(xs, X[r][:]...)
	}
	putHalves(t, tl, dataBase, xs)
	// Partials for row 0: P = 1 for outputs 0..3 only (phase 0).
	putHalves(t, tl, dataBase+0x400, []float32{1, 1, 1, 1})

	sup := cat(setM(1, ilvBase), []in{I("put", 0x50, 1)})
	for s := 0; s < 64; s += 2 {
		sup = append(sup, I("ld128putcs", int64(s)))
	}
	sup = append(sup, I("sync", 3))
	load(t, tl, supBase, sup...)
	tl.Start(supBase)
	if res, err := tl.Run(1 << 20); err != nil || res.Reason != StopSync {
		t.Fatal(res, err)
	}
	if tl.Sup.CSR[csrCCCSLoad] != ilvBase+512 {
		t.Fatalf("$CCCSLOAD = 0x%x", tl.Sup.CSR[csrCCCSLoad])
	}
	// Worker: $m14 = dataBase (inputs), outputs at dataBase+0x200.
	var prog []in
	prog = append(prog, I("setzi", 5, 0)) // input pointer
	prog = append(prog, cat(setM(6, dataBase+0x200))...)
	prog = append(prog, I("setzi", 7, 0)) // output pointer
	for r := 0; r < 3; r++ {
		for p := 0; p < 4; p++ {
			prog = append(prog, I("ld64step", 0, 14, 5, 1))
			pr := int64(8) // $a8:9 zero partials
			if r == 0 && p == 0 {
				prog = append(prog, I("ld64", 10, 14, mzero, 0x400/8))
				pr = 10
			}
			prog = append(prog, I("f16v4hihov4amp", 2, 0, pr, int64(p)))
			prog = append(prog, I("st64step", 2, 6, 7, 1))
		}
	}
	prog = append(prog, I("exitz", mzero))
	runWorker(t, tl, 3, prog...)
	out := getHalves(t, tl, dataBase+0x200, 48)
	for r := 0; r < 2; r++ {
		for n := 0; n < 16; n++ {
			var want float32
			for k := 0; k < 16; k++ {
				want += W[n][k] * X[r][k]
			}
			if r == 0 && n < 4 {
				want++
			}
			if got := out[16*(r+1)+n]; got != want {
				t.Errorf("row %d output %d = %v, want %v", r, n, got, want)
			}
		}
	}
	for i := 0; i < 16; i++ {
		if out[i] != 0 {
			t.Errorf("warm-up output %d = %v, want 0", i, out[i])
		}
	}
}

func TestAMPF32(t *testing.T) {
	tl := NewTile(0)
	// f32sisov2amp: slot 4n+m holds W[n][2m], W[n][2m+1] as f32, n = 0..15.
	// W[n][k] = n+1 for even k, k for odd k.
	wt := func(n, k int) float32 {
		if k%2 == 0 {
			return float32(n + 1)
		}
		return float32(k)
	}
	for n := 0; n < 16; n++ {
		for m := 0; m < 4; m++ {
			v := uint64(fb(wt(n, 2*m))) | uint64(fb(wt(n, 2*m+1)))<<32
			tl.amp.setSlot(4*n+m, v)
		}
	}
	w := &tl.Workers[0]
	// Row 0 inputs x_k = k+1 (one per phase), partials P = (0.5, 0.25) added
	// to outputs 2p, 2p+1; row 1 drains row 0's 16 results, two per issue.
	w.A[6], w.A[7] = fb(0.5), fb(0.25)
	var prog []in
	for r := 0; r < 2; r++ {
		for p := 0; p < 8; p++ {
			prog = append(prog, setA(4, float32(p+1))...)
			prog = append(prog, I("f32sisov2amp", 0, 4, 6, int64(p)), I("st64step", 0, 14, 5, 1))
		}
	}
	prog = append(prog, I("exitz", mzero))
	runWorker(t, tl, 0, prog...)
	for n := 0; n < 16; n++ {
		want := float32(0)
		for k := 0; k < 8; k++ {
			want += wt(n, k) * float32(k+1)
		}
		if n%2 == 0 {
			want += 0.5
		} else {
			want += 0.25
		}
		v, _ := tl.ReadWord(dataBase + 64 + uint32(4*n))
		if f32(v) != want {
			t.Errorf("output %d = %v, want %v", n, f32(v), want)
		}
	}
}

func TestPaceAndTapack(t *testing.T) {
	tl := NewTile(0)
	tl.WriteWords(dataBase, []uint32{1, 2, 3, 4, 5, 6, 7, 8})
	tl.WriteWords(dataBase+0x100, []uint32{11, 12, 13, 14})
	w := &tl.Workers[0]
	w.A[6], w.A[7] = 100, 200
	// Stride register: bits 0..9 = 2 (x8 bytes), bits 10..19 = -1.
	stride := uint32(2) | uint32(0x3FF)<<10
	runWorker(t, tl, 0, cat(setM(1, dataBase), setM(2, dataBase+0x100), setM(3, dataBase+0x200), setM(8, stride), []in{
		I("tapack", 4, 1, 2, 3),
		// incs: load0 +8*2 (01), load1 +8 (00)
		I("ld2x64pace", 0, 2, 4, 8, 0b0001),
		// load0 now d+16, store d+0x200; incs: load0 +0 (11), store +8*-1 (10)
		I("ldst64pace", 10, 6, 4, 8, 0b1011),
		I("st64pace", 6, 4, 8, 0b00),
		I("exitz", mzero),
	})...)
	checkRegs(t, "a", w.A[:], map[int]uint32{0: 1, 1: 2, 2: 11, 3: 12, 10: 5, 11: 6})
	packed := uint64(w.M[4]) | uint64(w.M[5])<<32
	a0, a1, as := uint32(packed)&addrMask, uint32(packed>>21)&addrMask, uint32(packed>>42)&addrMask
	if a0 != dataBase+16 || a1 != dataBase+0x108 || as != dataBase+0x200 {
		t.Errorf("addresses after: 0x%x 0x%x 0x%x", a0, a1, as)
	}
	for i, want := range []uint32{100, 200} {
		if v, _ := tl.ReadWord(dataBase + 0x200 + uint32(4*i)); v != want {
			t.Errorf("store 1 word %d = %d", i, v)
		}
		if v, _ := tl.ReadWord(dataBase + 0x1F8 + uint32(4*i)); v != want {
			t.Errorf("store 2 word %d = %d", i, v)
		}
	}
}

func TestPaceSnapshotBundle(t *testing.T) {
	// {ldst64pace $a0:1 <- load, store $a2:3 ; f32v2add $a2:3 <- $a0:1 + $a0:1}
	// main reads a2:3 (old) and writes a0:1; aux reads old a0:1.
	tl := NewTile(0)
	tl.WriteWords(dataBase, []uint32{fb(7), fb(8)})
	w := &tl.Workers[0]
	w.A[0], w.A[1], w.A[2], w.A[3] = fb(1), fb(2), 33, 44
	runWorker(t, tl, 0, cat(setM(1, dataBase), setM(3, dataBase+0x40), []in{
		I("tapack", 4, 1, 1, 3),
		I("nop"),
		Co("ldst64pace", 0, 2, 4, 8, 0), I("f32v2add", 2, 0, 0),
		I("exitz", mzero),
	})...)
	checkRegs(t, "a", w.A[:], map[int]uint32{0: fb(7), 1: fb(8), 2: fb(2), 3: fb(4)})
	if v, _ := tl.ReadWord(dataBase + 0x40); v != 33 {
		t.Errorf("stored %d, want the old 33", v)
	}
}

func TestRpt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		count int64
		reg   bool
	}{{"imm 3", 3, false}, {"imm 0 skips", 0, false}, {"reg 5", 5, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tl := NewTile(0)
			tl.WriteWords(dataBase, []uint32{fb(1), fb(10), fb(2), fb(20), fb(3), fb(30), fb(4), fb(40), fb(5), fb(50)})
			w := &tl.Workers[0]
			rpt := Co("rpt.i", tc.count, 0)
			if tc.reg {
				rpt = Co("rpt", 9, 0)
			}
			// 8-aligned: rpt+fnop at +8, body at +16, exit at +24.
			runWorker(t, tl, 0,
				I("setzi", 5, 0), I("setzi", 9, tc.count),
				rpt, I("fnop"),
				Co("ld64step", 0, 14, 5, 1), I("f32v2add", 2, 2, 0),
				I("get", 10, countL),
				I("exitz", mzero))
			// The aux add reads the pair loaded by the previous iteration.
			var s0, s1 float32
			for i := int64(0); i+1 < tc.count; i++ {
				s0 += float32(i + 1)
				s1 += float32(10 * (i + 1))
			}
			if f32(w.A[2]) != s0 || f32(w.A[3]) != s1 || w.M[5] != uint32(8*tc.count) {
				t.Fatalf("sums %v %v ptr %d; want %v %v %d", f32(w.A[2]), f32(w.A[3]), w.M[5], s0, s1, 8*tc.count)
			}
			// Zero overhead: worker 0 issues first at its launch cycle;
			// setzi, setzi, rpt, count body bundles, then get.
			if want := uint32(workerFirstIssue(0, 0) + 6*(3+uint64(tc.count))); w.M[10] != want {
				t.Fatalf("get issued at %d, want %d", w.M[10], want)
			}
		})
	}
}

// st64pace takes poplibs' 4-bit selectors whose two halves agree (0x05,
// 0b1010: the store advances as with 0b01, 0b10), and refuses the others
// instead of guessing which half the store uses.
func TestSt64paceWideSelector(t *testing.T) {
	stride := uint32(2) | uint32(0x3FF)<<10 // bits 0..9 = 2, bits 10..19 = -1
	for _, c := range []struct {
		sel   int64
		delta int32 // store address advance in bytes; 0 with fault
		fault bool
	}{
		{0b01, 16, false}, {0b0101, 16, false}, {0b1010, -8, false}, {0b1111, 0, false}, {0b0110, 0, true},
	} {
		tl := NewTile(0)
		w := &tl.Workers[0]
		load(t, tl, workerBase, cat(setM(1, dataBase), setM(3, dataBase+0x200), setM(8, stride), []in{
			I("tapack", 4, 1, 1, 3),
			I("st64pace", 6, 4, 8, c.sel),
			I("exitz", mzero),
		})...)
		if err := tl.StartWorker(0, workerBase, dataBase); err != nil {
			t.Fatal(err)
		}
		_, err := tl.Run(1 << 16)
		if c.fault {
			var f *Fault
			if !errors.As(err, &f) || f.Kind != FaultNoEmulation || !strings.Contains(f.Reason, "not emulated: st64pace with selector 0b0110") {
				t.Errorf("selector %#b: %v, want a not-emulated fault", c.sel, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("selector %#b: %v", c.sel, err)
			continue
		}
		as := uint32(uint64(w.M[4])|uint64(w.M[5])<<32>>42) & addrMask
		if int32(as-(dataBase+0x200)) != c.delta {
			t.Errorf("selector %#b: store address advanced %d, want %d", c.sel, int32(as-(dataBase+0x200)), c.delta)
		}
	}
}
