package exchange

import (
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/ipustack/ipustack/ipu21"
)

// The all-gather inside grid rows of a 32-tile build (`ipu build --workload
// mlp --tokens 96 --dim 128 --hidden 256 --tiles 32 --export-exchange DIR`,
// exchange phase 2): 4 grid rows of 8 tiles (logical tiles 8r..8r+7, so
// four whole pairs per row), every tile multicasting one 384-word block to
// the 7 others of its row. Paired, a tile receives 6 x 192 items from the
// three other pairs and 384 words from its partner (the partner's block
// cannot come paired): an endpoint bound of 1536. Sent as one paired
// multicast each, the pairs of a row must take turns (each multicast holds
// every other pair's source) and the partner exchanges fit into none of
// the turns: 2018 events before the pair-level rounds (pairColours).
const allGatherSnapshot = "testdata/mlp-t96-allgather-32.json.gz"

// TestAllGatherSnapshot: the build's all-gather meets the quality target
// (paired auto, as the build schedules it), validates, runs on the
// emulator word by word, and schedules the same with 1 and 2 threads.
func TestAllGatherSnapshot(t *testing.T) {
	snap, err := ReadSnapshotFile(allGatherSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	p := snap.Phases[0]
	t0 := time.Now()
	s := build(t, p, Options{Paired: PairedAuto})
	el := time.Since(t0)
	t.Logf("all-gather, 32 tiles: bound %d horizon %d gap %.2f%% (target %d), %d paired sends, %d split sends, build+validate %v",
		s.LowerBound, s.Horizon, 100*float64(s.Horizon-s.LowerBound)/float64(s.LowerBound), TargetHorizon(s.LowerBound), s.PairedSends, s.SplitSends, el)
	if s.LowerBound != 1536 {
		t.Errorf("bound %d, want 1536 (the paired assignment)", s.LowerBound)
	}
	if s.Horizon > TargetHorizon(s.LowerBound) {
		t.Errorf("horizon %d over target %d", s.Horizon, TargetHorizon(s.LowerBound))
	}
	runChip(t, s)
	old := runtime.GOMAXPROCS(1)
	s1, err := Build(p, Options{Paired: PairedAuto, Logger: quiet})
	runtime.GOMAXPROCS(old)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s1, s) {
		t.Error("the schedule differs with GOMAXPROCS 1")
	}
}

// allGatherPhase: groups of size consecutive logical tiles from logical
// tile first, every tile multicasting words words to the rest of its group,
// which stores block j at dstBase + 4*words*j (the build's layout).
func allGatherPhase(groups, size, words, first int) Phase {
	const srcBase, dstBase = 409600, 376832
	p := Phase{ID: 2}
	for g := 0; g < groups; g++ {
		for j := 0; j < size; j++ {
			x := Transfer{Src: ipu21.LogicalToPhysical(first + g*size + j), SrcAddr: srcBase, Words: words}
			for k := 0; k < size; k++ {
				if k != j {
					x.Dsts = append(x.Dsts, Dest{ipu21.LogicalToPhysical(first + g*size + k), dstBase + uint32(4*words*j)})
				}
			}
			p.Transfers = append(p.Transfers, x)
		}
	}
	return p
}

// TestAllGatherShapes: all-gathers in groups of whole pairs (2 to 8
// pairs, one group up to a whole chip of them, groups not starting at a
// block boundary) and of 6 tiles meet the quality target and run on the
// emulator.
func TestAllGatherShapes(t *testing.T) {
	cases := []struct{ groups, size, words, first int }{
		{1, 8, 384, 0}, {8, 4, 384, 0}, {2, 16, 192, 0}, {4, 8, 128, 0}, {4, 8, 384, 100}, {4, 6, 256, 0},
	}
	if !testing.Short() {
		cases = append(cases, struct{ groups, size, words, first int }{183, 8, 384, 0})
	}
	for _, c := range cases {
		p := allGatherPhase(c.groups, c.size, c.words, c.first)
		t0 := time.Now()
		s := build(t, p, Options{Paired: PairedAuto})
		el := time.Since(t0)
		t.Logf("%d groups of %d tiles x %d words from logical %d: bound %d horizon %d (target %d), %d paired sends, build+validate %v",
			c.groups, c.size, c.words, c.first, s.LowerBound, s.Horizon, TargetHorizon(s.LowerBound), s.PairedSends, el)
		if s.Horizon > TargetHorizon(s.LowerBound) {
			t.Errorf("%d groups of %d x %d: horizon %d over target %d", c.groups, c.size, c.words, s.Horizon, TargetHorizon(s.LowerBound))
		}
		runChip(t, s)
	}
}
