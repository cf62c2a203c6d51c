package bench

import (
	"testing"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// layRunRaw builds, links and runs a kernel on a fresh tile after write
// has placed its data, with the given argument registers; it returns the
// tile for inspection.
func layRunRaw(t *testing.T, name string, given kernels.Params, args map[int]uint32, write func(*emu.Tile)) *emu.Tile {
	t.Helper()
	p, err := loadKernel(name, given, assemble.Cache{})
	if err != nil {
		t.Fatal(err)
	}
	tile := p.tile
	write(tile)
	for r, v := range args {
		tile.Sup.M[r] = v
	}
	if _, err := p.execute(); err != nil {
		t.Fatal(err)
	}
	return tile
}

// layRunAndCorrupt runs a kernel as Run does, then XORs 0x4000 into every
// 16-bit lane of the 8-byte output word at byte offset off of the out
// operand ($m2) and returns the check's verdict. 0x4000 toggles an f16
// exponent bit, so even a NaN or infinity lane becomes a different,
// finite value: no check may accept the corrupted output.
func layRunAndCorrupt(t *testing.T, name string, given kernels.Params, seed uint64, off uint32) error {
	t.Helper()
	p, err := prepare(name, given, seed, assemble.Cache{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.execute(); err != nil {
		t.Fatal(err)
	}
	tile, c, built := p.tile, p.c, p.built
	if _, err := c.Check(tile); err != nil {
		t.Fatalf("%s (%s): the uncorrupted output fails: %v", name, built.Params, err)
	}
	addr := c.Args[2] + off
	buf := make([]byte, 8)
	if err := tile.Read(addr, buf); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 8; i += 2 {
		buf[i] ^= 0x40
	}
	if err := tile.Write(addr, buf); err != nil {
		t.Fatal(err)
	}
	_, err = c.Check(tile)
	return err
}

// layExpectCorruptionCaught fails the test when the check accepts a
// corrupted output.
func layExpectCorruptionCaught(t *testing.T, name string, given kernels.Params, offs ...uint32) {
	t.Helper()
	for _, off := range offs {
		err := layRunAndCorrupt(t, name, given, 7, off)
		if err == nil {
			t.Fatalf("%s (%v): the check accepted an output corrupted at byte %d", name, given, off)
		}
		t.Logf("corrupted at byte %d: check failed as it should: %v", off, err)
	}
}
