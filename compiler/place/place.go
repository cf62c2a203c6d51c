// Package place gives the buffers of a tile's work list SRAM addresses, in
// the data regions of the tile runtime's memory map (compiler/tile:
// [tile.DataBase, tile.Region0End) and [ipu21.Region1Base,
// tile.Region1End)).
//
// Buffers are placed first-fit in order, region 1 for those that need it
// and region 0 before region 1 otherwise. When that fails, a second layout
// is tried: the region-1-only buffers stacked from the top of region 1
// down, and the others first-fit below them, where a buffer without an
// element rule (Apart) may also span the boundary of the two regions,
// which meet at 0x80000 (a looped plan's weight homes can be larger than
// region 0 and than what region 1 leaves). The first layout is kept
// whenever it fits, so plans that fit it keep their addresses. A buffer may share addresses with
// buffers it is never live with (tile.Buffer.Live). A buffer that must not share a
// memory element with another (Apart) starts at an element boundary and
// owns its elements, so the rule holds whatever its partner's address.
// Data never shares an element with code or rows, which the exchange rows
// require.
package place

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

type interval struct{ lo, hi uint32 }

// Place returns each buffer's address. Buffers whose lifetimes do not
// overlap (tile.Buffer.Live) may share addresses.
func Place(bufs []tile.Buffer) (map[string]uint32, error) {
	addr, err := place(bufs, false)
	if err != nil {
		if a, serr := place(bufs, true); serr == nil {
			return a, nil
		}
	}
	return addr, err
}

// place is one layout (see the package comment): spanning false is the
// first, true the second.
func place(bufs []tile.Buffer, spanning bool) (map[string]uint32, error) {
	// Region 0, region 1, and (spanning) both.
	regionSpan := [3]interval{{tile.DataBase, tile.Region0End}, {ipu21.Region1Base, tile.Region1End}, {tile.DataBase, tile.Region1End}}
	addr := map[string]uint32{}
	type placed struct {
		interval
		buf int
	}
	var done []placed // sorted by address
	order := make([]int, len(bufs))
	for i := range order {
		order[i] = i
	}
	// Region-1-only buffers first, then larger first (stable: deterministic).
	sort.SliceStable(order, func(a, b int) bool {
		ba, bb := bufs[order[a]], bufs[order[b]]
		if (ba.Region == kernels.Interleaved) != (bb.Region == kernels.Interleaved) {
			return ba.Region == kernels.Interleaved
		}
		return ba.Bytes > bb.Bytes
	})
	top := uint32(tile.Region1End) // spanning: the lowest region-1-only buffer
	for _, k := range order {
		b := &bufs[k]
		if b.Bytes <= 0 {
			return nil, fmt.Errorf("place: buffer %q has %d bytes", b.Name, b.Bytes)
		}
		if spanning && b.Region == kernels.Interleaved {
			// Stacked down from the top (region-1-only buffers come
			// first in the order, so nothing else is placed yet).
			align := uint32(max(b.Align, 8))
			if len(b.Apart) > 0 {
				align = max(align, ipu21.InterleavedElementBytes)
			}
			size := (uint32(b.Bytes) + align - 1) / align * align
			if size > top-ipu21.Region1Base {
				return nil, fitError(bufs, b)
			}
			top = (top - size) / align * align
			addr[b.Name] = top
			done = append([]placed{{interval{top, top + size}, k}}, done...)
			continue
		}
		regions := []int{0, 1}
		switch {
		case b.Region == kernels.Interleaved:
			regions = []int{1}
		case spanning && len(b.Apart) == 0:
			regions = []int{2}
		}
		ok := false
		for _, r := range regions {
			align := uint32(max(b.Align, 8))
			elem := uint32(ipu21.ElementBytes)
			if r == 1 {
				elem = ipu21.InterleavedElementBytes
			}
			size := uint32(b.Bytes)
			if len(b.Apart) > 0 {
				align = max(align, elem)
				size = (size + elem - 1) / elem * elem
			}
			// First fit: the lowest aligned address clear of every placed
			// buffer live at the same time.
			a := (regionSpan[r].lo + align - 1) / align * align
			for _, d := range done {
				if !b.Overlaps(&bufs[d.buf]) || d.hi <= a {
					continue
				}
				if d.lo >= a+size {
					break
				}
				a = (d.hi + align - 1) / align * align
			}
			if a+size > regionSpan[r].hi || (spanning && a+size > top) {
				continue
			}
			addr[b.Name] = a
			at := sort.Search(len(done), func(i int) bool { return done[i].lo > a })
			done = append(done[:at], append([]placed{{interval{a, a + size}, k}}, done[at:]...)...)
			ok = true
			break
		}
		if !ok {
			return nil, fitError(bufs, b)
		}
	}
	// Check the element rules.
	for _, b := range bufs {
		for _, o := range b.Apart {
			oa, ok := addr[o]
			if !ok {
				continue
			}
			ob := bufBytes(bufs, o)
			if overlapElements(addr[b.Name], uint32(b.Bytes), oa, uint32(ob)) {
				return nil, fmt.Errorf("place: BUG: %q and %q share a memory element", b.Name, o)
			}
		}
	}
	return addr, nil
}

// fitError says which buffer did not fit, the bytes the tile's buffers
// need against the bytes its data regions hold, and the largest buffers.
func fitError(bufs []tile.Buffer, b *tile.Buffer) error {
	used, inter := 0, 0
	for _, bb := range bufs {
		used += bb.Bytes
		if bb.Region == kernels.Interleaved {
			inter += bb.Bytes
		}
	}
	r0, r1 := int(tile.Region0End-tile.DataBase), int(tile.Region1End-ipu21.Region1Base)
	big := make([]tile.Buffer, len(bufs))
	copy(big, bufs)
	sort.SliceStable(big, func(i, j int) bool { return big[i].Bytes > big[j].Bytes })
	var largest []string
	for _, bb := range big[:min(4, len(big))] {
		largest = append(largest, fmt.Sprintf("%s %d", bb.Name, bb.Bytes))
	}
	return fmt.Errorf("place: buffer %q (%d bytes) does not fit: the buffers need %d bytes (%d of them in region 1), the data regions hold %d (region 0 %d, region 1 %d; buffers live at different times may share); largest: %s",
		b.Name, b.Bytes, used, inter, r0+r1, r0, r1, strings.Join(largest, ", "))
}

func bufBytes(bufs []tile.Buffer, name string) int {
	for _, b := range bufs {
		if b.Name == name {
			return b.Bytes
		}
	}
	return 0
}

func overlapElements(a, an, b, bn uint32) bool {
	for x := ipu21.Element(a); x <= ipu21.Element(a+an-1); x++ {
		for y := ipu21.Element(b); y <= ipu21.Element(b+bn-1); y++ {
			if x == y {
				return true
			}
		}
	}
	return false
}

// Fits reports whether bufs can be placed.
func Fits(bufs []tile.Buffer) error {
	_, err := Place(bufs)
	return err
}
