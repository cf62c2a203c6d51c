package learn

import (
	"bytes"
	"fmt"
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

// TestDeriveErrors corrupts the words the assembler returned and expects
// an error that names the row.
func TestDeriveErrors(t *testing.T) {
	p := NewProbe(isa.Table)
	data := assembleWith(t, nil, p.Source)
	find := func(id string, kind, op, bit int) *entry {
		for _, e := range p.entries {
			if e.row.ID() == id && e.kind == kind && e.op == op && e.bit == bit {
				return e
			}
		}
		t.Fatalf("no probe %s %d %d %d", id, kind, op, bit)
		return nil
	}
	cases := []struct {
		name string
		e    *entry
		flip uint32 // XORed into the entry's first word
		want string
	}{
		{"two bits", find("f32add", kindBit, 1, 2), 1 << 9, "row f32add: operand a stored bit 2"},
		{"no bit", find("ld64", kindBit, 3, 5), 1 << 5, "row ld64: operand off stored bit 5"},
		{"all ones", find("tapack", kindAll, 1, -1), 1 << 12, "row tapack: operand load0 all bits set"},
		{"bundle", find("f16v2add", kindBundle, 0, 0), isa.CoIssueBit, "row f16v2add: co-issued"},
		{"public", find("add.si", kindBase, -1, -1), 1 << 24, "add.si"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := parse(t, data)
			var sym = map[string]int{}
			for i, s := range obj.Symbols {
				sym[s.Name] = i
			}
			s := obj.Symbols[sym[c.e.label]]
			sec := obj.Sections[s.Section]
			w := uint32(sec.Data[s.Value]) | uint32(sec.Data[s.Value+1])<<8 | uint32(sec.Data[s.Value+2])<<16 | uint32(sec.Data[s.Value+3])<<24
			w ^= c.flip
			sec.Data[s.Value], sec.Data[s.Value+1], sec.Data[s.Value+2], sec.Data[s.Value+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
			_, err := p.Derive(obj)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestSplitCommand(t *testing.T) {
	cases := []struct{ tmpl, want, err string }{
		{`llvm-mc -filetype=obj {in} -o {out}`, `[llvm-mc -filetype=obj /p q/in.S -o /p q/o.o]`, ""},
		{`'/opt/my sdk/popc' -c {in} "-o" {out}`, `[/opt/my sdk/popc -c /p q/in.S -o /p q/o.o]`, ""},
		{`a\ b "x\"y\\z\n" {in} --out={out}`, `[a b x"y\z\n /p q/in.S --out=/p q/o.o]`, ""},
		{`popc {in}`, "", "must contain both"},
		{`popc {in} {out} | tee log`, "", "unquoted '|'"},
		{`popc '{in} {out}`, "", "unterminated"},
		{`   `, "", "empty"},
		{`sh -c 'popc "$0" -o "$1"' {in} {out}`, `[sh -c popc "$0" -o "$1" /p q/in.S /p q/o.o]`, ""},
	}
	for _, c := range cases {
		argv, err := SplitCommand(c.tmpl, "/p q/in.S", "/p q/o.o")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: got %v, want error %q", c.tmpl, err, c.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(argv) != c.want {
			t.Errorf("%s: got %q, %v; want %s", c.tmpl, argv, err, c.want)
		}
	}
}

// TestLearnRunsCommand drives Learn through a failing and a non-object
// "assembler".
func TestLearnRunsCommand(t *testing.T) {
	if _, err := Learn(Options{Assembler: "false {in} {out}"}); err == nil || !strings.Contains(err.Error(), `assembler "false"`) {
		t.Errorf("failing assembler: %v", err)
	}
	if _, err := Learn(Options{Assembler: "cp {in} {out}"}); err == nil || !strings.Contains(err.Error(), "probe.o") {
		t.Errorf("non-object output: %v", err)
	}
	if _, err := Learn(Options{Assembler: "true {in} {out}"}); err == nil || !strings.Contains(err.Error(), "wrote no object") {
		t.Errorf("no output: %v", err)
	}
}
