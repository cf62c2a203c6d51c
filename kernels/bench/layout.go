package bench

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/x448/float16"
)

// Layout kernels move data only, so their checks are exact (tolerance 0):
// every destination byte must equal the host's expected byte, and layGuard
// bytes around the destination must survive.

// layGuard is the number of bytes of seeded garbage kept before and after a
// destination; a kernel writing outside its operand changes them.
const layGuard = 64

// layRegion is one operand placed in the data area.
type layRegion struct {
	addr uint32
	size int
}

// layArena hands out 64-byte aligned operand addresses from DataBase,
// leaving layGuard bytes between operands.
type layArena struct{ next uint32 }

func (a *layArena) alloc(n int) layRegion {
	if a.next == 0 {
		a.next = DataBase + layGuard
	}
	r := layRegion{addr: a.next, size: n}
	a.next += uint32((n+layGuard+63)/64*64 + layGuard)
	return r
}

// layRandomBytes fills n bytes with seeded values.
func layRandomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// layWriteGuarded writes data at r and seeded garbage in the layGuard bytes
// on both sides, returning what it wrote there (for checkGuarded).
func layWriteGuarded(t *emu.Tile, rng *rand.Rand, r layRegion, data []byte) ([]byte, error) {
	all := layRandomBytes(rng, layGuard+r.size+layGuard)
	copy(all[layGuard:], data)
	if err := t.Write(r.addr-layGuard, all); err != nil {
		return nil, err
	}
	return all, nil
}

// layCheckExact compares the destination r (with its guards, written by
// layWriteGuarded as before) with want. Bytes where mask is false (when
// mask is not nil) are "don't care" inside the destination.
func layCheckExact(t *emu.Tile, r layRegion, before, want []byte, mask []bool) (float64, error) {
	got := make([]byte, layGuard+r.size+layGuard)
	if err := t.Read(r.addr-layGuard, got); err != nil {
		return 0, err
	}
	for i := range got {
		j := i - layGuard
		if j < 0 || j >= r.size {
			if got[i] != before[i] {
				return 1, fmt.Errorf("layGuard byte at offset %d (relative to the destination) changed: 0x%02x, was 0x%02x", j, got[i], before[i])
			}
			continue
		}
		if mask != nil && !mask[j] {
			continue
		}
		if got[i] != want[j] {
			return 1, fmt.Errorf("destination byte %d is 0x%02x, want 0x%02x", j, got[i], want[j])
		}
	}
	return 0, nil
}

func init() {
	register(kernels.CopyF16, func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		n := p["n"]
		var a layArena
		in, out := a.alloc(n), a.alloc(n)
		src := layRandomBytes(rng, n)
		if _, err := layWriteGuarded(t, rng, in, src); err != nil {
			return nil, err
		}
		before, err := layWriteGuarded(t, rng, out, layRandomBytes(rng, n))
		if err != nil {
			return nil, err
		}
		return &Case{
			Args: map[int]uint32{2: out.addr, 3: in.addr},
			Check: func(t *emu.Tile) (float64, error) {
				return layCheckExact(t, out, before, src, nil)
			},
		}, nil
	})
}

// stride returns a layout kernel's effective row stride in elements.
func layStride(p kernels.Params, cols int) int {
	if s := p["stride"]; s != 0 {
		return s
	}
	return cols
}

func init() {
	register("pack_left_f16", func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		r, k := p["r"], p["k"]
		s := layStride(p, k)
		kg := (k + 15) / 16
		var a layArena
		// The whole strided input is seeded, padding columns included:
		// the kernel must not copy them into the panel.
		inBytes := 2 * r * s
		in, out := a.alloc(inBytes), a.alloc(kg*r*32)
		src := layRandomBytes(rng, inBytes)
		if _, err := layWriteGuarded(t, rng, in, src); err != nil {
			return nil, err
		}
		before, err := layWriteGuarded(t, rng, out, layRandomBytes(rng, out.size))
		if err != nil {
			return nil, err
		}
		want := make([]byte, out.size)
		for g := 0; g < kg; g++ {
			for row := 0; row < r; row++ {
				for i := 0; i < 16; i++ {
					col := 16*g + i
					if col >= k {
						continue // zero padding
					}
					o := (g*r+row)*32 + 2*i
					copy(want[o:o+2], src[2*(row*s+col):])
				}
			}
		}
		return &Case{
			Args:  map[int]uint32{2: out.addr, 3: in.addr},
			Check: func(t *emu.Tile) (float64, error) { return layCheckExact(t, out, before, want, nil) },
		}, nil
	})
}

// layUnpackSetup is the bench of unpack_out_f16 (f32 false) and
// unpack_out_f32 (f32 true). The panel holds seeded f16 (or f32) values,
// padding columns included; the destination rows are seeded garbage. The
// check is exact: columns < roundup(c,4) must hold the panel's value
// (rounded to f16 to nearest even for f32), the rest of each strided row
// must be unchanged.
func layUnpackSetup(f32 bool) Setup {
	return func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error) {
		r, c := p["r"], p["c"]
		s := layStride(p, c)
		gw := 16 // columns per group
		if f32 {
			gw = 8
		}
		groups := (c + gw - 1) / gw
		var a layArena
		in, out := a.alloc(groups*r*32), a.alloc(2*r*s)
		var panel []byte
		val := make([][]float16.Float16, r) // expected f16 of every panel column
		for i := range val {
			val[i] = make([]float16.Float16, groups*gw)
		}
		if f32 {
			panel = make([]byte, in.size)
			for g := 0; g < groups; g++ {
				for row := 0; row < r; row++ {
					for n := 0; n < 8; n++ {
						var v float32
						switch rng.IntN(50) {
						case 0:
							v = float32(math.Inf(1))
						case 1:
							v = 70000 // overflows f16
						case 2:
							v = 1e-6 // f16 subnormal
						case 3:
							// Exactly halfway between two f16: ties to even.
							v = float32(1 + 3.0/2048)
						default:
							v = float32(rng.NormFloat64() * 10)
						}
						binary.LittleEndian.PutUint32(panel[(g*r+row)*32+4*n:], math.Float32bits(v))
						val[row][8*g+n] = float16.Fromfloat32(v)
					}
				}
			}
		} else {
			panel = layRandomBytes(rng, in.size)
			for g := 0; g < groups; g++ {
				for row := 0; row < r; row++ {
					for n := 0; n < 16; n++ {
						val[row][16*g+n] = float16.Frombits(binary.LittleEndian.Uint16(panel[(g*r+row)*32+2*n:]))
					}
				}
			}
		}
		if _, err := layWriteGuarded(t, rng, in, panel); err != nil {
			return nil, err
		}
		dst := layRandomBytes(rng, out.size)
		before, err := layWriteGuarded(t, rng, out, dst)
		if err != nil {
			return nil, err
		}
		want := append([]byte(nil), dst...)
		c4 := (c + 3) / 4 * 4
		for row := 0; row < r; row++ {
			for col := 0; col < c4; col++ {
				binary.LittleEndian.PutUint16(want[2*(row*s+col):], val[row][col].Bits())
			}
		}
		return &Case{
			Args:  map[int]uint32{2: out.addr, 3: in.addr},
			Check: func(t *emu.Tile) (float64, error) { return layCheckExact(t, out, before, want, nil) },
		}, nil
	}
}

func init() {
	register(kernels.UnpackOutF16, layUnpackSetup(false))
	register(kernels.UnpackOutF32, layUnpackSetup(true))
}
