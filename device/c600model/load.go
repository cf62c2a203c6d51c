package c600model

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/device/c600"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/ipu21"
)

// The bootloader's effect, modelled (docs/c600.md, "The card model").

// transport is the attached transport buffer, or a refusal.
func (c *Card) transport() ([]byte, error) {
	b := c.buffers[0]
	if len(b) != c600.TransportBytes {
		return nil, refuse(RuleTransport, "GS1 handshake of the load with no transport buffer attached as buffer 0")
	}
	return b, nil
}

// sentinel reports whether the transport buffer's descriptor area is all
// 0xFF: the execute sentinel.
func (c *Card) sentinel() bool {
	b := c.buffers[0]
	if len(b) < c600.DescriptorBytes {
		return false
	}
	for _, x := range b[:c600.DescriptorBytes] {
		if x != 0xFF {
			return false
		}
	}
	return true
}

// batch reads one batch out of the transport buffer: a descriptor {offset,
// frame count} per slot (count 0: an empty slot), each slot's frames
// checked and its payload kept as the tile's image.
func (c *Card) batch() error {
	buf, err := c.transport()
	if err != nil {
		return err
	}
	if c.bootTiles == 0 {
		return refuse(RuleBootloader, "batch %d handed over before the bootloader was installed on the tiles", c.batches)
	}
	for i := range 8 {
		if got, want := c.regs[c600.XBAddress(i)], c600.XBControl(0); got != want {
			return refuse(RuleXB, "batch %d with XB %d (%#x) at %#x, want %#x", c.batches, i, c600.XBAddress(i), got, want)
		}
	}
	if ccsr := c.regs[c600.RegCCSR]; ccsr&(c600.CCSRNoSnoop|c600.CCSRECRC) != 0 {
		return refuse(RuleXB, "batch %d with CCSR %#x: no-snoop (bit 1) and ECRC (bit 10) must be clear", c.batches, ccsr)
	}
	images, err := readBatch(buf, c.batches, c.bootTiles, c.images)
	if err != nil {
		return err
	}
	if len(images) == 0 {
		return refuse(RuleHandshake, "batch %d: GS1 = 1 with no tile in the transport buffer (neither a batch nor the execute sentinel)", c.batches)
	}
	for t, img := range images {
		c.images[t] = img
	}
	c.batches++
	return nil
}

// execute starts the loaded tiles: a chip of them, the autoloader's bytes
// at c600.BootloaderBase, each image from the launch slot, every
// supervisor started at the launch slot.
func (c *Card) execute() error {
	if c.batches == 0 {
		return refuse(RuleHandshake, "the execute sentinel before any batch")
	}
	if c.pkg == nil {
		return errors.New("c600 model: no package was given (Card.SetPackage)")
	}
	ids := make([]int, 0, len(c.images))
	for t := range c.images {
		ids = append(ids, t)
	}
	slices.Sort(ids)
	chip, err := emu.NewChip(ids...)
	if err != nil {
		return fmt.Errorf("c600 model: %w", err)
	}
	as := emu.DefaultAssumptions
	if c.opts.Conservative {
		as = emu.ConservativeAssumptions
	}
	chip.SetAssumptions(as)
	for _, id := range ids {
		t := chip.Tile(id)
		if err := t.Write(c600.BootloaderBase, c.bootImage); err != nil {
			return fmt.Errorf("c600 model: tile %d bootloader: %w", id, err)
		}
		if err := t.Write(ipu21.EntrySlot, c.images[id]); err != nil {
			return fmt.Errorf("c600 model: tile %d image: %w", id, err)
		}
		if err := chip.Start(id, ipu21.EntrySlot); err != nil {
			return fmt.Errorf("c600 model: %w", err)
		}
	}
	c.chip, c.link = chip, &emu.HostLink{Chip: chip, MaxCycles: c.opts.MaxCallCycles}
	c.images = nil
	c.ph = phExecuted
	return nil
}

// finalMark runs the chip to the application's initial host
// synchronization; the mark must count the batches.
func (c *Card) finalMark(mark int) error {
	if mark != c.batches {
		return refuse(RuleHandshake, "final mark %d, but %d batches were handed over (a batch without its GS1 handshake?)", mark, c.batches)
	}
	if err := c.link.Wait(context.Background()); err != nil {
		if errors.Is(err, emu.ErrEnded) {
			return fmt.Errorf("c600 model: the application ended before its initial host synchronization (sync %d): %w", emu.HostZone, err)
		}
		return fmt.Errorf("c600 model: initial synchronization: %w", err)
	}
	c.ph = phLoaded
	return nil
}

// readBatch reads one batch's descriptors and frames out of buf (the
// bootloader's side of the frame format): the image of every tile, by
// physical id. loaded are the tiles of earlier batches; bootTiles the tiles
// that have the bootloader.
func readBatch(buf []byte, batch, bootTiles int, loaded map[int][]byte) (map[int][]byte, error) {
	if len(buf) < c600.DescriptorBytes {
		return nil, refuse(RuleTransport, "a transport buffer of %d bytes has no descriptor area", len(buf))
	}
	le := binary.LittleEndian
	images := map[int][]byte{}
	for slot := range ipu21.LoaderBatchTiles {
		off, n := le.Uint32(buf[slot*8:]), le.Uint32(buf[slot*8+4:])
		where := fmt.Sprintf("batch %d slot %d", batch, slot)
		if n == 0 {
			continue
		}
		if n > c600.MaxFrames {
			return nil, refuse(RuleFrames, "%s: %d frames, the bootloader accepts at most %d", where, n, c600.MaxFrames)
		}
		if off < c600.DescriptorBytes || uint64(off)+uint64(n)*c600.FrameBytes > uint64(len(buf)) {
			return nil, refuse(RuleFrame, "%s: frames at %#x (+%d KiB) are outside the transport buffer past the descriptors", where, off, n)
		}
		tile := -1
		img := make([]byte, 0, int(n)*c600.FramePayload)
		for k := range n {
			f := buf[int(off)+int(k)*c600.FrameBytes:][:c600.FrameBytes]
			idx, t, flags, zero := le.Uint32(f[0:]), le.Uint32(f[4:]), le.Uint32(f[8:]), le.Uint32(f[12:])
			wantFlags := uint32(0)
			if k == n-1 {
				wantFlags = c600.LastFrameFlag
			}
			fw := fmt.Sprintf("%s frame %d", where, k)
			switch {
			case idx != k:
				return nil, refuse(RuleFrame, "%s: header index %d", fw, idx)
			case !ipu21.ValidPhysical(int(t)):
				return nil, refuse(RuleFrame, "%s: header tile %d is not a physical tile (0..%d)", fw, t, ipu21.Tiles-1)
			case tile >= 0 && int(t) != tile:
				return nil, refuse(RuleFrame, "%s: header tile %d, the slot's earlier frames name tile %d", fw, t, tile)
			case flags != wantFlags:
				return nil, refuse(RuleFrame, "%s: header flags %#x, want %#x", fw, flags, wantFlags)
			case zero != 0:
				return nil, refuse(RuleFrame, "%s: header word 3 is %#x, want 0", fw, zero)
			case slices.ContainsFunc(f[c600.FrameBytes-c600.FrameTrailer:], func(b byte) bool { return b != 0xFF }):
				return nil, refuse(RuleFrame, "%s: trailer %x, want 16 bytes of 0xFF", fw, f[c600.FrameBytes-c600.FrameTrailer:])
			}
			tile = int(t)
			img = append(img, f[c600.FrameHeader:c600.FrameBytes-c600.FrameTrailer]...)
		}
		if tile >= bootTiles {
			return nil, refuse(RuleBootloader, "%s: tile %d has no bootloader (the autoloader installed it on tiles 0..%d)", where, tile, bootTiles-1)
		}
		if _, dup := loaded[tile]; dup || images[tile] != nil {
			return nil, refuse(RuleFrame, "%s: tile %d was loaded already", where, tile)
		}
		images[tile] = img
	}
	return images, nil
}
