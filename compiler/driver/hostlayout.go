package driver

import (
	"fmt"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/ipuexe"
)

// Host layouts as the package records them (ipuexe.Binding.Layout): blocks
// of the tensor's matrix, each a rectangle in one element order at a byte
// offset of the packed binding, so that the run side packs and unpacks any
// plan's tensors generically. A plan lowered from compiler/mid gives every
// slice its rectangle (low.HostSlice.Block); the v0 family's layouts are
// derived here from its grid (the layouts of compiler/low's low.go and
// mlp.go).

// layoutOf is the layout of binding hb of plan pl.
func layoutOf(pl *low.Plan, hb *low.HostBinding) ([]ipuexe.Block, error) {
	with := 0
	for _, sl := range hb.Slices {
		if sl.Block != nil {
			with++
		}
	}
	switch {
	case with == len(hb.Slices) && with > 0:
		out := make([]ipuexe.Block, len(hb.Slices))
		for i, sl := range hb.Slices {
			out[i] = block(sl.Offset, sl.Block.Rows, sl.Block.Cols, sl.Block.Order, hb.Rows, hb.Cols)
		}
		return out, nil
	case with > 0:
		return nil, fmt.Errorf("BUG: host binding %q: %d of %d slices have a rectangle", hb.Name, with, len(hb.Slices))
	}
	return v0Layout(pl, hb)
}

// block is the layout block of span rows x cols (padded coordinates) at
// byte off, its real elements those inside the [realRows][realCols] matrix.
func block(off int, rows, cols mid.Span, o ipuexe.Order, realRows, realCols int) ipuexe.Block {
	clamp := func(v, lo, hi int) uint32 { return uint32(max(lo, min(v, hi))) }
	return ipuexe.Block{Offset: uint64(off), RowLo: uint32(rows.Lo), RowHi: uint32(rows.Hi), ColLo: uint32(cols.Lo), ColHi: uint32(cols.Hi),
		RowEnd: clamp(realRows, rows.Lo, rows.Hi), ColEnd: clamp(realCols, cols.Lo, cols.Hi), Order: o}
}

// v0Layout is the layout of a v0 plan's binding, by its role in the
// problem.
func v0Layout(pl *low.Plan, hb *low.HostBinding) ([]ipuexe.Block, error) {
	p, g := pl.Problem, &pl.Grid
	span := func(lo, hi int) mid.Span { return mid.Span{Lo: lo, Hi: hi} }
	kp := span(0, g.Kp)
	colBlock := func(j int) mid.Span { return span(16*g.GroupStart[j], 16*g.GroupStart[j+1]) }
	rowBlock := func(i int) mid.Span { return span(g.RowStart[i], g.RowStart[i+1]) }
	var out []ipuexe.Block
	// panels: one AMP right panel per column block, back to back (packW1:
	// rows are the inner dimension; transposed: packW2).
	panels := func(rows, cols int, transposed bool) {
		off := 0
		for j := 0; j < g.C; j++ {
			r, c := kp, colBlock(j)
			if transposed {
				r, c = colBlock(j), kp
			}
			out = append(out, block(off, r, c, ipuexe.AMPRight, rows, cols))
			off += 2 * r.Len() * c.Len()
		}
	}
	if p.Kind != low.KindMLP {
		switch hb.Name {
		case p.Input:
			off := 0
			for i := 0; i < g.R; i++ {
				out = append(out, block(off, rowBlock(i), kp, ipuexe.AMPLeft, p.M, p.K))
				off += 2 * g.Rows(i) * g.Kp
			}
		case p.W1:
			panels(p.K, p.N, false)
		case p.Output:
			for s, sl := range hb.Slices {
				out = append(out, block(sl.Offset, rowBlock(s/g.C), colBlock(s%g.C), ipuexe.AMPOut, p.M, p.N))
			}
		default:
			return nil, fmt.Errorf("BUG: v0 GEMM binding %q is neither %q, %q nor %q", hb.Name, p.Input, p.W1, p.Output)
		}
		return out, nil
	}
	if hb.Name == p.Input || hb.Name == p.Output {
		return mlpActivationLayout(pl), nil
	}
	for _, blk := range p.Blocks {
		switch hb.Name {
		case blk.W1:
			panels(p.K, p.N, false)
		case blk.W2:
			panels(p.N, p.K, true)
		case blk.B1:
			out = append(out, block(0, span(0, 1), span(0, 16*g.GroupStart[g.C]), ipuexe.RowMajor, 1, p.N))
		case blk.B2:
			// Every column block holds all of b2: C copies.
			for j := 0; j < g.C; j++ {
				out = append(out, block(2*j*g.Kp, span(0, 1), kp, ipuexe.RowMajor, 1, p.K))
			}
		default:
			continue
		}
		return out, nil
	}
	return nil, fmt.Errorf("BUG: v0 MLP binding %q is no tensor of the problem", hb.Name)
}

// mlpActivationLayout is the v0 MLP's activation layout (compiler/low
// mlp.go): for every grid tile in logical order, each of its Q chunk
// pieces; a piece is a range of whole 16-value rows of the chunk's AMP
// left panel (ChunkRows rows by Kp), which is at most three AMP left
// rectangles: the end of one column group, whole groups, the start of
// another. Rows past the row block (the last chunk's padding) are padding.
func mlpActivationLayout(pl *low.Plan) []ipuexe.Block {
	p, g := pl.Problem, &pl.Grid
	var out []ipuexe.Block
	off := 0
	add := func(row0, rowEnd, r0, r1, g0, g1 int) {
		if r1 <= r0 || g1 <= g0 {
			return
		}
		rows, cols := mid.Span{Lo: row0 + r0, Hi: row0 + r1}, mid.Span{Lo: 16 * g0, Hi: 16 * g1}
		b := block(off, rows, cols, ipuexe.AMPLeft, p.M, p.K)
		b.RowEnd = uint32(max(rows.Lo, min(rows.Hi, rowEnd)))
		out = append(out, b)
		off += 2 * rows.Len() * cols.Len()
	}
	for i := 0; i < g.R; i++ {
		rc := g.ChunkRows(i)
		end := g.RowStart[i] + g.Rows(i)
		for j := 0; j < g.C; j++ {
			start, n := g.Piece(rc, j)
			a, b := start/16, (start+n)/16 // panel rows [a, b): group u/rc, row u%rc
			for q := 0; q < g.Q; q++ {
				row0 := g.RowStart[i] + q*rc
				if b <= a {
					continue
				}
				ga, gb := a/rc, b/rc
				if ga == gb {
					add(row0, end, a%rc, b%rc, ga, ga+1)
					continue
				}
				if a%rc != 0 {
					add(row0, end, a%rc, rc, ga, ga+1)
					ga++
				}
				add(row0, end, 0, rc, ga, gb)
				add(row0, end, 0, b%rc, gb, gb+1)
			}
		}
	}
	return out
}
