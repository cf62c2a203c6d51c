package graph

import (
	"math"
	"regexp"
	"strings"
	"testing"
)

// errLine is the shape of every builder and validation error: it names the node (or output).
var errLine = regexp.MustCompile(`^(input|parameter|gemm|gelu|add|cast|layernorm|softmax|reshape|transpose|output) "[^"]*"(: | node #)|^graph has no outputs$|^(invalid|layernorm|softmax|reshape|transpose|gemm|gelu|add|cast) node #\d+: empty name$`)

// FuzzBuilders runs a small random program of builder calls: bytes choose the op, its operands
// (sometimes nil or from another graph) and its arguments. The builders must never panic, and
// the graph must either validate or fail with errors that each name a node; a valid graph's
// values all have positive dimensions.
func FuzzBuilders(f *testing.F) {
	f.Add([]byte{0, 2, 3, 4, 6, 0, 0, 7, 1, 1, 8, 0, 2})
	f.Add([]byte{0, 1, 6, 3, 9, 1, 2, 3, 10, 2, 5, 4, 11, 3, 0})
	f.Add([]byte{0, 3, 2, 4, 4, 1, 5, 0, 0, 3, 1, 1, 9, 1, 6, 1, 1, 8, 4, 1})
	f.Add([]byte{255, 254, 253, 0, 0, 0, 7, 7, 7, 12, 12})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 256 {
			prog = prog[:256]
		}
		pos := 0
		next := func() int {
			if pos >= len(prog) {
				return 0
			}
			pos++
			return int(prog[pos-1])
		}
		other := New()
		foreign := other.Input("foreign", F16, 2, 2)
		g := New()
		var nodes []*Node
		pick := func() *Node {
			c := next()
			switch {
			case c == 255:
				return nil
			case c == 254:
				return foreign
			case len(nodes) == 0:
				return nil
			}
			return nodes[c%len(nodes)]
		}
		dims := func() []int {
			r := next() % 5
			d := make([]int, r)
			for i := range d {
				d[i] = next()%9 - 1 // -1..7
			}
			return d
		}
		dtype := func() DType { return DType(next() % 4) }
		name := func() string {
			if next()%17 == 0 {
				return "dup"
			}
			return "n" + string(rune('a'+len(nodes)%26)) + strings.Repeat("x", len(nodes)/26)
		}
		for step := 0; pos < len(prog) && step < 64; step++ {
			var n *Node
			switch next() % 12 {
			case 0:
				n = g.Input(name(), dtype(), dims()...)
			case 1:
				n = g.ParameterInit(name(), dtype(), 1, Init(next()%5), next()%4-1, dims()...)
			case 2:
				n = g.Gemm(name(), pick(), pick(), GemmAttrs{TransA: next()%2 == 1, TransB: next()%2 == 1, Out: dtype(), Acc: dtype()})
			case 3:
				n = g.Gelu(name(), pick(), GeluApprox(next()%3))
			case 4:
				n = g.Add(name(), pick(), pick())
			case 5:
				n = g.Cast(name(), pick(), dtype())
			case 6:
				eps := []float64{1e-6, 0, -1, math.NaN(), math.Inf(1)}[next()%5]
				n = g.LayerNorm(name(), pick(), pick(), pick(), eps)
			case 7:
				scale := []float64{0.125, 1, 0, -2, math.NaN(), math.Inf(1)}[next()%6]
				n = g.Softmax(name(), pick(), scale)
			case 8:
				n = g.Reshape(name(), pick(), dims()...)
			case 9:
				p := dims()
				n = g.Transpose(name(), pick(), p...)
			case 10:
				n = g.SplitHeads(name(), pick(), next()%5-1)
			case 11:
				n = g.MergeHeads(name(), pick())
			}
			if n == nil {
				t.Fatal("a builder returned nil")
			}
			_ = n.String()
			nodes = append(nodes, n)
			if next()%3 == 0 {
				g.Output(name(), pick())
			}
		}
		_ = g.Dump()
		err := g.Validate()
		if err == nil {
			for _, n := range g.Nodes() {
				if n.bad || !n.DType.valid() {
					t.Fatalf("valid graph holds a bad node %s", n)
				}
				for _, d := range n.Shape {
					if d <= 0 {
						t.Fatalf("valid graph holds %s", n)
					}
				}
				if n.Op == OpGemm && n.Flops() <= 0 {
					t.Fatalf("gemm without flops: %s", n)
				}
			}
			return
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !errLine.MatchString(line) {
				t.Fatalf("error does not name its node: %q\nall: %v", line, err)
			}
		}
	})
}

// FuzzEncoderConfig builds encoder layers of random (small) shapes: EncoderLayerGraph must never
// panic, and either returns a valid graph whose shapes follow the config or an error naming a
// flag.
func FuzzEncoderConfig(f *testing.F) {
	f.Add(1, 7, 16, 2, 24, 1, uint8(2), uint8(2))
	f.Add(2, 50, 24, 3, 40, 2, uint8(1), uint8(2))
	f.Add(1, 729, 1152, 5, 4304, 1, uint8(1), uint8(1))
	f.Add(0, -1, 0, 0, 0, 0, uint8(0), uint8(3))
	f.Fuzz(func(t *testing.T, batch, tokens, dim, heads, hidden, layers int, dt, acc uint8) {
		c := EncoderConfig{Batch: batch, Tokens: tokens, Dim: dim, Heads: heads, Hidden: hidden, Layers: layers % 8, DType: DType(dt), Acc: DType(acc)}
		g, err := EncoderLayerGraph(c, 1)
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "--") && !strings.HasPrefix(line, "encoder ") {
					t.Fatalf("%+v: error does not name a flag: %q", c, line)
				}
			}
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("%+v: built an invalid graph: %v", c, err)
		}
		if y := g.Outputs()[0].Node; !y.Shape.Equal(Shape{c.Batch, c.Tokens, c.Dim}) || len(g.Parameters()) != 16*c.Layers {
			t.Fatalf("%+v: output %v, %d parameters", c, y, len(g.Parameters()))
		}
	})
}
