package emu

import (
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"sort"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
)

// A small test-only exchange scheduler: transfers are placed one after
// another (serially) on a common timeline counted from the sync, each
// tile's row is generated from its timed sends and controls, and the run
// is checked word by word.

type xfer struct {
	src    int
	dsts   []int
	n      int // items (32-bit words, or 64-bit items when paired)
	paired bool
	saddr  uint32
	daddr  []uint32
	data   []uint32
}

// act is one timed action of a tile's row.
type act struct {
	at   int64 // send: issue timeline; control: event
	send bool
	n    int
	addr int64 // operand text value
	sctl int64
	id   string // delayxpic / delaypic
	sel  int64
	val  int64
}

func (a act) key() int64 {
	if a.send {
		return 2 * a.at
	}
	return 2*(a.at-1) + 1
}

func delays(prog []in, g int64) []in {
	for g > 0 {
		k := min(g, 1<<19)
		prog = append(prog, I("delay", k))
		g -= k
	}
	return prog
}

// row builds a tile's exchange row from its actions, ending at timeline h.
func row(t testing.TB, acts []act, h int64) []in {
	t.Helper()
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].key() < acts[j].key() })
	var prog []in
	cur := int64(0)
	for _, a := range acts {
		if a.send {
			if a.at < cur {
				t.Fatalf("scheduler: send at %d before %d", a.at, cur)
			}
			prog = delays(prog, a.at-cur)
			first := min(a.n, 64)
			prog = append(prog, I("send", int64(first), a.addr, a.sctl))
			if a.n > 64 {
				prog = append(prog, I("sendoff", int64(a.n-64), 0, a.sctl))
			}
			cur = a.at + int64(a.n)
			continue
		}
		n := a.at - cur
		if n < 1 {
			t.Fatalf("scheduler: control at %d, timeline already at %d", a.at, cur)
		}
		lim := int64(4096)
		if a.id == "delaypic" {
			lim = 128
		}
		if n > lim {
			prog = delays(prog, n-lim)
			n = lim
		}
		prog = append(prog, I(a.id, n, a.sel, a.val))
		cur = a.at
	}
	if h <= cur {
		t.Fatalf("scheduler: horizon %d before %d", h, cur)
	}
	return delays(prog, h-cur)
}

// firstFree returns the first event >= e not in taken.
func firstFree(e int64, taken ...int64) int64 {
	for {
		ok := true
		for _, x := range taken {
			if x == e {
				ok = false
			}
		}
		if ok {
			return e
		}
		e++
	}
}

// schedule places the transfers from event g, serially, and returns each
// tile's actions and the next free event.
func schedule(rng *rand.Rand, xs []xfer, g int64, acts map[int][]act) int64 {
	return scheduleOn(rng, xs, func(int) int64 { return g }, func(_ []int, end int64) { g = end }, acts, &g)
}

// scheduleConcurrent places each transfer as early as its own tiles allow
// (a tile does one thing at a time; transfers on other tiles overlap).
func scheduleConcurrent(rng *rand.Rand, xs []xfer, acts map[int][]act) int64 {
	cur := map[int]int64{}
	var h int64 = 1
	return scheduleOn(rng, xs, func(t int) int64 { return max(1, cur[t]) },
		func(ts []int, end int64) {
			for _, t := range ts {
				cur[t] = end
			}
			h = max(h, end)
		}, acts, &h)
}

func scheduleOn(rng *rand.Rand, xs []xfer, free func(tile int) int64, busy func(tiles []int, end int64), acts map[int][]act, h *int64) int64 {
	for _, x := range xs {
		delay := func(d int) int64 {
			if x.paired {
				return int64(ipu21.PairedTimeToMux(x.src, d)) - 1
			}
			return int64(ipu21.TimeToMux(x.src, d))
		}
		tiles := append([]int{x.src}, x.dsts...)
		if x.paired {
			tiles = append(tiles, x.src^2)
		}
		ts := free(x.src)
		if x.paired {
			ts = max(ts, free(x.src^2))
		}
		for _, d := range x.dsts {
			ts = max(ts, free(d)-delay(d))
		}
		sctl := int64(ipu21.SendBoth)
		if len(x.dsts) == 1 || (x.paired && len(x.dsts) == 2) {
			sctl = int64(ipu21.SendDirection(x.src, x.dsts[0]))
		}
		addr := int64(x.saddr)
		if x.paired {
			sctl |= ipu21.SendPaired
			addr /= 2
		}
		acts[x.src] = append(acts[x.src], act{at: ts, send: true, n: x.n, addr: addr, sctl: sctl})
		end := ts + int64(x.n)
		for i, d := range x.dsts {
			a := ts + delay(d) + 1
			L := int64(ipu21.PayloadLatency + 2*ipu21.Row(d))
			ptr := int64(x.daddr[i] >> 2)
			n := int64(x.n)
			if !x.paired {
				pe := a + L
				if n == L {
					pe-- // ipu-stack's 52-word shape: pointer one event early
				}
				ne := firstFree(a+n, pe)
				acts[d] = append(acts[d],
					act{at: a, id: "delayxpic", val: int64(x.src)},
					act{at: ne, id: "delayxpic", val: ipu21.MuxNeutral},
					act{at: pe, id: "delaypic", val: ptr})
				end = max(end, ne, a+L+n)
				continue
			}
			f := a + L - 1
			acts[d] = append(acts[d],
				act{at: f, id: "delaypic", sel: 1, val: int64(ipu21.SendDirection(x.src, d))},
				act{at: f + 2, id: "delaypic", val: ptr},
				act{at: f + n, id: "delaypic", sel: 1, val: 0})
			end = max(end, a+L+n+1, f+n)
			if i%2 == 0 {
				// One tile of the receiving pair selects the pair's
				// source; which one and which lane it names vary.
				owner := d
				if rng.IntN(2) == 1 {
					owner = x.dsts[i+1]
				}
				v := int64(x.src ^ 2*rng.IntN(2))
				ne := firstFree(a+n, f, f+2, f+n)
				acts[owner] = append(acts[owner],
					act{at: a, id: "delayxpic", sel: 1, val: v},
					act{at: ne, id: "delayxpic", sel: 1, val: ipu21.MuxNeutral})
				end = max(end, ne)
			}
		}
		busy(tiles, end+2)
	}
	return *h
}

var wordCounts = []int{1, 2, 3, 15, 16, 31, 32, 51, 52, 53, 63, 64, 65, 127, 128, 255, 256, 1023, 1024, 4095}
var pairedCounts = []int{64, 65, 127, 128, 255, 256, 1023, 1024}

type randomChip struct {
	c     *Chip
	xs    []xfer
	words uint64
}

// buildRandom makes a chip of 2..64 tiles with phases of random
// transfers (unicast, multicast, paired) and loads every tile's program.
func buildRandom(t testing.TB, seed uint64) *randomChip {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x1234))
	ntiles := 2 + rng.IntN(63)
	set := map[int]bool{}
	for len(set) < ntiles {
		p := rng.IntN(ipu21.Tiles)
		set[p] = true
		if rng.IntN(2) == 0 && len(set) < ntiles {
			set[p^2] = true
		}
	}
	var ids []int
	for p := range set {
		ids = append(ids, p)
	}
	sort.Ints(ids)
	c := newChip(t, ids...)
	rc := &randomChip{c: c}
	srcNext := map[int]uint32{}
	dstNext := map[int]uint32{}
	progs := map[int][]in{}
	for _, id := range ids {
		srcNext[id], dstNext[id] = 0x80000, 0xB0000
		progs[id] = nil
	}
	phases := 1 + rng.IntN(3)
	for ph := 0; ph < phases; ph++ {
		var xs []xfer
		for k := 1 + rng.IntN(6); k > 0; k-- {
			x := xfer{src: ids[rng.IntN(len(ids))]}
			// Paired: whole receiving pairs, not the sender's pair.
			var pairs []int
			for _, p := range ids {
				if p&2 == 0 && set[p^2] && p != x.src&^2 {
					pairs = append(pairs, p)
				}
			}
			if len(pairs) > 0 && rng.IntN(3) == 0 {
				x.paired = true
				x.n = pairedCounts[rng.IntN(len(pairedCounts))]
				rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
				for _, p := range pairs[:1+rng.IntN(min(len(pairs), 3))] {
					x.dsts = append(x.dsts, p, p^2)
				}
			} else {
				x.n = wordCounts[rng.IntN(len(wordCounts))]
				if rng.IntN(4) == 0 {
					x.n = 1 + rng.IntN(4160)
				}
				var others []int
				for _, p := range ids {
					if p != x.src {
						others = append(others, p)
					}
				}
				rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
				x.dsts = others[:1+rng.IntN(min(len(others), 4))]
			}
			words := x.n
			if x.paired {
				words *= 2
			}
			bytes := uint32(4*words+8+7) &^ 7
			if srcNext[x.src]+bytes > 0xB0000 {
				continue
			}
			fits := true
			for _, d := range x.dsts {
				if dstNext[d]+bytes > 0xE7000 {
					fits = false
				}
			}
			if !fits {
				continue
			}
			x.saddr = srcNext[x.src]
			srcNext[x.src] += bytes
			x.data = fill(t, c.Tile(x.src), x.saddr, words, uint32(rng.Uint64()))
			for _, d := range x.dsts {
				x.daddr = append(x.daddr, dstNext[d])
				dstNext[d] += bytes
				rc.words += uint64(words)
			}
			xs = append(xs, x)
		}
		acts := map[int][]act{}
		var h int64
		if seed%2 == 1 {
			h = scheduleConcurrent(rng, xs, acts) + 8
		} else {
			h = schedule(rng, xs, 1, acts) + 8
		}
		for _, id := range ids {
			progs[id] = append(progs[id], I("sync", 3))
			progs[id] = append(progs[id], row(t, acts[id], h)...)
		}
		rc.xs = append(rc.xs, xs...)
	}
	for _, id := range ids {
		loadProg(t, c, id, append(progs[id], I("sync", 7))...)
	}
	return rc
}

func (rc *randomChip) check(t testing.TB) {
	t.Helper()
	for xi, x := range rc.xs {
		for i, d := range x.dsts {
			got := readWords(t, rc.c.Tile(d), x.daddr[i], len(x.data)+1)
			for k, w := range x.data {
				if got[k] != w {
					t.Fatalf("transfer %d (%d -> %v, %d items, paired %v): receiver %d word %d = %08x, want %08x",
						xi, x.src, x.dsts, x.n, x.paired, d, k, got[k], w)
				}
			}
			if got[len(x.data)] != 0 {
				t.Fatalf("transfer %d: receiver %d: word past the end written", xi, d)
			}
		}
	}
	if s := rc.c.Stats(); s.Words != rc.words {
		t.Fatalf("chip wrote %d words, want %d", s.Words, rc.words)
	}
}

func TestRandomPhases(t *testing.T) {
	n := 60
	if testing.Short() {
		n = 10
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		rc := buildRandom(t, seed)
		if _, err := rc.c.Run(1 << 30); err != nil {
			t.Fatalf("seed %d (%d tiles, %d transfers): %v", seed, len(rc.c.Tiles()), len(rc.xs), err)
		}
		rc.check(t)
	}
}

// chipDigest hashes every tile's SRAM, cycle and the chip's counters.
func chipDigest(c *Chip) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, tl := range c.Tiles() {
		h.Write(tl.mem)
		for i := range b {
			b[i] = byte(tl.cycle >> (8 * i))
		}
		h.Write(b[:])
	}
	s := c.Stats()
	for _, v := range []uint64{s.Words, s.Syncs, s.Rounds} {
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

func TestDeterminism(t *testing.T) {
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)
	for seed := uint64(100); seed < 104; seed++ {
		var digests []uint64
		var cycles []uint64
		for _, procs := range []int{1, 2, 1, 4} {
			runtime.GOMAXPROCS(procs)
			rc := buildRandom(t, seed)
			res, err := rc.c.Run(1 << 30)
			if err != nil {
				t.Fatal(err)
			}
			rc.check(t)
			digests = append(digests, chipDigest(rc.c))
			cycles = append(cycles, res.Cycle)
		}
		for i := range digests {
			if digests[i] != digests[0] || cycles[i] != cycles[0] {
				t.Fatalf("seed %d: runs differ: digests %x cycles %v", seed, digests, cycles)
			}
		}
	}
}
