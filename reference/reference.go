// Package reference evaluates a graph.Graph on the host in f32 with gonum's native BLAS, the
// numbers a device run is checked against, and compares results under a documented tolerance.
//
// With Precision Device ("referencePrecision=device") every tensor is rounded to the precision
// the device stores it in after the op that produces it, so the reference sees the same rounded
// operands the device does: f16 values are rounded to f16 (nearest even). A Gemm is computed with
// exact f16 x f16 products (they fit in f32) and f32 accumulation, then rounded to its output
// type. The device's f16-accumulating AMP instead rounds its running partial to f16 after every
// 16-deep inner group (docs/amp-and-pace.md); that difference is not simulated but bounded by the
// tolerance model (see Tolerance). LayerNorm and Softmax are computed in f64 (LayerNorm64,
// Softmax64) and rounded once, at their output; Reshape and Transpose move values exactly. The
// device kernels' internal f16 roundings are likewise left to the tolerance model.
package reference

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/ipustack/ipustack/graph"
	"github.com/x448/float16"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Precision selects how intermediate tensors are rounded.
type Precision uint8

const (
	// Device rounds every tensor to its graph dtype (f16 values to f16): "referencePrecision=device".
	Device Precision = iota
	// F32 keeps every tensor in f32 (f16-typed values are not rounded): an idealised reference,
	// useful to measure the device's total rounding error.
	F32
)

// String returns "device" or "f32", the referencePrecision log value.
func (p Precision) String() string {
	if p == F32 {
		return "f32"
	}
	return "device"
}

// Options configure Evaluate.
type Options struct {
	Precision Precision
	// KeepAll returns every node's value, keyed by node name, besides the outputs.
	KeepAll bool
	// GenerateMissing generates the data of Inputs absent from the inputs map from their seeds
	// (graph.Node.Data), as the runtime does; otherwise a missing input is an error.
	GenerateMissing bool
}

// Result is what EvaluateDetailed returns.
type Result struct {
	// Outputs by output name.
	Outputs map[string][]float32
	// Values by node name (only with KeepAll).
	Values map[string][]float32
	// Tolerances by output name: the bound a device result must meet (see Tolerance).
	Tolerances map[string]Tolerance
}

// Evaluate runs g on the host and returns its outputs by output name. inputs holds the Inputs'
// data by node name, row-major, as float32 (f16 inputs are rounded to f16 first); it may also
// hold Parameters' data (user weights), which then replaces their generated data.
func Evaluate(g *graph.Graph, inputs map[string][]float32, opts Options) (map[string][]float32, error) {
	r, err := EvaluateDetailed(g, inputs, opts)
	if err != nil {
		return nil, err
	}
	return r.Outputs, nil
}

// EvaluateDetailed is Evaluate returning also the tolerances of the outputs and, on request,
// every intermediate value.
func EvaluateDetailed(g *graph.Graph, inputs map[string][]float32, opts Options) (*Result, error) {
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("reference: invalid graph: %w", err)
	}
	nodes := g.Nodes()
	vals := make([][]float32, len(nodes))
	errm := newErrorModel(len(nodes))
	// Last use of each value, so large intermediates can be dropped early (the MLP's hidden
	// activation is 3 M values).
	last := make([]int, len(nodes))
	for _, n := range nodes {
		for _, in := range n.Inputs {
			last[in.ID] = n.ID
		}
	}
	isOut := make([]bool, len(nodes))
	for _, o := range g.Outputs() {
		isOut[o.Node.ID] = true
	}
	round := func(n *graph.Node, v []float32) {
		if opts.Precision == Device && n.DType == graph.F16 {
			roundF16(v)
		}
	}
	for _, n := range nodes {
		var v []float32
		switch n.Op {
		case graph.OpInput:
			d, ok := inputs[n.Name]
			switch {
			case ok && len(d) != n.Shape.Elements():
				return nil, fmt.Errorf("reference: input %q: got %d values, shape %v needs %d", n.Name, len(d), n.Shape, n.Shape.Elements())
			case ok:
				v = append([]float32(nil), d...)
			case opts.GenerateMissing:
				v = n.Data()
			default:
				return nil, fmt.Errorf("reference: input %q: no data given", n.Name)
			}
			round(n, v)
		case graph.OpParameter:
			// A parameter given in inputs (user weights) replaces its
			// generated data.
			if d, ok := inputs[n.Name]; ok {
				if len(d) != n.Shape.Elements() {
					return nil, fmt.Errorf("reference: parameter %q: got %d values, shape %v needs %d", n.Name, len(d), n.Shape, n.Shape.Elements())
				}
				v = append([]float32(nil), d...)
			} else {
				v = n.Data()
			}
			round(n, v)
		case graph.OpGemm:
			v = gemm(n, vals[n.Inputs[0].ID], vals[n.Inputs[1].ID])
			round(n, v)
		case graph.OpGelu:
			v = gelu(vals[n.Inputs[0].ID], n.Approx)
			round(n, v)
		case graph.OpAdd:
			v = add(n, vals[n.Inputs[0].ID], vals[n.Inputs[1].ID])
			round(n, v)
		case graph.OpCast:
			v = append([]float32(nil), vals[n.Inputs[0].ID]...)
			round(n, v)
		case graph.OpLayerNorm:
			v = layerNorm(n, vals[n.Inputs[0].ID], vals[n.Inputs[1].ID], vals[n.Inputs[2].ID])
			round(n, v)
		case graph.OpSoftmax:
			v = softmax(n, vals[n.Inputs[0].ID])
			round(n, v)
		case graph.OpReshape:
			// Row-major order is unchanged: the same values.
			v = append([]float32(nil), vals[n.Inputs[0].ID]...)
		case graph.OpTranspose:
			v = transpose(n, vals[n.Inputs[0].ID])
		default:
			return nil, fmt.Errorf("reference: %s %q: unsupported op", n.Op, n.Name)
		}
		vals[n.ID] = v
		ins := make([][]float32, len(n.Inputs))
		for i, in := range n.Inputs {
			ins[i] = vals[in.ID]
		}
		errm.node(n, v, ins)
		if !opts.KeepAll {
			for _, in := range n.Inputs {
				if last[in.ID] == n.ID && !isOut[in.ID] {
					vals[in.ID] = nil
				}
			}
		}
	}
	r := &Result{Outputs: map[string][]float32{}, Tolerances: map[string]Tolerance{}}
	for _, o := range g.Outputs() {
		r.Outputs[o.Name] = vals[o.Node.ID]
		r.Tolerances[o.Name] = errm.tolerance(o.Node)
	}
	if opts.KeepAll {
		r.Values = map[string][]float32{}
		for _, n := range nodes {
			r.Values[n.Name] = vals[n.ID]
		}
	}
	return r, nil
}

func roundF16(v []float32) {
	parallelFor(len(v), 1<<16, func(from, to int) {
		for i := from; i < to; i++ {
			v[i] = float16.Fromfloat32(v[i]).Float32()
		}
	})
}

// gemmRowBlock is the number of output rows one task computes. Fixed, so the split (and the
// per-element arithmetic, which gonum does in the same k order for any row range) does not
// depend on the machine.
const gemmRowBlock = 64

// gemm computes a batched matrix product with broadcast batch axes.
func gemm(n *graph.Node, a, b []float32) []float32 {
	A, B := n.Inputs[0], n.Inputs[1]
	_, m, k, nn := n.GemmDims()
	out := make([]float32, n.Shape.Elements())
	batchShape := n.Shape[:len(n.Shape)-2]
	aBatch := A.Shape[:len(A.Shape)-2]
	bBatch := B.Shape[:len(B.Shape)-2]
	ar, ac := A.Shape[len(A.Shape)-2], A.Shape[len(A.Shape)-1]
	br, bc := B.Shape[len(B.Shape)-2], B.Shape[len(B.Shape)-1]
	ta, tb := blas.NoTrans, blas.NoTrans
	if n.TransA {
		ta = blas.Trans
	}
	if n.TransB {
		tb = blas.Trans
	}
	type task struct{ aOff, bOff, cOff, r0, r1 int }
	var tasks []task
	for bi := 0; bi < batchShape.Elements(); bi++ {
		aOff := broadcastIndex(bi, batchShape, aBatch) * ar * ac
		bOff := broadcastIndex(bi, batchShape, bBatch) * br * bc
		for r0 := 0; r0 < m; r0 += gemmRowBlock {
			tasks = append(tasks, task{aOff, bOff, bi * m * nn, r0, min(m, r0+gemmRowBlock)})
		}
	}
	run := func(t task) {
		rows := t.r1 - t.r0
		var am blas32.General
		if n.TransA {
			// op(A) = A^T: rows r0..r1 of op(A) are columns r0..r1 of A.
			am = blas32.General{Rows: k, Cols: rows, Stride: ac, Data: a[t.aOff+t.r0:]}
		} else {
			am = blas32.General{Rows: rows, Cols: k, Stride: ac, Data: a[t.aOff+t.r0*ac:]}
		}
		bm := blas32.General{Rows: br, Cols: bc, Stride: bc, Data: b[t.bOff : t.bOff+br*bc]}
		cm := blas32.General{Rows: rows, Cols: nn, Stride: nn, Data: out[t.cOff+t.r0*nn : t.cOff+t.r1*nn]}
		blas32.Gemm(ta, tb, 1, am, bm, 0, cm)
	}
	parallelTasks(len(tasks), func(i int) { run(tasks[i]) })
	return out
}

// broadcastIndex maps a flat index in the broadcast shape out to the flat index in the operand
// shape in (missing leading axes and axes of size 1 are broadcast).
func broadcastIndex(flat int, out, in graph.Shape) int {
	idx, stride := 0, 1
	for i := 1; i <= len(out); i++ {
		d := out[len(out)-i]
		c := flat % d
		flat /= d
		if i <= len(in) {
			di := in[len(in)-i]
			if di != 1 {
				idx += c * stride
			}
			stride *= di
		}
	}
	return idx
}

// add is a + b with NumPy broadcasting; the common bias case (b's shape a suffix of a's) is a
// tight loop.
func add(n *graph.Node, a, b []float32) []float32 {
	A, B := n.Inputs[0].Shape, n.Inputs[1].Shape
	out := make([]float32, n.Shape.Elements())
	if A.Equal(n.Shape) && len(b) > 0 && len(out)%len(b) == 0 && suffix(B, A) {
		parallelFor(len(out), 1<<16, func(from, to int) {
			for i := from; i < to; i++ {
				out[i] = a[i] + b[i%len(b)]
			}
		})
		return out
	}
	parallelFor(len(out), 1<<16, func(from, to int) {
		for i := from; i < to; i++ {
			out[i] = a[broadcastIndex(i, n.Shape, A)] + b[broadcastIndex(i, n.Shape, B)]
		}
	})
	return out
}

// suffix reports whether s equals the trailing axes of t (ignoring leading 1s of s).
func suffix(s, t graph.Shape) bool {
	for len(s) > 0 && s[0] == 1 {
		s = s[1:]
	}
	if len(s) > len(t) {
		return false
	}
	return s.Equal(t[len(t)-len(s):])
}

// rowBlock is the number of rows one task of layerNorm or softmax computes.
const rowBlock = 16

// layerNorm normalises the rows of x (the last axis) with LayerNorm64: statistics and output in
// f64, so the reference's only error is the final rounding (to f32, then f16 with Device).
func layerNorm(n *graph.Node, x, scale, bias []float32) []float32 {
	w := n.Shape[len(n.Shape)-1]
	rows := len(x) / w
	out := make([]float32, len(x))
	s64, b64 := to64(scale), to64(bias)
	parallelFor(rows, rowBlock, func(from, to int) {
		y, _, _ := LayerNorm64(to64(x[from*w:to*w]), s64, b64, to-from, w, n.Eps)
		for i, f := range y {
			out[from*w+i] = float32(f)
		}
	})
	return out
}

// softmax is softmax(Scale*x) over the rows of x with Softmax64 (max-subtracted, in f64).
func softmax(n *graph.Node, x []float32) []float32 {
	w := n.Shape[len(n.Shape)-1]
	rows := len(x) / w
	out := make([]float32, len(x))
	parallelFor(rows, rowBlock, func(from, to int) {
		p := Softmax64(to64(x[from*w:to*w]), to-from, w, w, n.Scale)
		for i, f := range p {
			out[from*w+i] = float32(f)
		}
	})
	return out
}

func to64(v []float32) []float64 {
	r := make([]float64, len(v))
	for i, f := range v {
		r[i] = float64(f)
	}
	return r
}

// transpose permutes the axes of x: output axis i is input axis Perm[i]. The innermost output
// axis is walked with the input stride of its source axis.
func transpose(n *graph.Node, x []float32) []float32 {
	in := n.Inputs[0].Shape
	r := len(in)
	out := make([]float32, len(x))
	if r == 0 || len(x) == 0 {
		copy(out, x)
		return out
	}
	stride := make([]int, r) // row-major strides of the input
	s := 1
	for i := r - 1; i >= 0; i-- {
		stride[i] = s
		s *= in[i]
	}
	inner := n.Shape[r-1]
	innerStride := stride[n.Perm[r-1]]
	outer := len(x) / inner
	parallelFor(outer, 1<<12, func(from, to int) {
		for o := from; o < to; o++ {
			// Unravel the outer index over output axes 0..r-2 into an input offset.
			off, rem := 0, o
			for i := r - 2; i >= 0; i-- {
				d := n.Shape[i]
				off += (rem % d) * stride[n.Perm[i]]
				rem /= d
			}
			row := out[o*inner : (o+1)*inner]
			for j := range row {
				row[j] = x[off+j*innerStride]
			}
		}
	})
	return out
}

// Gelu is the activation in f64: the tanh form 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) or the
// exact 0.5x(1+erf(x/sqrt 2)). f64 makes the reference's only error the final rounding.
func Gelu(x float64, approx graph.GeluApprox) float64 {
	if approx == graph.GeluErf {
		return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
	}
	const c = 0.7978845608028654 // sqrt(2/pi)
	return 0.5 * x * (1 + math.Tanh(c*(x+0.044715*x*x*x)))
}

func gelu(x []float32, approx graph.GeluApprox) []float32 {
	out := make([]float32, len(x))
	parallelFor(len(x), 1<<14, func(from, to int) {
		for i := from; i < to; i++ {
			out[i] = float32(Gelu(float64(x[i]), approx))
		}
	})
	return out
}

// parallelFor runs fn over fixed chunks of [0, n) on GOMAXPROCS goroutines. Every element is
// computed by the same code whatever the chunk, so results do not depend on the machine.
func parallelFor(n, chunk int, fn func(from, to int)) {
	tasks := (n + chunk - 1) / chunk
	parallelTasks(tasks, func(t int) { fn(t*chunk, min(n, (t+1)*chunk)) })
}

func parallelTasks(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	wg.Wait()
}
