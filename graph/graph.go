// Package graph is ipustack's ComputeGraph: a shaped SSA graph of the operations a workload
// performs (Input, Parameter, Gemm, Gelu, Add, Cast, LayerNorm, Softmax, Reshape, Transpose), the
// workload presets (gemm, siglip-mlp-f16), the SigLIP encoder layer (EncoderLayerGraph) and the
// seeded generator of their input and weight data.
//
// Every node produces exactly one value, so a *Node is also the handle of its value. Nodes can
// only be built from nodes that already exist, which makes cycles impossible by construction and
// creation order a topological order. Builder methods never panic and never return nil: a
// mistake is recorded (naming the node and what is wrong) and returned by Validate or Build,
// so a whole graph can be written without checking an error after every line.
package graph

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// DType is the element type of a value.
type DType uint8

// The element types. The zero DType is invalid, so a forgotten field is caught by validation
// rather than silently meaning f16.
const (
	InvalidDType DType = iota
	F16
	F32
)

// String returns "f16" or "f32".
func (d DType) String() string {
	switch d {
	case F16:
		return "f16"
	case F32:
		return "f32"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size is the size of one element in bytes (0 for an invalid type).
func (d DType) Size() int {
	switch d {
	case F16:
		return 2
	case F32:
		return 4
	}
	return 0
}

func (d DType) valid() bool { return d == F16 || d == F32 }

// Shape is a list of dimensions, outermost first (row-major).
type Shape []int

// Elements is the number of elements (1 for a scalar, rank 0).
func (s Shape) Elements() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Equal reports whether two shapes are identical.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// String formats a shape as [729 1152].
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// Op is the kind of a node.
type Op uint8

// The operations.
const (
	OpInvalid   Op = iota
	OpInput        // host-provided tensor
	OpParameter    // weights and biases: constant data generated from a seed
	OpGemm         // batched matrix product
	OpGelu         // GELU activation
	OpAdd          // element-wise add with NumPy broadcasting
	OpCast         // element type conversion
	OpLayerNorm    // layer normalisation over the last axis, learned scale and bias
	OpSoftmax      // softmax over the last axis
	OpReshape      // same elements, new shape (row-major order unchanged)
	OpTranspose    // axis permutation
)

var opNames = [...]string{"invalid", "input", "parameter", "gemm", "gelu", "add", "cast",
	"layernorm", "softmax", "reshape", "transpose"}

// String returns the op's lower-case name.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// GeluApprox selects the GELU formula.
type GeluApprox uint8

// The GELU forms. Tanh is the default (zero value) because it is what the SigLIP checkpoints
// were trained with (gelu_pytorch_tanh).
const (
	GeluTanh GeluApprox = iota // 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3)))
	GeluErf                    // 0.5x(1+erf(x/sqrt 2))
)

// String returns "tanh" or "erf".
func (a GeluApprox) String() string {
	switch a {
	case GeluTanh:
		return "tanh"
	case GeluErf:
		return "erf"
	}
	return fmt.Sprintf("gelu(%d)", uint8(a))
}

// Init says how a Parameter's or Input's data is generated (see Data).
type Init uint8

// The generators.
const (
	// InitUniformUnit: uniform in [-1, 1), the distribution of the inputs.
	InitUniformUnit Init = iota
	// InitUniformFanIn: uniform in [-1/sqrt(fanIn), 1/sqrt(fanIn)), the usual linear-layer
	// initialisation, so that activations keep their magnitude from layer to layer.
	InitUniformFanIn
	// InitZero: all zeros.
	InitZero
	// InitAroundOne: uniform in [1-1/sqrt(fanIn), 1+1/sqrt(fanIn)), for layer-norm scales: near
	// the usual initial 1, but not exactly 1, so a test sees a scale that is dropped or misplaced.
	InitAroundOne
)

// GemmAttrs are the attributes of a Gemm. The zero value means: no transposes, output in the
// element type of A, f32 accumulation.
type GemmAttrs struct {
	TransA, TransB bool  // use the transpose of the last two axes of A / B
	Out            DType // output element type (default: A's)
	Acc            DType // accumulation type (default f32)
}

// Node is one operation and the value it produces.
type Node struct {
	ID     int    // position in creation (= topological) order
	Name   string // provenance, unique in the graph, e.g. "block0.fc1"
	Op     Op
	DType  DType
	Shape  Shape
	Inputs []*Node

	// Input and Parameter data.
	Seed  uint64
	Init  Init
	FanIn int // for InitUniformFanIn

	// Gemm.
	TransA, TransB bool
	Acc            DType

	// Gelu.
	Approx GeluApprox

	// LayerNorm: the epsilon added to the variance.
	Eps float64
	// Softmax: the factor applied to the input before the softmax, softmax(Scale*x).
	Scale float64
	// Transpose: output axis i is input axis Perm[i].
	Perm []int

	g   *Graph
	bad bool // the node could not be built; later uses do not report again
}

// Output is a named graph output.
type Output struct {
	Name string
	Node *Node
}

// Graph is a ComputeGraph under construction or built.
type Graph struct {
	nodes   []*Node
	byName  map[string]*Node
	outputs []Output
	errs    []error
	seed    uint64
}

// New returns an empty graph whose Inputs are seeded with 0 (see SetSeed).
func New() *Graph {
	return &Graph{byName: map[string]*Node{}}
}

// SetSeed sets the seed of the Inputs created after it (Parameters take theirs explicitly).
func (g *Graph) SetSeed(seed uint64) { g.seed = seed }

// Nodes returns the nodes in topological (creation) order. The slice must not be modified.
func (g *Graph) Nodes() []*Node { return g.nodes }

// Topo returns the nodes in a topological order: creation order, since a node can only be
// built from existing nodes.
func (g *Graph) Topo() []*Node { return g.nodes }

// Outputs returns the named outputs in the order they were declared.
func (g *Graph) Outputs() []Output { return g.outputs }

// Node returns the node with the given name, or nil.
func (g *Graph) Node(name string) *Node { return g.byName[name] }

// Inputs returns the Input nodes in creation order.
func (g *Graph) Inputs() []*Node { return g.byOp(OpInput) }

// Parameters returns the Parameter nodes in creation order.
func (g *Graph) Parameters() []*Node { return g.byOp(OpParameter) }

func (g *Graph) byOp(op Op) []*Node {
	var r []*Node
	for _, n := range g.nodes {
		if n.Op == op {
			r = append(r, n)
		}
	}
	return r
}

func (g *Graph) errorf(format string, args ...any) {
	g.errs = append(g.errs, fmt.Errorf(format, args...))
}

// add registers a node, checking its name. It always returns the node, so builders can chain.
func (g *Graph) add(n *Node) *Node {
	n.g = g
	n.ID = len(g.nodes)
	switch {
	case n.Name == "":
		g.errorf("%s node #%d: empty name", n.Op, n.ID)
	case g.byName[n.Name] != nil:
		prev := g.byName[n.Name]
		g.errorf("%s %q: duplicate name (already used by %s node #%d)", n.Op, n.Name, prev.Op, prev.ID)
	default:
		g.byName[n.Name] = n
	}
	g.nodes = append(g.nodes, n)
	return n
}

// checkOperands reports nil or foreign operands (dangling values) and tells whether the node can
// be shaped: false also when an operand is itself bad, which was reported already.
func (g *Graph) checkOperands(op Op, name string, ins ...*Node) bool {
	ok := true
	for i, in := range ins {
		switch {
		case in == nil:
			g.errorf("%s %q: operand %d is nil (dangling value)", op, name, i)
			ok = false
		case in.g != g:
			g.errorf("%s %q: operand %d (%q) belongs to another graph (dangling value)", op, name, i, in.Name)
			ok = false
		case in.bad:
			ok = false
		}
	}
	return ok
}

func (g *Graph) checkDims(op Op, name string, dims []int) bool {
	for i, d := range dims {
		if d <= 0 {
			g.errorf("%s %q: dimension %d of shape %v must be positive, got %d", op, name, i, Shape(dims), d)
			return false
		}
	}
	return true
}

// Input adds a host-provided tensor. Its generated data (Data) is uniform in [-1, 1) with the
// graph's current seed.
func (g *Graph) Input(name string, dt DType, dims ...int) *Node {
	n := &Node{Name: name, Op: OpInput, DType: dt, Shape: append(Shape(nil), dims...), Seed: g.seed, Init: InitUniformUnit}
	if !dt.valid() {
		g.errorf("input %q: invalid dtype %v", name, dt)
		n.bad = true
	}
	if !g.checkDims(OpInput, name, dims) {
		n.bad = true
	}
	return g.add(n)
}

// Parameter adds constant data generated from seed: uniform in ±1/sqrt(fanIn), where fanIn is
// the first dimension (the K of a [k][n] weight; for a rank-1 bias, its length). Use
// ParameterInit for another distribution.
func (g *Graph) Parameter(name string, dt DType, seed uint64, dims ...int) *Node {
	fan := 1
	if len(dims) > 0 {
		fan = dims[0]
	}
	return g.ParameterInit(name, dt, seed, InitUniformFanIn, fan, dims...)
}

// ParameterInit adds constant data with an explicit generator and fan-in.
func (g *Graph) ParameterInit(name string, dt DType, seed uint64, init Init, fanIn int, dims ...int) *Node {
	n := &Node{Name: name, Op: OpParameter, DType: dt, Shape: append(Shape(nil), dims...), Seed: seed, Init: init, FanIn: fanIn}
	if !dt.valid() {
		g.errorf("parameter %q: invalid dtype %v", name, dt)
		n.bad = true
	}
	if !g.checkDims(OpParameter, name, dims) {
		n.bad = true
	}
	if (init == InitUniformFanIn || init == InitAroundOne) && fanIn <= 0 {
		g.errorf("parameter %q: fan-in must be positive, got %d", name, fanIn)
		n.bad = true
	}
	return g.add(n)
}

// Gemm adds C = op(A) x op(B) over the last two axes; leading (batch) axes broadcast NumPy-style.
// A is [..., m, k] ([..., k, m] with TransA), B is [..., k, n] ([..., n, k] with TransB), C is
// [broadcast(...), m, n].
func (g *Graph) Gemm(name string, a, b *Node, attrs GemmAttrs) *Node {
	n := &Node{Name: name, Op: OpGemm, Inputs: []*Node{a, b}, TransA: attrs.TransA, TransB: attrs.TransB, DType: attrs.Out, Acc: attrs.Acc}
	if n.Acc == InvalidDType {
		n.Acc = F32
	}
	if !g.checkOperands(OpGemm, name, a, b) {
		n.bad = true
		return g.add(n)
	}
	if n.DType == InvalidDType {
		n.DType = a.DType
	}
	switch {
	case a.DType != b.DType:
		g.errorf("gemm %q: dtype mismatch: A %q is %v, B %q is %v", name, a.Name, a.DType, b.Name, b.DType)
		n.bad = true
	case !n.DType.valid():
		g.errorf("gemm %q: invalid output dtype %v", name, n.DType)
		n.bad = true
	case !n.Acc.valid():
		g.errorf("gemm %q: invalid accumulation dtype %v", name, n.Acc)
		n.bad = true
	case len(a.Shape) < 2 || len(b.Shape) < 2:
		g.errorf("gemm %q: operands need rank >= 2, got A %q %v and B %q %v", name, a.Name, a.Shape, b.Name, b.Shape)
		n.bad = true
	}
	if n.bad {
		return g.add(n)
	}
	m, ka := lastTwo(a.Shape, attrs.TransA)
	kb, nn := lastTwo(b.Shape, attrs.TransB)
	if ka != kb {
		g.errorf("gemm %q: inner dimensions differ: A %q %v%s has k=%d, B %q %v%s has k=%d",
			name, a.Name, a.Shape, tflag(attrs.TransA), ka, b.Name, b.Shape, tflag(attrs.TransB), kb)
		n.bad = true
		return g.add(n)
	}
	batch, err := Broadcast(a.Shape[:len(a.Shape)-2], b.Shape[:len(b.Shape)-2])
	if err != nil {
		g.errorf("gemm %q: batch axes of A %q %v and B %q %v: %v", name, a.Name, a.Shape, b.Name, b.Shape, err)
		n.bad = true
		return g.add(n)
	}
	n.Shape = append(batch, m, nn)
	return g.add(n)
}

func tflag(t bool) string {
	if t {
		return " (transposed)"
	}
	return ""
}

// lastTwo returns the (rows, cols) of the matrix view of the last two axes after an optional transpose.
func lastTwo(s Shape, trans bool) (int, int) {
	r, c := s[len(s)-2], s[len(s)-1]
	if trans {
		return c, r
	}
	return r, c
}

// GemmDims returns the batch count and m, k, n of a Gemm node.
func (n *Node) GemmDims() (batch, m, k, nn int) {
	if n.Op != OpGemm || n.bad {
		return 0, 0, 0, 0
	}
	m, k = lastTwo(n.Inputs[0].Shape, n.TransA)
	_, nn = lastTwo(n.Inputs[1].Shape, n.TransB)
	return n.Shape[:len(n.Shape)-2].Elements(), m, k, nn
}

// Flops is the useful floating-point work of a Gemm, 2*batch*m*n*k (0 for other ops: the useful
// work of a workload is its matrix products; layer norm, softmax, GELU and adds are overhead).
func (n *Node) Flops() int64 {
	b, m, k, nn := n.GemmDims()
	return 2 * int64(b) * int64(m) * int64(k) * int64(nn)
}

// Gelu adds the GELU activation with the given approximation.
func (g *Graph) Gelu(name string, x *Node, approx GeluApprox) *Node {
	n := &Node{Name: name, Op: OpGelu, Inputs: []*Node{x}, Approx: approx}
	if !g.checkOperands(OpGelu, name, x) {
		n.bad = true
		return g.add(n)
	}
	n.DType, n.Shape = x.DType, append(Shape(nil), x.Shape...)
	if approx != GeluTanh && approx != GeluErf {
		g.errorf("gelu %q: unknown approximation %v", name, approx)
		n.bad = true
	}
	return g.add(n)
}

// Add adds a + b with NumPy broadcasting (e.g. a bias [h] onto [tokens][h]). Both operands must
// have the same dtype: a mixed add needs an explicit Cast, so precision is a visible choice.
func (g *Graph) Add(name string, a, b *Node) *Node {
	n := &Node{Name: name, Op: OpAdd, Inputs: []*Node{a, b}}
	if !g.checkOperands(OpAdd, name, a, b) {
		n.bad = true
		return g.add(n)
	}
	n.DType = a.DType
	if a.DType != b.DType {
		g.errorf("add %q: dtype mismatch: %q is %v, %q is %v", name, a.Name, a.DType, b.Name, b.DType)
		n.bad = true
		return g.add(n)
	}
	s, err := Broadcast(a.Shape, b.Shape)
	if err != nil {
		g.errorf("add %q: shapes %v (%q) and %v (%q) do not broadcast: %v", name, a.Shape, a.Name, b.Shape, b.Name, err)
		n.bad = true
		return g.add(n)
	}
	n.Shape = s
	return g.add(n)
}

// Cast adds a conversion of x to dt.
func (g *Graph) Cast(name string, x *Node, dt DType) *Node {
	n := &Node{Name: name, Op: OpCast, Inputs: []*Node{x}, DType: dt}
	if !g.checkOperands(OpCast, name, x) {
		n.bad = true
		return g.add(n)
	}
	n.Shape = append(Shape(nil), x.Shape...)
	if !dt.valid() {
		g.errorf("cast %q: invalid target dtype %v", name, dt)
		n.bad = true
	}
	return g.add(n)
}

// LayerNorm adds y = (x - mean) / sqrt(var + eps) * scale + bias over the last axis of x, with the
// row's mean and biased variance (divided by the width) computed in f32 whatever x's dtype (the
// Hugging Face nn.LayerNorm). scale and bias are rank 1, as wide as x's last axis, of x's dtype;
// eps must be positive and finite (SigLIP: 1e-6). y has x's shape and dtype.
func (g *Graph) LayerNorm(name string, x, scale, bias *Node, eps float64) *Node {
	n := &Node{Name: name, Op: OpLayerNorm, Inputs: []*Node{x, scale, bias}, Eps: eps}
	if !g.checkOperands(OpLayerNorm, name, x, scale, bias) {
		n.bad = true
		return g.add(n)
	}
	n.DType, n.Shape = x.DType, append(Shape(nil), x.Shape...)
	switch {
	case len(x.Shape) == 0:
		g.errorf("layernorm %q: input %q is a scalar; it needs an axis to normalise over", name, x.Name)
		n.bad = true
	case scale.DType != x.DType || bias.DType != x.DType:
		g.errorf("layernorm %q: dtype mismatch: input %q is %v, scale %q is %v, bias %q is %v",
			name, x.Name, x.DType, scale.Name, scale.DType, bias.Name, bias.DType)
		n.bad = true
	case !positiveFinite(eps):
		g.errorf("layernorm %q: eps must be positive and finite, got %g", name, eps)
		n.bad = true
	}
	if n.bad {
		return g.add(n)
	}
	w := x.Shape[len(x.Shape)-1]
	for _, p := range []struct {
		role string
		v    *Node
	}{{"scale", scale}, {"bias", bias}} {
		if len(p.v.Shape) != 1 || p.v.Shape[0] != w {
			g.errorf("layernorm %q: %s %q is %v, want [%d] (the last axis of %q %v)", name, p.role, p.v.Name, p.v.Shape, w, x.Name, x.Shape)
			n.bad = true
		}
	}
	return g.add(n)
}

// Softmax adds y = softmax(scale * x) over the last axis of x: exp(scale*x_i - m) / sum_j
// exp(scale*x_j - m) with m the row's maximum of scale*x, exponentials and sum in f32 whatever
// x's dtype. scale must be positive and finite (attention: 1/sqrt(head_dim)). y has x's shape and
// dtype.
func (g *Graph) Softmax(name string, x *Node, scale float64) *Node {
	n := &Node{Name: name, Op: OpSoftmax, Inputs: []*Node{x}, Scale: scale}
	if !g.checkOperands(OpSoftmax, name, x) {
		n.bad = true
		return g.add(n)
	}
	n.DType, n.Shape = x.DType, append(Shape(nil), x.Shape...)
	switch {
	case len(x.Shape) == 0:
		g.errorf("softmax %q: input %q is a scalar; it needs an axis to normalise over", name, x.Name)
		n.bad = true
	case !positiveFinite(scale):
		g.errorf("softmax %q: scale must be positive and finite, got %g", name, scale)
		n.bad = true
	}
	return g.add(n)
}

// The head split and merge of attention are a Reshape plus a Transpose rather than dedicated
// split/merge ops:
//
//	split: [batch, tokens, dim] -reshape-> [batch, tokens, heads, dim/heads] -transpose(0 2 1 3)-> [batch, heads, tokens, dim/heads]
//	merge: the inverse, transpose(0 2 1 3) then reshape to [batch, tokens, dim]
//
// This is Hugging Face's own code (view(...).transpose(1, 2)), so a graph imported from a
// checkpoint's model code or an ONNX export maps onto it one to one; both ops are pure data
// movement (exact in the reference, no error term) with one general meaning each, where
// SplitHeads/MergeHeads would fix one axis order and need new ops for the next layout. The
// split result is an ordinary [batch, heads, tokens, head_dim] tensor, so the batched Gemm
// consumes it directly (Q K^T is Gemm(q, k, GemmAttrs{TransB: true}) over batch axes [batch,
// heads]). A planner that never materialises the transposed tensor recognises the pair with
// HeadSplit / HeadMerge. SplitHeads and MergeHeads below are the builders of the two patterns.

// Reshape adds a view of x with shape dims: the same elements in the same row-major order. The
// element counts must match; every dimension must be positive (no -1 wildcard).
func (g *Graph) Reshape(name string, x *Node, dims ...int) *Node {
	n := &Node{Name: name, Op: OpReshape, Inputs: []*Node{x}, Shape: append(Shape(nil), dims...)}
	if !g.checkOperands(OpReshape, name, x) {
		n.bad = true
		return g.add(n)
	}
	n.DType = x.DType
	if !g.checkDims(OpReshape, name, dims) {
		n.bad = true
		return g.add(n)
	}
	if a, b := x.Shape.elements64(), n.Shape.elements64(); a != b {
		g.errorf("reshape %q: %q %v has %d elements, shape %v has %d", name, x.Name, x.Shape, a, n.Shape, b)
		n.bad = true
	}
	return g.add(n)
}

// Transpose adds the axis permutation of x: output axis i is input axis perm[i] (NumPy
// transpose). perm must be a permutation of 0..rank-1.
func (g *Graph) Transpose(name string, x *Node, perm ...int) *Node {
	n := &Node{Name: name, Op: OpTranspose, Inputs: []*Node{x}, Perm: append([]int(nil), perm...)}
	if !g.checkOperands(OpTranspose, name, x) {
		n.bad = true
		return g.add(n)
	}
	n.DType = x.DType
	if len(perm) != len(x.Shape) {
		g.errorf("transpose %q: perm %v has %d axes, %q %v has %d", name, perm, len(perm), x.Name, x.Shape, len(x.Shape))
		n.bad = true
		return g.add(n)
	}
	seen := make([]bool, len(perm))
	n.Shape = make(Shape, len(perm))
	for i, p := range perm {
		if p < 0 || p >= len(perm) || seen[p] {
			g.errorf("transpose %q: perm %v is not a permutation of 0..%d", name, perm, len(perm)-1)
			n.bad = true
			n.Shape = nil
			return g.add(n)
		}
		seen[p] = true
		n.Shape[i] = x.Shape[p]
	}
	return g.add(n)
}

// SplitHeads adds the head split of x [..., tokens, dim] into heads heads: the Reshape
// name+".reshape" to [..., tokens, heads, dim/heads] and the Transpose name, [..., heads,
// tokens, dim/heads], which it returns. heads must divide dim.
func (g *Graph) SplitHeads(name string, x *Node, heads int) *Node {
	if !g.checkOperands(OpReshape, name+".reshape", x) {
		return g.add(&Node{Name: name, Op: OpTranspose, Inputs: []*Node{x}, bad: true})
	}
	if len(x.Shape) < 2 || heads <= 0 || x.Shape[len(x.Shape)-1]%heads != 0 {
		g.errorf("transpose %q: cannot split %q %v into %d heads (need rank >= 2 and heads dividing the last axis)", name, x.Name, x.Shape, heads)
		return g.add(&Node{Name: name, Op: OpTranspose, Inputs: []*Node{x}, DType: x.DType, bad: true})
	}
	r := len(x.Shape)
	dims := append(append(Shape(nil), x.Shape[:r-1]...), heads, x.Shape[r-1]/heads)
	v := g.Reshape(name+".reshape", x, dims...)
	return g.Transpose(name, v, swapPerm(r+1, r-2, r-1)...)
}

// MergeHeads adds the inverse of SplitHeads on x [..., heads, tokens, head_dim]: the Transpose
// name+".transpose" to [..., tokens, heads, head_dim] and the Reshape name, [..., tokens,
// heads*head_dim], which it returns.
func (g *Graph) MergeHeads(name string, x *Node) *Node {
	if !g.checkOperands(OpTranspose, name+".transpose", x) {
		return g.add(&Node{Name: name, Op: OpReshape, Inputs: []*Node{x}, bad: true})
	}
	r := len(x.Shape)
	if r < 3 {
		g.errorf("reshape %q: cannot merge the heads of %q %v (need rank >= 3: [..., heads, tokens, head_dim])", name, x.Name, x.Shape)
		return g.add(&Node{Name: name, Op: OpReshape, Inputs: []*Node{x}, DType: x.DType, bad: true})
	}
	t := g.Transpose(name+".transpose", x, swapPerm(r, r-3, r-2)...)
	dims := append(append(Shape(nil), x.Shape[:r-3]...), x.Shape[r-2], x.Shape[r-3]*x.Shape[r-1])
	return g.Reshape(name, t, dims...)
}

// swapPerm is the identity permutation of rank axes with axes i and j exchanged.
func swapPerm(rank, i, j int) []int {
	p := make([]int, rank)
	for k := range p {
		p[k] = k
	}
	p[i], p[j] = p[j], p[i]
	return p
}

// HeadSplit recognises a head split built by SplitHeads: n is a Transpose exchanging the two
// axes before the last of a Reshape that splits the last axis of its input in two. It returns
// the unsplit value ([..., tokens, dim]) and the head count.
func (n *Node) HeadSplit() (x *Node, heads int, ok bool) {
	if n.Op != OpTranspose || n.bad || len(n.Perm) < 3 {
		return nil, 0, false
	}
	r := len(n.Perm)
	if !slicesEqual(n.Perm, swapPerm(r, r-3, r-2)) {
		return nil, 0, false
	}
	v := n.Inputs[0]
	if v.Op != OpReshape || v.bad || len(v.Inputs[0].Shape) != r-1 {
		return nil, 0, false
	}
	x = v.Inputs[0]
	if !v.Shape[:r-2].Equal(x.Shape[:r-2]) || v.Shape[r-2]*v.Shape[r-1] != x.Shape[r-2] {
		return nil, 0, false
	}
	return x, v.Shape[r-2], true
}

// HeadMerge recognises a head merge built by MergeHeads: n is a Reshape joining the last two axes
// of a Transpose that exchanges the two axes before the last of a [..., heads, tokens, head_dim]
// value. It returns that value.
func (n *Node) HeadMerge() (x *Node, ok bool) {
	if n.Op != OpReshape || n.bad {
		return nil, false
	}
	t := n.Inputs[0]
	r := len(t.Shape)
	if t.Op != OpTranspose || t.bad || r < 3 || !slicesEqual(t.Perm, swapPerm(r, r-3, r-2)) || len(n.Shape) != r-1 {
		return nil, false
	}
	if !n.Shape[:r-2].Equal(t.Shape[:r-2]) || n.Shape[r-2] != t.Shape[r-2]*t.Shape[r-1] {
		return nil, false
	}
	return t.Inputs[0], true
}

func positiveFinite(f float64) bool { return f > 0 && !math.IsInf(f, 1) }

func slicesEqual(a, b []int) bool { return Shape(a).Equal(Shape(b)) }

// elements64 is Elements in int64, safe from overflow for any shape the builders accept.
func (s Shape) elements64() int64 {
	n := int64(1)
	for _, d := range s {
		n *= int64(d)
	}
	return n
}

// Output declares v a graph output under name (names of outputs are their own namespace).
func (g *Graph) Output(name string, v *Node) {
	switch {
	case v == nil:
		g.errorf("output %q: value is nil (dangling value)", name)
		return
	case v.g != g:
		g.errorf("output %q: value %q belongs to another graph (dangling value)", name, v.Name)
		return
	}
	for _, o := range g.outputs {
		if o.Name == name {
			g.errorf("output %q: duplicate output name", name)
			return
		}
	}
	g.outputs = append(g.outputs, Output{name, v})
}

// Broadcast returns the NumPy broadcast of two shapes: aligned from the last axis, each pair of
// dimensions must be equal or one of them 1; missing leading axes count as 1.
func Broadcast(a, b Shape) (Shape, error) {
	r := len(a)
	if len(b) > r {
		r = len(b)
	}
	out := make(Shape, r)
	for i := 1; i <= r; i++ {
		da, db := 1, 1
		if i <= len(a) {
			da = a[len(a)-i]
		}
		if i <= len(b) {
			db = b[len(b)-i]
		}
		switch {
		case da == db, db == 1:
			out[r-i] = da
		case da == 1:
			out[r-i] = db
		default:
			return nil, fmt.Errorf("axis %d from the end: %d vs %d", i, da, db)
		}
	}
	return out, nil
}

// Validate returns every error recorded while building plus whole-graph checks: at least one
// output, every value used (an unused node is a dangling value, almost always a wiring
// mistake), operands created before their users. Nil means the graph is well formed.
func (g *Graph) Validate() error {
	errs := append([]error(nil), g.errs...)
	if len(g.outputs) == 0 {
		errs = append(errs, errors.New("graph has no outputs"))
	}
	used := make([]bool, len(g.nodes))
	for _, o := range g.outputs {
		used[o.Node.ID] = true
	}
	for _, n := range g.nodes {
		for _, in := range n.Inputs {
			if in == nil || in.g != g {
				continue // reported when built
			}
			used[in.ID] = true
			if in.ID >= n.ID {
				errs = append(errs, fmt.Errorf("%s %q: operand %q is not defined before its use (cycle)", n.Op, n.Name, in.Name))
			}
		}
	}
	for _, n := range g.nodes {
		if len(g.outputs) > 0 && !used[n.ID] && !n.bad {
			errs = append(errs, fmt.Errorf("%s %q: value is never used and is not an output (dangling value)", n.Op, n.Name))
		}
	}
	return errors.Join(errs...)
}

// Build validates the graph and returns it, or the validation error.
func (g *Graph) Build() (*Graph, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}

// GemmFlops is the total useful GEMM work of the graph, the numerator of effectiveGemmTflops.
func (g *Graph) GemmFlops() int64 {
	var t int64
	for _, n := range g.nodes {
		t += n.Flops()
	}
	return t
}

// String is the node in one line: %3 = gemm "block0.fc1" f16[729 4304] (%0, %1) transB acc=f32.
func (n *Node) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%%%d = %s %q %v%v", n.ID, n.Op, n.Name, n.DType, n.Shape)
	if len(n.Inputs) > 0 {
		ids := make([]string, len(n.Inputs))
		for i, in := range n.Inputs {
			if in == nil {
				ids[i] = "nil"
			} else {
				ids[i] = fmt.Sprintf("%%%d", in.ID)
			}
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(ids, ", "))
	}
	switch n.Op {
	case OpInput:
		fmt.Fprintf(&b, " seed=%d", n.Seed)
	case OpParameter:
		fmt.Fprintf(&b, " seed=%d init=%s", n.Seed, n.Init)
	case OpGemm:
		if n.TransA {
			b.WriteString(" transA")
		}
		if n.TransB {
			b.WriteString(" transB")
		}
		fmt.Fprintf(&b, " acc=%v flops=%d", n.Acc, n.Flops())
	case OpGelu:
		fmt.Fprintf(&b, " approx=%v", n.Approx)
	case OpLayerNorm:
		fmt.Fprintf(&b, " eps=%g", n.Eps)
	case OpSoftmax:
		fmt.Fprintf(&b, " scale=%g", n.Scale)
	case OpTranspose:
		fmt.Fprintf(&b, " perm=%v", n.Perm)
	}
	return b.String()
}

// String names an Init.
func (i Init) String() string {
	switch i {
	case InitUniformUnit:
		return "uniform(-1,1)"
	case InitUniformFanIn:
		return "uniform(fan-in)"
	case InitZero:
		return "zero"
	case InitAroundOne:
		return "uniform(1±fan-in)"
	}
	return fmt.Sprintf("init(%d)", uint8(i))
}

// Dump is the whole graph, one node per line, then the outputs and the GEMM work: for logs.
func (g *Graph) Dump() string {
	var b strings.Builder
	for _, n := range g.nodes {
		b.WriteString(n.String())
		b.WriteByte('\n')
	}
	for _, o := range g.outputs {
		fmt.Fprintf(&b, "output %q = %%%d\n", o.Name, o.Node.ID)
	}
	fmt.Fprintf(&b, "gemmFlops=%d\n", g.GemmFlops())
	return b.String()
}

// String is a one-line summary of the graph.
func (g *Graph) String() string {
	return fmt.Sprintf("graph(%d nodes, %d inputs, %d parameters, %d outputs, gemmFlops=%d)",
		len(g.nodes), len(g.Inputs()), len(g.Parameters()), len(g.outputs), g.GemmFlops())
}
