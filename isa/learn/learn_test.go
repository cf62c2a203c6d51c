package learn

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/isa"
)

// assembleWith assembles src under ov (nil: ipustack's encodings).
func assembleWith(t *testing.T, ov *isa.Overlay, src []byte) []byte {
	t.Helper()
	restore, err := isa.Swap(ov)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	obj, err := asm.Assemble("probe.S", src, asm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDeriveRecoversTables learns from our assembler under the default and
// a permuted table and must get each table back exactly, every row learned.
func TestDeriveRecoversTables(t *testing.T) {
	perm, err := isa.PermutedOverlay(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		ov   *isa.Overlay
		want *isa.Overlay
	}{{"default", nil, isa.DefaultOverlay()}, {"permuted", perm, perm}} {
		t.Run(c.name, func(t *testing.T) {
			p := NewProbe(isa.Table)
			if len(p.Unprobed) != 0 {
				t.Fatalf("unprobed rows: %v", p.Unprobed)
			}
			obj := parse(t, assembleWith(t, c.ov, p.Source))
			got, err := p.Derive(obj)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Rows) != len(isa.Table) {
				t.Errorf("learned %d of %d rows", len(got.Rows), len(isa.Table))
			}
			if !bytes.Equal(got.Marshal(), c.want.Marshal()) {
				g, w := strings.Split(string(got.Marshal()), "\n"), strings.Split(string(c.want.Marshal()), "\n")
				for i := range g {
					if i < len(w) && g[i] != w[i] {
						t.Fatalf("learned\n%s\nwant\n%s", g[i], w[i])
					}
				}
				t.Fatal("learned overlay differs")
			}
		})
	}
}
