package isa

import (
	"bytes"
	"math/rand"
	"strings"
	"testing"
)

func TestDefaultOverlayRoundTrip(t *testing.T) {
	ov := DefaultOverlay()
	if len(ov.Rows) != len(Table) {
		t.Fatalf("default overlay has %d rows, table %d", len(ov.Rows), len(Table))
	}
	data := ov.Marshal()
	back, err := ParseOverlay("default.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Marshal(), data) {
		t.Fatal("marshal/parse/marshal is not the identity")
	}
	restore, err := Swap(back)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if Fingerprint() != "" {
		t.Errorf("default encodings have fingerprint %q, want empty", Fingerprint())
	}
}

// TestPermutedOverlay checks that the stand-in scramble changes every
// ipustack row, no public row, and gives a table that still encodes and
// decodes every row's values.
func TestPermutedOverlay(t *testing.T) {
	ov, err := PermutedOverlay(1)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := PermutedOverlay(1)
	if !bytes.Equal(ov.Marshal(), again.Marshal()) {
		t.Fatal("PermutedOverlay is not deterministic")
	}
	def := DefaultOverlay()
	changed := 0
	for i, in := range Table {
		same := string(mustJSON(t, def.Rows[i])) == string(mustJSON(t, ov.Rows[i]))
		if in.Source != SrcOurs && !same {
			t.Errorf("public row %s changed", in.ID())
		}
		if in.Source == SrcOurs && !same {
			changed++
		}
	}
	ours := 0
	for _, in := range Table {
		if in.Source == SrcOurs {
			ours++
		}
	}
	if changed != ours {
		t.Errorf("permutation changed %d of %d ipustack rows", changed, ours)
	}
	restore, err := Swap(ov)
	if err != nil {
		t.Fatal(err)
	}
	defer restore()
	if Fingerprint() == "" {
		t.Error("permuted table has the default fingerprint")
	}
	r := rand.New(rand.NewSource(1))
	for _, in := range Table {
		for _, vals := range instances(in, r) {
			ws, err := in.Encode(vals, false)
			if err != nil {
				continue
			}
			d, err := Decode(ws)
			if err != nil || d.Inst != in {
				t.Fatalf("%s %v: encoded %08x decodes as %v, %v", in.ID(), vals, ws, d.Inst, err)
			}
			for i := range vals {
				if d.Values[i] != vals[i] {
					t.Fatalf("%s %v: decoded %v", in.ID(), vals, d.Values)
				}
			}
		}
	}
}

func TestInstallAfterUse(t *testing.T) {
	Lookup(0) // the table has been used
	if err := Install(DefaultOverlay()); err == nil || !strings.Contains(err.Error(), "before anything") {
		t.Fatalf("Install after use: %v", err)
	}
}

func TestOverlayErrors(t *testing.T) {
	good := string(DefaultOverlay().Marshal())
	row := func(id string) string {
		for _, l := range strings.Split(good, "\n") {
			if strings.Contains(l, `"id":"`+id+`"`) {
				return strings.TrimSuffix(strings.TrimSpace(l), ",")
			}
		}
		t.Fatalf("no row %s", id)
		return ""
	}
	wrap := func(rows ...string) string {
		return `{"schema":"ipustack-isa-overlay","version":1,"rows":[` + strings.Join(rows, ",") + `]}`
	}
	cases := []struct{ name, text, want string }{
		{"empty", "", "empty file"},
		{"syntax", "{\n  \"schema\": ,", "x.json: 2:13: malformed JSON"},
		{"type", `{"schema": 3}`, `field "schema"`},
		{"unknown field", `{"schema":"ipustack-isa-overlay","version":1,"rows":[],"extra":1}`, `unknown field "extra"`},
		{"trailing", wrap() + "{}", "data after"},
		{"schema", `{"schema":"other","version":1,"rows":[]}`, `schema "other"`},
		{"version", `{"schema":"ipustack-isa-overlay","version":2,"rows":[]}`, "version 2"},
		{"unknown row", wrap(`{"id":"frobnicate","words":1,"match":["0x0"],"operands":[]}`), `row 1 (frobnicate): unknown row`},
		{"twice", wrap(row("fnop"), row("fnop")), "row 2 (fnop): listed twice (first at row 1 (fnop))"},
		{"words", wrap(strings.Replace(row("fnop"), `"words":1`, `"words":2`, 1)), "row 1 (fnop): words 2"},
		{"hex", wrap(strings.Replace(row("fnop"), `"0x5bd00000"`, `"5bd00000"`, 1)), "want a hexadecimal word"},
		{"operand name", wrap(strings.Replace(row("urand64"), `"dst"`, `"d"`, 1)), `operand 1 is "d"`},
		{"operand width", wrap(strings.Replace(row("urand64"), `[23,22,21]`, `[23,22]`, 1)), "has 2 bits"},
		{"bit twice", wrap(strings.Replace(row("f32add"), `[23,22,21,20]`, `[23,22,21,16]`, 1)), "used twice"},
		{"bit range", wrap(strings.Replace(row("urand64"), `[23,22,21]`, `[23,22,40]`, 1)), "outside the row"},
		{"coissue bit", wrap(strings.Replace(row("urand64"), `[23,22,21]`, `[23,22,31]`, 1)), "co-issue flag"},
		{"match sets operand", wrap(strings.Replace(row("urand64"), `"0x5e000001"`, `"0x5e200001"`, 1)), "sets operand bits"},
		{"overlap", wrap(strings.Replace(row("fnop"), `"0x5bd00000"`, `"0x5e000001"`, 1)), "row 1 (fnop) and urand64 (not in the overlay: ipustack's encoding) overlap: word 0x5e000001"},
		{"public", wrap(strings.Replace(row("add.si"), `"0x22000000"`, `"0x23000000"`, 1)), "row 1 (add.si): disagrees with its public encoding (llvm-colossus): fixed bits 0x23000000"},
		{"reloc", wrap(strings.Replace(row("setzi.a"), `[19,18,`, `[18,19,`, 1)), "patched by R_COLOSSUS_20"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseOverlay("x.json", []byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "x.json") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func FuzzParseOverlay(f *testing.F) {
	// Seeds are a few rows each: the fuzzer's mutator stalls on the
	// 20 KB whole-table document (measured: 6 execs in 20 s).
	small := func(ov *Overlay, from, to int) []byte {
		o := *ov
		o.Rows = o.Rows[from:to]
		return o.Marshal()
	}
	def := DefaultOverlay()
	f.Add(small(def, 0, 4))
	f.Add(small(def, len(def.Rows)-6, len(def.Rows)))
	if ov, err := PermutedOverlay(3); err == nil {
		f.Add(small(ov, len(ov.Rows)-4, len(ov.Rows)))
	}
	f.Add([]byte(`{"schema":"ipustack-isa-overlay","version":1,"rows":[{"id":"fnop","words":1,"match":["0x5e000000"],"operands":[]}]}`))
	f.Add([]byte(`{"rows":[{"id":"sendpicp","words":2,"match":["0x0","0x1"],"operands":[{"name":"words","bits":[-1,99]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ov, err := ParseOverlay("fuzz.json", data)
		if err != nil {
			return
		}
		// A valid overlay re-marshals to a valid overlay.
		if _, err := ParseOverlay("again.json", ov.Marshal()); err != nil {
			t.Fatalf("re-marshalled overlay rejected: %v", err)
		}
	})
}

func mustJSON(t *testing.T, r OverlayRow) []byte {
	t.Helper()
	ov := Overlay{Rows: []OverlayRow{r}}
	return ov.Marshal()
}
