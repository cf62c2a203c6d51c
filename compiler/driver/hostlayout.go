package driver

import (
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/ipuexe"
)

// Host layouts as the package records them (ipuexe.Binding.Layout): blocks
// of the tensor's matrix, each a rectangle in one element order at a byte
// offset of the packed binding, so that the run side packs and unpacks any
// plan's tensors generically. The lowering gives every slice its rectangle
// (tile.HostSlice.Block, checked by tile.Program.Verify).

// layoutOf is the layout of binding hb.
func layoutOf(hb *tile.HostBinding) []ipuexe.Block {
	out := make([]ipuexe.Block, len(hb.Slices))
	for i, sl := range hb.Slices {
		out[i] = block(sl.Offset, sl.Block.Rows, sl.Block.Cols, sl.Block.Order, hb.Rows, hb.Cols)
	}
	return out
}

// block is the layout block of span rows x cols (padded coordinates) at
// byte off, its real elements those inside the [realRows][realCols] matrix.
func block(off int, rows, cols tile.Span, o ipuexe.Order, realRows, realCols int) ipuexe.Block {
	clamp := func(v, lo, hi int) uint32 { return uint32(max(lo, min(v, hi))) }
	return ipuexe.Block{Offset: uint64(off), RowLo: uint32(rows.Lo), RowHi: uint32(rows.Hi), ColLo: uint32(cols.Lo), ColHi: uint32(cols.Hi),
		RowEnd: clamp(realRows, rows.Lo, rows.Hi), ColEnd: clamp(realCols, cols.Lo, cols.Hi), Order: o}
}
