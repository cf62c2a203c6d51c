package profile

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// small is a hand-made two-tile profile whose statistics are known.
func small(t testing.TB) *Profile {
	t.Helper()
	b := NewBuilder("tiny", "ipu21", 2, 1_000_000_000)
	// Out of order on purpose: Build sorts.
	b.AddStep(0, Step{Start: 100, End: 300, Kind: Compute, Kernel: "k1", Operation: "op1", Phase: NoPhase,
		Provenance: Provenance{Value: "v1", Reason: "because"}})
	b.AddStep(0, Step{Start: 0, End: 100, Kind: Exchange, Operation: "op1", Phase: 0})
	b.AddStep(1, Step{Start: 0, End: 100, Kind: Exchange, Operation: "op1", Phase: 0})
	b.AddStep(1, Step{Start: 150, End: 250, Kind: Compute, Kernel: "k1", Operation: "op2", Phase: NoPhase})
	b.AddStep(1, Step{Start: 250, End: 400, Kind: Compute, Kernel: "k2", Operation: "op2", Phase: NoPhase})
	b.AddStep(0, Step{Start: 350, End: 400, Kind: Sync, Phase: NoPhase})
	b.AddExchangePhase(Phase{ID: 0, Name: "in", Start: 0, Horizon: 100, Bound: 80, Schedule: "full-duplex",
		Windows: []Window{{Tile: 1, RecvStart: 10, RecvEnd: 90, RecvBytes: 320}, {Tile: 0, SendStart: 5, SendEnd: 85, SendBytes: 320}}})
	b.SetMemoryMap(0, []Segment{{Kind: Free, Address: 0x4D000, Size: 0x1000}, {Kind: Code, Address: 0x4C000, Size: 0x100, Name: "code"}})
	b.SetMemoryMap(1, []Segment{{Kind: Weights, Address: 0x80000, Size: 64, Name: "w"}})
	b.SetPlan(Plan{PredictedCycles: 390, Gemms: []Gemm{{Name: "g", M: 1, K: 2, N: 3, Grid: Grid{1, 2, 1}, Tiles: 2, Kernel: "k1"}},
		Finalists: []Finalist{{Rank: 0, MidCycles: 390, LowCycles: 400, Grids: []Grid{{1, 2, 1}}, Chosen: true}}})
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuilderSortsAndFills(t *testing.T) {
	p := small(t)
	if p.Cycles != 400 || p.Samples != 6 || p.Tiles() != 2 || p.NumSteps() != 6 {
		t.Fatalf("cycles=%d samples=%d tiles=%d steps=%d, want 400 6 2 6", p.Cycles, p.Samples, p.Tiles(), p.NumSteps())
	}
	if p.Steps[0][0].Kind != Exchange || p.Steps[0][1].Kernel != "k1" {
		t.Errorf("tile 0 steps not sorted by start: %+v", p.Steps[0])
	}
	if w := p.Phases[0].Windows; w[0].Tile != 0 || w[1].Tile != 1 {
		t.Errorf("windows not sorted by tile: %+v", w)
	}
	if m := p.Memory[0]; m[0].Kind != Code {
		t.Errorf("segments not sorted by address: %+v", m)
	}
}

func TestBuilderErrors(t *testing.T) {
	b := NewBuilder("w", "ipu21", 4, 0)
	b.AddStep(4, Step{End: 1})
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "tile 4 out of range") {
		t.Errorf("step on tile 4 of 4: err = %v", err)
	}
	b = NewBuilder("w", "ipu21", 2, 0)
	b.AddStep(0, Step{Start: 0, End: 10, Kind: Compute, Phase: NoPhase})
	b.AddStep(0, Step{Start: 5, End: 20, Kind: Compute, Phase: NoPhase})
	b.AddStep(1, Step{Start: 0, End: 10, Kind: Exchange, Phase: 3})
	_, err := b.Build()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "overlaps") || !strings.Contains(err.Error(), "unknown phase 3") {
		t.Errorf("overlapping steps and unknown phase: err = %v", err)
	}
	if _, err := NewBuilder("w", "ipu21", -1, 0).Build(); err == nil {
		t.Error("negative tiles accepted")
	}
}

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name string
		edit func(p *Profile)
		want string
	}{
		{"no tiles", func(p *Profile) { p.Steps, p.Memory = nil, nil }, "no tiles"},
		{"memory tiles", func(p *Profile) { p.Memory = p.Memory[:1] }, "memory maps for 1 tiles"},
		{"end before start", func(p *Profile) { p.Steps[0][1].End = 50 }, "ends before it starts"},
		{"past cycles", func(p *Profile) { p.Cycles = 390 }, "ends after the profile's 390 cycles"},
		{"unknown kind", func(p *Profile) { p.Steps[1][1].Kind = 9 }, "unknown kind 9"},
		{"phase on compute", func(p *Profile) { p.Steps[1][1].Phase = 0 }, "only exchange steps"},
		{"negative phase", func(p *Profile) { p.Steps[1][1].Phase = -5 }, "phase -5"},
		{"duplicate phase", func(p *Profile) { p.Phases = append(p.Phases, p.Phases[0]) }, "id used twice"},
		{"bound above horizon", func(p *Profile) { p.Phases[0].Bound = 101 }, "below its lower bound"},
		{"window tile", func(p *Profile) { p.Phases[0].Windows[1].Tile = 7 }, "window of tile 7 out of range"},
		{"window order", func(p *Profile) { p.Phases[0].Windows[1].Tile = 0 }, "increasing tile order"},
		{"window past horizon", func(p *Profile) { p.Phases[0].Windows[0].SendEnd = 101 }, "send window"},
		{"phase past end", func(p *Profile) { p.Phases[0].Start = 350 }, "ends after the profile"},
		{"segment overlap", func(p *Profile) { p.Memory[0][1].Address = 0x4C080 }, "overlaps the previous segment"},
		{"segment kind", func(p *Profile) { p.Memory[1][0].Kind = 6 }, "unknown kind 6"},
		{"finalist grids", func(p *Profile) { p.Plan.Finalists[0].Grids = nil }, "0 grids for 1 GEMMs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := small(t)
			c.edit(p)
			err := p.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, c.want)
			}
			if c.name == "memory tiles" {
				return // the file stores memory per tile: it cannot express this
			}
			// Read refuses what Validate refuses.
			data, merr := p.Marshal()
			if merr != nil {
				t.Fatal(merr)
			}
			if _, err := Read(data); !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Read: err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestValidateLimitsProblems(t *testing.T) {
	p := Synthetic(64, 1)
	p.Cycles = 1
	err := p.Validate()
	if err == nil || !strings.Contains(err.Error(), "more") || strings.Count(err.Error(), ";") > maxProblems+1 {
		t.Fatalf("err = %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, p := range []*Profile{small(t), Synthetic(64, 7)} {
		data, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := Read(data)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(p, q); d != "" {
			t.Fatalf("round trip changed the profile (-want +got):\n%s", d)
		}
		again, err := q.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, again) {
			t.Fatal("marshal of the read profile differs")
		}
	}
}

func TestWriteReadFile(t *testing.T) {
	name := t.TempDir() + "/p.prof"
	p := Synthetic(16, 1)
	if err := p.WriteFile(name); err != nil {
		t.Fatal(err)
	}
	q, err := ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(p, q); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if _, err := ReadFile(name + ".missing"); err == nil {
		t.Fatal("missing file read")
	}
}

func TestReadErrors(t *testing.T) {
	good, err := small(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrMagic},
		{"magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), ErrMagic},
		{"short header", good[:20], ErrTruncated},
		{"version", edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 9); return b }), ErrVersion},
		{"reserved", edit(func(b []byte) []byte { b[12] = 1; return b }), ErrCorrupt},
		{"truncated", good[:len(good)-8], ErrTruncated},
		{"trailing", append(bytes.Clone(good), 0, 0, 0, 0, 0, 0, 0, 0), ErrCorrupt},
		{"checksum", edit(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), ErrChecksum},
	}
	for _, c := range cases {
		if _, err := Read(c.data); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestSyntheticDeterministic(t *testing.T) {
	a, _ := Synthetic(1472, 3).Marshal()
	b, _ := Synthetic(1472, 3).Marshal()
	c, _ := Synthetic(1472, 4).Marshal()
	if !bytes.Equal(a, b) {
		t.Fatal("same seed, different profiles")
	}
	if bytes.Equal(a, c) {
		t.Fatal("different seeds, same profile")
	}
}

// TestSyntheticShape checks the synthetic profile looks like the SigLIP
// MLP run the planner predicts (149,990 cycles on 1458 active tiles).
func TestSyntheticShape(t *testing.T) {
	p := Synthetic(1472, 1)
	if !p.Synthetic || p.Tiles() != 1472 {
		t.Fatalf("synthetic=%v tiles=%d", p.Synthetic, p.Tiles())
	}
	if p.Cycles < 140_000 || p.Cycles > 170_000 {
		t.Errorf("cycles %d, want about 150k", p.Cycles)
	}
	if len(p.Phases) != 4 {
		t.Errorf("%d exchange phases, want 4", len(p.Phases))
	}
	r, err := p.Run(Query{GroupBy: ByKernel, Kinds: []Kind{Compute}})
	if err != nil {
		t.Fatal(err)
	}
	tiles := map[string]int{}
	for _, g := range r.Groups {
		tiles[g.Key] = g.Tiles
	}
	if tiles["gemm_f16"] != 1458 || tiles["gelu_f16"] != 1440 || tiles["reduce_add_f16"] < 1400 {
		t.Errorf("kernel tiles %v", tiles)
	}
	for _, k := range Kinds() {
		rk, _ := p.Run(Query{Kinds: []Kind{k}})
		if rk.Total.Steps == 0 {
			t.Errorf("no %v steps", k)
		}
	}
	for _, m := range p.Memory {
		var total uint64
		for _, s := range m {
			total += uint64(s.Size)
		}
		if total != synthSRAMEnd-synthSRAMBase {
			t.Fatalf("memory map covers %d bytes, want the whole SRAM", total)
		}
	}
	if len(p.Plan.Gemms) != 2 || len(p.Plan.Finalists) != 8 || !p.Plan.Finalists[0].Chosen {
		t.Errorf("plan %+v", p.Plan)
	}
	for _, n := range []int{1, 2, 3, 17, 100} {
		if q := Synthetic(n, 1); q.Tiles() != n {
			t.Errorf("Synthetic(%d) has %d tiles", n, q.Tiles())
		}
	}
}

func TestKindNames(t *testing.T) {
	for _, k := range Kinds() {
		if got, err := ParseKind(k.String()); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k, got, err)
		}
	}
	if _, err := ParseKind("nap"); err == nil {
		t.Error("ParseKind(nap) accepted")
	}
	if Kind(9).String() != "kind(9)" || SegmentKind(9).String() != "segment-kind(9)" || Weights.String() != "weights" {
		t.Error("names")
	}
}

func FuzzRead(f *testing.F) {
	for _, p := range []*Profile{small(f), Synthetic(3, 1)} {
		data, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		// Seeds with a valid header around mutated content, so the fuzzer
		// reaches the decoder and the validator.
		for _, i := range []int{HeaderSize + 8, HeaderSize + 40, len(data) / 2, len(data) - 3} {
			m := bytes.Clone(data)
			m[i] ^= 0x5a
			f.Add(fixHeader(m))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range [][]byte{data, fixHeader(bytes.Clone(data))} {
			p, err := Read(d)
			if err != nil {
				continue
			}
			// What Read accepts queries, diffs and writes back unchanged.
			for _, g := range GroupBys {
				if _, err := p.Run(Query{GroupBy: g, Limit: 3}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := Diff(p, p); err != nil {
				t.Fatal(err)
			}
			out, err := p.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			q, err := Read(out)
			if err != nil {
				t.Fatalf("re-read: %v", err)
			}
			if d := cmp.Diff(p, q); d != "" {
				t.Fatalf("re-read differs:\n%s", d)
			}
		}
	})
}

// fixHeader rewrites the header of data (if long enough) to match its
// content, so mutations reach the decoder.
func fixHeader(data []byte) []byte {
	if len(data) < HeaderSize {
		return data
	}
	copy(data, Magic)
	binary.LittleEndian.PutUint32(data[8:], FormatVersion)
	binary.LittleEndian.PutUint32(data[12:], 0)
	binary.LittleEndian.PutUint64(data[16:], uint64(len(data)-HeaderSize))
	sum := sha256.Sum256(data[HeaderSize:])
	copy(data[24:56], sum[:])
	return data
}
