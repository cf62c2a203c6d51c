package driver

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/internal/npy"
	"github.com/ipustack/ipustack/internal/safetensors"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/x448/float16"
)

// User data: the host tensors a run takes from the user's files instead of
// the seeded generator (graph/data.go). A package is code: its bindings
// name graph nodes (x, block0.fc1.weight, ...) whose shapes its recipe
// fixes, so any data of those shapes runs on it. This file maps the
// user's files onto those nodes: a safetensors checkpoint with Hugging Face
// names (PyTorch Linear, out x in) onto the MLP's parameters (in x out) or
// the encoder layer's (already Hugging Face names and shapes), and an .npy
// array onto the input.

// Tensor is one host tensor a workload binds, as `ipu inspect` lists it.
type Tensor struct {
	Node  string // graph node (binding) name
	Role  string // "input", "weight" or "output"
	DType string // device dtype
	Shape []int  // the graph's shape (in x out for weights)
	// Checkpoint is the tensor's name in a Hugging Face checkpoint, after
	// --weights-prefix ("" for tensors not read from one), and
	// CheckpointShape its shape there (out x in).
	Checkpoint      string
	CheckpointShape []int
}

// Tensors lists the host tensors of the recipe's workload: inputs, then
// parameters, then outputs, in graph order.
func Tensors(r Recipe) ([]Tensor, error) {
	g, err := graph.Preset(r.Workload, r.Flags)
	if err != nil {
		return nil, err
	}
	var out []Tensor
	for _, n := range g.Inputs() {
		out = append(out, Tensor{Node: n.Name, Role: "input", DType: n.DType.String(), Shape: slices.Clone([]int(n.Shape))})
	}
	where, _ := checkpointOf(g, r)
	for _, n := range g.Parameters() {
		t := Tensor{Node: n.Name, Role: "weight", DType: n.DType.String(), Shape: slices.Clone([]int(n.Shape))}
		if where != nil {
			c := where(n)
			t.Checkpoint, t.CheckpointShape = c.name, c.shape
		}
		out = append(out, t)
	}
	for _, o := range g.Outputs() {
		out = append(out, Tensor{Node: o.Name, Role: "output", DType: o.Node.DType.String(), Shape: slices.Clone([]int(o.Node.Shape))})
	}
	return out, nil
}

// isMLP reports whether g is the MLP preset (its parameters are named
// block<i>.fc<1|2>.<weight|bias>).
func isMLP(g *graph.Graph) bool {
	ps := g.Parameters()
	for _, p := range ps {
		if _, _, ok := mlpParam(p.Name); !ok {
			return false
		}
	}
	return len(ps) > 0
}

// mlpParam splits "block3.fc1.weight" into block 3 and "fc1.weight".
func mlpParam(name string) (block int, rest string, ok bool) {
	b, rest, ok := strings.Cut(name, ".")
	if !ok || !strings.HasPrefix(b, "block") {
		return 0, "", false
	}
	if _, err := fmt.Sscanf(b, "block%d", &block); err != nil {
		return 0, "", false
	}
	switch rest {
	case "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias":
		return block, rest, true
	}
	return 0, "", false
}

// checkpointTensor is where a parameter is in a Hugging Face checkpoint,
// relative to --weights-prefix: its name and its shape there, whether the
// graph holds it transposed (the MLP's weights, in x out), and another name
// to try when the first is absent ("" for none).
type checkpointTensor struct {
	name, alt  string
	shape      []int
	transposed bool
}

// checkpointOf maps the parameters of the recipe's graph to their
// checkpoint tensors; ok false for a workload without checkpoint names
// (the single GEMM).
//
// The encoder layer's parameters already have Hugging Face names and
// shapes under "<layer>." (graph.EncoderLayerGraph): layer i reads
// prefix + "<i>.layer_norm1.weight" and so on, so that --weights-prefix
// vision_model.encoder.layers. reads layers 0..N-1. One layer also reads a
// prefix that names the layer itself (vision_model.encoder.layers.7.):
// its tensors are then tried without the index.
func checkpointOf(g *graph.Graph, r Recipe) (func(*graph.Node) checkpointTensor, bool) {
	if c, _ := graph.CanonicalPreset(r.Workload); c == "siglip-encoder-layer" {
		layers := 1
		if r.Flags.Encoder != nil {
			layers = r.Flags.Encoder.Layers
		}
		return func(n *graph.Node) checkpointTensor {
			c := checkpointTensor{name: n.Name, shape: slices.Clone([]int(n.Shape))}
			if _, rest, ok := strings.Cut(n.Name, "."); ok && layers == 1 {
				c.alt = rest
			}
			return c
		}, true
	}
	if !isMLP(g) {
		return nil, false
	}
	return func(n *graph.Node) checkpointTensor {
		name, shape := checkpointName(n, r.Flags.MLP.Blocks)
		return checkpointTensor{name: name, shape: shape, transposed: len(shape) == 2}
	}, true
}

// checkpointName is a parameter's Hugging Face name relative to
// --weights-prefix and its shape there: "fc1.weight" for a one-block MLP,
// "<i>.mlp.fc1.weight" for block i of a multi-block one (the prefix then
// names the layer list, e.g. vision_model.encoder.layers.). Weights are
// stored out x in, the transpose of the graph's.
func checkpointName(n *graph.Node, blocks int) (string, []int) {
	b, rest, _ := mlpParam(n.Name)
	name := rest
	if blocks > 1 {
		name = fmt.Sprintf("%d.mlp.%s", b, rest)
	}
	shape := slices.Clone([]int(n.Shape))
	if len(shape) == 2 {
		shape = []int{shape[1], shape[0]}
	}
	return name, shape
}

// Rounding counts what rounding to the device precision did to a tensor.
type Rounding struct {
	Overflow, Flushed int // values beyond f16's range; nonzero values that became zero
	NonFinite         int // NaN or Inf in the file
}

// toDevice rounds v in place to f16 (the device precision) and counts the
// values it cannot hold.
func toDevice(v []float32) Rounding {
	var r Rounding
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			r.NonFinite++
			continue
		}
		h := float16.Fromfloat32(x).Float32()
		switch {
		case math.IsInf(float64(h), 0):
			r.Overflow++
		case h == 0 && x != 0:
			r.Flushed++
		}
		v[i] = h
	}
	return r
}

// report warns about (or, strict, refuses) a tensor's rounding losses.
func (r Rounding) report(log *slog.Logger, file, tensor string, strict bool) error {
	if r.NonFinite > 0 {
		return fmt.Errorf("%s: tensor %q: %d values are NaN or Inf", file, tensor, r.NonFinite)
	}
	if r.Overflow == 0 && r.Flushed == 0 {
		return nil
	}
	if strict {
		return fmt.Errorf("%s: tensor %q: %d values overflow f16 (|x| > 65504) and %d nonzero values flush to zero (--strict)",
			file, tensor, r.Overflow, r.Flushed)
	}
	log.Warn("values changed by rounding to the device's f16", "file", file, "tensor", tensor,
		"overflow", r.Overflow, "flushed_to_zero", r.Flushed)
	return nil
}

// LoadWeights reads the workload's parameters (the MLP's or the encoder
// layer's) from the safetensors checkpoint path, under prefix, into data
// (graph node name -> values in the graph's shape, rounded to f16). Every
// parameter must be there with its shape; a checkpoint bias the MLP does
// not have is an error (dropping it would give a silently wrong answer).
func LoadWeights(r Recipe, path, prefix string, strict bool, log *slog.Logger, data map[string][]float32) error {
	if log == nil {
		log = slog.Default()
	}
	g, err := graph.Preset(r.Workload, r.Flags)
	if err != nil {
		return err
	}
	where, ok := checkpointOf(g, r)
	if !ok {
		return fmt.Errorf("--weights: workload %q has no checkpoint names; --weights reads the MLP's fc1/fc2 tensors and the encoder layer's", r.Workload)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return fmt.Errorf("--weights: %w", err)
	}
	defer f.Close()
	mlp := isMLP(g)
	blocks := r.Flags.MLP.Blocks
	for _, n := range g.Parameters() {
		c := where(n)
		rel, want := c.name, c.shape
		name := prefix + rel
		t := f.Tensor(name)
		if t == nil && c.alt != "" && f.Tensor(prefix+c.alt) != nil {
			name = prefix + c.alt
			t = f.Tensor(name)
		}
		if t == nil {
			var hint string
			if near := f.Names(prefix, 8); mlp && blocks == 1 && f.Tensor(prefix+"0.mlp."+rel) != nil {
				hint = fmt.Sprintf("; %q exists: one block reads one layer, e.g. --weights-prefix %s0.mlp. (or build with --blocks N to read layers 0..N-1)", prefix+"0.mlp."+rel, prefix)
			} else if len(near) > 0 {
				hint = fmt.Sprintf("; tensors under %q: %s", prefix, strings.Join(near, ", "))
			} else {
				hint = fmt.Sprintf("; the file has %d tensors, none under %q", len(f.Tensors()), prefix)
			}
			tried := fmt.Sprintf("%q", name)
			if c.alt != "" {
				tried += fmt.Sprintf(" or %q", prefix+c.alt)
			}
			return fmt.Errorf("%s: no tensor %s (%s %v, for %s)%s", path, tried, "F32/F16/BF16", want, n.Name, hint)
		}
		if !slices.Equal(t.Shape, want) {
			return fmt.Errorf("%s: tensor %q: shape %v, the workload needs %v (out x in; workload %s)", path, name, t.Shape, want, n.Name)
		}
		v, err := f.Float32s(t)
		if err != nil {
			return fmt.Errorf("%s: tensor %q: dtype %s, want F32, F16 or BF16", path, name, t.DType)
		}
		if c.transposed {
			v = transpose(v, want[0], want[1])
		}
		if err := toDevice(v).report(log, path, name, strict); err != nil {
			return err
		}
		data[n.Name] = v
	}
	// Biases in the checkpoint the workload would ignore.
	if mlp && !r.Flags.MLP.Biases {
		for b := 0; b < blocks; b++ {
			for _, rest := range []string{"fc1.bias", "fc2.bias"} {
				rel := rest
				if blocks > 1 {
					rel = fmt.Sprintf("%d.mlp.%s", b, rest)
				}
				if f.Tensor(prefix+rel) != nil {
					return fmt.Errorf("%s: has %q but the workload has no biases: build with --biases", path, prefix+rel)
				}
			}
		}
	}
	return nil
}

// LoadInput reads the .npy input path for the workload's input node into
// data. The array is [rows, dim] or, for a batch, [batch, tokens, dim]
// (rows = batch*tokens); it returns the array's shape, which the output
// then takes.
func LoadInput(r Recipe, path string, strict bool, log *slog.Logger, data map[string][]float32) ([]int, error) {
	if log == nil {
		log = slog.Default()
	}
	g, err := graph.Preset(r.Workload, r.Flags)
	if err != nil {
		return nil, err
	}
	ins := g.Inputs()
	if len(ins) != 1 {
		return nil, fmt.Errorf("--input: workload %q has %d inputs, want 1", r.Workload, len(ins))
	}
	in := ins[0]
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--input: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--input: %w", err)
	}
	size := fi.Size()
	if !fi.Mode().IsRegular() {
		size = -1
	}
	a, err := npy.Read(f, size)
	if err != nil {
		return nil, fmt.Errorf("--input %s: %w", path, err)
	}
	dims := slices.Clone([]int(in.Shape))
	ok := slices.Equal(a.Shape, dims)
	if !ok && len(a.Shape) == 3 && len(dims) == 2 && a.Shape[2] == dims[1] && a.Shape[0]*a.Shape[1] == dims[0] {
		ok = isMLP(g) && a.Shape[0] == r.Flags.MLP.Batch
	}
	// The encoder layer's input is [batch, tokens, dim]; one batch item
	// may come as [tokens, dim].
	if !ok && len(a.Shape) == 2 && len(dims) == 3 && dims[0] == 1 {
		ok = slices.Equal(a.Shape, dims[1:])
	}
	if !ok {
		want := fmt.Sprint(dims)
		switch {
		case isMLP(g):
			c := r.Flags.MLP
			want = fmt.Sprintf("[%d %d] (tokens x dim) or [%d %d %d] (batch x tokens x dim)", c.Rows(), c.Dim, c.Batch, c.Tokens, c.Dim)
		case len(dims) == 3 && dims[0] == 1:
			want = fmt.Sprintf("%v (batch x tokens x dim) or %v (tokens x dim)", dims, dims[1:])
		case len(dims) == 3:
			want = fmt.Sprintf("%v (batch x tokens x dim)", dims)
		}
		return nil, fmt.Errorf("--input %s: shape %v (%s), the workload needs %s", path, a.Shape, a.DType, want)
	}
	v := a.Data
	if err := toDevice(v).report(log, path, in.Name, strict); err != nil {
		return nil, err
	}
	data[in.Name] = v
	return a.Shape, nil
}

// OutputShape is the shape an output of n rows x cols is written in: the
// input's shape's leading dimensions when the input was given, so a
// [batch, tokens, dim] input gives a [batch, tokens, dim] output.
func OutputShape(inShape []int, rows, cols int) []int {
	if len(inShape) == 3 && inShape[0]*inShape[1] == rows {
		return []int{inShape[0], inShape[1], cols}
	}
	return []int{rows, cols}
}

// transpose turns a row-major [rows][cols] matrix into [cols][rows].
func transpose(v []float32, rows, cols int) []float32 {
	out := make([]float32, len(v))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[j*rows+i] = v[i*cols+j]
		}
	}
	return out
}

// recordTensorShapes records in every binding of pkg the shape of its
// graph node, so the package says which tensors it binds (ipu inspect)
// and a run can check user data against it without re-deriving anything.
func recordTensorShapes(pkg *ipuexe.Package, g *graph.Graph) {
	for _, bs := range [][]ipuexe.Binding{pkg.Inputs, pkg.Weights, pkg.Outputs} {
		for i := range bs {
			n := g.Node(bs[i].Name)
			if n == nil {
				for _, o := range g.Outputs() {
					if o.Name == bs[i].Name {
						n = o.Node
					}
				}
			}
			if n == nil {
				continue
			}
			bs[i].TensorShape = make([]uint32, len(n.Shape))
			for j, d := range n.Shape {
				bs[i].TensorShape[j] = uint32(d)
			}
		}
	}
}

// CheckTensorShapes checks a package's recorded tensor shapes (if any)
// against the recipe's graph: a package whose bindings disagree with the
// workload its recipe names cannot take user data by those shapes.
func CheckTensorShapes(pkg *ipuexe.Package, r Recipe) error {
	ts, err := Tensors(r)
	if err != nil {
		return err
	}
	want := map[string][]int{}
	for _, t := range ts {
		want[t.Node] = t.Shape
	}
	for _, bs := range [][]ipuexe.Binding{pkg.Inputs, pkg.Weights, pkg.Outputs} {
		for _, b := range bs {
			if len(b.TensorShape) == 0 {
				continue
			}
			w, ok := want[b.Name]
			got := make([]int, len(b.TensorShape))
			for i, d := range b.TensorShape {
				got[i] = int(d)
			}
			if !ok || !slices.Equal(got, w) {
				return fmt.Errorf("package binds %q as %v, its recipe's workload has %v: the package is damaged or from another compiler version", b.Name, got, w)
			}
		}
	}
	return nil
}
