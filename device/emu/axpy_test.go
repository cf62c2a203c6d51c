package emu

import "testing"

// TestAxpy: f32v2axpy keeps $TAS*x + y (f32) in the worker's accumulator
// state, lanes 0 and 1 of the MIX lanes, and writes its destination with
// the previous state as f32 (docs/isa.md "MIX and AXPY", named assumption
// axpy-shares-mix-lanes). $a10 and $a11 are spare registers the programs
// move into $TAS (uput) when they switch between f32v2axpy's f32 scale and
// f16v4mix's two f16 scales.
func TestAxpy(t *testing.T) {
	tasCSR := int64(csrTAS & 0xFF)
	fpClr := int64(csrFPClr & 0xFF)
	// $a0:1 = x, $a2:3 = y; $TAS = 3.
	xy := regsA(fb(1), fb(2), fb(10), fb(20))
	const r = 1 + 0x1p-12 // r*r = 1 + 2^-11 + 2^-24: not an f32
	cases := []tasCase{
		{name: "first axpy returns the cleared state", tas: fb(3), a: xy,
			prog: []in{I("f32v2axpy", 4, 0, 2)},
			want: []regAt{wantA(4, 0), wantA(5, 0)}},
		{name: "second axpy returns the first result", tas: fb(3), a: xy,
			prog: []in{I("f32v2axpy", 4, 0, 2), I("f32v2axpy", 6, 2, 0)},
			want: []regAt{wantA(4, 0), wantA(5, 0), wantA(6, fb(13)), wantA(7, fb(26))}},
		{name: "prime into azeros, flush with azeros", tas: fb(3), a: xy,
			prog: []in{I("f32v2axpy", 14, 0, 2), I("f32v2axpy", 4, 14, 14), I("f32v2axpy", 6, 14, 14)},
			want: []regAt{wantA(4, fb(13)), wantA(5, fb(26)), wantA(6, 0), wantA(7, 0), wantA(14, 0), wantA(15, 0)}},
		{name: "dst may name a source", tas: fb(3), a: xy,
			prog: []in{I("f32v2axpy", 0, 0, 2), I("f32v2axpy", 2, 0, 0)},
			want: []regAt{wantA(0, 0), wantA(1, 0), wantA(2, fb(13)), wantA(3, fb(26))}},
		// The product rounds to 1 + 2^-11 (a tie, to even) before the
		// add: the sum is exactly 0; a fused multiply-add would give 2^-24.
		{name: "product rounded before the sum", tas: fb(r), a: regsA(fb(r), fb(2), fb(-(1 + 0x1p-11)), fb(-4)),
			prog: []in{I("f32v2axpy", 14, 0, 2), I("f32v2axpy", 4, 14, 14)},
			want: []regAt{wantA(4, 0), wantA(5, fb(r*2-4))}},
		{name: "ZAACC clears the state", tas: fb(3), a: xy,
			prog: []in{I("f32v2axpy", 14, 0, 2), I("setzi.a", 8, fpClrZAACC), I("uput", fpClr, 8), I("f32v2axpy", 4, 14, 14)},
			want: []regAt{wantA(4, 0), wantA(5, 0)}},
		// Bits 0-2 of $FP_CLR clear the sticky flags (INV, DIV0, OFLO), not
		// the accumulators: ZAACC is bit 3.
		{name: "FP_CLR bits 0-2 leave the state", tas: fb(3), a: xy,
			prog: []in{I("f32v2axpy", 14, 0, 2), I("setzi.a", 8, 7), I("uput", fpClr, 8), I("f32v2axpy", 4, 14, 14)},
			want: []regAt{wantA(4, fb(13)), wantA(5, fb(26))}},
		// Shared lanes: f16v4mix's lanes 0 and 1 come out of the next
		// f32v2axpy as f32, unrounded (1 + 2^-12 is not an f16).
		{name: "mix then axpy reads mix lanes 0 and 1 as f32", tas: hh(1, 1),
			a:    regsA(hh(1, 2), hh(3, 4), hh(0x1p-12, 0), hh(0, 0), 0, 0, 0, 0, 0, 0, fb(3)),
			prog: []in{I("f16v4mix", 14, 0, 2), I("uput", tasCSR, 10), I("f32v2axpy", 4, 14, 14)},
			want: []regAt{wantA(4, fb(1+0x1p-12)), wantA(5, fb(2))}},
		// f32v2axpy leaves lanes 2 and 3 alone: the next f16v4mix returns
		// the axpy results in lanes 0, 1 and the first mix's in 2, 3.
		{name: "axpy then mix: lanes 0, 1 from axpy, 2, 3 from the earlier mix", tas: hh(1, 1),
			a:    regsA(hh(1, 2), hh(3, 4), 0, 0, 0, 0, 0, 0, fb(0.5), fb(-8), fb(3), hh(1, 1)),
			prog: []in{I("f16v4mix", 14, 0, 2), I("uput", tasCSR, 10), I("f32v2axpy", 14, 8, 8), I("uput", tasCSR, 11), I("f16v4mix", 4, 2, 2)},
			want: []regAt{wantA(4, hh(2, -32)), wantA(5, hh(3, 4))}},
		{name: "gacc reads the axpy results as f16", tas: fb(3), a: regsA(fb(1+0x1p-12), fb(65536), 0, 0),
			prog: []in{I("f32v2axpy", 14, 0, 2), I("f16v4gacc", 4)},
			want: []regAt{wantA(4, h(3)|0x7C00<<16), wantA(5, 0)}},
	}
	runTASCases(t, cases)
}

// TestAxpyAcrossRuns: the state one run of a worker leaves behind is what
// its next run's first f32v2axpy returns, by default (amp-state-retained);
// the conservative exit zeroes it.
func TestAxpyAcrossRuns(t *testing.T) {
	for _, tc := range []struct {
		set    AssumptionSet
		lo, hi uint32
	}{
		{DefaultAssumptions, fb(13), fb(26)},
		{ConservativeAssumptions, 0, 0},
	} {
		t.Run(tc.set.String(), func(t *testing.T) {
			tl := NewTile(0)
			tl.SetAssumptions(tc.set)
			w := &tl.Workers[2]
			copy(w.A[:], regsA(fb(1), fb(2), fb(10), fb(20)))
			w.CSR[csrTAS] = fb(3)
			runWorker(t, tl, 2, I("f32v2axpy", 14, 0, 2), I("exitz", mzero))
			runWorker(t, tl, 2, I("f32v2axpy", 4, 14, 14), I("exitz", mzero))
			if w.A[4] != tc.lo || w.A[5] != tc.hi {
				t.Errorf("second run's axpy returned %08x %08x, want %08x %08x", w.A[4], w.A[5], tc.lo, tc.hi)
			}
		})
	}
}
