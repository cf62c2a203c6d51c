package passes

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// ---------------------------------------------------------------------------
// Helpers: hand-built plans.

func ref(buf string, off int) tile.Ref { return tile.Ref{Buf: buf, Off: off} }

func stepRef(buf string, off, step int) tile.Ref {
	return tile.Ref{Buf: buf, Off: off, Step: [tile.MaxLoopDepth]int{step}}
}

func copyOp(dst, src tile.Ref, bytes int) tile.Op {
	return tile.Op{Kind: tile.OpKernel, Kernel: "copy_f16", Params: kernels.Params{"n": bytes},
		Args: []tile.Arg{{Reg: "$m2", Ref: dst}, {Reg: "$m3", Ref: src}}}
}

func fillOp(dst tile.Ref, n int) tile.Op {
	return tile.Op{Kind: tile.OpKernel, Kernel: "fill_zero", Params: kernels.Params{"bytes": n}, Args: []tile.Arg{{Reg: "$m2", Ref: dst}}}
}

// gemmOp is gemm_f16 k=16 c=16 r=4: out 128 bytes, left 128, right 512.
func gemmOp(out, left, right tile.Ref) tile.Op {
	return tile.Op{Kind: tile.OpKernel, Kernel: "gemm_f16", Params: kernels.Params{"k": 16, "c": 16, "r": 4},
		Args: []tile.Arg{{Reg: "$m2", Ref: out}, {Reg: "$m3", Ref: left}, {Reg: "$m4", Ref: right}}}
}

// geluOp is gelu_f16 on n values (2n bytes).
func geluOp(out, in tile.Ref, n int) tile.Op {
	return tile.Op{Kind: tile.OpKernel, Kernel: "gelu_f16", Params: kernels.Params{"n": n}, Args: []tile.Arg{{Reg: "$m2", Ref: out}, {Reg: "$m3", Ref: in}}}
}

// biasOp is add_bias_f16 on 4 panel rows (128 bytes) of a 4-row panel.
func biasOp(out, bias tile.Ref) tile.Op {
	return tile.Op{Kind: tile.OpKernel, Kernel: "add_bias_f16", Params: kernels.Params{"rows": 4, "r": 4},
		Args: []tile.Arg{{Reg: "$m2", Ref: out}, {Reg: "$m3", Ref: bias}}}
}

func xchg(phase int) tile.Op { return tile.Op{Kind: tile.OpExchange, Phase: phase} }

func loop(count int, body ...tile.Op) tile.Op {
	return tile.Op{Kind: tile.OpLoop, Count: count, Depth: 0, Body: body}
}

// handPlan is a plan of n tiles, each with bufs (buffers "a", "c", "w",
// "x", "y" by default) and the given run ops on tile 0.
func handPlan(n int, run []tile.Op, bufs ...tile.Buffer) *tile.Program {
	if bufs == nil {
		bufs = []tile.Buffer{
			{Name: "a", Bytes: 256, Align: 32, Apart: []string{"c"}},
			{Name: "c", Bytes: 256, Align: 32, Apart: []string{"a"}},
			{Name: "w", Bytes: 512, Align: 32, Region: kernels.Interleaved},
			{Name: "x", Bytes: 256, Align: 32},
			{Name: "y", Bytes: 256, Align: 32},
		}
	}
	pl := &tile.Program{Tiles: n, Programs: make([]tile.TileProgram, n)}
	for l := range pl.Programs {
		pl.Programs[l] = tile.TileProgram{Logical: l, Physical: ipu21.LogicalToPhysical(l), Row: 0, Col: l}
		pl.Programs[l].Buffers = slices.Clone(bufs)
	}
	pl.Programs[0].Calls[1] = run
	return pl
}

func tr(src int, sref tile.Ref, words int, dsts ...tile.XDest) tile.XTransfer {
	return tile.XTransfer{Src: src, SrcRef: sref, Words: words, Dsts: dsts}
}

func dst(l int, r tile.Ref) tile.XDest { return tile.XDest{Tile: l, Ref: r} }

// fingerprint digests everything a pass may change, to check that a plan
// copied by value is left intact.
func fingerprint(pl *tile.Program) [32]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%+v|%+v", pl.Programs, pl.Exchanges))
}

// detail returns the value of key in a report's detail.
func detail(t *testing.T, r Report, key string) any {
	t.Helper()
	for i := 0; i+1 < len(r.Detail); i += 2 {
		if r.Detail[i] == key {
			return r.Detail[i+1]
		}
	}
	t.Fatalf("%s report has no %q: %v", r.Pass, key, r.Detail)
	return nil
}

// refsResolve checks that every ref of a hand-built plan names a buffer
// of its tile (the hand-built plans are not complete programs, which
// tile.Program.Verify checks).
func refsResolve(t *testing.T, pl *tile.Program) {
	t.Helper()
	has := func(l int, r tile.Ref) bool {
		return l >= 0 && l < len(pl.Programs) && slices.ContainsFunc(pl.Programs[l].Buffers, func(b tile.Buffer) bool { return b.Name == r.Buf })
	}
	var visit func(l int, ops []tile.Op)
	visit = func(l int, ops []tile.Op) {
		for _, op := range ops {
			if op.Kind == tile.OpHostCopy && !has(l, op.Dst) {
				t.Errorf("tile %d host copy to %q", l, op.Dst.Buf)
			}
			for _, a := range op.Args {
				if !has(l, a.Ref) {
					t.Errorf("tile %d %s %s: no buffer %q", l, op.Kernel, a.Reg, a.Ref.Buf)
				}
			}
			visit(l, op.Body)
		}
	}
	for l := range pl.Programs {
		for _, ops := range pl.Programs[l].Calls {
			visit(l, ops)
		}
		for _, b := range pl.Programs[l].Buffers {
			for _, o := range b.Apart {
				if !has(l, tile.Ref{Buf: o}) {
					t.Errorf("tile %d buffer %q apart from missing %q", l, b.Name, o)
				}
			}
		}
	}
	for _, ph := range pl.Exchanges {
		for _, x := range ph.Transfers {
			if !has(x.Src, x.SrcRef) {
				t.Errorf("phase %q: tile %d has no %q", ph.Name, x.Src, x.SrcRef.Buf)
			}
			for _, d := range x.Dsts {
				if !has(d.Tile, d.Ref) {
					t.Errorf("phase %q: tile %d has no %q", ph.Name, d.Tile, d.Ref.Buf)
				}
			}
		}
	}
	for _, bs := range [][]tile.HostBinding{pl.Inputs, pl.Weights, pl.Outputs} {
		for _, b := range bs {
			for i, s := range b.Slices {
				if !has(s.Tile, s.Ref) {
					t.Errorf("binding %s slice %d: tile %d has no %q", b.Name, i, s.Tile, s.Ref.Buf)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// GroupExchanges

func TestGroupExchanges(t *testing.T) {
	d12 := func(o1, o2 int) []tile.XDest { return []tile.XDest{dst(1, ref("b", o1)), dst(2, ref("b", o2))} }
	for _, c := range []struct {
		name string
		in   []tile.XTransfer
		want []tile.XTransfer
	}{
		{"contiguous pair merges",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a", 16), 2, d12(16, 80)...)},
			[]tile.XTransfer{tr(0, ref("a", 0), 6, d12(0, 64)...)}},
		{"pieces out of order: the lowest offset's refs, at the first piece's place",
			[]tile.XTransfer{tr(0, ref("a", 16), 2, d12(16, 80)...), tr(0, ref("a", 0), 4, d12(0, 64)...)},
			[]tile.XTransfer{tr(0, ref("a", 0), 6, d12(0, 64)...)}},
		{"gap at the source",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a", 20), 2, d12(16, 80)...)},
			nil},
		{"one destination not contiguous",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a", 16), 2, d12(16, 84)...)},
			nil},
		{"destination lists differ (order)",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...),
				tr(0, ref("a", 16), 2, dst(2, ref("b", 80)), dst(1, ref("b", 16)))},
			nil},
		{"destination lists differ (length)",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a", 16), 2, dst(1, ref("b", 16)))},
			nil},
		{"different sources",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(3, ref("a", 16), 2, d12(16, 80)...)},
			nil},
		{"different source buffers",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a2", 16), 2, d12(16, 80)...)},
			nil},
		{"different destination buffers",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...),
				tr(0, ref("a", 16), 2, dst(1, ref("b", 16)), dst(2, ref("b2", 80)))},
			nil},
		{"different steps",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, stepRef("a", 16, 8), 2, d12(16, 80)...)},
			nil},
		{"chain of three, shuffled, merges to one",
			[]tile.XTransfer{tr(0, ref("a", 32), 1, d12(32, 96)...), tr(0, ref("a", 0), 4, d12(0, 64)...),
				tr(0, ref("a", 16), 4, d12(16, 80)...)},
			[]tile.XTransfer{tr(0, ref("a", 0), 9, d12(0, 64)...)}},
		{"interleaved groups keep the order of first occurrence",
			[]tile.XTransfer{
				tr(5, ref("a", 0), 1, dst(6, ref("b", 0))),   // A
				tr(0, ref("a", 0), 1, dst(1, ref("b", 0))),   // B
				tr(5, ref("a", 4), 1, dst(6, ref("b", 4))),   // A
				tr(9, ref("a", 0), 1, dst(1, ref("c", 0))),   // C
				tr(0, ref("a", 4), 1, dst(1, ref("b", 4))),   // B
				tr(5, ref("a", 100), 1, dst(6, ref("b", 8))), // D: not contiguous
			},
			[]tile.XTransfer{tr(5, ref("a", 0), 2, dst(6, ref("b", 0))), tr(0, ref("a", 0), 2, dst(1, ref("b", 0))),
				tr(9, ref("a", 0), 1, dst(1, ref("c", 0))), tr(5, ref("a", 100), 1, dst(6, ref("b", 8)))}},
		{"same source bytes to two places: each joins its own successor",
			[]tile.XTransfer{tr(0, ref("a", 0), 4, dst(1, ref("b", 0))), tr(0, ref("a", 0), 4, dst(1, ref("b", 100))),
				tr(0, ref("a", 16), 4, dst(1, ref("b", 116))), tr(0, ref("a", 16), 4, dst(1, ref("b", 16)))},
			[]tile.XTransfer{tr(0, ref("a", 0), 8, dst(1, ref("b", 0))), tr(0, ref("a", 0), 8, dst(1, ref("b", 100)))}},
		{"no merge beyond the scheduler's transfer size",
			[]tile.XTransfer{tr(0, ref("a", 0), tile.MaxTransferWords/2+1, dst(1, ref("b", 0))),
				tr(0, ref("a", 4*(tile.MaxTransferWords/2+1)), tile.MaxTransferWords/2, dst(1, ref("b", 4*(tile.MaxTransferWords/2+1))))},
			nil},
		{"zero-word transfers are left alone",
			[]tile.XTransfer{tr(0, ref("a", 0), 0, dst(1, ref("b", 0))), tr(0, ref("a", 0), 4, dst(1, ref("b", 0)))},
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == nil {
				want = c.in
			}
			pl := handPlan(2, nil)
			pl.Exchanges = []tile.XPhase{{ID: 0, Name: "empty"}, {ID: 1, Name: "test", Transfers: slices.Clone(c.in)}}
			orig := *pl
			before := fingerprint(pl)
			rep := GroupExchanges(pl)
			if got := pl.Exchanges[1].Transfers; !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			if rep.Pass != "group_exchanges" || rep.Changes != len(c.in)-len(want) {
				t.Errorf("report %+v, want %d changes", rep, len(c.in)-len(want))
			}
			if b, a := detail(t, rep, "transfers_before"), detail(t, rep, "transfers_after"); b != len(c.in) || a != len(want) {
				t.Errorf("detail %v", rep.Detail)
			}
			if fingerprint(&orig) != before {
				t.Error("the pass changed the plan it was copied from")
			}
			// Idempotent.
			if rep := GroupExchanges(pl); rep.Changes != 0 {
				t.Errorf("second run: %+v", rep)
			}
		})
	}
}

// A phase of ~30,000 pieces (3 per range, shuffled) groups back to its
// ranges, in the order of their first pieces, the same way every time.
func TestGroupExchangesLarge(t *testing.T) {
	const ranges = 10000
	rng := rand.New(rand.NewPCG(1, 2))
	var whole, pieces []tile.XTransfer
	for i := 0; i < ranges; i++ {
		src := i % 37
		dsts := []tile.XDest{dst(100+i%11, ref("in", 48*(i/37))), dst(200+i%5, ref("in2", 48*(i/37)))}
		whole = append(whole, tr(src, ref("out", 48*(i/37)), 12, dsts...))
		for k := 0; k < 3; k++ {
			d := slices.Clone(dsts)
			for j := range d {
				d[j].Ref.Off += 16 * k
			}
			pieces = append(pieces, tr(src, ref("out", 48*(i/37)+16*k), 4, d...))
		}
	}
	rng.Shuffle(len(pieces), func(i, j int) { pieces[i], pieces[j] = pieces[j], pieces[i] })
	// The expected order: ranges by their first piece in the shuffle.
	first := map[[2]int]int{}
	for i, p := range pieces {
		key := [2]int{p.Src, p.SrcRef.Off / 48}
		if _, ok := first[key]; !ok {
			first[key] = i
		}
	}
	slices.SortStableFunc(whole, func(a, b tile.XTransfer) int {
		return first[[2]int{a.Src, a.SrcRef.Off / 48}] - first[[2]int{b.Src, b.SrcRef.Off / 48}]
	})
	var prev []tile.XTransfer
	for run := 0; run < 2; run++ {
		pl := &tile.Program{Exchanges: []tile.XPhase{{Name: "big", Transfers: slices.Clone(pieces)}}}
		rep := GroupExchanges(pl)
		got := pl.Exchanges[0].Transfers
		if rep.Changes != 2*ranges || !reflect.DeepEqual(got, whole) {
			t.Fatalf("run %d: %d changes, %d transfers; first %+v, want %+v", run, rep.Changes, len(got), got[0], whole[0])
		}
		if prev != nil && !reflect.DeepEqual(prev, got) {
			t.Fatal("not deterministic")
		}
		prev = got
	}
}

// ---------------------------------------------------------------------------
// MergeCopies

func TestMergeCopies(t *testing.T) {
	cp := func(out, in tile.Ref, n int) tile.Op { return copyOp(out, in, n) }
	named := func(op tile.Op, node, why string) tile.Op { op.Node, op.Why = node, why; return op }
	host := func(d tile.Ref, n int) tile.Op { return tile.Op{Kind: tile.OpHostCopy, Dst: d, Bytes: n} }
	for _, c := range []struct {
		name    string
		in      []tile.Op
		want    []tile.Op // nil: unchanged
		changes int
	}{
		{"adjacent contiguous copies merge, keeping the first's provenance",
			[]tile.Op{named(cp(ref("x", 0), ref("y", 64), 32), "n1", "why1"), named(cp(ref("x", 32), ref("y", 96), 16), "n2", "why2")},
			[]tile.Op{named(cp(ref("x", 0), ref("y", 64), 48), "n1", "why1")}, 1},
		{"chain of three merges to one",
			[]tile.Op{xchg(0), cp(ref("x", 0), ref("y", 0), 8), cp(ref("x", 8), ref("y", 8), 8), cp(ref("x", 16), ref("y", 16), 16), xchg(0)},
			[]tile.Op{xchg(0), cp(ref("x", 0), ref("y", 0), 32), xchg(0)}, 2},
		{"not adjacent",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 8), geluOp(ref("c", 0), ref("a", 0), 4), cp(ref("x", 8), ref("y", 8), 8)}, nil, 0},
		{"out contiguous, in not",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 8), cp(ref("x", 8), ref("y", 16), 8)}, nil, 0},
		{"in contiguous, out not",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 8), cp(ref("x", 16), ref("y", 8), 8)}, nil, 0},
		{"second before the first",
			[]tile.Op{cp(ref("x", 8), ref("y", 8), 8), cp(ref("x", 0), ref("y", 0), 8)}, nil, 0},
		{"other buffer",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 8), cp(ref("a", 8), ref("y", 8), 8)}, nil, 0},
		{"other steps",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 8), cp(stepRef("x", 8, 64), ref("y", 8), 8)}, nil, 0},
		{"merged ranges would overlap (the second reads what the first wrote)",
			[]tile.Op{cp(ref("x", 0), ref("x", 8), 8), cp(ref("x", 8), ref("x", 16), 8)}, nil, 0},
		{"in-place copies merge",
			[]tile.Op{cp(ref("x", 0), ref("x", 0), 8), cp(ref("x", 8), ref("x", 8), 8)},
			[]tile.Op{cp(ref("x", 0), ref("x", 0), 16)}, 1},
		{"same buffer, apart",
			[]tile.Op{cp(ref("x", 0), ref("x", 64), 8), cp(ref("x", 8), ref("x", 72), 8)},
			[]tile.Op{cp(ref("x", 0), ref("x", 64), 16)}, 1},
		{"summed size beyond the kernel's limit",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 128<<10), cp(ref("x", 128<<10), ref("y", 128<<10), 128<<10)}, nil, 0},
		{"a loop is a boundary; its body merges within itself",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 8),
				loop(3, cp(stepRef("x", 8, 32), stepRef("y", 8, 32), 8), cp(stepRef("x", 16, 32), stepRef("y", 16, 32), 8)),
				cp(ref("x", 104), ref("y", 104), 8)},
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 8),
				loop(3, cp(stepRef("x", 8, 32), stepRef("y", 8, 32), 16)),
				cp(ref("x", 104), ref("y", 104), 8)}, 1},
		{"copies on either side of a loop do not merge",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 8), loop(2, xchg(0)), cp(ref("x", 8), ref("y", 8), 8)}, nil, 0},
		{"host copies are never merged (each reads the window from its start)",
			[]tile.Op{host(ref("x", 0), 64), host(ref("x", 64), 64)}, nil, 0},
		{"unknown kernels are kept",
			[]tile.Op{{Kind: tile.OpKernel, Kernel: "no_such_kernel", Args: []tile.Arg{{Reg: "$m2", Ref: ref("x", 0)}}}, cp(ref("x", 0), ref("y", 0), 8)}, nil, 0},
		{"copy parameters that do not resolve are kept",
			[]tile.Op{cp(ref("x", 0), ref("y", 0), 12), cp(ref("x", 12), ref("y", 12), 12)}, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == nil {
				want = c.in
			}
			pl := handPlan(2, slices.Clone(c.in))
			pl.Programs[1].Calls[0] = slices.Clone(c.in) // initialize is merged too
			orig := *pl
			before := fingerprint(pl)
			rep := MergeCopies(pl)
			for l, call := range [][]tile.Op{pl.Programs[0].Calls[1], pl.Programs[1].Calls[0]} {
				if !reflect.DeepEqual(call, want) {
					t.Fatalf("call %d:\ngot  %+v\nwant %+v", l, call, want)
				}
			}
			if rep.Pass != "merge_copies" || rep.Changes != 2*c.changes {
				t.Errorf("report %+v, want %d changes", rep, 2*c.changes)
			}
			if fingerprint(&orig) != before {
				t.Error("the pass changed the plan it was copied from")
			}
			if rep := MergeCopies(pl); rep.Changes != 0 {
				t.Errorf("second run: %+v", rep)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Eliminate: clears

func TestEliminateClears(t *testing.T) {
	// Phase 0: tile 1 sends 32 words to tile 0's "c". Phase 1: tile 0
	// sends its "c" to tile 1.
	phases := []tile.XPhase{
		{ID: 0, Name: "in", Transfers: []tile.XTransfer{tr(1, ref("x", 0), 32, dst(0, ref("c", 0)))}},
		{ID: 1, Name: "out", Transfers: []tile.XTransfer{tr(0, ref("c", 0), 32, dst(1, ref("x", 0)))}},
	}
	gemm := gemmOp(ref("c", 0), ref("a", 0), ref("w", 0)) // writes c[0,128), reads a[0,128), w
	for _, c := range []struct {
		name string
		run  []tile.Op
		drop []int // indices of the clears that go
	}{
		{"covered by a GEMM's output", []tile.Op{fillOp(ref("c", 0), 128), gemm}, []int{0}},
		{"covered by a GEMM after unrelated work", []tile.Op{fillOp(ref("c", 0), 128), {Kind: tile.OpSample}, geluOp(ref("y", 0), ref("x", 0), 64), {Kind: tile.OpHostSync}, gemm}, []int{0}},
		{"read first", []tile.Op{fillOp(ref("c", 0), 128), copyOp(ref("x", 0), ref("c", 64), 8), gemm}, nil},
		{"a GEMM that reads the cleared left panel", []tile.Op{fillOp(ref("a", 0), 128), gemm}, nil},
		{"only partly covered", []tile.Op{fillOp(ref("c", 0), 256), gemm}, nil},
		{"covered by two copies", []tile.Op{fillOp(ref("c", 0), 128), copyOp(ref("c", 64), ref("x", 0), 64), copyOp(ref("c", 0), ref("x", 64), 64)}, []int{0}},
		{"covered by an exchange destination", []tile.Op{fillOp(ref("c", 0), 128), xchg(0)}, []int{0}},
		{"sent by an exchange", []tile.Op{fillOp(ref("c", 0), 128), xchg(1), gemm}, nil},
		{"covered by a host copy", []tile.Op{fillOp(ref("c", 8), 64), {Kind: tile.OpHostCopy, Dst: ref("c", 0), Bytes: 128}}, []int{0}},
		{"add_bias reads its output", []tile.Op{fillOp(ref("c", 0), 128), biasOp(ref("c", 0), ref("x", 0)), gemm}, nil},
		{"in-place gelu reads its output", []tile.Op{fillOp(ref("c", 0), 128), geluOp(ref("c", 0), ref("c", 0), 64), gemm}, nil},
		{"gelu from elsewhere overwrites", []tile.Op{fillOp(ref("c", 0), 128), geluOp(ref("c", 0), ref("x", 0), 64)}, []int{0}},
		{"an output overlapping an input counts as read", []tile.Op{fillOp(ref("c", 0), 64), geluOp(ref("c", 0), ref("c", 64), 64), gemm}, nil},
		{"in-place copy reads its output", []tile.Op{fillOp(ref("c", 0), 8), copyOp(ref("c", 0), ref("c", 0), 8), gemm}, nil},
		{"a loop in between", []tile.Op{fillOp(ref("c", 0), 128), loop(2, xchg(0)), gemm}, nil},
		{"an unknown kernel in between", []tile.Op{fillOp(ref("c", 0), 128), {Kind: tile.OpKernel, Kernel: "no_such_kernel"}, gemm}, nil},
		{"an unknown phase in between", []tile.Op{fillOp(ref("c", 0), 128), xchg(7), gemm}, nil},
		{"nothing after it (read back by the host or the next call)", []tile.Op{gemm, fillOp(ref("c", 0), 128)}, nil},
		{"other buffers do not alias", []tile.Op{fillOp(ref("c", 0), 128), gemmOp(ref("y", 0), ref("a", 0), ref("w", 0))}, nil},
		{"two clears covered in turn", []tile.Op{fillOp(ref("c", 0), 64), fillOp(ref("c", 0), 128), gemm}, []int{0, 1}},
		{"a clear covered by a clear that stays", []tile.Op{fillOp(ref("c", 0), 64), fillOp(ref("c", 0), 128)}, []int{0}},
		{"dense unpack overwrites", []tile.Op{fillOp(ref("c", 0), 16),
			{Kind: tile.OpKernel, Kernel: "unpack_out_f16", Params: kernels.Params{"r": 2, "c": 4}, Args: []tile.Arg{{Reg: "$m2", Ref: ref("c", 0)}, {Reg: "$m3", Ref: ref("x", 0)}}}}, []int{0}},
		{"strided unpack leaves gaps", []tile.Op{fillOp(ref("c", 0), 24),
			{Kind: tile.OpKernel, Kernel: "unpack_out_f16", Params: kernels.Params{"r": 2, "c": 4, "stride": 8}, Args: []tile.Arg{{Reg: "$m2", Ref: ref("c", 0)}, {Reg: "$m3", Ref: ref("x", 0)}}}}, nil},
		{"a clear with bad parameters", []tile.Op{fillOp(ref("c", 0), 12), gemm}, nil},
		{"a clear that steps (outside a loop)", []tile.Op{fillOp(stepRef("c", 0, 8), 128), gemm}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := handPlan(2, slices.Clone(c.run))
			pl.Exchanges = slices.Clone(phases)
			orig := *pl
			before := fingerprint(pl)
			rep := Eliminate(pl)
			var want []tile.Op
			clears := 0
			for i, op := range c.run {
				if slices.Contains(c.drop, i) {
					continue
				}
				if isClear(&op) {
					clears++
				}
				want = append(want, op)
			}
			if got := pl.Programs[0].Calls[1]; !reflect.DeepEqual(got, want) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			if d, k := detail(t, rep, "clears_dropped"), detail(t, rep, "clears_kept"); d != len(c.drop) || k != clears {
				t.Errorf("detail %v, want %d dropped, %d kept", rep.Detail, len(c.drop), clears)
			}
			if fingerprint(&orig) != before {
				t.Error("the pass changed the plan it was copied from")
			}
			if rep := Eliminate(pl); rep.Changes != 0 {
				t.Errorf("second run: %+v", rep)
			}
		})
	}
}

// The calls are analysed separately: a clear at the end of "initialize"
// is kept even when "run" overwrites it first; clears in loops are kept.
func TestEliminateClearsPerCallAndLoops(t *testing.T) {
	gemm := gemmOp(ref("c", 0), ref("a", 0), ref("w", 0))
	pl := handPlan(1, []tile.Op{gemm, loop(2, fillOp(ref("c", 0), 128), gemm)})
	pl.Programs[0].Calls[0] = []tile.Op{fillOp(ref("c", 0), 128)}
	rep := Eliminate(pl)
	if detail(t, rep, "clears_dropped") != 0 || detail(t, rep, "clears_kept") != 2 || len(pl.Programs[0].Calls[0]) != 1 || len(pl.Programs[0].Calls[1][1].Body) != 2 {
		t.Fatalf("%+v %+v", rep, pl.Programs[0].Calls)
	}
}

// ---------------------------------------------------------------------------
// Eliminate: phases and buffers

func TestEliminatePhases(t *testing.T) {
	x := func(src int) tile.XTransfer { return tr(src, ref("x", 0), 4, dst(1-src, ref("y", 0))) }
	pl := handPlan(2, []tile.Op{xchg(0), xchg(1), xchg(2), loop(2, xchg(3)), loop(2, xchg(2), xchg(1), xchg(3)), xchg(9), xchg(-1)})
	pl.Programs[1].Calls[0] = []tile.Op{xchg(3), xchg(2)}
	pl.Exchanges = []tile.XPhase{
		{ID: 0, Name: "p0", Transfers: []tile.XTransfer{x(0)}},
		{ID: 1, Name: "empty1"},
		{ID: 2, Name: "p2", Transfers: []tile.XTransfer{x(1)}},
		{ID: 3, Name: "empty3", Transfers: []tile.XTransfer{}},
	}
	orig := *pl
	before := fingerprint(pl)
	rep := Eliminate(pl)
	if detail(t, rep, "phases_removed") != 2 || detail(t, rep, "exchange_ops_removed") != 5 {
		t.Errorf("detail %v", rep.Detail)
	}
	want := []tile.XPhase{{ID: 0, Name: "p0", Transfers: []tile.XTransfer{x(0)}}, {ID: 1, Name: "p2", Transfers: []tile.XTransfer{x(1)}}}
	if !reflect.DeepEqual(pl.Exchanges, want) {
		t.Errorf("phases %+v", pl.Exchanges)
	}
	// The empty loop goes; unknown phase numbers stay unknown.
	wantRun := []tile.Op{xchg(0), xchg(1), loop(2, xchg(1)), xchg(9), xchg(-1)}
	if got := pl.Programs[0].Calls[1]; !reflect.DeepEqual(got, wantRun) {
		t.Errorf("run\ngot  %+v\nwant %+v", got, wantRun)
	}
	if got := pl.Programs[1].Calls[0]; !reflect.DeepEqual(got, []tile.Op{xchg(1)}) {
		t.Errorf("tile 1 initialize %+v", got)
	}
	if fingerprint(&orig) != before {
		t.Error("the pass changed the plan it was copied from")
	}
	if rep := Eliminate(pl); rep.Changes != 0 {
		t.Errorf("second run: %+v", rep)
	}
}

func TestEliminateBuffers(t *testing.T) {
	bufs := []tile.Buffer{
		{Name: "op", Bytes: 64},
		{Name: "loopop", Bytes: 64},
		{Name: "hostcopy", Bytes: 64},
		{Name: "src", Bytes: 64},
		{Name: "dst", Bytes: 64},
		{Name: "slice", Bytes: 64},
		{Name: "unused", Bytes: 64, Apart: []string{"unused2"}},
		{Name: "unused2", Bytes: 64, Apart: []string{"unused"}},
		{Name: "apart", Bytes: 64, Apart: []string{"unused", "op", "unused2"}},
	}
	pl := handPlan(2, []tile.Op{
		copyOp(ref("op", 0), ref("apart", 0), 8),
		loop(2, fillOp(stepRef("loopop", 0, 8), 8)),
		{Kind: tile.OpHostCopy, Dst: ref("hostcopy", 0), Bytes: 8},
	}, bufs...)
	pl.Exchanges = []tile.XPhase{{Name: "p", Transfers: []tile.XTransfer{tr(0, ref("src", 0), 1, dst(1, ref("dst", 0))), tr(1, ref("op", 0), 1, dst(0, ref("dst", 0)))}}}
	pl.Outputs = []tile.HostBinding{{Name: "out", Slices: []tile.HostSlice{{Tile: 0, Ref: ref("slice", 0), Length: 8}}}}
	orig := *pl
	before := fingerprint(pl)
	rep := Eliminate(pl)
	names := func(l int) (out []string) {
		for _, b := range pl.Programs[l].Buffers {
			out = append(out, b.Name)
		}
		return out
	}
	if got, want := names(0), []string{"op", "loopop", "hostcopy", "src", "dst", "slice", "apart"}; !slices.Equal(got, want) {
		t.Errorf("tile 0 buffers %v, want %v", got, want)
	}
	if got, want := names(1), []string{"op", "dst"}; !slices.Equal(got, want) {
		t.Errorf("tile 1 buffers %v, want %v", got, want)
	}
	if a := pl.Programs[0].Buffers[6].Apart; !slices.Equal(a, []string{"op"}) {
		t.Errorf("apart %v", a)
	}
	if rep.Changes != 2+7 || detail(t, rep, "buffers_removed") != 9 {
		t.Errorf("report %+v", rep)
	}
	if fingerprint(&orig) != before || len(orig.Programs[0].Buffers[8].Apart) != 3 {
		t.Error("the pass changed the plan it was copied from")
	}
	refsResolve(t, pl)
	if rep := Eliminate(pl); rep.Changes != 0 {
		t.Errorf("second run: %+v", rep)
	}
}

// Odd input is reported as nothing to do, not a panic.
func TestPassesOddInput(t *testing.T) {
	for _, r := range Optimize(nil) {
		if r.Changes != 0 {
			t.Errorf("nil plan: %+v", r)
		}
	}
	pl := handPlan(2, []tile.Op{
		{Kind: tile.OpKernel, Kernel: "no_such_kernel", Args: []tile.Arg{{Reg: "$m2", Ref: ref("x", 0)}}},
		{Kind: tile.OpKernel, Kernel: "copy_f16"}, // no arguments
		fillOp(ref("x", 0), 8),
		{Kind: tile.OpKernel, Kernel: "gemm_f16", Params: kernels.Params{"k": 16, "c": 16, "r": 4}}, // no arguments
		{Kind: tile.OpKind(99)},
	})
	pl.Exchanges = []tile.XPhase{{Name: "bad tiles", Transfers: []tile.XTransfer{tr(-3, ref("x", 0), 1, dst(99, ref("y", 0))), tr(-3, ref("x", 4), 1, dst(99, ref("y", 4)))}}}
	pl.Outputs = []tile.HostBinding{{Name: "out", Slices: []tile.HostSlice{{Tile: 7, Ref: ref("x", 0)}, {Tile: -1, Ref: ref("x", 0)}}}}
	want := slices.Clone(pl.Programs[0].Calls[1])
	reps := Optimize(pl)
	if got := pl.Programs[0].Calls[1]; !reflect.DeepEqual(got, want) {
		t.Errorf("ops changed: %+v", got)
	}
	if reps[0].Changes != 1 {
		t.Errorf("%+v", reps[0])
	}
}

func TestPassReportLog(t *testing.T) {
	var buf bytes.Buffer
	pl := handPlan(1, []tile.Op{copyOp(ref("x", 0), ref("y", 0), 8), copyOp(ref("x", 8), ref("y", 8), 8)})
	for _, r := range Optimize(pl) {
		r.Log(slog.New(slog.NewTextHandler(&buf, nil)))
	}
	out := buf.String()
	for _, s := range []string{"pass=group_exchanges", "pass=merge_copies changes=1 copies_merged=1", "pass=eliminate", "buffers_removed=3"} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
}

// Eliminate exposes copies to MergeCopies (a dead clear between them); one
// Optimize merges them, and a second one finds nothing.
func TestOptimizeIdempotent(t *testing.T) {
	pl := handPlan(2, []tile.Op{
		copyOp(ref("x", 0), ref("y", 0), 8), fillOp(ref("c", 0), 128), copyOp(ref("x", 8), ref("y", 8), 8),
		xchg(1), copyOp(ref("x", 16), ref("y", 16), 8), gemmOp(ref("c", 0), ref("a", 0), ref("w", 0)),
	})
	pl.Exchanges = []tile.XPhase{{Name: "p", Transfers: []tile.XTransfer{tr(0, ref("x", 0), 1, dst(1, ref("y", 0))), tr(0, ref("x", 4), 1, dst(1, ref("y", 4)))}}, {Name: "empty"}}
	reps := Optimize(pl)
	if reps[0].Changes != 1 || reps[1].Changes != 2 || reps[2].Changes != 1+1+4 {
		t.Errorf("%+v", reps)
	}
	want := []tile.Op{copyOp(ref("x", 0), ref("y", 0), 24), gemmOp(ref("c", 0), ref("a", 0), ref("w", 0))}
	if got := pl.Programs[0].Calls[1]; !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	for _, r := range Optimize(pl) {
		if r.Changes != 0 {
			t.Errorf("second Optimize: %+v", r)
		}
	}
}

// ---------------------------------------------------------------------------
// The pass table

func TestTable(t *testing.T) {
	if err := checkTable(Table); err != nil {
		t.Fatalf("the pass table: %v", err)
	}
	var names []string
	for _, p := range Table {
		names = append(names, p.Name)
	}
	if want := []string{"group_exchanges", "merge_copies", "eliminate", "merge_copies"}; !slices.Equal(names, want) {
		t.Errorf("table %v, want %v (Optimize's documented order)", names, want)
	}
	run := func(*tile.Program) Report { return Report{} }
	for _, c := range []struct {
		name  string
		table []Pass
		want  string
	}{
		{"no name", []Pass{{Run: run}}, "no name or no function"},
		{"no function", []Pass{{Name: "a"}}, "no name or no function"},
		{"after an unknown pass", []Pass{{Name: "a", Run: run, After: []string{"x"}}}, `after "x", which is not in the table`},
		{"before an unknown pass", []Pass{{Name: "a", Run: run, Before: []string{"x"}}}, `before "x", which is not in the table`},
		{"after a later pass", []Pass{{Name: "a", Run: run, After: []string{"b"}}, {Name: "b", Run: run}}, "entry 0 (a) must run after b"},
		{"before an earlier pass", []Pass{{Name: "b", Run: run}, {Name: "a", Run: run, Before: []string{"b"}}}, "entry 1 (a) must run before b"},
		{"unsatisfiable", []Pass{{Name: "a", Run: run, After: []string{"b"}}, {Name: "b", Run: run, After: []string{"a"}}}, "must run after"},
		{"rerun without a condition", []Pass{{Name: "a", Run: run}, {Name: "a", Run: run}}, "runs the pass again without a condition"},
		{"condition on a first run", []Pass{{Name: "b", Run: run}, {Name: "a", Run: run, If: "b"}}, "is the pass's first run"},
		{"condition on a later pass", []Pass{{Name: "a", Run: run}, {Name: "a", Run: run, If: "b"}, {Name: "b", Run: run}}, `condition "b" is not an earlier pass`},
		{"condition on itself", []Pass{{Name: "a", Run: run}, {Name: "a", Run: run, If: "a"}}, `condition "a" is not an earlier pass`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkTable(c.table)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// A rerun runs only when its condition changed something, and adds its
// changes to the pass's first report.
func TestTableRerun(t *testing.T) {
	changes := map[string]int{"a": 1, "b": 0, "c": 2}
	calls := map[string]int{}
	pass := func(name string) func(*tile.Program) Report {
		return func(*tile.Program) Report {
			calls[name]++
			return Report{Pass: name, Changes: changes[name], Detail: []any{"n", calls[name]}}
		}
	}
	table := []Pass{
		{Name: "a", Run: pass("a")}, {Name: "b", Run: pass("b")}, {Name: "c", Run: pass("c")},
		{Name: "a", Run: pass("a"), If: "b"}, // b changed nothing: skipped
		{Name: "a", Run: pass("a"), If: "c"},
	}
	if err := checkTable(table); err != nil {
		t.Fatal(err)
	}
	var after []string
	reps, err := run(table, nil, func(p *Pass) error { after = append(after, p.Name); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 3 || reps[0].Pass != "a" || reps[0].Changes != 2 || calls["a"] != 2 || len(reps[0].Detail) != 3 {
		t.Fatalf("reports %+v, calls %v", reps, calls)
	}
	if g, ok := reps[0].Detail[2].(slog.Attr); !ok || g.Key != "after_c" {
		t.Errorf("rerun detail %v", reps[0].Detail[2])
	}
	if !slices.Equal(after, []string{"a", "b", "c", "a"}) {
		t.Errorf("checked after %v", after)
	}
}
