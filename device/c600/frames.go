package c600

import (
	"encoding/binary"
	"fmt"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Tile frames (IPU21.md, "Load"): a frame is 1 KiB, a 16-byte header
// {index, physical tile, flags, 0}, 992 payload bytes and 16 bytes of 0xFF;
// the last frame's flags are lastFrameFlag. An image starts at
// ipu21.EntrySlot, is padded to at least minImage bytes and takes at most
// maxFrames frames. The first descriptorBytes of a batch hold one
// descriptor {u32 offset, u32 frame count} per slot.
const (
	frameBytes      = 1024
	frameHeader     = 16
	frameTrailer    = 16
	framePayload    = frameBytes - frameHeader - frameTrailer
	lastFrameFlag   = 0x08000000
	minImage        = 0x4134
	maxFrames       = 643
	descriptorBytes = 4096
	transportBytes  = 0x2842000
)

// tileImage is tile tl's bytes from ipu21.EntrySlot to the end of its
// last segment (zero-fill included, gaps zero), padded to minImage.
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
	n := max(end-ipu21.EntrySlot, minImage)
	if frames := (n + framePayload - 1) / framePayload; frames > maxFrames {
		return nil, fmt.Errorf("tile %d: its image ends at %#x and needs %d frames; the SDK bootloader accepts at most %d (images must end by %#x)",
			tl.Physical, end, frames, maxFrames, ipu21.EntrySlot+maxFrames*framePayload)
	}
	img := make([]byte, n)
	for _, s := range tl.Segments {
		copy(img[s.Address-ipu21.EntrySlot:], s.Data)
	}
	return img, nil
}

// frameTile cuts img into frames for physical tile tile.
func frameTile(tile uint32, img []byte) []byte {
	n := (len(img) + framePayload - 1) / framePayload
	out := make([]byte, n*frameBytes)
	for k := range n {
		f := out[k*frameBytes : (k+1)*frameBytes]
		binary.LittleEndian.PutUint32(f[0:], uint32(k))
		binary.LittleEndian.PutUint32(f[4:], tile)
		if k == n-1 {
			binary.LittleEndian.PutUint32(f[8:], lastFrameFlag)
		}
		copy(f[frameHeader:frameBytes-frameTrailer], img[k*framePayload:])
		for i := frameBytes - frameTrailer; i < frameBytes; i++ {
			f[i] = 0xFF
		}
	}
	return out
}

// fillBatch writes one batch of tiles into buf (a transport buffer):
// descriptors first, then each tile's frames.
func fillBatch(buf []byte, tiles []*ipuexe.Tile) error {
	clear(buf)
	cursor := descriptorBytes
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
		binary.LittleEndian.PutUint32(buf[slot*8+4:], uint32(len(fr)/frameBytes))
		copy(buf[cursor:], fr)
		cursor += len(fr)
	}
	return nil
}
