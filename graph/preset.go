package graph

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// MLPConfig is the shape of the SigLIP-style MLP preset (flags --batch --tokens --dim --hidden
// --blocks --biases).
type MLPConfig struct {
	Batch, Tokens, Dim, Hidden, Blocks int
	Biases                             bool
}

// GemmConfig is the shape of the single-GEMM preset (flags --m --k --n).
type GemmConfig struct {
	M, K, N int
}

// Flags are the workload flags shared by all presets; each preset reads its own part.
type Flags struct {
	MLP  MLPConfig
	Gemm GemmConfig
	Seed uint64 // data seed of inputs and parameters
	// Gelu selects the GELU formula of the MLP (default tanh, as SigLIP).
	Gelu GeluApprox
	// Encoder is the shape of the encoder-layer preset; nil for the others (so that the recipe
	// a package records for them is what it was before the preset existed). EncoderFlags sets
	// it from the shared shape flags.
	Encoder *EncoderConfig `json:",omitempty"`
}

// EncoderFlags is the encoder-layer shape of the shared flags: --batch --tokens --dim
// --hidden (the MLP's, whose defaults are so400m's too), --heads and --layers, in f16 with
// f16 accumulation.
func EncoderFlags(m MLPConfig, heads, layers int) *EncoderConfig {
	c := DefaultEncoder
	c.Batch, c.Tokens, c.Dim, c.Hidden, c.Heads, c.Layers = m.Batch, m.Tokens, m.Dim, m.Hidden, heads, layers
	return &c
}

// encoder is f's encoder shape, the default when none is set.
func (f Flags) encoder() EncoderConfig {
	if f.Encoder != nil {
		return *f.Encoder
	}
	return DefaultEncoder
}

// DefaultMLP is the SigLIP so400m vision MLP: batch 1, 729 tokens, d=1152, h=4304, one block,
// no biases (the reference log's workload).
var DefaultMLP = MLPConfig{Batch: 1, Tokens: 729, Dim: 1152, Hidden: 4304, Blocks: 1}

// DefaultGemm is one GEMM of the MLP's first layer's shape.
var DefaultGemm = GemmConfig{M: 729, K: 1152, N: 4304}

// DefaultFlags returns the defaults of every preset.
func DefaultFlags() Flags { return Flags{MLP: DefaultMLP, Gemm: DefaultGemm} }

// Upper bounds of the shape flags. They are sanity limits against typos (a stray zero) and
// int overflow in sizes, far above anything a C600's 900 MiB of SRAM could hold.
const (
	MaxDim    = 1 << 20 // any one of tokens, dim, hidden, m, k, n
	MaxBatch  = 1 << 12
	MaxBlocks = 1 << 10
	// MaxElements bounds any one tensor: 2^30 elements keep f32 byte sizes within 2^32.
	MaxElements = 1 << 30
)

func checkFlag(errs []error, flag string, v, max int) []error {
	switch {
	case v <= 0:
		return append(errs, fmt.Errorf("--%s must be positive, got %d", flag, v))
	case v > max:
		return append(errs, fmt.Errorf("--%s must be at most %d, got %d", flag, max, v))
	}
	return errs
}

func checkElements(errs []error, what string, dims ...int) []error {
	n := int64(1)
	for _, d := range dims {
		n *= int64(d)
	}
	if n > MaxElements {
		return append(errs, fmt.Errorf("%s %v has %d elements, more than the limit %d", what, Shape(dims), n, int64(MaxElements)))
	}
	return errs
}

// Validate checks every flag, naming the flag in each error.
func (c MLPConfig) Validate() error {
	var errs []error
	errs = checkFlag(errs, "batch", c.Batch, MaxBatch)
	errs = checkFlag(errs, "tokens", c.Tokens, MaxDim)
	errs = checkFlag(errs, "dim", c.Dim, MaxDim)
	errs = checkFlag(errs, "hidden", c.Hidden, MaxDim)
	errs = checkFlag(errs, "blocks", c.Blocks, MaxBlocks)
	if len(errs) == 0 {
		errs = checkElements(errs, "--batch x --tokens x --hidden activation", c.Batch*c.Tokens, c.Hidden)
		errs = checkElements(errs, "--dim x --hidden weight", c.Dim, c.Hidden)
		errs = checkElements(errs, "--batch x --tokens x --dim input", c.Batch*c.Tokens, c.Dim)
	}
	return errors.Join(errs...)
}

// Validate checks every flag, naming the flag in each error.
func (c GemmConfig) Validate() error {
	var errs []error
	errs = checkFlag(errs, "m", c.M, MaxDim)
	errs = checkFlag(errs, "k", c.K, MaxDim)
	errs = checkFlag(errs, "n", c.N, MaxDim)
	if len(errs) == 0 {
		errs = checkElements(errs, "--m x --k input", c.M, c.K)
		errs = checkElements(errs, "--k x --n weight", c.K, c.N)
		errs = checkElements(errs, "--m x --n output", c.M, c.N)
	}
	return errors.Join(errs...)
}

// Name is the workload name used in logs and metrics, as the reference's
// siglip-mlp-f16-b1-t729-d1152-h4304-n1 ("-bias" appended with biases).
func (c MLPConfig) Name() string {
	s := fmt.Sprintf("siglip-mlp-f16-b%d-t%d-d%d-h%d-n%d", c.Batch, c.Tokens, c.Dim, c.Hidden, c.Blocks)
	if c.Biases {
		s += "-bias"
	}
	return s
}

// Name is the workload name of a single GEMM: gemm-f16-m729-k1152-n4304.
func (c GemmConfig) Name() string {
	return fmt.Sprintf("gemm-f16-m%d-k%d-n%d", c.M, c.K, c.N)
}

// Rows is batch*tokens: the batch folds into the rows of the activations (the log's rows=729).
func (c MLPConfig) Rows() int { return c.Batch * c.Tokens }

// presets maps names (and aliases) to their canonical name.
var presets = map[string]string{
	"gemm":           "gemm",
	"siglip-mlp-f16": "siglip-mlp-f16",
	"mlp":            "siglip-mlp-f16",
	// The SigLIP vision encoder layer (flags --batch --tokens --dim --heads --hidden
	// --layers); graphed with its host reference, not planned yet.
	"siglip-encoder-layer": "siglip-encoder-layer",
	"encoder":              "siglip-encoder-layer",
}

// Presets lists the accepted workload names, aliases included, sorted.
func Presets() []string {
	r := make([]string, 0, len(presets))
	for k := range presets {
		r = append(r, k)
	}
	sort.Strings(r)
	return r
}

// CanonicalPreset resolves an alias ("mlp" -> "siglip-mlp-f16").
func CanonicalPreset(name string) (string, bool) {
	c, ok := presets[name]
	return c, ok
}

// WorkloadName is the full workload name of a preset with its flags, e.g.
// siglip-mlp-f16-b1-t729-d1152-h4304-n1.
func WorkloadName(name string, f Flags) (string, error) {
	switch c, _ := CanonicalPreset(name); c {
	case "gemm":
		return f.Gemm.Name(), nil
	case "siglip-mlp-f16":
		return f.MLP.Name(), nil
	case "siglip-encoder-layer":
		return f.encoder().Name(), nil
	}
	return "", unknownPreset(name)
}

func unknownPreset(name string) error {
	return fmt.Errorf("unknown workload %q (known: %s)", name, strings.Join(Presets(), ", "))
}

// Preset builds a workload graph: "gemm" (f.Gemm), "siglip-mlp-f16" / "mlp" (f.MLP) or
// "siglip-encoder-layer" / "encoder" (f.Encoder, so400m's when nil).
func Preset(name string, f Flags) (*Graph, error) {
	switch c, _ := CanonicalPreset(name); c {
	case "gemm":
		return GemmGraph(f.Gemm, f.Seed)
	case "siglip-mlp-f16":
		return MLPGraph(f.MLP, f.Seed, f.Gelu)
	case "siglip-encoder-layer":
		return EncoderLayerGraph(f.encoder(), f.Seed)
	}
	return nil, unknownPreset(name)
}

// GemmGraph is y = x[m][k] x w[k][n] in f16 with f16 accumulation (the AMP's half partials).
func GemmGraph(c GemmConfig, seed uint64) (*Graph, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	g := New()
	g.SetSeed(seed)
	x := g.Input("x", F16, c.M, c.K)
	w := g.Parameter("w", F16, seed, c.K, c.N)
	y := g.Gemm("gemm", x, w, GemmAttrs{Out: F16, Acc: F16})
	g.Output("y", y)
	return g.Build()
}

// MLPGraph is the SigLIP vision MLP, repeated c.Blocks times:
//
//	h = gelu(x W1 (+ b1));  y = h W2 (+ b2)
//
// with x [batch*tokens][dim] f16, W1 [dim][hidden], W2 [hidden][dim], f16 values and f16
// accumulation. Node names are "blockI.fc1.weight", "blockI.fc1", "blockI.fc1.bias",
// "blockI.fc1.add", "blockI.gelu", "blockI.fc2..."; the input is "x", the output "y".
func MLPGraph(c MLPConfig, seed uint64, approx GeluApprox) (*Graph, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	g := New()
	g.SetSeed(seed)
	x := g.Input("x", F16, c.Rows(), c.Dim)
	attrs := GemmAttrs{Out: F16, Acc: F16}
	for b := 0; b < c.Blocks; b++ {
		p := fmt.Sprintf("block%d.", b)
		w1 := g.Parameter(p+"fc1.weight", F16, seed, c.Dim, c.Hidden)
		h := g.Gemm(p+"fc1", x, w1, attrs)
		if c.Biases {
			// A bias is drawn with the layer's fan-in, like torch.nn.Linear.
			b1 := g.ParameterInit(p+"fc1.bias", F16, seed, InitUniformFanIn, c.Dim, c.Hidden)
			h = g.Add(p+"fc1.add", h, b1)
		}
		h = g.Gelu(p+"gelu", h, approx)
		w2 := g.Parameter(p+"fc2.weight", F16, seed, c.Hidden, c.Dim)
		x = g.Gemm(p+"fc2", h, w2, attrs)
		if c.Biases {
			b2 := g.ParameterInit(p+"fc2.bias", F16, seed, InitUniformFanIn, c.Hidden, c.Dim)
			x = g.Add(p+"fc2.add", x, b2)
		}
	}
	g.Output("y", x)
	return g.Build()
}
