package learn

import (
	"testing"

	"github.com/ipustack/ipustack/elf"
)

func parse(t *testing.T, data []byte) *elf.Object {
	t.Helper()
	obj, err := elf.Parse("probe.o", data)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
