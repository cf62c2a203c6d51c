package exchange

import (
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/isa"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Code layout on every test tile: `sync 3` at codeBase (so the row starts
// 8-byte aligned at codeBase+4), the row, then `sync 7` (a host zone: the
// chip stops there). Data lives at dataBase and above, away from the code's
// memory element.
const (
	codeBase = 0x4C004
	dataBase = 0x50000
)

func enc(t testing.TB, id string, vals ...int64) []uint32 {
	t.Helper()
	w, err := isa.ByID(id).Encode(vals, false)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func build(t testing.TB, p Phase, opt Options) *Schedule {
	t.Helper()
	if opt.Logger == nil {
		opt.Logger = quiet
	}
	s, err := Build(p, opt)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return s
}

func pattern(x, k int) uint32 {
	return uint32(x+1)*0x9E3779B9 ^ uint32(k)*0x01000193 ^ 0x5A5A0000
}

// runChip loads the schedule's rows and every transfer's source data onto a
// chip of the participating tiles, runs the phase and checks every
// destination word (and that nothing else was written). It returns the
// chip.
func runChip(t testing.TB, s *Schedule) *emu.Chip {
	t.Helper()
	var ids []int
	for _, p := range s.Tiles {
		ids = append(ids, p.Tile)
	}
	c, err := emu.NewChip(ids...)
	if err != nil {
		t.Fatal(err)
	}
	if err := loadAndRun(t, c, s); err != nil {
		t.Fatalf("chip run: %v", err)
	}
	checkChip(t, c, s)
	return c
}

func loadAndRun(t testing.TB, c *emu.Chip, s *Schedule) error {
	t.Helper()
	for xi, x := range s.Phase.Transfers {
		data := make([]uint32, x.Words)
		for k := range data {
			data[k] = pattern(xi, k)
		}
		if err := c.Tile(x.Src).WriteWords(x.SrcAddr, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range s.Tiles {
		prog := enc(t, "sync", 3)
		prog = append(prog, p.Words...)
		prog = append(prog, enc(t, "sync", 7)...)
		if err := c.Tile(p.Tile).WriteWords(codeBase, prog); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(p.Tile, codeBase); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.Run(1 << 32)
	if err != nil {
		return err
	}
	if res.Reason != emu.ChipHost || res.Zone != 7 {
		return errors.New("chip did not stop at sync 7: " + res.Reason.String())
	}
	return nil
}

func checkChip(t testing.TB, c *emu.Chip, s *Schedule) {
	t.Helper()
	var words uint64
	for xi, x := range s.Phase.Transfers {
		for _, d := range x.Dsts {
			for k := 0; k < x.Words; k++ {
				w, err := c.Tile(d.Tile).ReadWord(d.Addr + uint32(4*k))
				if err != nil {
					t.Fatal(err)
				}
				if w != pattern(xi, k) {
					t.Fatalf("transfer %d (%d -> %d, %d words): word %d = %08x, want %08x", xi, x.Src, d.Tile, x.Words, k, w, pattern(xi, k))
				}
			}
			words += uint64(x.Words)
		}
	}
	if got := c.Stats().Words; got != words {
		t.Fatalf("chip wrote %d words, want %d", got, words)
	}
}

var wordCounts = []int{1, 2, 3, 15, 16, 31, 32, 51, 52, 53, 63, 64, 65, 127, 128, 255, 256, 1023, 1024, 4095}

// randomPhase makes a phase over 2..64 random tiles. mixed puts source
// and destination buffers in the same memory elements (the scheduler must
// then avoid read/write clashes); otherwise sources sit below 0x80000 and
// destinations above.
func randomPhase(seed uint64, mixed bool) Phase {
	rng := rand.New(rand.NewPCG(seed, 0xE8C4))
	ntiles := 2 + rng.IntN(63)
	set := map[int]bool{}
	for len(set) < ntiles {
		set[rng.IntN(ipu21.Tiles)] = true
	}
	var ids []int
	for p := range set {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	srcNext, dstNext := map[int]uint32{}, map[int]uint32{}
	for _, id := range ids {
		srcNext[id], dstNext[id] = dataBase, 0x80000
	}
	srcEnd, dstEnd := uint32(0x80000), uint32(0xE7000)
	if mixed {
		for _, id := range ids {
			srcNext[id] = dataBase
		}
		dstNext = srcNext
		srcEnd, dstEnd = 0xE7000, 0xE7000
	}
	p := Phase{ID: int(seed)}
	for k := 1 + rng.IntN(48); k > 0; k-- {
		x := Transfer{Src: ids[rng.IntN(len(ids))]}
		x.Words = wordCounts[rng.IntN(len(wordCounts))]
		if rng.IntN(5) == 0 {
			x.Words = 1 + rng.IntN(2000)
		}
		var others []int
		for _, id := range ids {
			if id != x.Src {
				others = append(others, id)
			}
		}
		rng.Shuffle(len(others), func(i, j int) { others[i], others[j] = others[j], others[i] })
		nd := 1
		if rng.IntN(3) == 0 {
			nd = 1 + rng.IntN(min(len(others), 6))
		}
		bytes := uint32(4*x.Words+7) &^ 7
		if srcNext[x.Src]+bytes > srcEnd {
			continue
		}
		ok := true
		for _, d := range others[:nd] {
			if dstNext[d]+bytes > dstEnd {
				ok = false
			}
		}
		if !ok {
			continue
		}
		x.SrcAddr = srcNext[x.Src]
		srcNext[x.Src] += bytes
		for _, d := range others[:nd] {
			x.Dsts = append(x.Dsts, Dest{d, dstNext[d]})
			dstNext[d] += bytes
		}
		p.Transfers = append(p.Transfers, x)
	}
	return p
}
