package exchange

import (
	"reflect"
	"testing"
	"time"

	"github.com/ipustack/ipustack/ipu21"
)

// The reduce-scatter phase of the compiler's siglip-mlp-f16 build on 1472
// tiles as the plan family it had before compiler/mid planned it (27 grid
// rows x 54 grid columns, 1458 active tiles). Grid tile (i, j) is logical tile 54i + j. Each grid row
// holds a 27-token block whose f16 partial panel (27 x 1152 values) is cut
// into 54 chunks of 576 values (288 words): tile j sends chunk q, at
// rsSrcBase + 1152*q, to tile q of its row, which stores it at
// rsDstBase + 1152*j (77,274 one-to-one transfers, 15,264 words sent and
// received per tile). The buffer addresses are the build's placement;
// rsPhase(27, 54, 288) equals the phase `ipu build` schedules (checked
// against its export when the compiler was at 7353199).
const (
	rsSrcBase = 376832
	rsDstBase = 442368
)

func rsPhase(rows, cols, words int) Phase {
	p := Phase{ID: 2}
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			for q := 0; q < cols; q++ {
				if q == j {
					continue
				}
				p.Transfers = append(p.Transfers, Transfer{
					Src: ipu21.LogicalToPhysical(cols*i + j), SrcAddr: rsSrcBase + uint32(4*words*q), Words: words,
					Dsts: []Dest{{ipu21.LogicalToPhysical(cols*i + q), rsDstBase + uint32(4*words*j)}}})
			}
		}
	}
	return p
}

const rsSnapshot = "testdata/siglip-mlp-f16-reduce-scatter-1458.json.gz"

// TestReduceScatterSnapshot keeps testdata's reduce-scatter snapshot (for
// `ipu exchange bench`) equal to rsPhase (go test -run
// ReduceScatterSnapshot -update rewrites it).
func TestReduceScatterSnapshot(t *testing.T) {
	want := &Snapshot{Source: "rs_test.go rsPhase(27, 54, 288): the reduce-scatter phase of ipu build --workload siglip-mlp-f16 (1458 tiles)", Phases: []Phase{rsPhase(27, 54, 288)}}
	if *update {
		if err := WriteSnapshotFile(rsSnapshot, want); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadSnapshotFile(rsSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s differs from rsPhase (go test -run ReduceScatterSnapshot -update)", rsSnapshot)
	}
}

// TestReduceScatter: the build's reduce-scatter meets issue 6's target
// (horizon <= 1.05 x bound + 200; it was 18,267 against 15,264 before the
// edge-colouring pass) and is validated; smaller instances of the same
// shape, and the full one unless -short, run on the emulator word by word.
func TestReduceScatter(t *testing.T) {
	cases := []struct{ rows, cols, words int }{{2, 54, 288}, {27, 8, 64}, {4, 16, 100}}
	if !testing.Short() {
		cases = append(cases, struct{ rows, cols, words int }{27, 54, 288})
	}
	for _, c := range cases {
		p := rsPhase(c.rows, c.cols, c.words)
		t0 := time.Now()
		s := build(t, p, Options{})
		el := time.Since(t0)
		t.Logf("reduce-scatter %d x %d tiles x %d words: %d transfers, bound %d horizon %d gap %.2f%% (target %d), build+validate %v",
			c.rows, c.cols, c.words, len(p.Transfers), s.LowerBound, s.Horizon, 100*float64(s.Horizon-s.LowerBound)/float64(s.LowerBound), TargetHorizon(s.LowerBound), el)
		if s.Horizon > TargetHorizon(s.LowerBound) {
			t.Errorf("reduce-scatter %d x %d x %d: horizon %d over target %d", c.rows, c.cols, c.words, s.Horizon, TargetHorizon(s.LowerBound))
		}
		runChip(t, s)
	}
}
