package emu

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ipustack/ipustack/ipu21"
)

// benchChip makes a chip of n tiles in disjoint pairs (a, b): in each
// phase a sends words 32-bit words to b, then b sends them back, all
// pairs at once. Every tile loops over the phase iters times.
func benchChip(b *testing.B, n, words, iters int) *Chip {
	b.Helper()
	rng := rand.New(rand.NewPCG(7, 7))
	ids := rng.Perm(ipu21.Tiles)[:n]
	c := newChip(b, ids...)
	acts := map[int][]act{}
	h := int64(0)
	for i := 0; i+1 < n; i += 2 {
		a, d := ids[i], ids[i+1]
		fill(b, c.Tile(a), 0x80000, words, uint32(i))
		fill(b, c.Tile(d), 0x80000, words, uint32(i+1))
		xs := []xfer{
			{src: a, dsts: []int{d}, n: words, saddr: 0x80000, daddr: []uint32{0xB0000}},
			{src: d, dsts: []int{a}, n: words, saddr: 0x80000, daddr: []uint32{0xB0000}},
		}
		h = max(h, schedule(rng, xs, 1, acts)+8)
	}
	for _, id := range ids {
		const loop = supBase + 4
		prog := []in{I("setzi", 1, int64(iters-1)), I("sync", 3)}
		prog = append(prog, row(b, acts[id], h)...)
		prog = append(prog, I("brnzdec", 1, loop), I("sync", 7))
		loadProg(b, c, id, prog...)
	}
	return c
}

// BenchmarkExchange reports exchanged 32-bit words per second of host
// time: 256 tiles, 4096-word transfers in both directions of 128 pairs
// (1 Mi words per phase).
func BenchmarkExchange(b *testing.B) {
	const tiles, words, iters = 256, 4096, 8
	var total uint64
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := benchChip(b, tiles, words, iters)
		b.StartTimer()
		start := time.Now()
		res, err := c.Run(1 << 40)
		elapsed += time.Since(start)
		if err != nil || res.Reason != ChipHost {
			b.Fatalf("run: %v %v", res.Reason, err)
		}
		if w := c.Stats().Words; w != tiles*words*iters {
			b.Fatalf("exchanged %d words, want %d", w, tiles*words*iters)
		}
		total += c.Stats().Words
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "words/s")
}
