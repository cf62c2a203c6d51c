package driver

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/compiler/place"
	"github.com/ipustack/ipustack/graph"
	"github.com/x448/float16"
)

// randF16 returns n finite f16 bit patterns (the top exponent bit cleared:
// no Inf or NaN, so that round trips compare as floats).
func randF16(rng *rand.Rand, n int) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		x[i] = uint16(rng.Uint32()) &^ 0x4000
	}
	return x
}

func f32s(x []uint16) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float16.Frombits(v).Float32()
	}
	return y
}

// rectBinding is the binding of a [rows][cols] tensor cut into the cells
// rs x cs (row blocks outer, unless colOuter) in one order, the slices
// packed back to back in cell order.
func rectBinding(name string, rows, cols int, order mid.Order, rs, cs []mid.Span, colOuter bool) low.HostBinding {
	b := low.HostBinding{Name: name, Rows: rows, Cols: cols}
	add := func(r, c mid.Span) {
		n := 2 * r.Len() * c.Len()
		b.Slices = append(b.Slices, low.HostSlice{Tile: len(b.Slices), Offset: b.Bytes, Length: n,
			Block: &low.Rect{Rows: r, Cols: c, Order: order}})
		b.Bytes += n
	}
	if colOuter {
		for _, c := range cs {
			for _, r := range rs {
				add(r, c)
			}
		}
	} else {
		for _, r := range rs {
			for _, c := range cs {
				add(r, c)
			}
		}
	}
	return b
}

// withOrder is a deep copy of b with every block's order set to o.
func withOrder(b low.HostBinding, o mid.Order) low.HostBinding {
	b.Slices = append([]low.HostSlice(nil), b.Slices...)
	for i := range b.Slices {
		r := *b.Slices[i].Block
		r.Order = o
		b.Slices[i].Block = &r
	}
	return b
}

// naivePack packs element by element from the orders' definitions (the
// index formulas of compiler/mid's format.go), independently of
// rectRuns's runs.
func naivePack(b low.HostBinding, x []uint16) []byte {
	out := make([]byte, b.Bytes)
	for _, sl := range b.Slices {
		blk := sl.Block
		nr, nc := blk.Rows.Len(), blk.Cols.Len()
		for row := 0; row < nr; row++ {
			for col := 0; col < nc; col++ {
				r, c := blk.Rows.Lo+row, blk.Cols.Lo+col
				if r >= b.Rows || c >= b.Cols {
					continue
				}
				var idx int
				switch blk.Order {
				case mid.RowMajor:
					idx = row*nc + col
				case mid.AMPLeft, mid.AMPOut:
					idx = ((col/16)*nr+row)*16 + col%16
				case mid.AMPRight:
					kg, e, cg, cc := row/16, row%16, col/16, col%16
					idx = (cg*(nr/16)+kg)*256 + cc*16 + e
				}
				binary.LittleEndian.PutUint16(out[sl.Offset+2*idx:], x[r*b.Cols+c])
			}
		}
	}
	return out
}

func mustPack(t *testing.T, b low.HostBinding, x []uint16) []byte {
	t.Helper()
	p, err := packRects(b, x)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustUnpack(t *testing.T, b low.HostBinding, p []byte) []float32 {
	t.Helper()
	y, err := unpackRects(b, p)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func equalF32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: value %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// An input [M][K] (neither a multiple of 16) in AMP left blocks over the
// padded [M][Kp] reads back unchanged as AMP output blocks (the same
// bytes), and its bytes are the definition's, padding zero.
func TestRectsAMPLeftRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const m, k = 37, 45 // Kp = 48
	rs := mid.NewTiling(m, 3, 1).Spans()
	ks := mid.NewTiling(48, 2, 16).Spans() // [0,32) [32,48): the padding in the last
	b := rectBinding("x", m, k, mid.AMPLeft, rs, ks, false)
	x := randF16(rng, m*k)
	packed := mustPack(t, b, x)
	if len(packed) != 2*m*48 {
		t.Fatalf("%d bytes, want %d", len(packed), 2*m*48)
	}
	if !bytes.Equal(packed, naivePack(b, x)) {
		t.Fatal("packed bytes differ from the AMP left definition")
	}
	// Padding: columns 45..47 of every row of the last column block.
	last := b.Slices[len(b.Slices)-1]
	nr := last.Block.Rows.Len()
	for row := 0; row < nr; row++ {
		for e := k - 32; e < 16; e++ {
			if v := binary.LittleEndian.Uint16(packed[last.Offset+2*(row*16+e):]); v != 0 {
				t.Fatalf("padding (row %d, col %d) is %#x", row, 32+e, v)
			}
		}
	}
	equalF32(t, "amp-out read-back", mustUnpack(t, withOrder(b, mid.AMPOut), packed), f32s(x))
}

// AMP right panels: the definition's bytes, rows (the inner dimension)
// padded to 16, and the round trip.
func TestRectsAMPRightRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const k, n = 45, 70 // padded 48 x 80
	ks := mid.NewTiling(48, 2, 16).Spans()
	cs := mid.NewTiling(80, 3, 16).Spans()
	b := rectBinding("w", k, n, mid.AMPRight, ks, cs, true)
	x := randF16(rng, k*n)
	packed := mustPack(t, b, x)
	if !bytes.Equal(packed, naivePack(b, x)) {
		t.Fatal("packed bytes differ from the AMP right definition")
	}
	equalF32(t, "round trip", mustUnpack(t, b, packed), f32s(x))
}

// Row-major blocks of any width, and row-major blocks over the padded
// columns (a graph output unpacked on the device from padded AMP blocks).
func TestRectsRowMajor(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const rows, cols = 11, 21
	x := randF16(rng, rows*cols)
	for _, cs := range [][]mid.Span{
		{{Lo: 0, Hi: 7}, {Lo: 7, Hi: 21}},
		{{Lo: 0, Hi: 16}, {Lo: 16, Hi: 32}},
	} {
		b := rectBinding("y", rows, cols, mid.RowMajor, []mid.Span{{Lo: 0, Hi: 4}, {Lo: 4, Hi: 11}}, cs, false)
		packed := mustPack(t, b, x)
		if !bytes.Equal(packed, naivePack(b, x)) {
			t.Fatalf("cols %v: packed bytes differ from row-major", cs)
		}
		equalF32(t, "round trip", mustUnpack(t, b, packed), f32s(x))
	}
}

// v0Plan builds a v0 plan of a recipe with the planner's choices forced,
// without compiling it (graph, problem, candidates, as Prepare does).
func v0Plan(t *testing.T, r Recipe, force low.Options) (*graph.Graph, *low.Plan) {
	t.Helper()
	g, err := graph.Preset(r.Workload, r.Flags)
	if err != nil {
		t.Fatal(err)
	}
	p, err := low.Recognize(g)
	if err != nil {
		t.Fatal(err)
	}
	force.Tiles, force.Fits = r.Tiles, place.Fits
	cands, err := low.Candidates(p, force, 1)
	if err != nil {
		t.Fatal(err)
	}
	return g, low.Build(p, force, cands[0])
}

// withBlocks is a copy of a v0 binding whose slices get the given blocks
// (slice s holds block(s)), as a plan lowered from compiler/mid would
// describe the same layout.
func withBlocks(b low.HostBinding, rows, cols int, block func(s int) low.Rect) low.HostBinding {
	b.Rows, b.Cols = rows, cols
	b.Slices = append([]low.HostSlice(nil), b.Slices...)
	for s := range b.Slices {
		r := block(s)
		b.Slices[s].Block = &r
	}
	return b
}

// The generic packers against the v0 ones on the v0 GEMM layouts (uneven
// row and column blocks, K and N not multiples of 16): the input's AMP
// left panels, the weight's AMP right panels (packW1) and the output's
// AMP output panels, byte for byte and value for value.
func TestRectsMatchV0Gemm(t *testing.T) {
	g, pl := v0Plan(t, gemmRecipe(50, 40, 70, 16), low.Options{ForceR: 3, ForceC: 2})
	p, gr := pl.Problem, &pl.Grid
	if gr.R != 3 || gr.C != 2 || gr.Cols(0) == gr.Cols(1) {
		t.Fatalf("grid %dx%d cols %d %d: want 3x2, uneven", gr.R, gr.C, gr.Cols(0), gr.Cols(1))
	}
	rowSpan := func(i int) mid.Span { return mid.Span{Lo: gr.RowStart[i], Hi: gr.RowStart[i+1]} }
	colSpan := func(j int) mid.Span { return mid.Span{Lo: 16 * gr.GroupStart[j], Hi: 16 * gr.GroupStart[j+1]} }
	kSpan := mid.Span{Lo: 0, Hi: gr.Kp}

	x := g.Node(p.Input).DataF16()
	in := withBlocks(pl.Inputs[0], p.M, p.K, func(s int) low.Rect {
		return low.Rect{Rows: rowSpan(s), Cols: kSpan, Order: mid.AMPLeft}
	})
	if !bytes.Equal(mustPack(t, in, x), packInput(pl, x)) {
		t.Error("input: packRects differs from packInput")
	}

	w := g.Node(p.W1).DataF16()
	wb := withBlocks(pl.Weights[0], p.K, p.N, func(s int) low.Rect {
		return low.Rect{Rows: kSpan, Cols: colSpan(s), Order: mid.AMPRight}
	})
	if !bytes.Equal(mustPack(t, wb, w), packW1(pl, w)) {
		t.Error("weight: packRects differs from packW1")
	}

	out := withBlocks(pl.Outputs[0], p.M, p.N, func(s int) low.Rect {
		return low.Rect{Rows: rowSpan(s / gr.C), Cols: colSpan(s % gr.C), Order: mid.AMPOut}
	})
	raw := make([]byte, out.Bytes)
	rng := rand.New(rand.NewPCG(7, 8))
	for i, v := range randF16(rng, out.Bytes/2) {
		binary.LittleEndian.PutUint16(raw[2*i:], v)
	}
	want, err := unpackOutput(pl, raw)
	if err != nil {
		t.Fatal(err)
	}
	equalF32(t, "output: unpackRects vs unpackOutput", mustUnpack(t, out, raw), want)
}

// The MLP's weights against packW1, packW2, packB1 and packB2: W2
// [hidden][dim] has its inner dimension (hidden, padded to 16) cut by the
// column blocks; b2 is a row-major [1][dim] replicated on every column
// block (a binding holding its tensor C times).
func TestRectsMatchV0MLPWeights(t *testing.T) {
	g, pl := v0Plan(t, mlpRecipeFull(77, 72, 200, 1, 64, true), low.Options{})
	p, gr := pl.Problem, &pl.Grid
	if gr.C < 2 {
		t.Fatalf("grid %dx%d: want several column blocks", gr.R, gr.C)
	}
	hidden := func(j int) mid.Span { return mid.Span{Lo: 16 * gr.GroupStart[j], Hi: 16 * gr.GroupStart[j+1]} }
	dim := mid.Span{Lo: 0, Hi: gr.Kp}
	// The v0 MLP's weight bindings are W1 then W2 of each block, each
	// sliced per column block j.
	blk := p.Blocks[0]
	bind := map[string]low.HostBinding{}
	for _, b := range pl.Weights {
		bind[b.Name] = b
	}
	w1, w2, v1, v2 := bind[blk.W1], bind[blk.W2], bind[blk.B1], bind[blk.B2]
	for _, b := range []low.HostBinding{w1, w2, v1, v2} {
		if len(b.Slices) != gr.C {
			t.Fatalf("v0 weight binding %q sliced %d ways, not per column block (%d)", b.Name, len(b.Slices), gr.C)
		}
	}
	x1 := g.Node(blk.W1).DataF16()
	b1 := withBlocks(w1, p.K, p.N, func(s int) low.Rect { return low.Rect{Rows: dim, Cols: hidden(s), Order: mid.AMPRight} })
	if !bytes.Equal(mustPack(t, b1, x1), packW1(pl, x1)) {
		t.Error("W1: packRects differs from packW1")
	}
	x2 := g.Node(blk.W2).DataF16()
	b2 := withBlocks(w2, p.N, p.K, func(s int) low.Rect { return low.Rect{Rows: hidden(s), Cols: dim, Order: mid.AMPRight} })
	if !bytes.Equal(mustPack(t, b2, x2), packW2(pl, x2)) {
		t.Error("W2: packRects differs from packW2")
	}
	one := mid.Span{Lo: 0, Hi: 1}
	xb1 := g.Node(blk.B1).DataF16()
	bb1 := withBlocks(v1, 1, p.N, func(s int) low.Rect { return low.Rect{Rows: one, Cols: hidden(s), Order: mid.RowMajor} })
	if !bytes.Equal(mustPack(t, bb1, xb1), packB1(pl, xb1)) {
		t.Error("b1: packRects differs from packB1")
	}
	xb2 := g.Node(blk.B2).DataF16()
	bb2 := withBlocks(v2, 1, p.K, func(int) low.Rect { return low.Rect{Rows: one, Cols: dim, Order: mid.RowMajor} })
	if !bytes.Equal(mustPack(t, bb2, xb2), packB2(pl, xb2)) {
		t.Error("b2: packRects differs from packB2")
	}
}

// Malformed bindings and data: errors that name the binding and slice.
func TestRectsErrors(t *testing.T) {
	const rows, cols = 20, 40 // padded 20 x 48 (AMPRight: 32 x 48)
	left := func() low.HostBinding {
		return rectBinding("x", rows, cols, mid.AMPLeft, []mid.Span{{Lo: 0, Hi: 8}, {Lo: 8, Hi: 20}}, []mid.Span{{Lo: 0, Hi: 16}, {Lo: 16, Hi: 48}}, false)
	}
	right := func() low.HostBinding {
		return rectBinding("w", rows, cols, mid.AMPRight, []mid.Span{{Lo: 0, Hi: 32}}, []mid.Span{{Lo: 0, Hi: 48}}, false)
	}
	// resize makes slice s's Length fit its (changed) block and re-packs
	// the offsets, so that only the intended defect remains.
	resize := func(b low.HostBinding) low.HostBinding {
		b.Bytes = 0
		for s := range b.Slices {
			blk := b.Slices[s].Block
			b.Slices[s].Offset = b.Bytes
			b.Slices[s].Length = 2 * max(0, blk.Rows.Len()) * max(0, blk.Cols.Len())
			b.Bytes += b.Slices[s].Length
		}
		return b
	}
	x := make([]uint16, rows*cols)
	for _, c := range []struct {
		name string
		b    func() low.HostBinding
		data []uint16
		want string
	}{
		{"short data", left, x[1:], `"x": 799 values, want 20 x 40 = 800`},
		{"no block", func() low.HostBinding { b := left(); b.Slices[2].Block = nil; return b }, x, `"x": slice 2: no Block`},
		{"unknown order", func() low.HostBinding { b := left(); b.Slices[1].Block.Order = 9; return b }, x, `slice 1: unknown element order order(9)`},
		{"misaligned amp columns", func() low.HostBinding {
			b := left()
			b.Slices[0].Block.Cols.Hi, b.Slices[1].Block.Cols.Lo = 8, 8
			b.Slices[2].Block.Cols.Hi, b.Slices[3].Block.Cols.Lo = 8, 8
			return resize(b)
		}, x, `slice 0: amp-left block columns [0,8) not in whole 16-column groups`},
		{"misaligned amp-right rows", func() low.HostBinding {
			b := right()
			b.Slices[0].Block.Rows.Hi = 24
			return resize(b)
		}, x, `"w": slice 0: amp-right block inner rows [0,24) not in whole 16-row groups`},
		{"past the padded columns", func() low.HostBinding { b := left(); b.Slices[3].Block.Cols.Hi = 64; return resize(b) }, x,
			`slice 3: amp-left block rows [8,20) cols [16,64) reaches past the padded shape 20 x 48`},
		{"past the rows", func() low.HostBinding { b := left(); b.Slices[3].Block.Rows.Hi = 21; return resize(b) }, x,
			`slice 3: amp-left block rows [8,21) cols [16,48) reaches past the padded shape 20 x 48`},
		{"amp-right past the padded rows", func() low.HostBinding { b := right(); b.Slices[0].Block.Rows.Hi = 48; return resize(b) }, x,
			`past the padded shape 32 x 48`},
		{"length mismatch", func() low.HostBinding { b := left(); b.Slices[1].Length -= 2; return b }, x,
			`slice 1: 510 bytes, but its amp-left block [0,8) x [16,48) holds 512`},
		{"negative span", func() low.HostBinding { b := left(); b.Slices[0].Block.Rows.Lo = -1; return b }, x, `slice 0: malformed block`},
		{"slice past the bytes", func() low.HostBinding { b := left(); b.Bytes -= 2; return b }, x, `slice 3: bytes [1152, 1920) outside the binding's 1918`},
		{"odd offset", func() low.HostBinding { b := left(); b.Slices[3].Offset--; return b }, x, `slice 3: odd byte offset 1151`},
		{"byte gap", func() low.HostBinding { b := left(); b.Bytes += 2; return b }, x, `"x": bytes [1920, 1922) are in no slice`},
		{"byte overlap", func() low.HostBinding { b := left(); b.Slices[3].Offset -= 2; return b }, x, `overlap another slice`},
		{"element in no slice", func() low.HostBinding {
			b := left()
			b.Slices[2].Block.Rows.Hi = 19
			b.Slices[3].Block.Rows.Hi = 19
			return resize(b)
		}, x, `element (19, 0) of the 20 x 40 matrix is in no slice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := c.b()
			_, err := packRects(b, c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("packRects: got error %v, want %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "host binding ") {
				t.Errorf("error %q does not name the binding", err)
			}
			if c.name == "short data" {
				return
			}
			if _, err := unpackRects(b, make([]byte, max(0, b.Bytes))); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("unpackRects: got error %v, want %q", err, c.want)
			}
		})
	}
	if _, err := unpackRects(left(), make([]byte, 10)); err == nil || !strings.Contains(err.Error(), `"x": 10 bytes, want 1920`) {
		t.Fatalf("unpackRects of the wrong size: %v", err)
	}
}

func TestRectsHasRects(t *testing.T) {
	_, v0 := v0Plan(t, gemmRecipe(50, 40, 70, 16), low.Options{})
	if hasRects(v0) {
		t.Error("a v0 plan has rectangles")
	}
	if hasRects(&low.Plan{}) {
		t.Error("a plan without bindings has rectangles")
	}
	b := rectBinding("x", 4, 16, mid.AMPLeft, []mid.Span{{Lo: 0, Hi: 4}}, []mid.Span{{Lo: 0, Hi: 16}}, false)
	pl := &low.Plan{Inputs: []low.HostBinding{b}, Outputs: []low.HostBinding{b}}
	if !hasRects(pl) {
		t.Error("a plan with every slice a rectangle has none")
	}
	pl.Weights = v0.Weights
	if hasRects(pl) {
		t.Error("a mixed plan has rectangles")
	}
	if n, with := countRects(pl); n != 2+len(v0.Weights[0].Slices) || with != 2 {
		t.Errorf("countRects = %d, %d", n, with)
	}
}

// Metrics.ActiveTiles counts active programs; for the v0 family that is
// the grid (GEMM, MLP, and the column-major numbering of streamed
// weights).
func TestHostActiveTilesV0(t *testing.T) {
	for _, c := range []struct {
		r     Recipe
		force low.Options
	}{
		{gemmRecipe(50, 40, 70, 16), low.Options{}},
		{gemmRecipe(50, 40, 70, 16), low.Options{ForceR: 3, ForceC: 2}},
		{gemmRecipe(100, 200, 300, 64), low.Options{}},
		{mlpRecipe(77, 72, 200, 64), low.Options{}},
		{mlpRecipeFull(50, 64, 96, 2, 16, true), low.Options{ForceStream: true, ForceColMajor: true, ForceR: 4, ForceC: 4}},
	} {
		_, pl := v0Plan(t, c.r, c.force)
		if got, want := activeTiles(pl), pl.Grid.R*pl.Grid.C; got != want || want == 0 {
			t.Errorf("%s %+v: %d active tiles, grid %dx%d", c.r.Workload, c.force, got, pl.Grid.R, pl.Grid.C)
		}
	}
}

// FuzzRects: random small shapes cut into random blocks of a random order
// round-trip; the same binding damaged by the fuzzer's edits never panics,
// and whenever it still passes the checks it still round-trips (a valid
// layout, replicas included, loses nothing).
func FuzzRects(f *testing.F) {
	f.Add(uint8(37), uint8(45), uint8(3), uint8(2), uint8(1), uint64(1), []byte{})
	f.Add(uint8(16), uint8(16), uint8(1), uint8(1), uint8(2), uint64(2), []byte{0, 3, 1, 2})
	f.Add(uint8(5), uint8(70), uint8(2), uint8(4), uint8(0), uint64(3), []byte{4, 0, 7, 1})
	f.Add(uint8(1), uint8(1), uint8(1), uint8(1), uint8(3), uint64(4), []byte{9, 9, 9, 9})
	// A replica of slice 0 and an order change that keep the binding valid.
	f.Add(uint8(37), uint8(45), uint8(3), uint8(2), uint8(1), uint64(5), []byte{11, 0, 6, 1})
	f.Fuzz(func(t *testing.T, rows, cols, rb, cb, ord uint8, seed uint64, edits []byte) {
		R, C := int(rows%64), int(cols%80)
		order := mid.Order(ord % 4)
		padR, padC, unitR, unitC := R, C, 1, 1
		if order != mid.RowMajor || ord&4 != 0 {
			// Row-major blocks over padded columns too (ord bit 2).
			padC = (C + 15) / 16 * 16
		}
		if order != mid.RowMajor {
			unitC = 16
		}
		if order == mid.AMPRight {
			padR, unitR = (R+15)/16*16, 16
		}
		spans := func(size, count, unit int) []mid.Span {
			if size == 0 {
				return nil
			}
			return mid.NewTiling(size, 1+count%8, unit).Spans()
		}
		b := rectBinding("f", R, C, order, spans(padR, int(rb), unitR), spans(padC, int(cb), unitC), ord&8 != 0)
		rng := rand.New(rand.NewPCG(seed, 99))
		x := randF16(rng, R*C)
		if R*C > 0 {
			packed, err := packRects(b, x)
			if err != nil {
				t.Fatalf("valid binding %+v: %v", b, err)
			}
			if !bytes.Equal(packed, naivePack(b, x)) {
				t.Fatal("packed bytes differ from the order's definition")
			}
			y, err := unpackRects(b, packed)
			if err != nil {
				t.Fatal(err)
			}
			equalF32(t, "round trip", y, f32s(x))
		}

		// Damage: each pair of edit bytes changes one field by a small
		// amount (or appends a replica of a slice).
		for i := 0; i+1 < len(edits); i += 2 {
			d := int(int8(edits[i+1]))
			if len(b.Slices) == 0 {
				b.Rows += d
				continue
			}
			s := &b.Slices[int(edits[i+1])%len(b.Slices)]
			op := edits[i] % 12
			if s.Block == nil && (op <= 3 || op == 6 || op == 11) {
				continue
			}
			switch op {
			case 0:
				s.Block.Rows.Lo += d % 17
			case 1:
				s.Block.Rows.Hi += d % 17
			case 2:
				s.Block.Cols.Lo += d % 17
			case 3:
				s.Block.Cols.Hi += d % 17
			case 4:
				s.Length += d
			case 5:
				s.Offset += d
			case 6:
				s.Block.Order = mid.Order(edits[i+1] % 5)
			case 7:
				s.Block = nil
			case 8:
				b.Bytes += d
			case 9:
				b.Rows += d % 5
			case 10:
				b.Cols += d % 5
			case 11:
				rep := *s
				blk := *s.Block
				rep.Block, rep.Offset = &blk, b.Bytes
				b.Bytes += rep.Length
				b.Slices = append(b.Slices, rep)
			}
		}
		data := x
		if n := b.Rows * b.Cols; b.Rows >= 0 && b.Cols >= 0 && n <= 1<<16 {
			data = randF16(rng, n)
		}
		packed, perr := packRects(b, data)
		raw := make([]byte, max(0, min(b.Bytes, 1<<20)))
		_, uerr := unpackRects(b, raw)
		if (perr == nil) != (uerr == nil) && len(data) == b.Rows*b.Cols && len(raw) == b.Bytes {
			t.Fatalf("pack error %v but unpack error %v", perr, uerr)
		}
		if perr != nil {
			return
		}
		y, err := unpackRects(b, packed)
		if err != nil {
			t.Fatal(err)
		}
		equalF32(t, "damaged but valid round trip", y, f32s(data))
	})
}

// BenchmarkRects packs and unpacks a 20 MiB weight (AMP right) and input
// (AMP left) of 4096 x 2560 cut into 16 x 8 blocks.
func BenchmarkRects(b *testing.B) {
	const rows, cols = 4096, 2560
	x := randF16(rand.New(rand.NewPCG(1, 1)), rows*cols)
	for _, order := range []mid.Order{mid.AMPLeft, mid.AMPRight, mid.RowMajor} {
		rs := mid.NewTiling(rows, 16, 16).Spans()
		cs := mid.NewTiling(cols, 8, 16).Spans()
		hb := rectBinding("b", rows, cols, order, rs, cs, false)
		b.Run(order.String()+"/pack", func(b *testing.B) {
			b.SetBytes(int64(2 * rows * cols))
			for b.Loop() {
				if _, err := packRects(hb, x); err != nil {
					b.Fatal(err)
				}
			}
		})
		packed, err := packRects(hb, x)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(order.String()+"/unpack", func(b *testing.B) {
			b.SetBytes(int64(2 * rows * cols))
			for b.Loop() {
				if _, err := unpackRects(hb, packed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
