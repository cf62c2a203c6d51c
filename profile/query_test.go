package profile

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// golden compares got with testdata/name.golden (or rewrites it with
// -update).
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./profile -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test ./profile -update and review the diff):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestQueryGolden(t *testing.T) {
	p := Synthetic(64, 1)
	cases := []struct {
		name string
		q    Query
	}{
		{"query_kind", Query{}},
		{"query_kernel", Query{GroupBy: ByKernel}},
		{"query_operation_compute", Query{GroupBy: ByOperation, Kinds: []Kind{Compute}, SortBy: "name"}},
		{"query_phase", Query{GroupBy: ByPhase, Kinds: []Kind{Exchange}}},
		{"query_tile_limit", Query{GroupBy: ByTile, SortBy: "max", Limit: 5, TileLo: 8, TileHi: 40}},
		{"query_gemm_p95", Query{GroupBy: ByOperation, Kernels: []string{"gemm_f16"}, SortBy: "p95"}},
		{"query_phase_filter", Query{GroupBy: ByTile, Phases: []int{2}, Limit: 4, SortBy: "name"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := p.Run(c.q)
			if err != nil {
				t.Fatal(err)
			}
			var text, js bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name, text.Bytes())
			if err := r.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(js.Bytes()) {
				t.Fatalf("invalid JSON:\n%s", js.Bytes())
			}
			var back Result
			if err := json.Unmarshal(js.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Groups) != len(r.Groups) || back.Total != r.Total {
				t.Fatalf("JSON round trip: %+v vs %+v", back, r)
			}
		})
	}
}

// TestQueryStats checks every statistic on a profile small enough to work
// out by hand.
func TestQueryStats(t *testing.T) {
	p := small(t)
	r, err := p.Run(Query{GroupBy: ByKernel, Kinds: []Kind{Compute}})
	if err != nil {
		t.Fatal(err)
	}
	// k1: tile 0 [100,300), tile 1 [150,250) -> timeline 200, work 300.
	// k2: tile 1 [250,400).
	want := []Group{
		{Key: "k1", Steps: 2, Tiles: 2, TimelineCycles: 200, WorkCycles: 300, AverageActiveTiles: 1.5, MeanPerTile: 150, P50PerTile: 100, P95PerTile: 200, MaxPerTile: 200},
		{Key: "k2", Steps: 1, Tiles: 1, TimelineCycles: 150, WorkCycles: 150, AverageActiveTiles: 1, MeanPerTile: 150, P50PerTile: 150, P95PerTile: 150, MaxPerTile: 150},
	}
	if len(r.Groups) != 2 || r.Groups[0] != want[0] || r.Groups[1] != want[1] {
		t.Fatalf("groups\n%+v\nwant\n%+v", r.Groups, want)
	}
	if r.Total.WorkCycles != 450 || r.Total.TimelineCycles != 300 || r.Total.Tiles != 2 {
		t.Errorf("total %+v", r.Total)
	}
	// Idle: tile 0 [300,350), tile 1 [100,150); everything adds up to
	// tiles x cycles.
	r, _ = p.Run(Query{})
	var idle Group
	for _, g := range r.Groups {
		if g.Key == "idle" {
			idle = g
		}
	}
	if idle.WorkCycles != 100 || idle.TimelineCycles != 100 || idle.Steps != 2 {
		t.Errorf("idle %+v", idle)
	}
	if r.Total.WorkCycles != 2*400 {
		t.Errorf("total work %d, want 800", r.Total.WorkCycles)
	}
	// Tile filter, phase grouping.
	r, _ = p.Run(Query{GroupBy: ByPhase, TileLo: 1})
	keys := []string{}
	for _, g := range r.Groups {
		keys = append(keys, g.Key)
	}
	if strings.Join(keys, ",") != "(compute),0 in,(idle)" {
		t.Errorf("phase keys %v", keys)
	}
}

func TestQueryErrors(t *testing.T) {
	p := small(t)
	for _, q := range []Query{
		{GroupBy: "color"}, {SortBy: "vibes"}, {TileLo: 3, TileHi: 2}, {TileLo: -1}, {Limit: -1},
		{TileLo: 1000}, {Phases: []int{99}}, {Kernels: []string{"nosuch"}}, {Operations: []string{"nosuch"}},
	} {
		if _, err := p.Run(q); err == nil {
			t.Errorf("%+v accepted", q)
		}
	}
}

func TestSortOrders(t *testing.T) {
	p := Synthetic(32, 1)
	for _, by := range SortBys {
		r, err := p.Run(Query{GroupBy: ByKernel, SortBy: by})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Groups) < 5 {
			t.Fatalf("sort by %s: %d groups", by, len(r.Groups))
		}
	}
}

func TestDiffGolden(t *testing.T) {
	a := Synthetic(64, 1)
	b := Synthetic(64, 2)
	// Make B a different compile: a slower phase 1, one phase fewer and
	// one more, and a new kernel.
	b.Phases[1].Horizon += 400
	b.Phases[1].Bound += 100
	b.Phases[3].ID = 7
	for t := range b.Steps {
		for i := range b.Steps[t] {
			s := &b.Steps[t][i]
			if s.Phase == 3 {
				s.Phase = 7
			}
			if s.Kernel == "gelu_f16" {
				s.Kernel = "gelu_tanh_f16"
			}
		}
	}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := Diff(a, b)
	if err != nil {
		t.Fatal(err)
	}
	var text, js bytes.Buffer
	if err := d.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "diff", text.Bytes())
	if err := d.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back DiffResult
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Kernels) != len(d.Kernels) || len(back.Phases) != 5 {
		t.Fatalf("JSON round trip: %+v", back)
	}
	// A profile against itself differs by nothing.
	same, _ := Diff(a, a)
	for _, r := range append(same.Kinds, same.Kernels...) {
		if r.WorkDelta != 0 || r.TimelineDelta != 0 || r.MaxDelta != 0 {
			t.Errorf("self diff %+v", r)
		}
	}
}
