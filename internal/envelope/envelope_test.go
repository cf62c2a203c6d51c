package envelope

import (
	"errors"
	"strings"
	"testing"
)

var (
	errMagic     = errors.New("magic")
	errTruncated = errors.New("truncated")
	errVersion   = errors.New("version")
	errCorrupt   = errors.New("corrupt")
	errChecksum  = errors.New("checksum")
)

var testFormat = &Format{Magic: "IPUTEST\x00", Version: 3, ErrMagic: errMagic, ErrTruncated: errTruncated,
	ErrVersion: errVersion, ErrCorrupt: errCorrupt, ErrChecksum: errChecksum}

func TestOpen(t *testing.T) {
	content := []byte("the content of a file")
	good := testFormat.Seal(content)
	if got, err := testFormat.Open(good); err != nil || string(got) != string(content) {
		t.Fatalf("round trip: %q, %v", got, err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		data []byte
		want error
		text string
	}{
		{"empty", nil, errMagic, "magic"},
		{"elf", []byte("\x7fELF\x01\x01\x01\x00rest"), errMagic, "an ELF file"},
		{"package", []byte("IPUEXE1\x00rest"), errMagic, "application package"},
		{"profile", []byte("IPUPROF\x00rest"), errMagic, "a profile"},
		{"short header", good[:20], errTruncated, "shorter than the 56-byte header"},
		{"version", edit(func(b []byte) []byte { b[8] = 4; return b }), errVersion, "format version 4"},
		{"reserved", edit(func(b []byte) []byte { b[12] = 1; return b }), errCorrupt, "reserved word"},
		{"truncated content", good[:len(good)-1], errTruncated, "content bytes"},
		{"trailing bytes", append(append([]byte(nil), good...), 0), errCorrupt, "bytes after"},
		{"flipped content", edit(func(b []byte) []byte { b[HeaderSize] ^= 1; return b }), errChecksum, "SHA-256"},
	}
	for _, c := range cases {
		_, err := testFormat.Open(c.data)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v containing %q", c.name, err, c.want, c.text)
		}
	}
}
