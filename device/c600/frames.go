package c600

import (
	"encoding/binary"
	"fmt"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Tile frames (IPU21.md, "Load"): a frame is 1 KiB, a 16-byte header
// {index, physical tile, flags, 0}, 992 payload bytes and 16 bytes of 0xFF;
// the last frame's flags are LastFrameFlag. An image starts at
// ipu21.EntrySlot, is padded to at least MinImage bytes and takes at most
// MaxFrames frames. The first DescriptorBytes of a batch hold one
// descriptor {u32 offset, u32 frame count} per slot.
const (
	FrameBytes      = 1024
	FrameHeader     = 16
	FrameTrailer    = 16
	FramePayload    = FrameBytes - FrameHeader - FrameTrailer
	LastFrameFlag   = 0x08000000
	MinImage        = 0x4134
	MaxFrames       = 643
	DescriptorBytes = 4096
	TransportBytes  = 0x2842000
)

// tileImage is tile tl's bytes from ipu21.EntrySlot to the end of its
// last segment (zero-fill included, gaps zero), padded to MinImage.
func tileImage(tl *ipuexe.Tile) ([]byte, error) {
	if tl.Entry != ipu21.EntrySlot {
		return nil, fmt.Errorf("tile %d: entry point %#x; the SDK bootloader starts a tile at its launch slot %#x", tl.Physical, tl.Entry, ipu21.EntrySlot)
	}
	end := uint64(ipu21.EntrySlot)
	for i, s := range tl.Segments {
		if s.Address < ipu21.EntrySlot {
			return nil, fmt.Errorf("tile %d segment %d at %#x: the bootloader places images from %#x", tl.Physical, i, s.Address, ipu21.EntrySlot)
		}
		end = max(end, s.End())
	}
	n := max(end-ipu21.EntrySlot, MinImage)
	if frames := (n + FramePayload - 1) / FramePayload; frames > MaxFrames {
		return nil, fmt.Errorf("tile %d: its image ends at %#x and needs %d frames; the SDK bootloader accepts at most %d (images must end by %#x)",
			tl.Physical, end, frames, MaxFrames, ipu21.EntrySlot+MaxFrames*FramePayload)
	}
	img := make([]byte, n)
	for _, s := range tl.Segments {
		copy(img[s.Address-ipu21.EntrySlot:], s.Data)
	}
	return img, nil
}

// frameTile cuts img into frames for physical tile tile.
func frameTile(tile uint32, img []byte) []byte {
	n := (len(img) + FramePayload - 1) / FramePayload
	out := make([]byte, n*FrameBytes)
	for k := range n {
		f := out[k*FrameBytes : (k+1)*FrameBytes]
		binary.LittleEndian.PutUint32(f[0:], uint32(k))
		binary.LittleEndian.PutUint32(f[4:], tile)
		if k == n-1 {
			binary.LittleEndian.PutUint32(f[8:], LastFrameFlag)
		}
		copy(f[FrameHeader:FrameBytes-FrameTrailer], img[k*FramePayload:])
		for i := FrameBytes - FrameTrailer; i < FrameBytes; i++ {
			f[i] = 0xFF
		}
	}
	return out
}

// fillBatch writes one batch of tiles into buf (a transport buffer):
// descriptors first, then each tile's frames.
func fillBatch(buf []byte, tiles []*ipuexe.Tile) error {
	clear(buf)
	cursor := DescriptorBytes
	for slot, tl := range tiles {
		img, err := tileImage(tl)
		if err != nil {
			return err
		}
		fr := frameTile(tl.Physical, img)
		if cursor+len(fr) > len(buf) {
			return fmt.Errorf("tile %d: the batch exceeds the %#x-byte transport buffer", tl.Physical, len(buf))
		}
		binary.LittleEndian.PutUint32(buf[slot*8:], uint32(cursor))
		binary.LittleEndian.PutUint32(buf[slot*8+4:], uint32(len(fr)/FrameBytes))
		copy(buf[cursor:], fr)
		cursor += len(fr)
	}
	return nil
}
