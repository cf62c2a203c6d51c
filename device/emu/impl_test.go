package emu

import (
	"sort"
	"testing"
)

func TestHandlerTable(t *testing.T) {
	t.Logf("implemented: %v", Implemented())
	un := Unimplemented()
	ids := make([]string, 0, len(un))
	for id := range un {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		t.Logf("unimplemented %s: %s", id, un[id])
	}
}
