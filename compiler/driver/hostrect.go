package driver

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/x448/float16"
)

// Generic host layouts: plans lowered from compiler/mid describe every host
// slice by the rectangle of the tensor's matrix it holds and the element
// order of its bytes (low.Rect), so the host packs and unpacks them without
// knowing the plan's shape — unlike the v0 packers of host.go, which each
// mirror one v0 layout.
//
// Bindings are checked before any byte is touched: a plan bug (a block in
// the wrong place, a slice of the wrong size, an element nobody uploads)
// would otherwise show up as a numerical failure far from its cause.

// hasRects reports whether the plan's host layouts are all rectangles: every
// slice of every binding has a Block (false for the v0 family, and for a plan
// without any slice, which has nothing to pack generically).
func hasRects(pl *low.Plan) bool {
	n, with := countRects(pl)
	return n > 0 && with == n
}

// countRects counts the plan's host slices and those with a Block, so that
// Run can refuse a plan that mixes both (neither packer could serve it).
func countRects(pl *low.Plan) (n, with int) {
	for _, bs := range [][]low.HostBinding{pl.Inputs, pl.Weights, pl.Outputs} {
		for _, b := range bs {
			for _, sl := range b.Slices {
				n++
				if sl.Block != nil {
					with++
				}
			}
		}
	}
	return n, with
}

// packRects packs data, the tensor row-major [b.Rows][b.Cols] (f16 bits),
// into b's packed layout. Padding (block elements past the real shape) is
// zero.
func packRects(b low.HostBinding, data []uint16) ([]byte, error) {
	if err := checkRects(&b); err != nil {
		return nil, err
	}
	if len(data) != b.Rows*b.Cols {
		return nil, fmt.Errorf("host binding %q: %d values, want %d x %d = %d", b.Name, len(data), b.Rows, b.Cols, b.Rows*b.Cols)
	}
	out := make([]byte, b.Bytes)
	visit := func(p, m, n, stride int) {
		dst := out[2*p : 2*(p+n)]
		if stride == 1 {
			for i, v := range data[m : m+n] {
				binary.LittleEndian.PutUint16(dst[2*i:], v)
			}
			return
		}
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint16(dst[2*i:], data[m+i*stride])
		}
	}
	for i := range b.Slices {
		sl := &b.Slices[i]
		rectRuns(sl.Block, sl.Offset/2, b.Rows, b.Cols, visit)
	}
	return out, nil
}

// unpackRects turns b's packed bytes (an output read back) into the
// row-major [b.Rows][b.Cols] tensor, dropping the padding.
func unpackRects(b low.HostBinding, packed []byte) ([]float32, error) {
	if err := checkRects(&b); err != nil {
		return nil, err
	}
	if len(packed) != b.Bytes {
		return nil, fmt.Errorf("host binding %q: %d bytes, want %d", b.Name, len(packed), b.Bytes)
	}
	y := make([]float32, b.Rows*b.Cols)
	visit := func(p, m, n, stride int) {
		src := packed[2*p : 2*(p+n)]
		for i := 0; i < n; i++ {
			y[m+i*stride] = float16.Frombits(binary.LittleEndian.Uint16(src[2*i:])).Float32()
		}
	}
	for i := range b.Slices {
		sl := &b.Slices[i]
		rectRuns(sl.Block, sl.Offset/2, b.Rows, b.Cols, visit)
	}
	return y, nil
}

// rectRuns visits a checked block held from packed element base on as runs
// of consecutive packed elements: n elements from packed index p hold the
// matrix elements m, m+stride, ... (row-major indices into [rows][cols]).
// Elements past the real shape are not visited. A run is at most one block
// row (row-major) or 16 elements (AMP orders), so the visitor is called
// once per run rather than per element.
func rectRuns(blk *low.Rect, base, rows, cols int, visit func(p, m, n, stride int)) {
	r0, c0 := blk.Rows.Lo, blk.Cols.Lo
	rHi := min(blk.Rows.Hi, rows)
	switch blk.Order {
	case mid.RowMajor:
		w, n := blk.Cols.Len(), min(blk.Cols.Hi, cols)-c0
		if n <= 0 {
			return
		}
		for r := r0; r < rHi; r++ {
			visit(base+(r-r0)*w, r*cols+c0, n, 1)
		}
	case mid.AMPLeft, mid.AMPOut:
		nr := blk.Rows.Len()
		for g := 0; g < blk.Cols.Len()/16; g++ {
			c := c0 + 16*g
			n := min(16, cols-c)
			if n <= 0 {
				break
			}
			for r := r0; r < rHi; r++ {
				visit(base+(g*nr+r-r0)*16, r*cols+c, n, 1)
			}
		}
	case mid.AMPRight:
		// Each 16-value run is one output column's 16 inner elements: a
		// column of the row-major matrix, hence the stride.
		kgs := blk.Rows.Len() / 16
		for cg := 0; cg < blk.Cols.Len()/16; cg++ {
			for kg := 0; kg < kgs; kg++ {
				k := r0 + 16*kg
				n := min(16, rows-k)
				if n <= 0 {
					break
				}
				for c := 0; c < 16; c++ {
					col := c0 + 16*cg + c
					if col >= cols {
						break
					}
					visit(base+(cg*kgs+kg)*256+c*16, k*cols+col, n, cols)
				}
			}
		}
	}
}

// checkRects checks that b can be packed generically: every slice has a
// Block of a known order, inside the padded shape, aligned as its order
// needs and of its slice's Length; the slices cover the packed bytes
// exactly; and every real element is in some slice (replicas may hold an
// element twice). It bounds every product rectRuns computes, so a
// malformed binding gives an error, never a panic.
func checkRects(b *low.HostBinding) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("host binding %q: "+format, append([]any{b.Name}, args...)...)
	}
	if b.Rows < 0 || b.Cols < 0 || b.Bytes < 0 {
		return fail("negative shape %d x %d or size %d bytes", b.Rows, b.Cols, b.Bytes)
	}
	// Padded shape: columns rounded up to 16 (mid pads every column that
	// meets an AMP kernel, and a row-major graph output is unpacked from
	// such padded blocks), rows rounded up to 16 for the inner dimension
	// of AMP right panels only (rows are otherwise never padded).
	if b.Rows > math.MaxInt/2 || b.Cols > math.MaxInt/2 || b.PadRows > math.MaxInt/2 {
		return fail("shape %d x %d too large", b.Rows, b.Cols)
	}
	padCols := (b.Cols + 15) / 16 * 16
	padRows16 := (max(b.Rows, b.PadRows) + 15) / 16 * 16
	if padCols > 0 && padRows16 > math.MaxInt/4/padCols {
		return fail("shape %d x %d too large", b.Rows, b.Cols)
	}
	for s := range b.Slices {
		sl := &b.Slices[s]
		blk := sl.Block
		if blk == nil {
			return fail("slice %d: no Block (a v0 slice in a rectangle layout)", s)
		}
		padRows := max(b.Rows, b.PadRows) // row chunks pad the last chunk
		switch blk.Order {
		case mid.RowMajor, mid.AMPLeft, mid.AMPOut:
		case mid.AMPRight:
			padRows = padRows16
		default:
			return fail("slice %d: unknown element order %v", s, blk.Order)
		}
		if blk.Rows.Lo < 0 || blk.Rows.Hi < blk.Rows.Lo || blk.Cols.Lo < 0 || blk.Cols.Hi < blk.Cols.Lo {
			return fail("slice %d: malformed block rows %v cols %v", s, blk.Rows, blk.Cols)
		}
		if blk.Rows.Hi > padRows || blk.Cols.Hi > padCols {
			return fail("slice %d: %s block rows %v cols %v reaches past the padded shape %d x %d (real %d x %d)",
				s, blk.Order, blk.Rows, blk.Cols, padRows, padCols, b.Rows, b.Cols)
		}
		if blk.Order != mid.RowMajor && (blk.Cols.Lo%16 != 0 || blk.Cols.Hi%16 != 0) {
			return fail("slice %d: %s block columns %v not in whole 16-column groups", s, blk.Order, blk.Cols)
		}
		if blk.Order == mid.AMPRight && (blk.Rows.Lo%16 != 0 || blk.Rows.Hi%16 != 0) {
			return fail("slice %d: %s block inner rows %v not in whole 16-row groups", s, blk.Order, blk.Rows)
		}
		if want := 2 * blk.Rows.Len() * blk.Cols.Len(); sl.Length != want {
			return fail("slice %d: %d bytes, but its %s block %v x %v holds %d", s, sl.Length, blk.Order, blk.Rows, blk.Cols, want)
		}
		if sl.Offset < 0 || sl.Offset > b.Bytes-sl.Length {
			return fail("slice %d: bytes [%d, %d) outside the binding's %d", s, sl.Offset, sl.Offset+sl.Length, b.Bytes)
		}
		if sl.Offset%2 != 0 {
			return fail("slice %d: odd byte offset %d (elements are 2 bytes)", s, sl.Offset)
		}
	}
	if err := checkCover(b); err != nil {
		return fail("%v", err)
	}
	return nil
}

// checkCover checks that b's slices cover its packed bytes exactly (a gap
// would upload stale zeros, an overlap would make two blocks fight over
// bytes) and that every real element of the matrix is in some block.
func checkCover(b *low.HostBinding) error {
	order := make([]int, len(b.Slices))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		sx, sy := &b.Slices[x], &b.Slices[y]
		if sx.Offset != sy.Offset {
			return sx.Offset - sy.Offset
		}
		return sx.Length - sy.Length
	})
	pos := 0
	for _, s := range order {
		sl := &b.Slices[s]
		if sl.Offset != pos {
			if sl.Offset < pos {
				return fmt.Errorf("slice %d: bytes [%d, %d) overlap another slice (bytes up to %d taken)", s, sl.Offset, sl.Offset+sl.Length, pos)
			}
			return fmt.Errorf("bytes [%d, %d) are in no slice", pos, sl.Offset)
		}
		pos += sl.Length
	}
	if pos != b.Bytes {
		return fmt.Errorf("bytes [%d, %d) are in no slice", pos, b.Bytes)
	}

	covered := make([]uint64, (b.Rows*b.Cols+63)/64)
	for s := range b.Slices {
		blk := b.Slices[s].Block
		c0, c1 := blk.Cols.Lo, min(blk.Cols.Hi, b.Cols)
		if c0 >= c1 {
			continue
		}
		for r := blk.Rows.Lo; r < min(blk.Rows.Hi, b.Rows); r++ {
			setBits(covered, r*b.Cols+c0, r*b.Cols+c1)
		}
	}
	n := b.Rows * b.Cols
	for w, v := range covered {
		if v == math.MaxUint64 {
			continue
		}
		if i := 64*w + bits.TrailingZeros64(^v); i < n {
			return fmt.Errorf("element (%d, %d) of the %d x %d matrix is in no slice", i/b.Cols, i%b.Cols, b.Rows, b.Cols)
		}
	}
	return nil
}

// setBits sets bits [lo, hi) of a bitset, a word at a time: a 20 MB
// tensor's coverage is then a few milliseconds.
func setBits(bs []uint64, lo, hi int) {
	for lo < hi {
		w, off := lo/64, lo%64
		n := min(64-off, hi-lo)
		mask := uint64(math.MaxUint64)
		if n < 64 {
			mask = (uint64(1)<<n - 1) << off
		}
		bs[w] |= mask
		lo += n
	}
}
