package emu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestF16Conversions checks the fast conversions against x448/float16:
// every f16 value widened, and f32 values that hit every rounding case.
func TestF16Conversions(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		want := float16.Frombits(uint16(i)).Float32()
		got := h2f(uint32(i))
		if math.Float32bits(got) != math.Float32bits(want) && !(want != want && got != got) {
			t.Fatalf("h2f(0x%04x) = %v, want %v", i, got, want)
		}
	}
	check := func(b uint32) {
		f := math.Float32frombits(b)
		if got, want := f2h(f), uint32(float16.Fromfloat32(f).Bits()); got != want {
			t.Fatalf("f2h(0x%08x = %g) = 0x%04x, want 0x%04x", b, f, got, want)
		}
	}
	// Every f16 value and its neighbourhood in f32: exact, halfway, just
	// above and below halfway, for both signs and the whole exponent range.
	for i := 0; i < 1<<16; i++ {
		base := math.Float32bits(float16.Frombits(uint16(i)).Float32())
		for _, d := range []uint32{0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF} {
			check(base + d)
			check(base - d)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1<<20; i++ {
		check(rng.Uint32())
	}
}
