package launch

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/ipustack/ipustack/ipuexe"
	"github.com/x448/float16"
)

// Host layouts: a package records how each binding's packed bytes hold
// its tensor's matrix (ipuexe.Binding.Layout: blocks, each a rectangle in
// one element order at a byte offset), so the host packs and unpacks any
// plan's tensors without knowing the plan.
//
// A layout is checked before any byte is touched (Read's Validate checks
// the structure; checkLayout repeats what packing relies on, so that an
// unvalidated package gives an error, never a panic, and adds that every
// real element is in some block): a compiler bug (a block in the wrong
// place, an element nobody uploads) would otherwise show up as a
// numerical failure far from its cause.

// Pack packs data, the binding's tensor row-major (f16 bits), into its
// packed layout. Padding is zero.
func Pack(b *ipuexe.Binding, data []uint16) ([]byte, error) {
	size, rows, cols, err := checkLayout(b)
	if err != nil {
		return nil, err
	}
	if len(data) != rows*cols {
		return nil, fmt.Errorf("host binding %q: %d values, want %d x %d = %d", b.Name, len(data), rows, cols, rows*cols)
	}
	out := make([]byte, size)
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
	for i := range b.Layout {
		blockRuns(&b.Layout[i], cols, visit)
	}
	return out, nil
}

// Unpack turns the binding's packed bytes (an output read back) into its
// tensor, row-major, dropping the padding. An element several blocks hold
// takes the last block's value.
func Unpack(b *ipuexe.Binding, packed []byte) ([]float32, error) {
	size, rows, cols, err := checkLayout(b)
	if err != nil {
		return nil, err
	}
	if len(packed) != size {
		return nil, fmt.Errorf("host binding %q: %d bytes, want %d", b.Name, len(packed), size)
	}
	y := make([]float32, rows*cols)
	visit := func(p, m, n, stride int) {
		src := packed[2*p : 2*(p+n)]
		for i := 0; i < n; i++ {
			y[m+i*stride] = float16.Frombits(binary.LittleEndian.Uint16(src[2*i:])).Float32()
		}
	}
	for i := range b.Layout {
		blockRuns(&b.Layout[i], cols, visit)
	}
	return y, nil
}

// blockRuns visits a checked block as runs of consecutive packed elements:
// n elements from packed index p hold the matrix elements m, m+stride, ...
// (row-major indices into [rows][cols]). Padding is not visited. A run is
// at most one block row (row-major) or 16 elements (AMP orders), so the
// visitor is called once per run rather than per element.
func blockRuns(blk *ipuexe.Block, cols int, visit func(p, m, n, stride int)) {
	base := int(blk.Offset / 2)
	r0, c0 := int(blk.RowLo), int(blk.ColLo)
	rEnd, cEnd := int(blk.RowEnd), int(blk.ColEnd)
	switch blk.Order {
	case ipuexe.RowMajor:
		w, n := int(blk.Cols()), cEnd-c0
		if n <= 0 {
			return
		}
		for r := r0; r < rEnd; r++ {
			visit(base+(r-r0)*w, r*cols+c0, n, 1)
		}
	case ipuexe.AMPLeft, ipuexe.AMPOut:
		nr := int(blk.Rows())
		for g := 0; g < int(blk.Cols())/16; g++ {
			c := c0 + 16*g
			n := min(16, cEnd-c)
			if n <= 0 {
				break
			}
			for r := r0; r < rEnd; r++ {
				visit(base+(g*nr+r-r0)*16, r*cols+c, n, 1)
			}
		}
	case ipuexe.AMPRight:
		// Each 16-value run is one output column's 16 inner elements: a
		// column of the row-major matrix, hence the stride.
		kgs := int(blk.Rows()) / 16
		for cg := 0; cg < int(blk.Cols())/16; cg++ {
			for kg := 0; kg < kgs; kg++ {
				k := r0 + 16*kg
				n := min(16, rEnd-k)
				if n <= 0 {
					break
				}
				for c := 0; c < 16; c++ {
					col := c0 + 16*cg + c
					if col >= cEnd {
						break
					}
					visit(base+(cg*kgs+kg)*256+c*16, k*cols+col, n, cols)
				}
			}
		}
	}
}

// checkLayout checks that b can be packed: f16, a matrix shape, and a
// layout whose blocks are of known orders, aligned as their order needs,
// inside the padded matrix and the packed bytes, which they cover exactly,
// with every real element in some block. It bounds every product
// blockRuns computes, so a malformed binding gives an error, never a
// panic. It returns the packed size and the matrix shape.
func checkLayout(b *ipuexe.Binding) (size, rows, cols int, err error) {
	fail := func(format string, args ...any) (int, int, int, error) {
		return 0, 0, 0, fmt.Errorf("host binding %q: "+format, append([]any{b.Name}, args...)...)
	}
	if b.DType != ipuexe.F16 {
		return fail("dtype %q: the host packs f16 tensors only", b.DType)
	}
	if len(b.Layout) == 0 {
		return fail("no layout: the package does not say how its bytes hold the tensor (built by an older compiler? build it again)")
	}
	n, ok := b.Bytes()
	r, c, mok := b.Matrix()
	// Bounds that keep every index below in int range, far above any
	// tensor a chip holds (ipuexe bounds tensors at 1 TiB).
	const limit = 1 << 40
	if !ok || !mok || n > limit || r > math.MaxInt32 || c > math.MaxInt32 || r*c > limit/2 {
		return fail("packed shape %v or tensor shape %v unusable", b.Shape, b.TensorShape)
	}
	size, rows, cols = int(n), int(r), int(c)
	padCols := (cols + 15) / 16 * 16
	for i := range b.Layout {
		blk := &b.Layout[i]
		bw := fmt.Sprintf("layout block %d (%s rows [%d,%d) cols [%d,%d) at byte %d)", i, blk.Order, blk.RowLo, blk.RowHi, blk.ColLo, blk.ColHi, blk.Offset)
		switch blk.Order {
		case ipuexe.RowMajor, ipuexe.AMPLeft, ipuexe.AMPOut, ipuexe.AMPRight:
		default:
			return fail("%s: unknown element order", bw)
		}
		if blk.RowHi < blk.RowLo || blk.ColHi < blk.ColLo {
			return fail("%s: malformed extent", bw)
		}
		// Columns pad to 16; rows past the matrix are padding rows, bounded
		// by the packed bytes below.
		if int64(blk.ColHi) > int64(padCols) {
			return fail("%s: reaches past the padded %d columns (real %d x %d)", bw, padCols, rows, cols)
		}
		if blk.Order != ipuexe.RowMajor && (blk.ColLo%16 != 0 || blk.ColHi%16 != 0) {
			return fail("%s: columns not in whole 16-column groups", bw)
		}
		if blk.Order == ipuexe.AMPRight && (blk.RowLo%16 != 0 || blk.RowHi%16 != 0) {
			return fail("%s: inner rows not in whole 16-row groups", bw)
		}
		if blk.RowEnd < blk.RowLo || blk.RowEnd > blk.RowHi || (blk.RowEnd > blk.RowLo && int64(blk.RowEnd) > int64(rows)) ||
			blk.ColEnd < blk.ColLo || blk.ColEnd > blk.ColHi || (blk.ColEnd > blk.ColLo && int64(blk.ColEnd) > int64(cols)) {
			return fail("%s: real elements end at row %d col %d, outside the block or the %d x %d matrix", bw, blk.RowEnd, blk.ColEnd, rows, cols)
		}
		bytes := 2 * uint64(blk.Rows()) * uint64(blk.Cols())
		if blk.Offset%2 != 0 || blk.Offset > n || bytes > n-blk.Offset {
			return fail("%s: bytes [%d,%d) misaligned or outside the binding's %d", bw, blk.Offset, blk.Offset+bytes, n)
		}
	}
	if err := checkCover(b, size, rows, cols); err != nil {
		return fail("%v", err)
	}
	return size, rows, cols, nil
}

// checkCover checks that b's blocks cover its packed bytes exactly (a gap
// would upload stale zeros, an overlap would make two blocks fight over
// bytes) and that every real element of the matrix is in some block.
func checkCover(b *ipuexe.Binding, size, rows, cols int) error {
	order := make([]int, len(b.Layout))
	for i := range order {
		order[i] = i
	}
	sortBlocks(b.Layout, order)
	pos := uint64(0)
	for _, i := range order {
		blk := &b.Layout[i]
		n := 2 * uint64(blk.Rows()) * uint64(blk.Cols())
		if blk.Offset != pos {
			if blk.Offset < pos {
				return fmt.Errorf("layout block %d: bytes [%d, %d) overlap another block (bytes up to %d taken)", i, blk.Offset, blk.Offset+n, pos)
			}
			return fmt.Errorf("bytes [%d, %d) are in no layout block", pos, blk.Offset)
		}
		pos += n
	}
	if pos != uint64(size) {
		return fmt.Errorf("bytes [%d, %d) are in no layout block", pos, size)
	}
	covered := make([]uint64, (rows*cols+63)/64)
	for i := range b.Layout {
		blk := &b.Layout[i]
		c0, c1 := int(blk.ColLo), int(blk.ColEnd)
		if c0 >= c1 {
			continue
		}
		for r := int(blk.RowLo); r < int(blk.RowEnd); r++ {
			setBits(covered, r*cols+c0, r*cols+c1)
		}
	}
	n := rows * cols
	for w, v := range covered {
		if v == math.MaxUint64 {
			continue
		}
		if i := 64*w + bits.TrailingZeros64(^v); i < n {
			return fmt.Errorf("element (%d, %d) of the %d x %d matrix is in no layout block", i/cols, i%cols, rows, cols)
		}
	}
	return nil
}

// sortBlocks orders block indices by byte offset, then size.
func sortBlocks(l []ipuexe.Block, order []int) {
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(l[x].Offset, l[y].Offset),
			cmp.Compare(uint64(l[x].Rows())*uint64(l[x].Cols()), uint64(l[y].Rows())*uint64(l[y].Cols())))
	})
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
