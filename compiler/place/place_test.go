package place

import (
	"strings"
	"testing"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/target"
)

func TestPlaceRules(t *testing.T) {
	bufs := []low.Buffer{
		{Name: "a", Bytes: 40000, Align: 32, Apart: []string{"c"}},
		{Name: "w", Bytes: 300000, Align: 32, Region: kernels.Interleaved},
		{Name: "c", Bytes: 5000, Align: 32, Apart: []string{"a"}},
		{Name: "red", Bytes: 70000, Align: 32, Apart: []string{"a"}},
	}
	a, err := Place(bufs)
	if err != nil {
		t.Fatal(err)
	}
	if !target.Interleaved(a["w"]) {
		t.Errorf("w at %#x is not in region 1", a["w"])
	}
	for _, b := range bufs {
		if a[b.Name]%32 != 0 || a[b.Name] < DataBase {
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
	if err := Fits([]low.Buffer{{Name: "big", Bytes: 700000, Align: 32}}); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("700 KB buffer: %v", err)
	}
}
