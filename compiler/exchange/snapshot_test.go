package exchange

import (
	"bytes"
	"compress/gzip"
	"flag"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata snapshots")

const mlpSnapshot = "testdata/siglip-mlp-1472.json.gz"

// TestMLPSnapshot keeps testdata's MLP snapshot equal to mlpPhases (go
// test -run MLPSnapshot -update rewrites it).
func TestMLPSnapshot(t *testing.T) {
	want := &Snapshot{Source: "mlp_test.go mlpPhases: Megatron-style SigLIP so400m MLP plan, 729 tokens, d=1152, 23 rows x 64 tiles", Phases: mlpPhases()}
	if *update {
		if err := WriteSnapshotFile(mlpSnapshot, want); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadSnapshotFile(mlpSnapshot)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s differs from mlpPhases (go test -run MLPSnapshot -update)", mlpSnapshot)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := &Snapshot{Source: "test", Phases: []Phase{randomPhase(3, false), randomPhase(4, true), {ID: 9}}}
	s.Phases[2].Transfers = []Transfer{{Src: 0, SrcAddr: 0x80000, Words: 128, Paired: true, Dsts: []Dest{{64, 0x90000}, {66, 0x90000}}}}
	for _, gz := range []bool{false, true} {
		var buf bytes.Buffer
		if gz {
			zw := gzip.NewWriter(&buf)
			if err := WriteSnapshot(zw, s); err != nil {
				t.Fatal(err)
			}
			zw.Close()
		} else if err := WriteSnapshot(&buf, s); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSnapshot(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, s) {
			t.Fatalf("gzip=%v: round trip differs", gz)
		}
	}
	dir := t.TempDir()
	paths, err := ExportPhases(filepath.Join(dir, "x"), "test", s.Phases)
	if err != nil || len(paths) != 3 {
		t.Fatal(paths, err)
	}
	got, err := ReadSnapshotFile(paths[2])
	if err != nil || !reflect.DeepEqual(got.Phases, s.Phases[2:]) {
		t.Fatal("export: phase 2 differs", err)
	}
}

func TestReadSnapshotErrors(t *testing.T) {
	head := `{"format":"ipustack-exchange-snapshot","version":1,"phases":[`
	for name, tc := range map[string]struct{ in, want string }{
		"not json":     {`hello`, "not JSON"},
		"format":       {`{"format":"other","version":1}`, `format "other"`},
		"version":      {`{"format":"ipustack-exchange-snapshot","version":2}`, "version 2, this ipustack reads version 1"},
		"unknown":      {head + `{"id":0,"transfers":[],"extra":1}]}`, `unknown field "extra"`},
		"bad dst":      {head + `{"id":0,"transfers":[{"src":1,"src_addr":524288,"words":4,"dsts":[[1,2,3]]}]}]}`, "destination 0 has 3 numbers"},
		"bad tile":     {head + `{"id":0,"transfers":[{"src":1,"src_addr":524288,"words":4,"dsts":[[1472,589824]]}]}]}`, "phase 0 (id 0): transfer 0: destination 1472 is not a physical tile"},
		"misaligned":   {head + `{"id":3,"transfers":[{"src":1,"src_addr":524290,"words":4,"dsts":[[2,589824]]}]}]}`, "phase 0 (id 3): transfer 0: source range"},
		"paired":       {head + `{"id":0,"transfers":[{"src":1,"src_addr":524288,"words":128,"paired":true,"dsts":[[64,589824]]}]}]}`, "not a destination at the same 8-byte aligned address"},
		"short paired": {head + `{"id":0,"transfers":[{"src":1,"src_addr":524288,"words":64,"paired":true,"dsts":[[64,589824],[66,589824]]}]}]}`, "at least 128"},
		"trailing":     {head + `]} {}`, "after top-level value"},
	} {
		_, err := ReadSnapshot(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

// FuzzReadSnapshot: any input is rejected or read into phases that pass
// checkPhase and survive a write/read round trip.
func FuzzReadSnapshot(f *testing.F) {
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, &Snapshot{Phases: []Phase{randomPhase(5, false)}}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"ipustack-exchange-snapshot","version":1,"phases":[{"id":0,"transfers":[{"src":0,"src_addr":524288,"words":128,"paired":true,"dsts":[[64,589824],[66,589824]]}]}]}`))
	f.Add([]byte(`{"format":"ipustack-exchange-snapshot","version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ReadSnapshot(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := range s.Phases {
			if err := checkPhase(&s.Phases[i]); err != nil {
				t.Fatalf("accepted phase fails checkPhase: %v", err)
			}
		}
		var out bytes.Buffer
		if err := WriteSnapshot(&out, s); err != nil {
			t.Fatal(err)
		}
		s2, err := ReadSnapshot(&out)
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if !reflect.DeepEqual(s, s2) {
			t.Fatal("round trip differs")
		}
	})
}
