package c600

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/config"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// fakeCard records what the driver does and answers like a card whose
// HSP registers can be made to stick.
type fakeCard struct {
	regs   map[uint32]uint32
	log    []string
	resp   uint32
	sticky uint32 // a register offset whose writes are ignored (reads 1)
}

func (f *fakeCard) ReadRegister(off uint32) (uint32, error) {
	if off == f.sticky && off != 0 {
		return 1, nil
	}
	return f.regs[off], nil
}
func (f *fakeCard) WriteRegister(off, v uint32) error {
	f.log = append(f.log, fmt.Sprintf("w %#x=%#x", off, v))
	f.regs[off] = v
	return nil
}
func (f *fakeCard) Ioctl(req uint32, arg uint64) error {
	f.log = append(f.log, fmt.Sprintf("ioctl %#x", req))
	return nil
}
func (f *fakeCard) Mailbox(req [5]uint32) ([5]uint32, error) {
	f.log = append(f.log, fmt.Sprintf("mailbox %#x", req[0]))
	return [5]uint32{f.resp}, nil
}
func (f *fakeCard) SetSecondaryID(id uint32) error {
	f.log = append(f.log, fmt.Sprintf("secondary %d", id))
	return nil
}
func (f *fakeCard) HostMemory(n int) ([]byte, error) { return make([]byte, n), nil }
func (f *fakeCard) FreeHostMemory([]byte) error      { return nil }
func (f *fakeCard) AttachBuffer(index uint32, mem []byte) error {
	f.log = append(f.log, fmt.Sprintf("attach %d", index))
	return nil
}
func (f *fakeCard) Close() error { return nil }

// fakeDevice is a driver over c in the state st.
func fakeDevice(c Card, st device.Stage, opts Options) *Device {
	d := New("fake", opts, func(string) (Card, error) { return c, nil })
	d.c, d.st = c, st
	return d
}

func TestInitializeSequence(t *testing.T) {
	f := &fakeCard{regs: map[uint32]uint32{}, resp: 0x40780001}
	d := fakeDevice(f, device.StageOpen, Options{})
	if err := d.Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"ioctl 0xed22", "mailbox 0x4078020e", "ioctl 0xed23", "ioctl 0xed24", "ioctl 0x4004ed2d", "secondary 0"}
	if !slices.Equal(f.log, want) {
		t.Fatalf("sequence %q, want %q", f.log, want)
	}
	f.resp = 0x12340000
	if err := d.Initialize(context.Background()); err == nil || !strings.Contains(err.Error(), "mailbox reset response 0x12340000") {
		t.Fatalf("bad mailbox response: %v", err)
	}
}

func TestReplaySkipsAndClearsHSP(t *testing.T) {
	f := &fakeCard{regs: map[uint32]uint32{}}
	d := fakeDevice(f, device.StageInitialized, Options{})
	ws := []config.Write{{Offset: 0x2000, Value: 7}, {Offset: RegHSPGS1, Value: 5}, {Offset: RegHSPGS2, Value: 9}, {Offset: 0x30004, Value: 0x40000000}}
	if err := d.ReplayConfig(context.Background(), ws); err != nil {
		t.Fatal(err)
	}
	want := []string{"w 0x2000=0x7", "w 0x30004=0x40000000", "w 0x302c=0x0", "w 0x3030=0x0"}
	if !slices.Equal(f.log, want) {
		t.Fatalf("writes %q, want %q", f.log, want)
	}
	f.sticky = RegHSPGS2
	err := d.ReplayConfig(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "HSP_GS2 (0x3030) did not clear: want mark 0, read 1") {
		t.Fatalf("sticky GS2: %v", err)
	}
}

func TestLoadRefusesBeforeTouchingTheCard(t *testing.T) {
	d := fakeDevice(&fakeCard{regs: map[uint32]uint32{}}, device.StageInitialized, Options{})
	if err := d.Load(context.Background(), nil, nil); err == nil || !strings.Contains(err.Error(), "no bootloader") {
		t.Fatalf("load without a bootloader: %v", err)
	}
	path := filepath.Join(t.TempDir(), "boot.elf")
	if err := os.WriteFile(path, elf32(1, []uint32{BootloaderBase}, make([]byte, 1024)), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &autoCard{fakeCard{regs: map[uint32]uint32{}}}
	d = fakeDevice(a, device.StageInitialized, Options{Bootloader: path})
	if err := d.Load(context.Background(), nil, nil); err == nil || !strings.Contains(err.Error(), "no tiles") || len(a.log) != 0 {
		t.Fatalf("load of no package: %v (%d writes)", err, len(a.log))
	}
	pkg := &ipuexe.Package{Target: "ipu21", MemoryBase: ipu21.SRAMBase, MemorySize: ipu21.SRAMEnd - ipu21.SRAMBase,
		Tiles: []ipuexe.Tile{{Physical: 3, Entry: 0x4C100, Segments: []ipuexe.Segment{{Address: ipu21.EntrySlot, MemSize: 0x200, Data: make([]byte, 8), Flags: ipuexe.FlagRead | ipuexe.FlagExec}}}}}
	if err := d.Load(context.Background(), pkg, nil); err == nil || !strings.Contains(err.Error(), "entry point 0x4c100") || len(a.log) != 0 {
		t.Fatalf("load of a bad entry: %v (%d writes)", err, len(a.log))
	}
	if _, err := d.StartSession(context.Background()); err == nil || !strings.Contains(err.Error(), "the device is initialized") {
		t.Fatalf("session before load: %v", err)
	}
}

func TestReadTileWordsRefusesBadArguments(t *testing.T) {
	f := &fakeCard{regs: map[uint32]uint32{}}
	d := fakeDevice(f, device.StageSession, Options{})
	for _, c := range []struct {
		tile int
		addr uint32
		want string
	}{
		{1472, ipu21.SRAMBase, "no tile 1472 (physical ids are 0..1471)"},
		{0, ipu21.SRAMBase + 2, "debug read at 0x4c002: want a 4-aligned address in SRAM"},
		{0, ipu21.SRAMEnd, "want a 4-aligned address in SRAM"},
	} {
		if _, err := d.ReadTileWords(c.tile, []uint32{c.addr}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tile %d %#x: %v, want %q", c.tile, c.addr, err, c.want)
		}
	}
	if len(f.log) != 0 {
		t.Fatalf("bad reads touched the card: %q", f.log)
	}
	// A debug interface that stays busy times out naming the register.
	f.regs[TDIAddress(5, TDIContextStatus)] = 2 // context 0 stopped
	f.regs[TDIAddress(5, TDIStatus)] = TDIStatusBusy
	_, err := d.ReadTileWords(5, []uint32{ipu21.SRAMBase})
	if err == nil || !strings.Contains(err.Error(), "instruction 0x43008070: tile 5 TDI status busy (0x30160): waited 2s for 0x0 under mask 0x8, read 0x8") {
		t.Fatalf("busy interface: %v", err)
	}
}
