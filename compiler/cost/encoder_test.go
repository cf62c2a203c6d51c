package cost

import (
	"testing"

	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// encoderPoints is the differential table of the encoder-layer kernels:
// one unit per worker or fewer, uneven work splits, the IPU21.md measured
// shapes and the largest operands.
var encoderPoints = []modelPoint{
	{"add_f16", kernels.Params{"n": 4}},
	{"add_f16", kernels.Params{"n": 28}},
	{"add_f16", kernels.Params{"n": 1004}},
	{"add_f16", kernels.Params{"n": 729 * 16}},
	{"add_f16", kernels.Params{"n": 65536}},
	{"layer_norm_f16", kernels.Params{"rows": 1, "width": 4}},
	{"layer_norm_f16", kernels.Params{"rows": 1, "width": 144}},
	{"layer_norm_f16", kernels.Params{"rows": 1, "width": 576}},
	{"layer_norm_f16", kernels.Params{"rows": 1, "width": 1152}},
	{"layer_norm_f16", kernels.Params{"rows": 3, "width": 1152}},
	{"layer_norm_f16", kernels.Params{"rows": 7, "width": 100, "residual": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 3, "width": 1152, "residual": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 256, "width": 128}},
	{"layer_norm_f16", kernels.Params{"rows": 2, "width": 16384, "residual": 1}},
	// panels=1: one row, a single panel, uneven splits (words and panels),
	// the measured shapes, the largest operands.
	{"layer_norm_f16", kernels.Params{"rows": 1, "width": 16, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 1, "width": 1152, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 8, "width": 1152, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 8, "width": 1152, "residual": 1, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 7, "width": 112, "residual": 1, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 13, "width": 48, "residual": 1, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 3, "width": 208, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 256, "width": 128, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 256, "width": 128, "residual": 1, "panels": 1}},
	{"layer_norm_f16", kernels.Params{"rows": 2, "width": 16384, "residual": 1, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 64}},
	{"softmax_f16", kernels.Params{"rows": 7, "keys": 64, "valid": 25}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 64, "valid": 25}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 768, "valid": 729}},
	{"softmax_f16", kernels.Params{"rows": 7, "keys": 768, "valid": 729, "dk": 64}},
	{"softmax_f16", kernels.Params{"rows": 1, "keys": 4, "valid": 1}},
	{"softmax_f16", kernels.Params{"rows": 1, "keys": 4}},
	{"softmax_f16", kernels.Params{"rows": 3, "keys": 20, "valid": 18}},
	{"softmax_f16", kernels.Params{"rows": 5, "keys": 100, "valid": 2}},
	{"softmax_f16", kernels.Params{"rows": 16, "keys": 4096, "valid": 4095}},
	{"softmax_f16", kernels.Params{"rows": 256, "keys": 256, "valid": 197}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 64, "stats": 1}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 64, "valid": 25, "stats": 1}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 768, "valid": 729, "stats": 1}},
	{"softmax_f16", kernels.Params{"rows": 1, "keys": 4, "valid": 3, "stats": 1}},
	{"softmax_f16", kernels.Params{"rows": 17, "keys": 200, "valid": 197, "stats": 1}},
	// panels=1: one row (the panels row-major), the measured shape, odd
	// valid counts (a partial word, padding in a partial panel and in full
	// panels), fewer live words than workers, the largest operands.
	{"softmax_f16", kernels.Params{"rows": 1, "keys": 16, "valid": 1, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 1, "keys": 16, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 64, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 7, "keys": 64, "valid": 25, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 736, "valid": 729, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 7, "keys": 768, "valid": 729, "dk": 64, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 5, "keys": 112, "valid": 2, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 3, "keys": 48, "valid": 45, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 13, "keys": 208, "valid": 197, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 16, "keys": 4096, "valid": 4095, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 256, "keys": 256, "valid": 197, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 64, "stats": 1, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 64, "valid": 25, "stats": 1, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 8, "keys": 736, "valid": 729, "stats": 1, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 1, "keys": 16, "valid": 3, "stats": 1, "panels": 1}},
	{"softmax_f16", kernels.Params{"rows": 256, "keys": 256, "valid": 197, "stats": 1, "panels": 1}},
	{"attention_merge_f16", kernels.Params{"rows": 8, "values": 72, "mode": 0, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 7, "values": 72, "mode": 0, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 1, "values": 4, "mode": 0, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 13, "values": 20, "mode": 0, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 450, "values": 72, "mode": 0, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 8, "values": 72, "mode": 0, "bacc32": 1}},
	{"attention_merge_f16", kernels.Params{"rows": 1, "values": 4, "mode": 0, "bacc32": 1}},
	{"attention_merge_f16", kernels.Params{"rows": 8, "values": 72, "mode": 1, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 7, "values": 72, "mode": 1, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 1, "values": 4, "mode": 1, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 13, "values": 20, "mode": 1, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 450, "values": 72, "mode": 1, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 8, "values": 72, "mode": 1, "bacc32": 1}},
	{"attention_merge_f16", kernels.Params{"rows": 1, "values": 4, "mode": 1, "bacc32": 1}},
	{"attention_merge_f16", kernels.Params{"rows": 8, "values": 72, "mode": 2, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 7, "values": 72, "mode": 2, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 1, "values": 4, "mode": 2, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 13, "values": 20, "mode": 2, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 450, "values": 72, "mode": 2, "bacc32": 0}},
	{"attention_merge_f16", kernels.Params{"rows": 8, "values": 72, "mode": 2, "bacc32": 1}},
	{"attention_merge_f16", kernels.Params{"rows": 1, "values": 4, "mode": 2, "bacc32": 1}},
}

// TestEncoderModelsMatchEmulator asserts the encoder kernels' models are
// exact: the estimate equals the emulated cycles on every point.
func TestEncoderModelsMatchEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the emulator")
	}
	cache := assemble.Cache{Dir: t.TempDir()}
	for _, pt := range encoderPoints {
		if got, emu, ok := modelAndEmulator(t, pt, 11, cache); ok && got != emu {
			t.Errorf("%s %v: model %d cycles, emulator %d (%+d)", pt.kernel, pt.p, got, emu, got-emu)
		}
	}
}
