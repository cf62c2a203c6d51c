package kernels

import "fmt"

// Names of the registered kernels (the GEMM ones are in gemm.go). The
// registry records, the typed specs below and the compiler's passes that
// special-case a kernel all use these, so that a kernel's name is spelled
// once.
const (
	FillZero          = "fill_zero"
	CopyF16           = "copy_f16"
	ReduceAddF16      = "reduce_add_f16"
	GeluF16           = "gelu_f16"
	AddBiasF16        = "add_bias_f16"
	PackLeftF16       = "pack_left_f16"
	UnpackOutF16      = "unpack_out_f16"
	UnpackOutF32      = "unpack_out_f32"
	AddF16            = "add_f16"
	LayerNormF16      = "layer_norm_f16"
	SoftmaxF16        = "softmax_f16"
	AttentionMergeF16 = "attention_merge_f16"
)

// Class is the kind of work a kernel call does, as the cost estimates
// split it.
type Class uint8

const (
	ClassElementwise Class = iota // gelu, bias, unpack, ...
	ClassGemm
	ClassReduce
	ClassCopy
)

// Spec is one typed kernel call specialisation: which kernel, with which
// assembly parameters. The compiler builds its calls from specs rather
// than name/Params pairs, so that a kernel's parameters, its cost-model
// class and its code-size estimate live in one place; compiler/cost.Cycles
// gives its cycles (the cost model imports this package, not the reverse).
type Spec interface {
	// Name is the registry name of the kernel.
	Name() string
	// Params are the assembly parameters, exactly the -D values a build
	// specialises the source with.
	Params() Params
	// Class says which estimate bucket the call's cycles go to.
	Class() Class
	// CodeBytes estimates the linked size of one copy of the
	// specialisation (text and vertex data), a little above what the
	// linker reports, for the code-memory budget. Each figure is a bound
	// measured by linking the kernel alone at parameter points that cover
	// its code-shaping parameters (kernels/assemble TestCodeBytes).
	CodeBytes() int
}

// Gemm is a call of the f16 GEMM kernel: C[R][C] = A[R][K] * B[K][C].
// Conservative picks gemm_f16_drain (correct without the
// amp-state-retained assumption), else gemm_f16. F32Acc picks the
// f32-partials kernels instead (gemm_f16_f32acc, gemm_f16_f32acc_drain:
// f32 results in an f32 AMP output panel, C a multiple of 8).
type Gemm struct {
	K, C, R      int
	Conservative bool
	F32Acc       bool
}

func (s Gemm) Name() string {
	switch {
	case !s.F32Acc:
		return GemmF16For(s.Conservative)
	case s.Conservative:
		return GemmF16F32AccDrain
	}
	return GemmF16F32Acc
}
func (s Gemm) Params() Params { return Params{"k": s.K, "c": s.C, "r": s.R} }
func (Gemm) Class() Class     { return ClassGemm }
func (Gemm) CodeBytes() int   { return 1100 }

// Copy is a copy_f16 call moving N bytes.
type Copy struct{ N int }

func (Copy) Name() string     { return CopyF16 }
func (s Copy) Params() Params { return Params{"n": s.N} }
func (Copy) Class() Class     { return ClassCopy }
func (Copy) CodeBytes() int   { return 160 }

// ReduceAdd is a reduce_add_f16 call summing Parts contiguous arrays of N
// f16 values.
type ReduceAdd struct{ N, Parts int }

func (ReduceAdd) Name() string     { return ReduceAddF16 }
func (s ReduceAdd) Params() Params { return Params{"n": s.N, "parts": s.Parts} }
func (ReduceAdd) Class() Class     { return ClassReduce }

// CodeBytes: one output word is 3*Parts+1 bundles of 8 bytes, issued
// from four copies (kernels/assemble/src/reduce.S through PIPELINED_WORDS:
// before, in and after the rpt, and the single-word path), plus 144 bytes
// of prologue and vertex data (linked: 96*Parts + 176 bytes).
func (s ReduceAdd) CodeBytes() int { return 4*8*(3*s.Parts+1) + 200 }

// Gelu is a gelu_f16 call on N values; Precise selects the f32 form.
type Gelu struct {
	N       int
	Precise bool
}

func (Gelu) Name() string { return GeluF16 }
func (s Gelu) Params() Params {
	return Params{"n": s.N, "precise": b2i(s.Precise)}
}
func (Gelu) Class() Class { return ClassElementwise }

// CodeBytes: the precise form adds the f32 schedule.
func (s Gelu) CodeBytes() int {
	if s.Precise {
		return 520 + 780
	}
	return 520
}

// AddBias is an add_bias_f16 call on Rows panel rows of an AMP output
// panel with R rows per column group, starting at row First of a group.
type AddBias struct{ Rows, R, First int }

func (AddBias) Name() string     { return AddBiasF16 }
func (s AddBias) Params() Params { return Params{"rows": s.Rows, "r": s.R, "first": s.First} }
func (AddBias) Class() Class     { return ClassElementwise }
func (AddBias) CodeBytes() int   { return 320 }

// UnpackOut is an unpack_out_f16 call: an AMP output panel of R rows and C
// columns to row-major f16 with a row stride of Stride elements (0: C).
// F32 unpacks an f32 panel (gemm_f16_f32acc's) instead: unpack_out_f32.
// The stride parameter is passed only when Stride is not 0, so a stride-0
// call is the specialisation {r, c} the compiler has always built.
type UnpackOut struct {
	R, C, Stride int
	F32          bool
}

func (s UnpackOut) Name() string {
	if s.F32 {
		return UnpackOutF32
	}
	return UnpackOutF16
}
func (s UnpackOut) Params() Params {
	p := Params{"r": s.R, "c": s.C}
	if s.Stride != 0 {
		p["stride"] = s.Stride
	}
	return p
}
func (UnpackOut) Class() Class { return ClassElementwise }

// CodeBytes is a bound over the parameters: the code grows with c's
// remainder modulo 16 and whether there is a whole column group; linked
// 164..324 bytes (f16) and 228..372 (f32) over c = 4..100 and 1992..2044,
// r = 1, 7, 4096, stride 0 and 2044 (kernels/assemble TestCodeBytes checks
// the bound).
func (s UnpackOut) CodeBytes() int {
	if s.F32 {
		return 384
	}
	return 336
}

// Fill is a fill_zero call clearing Bytes bytes.
type Fill struct{ Bytes int }

func (Fill) Name() string     { return FillZero }
func (s Fill) Params() Params { return Params{"bytes": s.Bytes} }

// Class: a fill moves data (zeros) as a copy does.
func (Fill) Class() Class { return ClassCopy }

// CodeBytes: linked 68 bytes for any size.
func (Fill) CodeBytes() int { return 96 }

// PackLeft is a pack_left_f16 call: a row-major f16 [R][K] with a row
// stride of Stride elements (0: K) to an AMP left panel.
type PackLeft struct{ R, K, Stride int }

func (PackLeft) Name() string     { return PackLeftF16 }
func (s PackLeft) Params() Params { return Params{"r": s.R, "k": s.K, "stride": s.Stride} }
func (PackLeft) Class() Class     { return ClassElementwise }

// CodeBytes is a bound over the parameters, as for UnpackOut: linked
// 228..348 bytes over the same points.
func (PackLeft) CodeBytes() int { return 360 }

// Add is an add_f16 call, the residual add out = a + b on N f16 values.
type Add struct{ N int }

func (Add) Name() string     { return AddF16 }
func (s Add) Params() Params { return Params{"n": s.N} }
func (Add) Class() Class     { return ClassElementwise }

// CodeBytes: linked 164 bytes for any n.
func (Add) CodeBytes() int { return 192 }

// LayerNorm is a layer_norm_f16 call on Rows rows of Width values;
// Residual fuses the residual add (s = x + r, also written to sum). Panels
// puts x, out, r and sum in AMP left/out order (Width a multiple of 16).
type LayerNorm struct {
	Rows, Width      int
	Residual, Panels bool
}

func (LayerNorm) Name() string { return LayerNormF16 }
func (s LayerNorm) Params() Params {
	return Params{"rows": s.Rows, "width": s.Width, "residual": b2i(s.Residual), "panels": b2i(s.Panels)}
}
func (LayerNorm) Class() Class { return ClassElementwise }

// CodeBytes: the vertex record holds 48 bytes of partial sums per row
// (six workers); linked 1012 + 48*Rows bytes, 24 more with the residual,
// for any width; Panels (the walk, the unrolled panel bodies) up to 896
// more.
func (s LayerNorm) CodeBytes() int { return 48*s.Rows + 1100 + 960*b2i(s.Panels) }

// Softmax is a softmax_f16 call on Rows rows of Keys scores, of which the
// first Valid count (0: all); the scale is 1/sqrt(DK). Stats selects the
// block step of flash-style attention (unnormalised, row statistics out).
// Panels puts the scores and the output in AMP left/out order (Keys a
// multiple of 16).
type Softmax struct {
	Rows, Keys, Valid, DK int
	Stats, Panels         bool
}

func (Softmax) Name() string { return SoftmaxF16 }
func (s Softmax) Params() Params {
	return Params{"rows": s.Rows, "keys": s.Keys, "valid": s.Valid, "dk": s.DK, "stats": b2i(s.Stats), "panels": b2i(s.Panels)}
}
func (Softmax) Class() Class { return ClassElementwise }

// CodeBytes: 48 bytes of partial sums per row in the vertex record, as for
// LayerNorm; linked 892 + 48*Rows bytes, 16 more with Stats and 264 more
// with a mask (Valid neither 0 nor Keys), for any keys and dk; Panels (the
// walk, the unrolled panel bodies, the padding stores) up to 1184 more.
func (s Softmax) CodeBytes() int { return 48*s.Rows + 1200 + 1280*b2i(s.Panels) }

// MergeMode is the step of the online-softmax merge.
type MergeMode int

const (
	MergeInitial MergeMode = 0 // acc = bacc, (m, l) = (mb, lb)
	MergeUpdate  MergeMode = 1 // fold a block into the state
	MergeFinal   MergeMode = 2 // the update, then out = acc / l
)

// AttentionMerge is an attention_merge_f16 call on Rows rows of Values
// values; Bacc32 says the block's accumulator is f32 (else f16).
type AttentionMerge struct {
	Rows, Values int
	Mode         MergeMode
	Bacc32       bool
}

func (AttentionMerge) Name() string { return AttentionMergeF16 }
func (s AttentionMerge) Params() Params {
	return Params{"rows": s.Rows, "values": s.Values, "mode": int(s.Mode), "bacc32": b2i(s.Bacc32)}
}
func (AttentionMerge) Class() Class { return ClassElementwise }

// CodeBytes is a bound over the modes: linked 308 (initial) to 500
// (update) bytes, for any rows and values.
func (AttentionMerge) CodeBytes() int { return 512 }

// flag reports whether v is a 0/1 flag value (a spec's bool round-trips).
func flag(v int) bool { return v == 0 || v == 1 }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SpecOf recovers the typed spec of a call given by name and parameters
// (as a lowered op or a plan file carries it). Every registered kernel has
// a spec; ok is false for an unknown kernel, or parameters a spec does not
// express (a parameter the kernel does not have, a flag other than 0 or
// Check reports whether the kernel accepts the spec's parameters (its
// registry record's Param checks), naming the parameter that it refuses:
// what the lowering asks of every call before it builds one and a pass
// asks of a call it rewrites.
func Check(s Spec) error {
	k, err := Lookup(s.Name())
	if err != nil {
		return err
	}
	_, err = k.Resolve(s.Params())
	return err
}

// 1); a missing parameter reads as 0, not as its registry default.
func SpecOf(name string, p Params) (s Spec, ok bool) {
	has := func(names ...string) bool {
		n := 0
		for _, k := range names {
			if _, in := p[k]; in {
				n++
			}
		}
		return n == len(p)
	}
	switch name {
	case GemmF16, GemmF16Drain:
		s, ok = Gemm{K: p["k"], C: p["c"], R: p["r"], Conservative: name == GemmF16Drain}, has("k", "c", "r")
	case CopyF16:
		s, ok = Copy{N: p["n"]}, has("n")
	case ReduceAddF16:
		s, ok = ReduceAdd{N: p["n"], Parts: p["parts"]}, has("n", "parts")
	case GeluF16:
		s, ok = Gelu{N: p["n"], Precise: p["precise"] != 0}, has("n", "precise") && flag(p["precise"])
	case AddBiasF16:
		s, ok = AddBias{Rows: p["rows"], R: p["r"], First: p["first"]}, has("rows", "r", "first")
	case UnpackOutF16, UnpackOutF32:
		s, ok = UnpackOut{R: p["r"], C: p["c"], Stride: p["stride"], F32: name == UnpackOutF32}, has("r", "c", "stride")
	case GemmF16F32Acc, GemmF16F32AccDrain:
		s, ok = Gemm{K: p["k"], C: p["c"], R: p["r"], Conservative: name == GemmF16F32AccDrain, F32Acc: true}, has("k", "c", "r")
	case FillZero:
		s, ok = Fill{Bytes: p["bytes"]}, has("bytes")
	case PackLeftF16:
		s, ok = PackLeft{R: p["r"], K: p["k"], Stride: p["stride"]}, has("r", "k", "stride")
	case AddF16:
		s, ok = Add{N: p["n"]}, has("n")
	case LayerNormF16:
		s, ok = LayerNorm{Rows: p["rows"], Width: p["width"], Residual: p["residual"] != 0, Panels: p["panels"] != 0},
			has("rows", "width", "residual", "panels") && flag(p["residual"]) && flag(p["panels"])
	case SoftmaxF16:
		s, ok = Softmax{Rows: p["rows"], Keys: p["keys"], Valid: p["valid"], DK: p["dk"], Stats: p["stats"] != 0, Panels: p["panels"] != 0},
			has("rows", "keys", "valid", "dk", "stats", "panels") && flag(p["stats"]) && flag(p["panels"])
	case AttentionMergeF16:
		s, ok = AttentionMerge{Rows: p["rows"], Values: p["values"], Mode: MergeMode(p["mode"]), Bacc32: p["bacc32"] != 0},
			has("rows", "values", "mode", "bacc32") && flag(p["bacc32"])
	}
	if !ok {
		return nil, false
	}
	return s, true
}

// MustSpecOf is SpecOf for calls the compiler built from specs.
func MustSpecOf(name string, p Params) Spec {
	s, ok := SpecOf(name, p)
	if !ok {
		panic(fmt.Sprintf("BUG: kernel %s %s has no spec", name, p))
	}
	return s
}
