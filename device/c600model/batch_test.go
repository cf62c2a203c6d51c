package c600model

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device/c600"
)

// oneTileBatch is a batch of one tile (physical tile) of frames frames.
func oneTileBatch(tile uint32, frames int) []byte {
	le := binary.LittleEndian
	buf := make([]byte, c600.DescriptorBytes+frames*c600.FrameBytes)
	le.PutUint32(buf[0:], c600.DescriptorBytes)
	le.PutUint32(buf[4:], uint32(frames))
	for k := range frames {
		f := buf[c600.DescriptorBytes+k*c600.FrameBytes:][:c600.FrameBytes]
		le.PutUint32(f[0:], uint32(k))
		le.PutUint32(f[4:], tile)
		if k == frames-1 {
			le.PutUint32(f[8:], c600.LastFrameFlag)
		}
		f[c600.FrameHeader] = byte(k + 1)
		for i := c600.FrameBytes - c600.FrameTrailer; i < c600.FrameBytes; i++ {
			f[i] = 0xFF
		}
	}
	return buf
}

func TestReadBatch(t *testing.T) {
	imgs, err := readBatch(oneTileBatch(9, 2), 0, 1472, nil)
	if err != nil || len(imgs[9]) != 2*c600.FramePayload || imgs[9][0] != 1 || imgs[9][c600.FramePayload] != 2 {
		t.Fatalf("images %d bytes, %v", len(imgs[9]), err)
	}
	le := binary.LittleEndian
	for _, c := range []struct {
		name string
		edit func(b []byte)
		boot int
		want string
	}{
		{"no descriptor area", nil, 1472, "has no descriptor area"},
		{"tile out of range", func(b []byte) { le.PutUint32(b[c600.DescriptorBytes+4:], 1472) }, 1472, "header tile 1472 is not a physical tile"},
		{"tiles differ", func(b []byte) { le.PutUint32(b[c600.DescriptorBytes+c600.FrameBytes+4:], 8) }, 1472, "header tile 8, the slot's earlier frames name tile 9"},
		{"last flag early", func(b []byte) { le.PutUint32(b[c600.DescriptorBytes+8:], c600.LastFrameFlag) }, 1472, "frame 0: header flags 0x8000000, want 0x0"},
		{"word 3", func(b []byte) { b[c600.DescriptorBytes+12] = 1 }, 1472, "header word 3 is 0x1"},
		{"frames past the buffer", func(b []byte) { le.PutUint32(b[4:], 3) }, 1472, "outside the transport buffer"},
		{"no bootloader", nil, 9, "tile 9 has no bootloader (the autoloader installed it on tiles 0..8)"},
	} {
		b := oneTileBatch(9, 2)
		if c.name == "no descriptor area" {
			b = b[:100]
		} else if c.edit != nil {
			c.edit(b)
		}
		_, err := readBatch(b, 0, c.boot, nil)
		var re *RuleError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := readBatch(oneTileBatch(9, 1), 1, 1472, map[int][]byte{9: nil}); err == nil || !strings.Contains(err.Error(), "tile 9 was loaded already") {
		t.Errorf("tile loaded twice: %v", err)
	}
}

// FuzzReadBatch: any transport buffer is read or refused with a
// RuleError, never a panic; an accepted tile's image is whole frames.
func FuzzReadBatch(f *testing.F) {
	f.Add(oneTileBatch(3, 1))
	f.Add(oneTileBatch(1471, 3))
	f.Add(make([]byte, c600.DescriptorBytes))
	f.Fuzz(func(t *testing.T, buf []byte) {
		imgs, err := readBatch(buf, 0, 1472, nil)
		if err != nil {
			var re *RuleError
			if !errors.As(err, &re) {
				t.Fatalf("not a rule error: %v", err)
			}
			return
		}
		for tile, img := range imgs {
			if len(img) == 0 || len(img)%c600.FramePayload != 0 || tile < 0 || tile >= 1472 {
				t.Fatalf("tile %d image of %d bytes", tile, len(img))
			}
		}
	})
}
