package emu

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// echoPackage describes a chip of tiles whose program waits at `sync 7`
// forever: call "echo" uploads input "x" (sizes[i] bytes on tile i) into
// each tile's window in phase 0 and reads it back as output "y", whose
// slices sit at the same window addresses, in phase 1. No tile code moves
// a byte, so the round trip checks the host link alone.
func echoPackage(ids []int, sizes []int, pageOff func(i int) uint32) *ipuexe.Package {
	const slot = 4096
	p := &ipuexe.Package{}
	var total uint64
	for i, id := range ids {
		p.Tiles = append(p.Tiles, ipuexe.Tile{Physical: uint32(id)})
		total += uint64(sizes[i])
	}
	x := ipuexe.Binding{Name: "x", DType: ipuexe.U8, Shape: []uint32{uint32(total)}}
	y := ipuexe.Binding{Name: "y", DType: ipuexe.U8, Shape: []uint32{uint32(total)}}
	var up, down ipuexe.HostPhase
	var off uint64
	for i, id := range ids {
		if sizes[i] == 0 {
			continue
		}
		po := pageOff(i)
		addr := ipu21.HostApertureBase + po%slot
		x.Slices = append(x.Slices, ipuexe.Slice{Tile: uint32(id), Address: 0x60000, Offset: off, Length: uint32(sizes[i])})
		y.Slices = append(y.Slices, ipuexe.Slice{Tile: uint32(id), Address: addr, Offset: off, Length: uint32(sizes[i])})
		k := uint32(len(x.Slices) - 1)
		up.Transfers = append(up.Transfers, ipuexe.HostTransfer{Kind: ipuexe.KindInput, Slice: k, Length: uint32(sizes[i]), Page: 1, PageOffset: po})
		down.Transfers = append(down.Transfers, ipuexe.HostTransfer{Kind: ipuexe.KindOutput, Slice: k, Length: uint32(sizes[i]), Page: 1, PageOffset: po})
		off += uint64(sizes[i])
	}
	p.Inputs = []ipuexe.Binding{x}
	p.Outputs = []ipuexe.Binding{y}
	p.Host = ipuexe.HostExchange{
		Pages:    []ipuexe.HostPage{{Index: 0, Size: 4096}, {Index: 1, Size: uint32(len(ids)) * slot}},
		SlotSize: slot,
		Calls:    []ipuexe.HostCall{{Name: "echo", Command: 5, Phases: []ipuexe.HostPhase{up, down}}},
	}
	return p
}

func startEcho(t *testing.T, ids []int) *HostLink {
	t.Helper()
	c := newChip(t, ids...)
	for _, id := range ids {
		loadProg(t, c, id, I("sync", HostZone), I("bri", supBase))
	}
	link := &HostLink{Chip: c}
	if err := link.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	return link
}

func TestHostLinkRoundTrip(t *testing.T) {
	ids := []int{0, 2, 64, 66, 1286, 1471}
	sizeSets := [][]int{
		{0, 1, 4, 31, 32, 33},
		{255, 256, 257, 1023, 1024, 1025},
		{2048, 3000, 4095, 4096, 0, 100},
	}
	for _, sizes := range sizeSets {
		link := startEcho(t, ids)
		pkg := echoPackage(ids, sizes, func(i int) uint32 { return uint32(i) * 4096 })
		s, err := NewHostSession(link, pkg)
		if err != nil {
			t.Fatal(err)
		}
		var total int
		wantIn, wantOut := 0, 0
		for _, n := range sizes {
			total += n
			wantIn += (n + 1023) / 1024
			wantOut += (n + 255) / 256
		}
		x := make([]byte, total)
		for i := range x {
			x[i] = byte(i*7 + i>>8)
		}
		out := map[string][]byte{}
		for round := 0; round < 2; round++ {
			st, err := s.Call(context.Background(), "echo", map[string][]byte{"x": x}, out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out["y"], x) {
				t.Fatalf("sizes %v: round trip differs", sizes)
			}
			// One command packet per tile, then the data packets.
			if st.PacketsIn != len(ids)+wantIn || st.PacketsOut != wantOut {
				t.Fatalf("sizes %v: packets in %d out %d, want %d and %d", sizes, st.PacketsIn, st.PacketsOut, len(ids)+wantIn, wantOut)
			}
			if st.BytesIn != uint64(4*len(ids)+total) || st.BytesOut != uint64(total) || st.Phases != 2 || st.Handshakes != 3 {
				t.Fatalf("sizes %v: stats %+v", sizes, st)
			}
			if st.Cycles < 3*ipu21.GlobalSyncCycles {
				t.Fatalf("call took %d cycles, less than three syncs", st.Cycles)
			}
			x[0]++
		}
		for _, id := range ids {
			w, _ := link.Chip.Tile(id).ReadWord(HostCommandAddress)
			if len(sizes) > 0 && sizes[0] == 0 && id == ids[0] && w != 5 {
				t.Fatalf("command word on tile %d = %d, want 5", id, w)
			}
		}
	}
}

func TestHostLinkRules(t *testing.T) {
	ids := []int{0, 2}
	link := startEcho(t, ids)
	// Misaligned page offset: the window address would not be 32-byte aligned.
	_, err := NewHostSession(link, echoPackage(ids, []int{64, 64}, func(i int) uint32 { return uint32(i)*4096 + 16 }))
	if err == nil || !strings.Contains(err.Error(), "32-byte aligned") {
		t.Fatalf("misaligned page offset: %v", err)
	}
	for _, c := range []struct {
		addr uint32
		n    int
	}{{0x50010, 4}, {0x4FFE0, 64}, {0x53FE0, 64}, {0x54000, 1}} {
		if err := link.Write(0, c.addr, make([]byte, c.n)); err == nil {
			t.Errorf("write of %d bytes at %#x accepted", c.n, c.addr)
		}
	}
	if err := link.Write(0, 0x53FE0, make([]byte, 32)); err != nil {
		t.Errorf("write ending at the window's end: %v", err)
	}
	if err := link.Write(7, 0x50000, nil); err == nil {
		t.Error("write to a tile not on the chip accepted")
	}
	if err := link.Read(0, 0xE7FFC, make([]byte, 8)); err == nil {
		t.Error("read past SRAM accepted")
	}
	s, err := NewHostSession(link, echoPackage(ids, []int{64, 64}, func(i int) uint32 { return uint32(i) * 4096 }))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(context.Background(), "nope", nil, nil); err == nil || !strings.Contains(err.Error(), `no call "nope"`) {
		t.Fatalf("unknown call: %v", err)
	}
	if _, err := s.Call(context.Background(), "echo", nil, nil); err == nil || !strings.Contains(err.Error(), `needs tensor "x"`) {
		t.Fatalf("missing input: %v", err)
	}
	if _, err := s.Call(context.Background(), "echo", map[string][]byte{"x": make([]byte, 3)}, nil); err == nil || !strings.Contains(err.Error(), "has 3 bytes") {
		t.Fatalf("short input: %v", err)
	}
	// The session is still usable after refused calls.
	if _, err := s.Call(context.Background(), "echo", map[string][]byte{"x": make([]byte, 128)}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestHostLinkEndsAndFaults(t *testing.T) {
	// A program that ends after its first handshake: the call completes
	// and the session reports the end.
	c := newChip(t, 0, 2)
	for _, id := range []int{0, 2} {
		loadProg(t, c, id, I("sync", HostZone), I("sync", HostZone), I("sync", HostZone), I("sync", HostZone))
	}
	link := &HostLink{Chip: c}
	if err := link.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	pkg := echoPackage([]int{0, 2}, []int{8, 8}, func(i int) uint32 { return uint32(i) * 4096 })
	s, err := NewHostSession(link, pkg)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string][]byte{"x": make([]byte, 16)}
	if _, err := s.Call(context.Background(), "echo", in, nil); err != nil {
		t.Fatal(err)
	}
	// The tiles now run off the end of their program into zeroed memory
	// and fault, which the call reports with the tile.
	_, err = s.Call(context.Background(), "echo", in, nil)
	var f *Fault
	if !errors.As(err, &f) || !strings.Contains(err.Error(), "tile 0") {
		t.Fatalf("second call: %v", err)
	}
	// A cancelled context stops a wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c2 := newChip(t, 0)
	loadProg(t, c2, 0, I("bri", supBase))
	if err := (&HostLink{Chip: c2}).Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

// TestHostSessionDeviceSide drives the device side alone over pages the
// caller owns, as the card model does: the command handshake reads the
// command word from the pages, each later one moves a phase.
func TestHostSessionDeviceSide(t *testing.T) {
	ids := []int{0, 2}
	link := startEcho(t, ids)
	pkg := echoPackage(ids, []int{64, 64}, func(i int) uint32 { return uint32(i) * 4096 })
	s, err := NewHostSession(link, pkg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UsePages(map[uint32][]byte{0: make([]byte, 4096)}); err == nil || !strings.Contains(err.Error(), "host page 1: have 0 bytes, the package wants 8192") {
		t.Fatalf("missing page: %v", err)
	}
	pages := map[uint32][]byte{0: make([]byte, 4096), 1: make([]byte, 8192)}
	if err := s.UsePages(pages); err != nil {
		t.Fatal(err)
	}
	// No call's command word in the pages: the command handshake refuses.
	pages[0][0] = 9
	if err := s.Handshake(context.Background()); err == nil || !strings.Contains(err.Error(), "command word 0x9 (page 0 offset 0) names no call") {
		t.Fatalf("bad command: %v", err)
	}
	pages[0][0] = 5
	for i := range 64 {
		pages[1][i], pages[1][4096+i] = byte(i), byte(100+i)
	}
	for k := range 3 {
		if err := s.Handshake(context.Background()); err != nil {
			t.Fatalf("handshake %d: %v", k, err)
		}
		if k == 0 {
			clear(pages[1]) // phase 1 reads the windows back into the pages
		}
		if s.InCall() != (k < 2) {
			t.Fatalf("after handshake %d: in call %v", k, s.InCall())
		}
	}
	if pages[1][5] != 5 || pages[1][4096+5] != 105 {
		t.Fatalf("round trip through the pages: %d %d", pages[1][5], pages[1][4096+5])
	}
}
