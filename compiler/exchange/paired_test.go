package exchange

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
)

// gapTarget is issue 6's quality target: horizon <= 1.05 x bound + 200.
// The allowance covers fabric latency no order can hide: one transfer of
// n words ends n + 165 events after the sync at worst (TestLatencyAllowance).
func gapTarget(bound int) int { return TargetHorizon(bound) }

// TestLatencyAllowance: the worst single transfer's latency (window at
// max(1, 1 + ttm), last write L + n later) over all tile pairs, ordinary
// and paired, is within the 200-event allowance.
func TestLatencyAllowance(t *testing.T) {
	worst := 0
	for s := 0; s < ipu21.Tiles; s++ {
		for d := 0; d < ipu21.Tiles; d++ {
			if s == d {
				continue
			}
			L := ipu21.PayloadLatency + 2*ipu21.Row(d)
			worst = max(worst, max(1, 1+ipu21.TimeToMux(s, d))+L, max(1, ipu21.PairedTimeToMux(s, d))+L+1)
		}
	}
	if worst != 165 {
		t.Errorf("worst single-transfer latency %d, the documented figure is 165", worst)
	}
}

// TestPairedOracle: ipu-stack's SDK-matched paired rows (0 -> 64 and 66,
// 64 items; the emulator's TestIpuStackPairedRows): the send issues at
// timeline 31 and the pair's window opens at event 1.
func TestPairedOracle(t *testing.T) {
	p := Phase{Transfers: []Transfer{{Src: 0, SrcAddr: 0x50000, Words: 128, Paired: true, Dsts: []Dest{{64, 0x60000}, {66, 0x60000}}}}}
	s := build(t, p, Options{})
	runChip(t, s)
	// 64 items; row 1: first write at 1 + 52 + 2 + 1 = 56, last at 119.
	if s.LowerBound != 64 || s.Horizon != 120 || s.PairedSends != 1 {
		t.Errorf("bound %d horizon %d paired %d, want 64, 120, 1", s.LowerBound, s.Horizon, s.PairedSends)
	}
	asm := s.Assembly(0)
	if !strings.Contains(asm, "ev 1..31") && !strings.Contains(asm, "events 1..31") {
		t.Errorf("sender does not wait 31 events:\n%s", asm)
	}
	t.Logf("sender:\n%s\nreceiver 64:\n%s\nreceiver 66:\n%s", asm, s.Assembly(64), s.Assembly(66))
}

// TestPartnerReservation: a paired send borrows the partner's lane, so
// the partner's own sends wait and the bound counts the reservation.
func TestPartnerReservation(t *testing.T) {
	p := Phase{Transfers: []Transfer{
		{Src: 0, SrcAddr: 0x50000, Words: 512, Paired: true, Dsts: []Dest{{64, 0x80000}, {66, 0x80000}}},
		{Src: 2, SrcAddr: 0x50000, Words: 300, Dsts: []Dest{{130, 0x80000}}},
		{Src: 2, SrcAddr: 0x51000, Words: 200, Dsts: []Dest{{200, 0x80000}}},
	}}
	s := build(t, p, Options{})
	runChip(t, s)
	// Tile 2: 500 words of its own + 256 items of tile 0's.
	if s.LowerBound != 756 {
		t.Errorf("bound %d, want 756 (tile 2's 500 words + tile 0's 256 paired items)", s.LowerBound)
	}
	if s.Horizon > gapTarget(s.LowerBound) {
		t.Errorf("horizon %d over target %d", s.Horizon, gapTarget(s.LowerBound))
	}
	t.Logf("bound %d horizon %d", s.LowerBound, s.Horizon)
}

// randomPairedPhase: transfers among the tiles of random whole pairs,
// some multicast to whole pairs (paired candidates, or forced paired),
// some point to point; data outside the code's element.
func randomPairedPhase(seed uint64, npairs int) Phase {
	rng := rand.New(rand.NewPCG(seed, 0x64))
	set := map[int]bool{}
	for len(set) < npairs {
		set[rng.IntN(ipu21.Tiles)&^2] = true
	}
	var pairs []int
	for p := range set {
		pairs = append(pairs, p)
	}
	slices.Sort(pairs)
	srcNext, dstNext := map[int]uint32{}, map[int]uint32{}
	for _, p := range pairs {
		for _, t := range []int{p, p | 2} {
			srcNext[t], dstNext[t] = dataBase, 0x80000
		}
	}
	ph := Phase{ID: int(seed)}
	for k := 4 + rng.IntN(40); k > 0; k-- {
		sp := pairs[rng.IntN(len(pairs))]
		src := sp | rng.IntN(2)*2
		words := 2 * (64 + rng.IntN(400))
		if rng.IntN(4) == 0 {
			words = 1 + rng.IntN(300)
		}
		x := Transfer{Src: src, Words: words}
		bytes := uint32(4*words+7) &^ 7
		if srcNext[src]+bytes > 0x80000 {
			continue
		}
		var cand []int
		for _, p := range pairs {
			if p != sp {
				cand = append(cand, p)
			}
		}
		rng.Shuffle(len(cand), func(i, j int) { cand[i], cand[j] = cand[j], cand[i] })
		np := 1 + rng.IntN(min(len(cand), 4))
		var dsts []int
		for _, p := range cand[:np] {
			dsts = append(dsts, p, p|2)
		}
		if rng.IntN(3) == 0 {
			dsts = dsts[:len(dsts)-1] // one tile without its partner: a split
		}
		ok := true
		for _, d := range dsts {
			ok = ok && dstNext[d]+bytes <= 0xE7000
		}
		if !ok {
			continue
		}
		x.SrcAddr = srcNext[src]
		srcNext[src] += bytes
		// Pairs share an address (the later of the two members' next).
		for i := 0; i < len(dsts); i++ {
			a := dstNext[dsts[i]]
			if i+1 < len(dsts) && dsts[i+1] == dsts[i]|2 {
				a = max(a, dstNext[dsts[i+1]])
				x.Dsts = append(x.Dsts, Dest{dsts[i], a}, Dest{dsts[i+1], a})
				dstNext[dsts[i]], dstNext[dsts[i+1]] = a+bytes, a+bytes
				i++
				continue
			}
			x.Dsts = append(x.Dsts, Dest{dsts[i], a})
			dstNext[dsts[i]] = a + bytes
		}
		x.Paired = words%2 == 0 && words >= 2*MinPairedItems && len(x.Dsts)%2 == 0 && rng.IntN(4) == 0
		ph.Transfers = append(ph.Transfers, x)
	}
	return ph
}

// TestRandomPaired: random phases with paired candidates and forced
// paired transfers, paired auto, both guards; every schedule validated and
// run on the emulator word by word.
func TestRandomPaired(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 30
	}
	used := 0
	for seed := uint64(1); seed <= uint64(n); seed++ {
		p := randomPairedPhase(seed, 2+int(seed)%30)
		guard := 0
		if seed%3 == 0 {
			guard = NoGuard
		}
		s := build(t, p, Options{Paired: PairedAuto, Guard: guard})
		runChip(t, s)
		if s.PairedSends > 0 {
			used++
		}
		t.Logf("seed %2d: %3d transfers, %2d paired sends: horizon %5d bound %5d cmp %+v", seed, len(p.Transfers), s.PairedSends, s.Horizon, s.LowerBound, s.Compared)
	}
	if used < n/2 {
		t.Errorf("paired sends in only %d of %d phases", used, n)
	}
}

// TestMLPPhases schedules testdata's MLP snapshot (paired auto), checks
// the quality target, and runs the paired row-block multicast on the
// emulator word by word.
func TestMLPPhases(t *testing.T) {
	snap, err := ReadSnapshotFile(mlpSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := BuildAll(snap.Phases, Options{Paired: PairedAuto, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range ss {
		if err := s.Validate(); err != nil {
			t.Fatalf("phase %d: %v", i, err)
		}
		t.Logf("phase %d: %d transfers bound %d horizon %d gap %.2f%% paired sends %d", s.Phase.ID, len(s.Phase.Transfers), s.LowerBound, s.Horizon,
			100*float64(s.Horizon-s.LowerBound)/float64(s.LowerBound), s.PairedSends)
		if s.Horizon > gapTarget(s.LowerBound) {
			t.Errorf("phase %d: horizon %d over target %d", i, s.Horizon, gapTarget(s.LowerBound))
		}
	}
	if ss[0].PairedSends == 0 || ss[0].Compared == nil || !ss[0].Compared.UsePaired {
		t.Error("the row-block multicast does not use paired sends")
	}
	if !testing.Short() {
		runChip(t, ss[0])
		runChip(t, ss[2])
	}
}

// TestBuildAllDeterministic: BuildAll gives the same words with one and
// two workers, and the same as Build phase by phase.
func TestBuildAllDeterministic(t *testing.T) {
	var phases []Phase
	for seed := uint64(1); seed <= 6; seed++ {
		phases = append(phases, randomPhase(seed, seed%2 == 0), randomPairedPhase(seed, 12))
	}
	phases = append(phases, bigPhase(4, 16))
	opt := Options{Paired: PairedAuto, Logger: quiet}
	var runs [][]*Schedule
	for _, procs := range []int{1, 2, 1} {
		old := runtime.GOMAXPROCS(procs)
		ss, err := BuildAll(phases, opt)
		runtime.GOMAXPROCS(old)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, ss)
	}
	for i := range phases {
		one, err := Build(phases[i], opt)
		if err != nil {
			t.Fatal(err)
		}
		for r := range runs {
			if !reflect.DeepEqual(runs[r][i], one) {
				t.Fatalf("phase %d: run %d differs from Build", i, r)
			}
		}
	}
	bad := append(slices.Clone(phases), Phase{ID: 99, Transfers: []Transfer{{Src: 1, Words: 1}}})
	if _, err := BuildAll(bad, opt); err == nil || !strings.Contains(err.Error(), "phase 99") {
		t.Errorf("BuildAll of a bad phase: %v", err)
	}
}

// gapPhase makes a random phase over ntiles tiles (8..1472): every tile
// sends to a few others, point to point or multicast; buffers sized so
// that loads vary between tiles.
func gapPhase(seed uint64, ntiles int, multicast bool) Phase {
	rng := rand.New(rand.NewPCG(seed, uint64(ntiles)))
	perm := rng.Perm(ipu21.Tiles)[:ntiles]
	next := map[int]uint32{}
	for _, id := range perm {
		next[id] = 0x80000
	}
	p := Phase{ID: int(seed)}
	for i, s := range perm {
		fan := 1 + rng.IntN(min(6, ntiles-1))
		src := uint32(dataBase)
		for k := 0; k < fan; k++ {
			words := 1 + rng.IntN(400)
			bytes := uint32(4*words+7) &^ 7
			nd := 1
			if multicast {
				nd = 1 + rng.IntN(min(8, ntiles-1))
			}
			x := Transfer{Src: s, SrcAddr: src, Words: words}
			seen := map[int]bool{s: true}
			for len(x.Dsts) < nd {
				d := perm[(i+1+rng.IntN(ntiles-1))%ntiles]
				if seen[d] || next[d]+bytes > 0xE7000 {
					if len(seen) >= ntiles {
						break
					}
					seen[d] = true
					continue
				}
				seen[d] = true
				x.Dsts = append(x.Dsts, Dest{d, next[d]})
				next[d] += bytes
			}
			if len(x.Dsts) == 0 || src+bytes > 0x80000 {
				continue
			}
			src += bytes
			p.Transfers = append(p.Transfers, x)
		}
	}
	return p
}

// TestRandomGap: randomised phases of 8 to 1472 tiles, point to point and
// multicast: scheduled (paired auto), validated, run on the emulator word
// by word, and each horizon held against its bound. Point-to-point phases
// of 64 tiles and more must meet issue 6's target (TargetHorizon).
// Random multicast cannot in general: transfers that pairwise share a
// receiver must run one after another whatever the order (three of n
// words on receivers {a,b}, {b,c}, {a,c} need 3n events against an
// endpoint bound of 2n), so for them the test bounds the gap at 25 % +
// 200 and logs it (TestMulticastGapDistribution has the distribution).
func TestRandomGap(t *testing.T) {
	sizes := []int{8, 16, 64, 256, 1472}
	if testing.Short() {
		sizes = []int{8, 64, 256}
	}
	for _, n := range sizes {
		for _, mc := range []bool{false, true} {
			for seed := uint64(1); seed <= 2; seed++ {
				p := gapPhase(seed, n, mc)
				s := build(t, p, Options{Paired: PairedAuto})
				runChip(t, s)
				gap := 100 * float64(s.Horizon-s.LowerBound) / float64(s.LowerBound)
				t.Logf("%4d tiles multicast=%-5v seed %d: %5d transfers bound %5d horizon %5d gap %6.2f%% (target %d)", n, mc, seed, len(p.Transfers), s.LowerBound, s.Horizon, gap, gapTarget(s.LowerBound))
				switch {
				case !mc && n >= 64 && s.Horizon > gapTarget(s.LowerBound):
					t.Errorf("%d tiles point to point seed %d: horizon %d over target %d", n, seed, s.Horizon, gapTarget(s.LowerBound))
				case s.Horizon > s.LowerBound*5/4+200:
					t.Errorf("%d tiles multicast=%v seed %d: horizon %d over 1.25 x bound + 200", n, mc, seed, s.Horizon)
				}
			}
		}
	}
}
