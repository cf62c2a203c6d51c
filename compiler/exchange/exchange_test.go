package exchange

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
)

// Latency allowance of a phase with no endpoint conflicts: a transfer's
// last word lands at ts + 1 + ttm + L + n - 1 with ts >= max(0, -ttm), so
// the row of its receiver ends at most 1 + MaxTimeToMux + PayloadLatency +
// 2*(PhysicalRows-1) events after its n words: 209 events.
const latencyAllowance = 1 + ipu21.MaxTimeToMux + ipu21.PayloadLatency + 2*(ipu21.PhysicalRows-1)

// TestOracle: IPU21.md's oracle transfer, physical 0 -> 53, 3 words.
func TestOracle(t *testing.T) {
	p := Phase{ID: 0, Transfers: []Transfer{{Src: 0, SrcAddr: 0x80000, Words: 3, Dsts: []Dest{{53, 0x90000}}}}}
	s := build(t, p, Options{})
	runChip(t, s)
	// ttm(0 -> 53) = -23: the send issues at timeline 23 so that the
	// window opens at event 1; the first word lands at 1 + 52 + 2*row(53).
	if s.LowerBound != 3 || s.Horizon != 1+52+3 {
		t.Errorf("bound %d horizon %d, want 3 and 56", s.LowerBound, s.Horizon)
	}
	t.Logf("sender:\n%s", s.Assembly(0))
	t.Logf("receiver:\n%s", s.Assembly(53))
}

func TestRandomPhases(t *testing.T) {
	n := 48
	if testing.Short() {
		n = 12
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		mixed := seed%2 == 0
		guard := NoGuard
		if seed%3 != 0 {
			guard = 0 // the default: DefaultGuard
		}
		p := randomPhase(seed, mixed)
		s := build(t, p, Options{Guard: guard})
		runChip(t, s)
		t.Logf("seed %2d: %2d tiles %3d transfers mixed=%v guard=%d: horizon %6d bound %6d gap %5d", seed, len(s.Tiles), len(p.Transfers), mixed, guard, s.Horizon, s.LowerBound, s.Horizon-s.LowerBound)
	}
}

// TestAllToAll: 16 tiles (logical 0..15), each sends n words to each other.
func TestAllToAll(t *testing.T) {
	for _, n := range []int{1, 16, 64, 256} {
		var tiles []int
		for l := 0; l < 16; l++ {
			tiles = append(tiles, ipu21.LogicalToPhysical(l))
		}
		p := Phase{ID: 1}
		for i, s := range tiles {
			for j, d := range tiles {
				if i == j {
					continue
				}
				p.Transfers = append(p.Transfers, Transfer{Src: s, SrcAddr: dataBase + uint32(4*n*j), Words: n,
					Dsts: []Dest{{d, 0x80000 + uint32(4*n*i)}}})
			}
		}
		s := build(t, p, Options{})
		runChip(t, s)
		t.Logf("all-to-all 16 tiles x %d words: horizon %d bound %d gap %d", n, s.Horizon, s.LowerBound, s.Horizon-s.LowerBound)
		if s.Horizon > s.LowerBound*3/2+latencyAllowance {
			t.Errorf("all-to-all %d: horizon %d too far above bound %d", n, s.Horizon, s.LowerBound)
		}
	}
}

// TestRing: all 1472 tiles, logical l sends n words to logical l+1.
func TestRing(t *testing.T) {
	for _, n := range []int{1, 100, 1000} {
		p := Phase{ID: 2}
		for l := 0; l < ipu21.Tiles; l++ {
			p.Transfers = append(p.Transfers, Transfer{Src: ipu21.LogicalToPhysical(l), SrcAddr: dataBase, Words: n,
				Dsts: []Dest{{ipu21.LogicalToPhysical((l + 1) % ipu21.Tiles), 0x80000}}})
		}
		s := build(t, p, Options{})
		runChip(t, s)
		t.Logf("ring 1472 x %d words: horizon %d bound %d gap %d", n, s.Horizon, s.LowerBound, s.Horizon-s.LowerBound)
		if s.Horizon > s.LowerBound+latencyAllowance {
			t.Errorf("ring: horizon %d > bound %d + allowance %d", s.Horizon, s.LowerBound, latencyAllowance)
		}
	}
}

// TestBidirectionalRing: each tile sends to both neighbours, and receives
// from both, in one phase (full duplex with two receive windows per tile).
func TestBidirectionalRing(t *testing.T) {
	const n = 200
	p := Phase{ID: 3}
	N := 256
	for l := 0; l < N; l++ {
		s := ipu21.LogicalToPhysical(l)
		p.Transfers = append(p.Transfers,
			Transfer{Src: s, SrcAddr: dataBase, Words: n, Dsts: []Dest{{ipu21.LogicalToPhysical((l + 1) % N), 0x80000}}},
			Transfer{Src: s, SrcAddr: dataBase + 4*n, Words: n, Dsts: []Dest{{ipu21.LogicalToPhysical((l + N - 1) % N), 0x90000}}})
	}
	s := build(t, p, Options{})
	runChip(t, s)
	t.Logf("bidirectional ring %d x %d words: horizon %d bound %d gap %d", N, n, s.Horizon, s.LowerBound, s.Horizon-s.LowerBound)
	if s.Horizon > s.LowerBound+2*latencyAllowance {
		t.Errorf("horizon %d too far above bound %d", s.Horizon, s.LowerBound)
	}
}

// TestBroadcast: one tile multicasts to 63 others; each of them also
// sends a word back (many-to-one).
func TestBroadcast(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	root := 700
	x := Transfer{Src: root, SrcAddr: dataBase, Words: 1000}
	p := Phase{ID: 4}
	for len(x.Dsts) < 63 {
		d := rng.IntN(ipu21.Tiles)
		dup := d == root
		for _, e := range x.Dsts {
			dup = dup || e.Tile == d
		}
		if !dup {
			x.Dsts = append(x.Dsts, Dest{d, 0x80000})
			p.Transfers = append(p.Transfers, Transfer{Src: d, SrcAddr: dataBase, Words: 16,
				Dsts: []Dest{{root, 0x80000 + uint32(64*len(x.Dsts))}}})
		}
	}
	p.Transfers = append(p.Transfers, x)
	s := build(t, p, Options{})
	runChip(t, s)
	t.Logf("broadcast 1 -> 63 x 1000 words + 63 x 16 back: horizon %d bound %d gap %d", s.Horizon, s.LowerBound, s.Horizon-s.LowerBound)
	if s.Horizon > s.LowerBound+2*latencyAllowance {
		t.Errorf("horizon %d too far above bound %d", s.Horizon, s.LowerBound)
	}
}

// TestInPlace: a tile sends a buffer and receives a new one into the same
// place in the same phase; the send must read first.
func TestInPlace(t *testing.T) {
	a, b, c := 0, 64, 130
	p := Phase{ID: 5, Transfers: []Transfer{
		{Src: a, SrcAddr: 0x80000, Words: 300, Dsts: []Dest{{b, 0x90000}}},
		{Src: c, SrcAddr: 0x80000, Words: 300, Dsts: []Dest{{a, 0x80000}}},
	}}
	// Schedule the writer first in priority: order must still put the read
	// first.
	s := build(t, p, Options{})
	runChip(t, s)
	cyc := Phase{ID: 6, Transfers: []Transfer{
		{Src: a, SrcAddr: 0x80000, Words: 30, Dsts: []Dest{{b, 0x90000}}},
		{Src: b, SrcAddr: 0x90000, Words: 30, Dsts: []Dest{{a, 0x80000}}},
	}}
	if _, err := Build(cyc, Options{Logger: quiet}); err == nil {
		t.Error("an in-place swap was accepted")
	}
}

func TestRejectsBadPhases(t *testing.T) {
	for name, p := range map[string]Phase{
		"loopback":   {Transfers: []Transfer{{Src: 1, SrcAddr: dataBase, Words: 4, Dsts: []Dest{{1, 0x80000}}}}},
		"misaligned": {Transfers: []Transfer{{Src: 1, SrcAddr: dataBase + 2, Words: 4, Dsts: []Dest{{2, 0x80000}}}}},
		"outside":    {Transfers: []Transfer{{Src: 1, SrcAddr: 0xE7FF0, Words: 8, Dsts: []Dest{{2, 0x80000}}}}},
		"dup dest":   {Transfers: []Transfer{{Src: 1, SrcAddr: dataBase, Words: 4, Dsts: []Dest{{2, 0x80000}, {2, 0x90000}}}}},
		"overlap": {Transfers: []Transfer{
			{Src: 1, SrcAddr: dataBase, Words: 4, Dsts: []Dest{{2, 0x80000}}},
			{Src: 3, SrcAddr: dataBase, Words: 4, Dsts: []Dest{{2, 0x80008}}}}},
		"no words": {Transfers: []Transfer{{Src: 1, SrcAddr: dataBase, Words: 0, Dsts: []Dest{{2, 0x80000}}}}},
		"bad tile": {Transfers: []Transfer{{Src: 1, SrcAddr: dataBase, Words: 4, Dsts: []Dest{{1472, 0x80000}}}}},
	} {
		if _, err := Build(p, Options{Logger: quiet}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDeterministic(t *testing.T) {
	for seed := uint64(1); seed < 6; seed++ {
		p := randomPhase(seed, true)
		a := build(t, p, Options{})
		b := build(t, p, Options{})
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two builds differ", seed)
		}
	}
}

func TestAssembly(t *testing.T) {
	p := randomPhase(3, false)
	s := build(t, p, Options{})
	for _, pr := range s.Tiles[:1] {
		txt := s.Assembly(pr.Tile)
		if txt == "" {
			t.Fatal("empty assembly")
		}
		t.Log(txt)
	}
	if s.Assembly(-5) != "" {
		t.Error("assembly of a non-participating tile")
	}
	_ = fmt.Sprint()
}
