package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/compiler/exchange"
)

func TestExchangeBench(t *testing.T) {
	dir := t.TempDir()
	p := exchange.Phase{ID: 7, Transfers: []exchange.Transfer{
		{Src: 0, SrcAddr: 0x50000, Words: 128, Dsts: []exchange.Dest{{Tile: 64, Addr: 0x80000}, {Tile: 66, Addr: 0x80000}}},
		{Src: 5, SrcAddr: 0x50000, Words: 40, Dsts: []exchange.Dest{{Tile: 9, Addr: 0x80000}}},
	}}
	paths, err := exchange.ExportPhases(dir, "test", []exchange.Phase{p})
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(append([]string{"exchange", "bench"}, paths...), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"bound", "horizon", "gap %", filepath.Base(paths[0]), "ok", "BuildAll"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
	// A snapshot that is not one.
	bad := filepath.Join(dir, "bad.json")
	if err := exchange.WriteSnapshotFile(bad, &exchange.Snapshot{}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"exchange", "bench", filepath.Join(dir, "missing.json")}, &out, &errb); code == 0 {
		t.Error("missing file accepted")
	}
	if code := run([]string{"exchange", "bench", "--paired", "sometimes", bad}, &out, &errb); code == 0 || !strings.Contains(errb.String(), "--paired") {
		t.Errorf("bad --paired: %s", errb.String())
	}
}
