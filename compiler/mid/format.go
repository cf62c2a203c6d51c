// Package mid is the mid-level planner: it decides, for every value of a
// ComputeGraph, how the value is distributed over the tiles (its Format) and,
// for every operation, how the work is split (a GemmPlan), which exchange
// phases move data between them, and what each tile computes in each compute
// step. Plans are costed with compiler/cost and searched with a beam that
// keeps Pareto-optimal partial plans (cycles, peak memory per tile); the best
// finalists are returned for the next stage (lowering to per-tile work lists
// and reranking on low-level cycles).
//
// Coordinates. Every value is viewed as a matrix [rows][cols] (the last two
// axes; the presets are rank 2). Column coordinates are padded: a value whose
// columns feed an AMP kernel is stored with its columns rounded up to a
// multiple of 16, the padding being zeros (the host writes zeros into padded
// inputs, weights are padded with zero rows/columns, so padded GEMM outputs
// are zero and GELU(0) = 0 keeps them zero). Rows are never padded: a GEMM
// block of r rows runs the kernel with r = its real row count.
//
// Determinism: nothing iterates a map; candidates are enumerated in a fixed
// order and every sort has a total tie-break, so the same graph, target and
// options give the same plans.
package mid

import (
	"fmt"

	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipuexe"
)

// Order is the element order of a block of a value on a tile. It is the
// package format's own type (ipuexe.Order, where each order's byte layout
// is described), so a host binding's layout records a block's order as is.
type Order = ipuexe.Order

const (
	RowMajor = ipuexe.RowMajor
	// AMPLeft is the AMP left panel (kernels.gemm "left"). A block of
	// columns [16a, 16b) of a value is the concatenation of b-a column
	// groups.
	AMPLeft = ipuexe.AMPLeft
	// AMPRight is the AMP right panel (weights).
	AMPRight = ipuexe.AMPRight
	// AMPOut is the AMP output panel: byte for byte AMPLeft's layout, which
	// is why a GEMM output block can feed the next GEMM's left operand
	// without repacking.
	AMPOut = ipuexe.AMPOut
)

// MemClass says which SRAM region a block may live in.
type MemClass uint8

const (
	AnyMemory   MemClass = iota // region 0 or 1
	Interleaved                 // region 1 only (AMP right panels: ld128putcs)
)

func (m MemClass) String() string {
	if m == Interleaved {
		return "interleaved"
	}
	return "any"
}

// Span is a half-open interval [Lo, Hi) of rows or columns: the tile IR's
// (compiler/tile), which this planner plans for; the IR depends on nothing
// of the planner.
type Span = tile.Span

// Tiling splits an axis of Size elements into Count blocks of Block
// elements; the last block holds what is left (Size - (Count-1)*Block > 0).
// Unit is the granule Block is a multiple of (16 for AMP column groups and
// inner groups, 1 for rows).
type Tiling struct {
	Size, Block, Count, Unit int
}

// NewTiling splits size into count blocks of ceil(size/count) rounded up to
// unit; Count is then the number of non-empty blocks (which may be fewer
// than asked).
func NewTiling(size, count, unit int) Tiling {
	b := (size + count - 1) / count
	b = (b + unit - 1) / unit * unit
	return Tiling{Size: size, Block: b, Count: (size + b - 1) / b, Unit: unit}
}

// Span returns block i.
func (t Tiling) Span(i int) Span {
	return Span{Lo: i * t.Block, Hi: min((i+1)*t.Block, t.Size)}
}

// Spans returns all blocks.
func (t Tiling) Spans() []Span {
	s := make([]Span, t.Count)
	for i := range s {
		s[i] = t.Span(i)
	}
	return s
}

// Piece is a rectangle of a value held by one tile.
type Piece struct {
	Rows, Cols Span
	Tile       int // logical tile id
}

// Format is the distributed format of one value: which tile holds which
// rectangle (a value may be held by several tiles: replicas), the element
// order and precision of the blocks, and where in memory they may live.
// Pieces of one tile never overlap; their union over all tiles is the whole
// (padded) value exactly once per replica.
type Format struct {
	Value   *graph.Node
	Rows    int // real rows
	Cols    int // padded columns (multiple of 16 for AMP orders)
	RealCol int // real columns (<= Cols)
	Storage graph.DType
	// Acc is the precision partial sums are accumulated in before the value
	// is complete (GEMM outputs); equals Storage otherwise.
	Acc    graph.DType
	Order  Order
	Mem    MemClass
	Pieces []Piece
}

// Bytes is the storage size of a piece.
func (f *Format) Bytes(p Piece) int { return p.Rows.Len() * p.Cols.Len() * f.Storage.Size() }

// Describe is a one-line summary.
func (f *Format) Describe() string {
	tiles := map[int]bool{}
	maxB := 0
	for _, p := range f.Pieces {
		tiles[p.Tile] = true
		maxB = max(maxB, f.Bytes(p))
	}
	return fmt.Sprintf("%s %v[%d x %d(%d)] %s acc=%v mem=%s pieces=%d tiles=%d maxPieceBytes=%d",
		f.Value.Name, f.Storage, f.Rows, f.Cols, f.RealCol, f.Order, f.Acc, f.Mem, len(f.Pieces), len(tiles), maxB)
}

func roundUp(n, a int) int { return (n + a - 1) / a * a }
