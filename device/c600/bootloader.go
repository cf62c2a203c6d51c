package c600

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"time"
)

// Bootloader is the SDK's tile bootloader image: the bytes of its one
// loadable segment, padded with zeros to whole KiB (the autoloader's unit).
type Bootloader struct {
	Path  string
	Image []byte
}

// ReadBootloader reads and checks the SDK's tile bootloader
// (bin/ipu/tile_bootloader_cc_ipu21.elf): an ELF32 file with exactly one
// loadable segment, at BootloaderBase, of at most BootloaderMax bytes.
func ReadBootloader(path string) (*Bootloader, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bootloader: %w", err)
	}
	return ParseBootloader(path, data)
}

// ParseBootloader checks data as ReadBootloader does; name is for errors.
func ParseBootloader(name string, data []byte) (*Bootloader, error) {
	// The class first: an ELF64 file fails later checks with less useful
	// messages.
	if len(data) > 4 && string(data[:4]) == elf.ELFMAG && elf.Class(data[4]) != elf.ELFCLASS32 {
		return nil, fmt.Errorf("bootloader %s: %v, want ELF32 (the SDK's tile_bootloader_cc_ipu21.elf)", name, elf.Class(data[4]))
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("bootloader %s: not an ELF file: %w", name, err)
	}
	if f.Class != elf.ELFCLASS32 {
		return nil, fmt.Errorf("bootloader %s: %v, want ELF32 (the SDK's tile_bootloader_cc_ipu21.elf)", name, f.Class)
	}
	var load []*elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Memsz > 0 {
			load = append(load, p)
		}
	}
	if len(load) != 1 {
		return nil, fmt.Errorf("bootloader %s: %d loadable segments, want exactly 1 at %#x", name, len(load), BootloaderBase)
	}
	p := load[0]
	if p.Vaddr != BootloaderBase {
		return nil, fmt.Errorf("bootloader %s: its segment loads at %#x, want %#x", name, p.Vaddr, BootloaderBase)
	}
	if p.Filesz > BootloaderMax || p.Memsz > BootloaderMax {
		return nil, fmt.Errorf("bootloader %s: its segment is %d bytes, at most %d fit before the descriptors", name, max(p.Filesz, p.Memsz), BootloaderMax)
	}
	img := make([]byte, (p.Memsz+1023)/1024*1024)
	if _, err := p.ReadAt(img[:p.Filesz], 0); err != nil {
		return nil, fmt.Errorf("bootloader %s: reading its segment: %w", name, err)
	}
	return &Bootloader{Path: name, Image: img}, nil
}

// loadBootloader reads the bootloader the options give: the file, or the
// in-memory ELF.
func (o Options) loadBootloader() (*Bootloader, error) {
	switch {
	case o.BootloaderELF != nil:
		return ParseBootloader("(in memory)", o.BootloaderELF)
	case o.Bootloader != "":
		return ReadBootloader(o.Bootloader)
	}
	return nil, errors.New("no bootloader: give the SDK's bin/ipu/tile_bootloader_cc_ipu21.elf (--bootloader, c600.Options.Bootloader)")
}

// waitTimeout bounds a poll of the autoloader and the tile debug
// interface; handshakeTimeout a poll of an HSP mark, which waits for the
// tiles (a batch written into tile memory, a phase of a call).
const (
	waitTimeout      = 2 * time.Second
	handshakeTimeout = 10 * time.Second
)

// waitFor polls reg until (value & mask) == want, failing after timeout
// with the register, the value expected and the value read.
func waitFor(c Card, name string, reg, mask, want uint32, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		v, err := c.ReadRegister(reg)
		if err != nil {
			return fmt.Errorf("waiting for %s (%#x): %w", name, reg, err)
		}
		if v&mask == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (%#x): waited %v for %#x under mask %#x, read %#x", name, reg, timeout, want, mask, v)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// installBootloader streams the bootloader through the autoloader onto
// tiles 0..tiles-1: CSR = 0, the words into DATA; TARGET = zone 32 | KiB
// at bit 10, CSR = DATA_PRESENT|GO|pointer, poll until GO clears; TARGET =
// zone 32 | 624 KiB at bit 10 | KiB, CSR = (tiles-1)<<9 | GO | pointer,
// poll again. pointer is the last word's index modulo 64.
func installBootloader(c Card, b *Bootloader, tiles int) error {
	if err := c.WriteRegister(RegAutoldCSR, 0); err != nil {
		return err
	}
	for i := 0; i+4 <= len(b.Image); i += 4 {
		w := uint32(b.Image[i]) | uint32(b.Image[i+1])<<8 | uint32(b.Image[i+2])<<16 | uint32(b.Image[i+3])<<24
		if err := c.WriteRegister(RegAutoldData, w); err != nil {
			return err
		}
	}
	kib := uint32(len(b.Image) / 1024)
	ptr := uint32(len(b.Image)/4-1) & AutoldPointerMask
	steps := []struct{ target, csr uint32 }{
		{AutoldZone | kib<<AutoldKiBShift, AutoldDataPresent | AutoldGo | ptr},
		{AutoldZone | 624<<AutoldKiBShift | kib, uint32(tiles-1)<<AutoldTileShift | AutoldGo | ptr},
	}
	for i, s := range steps {
		if err := c.WriteRegister(RegAutoldTarget, s.target); err != nil {
			return err
		}
		if err := c.WriteRegister(RegAutoldCSR, s.csr); err != nil {
			return err
		}
		if err := waitFor(c, "AUTOLD_CSR GO", RegAutoldCSR, AutoldGo, 0, waitTimeout); err != nil {
			return fmt.Errorf("bootloader step %d of 2: %w", i+1, err)
		}
	}
	return nil
}
