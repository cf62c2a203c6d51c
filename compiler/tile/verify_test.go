package tile_test

import (
	"bytes"
	"encoding/gob"
	"strings"
	"sync"
	"testing"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/compiler/tile/passes"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
)

// basePlans are real programs lowered from compiler/mid plans: an MLP of
// three blocks with biases as a runtime loop (loops, strided refs, a
// weights phase), one in row chunks (a chunk loop, padded rows) and one of
// two blocks unrolled (top-level kernel calls and exchanges).
var basePlans = sync.OnceValues(func() (map[string]*tile.Program, error) {
	out := map[string]*tile.Program{}
	for name, c := range map[string]struct {
		cfg   graph.MLPConfig
		tiles int
		want  func(*mid.Plan) bool
	}{
		"block loop": {graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: 3, Biases: true}, 64, func(mp *mid.Plan) bool { return mp.Period > 0 }},
		"row chunks": {graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 256, Hidden: 1024, Blocks: 1}, 4, func(mp *mid.Plan) bool { return mp.Chunks > 1 && mp.Period == 0 }},
		"unrolled":   {graph.MLPConfig{Batch: 2, Tokens: 8, Dim: 64, Hidden: 96, Blocks: 2, Biases: true}, 8, func(mp *mid.Plan) bool { return mp.Period == 0 && mp.Chunks <= 1 }},
	} {
		g, err := graph.MLPGraph(c.cfg, 1, graph.GeluTanh)
		if err != nil {
			return nil, err
		}
		p, err := low.NewProblem(g)
		if err != nil {
			return nil, err
		}
		res, err := mid.Search(g, ipu21.IPU21(), mid.Options{Tiles: c.tiles, Finalists: 4})
		if err != nil {
			return nil, err
		}
		for _, mp := range res.Finalists {
			if !c.want(mp) {
				continue
			}
			pl, err := low.FromMid(p, mp, low.Options{Tiles: c.tiles})
			if err != nil {
				return nil, err
			}
			out[name] = &pl.Program
			break
		}
	}
	return out, nil
})

// base returns a deep copy of a base program.
func base(t *testing.T, name string) *tile.Program {
	t.Helper()
	ps, err := basePlans()
	if err != nil {
		t.Fatal(err)
	}
	if ps[name] == nil {
		t.Fatalf("no %s plan", name)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(ps[name]); err != nil {
		t.Fatal(err)
	}
	var p tile.Program
	if err := gob.NewDecoder(&b).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// find returns the first op of tile l's call c (loop bodies included,
// depth first) for which is holds, and the loop enclosing it (nil: none).
func find(t *testing.T, p *tile.Program, l, c int, is func(*tile.Op) bool) (op, loop *tile.Op) {
	t.Helper()
	var walk func(ops []tile.Op, in *tile.Op) (*tile.Op, *tile.Op)
	walk = func(ops []tile.Op, in *tile.Op) (*tile.Op, *tile.Op) {
		for i := range ops {
			if is(&ops[i]) {
				return &ops[i], in
			}
			if o, lp := walk(ops[i].Body, &ops[i]); o != nil {
				return o, lp
			}
		}
		return nil, nil
	}
	op, loop = walk(p.Programs[l].Calls[c], nil)
	if op == nil {
		t.Fatalf("tile %d call %d has no such op", l, c)
	}
	return op, loop
}

func kind(k tile.OpKind) func(*tile.Op) bool { return func(op *tile.Op) bool { return op.Kind == k } }

func kernel(name string) func(*tile.Op) bool {
	return func(op *tile.Op) bool { return op.Kind == tile.OpKernel && op.Kernel == name }
}

// topKernel is the first kernel call of the run call outside any loop.
func topKernel(t *testing.T, p *tile.Program) *tile.Op {
	t.Helper()
	for i := range p.Programs[0].Calls[1] {
		if op := &p.Programs[0].Calls[1][i]; op.Kind == tile.OpKernel {
			return op
		}
	}
	t.Fatal("no top-level kernel call")
	return nil
}

func buf(p *tile.Program, l int, name string) *tile.Buffer {
	for i := range p.Programs[l].Buffers {
		if b := &p.Programs[l].Buffers[i]; b.Name == name {
			return b
		}
	}
	return nil
}

func TestVerifyRealPlans(t *testing.T) {
	ps, err := basePlans()
	if err != nil {
		t.Fatal(err)
	}
	for name := range ps {
		p := base(t, name)
		if err := p.Verify(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := passes.OptimizeVerified(p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := (*tile.Program)(nil).Verify(); err == nil {
		t.Error("nil program verified")
	}
}

// Every broken invariant is reported, naming where.
func TestVerifyBroken(t *testing.T) {
	for _, c := range []struct {
		name string
		plan string // base plan ("": block loop)
		mod  func(t *testing.T, p *tile.Program)
		want string
	}{
		{"tiles", "", func(t *testing.T, p *tile.Program) { p.Tiles++ }, "programs: want 1.."},
		{"logical", "", func(t *testing.T, p *tile.Program) { p.Programs[3].Logical = 4 }, "tile 3: Logical 4"},
		{"physical twice", "", func(t *testing.T, p *tile.Program) { p.Programs[3].Physical = p.Programs[0].Physical }, "as tile 0's"},
		{"physical out of range", "", func(t *testing.T, p *tile.Program) { p.Programs[3].Physical = ipu21.Tiles }, "is not one of the chip's"},
		{"grid position", "", func(t *testing.T, p *tile.Program) { p.Programs[3].Col = -1 }, "tile 3: grid position"},
		{"buffer name twice", "", func(t *testing.T, p *tile.Program) {
			p.Programs[0].Buffers = append(p.Programs[0].Buffers, p.Programs[0].Buffers[0])
		}, "a second buffer of that name"},
		{"reserved buffer name", "", func(t *testing.T, p *tile.Program) {
			p.Programs[0].Buffers = append(p.Programs[0].Buffers, tile.Buffer{Name: tile.ReservedPrefix + "samples", Bytes: 8})
		}, "empty or reserved name"},
		{"buffer bytes", "", func(t *testing.T, p *tile.Program) { p.Programs[0].Buffers[0].Bytes = 0 }, "0 bytes"},
		{"alignment", "", func(t *testing.T, p *tile.Program) { p.Programs[0].Buffers[0].Align = 24 }, "alignment 24 is not a power of two"},
		{"region", "", func(t *testing.T, p *tile.Program) { p.Programs[0].Buffers[0].Region = 7 }, "unknown region 7"},
		{"apart from a missing buffer", "", func(t *testing.T, p *tile.Program) {
			b := &p.Programs[0].Buffers[0]
			b.Apart = append(b.Apart, "nope")
		}, `apart from "nope"`},
		{"apart from itself", "", func(t *testing.T, p *tile.Program) {
			b := &p.Programs[0].Buffers[0]
			b.Apart = append(b.Apart, b.Name)
		}, "not another buffer of the tile"},
		{"live span", "", func(t *testing.T, p *tile.Program) { p.Programs[0].Buffers[0].Live = [2]int{3, 2} }, "live span [3,2)"},
		{"ref to a missing buffer", "unrolled", func(t *testing.T, p *tile.Program) { topKernel(t, p).Args[0].Ref.Buf = "nope" }, `tile 0 has no buffer "nope"`},
		{"operand outside its buffer", "unrolled", func(t *testing.T, p *tile.Program) {
			op := topKernel(t, p)
			op.Args[0].Ref.Off = buf(p, 0, op.Args[0].Ref.Buf).Bytes
		}, "outside its"},
		{"negative offset", "unrolled", func(t *testing.T, p *tile.Program) { topKernel(t, p).Args[0].Ref.Off = -32 }, "outside its"},
		{"step without its loop", "unrolled", func(t *testing.T, p *tile.Program) { topKernel(t, p).Args[0].Ref.Step[1] = 32 }, "steps 32 with loop level 1"},
		{"negative step", "", func(t *testing.T, p *tile.Program) {
			op, loop := find(t, p, 0, 1, kernel(kernels.GemmF16))
			op.Args[0].Ref.Step[loop.Depth] = -32
		}, "steps -32"},
		{"step past the buffer", "", func(t *testing.T, p *tile.Program) {
			op, loop := find(t, p, 0, 1, kernel(kernels.GemmF16))
			op.Args[2].Ref.Step[loop.Depth] += 1 << 16
		}, "outside its"},
		{"loop count", "", func(t *testing.T, p *tile.Program) { op, _ := find(t, p, 0, 1, kind(tile.OpLoop)); op.Count = 0 }, "loop of 0 iterations"},
		{"loop level", "", func(t *testing.T, p *tile.Program) {
			op, _ := find(t, p, 0, 1, kind(tile.OpLoop))
			op.Depth = tile.MaxLoopDepth
		}, "at level 2 inside level -1"},
		{"nested loop not deeper", "", func(t *testing.T, p *tile.Program) {
			op, _ := find(t, p, 0, 1, kind(tile.OpLoop))
			op.Body = append(op.Body, tile.Op{Kind: tile.OpLoop, Count: 2, Depth: op.Depth, Body: []tile.Op{{Kind: tile.OpExchange}}})
		}, "at level 0 inside level 0"},
		{"unknown kernel", "unrolled", func(t *testing.T, p *tile.Program) { topKernel(t, p).Kernel = "no_such_kernel" }, "no_such_kernel"},
		{"parameters", "", func(t *testing.T, p *tile.Program) {
			op, _ := find(t, p, 0, 1, kernel(kernels.GemmF16))
			op.Params = kernels.Params{"k": 15, "c": 16, "r": 4}
		}, "(gemm_f16): "},
		{"arguments", "unrolled", func(t *testing.T, p *tile.Program) { op := topKernel(t, p); op.Args = op.Args[:1] }, "arguments, the kernel takes"},
		{"argument register twice", "unrolled", func(t *testing.T, p *tile.Program) {
			op := topKernel(t, p)
			op.Args = append([]tile.Arg(nil), op.Args...)
			op.Args[1].Reg = op.Args[0].Reg
		}, "arguments in $m2"},
		{"body on a kernel call", "unrolled", func(t *testing.T, p *tile.Program) {
			op := topKernel(t, p)
			op.Body = []tile.Op{{Kind: tile.OpSample}}
		}, "a body on a kind 2 op"},
		{"host sync in a loop", "", func(t *testing.T, p *tile.Program) {
			op, _ := find(t, p, 0, 1, kind(tile.OpLoop))
			op.Body = append(op.Body, tile.Op{Kind: tile.OpHostSync})
		}, "host sync inside a loop"},
		{"unknown op kind", "", func(t *testing.T, p *tile.Program) {
			p.Programs[0].Calls[1] = append(p.Programs[0].Calls[1], tile.Op{Kind: 99})
		}, "unknown kind 99"},
		{"exchange phase", "", func(t *testing.T, p *tile.Program) { op, _ := find(t, p, 0, 1, kind(tile.OpExchange)); op.Phase = 99 }, "exchange phase 99 of"},
		{"sample missing", "", func(t *testing.T, p *tile.Program) {
			run := p.Programs[2].Calls[1]
			p.Programs[2].Calls[1] = run[:len(run)-1] // the last op: a host sync of the output read-back
			for i := range run {
				if run[i].Kind == tile.OpSample && run[i].Sample == 1 {
					p.Programs[2].Calls[1] = append(append([]tile.Op(nil), run[:i]...), run[i+1:]...)
				}
			}
		}, "tile 2 run: 1 cycle samples"},
		{"sample in initialize", "", func(t *testing.T, p *tile.Program) {
			p.Programs[0].Calls[0] = append(p.Programs[0].Calls[0], tile.Op{Kind: tile.OpSample})
		}, "at the top level of run"},
		{"phase ID", "", func(t *testing.T, p *tile.Program) { p.Exchanges[1].ID = 0 }, "ID 0"},
		{"too many phases", "", func(t *testing.T, p *tile.Program) {
			for len(p.Exchanges) <= tile.MaxRowPhases {
				p.Exchanges = append(p.Exchanges, tile.XPhase{ID: len(p.Exchanges), Name: "extra"})
			}
		}, "the runtime's row table holds"},
		{"phase not run", "", func(t *testing.T, p *tile.Program) {
			p.Exchanges = append(p.Exchanges, tile.XPhase{ID: len(p.Exchanges), Name: "extra"})
		}, `"extra": no tile runs it`},
		{"transfer words", "", func(t *testing.T, p *tile.Program) { p.Exchanges[0].Transfers[0].Words = 0 }, "transfer 0: 0 words"},
		{"transfer source", "", func(t *testing.T, p *tile.Program) { p.Exchanges[0].Transfers[0].Src = -1 }, "source -1 is not an active tile"},
		{"transfer to an inactive tile", "", func(t *testing.T, p *tile.Program) {
			x := &p.Exchanges[0].Transfers[0]
			x.Dsts[0].Tile = p.Tiles
		}, "is not an active tile"},
		{"transfer to itself", "", func(t *testing.T, p *tile.Program) {
			x := &p.Exchanges[0].Transfers[0]
			x.Dsts[0].Tile = x.Src
		}, "is the source"},
		{"destination twice", "", func(t *testing.T, p *tile.Program) {
			x := &p.Exchanges[0].Transfers[0]
			x.Dsts = append(x.Dsts, x.Dsts[0])
		}, "is a destination twice"},
		{"transfer not word-aligned", "", func(t *testing.T, p *tile.Program) { p.Exchanges[0].Transfers[0].SrcRef.Off += 2 }, "want a word-aligned offset"},
		{"transfer steps", "", func(t *testing.T, p *tile.Program) { p.Exchanges[0].Transfers[0].Dsts[0].Ref.Step[0] = 4 }, "that does not step"},
		{"transfer outside its buffer", "", func(t *testing.T, p *tile.Program) { p.Exchanges[0].Transfers[0].Words *= 64 }, "outside its"},
		{"tiles run different phases", "unrolled", func(t *testing.T, p *tile.Program) {
			run := p.Programs[5].Calls[1]
			for i := range run {
				if run[i].Kind == tile.OpExchange {
					p.Programs[5].Calls[1] = append(append([]tile.Op(nil), run[:i]...), run[i+1:]...)
					break
				}
			}
		}, "tile 5 run: its host syncs and exchange phases differ from tile 0's"},
		{"host syncs and phases", "", func(t *testing.T, p *tile.Program) {
			for l := range p.Programs {
				p.Programs[l].Calls[1] = append(p.Programs[l].Calls[1], tile.Op{Kind: tile.OpHostSync})
			}
		}, "tile 0 run: 3 host syncs for 2 host phases"},
		{"binding kind", "", func(t *testing.T, p *tile.Program) { p.Weights[0].Kind = ipuexe.KindInput }, "weight binding 0"},
		{"binding name twice", "", func(t *testing.T, p *tile.Program) { p.Weights[1].Name = p.Weights[0].Name }, "not a unique name"},
		{"padded rows", "row chunks", func(t *testing.T, p *tile.Program) { p.Inputs[0].PadRows = p.Inputs[0].Rows - 1 }, "padded rows 0 or >= the rows"},
		{"no rectangle", "", func(t *testing.T, p *tile.Program) { p.Outputs[0].Slices[1].Block = tile.Rect{} }, "want a non-empty rectangle"},
		{"order", "", func(t *testing.T, p *tile.Program) { p.Outputs[0].Slices[0].Block.Order = 9 }, "unknown element order 9"},
		{"rectangle outside the matrix", "", func(t *testing.T, p *tile.Program) {
			b := &p.Weights[0].Slices[0].Block
			b.Cols = tile.Span{Lo: b.Cols.Lo + 1024, Hi: b.Cols.Hi + 1024}
		}, "want a non-empty rectangle of the padded"},
		{"rectangle of other bytes", "", func(t *testing.T, p *tile.Program) { p.Inputs[0].Slices[0].Block.Rows.Hi-- }, "bytes (f16), the slice"},
		{"rectangle not in column groups", "", func(t *testing.T, p *tile.Program) {
			b := &p.Inputs[0].Slices[0].Block
			b.Cols.Hi -= 8
		}, "want whole 16-column"},
		{"slice outside the binding", "", func(t *testing.T, p *tile.Program) { p.Outputs[0].Slices[0].Offset = p.Outputs[0].Bytes }, "outside the binding's"},
		{"slices do not cover the binding", "", func(t *testing.T, p *tile.Program) { p.Outputs[0].Bytes += 2 }, "the slices cover"},
		{"slice on an inactive tile", "", func(t *testing.T, p *tile.Program) { p.Outputs[0].Slices[0].Tile = -1 }, "tile -1 is not an active tile"},
		{"slice outside its buffer", "", func(t *testing.T, p *tile.Program) { p.Weights[0].Slices[0].Ref.Off += 1 << 20 }, "outside its"},
		{"host calls", "", func(t *testing.T, p *tile.Program) { p.Calls[0], p.Calls[1] = p.Calls[1], p.Calls[0] }, "host calls"},
		{"host transfer binding", "", func(t *testing.T, p *tile.Program) { p.Calls[0].Phases[0][0].Binding = 99 }, "not a slice of a binding of this call"},
		{"host transfer kind", "", func(t *testing.T, p *tile.Program) { p.Calls[0].Phases[0][0].Kind = ipuexe.KindInput }, "not a slice of a binding of this call"},
		{"host transfer through another slot", "", func(t *testing.T, p *tile.Program) { p.Calls[1].Phases[0][0].Tile++ }, "through tile"},
		{"host transfer past the slice", "", func(t *testing.T, p *tile.Program) { p.Calls[1].Phases[0][0].Length++ }, "want a piece of 1.."},
		{"two host transfers in a slot", "", func(t *testing.T, p *tile.Program) {
			ph := &p.Calls[0].Phases[0]
			*ph = append(*ph, (*ph)[0])
		}, "slot already holds transfer 0"},
		{"slice not transferred", "", func(t *testing.T, p *tile.Program) {
			last := &p.Calls[1].Phases[len(p.Calls[1].Phases)-1]
			*last = (*last)[1:]
		}, "the host transfers do not move its"},
		{"host copy bytes", "", func(t *testing.T, p *tile.Program) {
			op, _ := find(t, p, 0, 1, kind(tile.OpHostCopy))
			op.Bytes -= 32
		}, "the host uploads"},
		{"host copy destination", "", func(t *testing.T, p *tile.Program) {
			op, _ := find(t, p, 0, 1, kind(tile.OpHostCopy))
			op.Dst.Off += 32
		}, "the host uploads"},
		{"host copy of nothing", "", func(t *testing.T, p *tile.Program) {
			op, _ := find(t, p, 0, 1, kind(tile.OpHostCopy))
			op.Bytes = 0
		}, "host copy of 0 bytes"},
		{"host copy before the first sync", "", func(t *testing.T, p *tile.Program) {
			op, _ := find(t, p, 0, 1, kind(tile.OpHostCopy))
			p.Programs[0].Calls[1] = append([]tile.Op{*op}, p.Programs[0].Calls[1]...)
		}, "a host copy not after a host phase's sync"},
		{"host copy missing", "", func(t *testing.T, p *tile.Program) {
			run := p.Programs[0].Calls[1]
			for i := range run {
				if run[i].Kind == tile.OpHostCopy {
					p.Programs[0].Calls[1] = append(append([]tile.Op(nil), run[:i]...), run[i+1:]...)
					break
				}
			}
		}, "tile 0 run: no host copy of its piece of host phase 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := c.plan
			if name == "" {
				name = "block loop"
			}
			p := base(t, name)
			c.mod(t, p)
			err := p.Verify()
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant an error with %q", err, c.want)
			}
		})
	}
}
