package mid

import (
	"fmt"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/kernels"
)

// Typed specs of the encoder-layer kernels that package kernels has no
// spec for yet (its spec.go covers the MLP's kernels). They live here,
// beside their only user, until the lowering of the encoder layer moves
// them next to the others; cost.Cycles does not know them, so their
// cycles come from cost.Kernel by registry name and parameters, which
// also checks every parameter against the kernel's limits (encCall).
//
// CodeBytes are upper estimates of one specialisation's text and vertex
// data: the source's instruction count (kernels/src/*.S, one 4-byte
// instruction a line at most) rounded up, for the code budget only.

// LayerNorm is a layer_norm_f16 call on Rows row-major rows of Width
// values; Residual fuses the residual add (s = x + r written to sum).
type LayerNorm struct{ Rows, Width, Residual int }

func (LayerNorm) Name() string { return "layer_norm_f16" }
func (s LayerNorm) Params() kernels.Params {
	return kernels.Params{"rows": s.Rows, "width": s.Width, "residual": s.Residual}
}
func (LayerNorm) Class() kernels.Class { return kernels.ClassElementwise }
func (LayerNorm) CodeBytes() int       { return 1300 } // src/layer_norm.S: 303 lines

// Softmax is a softmax_f16 call on Rows row-major rows of Keys scores, the
// first Valid of them valid, scaled by 1/sqrt(DK); Stats is the flash
// block step (unnormalised e16 and the row statistics).
type Softmax struct{ Rows, Keys, Valid, DK, Stats int }

func (Softmax) Name() string { return "softmax_f16" }
func (s Softmax) Params() kernels.Params {
	return kernels.Params{"rows": s.Rows, "keys": s.Keys, "valid": s.Valid, "dk": s.DK, "stats": s.Stats}
}
func (Softmax) Class() kernels.Class { return kernels.ClassElementwise }
func (Softmax) CodeBytes() int       { return 1300 } // src/softmax.S: 321 lines

// AttentionMerge is an attention_merge_f16 call (the online-softmax
// merge): Mode 0 initial, 1 update, 2 final; Bacc32 an f32 block
// accumulator.
type AttentionMerge struct{ Rows, Values, Mode, Bacc32 int }

func (AttentionMerge) Name() string { return "attention_merge_f16" }
func (s AttentionMerge) Params() kernels.Params {
	return kernels.Params{"rows": s.Rows, "values": s.Values, "mode": s.Mode, "bacc32": s.Bacc32}
}
func (AttentionMerge) Class() kernels.Class { return kernels.ClassElementwise }
func (AttentionMerge) CodeBytes() int       { return 1100 } // src/merge.S: 260 lines

// PackLeft is a pack_left_f16 call: row-major [R][K] to the AMP left
// panel (K padded to a multiple of 16 with zeros).
type PackLeft struct{ R, K int }

func (PackLeft) Name() string             { return "pack_left_f16" }
func (s PackLeft) Params() kernels.Params { return kernels.Params{"r": s.R, "k": s.K} }
func (PackLeft) Class() kernels.Class     { return kernels.ClassCopy }
func (PackLeft) CodeBytes() int           { return 1000 } // src/pack.S: 236 lines (both kernels)

// Add is an add_f16 call on N values (the residual add).
type Add struct{ N int }

func (Add) Name() string             { return "add_f16" }
func (s Add) Params() kernels.Params { return kernels.Params{"n": s.N} }
func (Add) Class() kernels.Class     { return kernels.ClassElementwise }
func (Add) CodeBytes() int           { return 320 } // src/add.S: 74 lines

// callCycles is the modelled cycles of one call of spec s in the tile
// runtime (the kernel and cost.CallCycles, what cost.Call charges), or
// why its parameters are out of the kernel's limits: cost.Kernel resolves
// the call by name and parameters exactly as a build would (for the
// typed specs of package kernels it then takes cost.Cycles of the same
// spec). memo caches the figures of one search.
func callCycles(memo map[kernels.Spec]int64, s kernels.Spec) (int64, error) {
	if v, ok := memo[s]; ok {
		return v, nil
	}
	c, err := cost.Kernel(s.Name(), s.Params())
	if err != nil {
		return 0, fmt.Errorf("%s %v: %w", s.Name(), s.Params(), err)
	}
	memo[s] = c + cost.CallCycles
	return c + cost.CallCycles, nil
}
