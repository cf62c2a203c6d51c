package low

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

	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// ---------------------------------------------------------------------------
// Helpers: hand-built plans.

func ref(buf string, off int) Ref { return Ref{Buf: buf, Off: off} }

func stepRef(buf string, off, step int) Ref {
	return Ref{Buf: buf, Off: off, Step: [MaxLoopDepth]int{step}}
}

func copyOp(dst, src Ref, bytes int) Op {
	return Op{Kind: OpKernel, Kernel: "copy_f16", Params: kernels.Params{"n": bytes},
		Args: []Arg{{"$m2", dst}, {"$m3", src}}}
}

func fillOp(dst Ref, n int) Op {
	return Op{Kind: OpKernel, Kernel: "fill_zero", Params: kernels.Params{"bytes": n}, Args: []Arg{{"$m2", dst}}}
}

// gemmOp is gemm_f16 k=16 c=16 r=4: out 128 bytes, left 128, right 512.
func gemmOp(out, left, right Ref) Op {
	return Op{Kind: OpKernel, Kernel: "gemm_f16", Params: kernels.Params{"k": 16, "c": 16, "r": 4},
		Args: []Arg{{"$m2", out}, {"$m3", left}, {"$m4", right}}}
}

// geluOp is gelu_f16 on n values (2n bytes).
func geluOp(out, in Ref, n int) Op {
	return Op{Kind: OpKernel, Kernel: "gelu_f16", Params: kernels.Params{"n": n}, Args: []Arg{{"$m2", out}, {"$m3", in}}}
}

// biasOp is add_bias_f16 on 4 panel rows (128 bytes) of a 4-row panel.
func biasOp(out, bias Ref) Op {
	return Op{Kind: OpKernel, Kernel: "add_bias_f16", Params: kernels.Params{"rows": 4, "r": 4},
		Args: []Arg{{"$m2", out}, {"$m3", bias}}}
}

func xchg(phase int) Op { return Op{Kind: OpExchange, Phase: phase} }

func loop(count int, body ...Op) Op { return Op{Kind: OpLoop, Count: count, Depth: 0, Body: body} }

// handPlan is a plan of n tiles, each with bufs (buffers "a", "c", "w",
// "x", "y" by default) and the given run ops on tile 0.
func handPlan(n int, run []Op, bufs ...Buffer) *Plan {
	if bufs == nil {
		bufs = []Buffer{
			{Name: "a", Bytes: 256, Align: 32, Apart: []string{"c"}},
			{Name: "c", Bytes: 256, Align: 32, Apart: []string{"a"}},
			{Name: "w", Bytes: 512, Align: 32, Region: kernels.Interleaved},
			{Name: "x", Bytes: 256, Align: 32},
			{Name: "y", Bytes: 256, Align: 32},
		}
	}
	pl := &Plan{Tiles: n}
	pl.initPrograms()
	for l := range pl.Programs {
		pl.Programs[l].Row, pl.Programs[l].Col = 0, l
		pl.Programs[l].Buffers = slices.Clone(bufs)
	}
	pl.Programs[0].Calls[1] = run
	return pl
}

func tr(src int, sref Ref, words int, dsts ...XDest) XTransfer {
	return XTransfer{Src: src, SrcRef: sref, Words: words, Dsts: dsts}
}

func dst(tile int, r Ref) XDest { return XDest{Tile: tile, Ref: r} }

// fingerprint digests everything a pass may change, to check that a plan
// copied by value is left intact.
func fingerprint(pl *Plan) [32]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%+v|%+v", pl.Programs, pl.Exchanges))
}

// detail returns the value of key in a report's detail.
func detail(t *testing.T, r PassReport, key string) any {
	t.Helper()
	for i := 0; i+1 < len(r.Detail); i += 2 {
		if r.Detail[i] == key {
			return r.Detail[i+1]
		}
	}
	t.Fatalf("%s report has no %q: %v", r.Pass, key, r.Detail)
	return nil
}

// checkPlan is a structural validation of a plan: phase IDs are their
// indices, every op's phase exists, every kernel call resolves and its
// (top-level) operands lie in buffers of the tile, transfers and host
// slices name existing buffers and stay inside them, and Apart names
// existing buffers.
func checkPlan(t *testing.T, pl *Plan) {
	t.Helper()
	var errs []string
	bad := func(format string, args ...any) {
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	size := func(tile int, r Ref) (int, bool) {
		if tile < 0 || tile >= len(pl.Programs) {
			return 0, false
		}
		for _, b := range pl.Programs[tile].Buffers {
			if b.Name == r.Buf {
				return b.Bytes, true
			}
		}
		return 0, false
	}
	inside := func(what string, tile int, r Ref, n int) {
		bytes, ok := size(tile, r)
		switch {
		case !ok:
			bad("%s: tile %d has no buffer %q", what, tile, r.Buf)
		case r.Step == [MaxLoopDepth]int{} && (r.Off < 0 || r.Off+n > bytes):
			bad("%s: tile %d %q [%d, +%d) outside its %d bytes", what, tile, r.Buf, r.Off, n, bytes)
		}
	}
	for p, ph := range pl.Exchanges {
		if ph.ID != p {
			bad("phase %d has ID %d", p, ph.ID)
		}
		for i, x := range ph.Transfers {
			what := fmt.Sprintf("phase %d transfer %d", p, i)
			if x.Words <= 0 || x.Words > maxTransferWords || len(x.Dsts) == 0 {
				bad("%s: %d words, %d destinations", what, x.Words, len(x.Dsts))
			}
			inside(what+" source", x.Src, x.SrcRef, 4*x.Words)
			for _, d := range x.Dsts {
				inside(what+" destination", d.Tile, d.Ref, 4*x.Words)
			}
		}
	}
	var visit func(l int, ops []Op)
	visit = func(l int, ops []Op) {
		for i, op := range ops {
			what := fmt.Sprintf("tile %d op %d (%s)", l, i, op.Kernel)
			switch op.Kind {
			case OpExchange:
				if op.Phase < 0 || op.Phase >= len(pl.Exchanges) {
					bad("%s: phase %d of %d", what, op.Phase, len(pl.Exchanges))
				}
			case OpHostCopy:
				inside(what, l, op.Dst, op.Bytes)
			case OpKernel:
				k, err := kernels.Lookup(op.Kernel)
				if err != nil {
					bad("%s: %v", what, err)
					continue
				}
				p, err := k.Resolve(op.Params)
				if err != nil {
					bad("%s: %v", what, err)
					continue
				}
				for _, o := range k.Operands {
					for _, a := range k.Args {
						if a.Name != o.Name {
							continue
						}
						r, ok := opArg(&op, a.Reg)
						if !ok {
							bad("%s: no %s", what, a.Reg)
							continue
						}
						inside(what+" "+o.Name, l, r, o.Bytes(p))
					}
				}
			case OpLoop:
				visit(l, op.Body)
			}
		}
	}
	for l := range pl.Programs {
		for _, ops := range pl.Programs[l].Calls {
			visit(l, ops)
		}
		for _, b := range pl.Programs[l].Buffers {
			for _, o := range b.Apart {
				if _, ok := size(l, Ref{Buf: o}); !ok {
					bad("tile %d buffer %q apart from missing %q", l, b.Name, o)
				}
			}
		}
	}
	for _, bs := range [][]HostBinding{pl.Inputs, pl.Weights, pl.Outputs} {
		for _, b := range bs {
			for i, s := range b.Slices {
				inside(fmt.Sprintf("binding %s slice %d", b.Name, i), s.Tile, s.Ref, s.Length)
			}
		}
	}
	if len(errs) > 0 {
		t.Fatalf("invalid plan:\n%s", strings.Join(errs, "\n"))
	}
}

// ---------------------------------------------------------------------------
// GroupExchanges

func TestGroupExchanges(t *testing.T) {
	d12 := func(o1, o2 int) []XDest { return []XDest{dst(1, ref("b", o1)), dst(2, ref("b", o2))} }
	for _, c := range []struct {
		name string
		in   []XTransfer
		want []XTransfer
	}{
		{"contiguous pair merges",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a", 16), 2, d12(16, 80)...)},
			[]XTransfer{tr(0, ref("a", 0), 6, d12(0, 64)...)}},
		{"pieces out of order: the lowest offset's refs, at the first piece's place",
			[]XTransfer{tr(0, ref("a", 16), 2, d12(16, 80)...), tr(0, ref("a", 0), 4, d12(0, 64)...)},
			[]XTransfer{tr(0, ref("a", 0), 6, d12(0, 64)...)}},
		{"gap at the source",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a", 20), 2, d12(16, 80)...)},
			nil},
		{"one destination not contiguous",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a", 16), 2, d12(16, 84)...)},
			nil},
		{"destination lists differ (order)",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...),
				tr(0, ref("a", 16), 2, dst(2, ref("b", 80)), dst(1, ref("b", 16)))},
			nil},
		{"destination lists differ (length)",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a", 16), 2, dst(1, ref("b", 16)))},
			nil},
		{"different sources",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(3, ref("a", 16), 2, d12(16, 80)...)},
			nil},
		{"different source buffers",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, ref("a2", 16), 2, d12(16, 80)...)},
			nil},
		{"different destination buffers",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...),
				tr(0, ref("a", 16), 2, dst(1, ref("b", 16)), dst(2, ref("b2", 80)))},
			nil},
		{"different steps",
			[]XTransfer{tr(0, ref("a", 0), 4, d12(0, 64)...), tr(0, stepRef("a", 16, 8), 2, d12(16, 80)...)},
			nil},
		{"chain of three, shuffled, merges to one",
			[]XTransfer{tr(0, ref("a", 32), 1, d12(32, 96)...), tr(0, ref("a", 0), 4, d12(0, 64)...),
				tr(0, ref("a", 16), 4, d12(16, 80)...)},
			[]XTransfer{tr(0, ref("a", 0), 9, d12(0, 64)...)}},
		{"interleaved groups keep the order of first occurrence",
			[]XTransfer{
				tr(5, ref("a", 0), 1, dst(6, ref("b", 0))),   // A
				tr(0, ref("a", 0), 1, dst(1, ref("b", 0))),   // B
				tr(5, ref("a", 4), 1, dst(6, ref("b", 4))),   // A
				tr(9, ref("a", 0), 1, dst(1, ref("c", 0))),   // C
				tr(0, ref("a", 4), 1, dst(1, ref("b", 4))),   // B
				tr(5, ref("a", 100), 1, dst(6, ref("b", 8))), // D: not contiguous
			},
			[]XTransfer{tr(5, ref("a", 0), 2, dst(6, ref("b", 0))), tr(0, ref("a", 0), 2, dst(1, ref("b", 0))),
				tr(9, ref("a", 0), 1, dst(1, ref("c", 0))), tr(5, ref("a", 100), 1, dst(6, ref("b", 8)))}},
		{"same source bytes to two places: each joins its own successor",
			[]XTransfer{tr(0, ref("a", 0), 4, dst(1, ref("b", 0))), tr(0, ref("a", 0), 4, dst(1, ref("b", 100))),
				tr(0, ref("a", 16), 4, dst(1, ref("b", 116))), tr(0, ref("a", 16), 4, dst(1, ref("b", 16)))},
			[]XTransfer{tr(0, ref("a", 0), 8, dst(1, ref("b", 0))), tr(0, ref("a", 0), 8, dst(1, ref("b", 100)))}},
		{"no merge beyond the scheduler's transfer size",
			[]XTransfer{tr(0, ref("a", 0), maxTransferWords/2+1, dst(1, ref("b", 0))),
				tr(0, ref("a", 4*(maxTransferWords/2+1)), maxTransferWords/2, dst(1, ref("b", 4*(maxTransferWords/2+1))))},
			nil},
		{"zero-word transfers are left alone",
			[]XTransfer{tr(0, ref("a", 0), 0, dst(1, ref("b", 0))), tr(0, ref("a", 0), 4, dst(1, ref("b", 0)))},
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			if want == nil {
				want = c.in
			}
			pl := handPlan(2, nil)
			pl.Exchanges = []XPhase{{ID: 0, Name: "empty"}, {ID: 1, Name: "test", Transfers: slices.Clone(c.in)}}
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
	var whole, pieces []XTransfer
	for i := 0; i < ranges; i++ {
		src := i % 37
		dsts := []XDest{dst(100+i%11, ref("in", 48*(i/37))), dst(200+i%5, ref("in2", 48*(i/37)))}
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
	slices.SortStableFunc(whole, func(a, b XTransfer) int {
		return first[[2]int{a.Src, a.SrcRef.Off / 48}] - first[[2]int{b.Src, b.SrcRef.Off / 48}]
	})
	var prev []XTransfer
	for run := 0; run < 2; run++ {
		pl := &Plan{Exchanges: []XPhase{{Name: "big", Transfers: slices.Clone(pieces)}}}
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
	cp := func(out, in Ref, n int) Op { return copyOp(out, in, n) }
	named := func(op Op, node, why string) Op { op.Node, op.Why = node, why; return op }
	host := func(d Ref, n int) Op { return Op{Kind: OpHostCopy, Dst: d, Bytes: n} }
	for _, c := range []struct {
		name    string
		in      []Op
		want    []Op // nil: unchanged
		changes int
	}{
		{"adjacent contiguous copies merge, keeping the first's provenance",
			[]Op{named(cp(ref("x", 0), ref("y", 64), 32), "n1", "why1"), named(cp(ref("x", 32), ref("y", 96), 16), "n2", "why2")},
			[]Op{named(cp(ref("x", 0), ref("y", 64), 48), "n1", "why1")}, 1},
		{"chain of three merges to one",
			[]Op{xchg(0), cp(ref("x", 0), ref("y", 0), 8), cp(ref("x", 8), ref("y", 8), 8), cp(ref("x", 16), ref("y", 16), 16), xchg(0)},
			[]Op{xchg(0), cp(ref("x", 0), ref("y", 0), 32), xchg(0)}, 2},
		{"not adjacent",
			[]Op{cp(ref("x", 0), ref("y", 0), 8), geluOp(ref("c", 0), ref("a", 0), 4), cp(ref("x", 8), ref("y", 8), 8)}, nil, 0},
		{"out contiguous, in not",
			[]Op{cp(ref("x", 0), ref("y", 0), 8), cp(ref("x", 8), ref("y", 16), 8)}, nil, 0},
		{"in contiguous, out not",
			[]Op{cp(ref("x", 0), ref("y", 0), 8), cp(ref("x", 16), ref("y", 8), 8)}, nil, 0},
		{"second before the first",
			[]Op{cp(ref("x", 8), ref("y", 8), 8), cp(ref("x", 0), ref("y", 0), 8)}, nil, 0},
		{"other buffer",
			[]Op{cp(ref("x", 0), ref("y", 0), 8), cp(ref("a", 8), ref("y", 8), 8)}, nil, 0},
		{"other steps",
			[]Op{cp(ref("x", 0), ref("y", 0), 8), cp(stepRef("x", 8, 64), ref("y", 8), 8)}, nil, 0},
		{"merged ranges would overlap (the second reads what the first wrote)",
			[]Op{cp(ref("x", 0), ref("x", 8), 8), cp(ref("x", 8), ref("x", 16), 8)}, nil, 0},
		{"in-place copies merge",
			[]Op{cp(ref("x", 0), ref("x", 0), 8), cp(ref("x", 8), ref("x", 8), 8)},
			[]Op{cp(ref("x", 0), ref("x", 0), 16)}, 1},
		{"same buffer, apart",
			[]Op{cp(ref("x", 0), ref("x", 64), 8), cp(ref("x", 8), ref("x", 72), 8)},
			[]Op{cp(ref("x", 0), ref("x", 64), 16)}, 1},
		{"summed size beyond the kernel's limit",
			[]Op{cp(ref("x", 0), ref("y", 0), 128<<10), cp(ref("x", 128<<10), ref("y", 128<<10), 128<<10)}, nil, 0},
		{"a loop is a boundary; its body merges within itself",
			[]Op{cp(ref("x", 0), ref("y", 0), 8),
				loop(3, cp(stepRef("x", 8, 32), stepRef("y", 8, 32), 8), cp(stepRef("x", 16, 32), stepRef("y", 16, 32), 8)),
				cp(ref("x", 104), ref("y", 104), 8)},
			[]Op{cp(ref("x", 0), ref("y", 0), 8),
				loop(3, cp(stepRef("x", 8, 32), stepRef("y", 8, 32), 16)),
				cp(ref("x", 104), ref("y", 104), 8)}, 1},
		{"copies on either side of a loop do not merge",
			[]Op{cp(ref("x", 0), ref("y", 0), 8), loop(2, xchg(0)), cp(ref("x", 8), ref("y", 8), 8)}, nil, 0},
		{"host copies are never merged (each reads the window from its start)",
			[]Op{host(ref("x", 0), 64), host(ref("x", 64), 64)}, nil, 0},
		{"unknown kernels are kept",
			[]Op{{Kind: OpKernel, Kernel: "no_such_kernel", Args: []Arg{{"$m2", ref("x", 0)}}}, cp(ref("x", 0), ref("y", 0), 8)}, nil, 0},
		{"copy parameters that do not resolve are kept",
			[]Op{cp(ref("x", 0), ref("y", 0), 12), cp(ref("x", 12), ref("y", 12), 12)}, nil, 0},
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
			for l, call := range [][]Op{pl.Programs[0].Calls[1], pl.Programs[1].Calls[0]} {
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
	phases := []XPhase{
		{ID: 0, Name: "in", Transfers: []XTransfer{tr(1, ref("x", 0), 32, dst(0, ref("c", 0)))}},
		{ID: 1, Name: "out", Transfers: []XTransfer{tr(0, ref("c", 0), 32, dst(1, ref("x", 0)))}},
	}
	gemm := gemmOp(ref("c", 0), ref("a", 0), ref("w", 0)) // writes c[0,128), reads a[0,128), w
	for _, c := range []struct {
		name string
		run  []Op
		drop []int // indices of the clears that go
	}{
		{"covered by a GEMM's output", []Op{fillOp(ref("c", 0), 128), gemm}, []int{0}},
		{"covered by a GEMM after unrelated work", []Op{fillOp(ref("c", 0), 128), {Kind: OpSample}, geluOp(ref("y", 0), ref("x", 0), 64), {Kind: OpHostSync}, gemm}, []int{0}},
		{"read first", []Op{fillOp(ref("c", 0), 128), copyOp(ref("x", 0), ref("c", 64), 8), gemm}, nil},
		{"a GEMM that reads the cleared left panel", []Op{fillOp(ref("a", 0), 128), gemm}, nil},
		{"only partly covered", []Op{fillOp(ref("c", 0), 256), gemm}, nil},
		{"covered by two copies", []Op{fillOp(ref("c", 0), 128), copyOp(ref("c", 64), ref("x", 0), 64), copyOp(ref("c", 0), ref("x", 64), 64)}, []int{0}},
		{"covered by an exchange destination", []Op{fillOp(ref("c", 0), 128), xchg(0)}, []int{0}},
		{"sent by an exchange", []Op{fillOp(ref("c", 0), 128), xchg(1), gemm}, nil},
		{"covered by a host copy", []Op{fillOp(ref("c", 8), 64), {Kind: OpHostCopy, Dst: ref("c", 0), Bytes: 128}}, []int{0}},
		{"add_bias reads its output", []Op{fillOp(ref("c", 0), 128), biasOp(ref("c", 0), ref("x", 0)), gemm}, nil},
		{"in-place gelu reads its output", []Op{fillOp(ref("c", 0), 128), geluOp(ref("c", 0), ref("c", 0), 64), gemm}, nil},
		{"gelu from elsewhere overwrites", []Op{fillOp(ref("c", 0), 128), geluOp(ref("c", 0), ref("x", 0), 64)}, []int{0}},
		{"an output overlapping an input counts as read", []Op{fillOp(ref("c", 0), 64), geluOp(ref("c", 0), ref("c", 64), 64), gemm}, nil},
		{"in-place copy reads its output", []Op{fillOp(ref("c", 0), 8), copyOp(ref("c", 0), ref("c", 0), 8), gemm}, nil},
		{"a loop in between", []Op{fillOp(ref("c", 0), 128), loop(2, xchg(0)), gemm}, nil},
		{"an unknown kernel in between", []Op{fillOp(ref("c", 0), 128), {Kind: OpKernel, Kernel: "no_such_kernel"}, gemm}, nil},
		{"an unknown phase in between", []Op{fillOp(ref("c", 0), 128), xchg(7), gemm}, nil},
		{"nothing after it (read back by the host or the next call)", []Op{gemm, fillOp(ref("c", 0), 128)}, nil},
		{"other buffers do not alias", []Op{fillOp(ref("c", 0), 128), gemmOp(ref("y", 0), ref("a", 0), ref("w", 0))}, nil},
		{"two clears covered in turn", []Op{fillOp(ref("c", 0), 64), fillOp(ref("c", 0), 128), gemm}, []int{0, 1}},
		{"a clear covered by a clear that stays", []Op{fillOp(ref("c", 0), 64), fillOp(ref("c", 0), 128)}, []int{0}},
		{"dense unpack overwrites", []Op{fillOp(ref("c", 0), 16),
			{Kind: OpKernel, Kernel: "unpack_out_f16", Params: kernels.Params{"r": 2, "c": 4}, Args: []Arg{{"$m2", ref("c", 0)}, {"$m3", ref("x", 0)}}}}, []int{0}},
		{"strided unpack leaves gaps", []Op{fillOp(ref("c", 0), 24),
			{Kind: OpKernel, Kernel: "unpack_out_f16", Params: kernels.Params{"r": 2, "c": 4, "stride": 8}, Args: []Arg{{"$m2", ref("c", 0)}, {"$m3", ref("x", 0)}}}}, nil},
		{"a clear with bad parameters", []Op{fillOp(ref("c", 0), 12), gemm}, nil},
		{"a clear that steps (outside a loop)", []Op{fillOp(stepRef("c", 0, 8), 128), gemm}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := handPlan(2, slices.Clone(c.run))
			pl.Exchanges = slices.Clone(phases)
			orig := *pl
			before := fingerprint(pl)
			rep := Eliminate(pl)
			var want []Op
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
	pl := handPlan(1, []Op{gemm, loop(2, fillOp(ref("c", 0), 128), gemm)})
	pl.Programs[0].Calls[0] = []Op{fillOp(ref("c", 0), 128)}
	rep := Eliminate(pl)
	if detail(t, rep, "clears_dropped") != 0 || detail(t, rep, "clears_kept") != 2 || len(pl.Programs[0].Calls[0]) != 1 || len(pl.Programs[0].Calls[1][1].Body) != 2 {
		t.Fatalf("%+v %+v", rep, pl.Programs[0].Calls)
	}
}

// ---------------------------------------------------------------------------
// Eliminate: phases and buffers

func TestEliminatePhases(t *testing.T) {
	x := func(src int) XTransfer { return tr(src, ref("x", 0), 4, dst(1-src, ref("y", 0))) }
	pl := handPlan(2, []Op{xchg(0), xchg(1), xchg(2), loop(2, xchg(3)), loop(2, xchg(2), xchg(1), xchg(3)), xchg(9), xchg(-1)})
	pl.Programs[1].Calls[0] = []Op{xchg(3), xchg(2)}
	pl.Exchanges = []XPhase{
		{ID: 0, Name: "p0", Transfers: []XTransfer{x(0)}},
		{ID: 1, Name: "empty1"},
		{ID: 2, Name: "p2", Transfers: []XTransfer{x(1)}},
		{ID: 3, Name: "empty3", Transfers: []XTransfer{}},
	}
	orig := *pl
	before := fingerprint(pl)
	rep := Eliminate(pl)
	if detail(t, rep, "phases_removed") != 2 || detail(t, rep, "exchange_ops_removed") != 5 {
		t.Errorf("detail %v", rep.Detail)
	}
	want := []XPhase{{ID: 0, Name: "p0", Transfers: []XTransfer{x(0)}}, {ID: 1, Name: "p2", Transfers: []XTransfer{x(1)}}}
	if !reflect.DeepEqual(pl.Exchanges, want) {
		t.Errorf("phases %+v", pl.Exchanges)
	}
	// The empty loop goes; unknown phase numbers stay unknown.
	wantRun := []Op{xchg(0), xchg(1), loop(2, xchg(1)), xchg(9), xchg(-1)}
	if got := pl.Programs[0].Calls[1]; !reflect.DeepEqual(got, wantRun) {
		t.Errorf("run\ngot  %+v\nwant %+v", got, wantRun)
	}
	if got := pl.Programs[1].Calls[0]; !reflect.DeepEqual(got, []Op{xchg(1)}) {
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
	bufs := []Buffer{
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
	pl := handPlan(2, []Op{
		copyOp(ref("op", 0), ref("apart", 0), 8),
		loop(2, fillOp(stepRef("loopop", 0, 8), 8)),
		{Kind: OpHostCopy, Dst: ref("hostcopy", 0), Bytes: 8},
	}, bufs...)
	pl.Exchanges = []XPhase{{Name: "p", Transfers: []XTransfer{tr(0, ref("src", 0), 1, dst(1, ref("dst", 0))), tr(1, ref("op", 0), 1, dst(0, ref("dst", 0)))}}}
	pl.Outputs = []HostBinding{{Name: "out", Slices: []HostSlice{{Tile: 0, Ref: ref("slice", 0), Length: 8}}}}
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
	checkPlan(t, pl)
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
	pl := handPlan(2, []Op{
		{Kind: OpKernel, Kernel: "no_such_kernel", Args: []Arg{{"$m2", ref("x", 0)}}},
		{Kind: OpKernel, Kernel: "copy_f16"}, // no arguments
		fillOp(ref("x", 0), 8),
		{Kind: OpKernel, Kernel: "gemm_f16", Params: kernels.Params{"k": 16, "c": 16, "r": 4}}, // no arguments
		{Kind: OpKind(99)},
	})
	pl.Exchanges = []XPhase{{Name: "bad tiles", Transfers: []XTransfer{tr(-3, ref("x", 0), 1, dst(99, ref("y", 0))), tr(-3, ref("x", 4), 1, dst(99, ref("y", 4)))}}}
	pl.Outputs = []HostBinding{{Name: "out", Slices: []HostSlice{{Tile: 7, Ref: ref("x", 0)}, {Tile: -1, Ref: ref("x", 0)}}}}
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
	pl := handPlan(1, []Op{copyOp(ref("x", 0), ref("y", 0), 8), copyOp(ref("x", 8), ref("y", 8), 8)})
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
	pl := handPlan(2, []Op{
		copyOp(ref("x", 0), ref("y", 0), 8), fillOp(ref("c", 0), 128), copyOp(ref("x", 8), ref("y", 8), 8),
		xchg(1), copyOp(ref("x", 16), ref("y", 16), 8), gemmOp(ref("c", 0), ref("a", 0), ref("w", 0)),
	})
	pl.Exchanges = []XPhase{{Name: "p", Transfers: []XTransfer{tr(0, ref("x", 0), 1, dst(1, ref("y", 0))), tr(0, ref("x", 4), 1, dst(1, ref("y", 4)))}}, {Name: "empty"}}
	reps := Optimize(pl)
	if reps[0].Changes != 1 || reps[1].Changes != 2 || reps[2].Changes != 1+1+4 {
		t.Errorf("%+v", reps)
	}
	want := []Op{copyOp(ref("x", 0), ref("y", 0), 24), gemmOp(ref("c", 0), ref("a", 0), ref("w", 0))}
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
// Real plans

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
			checkPlan(t, pl)
			before := fingerprint(pl)
			cp := *pl
			reps := Optimize(&cp)
			if len(reps) != 3 || reps[0].Pass != "group_exchanges" || reps[1].Pass != "merge_copies" || reps[2].Pass != "eliminate" {
				t.Fatalf("%+v", reps)
			}
			checkPlan(t, &cp)
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
				var head, tail []XTransfer
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
			var split func(ops []Op, top bool) []Op
			split = func(ops []Op, top bool) []Op {
				var out []Op
				for _, op := range ops {
					switch {
					case op.Kind == OpLoop:
						op.Body = split(op.Body, false)
					case op.Kind == OpKernel && op.Kernel == "copy_f16" && op.Params["n"]%16 == 0:
						n := op.Params["n"] / 2
						a, b := copyOp(op.Args[0].Ref, op.Args[1].Ref, n), copyOp(op.Args[0].Ref, op.Args[1].Ref, n)
						a.Node, a.Why, b.Node, b.Why = op.Node, op.Why, op.Node, op.Why
						b.Args[0].Ref.Off += n
						b.Args[1].Ref.Off += n
						out = append(out, a, b)
						halves++
						continue
					case op.Kind == OpKernel && op.Kernel == "gemm_f16" && top:
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
			checkPlan(t, &cp)
			reps := Optimize(&cp)
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
