package graph

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// EncoderConfig is the shape of a stack of SigLIP vision encoder layers (the future flags
// --batch --tokens --dim --heads --hidden --layers) and its precision.
type EncoderConfig struct {
	Batch, Tokens, Dim, Heads, Hidden, Layers int
	// DType is the element type of the activations, weights and biases (F16 for the device; F32
	// for an f32 reference graph). Like every DType its zero value is invalid.
	DType DType
	// Acc is the accumulation type of every matrix product (F16: the AMP's half partials, as the
	// MLP preset; F32).
	Acc DType
}

// LayerNormEps is SigLIP's layer_norm_eps.
const LayerNormEps = 1e-6

// DefaultEncoder is one SigLIP so400m vision encoder layer: batch 1, 729 tokens, d=1152, 16
// heads of 72, h=4304, f16 values and accumulation.
var DefaultEncoder = EncoderConfig{Batch: 1, Tokens: 729, Dim: 1152, Heads: 16, Hidden: 4304, Layers: 1, DType: F16, Acc: F16}

// Name is the workload name used in logs and metrics, after the MLP's:
// siglip-encoder-layer-f16-b1-t729-d1152-a16-h4304-l1 (a: attention heads, l: layers; "-f32"
// names f32 values, "-acc32" f32 accumulation).
func (c EncoderConfig) Name() string {
	s := fmt.Sprintf("siglip-encoder-layer-%v-b%d-t%d-d%d-a%d-h%d-l%d", c.DType, c.Batch, c.Tokens, c.Dim, c.Heads, c.Hidden, c.Layers)
	if c.Acc != c.DType {
		s += "-acc" + strings.TrimPrefix(c.Acc.String(), "f")
	}
	return s
}

// HeadDim is Dim/Heads.
func (c EncoderConfig) HeadDim() int { return c.Dim / c.Heads }

// Validate checks every flag, naming the flag in each error.
func (c EncoderConfig) Validate() error {
	var errs []error
	errs = checkFlag(errs, "batch", c.Batch, MaxBatch)
	errs = checkFlag(errs, "tokens", c.Tokens, MaxDim)
	errs = checkFlag(errs, "dim", c.Dim, MaxDim)
	errs = checkFlag(errs, "heads", c.Heads, MaxDim)
	errs = checkFlag(errs, "hidden", c.Hidden, MaxDim)
	errs = checkFlag(errs, "layers", c.Layers, MaxBlocks)
	if c.Heads > 0 && c.Dim > 0 && c.Dim%c.Heads != 0 {
		errs = append(errs, fmt.Errorf("--heads %d does not divide --dim %d", c.Heads, c.Dim))
	}
	if !c.DType.valid() {
		errs = append(errs, fmt.Errorf("encoder dtype must be f16 or f32, got %v", c.DType))
	}
	if !c.Acc.valid() {
		errs = append(errs, fmt.Errorf("encoder accumulation type must be f16 or f32, got %v", c.Acc))
	}
	if len(errs) == 0 {
		errs = checkElements(errs, "--batch x --tokens x --dim input", c.Batch*c.Tokens, c.Dim)
		errs = checkElements(errs, "--batch x --tokens x --hidden activation", c.Batch*c.Tokens, c.Hidden)
		errs = checkElements(errs, "--dim x --hidden weight", c.Dim, c.Hidden)
		// The scores can exceed int64 (2^12 x 2^20 x 2^20 x 2^20), so they are counted in float64.
		if s := float64(c.Batch) * float64(c.Heads) * float64(c.Tokens) * float64(c.Tokens); s > MaxElements {
			errs = append(errs, fmt.Errorf("--batch x --heads x --tokens x --tokens attention scores %v has %.4g elements, more than the limit %d",
				Shape{c.Batch, c.Heads, c.Tokens, c.Tokens}, s, int64(MaxElements)))
		}
	}
	return errors.Join(errs...)
}

// EncoderLayerGraph is c.Layers Hugging Face SiglipEncoderLayers, each layer's output the next
// one's input:
//
//	h = layer_norm1(x)
//	q, k, v = h Wq^T + bq, h Wk^T + bk, h Wv^T + bv                    [batch, tokens, dim]
//	q, k, v split into heads                                           [batch, heads, tokens, head_dim]
//	a = softmax(q k^T / sqrt(head_dim)) v, heads merged                [batch, tokens, dim]
//	y = x + a Wo^T + bo
//	out = y + fc2(gelu_tanh(fc1(layer_norm2(y))))                      fcN(z) = z WN^T + bN
//
// The input is "x" [batch, tokens, dim], the output "y" of the same shape. The parameters of
// layer i have the Hugging Face names and shapes under the prefix "i." (so that
// "vision_model.encoder.layers." + name is the checkpoint key): "0.layer_norm1.weight" and
// ".bias" [dim], "0.self_attn.q_proj.weight" [dim, dim] (a Linear weight is [out, in]; the Gemm
// reads it with TransB rather than storing it transposed) and ".bias" [dim], the same for k_proj,
// v_proj and out_proj, "0.layer_norm2.weight" / ".bias", "0.mlp.fc1.weight" [hidden, dim] /
// ".bias" [hidden], "0.mlp.fc2.weight" [dim, hidden] / ".bias" [dim]. Linear weights and biases
// are drawn like torch.nn.Linear, uniform in ±1/sqrt(in); layer-norm scales uniform in
// 1±1/sqrt(dim), their biases in ±1/sqrt(dim). The operators are named after the modules:
// "0.layer_norm1", "0.self_attn.q_proj" (the Gemm) and "0.self_attn.q_proj.add" (its bias),
// "0.self_attn.q_heads" (head split, see SplitHeads), "0.self_attn.scores", "0.self_attn.softmax",
// "0.self_attn.context" (times v), "0.self_attn.merge" (MergeHeads), "0.self_attn.out_proj",
// "0.residual1", "0.layer_norm2", "0.mlp.fc1", "0.mlp.gelu", "0.mlp.fc2", "0.residual2".
func EncoderLayerGraph(c EncoderConfig, seed uint64) (*Graph, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	g := New()
	g.SetSeed(seed)
	dt := c.DType
	attrs := GemmAttrs{TransB: true, Out: dt, Acc: c.Acc}
	x := g.Input("x", dt, c.Batch, c.Tokens, c.Dim)
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("%d.", l)
		// linear is torch.nn.Linear(in, out): z W^T + b with W [out, in], both drawn with fan-in in.
		linear := func(name string, z *Node, in, out int) *Node {
			w := g.ParameterInit(p+name+".weight", dt, seed, InitUniformFanIn, in, out, in)
			b := g.ParameterInit(p+name+".bias", dt, seed, InitUniformFanIn, in, out)
			return g.Add(p+name+".add", g.Gemm(p+name, z, w, attrs), b)
		}
		layerNorm := func(name string, z *Node) *Node {
			s := g.ParameterInit(p+name+".weight", dt, seed, InitAroundOne, c.Dim, c.Dim)
			b := g.ParameterInit(p+name+".bias", dt, seed, InitUniformFanIn, c.Dim, c.Dim)
			return g.LayerNorm(p+name, z, s, b, LayerNormEps)
		}
		h := layerNorm("layer_norm1", x)
		q := g.SplitHeads(p+"self_attn.q_heads", linear("self_attn.q_proj", h, c.Dim, c.Dim), c.Heads)
		k := g.SplitHeads(p+"self_attn.k_heads", linear("self_attn.k_proj", h, c.Dim, c.Dim), c.Heads)
		v := g.SplitHeads(p+"self_attn.v_heads", linear("self_attn.v_proj", h, c.Dim, c.Dim), c.Heads)
		s := g.Gemm(p+"self_attn.scores", q, k, attrs) // q k^T: k read transposed
		pr := g.Softmax(p+"self_attn.softmax", s, 1/math.Sqrt(float64(c.HeadDim())))
		a := g.Gemm(p+"self_attn.context", pr, v, GemmAttrs{Out: dt, Acc: c.Acc})
		a = g.MergeHeads(p+"self_attn.merge", a)
		y := g.Add(p+"residual1", x, linear("self_attn.out_proj", a, c.Dim, c.Dim))
		m := layerNorm("layer_norm2", y)
		m = g.Gelu(p+"mlp.gelu", linear("mlp.fc1", m, c.Dim, c.Hidden), GeluTanh)
		x = g.Add(p+"residual2", y, linear("mlp.fc2", m, c.Hidden, c.Dim))
	}
	g.Output("y", x)
	return g.Build()
}
