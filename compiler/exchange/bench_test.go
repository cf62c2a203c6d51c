package exchange

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ipustack/ipustack/ipu21"
)

// bigPhase: every one of the 1472 tiles sends `words` words to each of
// `fan` random other tiles (fan separate transfers, ~30k for fan 20).
func bigPhase(fan, words int) Phase {
	rng := rand.New(rand.NewPCG(1472, uint64(fan)))
	next := make([]uint32, ipu21.Tiles)
	for i := range next {
		next[i] = 0x80000
	}
	p := Phase{ID: 9}
	for s := 0; s < ipu21.Tiles; s++ {
		seen := map[int]bool{s: true}
		for k := 0; k < fan; k++ {
			d := rng.IntN(ipu21.Tiles)
			for seen[d] {
				d = rng.IntN(ipu21.Tiles)
			}
			seen[d] = true
			p.Transfers = append(p.Transfers, Transfer{Src: s, SrcAddr: dataBase + uint32(4*words*k), Words: words,
				Dsts: []Dest{{d, next[d]}}})
			next[d] += uint32(4 * words)
		}
	}
	return p
}

func BenchmarkBuild1472(b *testing.B) {
	p := bigPhase(20, 20)
	var s *Schedule
	for b.Loop() {
		var err error
		s, err = Build(p, Options{Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(p.Transfers)), "transfers")
	b.ReportMetric(float64(s.Horizon), "horizon")
	b.ReportMetric(float64(s.LowerBound), "bound")
}

// TestBig1472 schedules the benchmark's phase, validates it and runs it on
// the emulator.
func TestBig1472(t *testing.T) {
	if testing.Short() {
		t.Skip("big phase")
	}
	p := bigPhase(20, 20)
	t0 := time.Now()
	s := build(t, p, Options{})
	el := time.Since(t0)
	runChip(t, s)
	t.Logf("1472 tiles, %d transfers of 20 words: horizon %d bound %d gap %d, build+validate %v", len(p.Transfers), s.Horizon, s.LowerBound, s.Horizon-s.LowerBound, el)
}
