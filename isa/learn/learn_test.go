package learn

import (
	"bytes"
	"encoding/binary"
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
// an error that names the row. The probes are picked by shape, not by name,
// so edits to the table's rows do not break the test.
func TestDeriveErrors(t *testing.T) {
	p := NewProbe(isa.Table)
	data := assembleWith(t, nil, p.Source)
	find := func(kind int, ok func(e *entry) bool) *entry {
		for _, e := range p.entries {
			if e.kind == kind && ok(e) {
				return e
			}
		}
		t.Fatalf("no probe of kind %d", kind)
		return nil
	}
	lowFixed := func(in *isa.Inst) uint32 { m := in.Mask() &^ isa.CoIssueBit; return m & -m }
	bitProbe := find(kindBit, func(e *entry) bool { return e.bit == 2 })
	allProbe := find(kindAll, func(e *entry) bool { return true })
	cases := []struct {
		name string
		e    *entry
		flip func(w uint32, base uint32) uint32 // the corrupted first word
		want string
	}{
		{"two bits", bitProbe, func(w, _ uint32) uint32 { return w ^ lowFixed(bitProbe.row) },
			"row " + bitProbe.row.ID() + ": operand " + bitProbe.row.Operands[bitProbe.op].Name + " stored bit 2"},
		{"no bit", bitProbe, func(_, base uint32) uint32 { return base }, "want exactly one"},
		{"all ones", allProbe, func(w, _ uint32) uint32 { return w ^ lowFixed(allProbe.row) },
			"row " + allProbe.row.ID() + ": operand " + allProbe.row.Operands[allProbe.op].Name + " all bits set"},
		{"bundle", find(kindBundle, func(e *entry) bool { return true }), func(w, _ uint32) uint32 { return w ^ isa.CoIssueBit }, "co-issued"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			obj := parse(t, data)
			word := func(label string) (sec []byte, off uint32) {
				for _, s := range obj.Symbols {
					if s.Name == label {
						return obj.Sections[s.Section].Data, s.Value
					}
				}
				t.Fatalf("no symbol %s", label)
				return nil, 0
			}
			sec, off := word(c.e.label)
			bsec, boff := word(find(kindBase, func(e *entry) bool { return e.row == c.e.row }).label)
			w := binary.LittleEndian.Uint32(sec[off:])
			binary.LittleEndian.PutUint32(sec[off:], c.flip(w, binary.LittleEndian.Uint32(bsec[boff:])))
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
