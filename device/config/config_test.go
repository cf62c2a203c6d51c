package config

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
)

const capturePath = "testdata/c600-init.ipucfg"

func readCapture(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(capturePath)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseCapture checks the real C600 capture against the facts recorded
// in reference/IPU21.md: 2003 writes, 1472 of them DBG_RBRK = 0x40000000,
// one per tile.
func TestParseCapture(t *testing.T) {
	data := readCapture(t)
	ws, err := Parse(capturePath, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2003 {
		t.Fatalf("got %d writes, want 2003", len(ws))
	}
	seen := make(map[int]bool)
	rbrk := 0
	for i, w := range ws {
		r := Classify(w.Offset)
		if r.Group != GroupTileDebug {
			if r.Tile != -1 || r.Reg != w.Offset {
				t.Errorf("write %d: chip register %+v", i, r)
			}
			continue
		}
		if r.Name != "DBG_RBRK" || w.Value != DBGRBRKInit {
			t.Errorf("write %d: %s: only DBG_RBRK = 0x40000000 expected in the tile debug block", i, Describe(w))
			continue
		}
		if seen[r.Tile] {
			t.Errorf("write %d: tile %d written twice", i, r.Tile)
		}
		seen[r.Tile] = true
		rbrk++
	}
	if rbrk != 1472 {
		t.Errorf("got %d DBG_RBRK writes, want 1472", rbrk)
	}
	for tile := range 1472 {
		if !seen[tile] {
			t.Errorf("tile %d has no DBG_RBRK write", tile)
		}
	}
	if got := Marshal(ws); !bytes.Equal(got, data) {
		t.Errorf("re-marshalled capture differs from the file")
	}
}

func TestRoundTrip(t *testing.T) {
	for _, ws := range [][]Write{
		{},
		{{Offset: 0, Value: 0}},
		{{Offset: 0x5400, Value: 4}, {Offset: 0x30004, Value: 0x40000000}, {Offset: 0xfffffffc, Value: 0xffffffff}},
	} {
		b := Marshal(ws)
		if len(b) != HeaderSize+len(ws)*EntrySize {
			t.Fatalf("Marshal(%v): %d bytes", ws, len(b))
		}
		got, err := Parse("rt", b)
		if err != nil {
			t.Fatalf("Parse(Marshal(%v)): %v", ws, err)
		}
		if len(got) != len(ws) {
			t.Fatalf("round trip of %v gave %v", ws, got)
		}
		for i := range ws {
			if got[i] != ws[i] {
				t.Errorf("round trip of %v gave %v", ws, got)
			}
		}
	}
}

// TestMarshalLayout pins the byte layout independently of Parse.
func TestMarshalLayout(t *testing.T) {
	got := Marshal([]Write{{Offset: 0x30004, Value: 0x40000000}})
	want := []byte("IPUCFG1\x00" + "\x01\x00\x00\x00" + "\x04\x00\x03\x00" + "\x00\x00\x00\x40")
	if !bytes.Equal(got, want) {
		t.Errorf("Marshal = % x, want % x", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	good := Marshal([]Write{{0x5400, 4}, {0x30004, 0x40000000}, {0x403c, 0x2125024}})
	withCount := func(n uint32) []byte {
		b := bytes.Clone(good)
		binary.LittleEndian.PutUint32(b[8:], n)
		return b
	}
	tests := []struct {
		name string
		data []byte
		err  error
		pos  int
		want []string // substrings of the message
	}{
		{"empty", nil, ErrShort, 0, []string{"bad.ipucfg: byte 0:", "file is 0 bytes", "header alone is 12"}},
		{"short", []byte("IPUCFG1"), ErrShort, 7, []string{"file is 7 bytes", `"IPUCFG1"`}},
		{"magic", append([]byte("\x7fELF\x01\x01\x01\x00"), good[8:]...), ErrMagic, 0,
			[]string{"bad magic", `found "\x7fELF\x01\x01\x01\x00"`, `want "IPUCFG1\x00"`}},
		{"version", append([]byte("IPUCFG2\x00"), good[8:]...), ErrMagic, 0, []string{`found "IPUCFG2\x00"`}},
		{"truncated", good[:len(good)-3], ErrTruncated, len(good) - 3,
			[]string{"declares 3 writes", "needing 24 bytes", "only 21 are present (2 entries)"}},
		{"huge count", withCount(0xffffffff), ErrTruncated, len(good),
			[]string{"declares 4294967295 writes", "needing 34359738360 bytes", "only 24 are present"}},
		{"trailing", append(bytes.Clone(good), 0, 0, 0, 0, 0), ErrTrailing, len(good),
			[]string{"5 bytes after the 3 declared writes", "file is 41 bytes, expected 36"}},
		{"count too small", withCount(1), ErrTrailing, 20, []string{"16 bytes after the 1 declared writes"}},
		{"misaligned", Marshal([]Write{{0x5400, 4}, {0x30006, 1}}), ErrMisaligned, 20,
			[]string{"byte 20", "write 1: offset 0x00030006 is not a multiple of 4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := Parse("bad.ipucfg", tt.data)
			if err == nil {
				t.Fatalf("Parse succeeded with %v", ws)
			}
			if ws != nil {
				t.Errorf("writes returned with an error: %v", ws)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("error %q is not %v", err, tt.err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Pos != tt.pos || pe.Name != "bad.ipucfg" {
				t.Errorf("error at %s byte %d, want bad.ipucfg byte %d", pe.Name, pe.Pos, tt.pos)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "bad.ipucfg: ") {
				t.Errorf("error %q does not start with the file name", msg)
			}
			for _, s := range tt.want {
				if !strings.Contains(msg, s) {
					t.Errorf("error %q does not contain %q", msg, s)
				}
			}
		})
	}
}

func TestClassifyDescribe(t *testing.T) {
	tests := []struct {
		w    Write
		reg  Register
		desc string
	}{
		{Write{0x30004, 0x40000000}, Register{GroupTileDebug, 0, 4, "DBG_RBRK"}, "tile 0 DBG_RBRK = 0x40000000"},
		{Write{0x30000 + 1471*0x40 + 4, 0x40000000}, Register{GroupTileDebug, 1471, 4, "DBG_RBRK"}, "tile 1471 DBG_RBRK = 0x40000000"},
		{Write{0x30000 + 17*0x40 + 8, 1}, Register{GroupTileDebug, 17, 8, ""}, "tile 17 debug+0x08 = 0x00000001"},
		{Write{0x30000, 2}, Register{GroupTileDebug, 0, 0, ""}, "tile 0 debug+0x00 = 0x00000002"},
		{Write{0x2fffc, 3}, Register{GroupChip, -1, 0x2fffc, ""}, "chip 0x0002fffc = 0x00000003"},
		// One past the last tile's block is no longer a tile register.
		{Write{TileDebugEnd + 4, 0x40000000}, Register{GroupChip, -1, TileDebugEnd + 4, ""}, "chip 0x00047004 = 0x40000000"},
		{Write{0x5400, 4}, Register{GroupChip, -1, 0x5400, ""}, "chip 0x00005400 = 0x00000004"},
	}
	for _, tt := range tests {
		if got := Classify(tt.w.Offset); got != tt.reg {
			t.Errorf("Classify(%#x) = %+v, want %+v", tt.w.Offset, got, tt.reg)
		}
		if got := Describe(tt.w); got != tt.desc {
			t.Errorf("Describe(%+v) = %q, want %q", tt.w, got, tt.desc)
		}
	}
	if GroupChip.String() != "chip" || GroupTileDebug.String() != "tile-debug" || Group(9).String() != "Group(9)" {
		t.Errorf("Group names: %v %v %v", GroupChip, GroupTileDebug, Group(9))
	}
}

// FuzzParse checks that Parse never panics on arbitrary bytes and that
// whatever it accepts re-marshals to exactly the input, so no two files
// decode to the same writes and nothing is silently dropped.
func FuzzParse(f *testing.F) {
	f.Add(readCapture(f))
	f.Add([]byte{})
	f.Add([]byte(Magic))
	f.Add(Marshal(nil))
	f.Add(Marshal([]Write{{0x30004, 0x40000000}}))
	f.Add(Marshal([]Write{{0x30006, 1}}))
	f.Add(append(Marshal([]Write{{4, 4}}), 0))
	f.Add([]byte("IPUCFG1\x00\xff\xff\xff\xff"))
	f.Add([]byte("IPUCFG1\x00\x02\x00\x00\x00\x04\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ws, err := Parse("fuzz", data)
		if err != nil {
			if ws != nil {
				t.Fatalf("writes returned with error %v", err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "fuzz: ") {
				t.Fatalf("error %q is not a *ParseError naming the file", err)
			}
			return
		}
		for i, w := range ws {
			if w.Offset%4 != 0 {
				t.Fatalf("write %d accepted with misaligned offset %#x", i, w.Offset)
			}
			_ = Describe(w)
		}
		if got := Marshal(ws); !bytes.Equal(got, data) {
			t.Fatalf("Marshal(Parse(x)) != x:\n got % x\nwant % x", got, data)
		}
	})
}
