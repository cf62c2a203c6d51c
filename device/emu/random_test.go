package emu

import (
	"math/rand/v2"
	"testing"

	"github.com/ipustack/ipustack/isa"
)

// TestRandomProgramsNeverPanic runs random words, and random encodings of
// real rows with random operands, as supervisor and worker code. Whatever
// happens must be a clean stop, never a panic.
func TestRandomProgramsNeverPanic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for prog := 0; prog < 3000; prog++ {
		tl := NewTile(prog)
		words := make([]uint32, 64)
		for i := range words {
			if rng.IntN(2) == 0 {
				words[i] = rng.Uint32()
				continue
			}
			row := isa.Table[rng.IntN(len(isa.Table))]
			vals := make([]int64, len(row.Operands))
			for j := range row.Operands {
				lo, hi := row.Operands[j].Range()
				v := lo + rng.Int64N(hi-lo+1)
				if s := row.Operands[j].Shift; s > 0 {
					v = (v-row.Operands[j].Offset)>>s<<s + row.Operands[j].Offset
				}
				vals[j] = v
			}
			w, err := row.Encode(vals, false)
			if err != nil {
				continue
			}
			words[i] = w[0]
		}
		if err := tl.WriteWords(workerBase, words); err != nil {
			t.Fatal(err)
		}
		for r := range tl.Sup.M {
			tl.Sup.M[r] = rng.Uint32()
		}
		tl.Start(workerBase)
		tl.StartWorker(prog%NumWorkers, workerBase+4*uint32(rng.IntN(32)), dataBase)
		for i := 0; i < 3; i++ {
			res, _ := tl.Run(5000)
			if res.Reason == StopSync {
				tl.ReleaseSync()
			}
		}
	}
}
