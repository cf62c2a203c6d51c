package asm

import (
	"strings"
	"testing"
)

// TestBinaryInput: a binary file given as source gets one error saying so,
// at the position of its first NUL byte, not one per garbage token.
func TestBinaryInput(t *testing.T) {
	for _, c := range []struct {
		src, want string
	}{
		{"\x7fELF\x01\x01\x01\x00rest", "f.S:1:8: not assembly source: an ELF object or executable"},
		{"IPUEXE1\x00", "an application package"},
		{"IPUPROF\x00", "a profile"},
		{"nop\n  ab\x00c\n", "f.S:2:5: not assembly source: binary data (a NUL byte at offset 8)"},
	} {
		_, err := Assemble("f.S", []byte(c.src), Options{})
		list, ok := err.(ErrorList)
		if !ok || len(list) != 1 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one error with %q", c.src, err, c.want)
		}
	}
	files := map[string]string{"bin.h": "\x00\x01"}
	_, err := Assemble("f.S", []byte("#include \"bin.h\"\n"), Options{ReadFile: memFS(files)})
	if err == nil || !strings.Contains(err.Error(), "bin.h:1:1: not assembly source") {
		t.Errorf("binary include: %v", err)
	}
}
