package c600

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

func TestFrames(t *testing.T) {
	img := make([]byte, FramePayload+1)
	img[0], img[FramePayload] = 0x11, 0x22
	fr := frameTile(17, img)
	le := binary.LittleEndian
	if len(fr) != 2*FrameBytes || le.Uint32(fr[4:]) != 17 || le.Uint32(fr[8:]) != 0 || fr[16] != 0x11 {
		t.Fatalf("first frame %x", fr[:20])
	}
	f1 := fr[FrameBytes:]
	if le.Uint32(f1[0:]) != 1 || le.Uint32(f1[8:]) != LastFrameFlag || f1[16] != 0x22 || f1[17] != 0 {
		t.Fatalf("last frame %x", f1[:20])
	}
	for _, f := range [][]byte{fr[:FrameBytes], f1} {
		for _, b := range f[FrameBytes-FrameTrailer:] {
			if b != 0xFF {
				t.Fatalf("trailer %x", f[FrameBytes-FrameTrailer:])
			}
		}
	}
}

func seg(addr, mem uint32, data []byte) ipuexe.Segment {
	return ipuexe.Segment{Address: addr, MemSize: mem, Data: data, Flags: ipuexe.FlagRead}
}

func TestTileImageAndBatch(t *testing.T) {
	tl := &ipuexe.Tile{Physical: 5, Entry: ipu21.EntrySlot, Segments: []ipuexe.Segment{
		seg(ipu21.EntrySlot, 4, []byte{1, 2, 3, 4}), seg(0x58000, 8, []byte{9, 9, 9, 9}),
	}}
	img, err := tileImage(tl)
	if err != nil {
		t.Fatal(err)
	}
	if len(img) != 0x58008-ipu21.EntrySlot || img[0] != 1 || img[0x58000-ipu21.EntrySlot] != 9 || img[len(img)-1] != 0 {
		t.Fatalf("image %d bytes", len(img))
	}
	small := &ipuexe.Tile{Physical: 7, Entry: ipu21.EntrySlot, Segments: []ipuexe.Segment{seg(ipu21.EntrySlot, 4, []byte{1, 2, 3, 4})}}
	if img, _ := tileImage(small); len(img) != MinImage {
		t.Fatalf("small image %d bytes, want the %#x minimum", len(img), MinImage)
	}
	buf := make([]byte, 1<<20)
	if err := fillBatch(buf, []*ipuexe.Tile{tl, small}); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	n0 := (0x58008 - ipu21.EntrySlot + FramePayload - 1) / FramePayload
	if le.Uint32(buf[0:]) != DescriptorBytes || le.Uint32(buf[4:]) != uint32(n0) ||
		le.Uint32(buf[8:]) != uint32(DescriptorBytes+n0*FrameBytes) || le.Uint32(buf[12:]) != (MinImage+FramePayload-1)/FramePayload {
		t.Fatalf("descriptors %x", buf[:16])
	}
	if le.Uint32(buf[DescriptorBytes+4:]) != 5 || le.Uint32(buf[DescriptorBytes+n0*FrameBytes+4:]) != 7 {
		t.Fatal("frame headers name the wrong tiles")
	}
	for _, c := range []struct {
		tl   ipuexe.Tile
		want string
	}{
		{ipuexe.Tile{Physical: 1, Entry: 0x4C100, Segments: tl.Segments}, "entry point 0x4c100"},
		{ipuexe.Tile{Physical: 2, Entry: ipu21.EntrySlot, Segments: []ipuexe.Segment{seg(0x4C000, 4, nil)}}, "at 0x4c000: the bootloader places images from 0x4c010"},
		// Zero-fill to the end of SRAM needs 645 frames (638960 bytes / 992).
		{ipuexe.Tile{Physical: 3, Entry: ipu21.EntrySlot, Segments: []ipuexe.Segment{seg(ipu21.EntrySlot, ipu21.SRAMEnd-ipu21.EntrySlot, nil)}}, "needs 645 frames; the SDK bootloader accepts at most 643 (images must end by 0xe7bb0)"},
	} {
		if _, err := tileImage(&c.tl); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tile %d: %v, want %q", c.tl.Physical, err, c.want)
		}
	}
	if err := fillBatch(make([]byte, DescriptorBytes+FrameBytes), []*ipuexe.Tile{tl}); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("overfull batch: %v", err)
	}
}
