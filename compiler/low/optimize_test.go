package low

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// The passes (compiler/tile/passes) on real plans: lowered from
// compiler/mid plans, verified (tile.Program.Verify) before the passes
// and after every one.

// verify fails the test when pl's per-tile program is not valid.
func verify(t *testing.T, pl *Plan) {
	t.Helper()
	if err := pl.Verify(); err != nil {
		t.Fatal(err)
	}
}

// fingerprint digests everything a pass may change, to check that a plan
// copied by value is left intact.
func fingerprint(pl *Plan) [32]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%+v|%+v", pl.Programs, pl.Exchanges))
}

func copyOp(dst, src tile.Ref, n int) tile.Op {
	return tile.KernelOp(kernels.Copy{N: n}, tile.Op{Args: []tile.Arg{{Reg: "$m2", Ref: dst}, {Reg: "$m3", Ref: src}}})
}

func fillOp(dst tile.Ref, n int) tile.Op {
	return tile.Op{Kind: tile.OpKernel, Kernel: "fill_zero", Params: kernels.Params{"bytes": n}, Args: []tile.Arg{{Reg: "$m2", Ref: dst}}}
}

// realPlans lowers compiler/mid plans of GEMMs and MLPs (K-split, biases,
// row chunks, a runtime loop over blocks, the default workloads on 1472
// tiles), without the low passes.
func realPlans(t *testing.T) map[string]*Plan {
	t.Helper()
	mlp := func(c graph.MLPConfig) *graph.Graph {
		g, err := graph.MLPGraph(c, 1, graph.GeluTanh)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	gemm := func(c graph.GemmConfig) *graph.Graph {
		g, err := graph.GemmGraph(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	plans := map[string]*Plan{}
	for name, c := range map[string]struct {
		g     *graph.Graph
		tiles int
		want  func(*mid.Plan) bool
	}{
		"gemm 96x64x96":          {gemm(graph.GemmConfig{M: 96, K: 64, N: 96}), 12, nil},
		"mlp K-split":            {mlp(graph.MLPConfig{Batch: 1, Tokens: 64, Dim: 128, Hidden: 512, Blocks: 1}), 64, func(mp *mid.Plan) bool { return mp.Gemms[1].Inner.Count > 1 }},
		"mlp biases, two blocks": {mlp(graph.MLPConfig{Batch: 2, Tokens: 8, Dim: 64, Hidden: 96, Blocks: 2, Biases: true}), 8, func(mp *mid.Plan) bool { return mp.Period == 0 }},
		"mlp biases, block loop": {mlp(graph.MLPConfig{Batch: 1, Tokens: 77, Dim: 40, Hidden: 90, Blocks: 3, Biases: true}), 64, func(mp *mid.Plan) bool { return mp.Period > 0 }},
		"mlp in-place chunks":    {mlp(graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 256, Hidden: 1024, Blocks: 1}), 4, func(mp *mid.Plan) bool { return mp.Period > 0 && mp.Chunks > 1 }},
		"mlp row chunks":         {mlp(graph.MLPConfig{Batch: 1, Tokens: 729, Dim: 256, Hidden: 1024, Blocks: 1}), 4, func(mp *mid.Plan) bool { return mp.Chunks > 1 && mp.Period == 0 }},
		"mlp default on 1472":    {mlp(graph.DefaultMLP), 1472, nil},
		"gemm default on 1472":   {gemm(graph.DefaultGemm), 1472, nil},
	} {
		p, err := NewProblem(c.g)
		if err != nil {
			t.Fatal(err)
		}
		res, err := mid.Search(c.g, ipu21.IPU21(), mid.Options{Tiles: c.tiles, Finalists: 4})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, mp := range res.Finalists {
			if c.want != nil && !c.want(mp) {
				continue
			}
			if plans[name], err = FromMid(p, mp, Options{Tiles: c.tiles}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			break
		}
		if plans[name] == nil {
			t.Fatalf("%s: no such finalist", name)
		}
	}
	return plans
}

// Optimize keeps real plans valid, leaves the plan it was copied from
// alone and is idempotent.
func TestOptimizeRealPlans(t *testing.T) {
	for name, pl := range realPlans(t) {
		t.Run(name, func(t *testing.T) {
			verify(t, pl)
			before := fingerprint(pl)
			cp := *pl
			reps, err := OptimizeVerified(&cp)
			if err != nil {
				t.Fatal(err)
			}
			if len(reps) != 3 || reps[0].Pass != "group_exchanges" || reps[1].Pass != "merge_copies" || reps[2].Pass != "eliminate" {
				t.Fatalf("%+v", reps)
			}
			verify(t, &cp)
			if fingerprint(pl) != before {
				t.Error("Optimize changed the plan it was copied from")
			}
			for _, r := range Optimize(&cp) {
				if r.Changes != 0 {
					t.Errorf("second Optimize: %+v", r)
				}
			}
		})
	}
}

// Optimized real plans with their transfers cut into shuffled pieces,
// their copies cut in halves and dead clears inserted come back to the
// optimized plan.
func TestOptimizeRestoresRealPlans(t *testing.T) {
	for name, pl := range realPlans(t) {
		t.Run(name, func(t *testing.T) {
			Optimize(pl)
			pl.Passes = nil
			want := fingerprint(pl)
			cp := *pl
			// Transfers: three pieces each (when the words allow), the
			// second and third pieces moved to the end of the phase in
			// reverse order.
			cp.Exchanges = slices.Clone(pl.Exchanges)
			cut := 0
			for p := range cp.Exchanges {
				var head, tail []tile.XTransfer
				for _, x := range pl.Exchanges[p].Transfers {
					if x.Words < 3 {
						head = append(head, x)
						continue
					}
					w := []int{x.Words / 3, x.Words / 3, x.Words - 2*(x.Words/3)}
					off := 0
					for k := range w {
						piece := x
						piece.Words = w[k]
						piece.SrcRef.Off += 4 * off
						piece.Dsts = slices.Clone(x.Dsts)
						for d := range piece.Dsts {
							piece.Dsts[d].Ref.Off += 4 * off
						}
						off += w[k]
						if k == 0 {
							head = append(head, piece)
						} else {
							tail = append(tail, piece)
						}
					}
					cut += 2
				}
				slices.Reverse(tail)
				cp.Exchanges[p].Transfers = append(head, tail...)
			}
			// Copies: two halves; clears: before every top-level GEMM, of
			// its whole output.
			halves, clears := 0, 0
			var split func(ops []tile.Op, top bool) []tile.Op
			split = func(ops []tile.Op, top bool) []tile.Op {
				var out []tile.Op
				for _, op := range ops {
					switch {
					case op.Kind == tile.OpLoop:
						op.Body = split(op.Body, false)
					case op.Kind == tile.OpKernel && op.Kernel == "copy_f16" && op.Params["n"]%16 == 0:
						n := op.Params["n"] / 2
						a, b := copyOp(op.Args[0].Ref, op.Args[1].Ref, n), copyOp(op.Args[0].Ref, op.Args[1].Ref, n)
						a.Node, a.Why, b.Node, b.Why = op.Node, op.Why, op.Node, op.Why
						b.Args[0].Ref.Off += n
						b.Args[1].Ref.Off += n
						out = append(out, a, b)
						halves++
						continue
					case op.Kind == tile.OpKernel && op.Kernel == "gemm_f16" && top:
						k, _ := kernels.Lookup("gemm_f16")
						out = append(out, fillOp(op.Args[0].Ref, k.Operands[0].Bytes(op.Params)))
						clears++
					}
					out = append(out, op)
				}
				return out
			}
			cp.Programs = slices.Clone(pl.Programs)
			for l := range cp.Programs {
				for c := range cp.Programs[l].Calls {
					cp.Programs[l].Calls[c] = split(pl.Programs[l].Calls[c], true)
				}
			}
			if cut == 0 || halves+clears == 0 {
				t.Fatalf("nothing to restore: %d transfers cut, %d copies halved, %d clears", cut, halves, clears)
			}
			verify(t, &cp)
			reps, err := OptimizeVerified(&cp)
			if err != nil {
				t.Fatal(err)
			}
			if reps[0].Changes != cut || reps[1].Changes != halves || reps[2].Changes != clears {
				t.Errorf("%+v, want %d, %d, %d changes", reps, cut, halves, clears)
			}
			if fingerprint(&cp) != want {
				for l := range cp.Programs {
					if !reflect.DeepEqual(cp.Programs[l], pl.Programs[l]) {
						t.Fatalf("tile %d:\ngot  %+v\nwant %+v", l, cp.Programs[l].Calls, pl.Programs[l].Calls)
					}
				}
				t.Fatal("phases differ")
			}
		})
	}
}
