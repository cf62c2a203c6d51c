package launch

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/profile"
	"github.com/x448/float16"
)

func randF16(rng *rand.Rand, n int) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		x[i] = uint16(rng.Uint32()) &^ 0x4000 // finite
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

// cuts splits [0, size) into about n pieces of whole units.
func cuts(size, n, unit int) [][2]int {
	units := (size + unit - 1) / unit
	n = max(1, min(n, units))
	var out [][2]int
	for i := 0; i < n; i++ {
		a, b := i*units/n*unit, (i+1)*units/n*unit
		if b > a {
			out = append(out, [2]int{a, b})
		}
	}
	return out
}

// tiled is the binding of a [rows][cols] tensor cut into rb x cb blocks of
// order o over its padded shape, back to back in row-block-major order.
func tiled(rows, cols, rb, cb int, o ipuexe.Order) *ipuexe.Binding {
	padR, padC, unitR, unitC := rows, cols, 1, 1
	if o != ipuexe.RowMajor {
		padC, unitC = (cols+15)/16*16, 16
	}
	if o == ipuexe.AMPRight {
		padR, unitR = (rows+15)/16*16, 16
	}
	b := &ipuexe.Binding{Name: "t", DType: ipuexe.F16, TensorShape: []uint32{uint32(rows), uint32(cols)}}
	off := 0
	for _, r := range cuts(padR, rb, unitR) {
		for _, c := range cuts(padC, cb, unitC) {
			b.Layout = append(b.Layout, ipuexe.Block{Offset: uint64(off), RowLo: uint32(r[0]), RowHi: uint32(r[1]),
				ColLo: uint32(c[0]), ColHi: uint32(c[1]), RowEnd: uint32(min(r[1], rows)), ColEnd: uint32(min(c[1], cols)), Order: o})
			off += 2 * (r[1] - r[0]) * (c[1] - c[0])
		}
	}
	b.Shape = []uint32{uint32(off / 2)}
	return b
}

// naivePack packs element by element from the orders' definitions
// (compiler/mid's format.go), independently of blockRuns's runs.
func naivePack(b *ipuexe.Binding, x []uint16) []byte {
	n, _ := b.Bytes()
	_, cols, _ := b.Matrix()
	out := make([]byte, n)
	for _, blk := range b.Layout {
		nr, nc := int(blk.Rows()), int(blk.Cols())
		for row := 0; row < nr; row++ {
			for col := 0; col < nc; col++ {
				r, c := int(blk.RowLo)+row, int(blk.ColLo)+col
				if r >= int(blk.RowEnd) || c >= int(blk.ColEnd) {
					continue
				}
				var idx int
				switch blk.Order {
				case ipuexe.RowMajor:
					idx = row*nc + col
				case ipuexe.AMPLeft, ipuexe.AMPOut:
					idx = ((col/16)*nr+row)*16 + col%16
				case ipuexe.AMPRight:
					kg, e, cg, cc := row/16, row%16, col/16, col%16
					idx = (cg*(nr/16)+kg)*256 + cc*16 + e
				}
				binary.LittleEndian.PutUint16(out[int(blk.Offset)+2*idx:], x[r*int(cols)+c])
			}
		}
	}
	return out
}

func roundTrip(t *testing.T, b *ipuexe.Binding, x []uint16) {
	t.Helper()
	packed, err := Pack(b, x)
	if err != nil {
		t.Fatalf("%+v: %v", b.Layout, err)
	}
	if !bytes.Equal(packed, naivePack(b, x)) {
		t.Fatalf("packed bytes differ from the order's definition (%+v)", b.Layout)
	}
	y, err := Unpack(b, packed)
	if err != nil {
		t.Fatal(err)
	}
	want := f32s(x)
	for i := range want {
		if y[i] != want[i] {
			t.Fatalf("round trip: value %d is %v, want %v", i, y[i], want[i])
		}
	}
}

// Every order, shapes that are and are not multiples of 16, uneven blocks,
// and a replica (a block repeated at the end, as a bias held by every
// column block) pack as the definitions say and read back unchanged.
func TestPackOrders(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, o := range []ipuexe.Order{ipuexe.RowMajor, ipuexe.AMPLeft, ipuexe.AMPRight, ipuexe.AMPOut} {
		for _, sh := range [][4]int{{37, 45, 3, 2}, {16, 16, 1, 1}, {1, 1, 1, 1}, {64, 80, 4, 5}, {5, 70, 2, 4}} {
			b := tiled(sh[0], sh[1], sh[2], sh[3], o)
			x := randF16(rng, sh[0]*sh[1])
			roundTrip(t, b, x)
			rep := b.Layout[0]
			n, _ := b.Bytes()
			rep.Offset = n
			b.Layout = append(b.Layout, rep)
			b.Shape[0] += rep.Rows() * rep.Cols()
			roundTrip(t, b, x)
		}
	}
	// Padding rows past the matrix (the last row chunk of a plan in
	// chunks): a block
	// reaching past the last row, and one of padding only.
	b := tiled(20, 40, 1, 1, ipuexe.AMPLeft)
	b.Layout[0].RowHi = 24
	b.Layout = append(b.Layout, ipuexe.Block{Offset: 2 * 24 * 48, RowLo: 24, RowHi: 26, ColLo: 0, ColHi: 48, RowEnd: 24, ColEnd: 40, Order: ipuexe.AMPLeft})
	b.Shape[0] = 26 * 48
	roundTrip(t, b, randF16(rng, 20*40))
}

// Malformed layouts: an error naming the binding and the block, never a
// panic.
func TestLayoutErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(b *ipuexe.Binding)
		want string
	}{
		{"no layout", func(b *ipuexe.Binding) { b.Layout = nil }, `"t": no layout`},
		{"f32", func(b *ipuexe.Binding) { b.DType = ipuexe.F32 }, `dtype "f32"`},
		{"no tensor shape", func(b *ipuexe.Binding) { b.TensorShape = nil }, "tensor shape [] unusable"},
		{"order", func(b *ipuexe.Binding) { b.Layout[1].Order = 9 }, "layout block 1 (order(9)"},
		{"past the padded columns", func(b *ipuexe.Binding) { b.Layout[3].ColHi += 16 }, "reaches past the padded 48 columns"},
		{"past the bytes", func(b *ipuexe.Binding) { b.Layout[3].RowHi += 1 }, "bytes [1280,1984) misaligned or outside the binding's 1920"},
		{"unaligned columns", func(b *ipuexe.Binding) { b.Layout[0].ColHi = 8 }, "not in whole 16-column groups"},
		{"inverted", func(b *ipuexe.Binding) { b.Layout[0].RowHi, b.Layout[0].RowLo = 0, 5 }, "malformed extent"},
		{"real end outside", func(b *ipuexe.Binding) { b.Layout[0].RowEnd = 30 }, "real elements end at row 30"},
		{"odd offset", func(b *ipuexe.Binding) { b.Layout[1].Offset++ }, "misaligned or outside"},
		{"gap", func(b *ipuexe.Binding) { b.Shape[0] += 8; b.Layout[1].Offset += 16 }, "are in no layout block"},
		{"overlap", func(b *ipuexe.Binding) { b.Layout[1].Offset -= 2 }, "overlap another block"},
		{"uncovered element", func(b *ipuexe.Binding) { b.Layout[2].RowEnd = b.Layout[2].RowLo }, "element (10, 0) of the 20 x 40 matrix is in no layout block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := tiled(20, 40, 2, 2, ipuexe.AMPLeft)
			c.edit(b)
			_, perr := Pack(b, make([]uint16, 20*40))
			n, _ := b.Bytes()
			_, uerr := Unpack(b, make([]byte, n))
			for _, err := range []error{perr, uerr} {
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `host binding "t"`) {
					t.Fatalf("got %v, want %q", err, c.want)
				}
			}
		})
	}
	b := tiled(20, 40, 2, 2, ipuexe.AMPLeft)
	if _, err := Pack(b, make([]uint16, 10)); err == nil || !strings.Contains(err.Error(), "10 values, want 20 x 40") {
		t.Errorf("pack of the wrong size: %v", err)
	}
	if _, err := Unpack(b, make([]byte, 10)); err == nil || !strings.Contains(err.Error(), "10 bytes, want 1920") {
		t.Errorf("unpack of the wrong size: %v", err)
	}
}

// The names the package format uses are the emulator's and the profile's.
func TestNamesAgree(t *testing.T) {
	if got, want := ipuexe.AssumptionsDefault, emu.DefaultAssumptions.String(); got != want {
		t.Errorf("ipuexe.AssumptionsDefault %q, emu %q", got, want)
	}
	if got, want := ipuexe.AssumptionsConservative, emu.ConservativeAssumptions.String(); got != want {
		t.Errorf("ipuexe.AssumptionsConservative %q, emu %q", got, want)
	}
	var kinds []string
	for _, k := range profile.SegmentKinds() {
		kinds = append(kinds, k.String())
	}
	if strings.Join(kinds, ",") != strings.Join(ipuexe.MemoryKinds, ",") {
		t.Errorf("ipuexe.MemoryKinds %v, profile %v", ipuexe.MemoryKinds, kinds)
	}
	for _, k := range ipuexe.MemoryKinds {
		if _, err := segmentKind(k); err != nil {
			t.Error(err)
		}
	}
}

// FuzzLayout: random small shapes cut into random blocks of a random order
// round-trip; the same layout damaged by the fuzzer's edits never panics,
// and whenever it still passes the checks it still round-trips.
func FuzzLayout(f *testing.F) {
	f.Add(uint8(37), uint8(45), uint8(3), uint8(2), uint8(1), uint64(1), []byte{})
	f.Add(uint8(16), uint8(16), uint8(1), uint8(1), uint8(2), uint64(2), []byte{0, 3, 1, 2})
	f.Add(uint8(5), uint8(70), uint8(2), uint8(4), uint8(0), uint64(3), []byte{4, 0, 7, 1})
	f.Add(uint8(1), uint8(1), uint8(1), uint8(1), uint8(3), uint64(4), []byte{9, 9, 9, 9})
	f.Add(uint8(37), uint8(45), uint8(3), uint8(2), uint8(1), uint64(5), []byte{11, 0, 6, 1})
	f.Fuzz(func(t *testing.T, rows, cols, rb, cb, ord uint8, seed uint64, edits []byte) {
		R, C := 1+int(rows%64), 1+int(cols%80)
		b := tiled(R, C, 1+int(rb%8), 1+int(cb%8), ipuexe.Order(ord%4))
		rng := rand.New(rand.NewPCG(seed, 99))
		x := randF16(rng, R*C)
		roundTrip(t, b, x)
		for i := 0; i+1 < len(edits); i += 2 {
			d := uint32(int32(int8(edits[i+1])))
			blk := &b.Layout[int(edits[i+1])%len(b.Layout)]
			switch edits[i] % 12 {
			case 0:
				blk.RowLo += d % 17
			case 1:
				blk.RowHi += d % 17
			case 2:
				blk.ColLo += d % 17
			case 3:
				blk.ColHi += d % 17
			case 4:
				blk.RowEnd += d % 17
			case 5:
				blk.Offset += uint64(int64(int32(d)))
			case 6:
				blk.Order = ipuexe.Order(edits[i+1] % 5)
			case 7:
				blk.ColEnd += d % 17
			case 8:
				b.Shape[0] += d
			case 9:
				b.TensorShape[0] += d % 5
			case 10:
				b.TensorShape[1] += d % 5
			case 11:
				rep := *blk
				n, _ := b.Bytes()
				rep.Offset = n
				b.Shape[0] += rep.Rows() * rep.Cols()
				b.Layout = append(b.Layout, rep)
			}
		}
		r, c, ok := b.Matrix()
		data := x
		if ok && r*c <= 1<<16 {
			data = randF16(rng, int(r*c))
		}
		packed, perr := Pack(b, data)
		n, _ := b.Bytes()
		raw := make([]byte, min(n, 1<<20))
		_, uerr := Unpack(b, raw)
		if (perr == nil) != (uerr == nil) && uint64(len(data)) == r*c && uint64(len(raw)) == n {
			t.Fatalf("pack error %v but unpack error %v", perr, uerr)
		}
		if perr != nil {
			return
		}
		roundTrip(t, b, data)
		_ = packed
	})
}

// BenchmarkPack packs and unpacks a 20 MiB tensor (4096 x 2560) cut into
// 16 x 8 blocks, in each order.
func BenchmarkPack(b *testing.B) {
	const rows, cols = 4096, 2560
	x := randF16(rand.New(rand.NewPCG(1, 1)), rows*cols)
	for _, o := range []ipuexe.Order{ipuexe.AMPLeft, ipuexe.AMPRight, ipuexe.RowMajor} {
		bd := tiled(rows, cols, 16, 8, o)
		b.Run(o.String()+"/pack", func(b *testing.B) {
			b.SetBytes(2 * rows * cols)
			for b.Loop() {
				if _, err := Pack(bd, x); err != nil {
					b.Fatal(err)
				}
			}
		})
		packed, err := Pack(bd, x)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(o.String()+"/unpack", func(b *testing.B) {
			b.SetBytes(2 * rows * cols)
			for b.Loop() {
				if _, err := Unpack(bd, packed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
