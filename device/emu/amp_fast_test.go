package emu

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// specialF16 are f16 bit patterns at the edges: zeros, the smallest and
// largest subnormals, the smallest normal, one, the largest finite value,
// infinities and NaNs (quiet and signalling, with payloads).
var specialF16 = []uint16{
	0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x8400,
	0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00,
	0x7E00, 0xFE00, 0x7C01, 0x7D55, 0xFEAB,
}

// randF16 returns an f16 bit pattern: often special, otherwise any.
func randF16(rng *rand.Rand) uint64 {
	if rng.IntN(4) == 0 {
		return uint64(specialF16[rng.IntN(len(specialF16))])
	}
	return uint64(rng.Uint32() & 0xFFFF)
}

// randAcc returns an accumulator value: any f32 bit pattern (NaNs,
// infinities, f32 subnormals), values near f16 rounding boundaries,
// overflow and the f16 subnormal range, or small ordinary sums.
func randAcc(rng *rand.Rand) float32 {
	switch rng.IntN(5) {
	case 0:
		return math.Float32frombits(rng.Uint32())
	case 1:
		// An f16 value plus an offset around the rounding point.
		base := math.Float32bits(h2f(uint32(randF16(rng))))
		offs := []uint32{0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF}
		return math.Float32frombits(base + offs[rng.IntN(len(offs))])
	case 2:
		v := []float32{65504, 65519.996, 65520, 65536, 1e6, 6.1e-5, 3e-8, 2.98e-8, 5.96e-8, 1e-40}
		f := v[rng.IntN(len(v))]
		if rng.IntN(2) == 0 {
			f = -f
		}
		return f
	case 3:
		return 0
	}
	return float32(rng.NormFloat64() * 100)
}

func randWeights(rng *rand.Rand, w *[4][16]float32) {
	for j := range w {
		for n := range w[j] {
			w[j][n] = h2f(uint32(randF16(rng)))
		}
	}
}

// sameF32 compares bit patterns; any two NaNs match (no f32 operation
// order defines NaN payloads).
func sameF32(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

func sameF16x4(a, b uint64) bool {
	for i := 0; i < 4; i++ {
		x, y := uint32(a>>(16*i))&0xFFFF, uint32(b>>(16*i))&0xFFFF
		if x != y && !(isNaN16(x) && isNaN16(y)) {
			return false
		}
	}
	return true
}

// TestHihoAsm checks the assembly f16v4hihov4amp (hihoAVX) against hihoGo:
// random weights, inputs, partials and accumulators, rich in subnormals,
// infinities, NaNs, overflow and rounding ties, for every phase; both the
// single step from a given state and long chains of steps, comparing
// outputs and both accumulator banks bit for bit after every step.
func TestHihoAsm(t *testing.T) {
	if !hihoAsm {
		t.Skip("no AVX + F16C (or not amd64): hihoAVX is not used")
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var w [4][16]float32
	for trial := 0; trial < 20000; trial++ {
		if trial%50 == 0 {
			randWeights(rng, &w)
		}
		var a ampAcc
		for n := 0; n < 16; n++ {
			a.cur[n], a.done[n] = randAcc(rng), randAcc(rng)
		}
		b := a
		// A chain of steps from this state, phases in order from a random
		// start as a kernel issues them, with an occasional random phase.
		p := rng.IntN(4)
		for step := 0; step < 8; step++ {
			if rng.IntN(8) == 0 {
				p = rng.IntN(4)
			}
			x := randF16(rng) | randF16(rng)<<16 | randF16(rng)<<32 | randF16(rng)<<48
			pp := randF16(rng) | randF16(rng)<<16 | randF16(rng)<<32 | randF16(rng)<<48
			want := hihoGo(&a, &w, x, pp, p)
			got := hihoAVX(&b, &w, x, pp, p)
			if !sameF16x4(got, want) {
				t.Fatalf("trial %d step %d phase %d: drained 0x%016x, want 0x%016x", trial, step, p, got, want)
			}
			for n := 0; n < 16; n++ {
				if !sameF32(b.cur[n], a.cur[n]) || !sameF32(b.done[n], a.done[n]) {
					t.Fatalf("trial %d step %d phase %d x=0x%016x pp=0x%016x: output %d cur %v (0x%08x) done %v, want cur %v (0x%08x) done %v",
						trial, step, p, x, pp, n, b.cur[n], math.Float32bits(b.cur[n]), b.done[n], a.cur[n], math.Float32bits(a.cur[n]), a.done[n])
				}
			}
			// Continue both from the same bits (NaN payloads may differ).
			b = a
			p = (p + 1) & 3
		}
	}
}

// TestHihoConversionAsm drives the drain (f32 -> f16, VCVTPS2PH) with
// f32 values covering every rounding case of every f16 value and random
// bit patterns, comparing with f2h.
func TestHihoConversionAsm(t *testing.T) {
	if !hihoAsm {
		t.Skip("no AVX + F16C (or not amd64): hihoAVX is not used")
	}
	var w [4][16]float32 // zero weights: the drain is the only thing checked
	check := func(v [4]float32) {
		var a, b ampAcc
		copy(a.done[:4], v[:])
		b = a
		want := hihoGo(&a, &w, 0, 0, 0)
		got := hihoAVX(&b, &w, 0, 0, 0)
		if !sameF16x4(got, want) {
			t.Fatalf("drain of %v: 0x%016x, want 0x%016x", v, got, want)
		}
	}
	var v [4]float32
	k := 0
	add := func(f float32) {
		v[k] = f
		if k++; k == 4 {
			check(v)
			k = 0
		}
	}
	for i := 0; i < 1<<16; i++ {
		base := math.Float32bits(h2f(uint32(i)))
		for _, d := range []uint32{0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF} {
			add(math.Float32frombits(base + d))
			add(math.Float32frombits(base - d))
		}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 1<<20; i++ {
		add(math.Float32frombits(rng.Uint32()))
	}
	// Widening (VCVTPH2PS): every f16 value as an input times weight 1
	// into a zero accumulator, and as a partial.
	w[0][0], w[1][1], w[2][2], w[3][3] = 1, 1, 1, 1
	for h := uint64(0); h < 1<<16; h++ {
		var a, b ampAcc
		x := h | h<<16 | h<<32 | h<<48
		hihoGo(&a, &w, x, x, 0)
		hihoAVX(&b, &w, x, x, 0)
		for n := 0; n < 16; n++ {
			if !sameF32(b.cur[n], a.cur[n]) {
				t.Fatalf("f16 0x%04x: cur[%d] = 0x%08x, want 0x%08x", h, n, math.Float32bits(b.cur[n]), math.Float32bits(a.cur[n]))
			}
		}
	}
}

// TestAMPHihoGo runs the f16v4hihov4amp emulator tests on the pure-Go path
// too (on machines with the assembly the other tests use it).
func TestAMPHihoGo(t *testing.T) {
	if !hihoAsm {
		t.Skip("the pure-Go path is the only one here; the other tests use it")
	}
	hihoAsm = false
	defer func() { hihoAsm = true }()
	t.Run("TestAMPHiho", TestAMPHiho)
	t.Run("TestAMPSR", TestAMPSR)
}

// TestPaceFast checks each pace row's fast handler (paceFast) against the
// general one (paceSlow) on random register files, operands and addresses,
// a quarter of them misaligned or outside SRAM: registers, memory and
// faults must come out the same.
func TestPaceFast(t *testing.T) {
	kinds := []paceKind{{loads: 2}, {loads: 1, store: true}, {loads: 2, store: true, quad: true}, {store: true}}
	rng := rand.New(rand.NewPCG(13, 17))
	addr := func() uint32 {
		switch rng.IntN(8) {
		case 0:
			return rng.Uint32() & addrMask // anywhere, any alignment
		case 1:
			edges := []uint32{sramBase - 8, sramBase, region1Base - 8, region1Base, sramEnd - 8, sramEnd, sramEnd - 4, addrMask &^ 7}
			return edges[rng.IntN(len(edges))]
		}
		// A small window, so loads and the store often meet.
		return dataBase + 8*uint32(rng.IntN(8))
	}
	a, b := NewTile(0), NewTile(0)
	for trial := 0; trial < 4000; trial++ {
		k := kinds[trial%len(kinds)]
		slow, fast := paceSlow(k), paceFast(k, paceSlow(k))
		var o inst
		for i := range o.v {
			o.v[i] = int32(rng.IntN(16))
		}
		ai := 2
		if k.loads == 0 {
			ai = 1
		}
		o.v[ai+2] = int32(rng.IntN(64)) // the selector immediate
		for _, tl := range []*Tile{a, b} {
			tl.fault = nil
			tl.cur, tl.curPC = &tl.Workers[0], workerBase
			tl.Workers[0].State = Running
		}
		w := &a.Workers[0]
		for r := 0; r < 16; r++ {
			w.M[r], w.A[r] = rng.Uint32(), rng.Uint32()
		}
		pr := o.v[ai] & 14
		packed := uint64(addr()) | uint64(addr())<<21 | uint64(addr())<<42
		w.M[pr], w.M[pr+1] = uint32(packed), uint32(packed>>32)
		for i := uint32(0); i < 64; i += 4 {
			binary.LittleEndian.PutUint32(a.mem[dataBase-sramBase+i:], rng.Uint32())
		}
		copy(b.mem, a.mem)
		b.Workers[0] = *w
		slow(a, &a.Workers[0], &o)
		fast(b, &b.Workers[0], &o)
		if a.Workers[0] != b.Workers[0] {
			t.Fatalf("trial %d %+v v=%v: context\n%+v\nwant\n%+v", trial, k, o.v, b.Workers[0].M, a.Workers[0].M)
		}
		if (a.fault == nil) != (b.fault == nil) || a.fault != nil && (a.fault.Kind != b.fault.Kind || a.fault.Reason != b.fault.Reason) {
			t.Fatalf("trial %d %+v: fault %v, want %v", trial, k, b.fault, a.fault)
		}
		if !bytes.Equal(a.mem, b.mem) {
			t.Fatalf("trial %d %+v: memory differs", trial, k)
		}
	}
}

// TestPaceAMPPairOrder checks the aux-first order decodeBundle gives
// {pace ; AMP} bundles whose AMP destination the pace instruction does not
// name: for random register operands, each bundle runs once as decoded and
// once forced into the general snapshot mode, from the same random
// registers, accumulators and memory; the results must agree.
func TestPaceAMPPairOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 23))
	auxFirst := 0
	for trial := 0; trial < 2000; trial++ {
		ap := func() int64 { return int64(2 * rng.IntN(8)) }
		var main in
		switch rng.IntN(3) {
		case 0:
			main = Co("ld2xst64pace", int64(4*rng.IntN(3)), ap(), 4, 6, int64(rng.IntN(64))) // quad 12 is $aqzero
		case 1:
			main = Co("ldst64pace", ap(), ap(), 4, 6, int64(rng.IntN(16)))
		default:
			main = Co("ld2x64pace", ap(), ap(), 4, 6, int64(rng.IntN(16)))
		}
		var aux in
		switch rng.IntN(3) {
		case 0:
			aux = I("f16v4hihov4amp", ap(), ap(), ap(), int64(rng.IntN(4)))
		case 1:
			aux = I("f16v4sisoamp", ap(), ap(), ap(), int64(rng.IntN(4)))
		default:
			aux = I("f32sisov2amp", ap(), int64(rng.IntN(14)), ap(), int64(rng.IntN(8))) // $a14 is reserved
		}
		var tiles [2]*Tile
		for i := range tiles {
			tl := NewTile(0)
			load(t, tl, workerBase, main, aux, I("exitz", mzero))
			tiles[i] = tl
		}
		b := tiles[1].fetch(workerBase)
		if b == nil || b.n != 2 {
			t.Fatalf("trial %d: %v ; %v did not decode as a pair", trial, main, aux)
		}
		if b.mode == modeAuxFirst {
			auxFirst++
		}
		b.mode, b.shared = modeSnapshot, aRegs(&b.i[0])&aRegs(&b.i[1])
		// The same random state in both tiles.
		seed := rng.Uint64()
		for _, tl := range tiles {
			r := rand.New(rand.NewPCG(seed, 1))
			w := &tl.Workers[0]
			for i := 0; i < 16; i++ {
				w.A[i] = uint32(randF16(r) | randF16(r)<<16)
			}
			for s := 0; s < 64; s++ {
				tl.amp.setSlot(s, randF16(r)|randF16(r)<<16|randF16(r)<<32|randF16(r)<<48)
			}
			for n := 0; n < 16; n++ {
				tl.amp.acc[0].cur[n], tl.amp.acc[0].done[n] = randAcc(r), randAcc(r)
			}
			a := uint64(dataBase) | uint64(dataBase+8)<<21 | uint64(dataBase+16)<<42
			w.M[4], w.M[5], w.M[6] = uint32(a), uint32(a>>32), 1|2<<10
			for i := uint32(0); i < 64; i += 4 {
				binary.LittleEndian.PutUint32(tl.mem[dataBase-sramBase+i:], r.Uint32())
			}
			runWorker(t, tl, 0)
		}
		// Both tiles run the same handlers on the same values, so even NaN
		// payloads must agree.
		x, y := tiles[0], tiles[1]
		for n := 0; n < 16; n++ {
			xa, ya := &x.amp.acc[0], &y.amp.acc[0]
			if bitsf(xa.cur[n]) != bitsf(ya.cur[n]) || bitsf(xa.done[n]) != bitsf(ya.done[n]) {
				t.Fatalf("trial %d %v ; %v: accumulator %d differs from the snapshot order", trial, main, aux, n)
			}
		}
		if x.Workers[0].A != y.Workers[0].A || x.Workers[0].M != y.Workers[0].M || !bytes.Equal(x.mem, y.mem) {
			t.Fatalf("trial %d %v ; %v: state differs from the snapshot order", trial, main, aux)
		}
	}
	if auxFirst < 300 {
		t.Fatalf("only %d of the bundles ran aux first", auxFirst)
	}
}
