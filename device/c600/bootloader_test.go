package c600

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// elf32 builds a little ELF32 executable with one PT_LOAD program header
// per address in vaddrs, each carrying data (our own test image; the SDK's
// bootloader is not redistributable).
func elf32(class byte, vaddrs []uint32, data []byte) []byte {
	le := binary.LittleEndian
	const eh, ph = 52, 32
	off := eh + ph*len(vaddrs)
	b := make([]byte, off+len(data))
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = class, 1, 1
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], 0xF8) // Colossus
	le.PutUint32(b[20:], 1)
	le.PutUint32(b[28:], eh) // e_phoff
	le.PutUint16(b[40:], eh)
	le.PutUint16(b[42:], ph)
	le.PutUint16(b[44:], uint16(len(vaddrs)))
	for i, v := range vaddrs {
		p := b[eh+ph*i:]
		le.PutUint32(p[0:], 1) // PT_LOAD
		le.PutUint32(p[4:], uint32(off))
		le.PutUint32(p[8:], v)
		le.PutUint32(p[12:], v)
		le.PutUint32(p[16:], uint32(len(data)))
		le.PutUint32(p[20:], uint32(len(data)))
		le.PutUint32(p[24:], 5)
	}
	copy(b[off:], data)
	return b
}

func TestParseBootloader(t *testing.T) {
	data := make([]byte, 1000)
	for i := range data {
		data[i] = byte(i)
	}
	b, err := ParseBootloader("ok.elf", elf32(1, []uint32{BootloaderBase}, data))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Image) != 1024 || !slices.Equal(b.Image[:1000], data) || b.Image[1000] != 0 {
		t.Fatalf("image %d bytes", len(b.Image))
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"not elf", []byte("hello"), "not an ELF file"},
		{"elf64", elf32(2, []uint32{BootloaderBase}, data), "want ELF32"},
		{"two segments", elf32(1, []uint32{BootloaderBase, 0x4D000}, data), "2 loadable segments, want exactly 1"},
		{"no segment", elf32(1, nil, data), "0 loadable segments"},
		{"wrong address", elf32(1, []uint32{0x4C010}, data), "loads at 0x4c010, want 0x4c000"},
		{"too big", elf32(1, []uint32{BootloaderBase}, make([]byte, 4100)), "4100 bytes, at most 4096"},
	} {
		if _, err := ParseBootloader(c.name, c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ReadBootloader("/nonexistent/tile_bootloader.elf"); err == nil {
		t.Error("missing file accepted")
	}
}

// autoCard completes autoloader runs at once (GO reads back clear).
type autoCard struct{ fakeCard }

func (a *autoCard) ReadRegister(off uint32) (uint32, error) {
	v, err := a.fakeCard.ReadRegister(off)
	if off == RegAutoldCSR {
		v &^= AutoldGo
	}
	return v, err
}

func TestInstallBootloader(t *testing.T) {
	a := &autoCard{fakeCard{regs: map[uint32]uint32{}}}
	img := make([]byte, 2048)
	binary.LittleEndian.PutUint32(img, 0xDEADBEEF)
	if err := installBootloader(a, &Bootloader{Image: img}, 1472); err != nil {
		t.Fatal(err)
	}
	l := a.log
	if l[0] != "w 0x2068=0x0" || l[1] != "w 0x2070=0xdeadbeef" || len(l) != 1+512+4 {
		t.Fatalf("start %q, %d writes", l[:2], len(l))
	}
	// 2 KiB: pointer (512-1)&63 = 63; zone 32; tiles-1 = 1471 at bit 9.
	want := []string{
		fmt.Sprintf("w 0x206c=%#x", 32<<20|2<<10), fmt.Sprintf("w 0x2068=%#x", 1<<20|1<<8|63),
		fmt.Sprintf("w 0x206c=%#x", 32<<20|624<<10|2), fmt.Sprintf("w 0x2068=%#x", 1471<<9|1<<8|63),
	}
	if got := l[len(l)-4:]; !slices.Equal(got, want) {
		t.Fatalf("autoloader steps %q, want %q", got, want)
	}
	// A GO bit that never clears is a timeout naming the register, the
	// value expected and the value read.
	f := &fakeCard{regs: map[uint32]uint32{RegAutoldCSR: AutoldGo | 5}}
	err := waitFor(f, "AUTOLD_CSR GO", RegAutoldCSR, AutoldGo, 0, time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "AUTOLD_CSR GO (0x2068): waited 1ms for 0x0 under mask 0x100, read 0x105") {
		t.Fatalf("stuck GO: %v", err)
	}
}
