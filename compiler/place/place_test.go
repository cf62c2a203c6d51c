package place

import (
	"strings"
	"testing"

	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

func TestPlaceRules(t *testing.T) {
	bufs := []tile.Buffer{
		{Name: "a", Bytes: 40000, Align: 32, Apart: []string{"c"}},
		{Name: "w", Bytes: 300000, Align: 32, Region: kernels.Interleaved},
		{Name: "c", Bytes: 5000, Align: 32, Apart: []string{"a"}},
		{Name: "red", Bytes: 70000, Align: 32, Apart: []string{"a"}},
	}
	a, err := Place(bufs)
	if err != nil {
		t.Fatal(err)
	}
	if !ipu21.Interleaved(a["w"]) {
		t.Errorf("w at %#x is not in region 1", a["w"])
	}
	for _, b := range bufs {
		if a[b.Name]%32 != 0 || a[b.Name] < tile.DataBase {
			t.Errorf("%s at %#x", b.Name, a[b.Name])
		}
		for _, o := range bufs {
			if o.Name != b.Name && a[b.Name] < a[o.Name]+uint32(o.Bytes) && a[o.Name] < a[b.Name]+uint32(b.Bytes) {
				t.Errorf("%s and %s overlap", b.Name, o.Name)
			}
		}
	}
	if overlapElements(a["a"], 40000, a["c"], 5000) || overlapElements(a["a"], 40000, a["red"], 70000) {
		t.Error("apart buffers share an element")
	}
	// Deterministic.
	b, _ := Place(bufs)
	for k := range a {
		if a[k] != b[k] {
			t.Fatal("placement is not deterministic")
		}
	}
	if err := Fits([]tile.Buffer{{Name: "big", Bytes: 700000, Align: 32}}); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("700 KB buffer: %v", err)
	}
}

// Buffers live at different times share memory; ones live together never
// overlap.
func TestPlaceLifetimes(t *testing.T) {
	bufs := []tile.Buffer{
		{Name: "w", Bytes: 4096, Align: 32, Region: kernels.Interleaved},
		{Name: "L0", Bytes: 100000, Align: 32, Live: [2]int{1, 2}},
		{Name: "Y0", Bytes: 20000, Align: 32, Live: [2]int{1, 3}},
		{Name: "L1", Bytes: 90000, Align: 32, Live: [2]int{2, 3}},
		{Name: "O1", Bytes: 30000, Align: 32, Live: [2]int{2, 1 << 30}},
	}
	addr, err := Place(bufs)
	if err != nil {
		t.Fatal(err)
	}
	shared := false
	for i := range bufs {
		for j := i + 1; j < len(bufs); j++ {
			a, b := &bufs[i], &bufs[j]
			overlap := addr[a.Name] < addr[b.Name]+uint32(b.Bytes) && addr[b.Name] < addr[a.Name]+uint32(a.Bytes)
			if overlap && a.Overlaps(b) {
				t.Errorf("%s and %s are live together and overlap", a.Name, b.Name)
			}
			shared = shared || overlap
		}
	}
	if !shared {
		t.Error("no buffers share memory (L0 and L1 are never live together)")
	}
}

// A plan that does not fit says what was needed against what the tile
// holds, and the largest buffers.
func TestPlaceFitError(t *testing.T) {
	_, err := Place([]tile.Buffer{
		{Name: "big", Bytes: 500000, Align: 32, Region: kernels.Interleaved},
		{Name: "a", Bytes: 1000, Align: 32},
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`"big" (500000 bytes) does not fit`, "need 501000 bytes", "region 1", "largest: big 500000, a 1000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// When the first layout fails, the second stacks the region-1-only
// buffers from the top of region 1 and lets a buffer without an element
// rule span the regions' boundary: two homes larger than region 0, beside
// a panel, fit that way and not otherwise. A buffer with an element rule
// never spans it, and a layout the first fits is kept as it is.
func TestPlaceSpanning(t *testing.T) {
	r0 := int(tile.Region0End - tile.DataBase)
	r1 := int(tile.Region1End - ipu21.Region1Base)
	bufs := []tile.Buffer{
		{Name: "W", Bytes: 64 << 10, Align: 32, Region: kernels.Interleaved},
		{Name: "H0", Bytes: r0 + 4096, Align: 32},
		{Name: "H1", Bytes: r1 - (64 << 10) - 8192, Align: 32},
	}
	if _, err := place(bufs, false); err == nil {
		t.Fatal("the first layout fits homes larger than region 0 beside region 1's panel")
	}
	addr, err := Place(bufs)
	if err != nil {
		t.Fatal(err)
	}
	end := map[string]uint32{}
	for _, b := range bufs {
		end[b.Name] = addr[b.Name] + uint32(b.Bytes)
		if addr[b.Name] < tile.DataBase || end[b.Name] > tile.Region1End {
			t.Errorf("%s at [%#x, %#x) outside the data regions", b.Name, addr[b.Name], end[b.Name])
		}
	}
	if addr["W"] < ipu21.Region1Base {
		t.Errorf("W at %#x, below region 1", addr["W"])
	}
	for _, a := range []string{"W", "H0", "H1"} {
		for _, b := range []string{"W", "H0", "H1"} {
			if a < b && addr[a] < end[b] && addr[b] < end[a] {
				t.Errorf("%s and %s overlap", a, b)
			}
		}
	}
	// A buffer with an element rule never spans the boundary.
	bufs[1].Apart = []string{"H1"}
	if a, err := Place(bufs); err == nil && a["H0"] < ipu21.Region1Base && a["H0"]+uint32(bufs[1].Bytes) > ipu21.Region1Base {
		t.Errorf("H0, with an element rule, at %#x spans the regions' boundary", a["H0"])
	}
	// What the first layout fits keeps its addresses.
	small := []tile.Buffer{{Name: "W", Bytes: 4096, Align: 32, Region: kernels.Interleaved}, {Name: "A", Bytes: 4096, Align: 32}}
	first, _ := place(small, false)
	got, err := Place(small)
	if err != nil || got["W"] != first["W"] || got["A"] != first["A"] {
		t.Errorf("Place %v (%v), first layout %v", got, err, first)
	}
}
