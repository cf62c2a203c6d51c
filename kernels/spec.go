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
	// linker reports, for the code-memory budget.
	CodeBytes() int
}

// Gemm is a call of the f16 GEMM kernel: C[R][C] = A[R][K] * B[K][C].
// Conservative picks gemm_f16_drain (correct without the
// amp-state-retained assumption), else gemm_f16.
type Gemm struct {
	K, C, R      int
	Conservative bool
}

func (s Gemm) Name() string   { return GemmF16For(s.Conservative) }
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

// CodeBytes: the rpt body is 3*Parts+1 bundles of 8 bytes, in three
// copies (src/reduce.S), plus the prologue.
func (s ReduceAdd) CodeBytes() int { return 3*8*(3*s.Parts+1) + 400 }

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
// columns to row-major (row stride C).
type UnpackOut struct{ R, C int }

func (UnpackOut) Name() string     { return UnpackOutF16 }
func (s UnpackOut) Params() Params { return Params{"r": s.R, "c": s.C} }
func (UnpackOut) Class() Class     { return ClassElementwise }
func (UnpackOut) CodeBytes() int   { return 160 }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SpecOf recovers the typed spec of a call given by name and parameters
// (as a lowered op or a plan file carries it). ok is false for a kernel
// without a spec, or parameters a spec does not express (a parameter it
// does not have, e.g. an unpack row stride); a missing parameter reads as
// 0, not as its registry default.
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
		s, ok = Gelu{N: p["n"], Precise: p["precise"] != 0}, has("n", "precise") && p["precise"]>>1 == 0
	case AddBiasF16:
		s, ok = AddBias{Rows: p["rows"], R: p["r"], First: p["first"]}, has("rows", "r", "first")
	case UnpackOutF16:
		s, ok = UnpackOut{R: p["r"], C: p["c"]}, has("r", "c") || (has("r", "c", "stride") && p["stride"] == 0)
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
