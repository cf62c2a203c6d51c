package ipuexe

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ipustack/ipustack/ipu21"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// Addresses the test packages use.
const (
	codeAddr  = ipu21.EntrySlot // 0x4C010
	inAddr    = ipu21.HostApertureBase
	dataAddr  = 0x60000
	bssAddr   = ipu21.Region1Base
	outAddr   = ipu21.Region1Base + 0x800
	sampleA   = ipu21.ProfileStartCycle
	sampleB   = ipu21.ProfileEndCycle
	slotBytes = 4096
)

// runtimeCode stands for the resident runtime: identical on every tile,
// so Marshal stores it once.
var runtimeCode = bytes.Repeat([]byte{0x19, 0xE0, 0x00, 0x00}, 16)

func testTile(phys uint32) Tile {
	return Tile{
		Physical: phys,
		Entry:    codeAddr,
		Segments: []Segment{
			{Address: codeAddr, MemSize: 0x100, Data: runtimeCode, Flags: FlagRead | FlagExec},
			{Address: dataAddr, MemSize: 0x200, Data: []byte(fmt.Sprintf("tile %4d data..", phys)), Flags: FlagRead | FlagWrite},
			{Address: bssAddr, MemSize: 0x1000, Flags: FlagRead | FlagWrite},
		},
		Symbols: []Symbol{{Name: "tile_data", Address: dataAddr, Size: 16}},
	}
}

// fullPackage uses every part of the format: three tiles, an input and an
// output spread over all three, a weight over two, two host calls, config
// writes, a profile plan and symbols.
func fullPackage() *Package {
	ids := []uint32{0, 2, 64}
	p := &Package{
		Recipe:          `{"workload":"gemm","m":64}`,
		CompilerVersion: "ipustack test",
		Target:          "ipu21",
		MemoryBase:      ipu21.SRAMBase,
		MemorySize:      ipu21.SRAMEnd - ipu21.SRAMBase,
		Inputs: []Binding{{Name: "x", DType: F16, Shape: []uint32{3, 64}, TensorShape: []uint32{3, 64},
			Layout: []Block{{Offset: 0, RowLo: 0, RowHi: 3, ColLo: 0, ColHi: 64, RowEnd: 3, ColEnd: 64, Order: RowMajor}}}},
		Outputs: []Binding{{Name: "y", DType: F32, Shape: []uint32{3, 32}}},
		Weights: []Binding{{Name: "w", DType: F16, Shape: []uint32{64, 32}, TensorShape: []uint32{64, 30}, Layout: []Block{
			{Offset: 0, RowLo: 0, RowHi: 64, ColLo: 0, ColHi: 16, RowEnd: 64, ColEnd: 16, Order: AMPRight},
			{Offset: 2048, RowLo: 0, RowHi: 64, ColLo: 16, ColHi: 32, RowEnd: 64, ColEnd: 30, Order: AMPRight},
		}, Slices: []Slice{
			{Tile: 0, Address: bssAddr, Offset: 0, Length: 2048},
			{Tile: 2, Address: bssAddr, Offset: 2048, Length: 2048},
		}}},
		Host: HostExchange{
			Pages:         []HostPage{{Index: 0, Size: 4096}, {Index: 1, Size: 3 * slotBytes}},
			CommandPage:   0,
			CommandOffset: 0,
			SlotSize:      slotBytes,
		},
		Config: []ConfigWrite{{Offset: 0x30004, Value: 0x40000000}, {Offset: 0x30044, Value: 0x40000000}},
		Profile: Profile{Steps: []ProfileStep{
			{Name: "start", Kind: "sync"}, {Name: "gemm", Kind: "compute"}, {Name: "end", Kind: "sync"},
		}},
		Symbols: []Symbol{{Name: "_start", Address: codeAddr, Size: 0x40}},
		Run: RunInfo{Workload: "gemm-test", Assumptions: AssumptionsDefault, Flops: 2 * 3 * 64 * 30,
			Plan: PlanSummary{PredictedCycles: 1000,
				Gemms:     []PlanGemm{{Name: "y", M: 3, K: 64, N: 30, Grid: PlanGrid{1, 3, 1}, Tiles: 3, Kernel: "gemm_f16"}},
				Finalists: []PlanFinalist{{Rank: 1, MidCycles: 1000, LowCycles: 1100, Grids: []PlanGrid{{1, 3, 1}}, Chosen: true}}},
			Phases: []ExchangePhase{{ID: 0, Name: "w broadcast", Horizon: 100, Bound: 90, Schedule: "full-duplex", Windows: []PhaseWindow{
				{Tile: 0, SendStart: 0, SendEnd: 50, SendBytes: 2048}, {Tile: 64, RecvStart: 10, RecvEnd: 60, RecvBytes: 2048}}}},
			MemoryMaps: []MemoryMap{{Ranges: []MemoryRange{{Kind: "code", Address: codeAddr, Size: 0x100, Name: "runtime"},
				{Kind: "weights", Address: bssAddr, Size: 0x1000, Name: "w"}}}},
			StepDetails: []StepDetail{{Kernel: "gemm_f16", Phase: -1, Operation: "y", Value: "y", Reason: "GEMM block"}},
		},
	}
	var runIn, runOut []HostTransfer
	for i, id := range ids {
		p.Tiles = append(p.Tiles, testTile(id))
		p.Tiles[i].MemoryMap = 1
		p.Inputs[0].Slices = append(p.Inputs[0].Slices, Slice{Tile: id, Address: inAddr, Offset: uint64(i) * 128, Length: 128})
		p.Outputs[0].Slices = append(p.Outputs[0].Slices, Slice{Tile: id, Address: outAddr, Offset: uint64(i) * 128, Length: 128})
		runIn = append(runIn, HostTransfer{Kind: KindInput, Slice: uint32(i), Length: 128, Page: 1, PageOffset: uint32(i) * slotBytes})
		runOut = append(runOut, HostTransfer{Kind: KindOutput, Slice: uint32(i), Length: 128, Page: 1, PageOffset: uint32(i) * slotBytes})
		p.Profile.Tiles = append(p.Profile.Tiles, TileProfile{Tile: id, Samples: []ProfileSample{
			{Address: sampleA, Step: 0}, {Address: sampleB, Step: 2, Detail: 1},
		}})
	}
	p.Host.Calls = []HostCall{
		{Name: "initialize", Command: 1, Phases: []HostPhase{
			{Transfers: []HostTransfer{
				{Kind: KindWeight, Slice: 0, Length: 2048, Page: 1, PageOffset: 0},
				{Kind: KindWeight, Slice: 1, Length: 2048, Page: 1, PageOffset: slotBytes},
			}},
			{}, // the device acknowledges
		}},
		{Name: "run", Command: 2, Phases: []HostPhase{{Transfers: runIn}, {Transfers: runOut}}},
	}
	return p
}

// minimalPackage is the least Read accepts: one tile running code.
func minimalPackage() *Package {
	return &Package{
		Target:     "ipu21",
		MemoryBase: ipu21.SRAMBase,
		MemorySize: ipu21.SRAMEnd - ipu21.SRAMBase,
		Tiles: []Tile{{Physical: 1471, Entry: codeAddr, Segments: []Segment{
			{Address: codeAddr, MemSize: 8, Data: runtimeCode[:8], Flags: FlagRead | FlagExec},
		}}},
	}
}

// chipPackage has every tile of the chip, all running the same code.
func chipPackage() *Package {
	p := minimalPackage()
	p.Tiles = nil
	for l := range ipu21.Tiles {
		p.Tiles = append(p.Tiles, testTile(uint32(ipu21.LogicalToPhysical(l))))
	}
	return p
}

func mustMarshal(t testing.TB, p *Package) []byte {
	t.Helper()
	b, err := p.Marshal()
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return b
}

// equal compares packages; a nil and an empty list mean the same.
func diff(a, b *Package) string { return cmp.Diff(a, b, cmpopts.EquateEmpty()) }

func TestRoundTrip(t *testing.T) {
	zeroFill := minimalPackage()
	zeroFill.Tiles[0].Segments = append(zeroFill.Tiles[0].Segments,
		Segment{Address: bssAddr, MemSize: 0x10000, Flags: FlagRead | FlagWrite})
	for _, tc := range []struct {
		name string
		p    *Package
	}{
		{"minimal", minimalPackage()},
		{"full", fullPackage()},
		{"zero-fill only data", zeroFill},
		{"whole chip, shared code", chipPackage()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.p.Validate(ipu21.IPU21()); err != nil {
				t.Fatalf("test package does not validate: %v", err)
			}
			b := mustMarshal(t, tc.p)
			got, err := Read(b)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if d := diff(tc.p, got); d != "" {
				t.Errorf("round trip changed the package (-want +got):\n%s", d)
			}
			// Read -> Marshal gives the same file.
			if b2 := mustMarshal(t, got); !bytes.Equal(b, b2) {
				t.Errorf("re-marshalled package differs from the original file")
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	a := mustMarshal(t, fullPackage())
	for range 3 {
		// A fresh but equal package, so that nothing can come from
		// pointer identity or map order.
		if b := mustMarshal(t, fullPackage()); !bytes.Equal(a, b) {
			t.Fatal("two equal packages marshalled to different bytes")
		}
	}
	// Equal data in separate slices still deduplicates the same way.
	p := fullPackage()
	for i := range p.Tiles {
		p.Tiles[i].Segments[0].Data = bytes.Clone(runtimeCode)
	}
	if b := mustMarshal(t, p); !bytes.Equal(a, b) {
		t.Fatal("data identity changed the bytes")
	}
}

func TestMarshalFallbackSameBytes(t *testing.T) {
	want := mustMarshal(t, fullPackage())
	defer func(f func(*Package, [][]byte) int) { sizeEstimate = f }(sizeEstimate)
	for _, n := range []int{0, 100, 1000} {
		sizeEstimate = func(*Package, [][]byte) int { return n }
		if got := mustMarshal(t, fullPackage()); !bytes.Equal(got, want) {
			t.Errorf("with a %d-byte estimate the bytes differ", n)
		}
	}
}

func TestSharedBlobsStoredOnce(t *testing.T) {
	p := chipPackage()
	b := mustMarshal(t, p)
	// 1472 tiles x 64 bytes of code would be 94 KiB alone if stored per
	// tile; stored once, the whole package is mostly per-tile records.
	perTile := len(b) / ipu21.Tiles
	if perTile > 400 {
		t.Errorf("%d bytes per tile: the shared code is not deduplicated", perTile)
	}
	if got := bytes.Count(b, runtimeCode); got != 1 {
		t.Errorf("runtime code stored %d times, want 1", got)
	}
}

// rewrap replaces a file's content and fixes the header to match, so a
// test can feed the decoder content that passes the checksum.
func rewrap(content []byte) []byte {
	out := make([]byte, HeaderSize+len(content))
	copy(out[HeaderSize:], content)
	putHeader(out, out[HeaderSize:])
	return out
}

func TestReadRejectsFile(t *testing.T) {
	good := mustMarshal(t, fullPackage())
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	otherTarget := fullPackage()
	otherTarget.Target = "ipu99"
	for _, tc := range []struct {
		name string
		data []byte
		is   error
		want []string
	}{
		{"empty", nil, ErrMagic, []string{"magic"}},
		{"wrong magic", mod(func(b []byte) []byte { b[3] = 'X'; return b }), ErrMagic, []string{`"IPUXXE1`}},
		{"elf file", []byte("\x7fELF\x01\x01\x01\x00\x00\x00"), ErrMagic, []string{"magic"}},
		{"short header", good[:20], ErrTruncated, []string{"20 bytes", "56-byte header"}},
		{"format version", mod(func(b []byte) []byte { b[8] = 2; return b }), ErrVersion, []string{"format version 2", "supports 1"}},
		{"reserved", mod(func(b []byte) []byte { b[12] = 1; return b }), ErrCorrupt, []string{"reserved"}},
		{"truncated", good[:len(good)-100], ErrTruncated, []string{"content bytes"}},
		{"trailing bytes", append(bytes.Clone(good), 0, 0, 0, 0), ErrCorrupt, []string{"4 bytes after"}},
		{"corrupted content", mod(func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }), ErrChecksum, []string{"SHA-256"}},
		{"corrupted checksum", mod(func(b []byte) []byte { b[30] ^= 1; return b }), ErrChecksum, []string{"SHA-256"}},
		{"not capnp", rewrap([]byte("this is not a capnp message....")), ErrCorrupt, []string{"corrupt"}},
		{"framing short of content", rewrap(append(bytes.Clone(good[HeaderSize:]), make([]byte, 8)...)), ErrCorrupt, []string{"framing"}},
		{"unknown target", mustMarshal(t, otherTarget), ErrTarget, []string{`"ipu99"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Read(tc.data)
			if err == nil {
				t.Fatalf("Read accepted it")
			}
			if p != nil {
				t.Errorf("Read returned a package with error %v", err)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(p *Package)
		want   []string // substrings of one line of the error
	}{
		{"memory map", func(p *Package) { p.MemorySize = 0x1000 },
			[]string{"memory:", "[0x4c000,+0x1000)"}},
		{"overlapping segments", func(p *Package) { p.Tiles[1].Segments[1].Address = 0x4C080 },
			[]string{"tiles[1] (tile 2)", "segment 1 [0x4c080,0x4c280)", "overlaps segment 0 [0x4c010,0x4c110)"}},
		{"segment above SRAM", func(p *Package) { p.Tiles[2].Segments[2].Address = 0xE7F00 },
			[]string{"tiles[2] (tile 64)", "segment 2 [0xe7f00,0xe8f00)", "outside SRAM [0x4c000,0xe8000)"}},
		{"segment below SRAM", func(p *Package) { p.Tiles[0].Segments[1].Address = 0x1000 },
			[]string{"tiles[0] (tile 0)", "segment 1 [0x1000,0x1200)", "outside SRAM"}},
		{"segment wrapping", func(p *Package) { p.Tiles[0].Segments[2].Address = 0xFFFFF000 },
			[]string{"tiles[0] (tile 0)", "segment 2", "outside SRAM"}},
		{"data past loader limit", func(p *Package) {
			p.Tiles[0].Segments[2] = Segment{Address: ipu21.LoadLimit - 8, MemSize: 16, Data: make([]byte, 16), Flags: FlagRead}
		}, []string{"tiles[0] (tile 0)", "segment 2 [0xe7ba8,0xe7bb8)", "past the loader limit 0xe7bb0"}},
		{"executable in region 1", func(p *Package) { p.Tiles[2].Segments[2].Flags |= FlagExec },
			[]string{"tiles[2] (tile 64)", "segment 2 [0x80000,0x81000) RWX", "executable outside region 0"}},
		{"executable straddling region 1", func(p *Package) {
			p.Tiles[0].Segments[1] = Segment{Address: 0x7FF00, MemSize: 0x200, Flags: FlagRead | FlagExec}
		}, []string{"tiles[0] (tile 0)", "segment 1 [0x7ff00,0x80100) R-X", "executable outside region 0"}},
		{"data bigger than segment", func(p *Package) { p.Tiles[0].Segments[0].MemSize = 8 },
			[]string{"tiles[0] (tile 0)", "segment 0 [0x4c010,0x4c018)", "64 data bytes exceed the memory size 8"}},
		{"unknown flags", func(p *Package) { p.Tiles[0].Segments[1].Flags |= 0x80 },
			[]string{"tiles[0] (tile 0)", "segment 1", "unknown flag bits 0x80"}},
		{"entry outside code", func(p *Package) { p.Tiles[1].Entry = dataAddr },
			[]string{"tiles[1] (tile 2)", "entry point 0x60000 is not in an executable segment"}},
		{"duplicate tile", func(p *Package) { p.Tiles[2].Physical = 2 },
			[]string{"tiles[2] (tile 2)", "duplicate tile, also tiles[1]"}},
		{"invalid physical id", func(p *Package) { p.Tiles[2].Physical = 1472 },
			[]string{"tiles[2] (tile 1472)", "invalid physical id 1472", "0..1471"}},
		{"slice on a missing tile", func(p *Package) { p.Inputs[0].Slices[1].Tile = 66 },
			[]string{`inputs[0] "x"`, "slice 1 (tile 66, address 0x50000, length 128)", "not in the package"}},
		{"slice outside SRAM", func(p *Package) { p.Outputs[0].Slices[2].Address = 0xE7FC0 },
			[]string{`outputs[0] "y"`, "slice 2 (tile 64, address 0xe7fc0, length 128)", "outside the tile's SRAM"}},
		{"slice gap", func(p *Package) { p.Inputs[0].Slices[1].Offset = 130 },
			[]string{`inputs[0] "x"`, "gap: tensor bytes [128,130)", "slice 1 on tile 2 at 0x50000"}},
		{"slice overlap", func(p *Package) { p.Weights[0].Slices[1].Offset = 2000 },
			[]string{`weights[0] "w"`, "slice 1 (tile 2, address 0x80000)", "[2000,4048)", "overlapping slice 0"}},
		{"slice overflow", func(p *Package) { p.Weights[0].Slices[1].Length = 4096 },
			[]string{`weights[0] "w"`, "slice 1 (tile 2, address 0x80000) ends at tensor byte 6144", "4096 bytes"}},
		{"tensor not covered", func(p *Package) { p.Inputs[0].Shape = []uint32{4, 64} },
			[]string{`inputs[0] "x"`, "tensor bytes [384,512) are in no slice"}},
		{"unknown dtype", func(p *Package) { p.Outputs[0].DType = "f17" },
			[]string{`outputs[0] "y"`, `unknown dtype "f17"`}},
		{"duplicate binding", func(p *Package) { p.Inputs = append(p.Inputs, p.Inputs[0]) },
			[]string{`inputs[1] "x"`, "duplicate name, also inputs[0]"}},
		{"phase with missing page", func(p *Package) { p.Host.Calls[1].Phases[0].Transfers[2].Page = 7 },
			[]string{`host.calls[1] "run" phase 0 transfer 2`, `inputs[0] "x" slice 2, tile 64, address 0x50000`, "page 7 does not exist"}},
		{"phase with missing slice", func(p *Package) { p.Host.Calls[0].Phases[0].Transfers[1].Slice = 5 },
			[]string{`host.calls[0] "initialize" phase 0 transfer 1 (weights[0] slice 5)`, "no such slice"}},
		{"phase with missing binding", func(p *Package) { p.Host.Calls[1].Phases[1].Transfers[0].Binding = 3 },
			[]string{`host.calls[1] "run" phase 1 transfer 0 (outputs[3] slice 0)`, "no such binding"}},
		{"slot size exceeded", func(p *Package) {
			p.Host.SlotSize = 1024 // the 2048-byte weight transfers no longer fit
		}, []string{`host.calls[0] "initialize" phase 0`, "tile 0 moves 2048 bytes, more than its 1024-byte slot"}},
		{"slot crossed", func(p *Package) { p.Host.Calls[1].Phases[0].Transfers[0].PageOffset = slotBytes - 64 },
			[]string{`host.calls[1] "run" phase 0 transfer 0`, "tile 0", "page 1 bytes [4032,4160) cross a 4096-byte slot boundary"}},
		{"slot shared", func(p *Package) { p.Host.Calls[1].Phases[0].Transfers[1].PageOffset = 1024 },
			[]string{`host.calls[1] "run" phase 0 transfer 1`, "tile 2", "page 1 slot 0 already belongs to tile 0"}},
		{"page bytes overlap", func(p *Package) {
			tr := &p.Host.Calls[1].Phases[0].Transfers[0]
			tr.PageOffset, tr.Length = 64, 64 // tile 0's slot, overlapping the next transfer on tile 0
			p.Host.Calls[1].Phases[0].Transfers = append(p.Host.Calls[1].Phases[0].Transfers,
				HostTransfer{Kind: KindInput, Slice: 0, SliceOffset: 64, Length: 64, Page: 1, PageOffset: 100})
		}, []string{`host.calls[1] "run" phase 0 transfer 3: page 1 bytes [100,164) overlap transfer 0's [64,128)`}},
		{"transfer past slice", func(p *Package) { p.Host.Calls[1].Phases[1].Transfers[2].SliceOffset = 64 },
			[]string{`host.calls[1] "run" phase 1 transfer 2`, "tile 64", "bytes [64,192) of the slice, which has 128"}},
		{"command page missing", func(p *Package) { p.Host.CommandPage = 9 },
			[]string{"command word is in page 9"}},
		{"command word overwritten", func(p *Package) { p.Host.Calls[0].Phases[0].Transfers[0].Page = 0 },
			[]string{`host.calls[0] "initialize" phase 0 transfer 0`, "cover the command word"}},
		{"duplicate command", func(p *Package) { p.Host.Calls[1].Command = 1 },
			[]string{`host.calls[1] "run": command 1 is also host.calls[0]'s`}},
		{"config misaligned", func(p *Package) { p.Config[1].Offset = 0x30046 },
			[]string{"config[1]: offset 0x30046"}},
		{"profile missing step", func(p *Package) { p.Profile.Tiles[1].Samples[1].Step = 3 },
			[]string{"profile.tiles[1] (tile 2): sample 1 at 0x58008", "step 3 does not exist"}},
		{"profile missing tile", func(p *Package) { p.Profile.Tiles[2].Tile = 3 },
			[]string{"profile.tiles[2] (tile 3)", "not in the package"}},
		{"symbol outside SRAM", func(p *Package) { p.Tiles[1].Symbols[0].Address = 0x100 },
			[]string{"tiles[1] (tile 2) symbols[0]", `"tile_data"`, "outside SRAM"}},
		{"layout without tensor shape", func(p *Package) { p.Inputs[0].TensorShape = nil },
			[]string{`inputs[0] "x"`, "a layout needs a tensor shape"}},
		{"layout order unknown", func(p *Package) { p.Weights[0].Layout[1].Order = 7 },
			[]string{`weights[0] "w": layout block 1 (order(7)`, "unknown element order 7"}},
		{"layout past the columns", func(p *Package) { p.Inputs[0].Layout[0].ColHi = 80 },
			[]string{`inputs[0] "x": layout block 0`, "reaches past the padded 64 columns"}},
		{"layout rows past the bytes", func(p *Package) { p.Inputs[0].Layout[0].RowHi = 4 },
			[]string{`inputs[0] "x": layout block 0`, "bytes [0,512) misaligned or outside the binding's 384"}},
		{"layout gap", func(p *Package) { p.Weights[0].Layout[0].RowHi, p.Weights[0].Layout[0].RowEnd = 48, 48 },
			[]string{`weights[0] "w": layout: bytes [1536,2048) are in no block`}},
		{"layout outside", func(p *Package) { p.Weights[0].Layout[1].Offset = 2050 },
			[]string{`weights[0] "w": layout block 1`, "bytes [2050,4098) misaligned or outside the binding's 4096"}},
		{"layout AMP columns", func(p *Package) { p.Weights[0].Layout[0].ColHi = 8 },
			[]string{`weights[0] "w": layout block 0`, "columns not in whole 16-column groups"}},
		{"layout real end", func(p *Package) { p.Weights[0].Layout[1].ColEnd = 32 },
			[]string{`weights[0] "w": layout block 1`, "real elements end at row 64 col 32", "64 x 30 matrix"}},
		{"memory map missing", func(p *Package) { p.Tiles[2].MemoryMap = 2 },
			[]string{"tiles[2] (tile 64): memory map 2 does not exist (run.memoryMaps has 1)"}},
		{"memory range kind", func(p *Package) { p.Run.MemoryMaps[0].Ranges[1].Kind = "heap" },
			[]string{`run.memoryMaps[0] range 1 "w" [0x80000,0x81000)`, `unknown kind "heap"`}},
		{"step detail missing", func(p *Package) { p.Profile.Tiles[0].Samples[1].Detail = 2 },
			[]string{"profile.tiles[0] (tile 0): sample 1", "step detail 2 does not exist"}},
		{"step detail phase", func(p *Package) { p.Run.StepDetails[0].Phase = 4 },
			[]string{"run.stepDetails[0]: phase 4 is not in run.phases"}},
		{"window outside horizon", func(p *Package) { p.Run.Phases[0].Windows[1].RecvEnd = 101 },
			[]string{`run.phases[0] "w broadcast" (id 0) window 1 (tile 64)`, "not inside the horizon 100"}},
		{"window of a missing tile", func(p *Package) { p.Run.Phases[0].Windows[0].Tile = 5 },
			[]string{`run.phases[0] "w broadcast" (id 0) window 0 (tile 5)`, "not in the package"}},
		{"bound past horizon", func(p *Package) { p.Run.Phases[0].Bound = 200 },
			[]string{`run.phases[0] "w broadcast"`, "lower bound 200 exceeds the horizon 100"}},
		{"duplicate phase", func(p *Package) { p.Run.Phases = append(p.Run.Phases, p.Run.Phases[0]) },
			[]string{`run.phases[1] "w broadcast" (id 0): duplicate id, also run.phases[0]`}},
		{"finalist grids", func(p *Package) { p.Run.Plan.Finalists[0].Grids = nil },
			[]string{"run.plan.finalists[0] (rank 1): 0 grids for 1 GEMMs"}},
		{"assumptions", func(p *Package) { p.Run.Assumptions = "optimistic" },
			[]string{`run.assumptions: unknown assumption set "optimistic"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fullPackage()
			tc.mutate(p)
			err := p.Validate(ipu21.IPU21())
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error is not ErrInvalid: %v", err)
			}
			line := matchingLine(err.Error(), tc.want)
			if line == "" {
				t.Errorf("no line of the error mentions all of %q:\n%v", tc.want, err)
			}
			// Read must refuse the same package, with the same message.
			_, rerr := Read(mustMarshal(t, p))
			if rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("Read error %v differs from Validate's %v", rerr, err)
			}
		})
	}
}

// matchingLine returns the first line of msg containing every one of want.
func matchingLine(msg string, want []string) string {
	for line := range strings.SplitSeq(msg, "\n") {
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			return line
		}
	}
	return ""
}

func TestValidateTargetMismatch(t *testing.T) {
	other := ipu21.IPU21()
	other.Name = "ipu99"
	err := fullPackage().Validate(other)
	if err == nil || !strings.Contains(err.Error(), `target: package is for "ipu21", validating for "ipu99"`) {
		t.Errorf("err = %v", err)
	}
	if err := fullPackage().Validate(nil); err == nil {
		t.Error("Validate(nil) accepted")
	}
}

func TestValidateAccumulatesAndCaps(t *testing.T) {
	p := chipPackage()
	for i := range p.Tiles {
		p.Tiles[i].Entry = 0x90000 // not in code on any tile
	}
	err := p.Validate(ipu21.IPU21())
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	// Header line + MaxProblems problems + the "... and N more" line.
	if len(lines) != MaxProblems+2 {
		t.Errorf("%d lines, want %d", len(lines), MaxProblems+2)
	}
	if !strings.Contains(lines[0], fmt.Sprintf("(%d problems)", ipu21.Tiles)) {
		t.Errorf("header %q does not count all %d problems", lines[0], ipu21.Tiles)
	}
	if want := fmt.Sprintf("... and %d more problems", ipu21.Tiles-MaxProblems); lines[len(lines)-1] != want {
		t.Errorf("last line %q, want %q", lines[len(lines)-1], want)
	}

	// Different problems are all reported.
	q := fullPackage()
	q.Tiles[0].Physical = 5000
	q.Outputs[0].DType = "?"
	q.Config[0].Offset = 1
	err = q.Validate(ipu21.IPU21())
	for _, w := range []string{"invalid physical id 5000", `unknown dtype "?"`, "config[0]"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q: %v", w, err)
		}
	}
}

func TestDecodeKeepsInvalidPackage(t *testing.T) {
	p := fullPackage()
	p.Tiles[0].Physical = 9999
	b := mustMarshal(t, p)
	if _, err := Read(b); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Read: %v", err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if d := diff(p, got); d != "" {
		t.Errorf("Decode changed the package:\n%s", d)
	}
}

func TestReadDataIsIsolated(t *testing.T) {
	got, err := Read(mustMarshal(t, fullPackage()))
	if err != nil {
		t.Fatal(err)
	}
	d := got.Tiles[0].Segments[1].Data
	if cap(d) != len(d) {
		t.Errorf("segment data has spare capacity %d: an append would overwrite the file", cap(d)-len(d))
	}
}

func TestSummaryGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Package
	}{
		{"full", fullPackage()},
		{"minimal", minimalPackage()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Summary(tc.p)
			path := filepath.Join("testdata", "summary-"+tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./ipuexe -run Summary -update)", err)
			}
			if got != string(want) {
				t.Errorf("Summary differs from %s (-want +got):\n%s", path, cmp.Diff(string(want), got))
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	f.Add(mustMarshal(f, fullPackage()))
	f.Add(mustMarshal(f, minimalPackage()))
	bad := fullPackage()
	bad.Tiles[1].Segments[0].Address = 0xE0000
	f.Add(mustMarshal(f, bad))
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Read(data)
		if err == nil {
			// Whatever Read accepts, Marshal writes back and Read accepts.
			if _, err := Read(mustMarshal(t, p)); err != nil {
				t.Fatalf("re-read of an accepted package: %v", err)
			}
		}
		// Mutations almost never pass the checksum. Fix the header so the
		// Cap'n Proto decoder and Validate see the mutated content too.
		if len(data) >= HeaderSize {
			data = rewrap(data[HeaderSize:])
			binary.LittleEndian.PutUint32(data[8:], FormatVersion)
			sum := sha256.Sum256(data[HeaderSize:])
			copy(data[24:], sum[:])
			if p, err := Decode(data); err == nil {
				_ = p.Validate(ipu21.IPU21())
				_ = Summary(p)
				if _, err := p.Marshal(); err != nil {
					t.Fatalf("Marshal of a decoded package: %v", err)
				}
			}
		}
	})
}

// wholeChip is the benchmark package: every tile with ~300 KiB of its own
// code and data (no sharing, the worst case for size), plus one input
// spread over all tiles.
func wholeChip() *Package {
	p := minimalPackage()
	p.Tiles = make([]Tile, ipu21.Tiles)
	in := Binding{Name: "x", DType: F16, Shape: []uint32{ipu21.Tiles, 512}}
	for l := range p.Tiles {
		id := uint32(ipu21.LogicalToPhysical(l))
		code := make([]byte, 60<<10)
		data := make([]byte, 240<<10)
		for i := range code {
			code[i] = byte(l + i)
		}
		for i := range data {
			data[i] = byte(l*7 + i*3)
		}
		// Make every tile's bytes its own, so nothing deduplicates.
		for i := 0; i+4 <= len(code); i += 1024 {
			binary.LittleEndian.PutUint32(code[i:], uint32(l))
		}
		for i := 0; i+4 <= len(data); i += 1024 {
			binary.LittleEndian.PutUint32(data[i:], uint32(l))
		}
		p.Tiles[l] = Tile{Physical: id, Entry: codeAddr, Segments: []Segment{
			{Address: codeAddr, MemSize: uint32(len(code)), Data: code, Flags: FlagRead | FlagExec},
			{Address: bssAddr, MemSize: uint32(len(data)) + 0x1000, Data: data, Flags: FlagRead | FlagWrite},
		}}
		in.Slices = append(in.Slices, Slice{Tile: id, Address: inAddr, Offset: uint64(l) * 1024, Length: 1024})
	}
	p.Inputs = []Binding{in}
	return p
}

func BenchmarkWholeChip(b *testing.B) {
	p := wholeChip()
	if err := p.Validate(ipu21.IPU21()); err != nil {
		b.Fatal(err)
	}
	file := mustMarshal(b, p)
	b.Run("Marshal", func(b *testing.B) {
		b.SetBytes(int64(len(file)))
		for b.Loop() {
			if _, err := p.Marshal(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Read", func(b *testing.B) {
		b.SetBytes(int64(len(file)))
		for b.Loop() {
			if _, err := Read(file); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(len(file))/(1<<20), "MiB/file")
}
