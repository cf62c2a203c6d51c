package xprog_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/internal/xprog"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/isa"
)

func word(t *testing.T, id string, v ...int64) []uint32 {
	t.Helper()
	w, err := isa.ByID(id).Encode(v, false)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// runPhase loads `sync 3; row; sync 7` on every tile and runs the chip to
// the host sync.
func runPhase(t *testing.T, c *emu.Chip, p *xprog.Program) {
	t.Helper()
	for _, id := range p.Tiles() {
		row, err := p.Words(id)
		if err != nil {
			t.Fatal(err)
		}
		prog := append(word(t, "sync", 3), row...)
		prog = append(prog, word(t, "sync", 7)...)
		if err := c.Tile(id).WriteWords(0x4C000, prog); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(id, 0x4C000); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.Run(1 << 30)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != emu.ChipHost || res.Zone != 7 {
		t.Fatalf("chip stopped with %v zone %d, want host zone 7", res.Reason, res.Zone)
	}
}

func TestRandomTransfers(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		set := map[int]bool{}
		for len(set) < 2+rng.IntN(40) {
			set[rng.IntN(ipu21.Tiles)] = true
		}
		var ids []int
		for id := range set {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		c, err := emu.NewChip(ids...)
		if err != nil {
			t.Fatal(err)
		}
		srcNext, dstNext := map[int]uint32{}, map[int]uint32{}
		var xs []xprog.Transfer
		var data [][]uint32
		for k := 1 + rng.IntN(3*len(ids)); k > 0; k-- {
			src := ids[rng.IntN(len(ids))]
			n := []int{1, 2, 3, 51, 52, 53, 64, 65, 100, 4200}[rng.IntN(10)]
			var dests []xprog.Dest
			for _, d := range rng.Perm(len(ids))[:1+rng.IntN(min(len(ids), 4))] {
				if ids[d] != src {
					dests = append(dests, xprog.Dest{Tile: ids[d]})
				}
			}
			if len(dests) == 0 {
				continue
			}
			bytes := uint32(4*n+8) &^ 7
			if srcNext[src]+bytes > 0x30000 {
				continue
			}
			ok := true
			for _, d := range dests {
				ok = ok && dstNext[d.Tile]+bytes <= 0x60000
			}
			if !ok {
				continue
			}
			x := xprog.Transfer{Src: src, Addr: 0x60000 + srcNext[src], Words: n}
			srcNext[src] += bytes
			for _, d := range dests {
				d.Addr = 0x90000 + dstNext[d.Tile]
				dstNext[d.Tile] += bytes
				x.Dests = append(x.Dests, d)
			}
			words := make([]uint32, n)
			for i := range words {
				words[i] = rng.Uint32()
			}
			if err := c.Tile(src).WriteWords(x.Addr, words); err != nil {
				t.Fatal(err)
			}
			xs = append(xs, x)
			data = append(data, words)
		}
		p, err := xprog.Generate(xs, xprog.Options{Tiles: ids})
		if err != nil {
			t.Fatal(err)
		}
		runPhase(t, c, p)
		for i, x := range xs {
			for _, d := range x.Dests {
				for k, want := range data[i] {
					got, err := c.Tile(d.Tile).ReadWord(d.Addr + 4*uint32(k))
					if err != nil {
						t.Fatal(err)
					}
					if got != want {
						t.Fatalf("seed %d transfer %d (%d -> %d, %d words) word %d: got %08x want %08x",
							seed, i, x.Src, d.Tile, x.Words, k, got, want)
					}
				}
			}
		}
	}
}

func TestAssemblyRoundTrip(t *testing.T) {
	p, err := xprog.Generate([]xprog.Transfer{{Src: 0, Addr: 0x60000, Words: 70,
		Dests: []xprog.Dest{{Tile: 1286, Addr: 0x90000}, {Tile: 5, Addr: 0x90000}}}}, xprog.Options{Tiles: []int{9}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Tiles(); !slices.Equal(got, []int{0, 5, 9, 1286}) {
		t.Fatalf("tiles %v", got)
	}
	for _, id := range p.Tiles() {
		src := ".section .text\n.supervisor\n" + p.Assembly(id)
		obj, err := asm.Assemble("row.S", []byte(src), asm.Options{})
		if err != nil {
			t.Fatalf("tile %d: %v\n%s", id, err, src)
		}
		want, _ := p.Words(id)
		var got []uint32
		for _, s := range obj.Sections {
			for i := 0; i+4 <= len(s.Data); i += 4 {
				got = append(got, uint32(s.Data[i])|uint32(s.Data[i+1])<<8|uint32(s.Data[i+2])<<16|uint32(s.Data[i+3])<<24)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("tile %d: assembled %08x, want %08x\n%s", id, got, want, src)
		}
	}
}

func TestBadTransfers(t *testing.T) {
	_, err := xprog.Generate([]xprog.Transfer{
		{Src: 0, Addr: 0x60002, Words: 1, Dests: []xprog.Dest{{Tile: 1, Addr: 0x90000}}},
		{Src: 3, Addr: 0x60000, Words: 0, Dests: []xprog.Dest{{Tile: 3, Addr: 0x90000}, {Tile: 9999, Addr: 0}}},
		{Src: 4, Addr: 0x60000, Words: 1},
	}, xprog.Options{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"not 4-byte aligned", "0 words", "sends to itself", "9999 is not a physical tile", "no receivers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
