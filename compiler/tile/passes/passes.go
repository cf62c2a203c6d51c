package passes

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/kernels"
)

// Report is what one pass changed.
type Report struct {
	Pass    string // "group_exchanges", "merge_copies", "eliminate"
	Changes int    // items removed or merged (0: nothing to do)
	Detail  []any  // slog-style key/value pairs describing the change, e.g. "phase", 2, "transfers_before", 9000, "transfers_after", 2970
}

// Log records the report on log (nil: slog.Default()) as one "low pass"
// event: the pass, its change count and its detail.
func (r Report) Log(log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	log.Info("low pass", append([]any{"pass", r.Pass, "changes", r.Changes}, r.Detail...)...)
}

// Pass is one entry of the pass table.
type Pass struct {
	Name string
	Run  func(*tile.Program) Report
	// After names passes of which some entry must come before this one,
	// Before passes of which some entry must come after it: the order
	// constraints, each with its reason in the table's comments.
	After, Before []string
	// If, for an entry that runs a pass the table already ran (a rerun),
	// names an earlier pass: the rerun runs only when that pass changed
	// something, and its changes are added to the pass's first report
	// (under "after_<If>"). A pass named twice needs If.
	If string
}

// Table is the passes in the order Optimize runs them, with their order
// constraints (checked at init: checkTable).
//
//   - group_exchanges merges contiguous transfer pieces. Nothing it reads
//     is changed by the others, nor does it enable them (the merged
//     transfer moves the same bytes), so it is unconstrained.
//   - merge_copies merges adjacent contiguous copy_f16 calls.
//   - eliminate drops dead clears, empty phases and unused buffers. It can
//     make two copies adjacent (by dropping a clear or the exchange of an
//     empty phase between them): merge_copies must run after it.
//   - merge_copies again, only when eliminate changed something. Nothing
//     else feeds back (grouping transfers and merging copies read and
//     write the same bytes as before, so they cannot enable another
//     elimination), which makes Optimize idempotent: a second run reports
//     no changes.
var Table = []Pass{
	{Name: "group_exchanges", Run: GroupExchanges},
	{Name: "merge_copies", Run: MergeCopies},
	{Name: "eliminate", Run: Eliminate, Before: []string{"merge_copies"}},
	{Name: "merge_copies", Run: MergeCopies, After: []string{"eliminate"}, If: "eliminate"},
}

func init() {
	if err := checkTable(Table); err != nil {
		panic("BUG: passes: " + err.Error())
	}
}

// checkTable checks a pass table: every entry named and runnable, every
// constraint naming a pass of the table and honoured by the declared
// order (which is then an order satisfying them all), and every rerun
// conditional on an earlier pass.
func checkTable(table []Pass) error {
	names := map[string]bool{}
	for _, p := range table {
		names[p.Name] = true
	}
	ran := map[string]bool{}
	for i, p := range table {
		if p.Name == "" || p.Run == nil {
			return fmt.Errorf("entry %d (%q): no name or no function", i, p.Name)
		}
		for _, a := range p.After {
			switch {
			case !names[a]:
				return fmt.Errorf("entry %d (%s): after %q, which is not in the table", i, p.Name, a)
			case !ran[a]:
				return fmt.Errorf("entry %d (%s) must run after %s, which the table runs only later", i, p.Name, a)
			}
		}
		for _, b := range p.Before {
			if !names[b] {
				return fmt.Errorf("entry %d (%s): before %q, which is not in the table", i, p.Name, b)
			}
			if !slices.ContainsFunc(table[i+1:], func(q Pass) bool { return q.Name == b }) {
				return fmt.Errorf("entry %d (%s) must run before %s, which the table does not run after it", i, p.Name, b)
			}
		}
		switch {
		case ran[p.Name] && p.If == "":
			return fmt.Errorf("entry %d (%s) runs the pass again without a condition (If)", i, p.Name)
		case p.If != "" && !ran[p.Name]:
			return fmt.Errorf("entry %d (%s) has a condition (If %s) but is the pass's first run", i, p.Name, p.If)
		case p.If != "" && (!ran[p.If] || p.If == p.Name):
			return fmt.Errorf("entry %d (%s): condition %q is not an earlier pass", i, p.Name, p.If)
		}
		ran[p.Name] = true
	}
	return nil
}

// Optimize runs the pass table over pl and returns one report per pass,
// in the order of their first runs (group_exchanges, merge_copies,
// eliminate). A nil program gets reports of no change.
func Optimize(pl *tile.Program) []Report {
	reps, _ := run(Table, pl, nil)
	return reps
}

// OptimizeVerified is Optimize with pl.Verify() before the first pass and
// after every one, as tests run it; it stops at the first failure, which
// names the pass after which the program stopped being valid.
func OptimizeVerified(pl *tile.Program) ([]Report, error) {
	if err := pl.Verify(); err != nil {
		return nil, fmt.Errorf("before the passes: %w", err)
	}
	return run(Table, pl, func(p *Pass) error {
		if err := pl.Verify(); err != nil {
			return fmt.Errorf("after %s: %w", p.Name, err)
		}
		return nil
	})
}

// run runs table over pl, calling check (when not nil) after each entry
// that ran.
func run(table []Pass, pl *tile.Program, check func(*Pass) error) ([]Report, error) {
	var reps []Report
	first := map[string]int{} // a pass's report in reps
	for i := range table {
		p := &table[i]
		at, again := first[p.Name]
		if again {
			if reps[first[p.If]].Changes == 0 {
				continue
			}
		}
		r := p.Run(pl)
		if again {
			if r.Changes > 0 {
				m := &reps[at]
				m.Changes += r.Changes
				m.Detail = append(m.Detail, slog.Group("after_"+p.If, r.Detail...))
			}
		} else {
			first[p.Name] = len(reps)
			reps = append(reps, r)
		}
		if check != nil {
			if err := check(p); err != nil {
				return reps, err
			}
		}
	}
	return reps, nil
}

// ---------------------------------------------------------------------------
// GroupExchanges

// GroupExchanges merges, within each exchange phase, transfers that are
// one contiguous range on the source and on every destination: the same
// source tile and destination tiles (in the same order), the same buffers
// and steps, and each next piece starting where the previous one ends (at
// the source and at destination i alike). Fewer, longer transfers cost the
// scheduler fewer sends and pointer set-ups for the same words; the bytes
// moved are the same, so the phase computes the same thing.
//
// The merged transfer is the piece at the lowest source offset with the
// words summed, placed where the first of its pieces was in the phase. The
// work is O(n log n) per phase: the transfers are sorted by (group, source
// offset, index), then chained in one scan.
func GroupExchanges(pl *tile.Program) Report {
	rep := Report{Pass: "group_exchanges"}
	if pl == nil {
		return rep
	}
	before, after := 0, 0
	var changed []string
	var phases []tile.XPhase
	for p := range pl.Exchanges {
		ph := &pl.Exchanges[p]
		out := groupTransfers(ph.Transfers)
		before += len(ph.Transfers)
		after += len(out)
		if len(out) == len(ph.Transfers) {
			continue
		}
		if phases == nil {
			phases = slices.Clone(pl.Exchanges)
		}
		changed = append(changed, fmt.Sprintf("%d %s: %d -> %d", ph.ID, ph.Name, len(ph.Transfers), len(out)))
		phases[p].Transfers = out
	}
	if phases != nil {
		pl.Exchanges = phases
	}
	rep.Changes = before - after
	rep.Detail = []any{"phases", len(pl.Exchanges), "phases_changed", len(changed), "transfers_before", before, "transfers_after", after}
	if len(changed) > 0 {
		rep.Detail = append(rep.Detail, "changed", changed)
	}
	return rep
}

// groupKey is what transfers must share to be merged: the source tile, the
// source buffer and step, and every destination's tile, buffer and step
// (offsets are compared by the chaining).
func groupKey(t *tile.XTransfer) string {
	b := make([]byte, 0, 32+16*len(t.Dsts))
	ref := func(r tile.Ref) {
		b = strconv.AppendQuote(b, r.Buf)
		for _, s := range r.Step {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(s), 10)
		}
	}
	b = strconv.AppendInt(b, int64(t.Src), 10)
	ref(t.SrcRef)
	for _, d := range t.Dsts {
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(d.Tile), 10)
		ref(d.Ref)
	}
	return string(b)
}

// groupTransfers returns ts with contiguous pieces merged (ts itself when
// nothing merges).
func groupTransfers(ts []tile.XTransfer) []tile.XTransfer {
	if len(ts) < 2 || !mayGroup(ts) {
		return ts
	}
	keys := make([]string, len(ts))
	for i := range ts {
		keys[i] = groupKey(&ts[i])
	}
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := cmp.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(ts[a].SrcRef.Off, ts[b].SrcRef.Off); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	// A chain is a run of contiguous pieces: the first (lowest source
	// offset) piece, the earliest index among them, the words so far and
	// where the next piece must start, at the source and per destination.
	type chain struct {
		head, first, words, srcEnd int
		dstEnd                     []int
	}
	var chains []chain
	// open maps a source end offset to the chains of the current group
	// that end there, in creation order (the lookup is by key, never by
	// map iteration, so the result is deterministic).
	open := map[int][]int{}
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && keys[idx[hi]] == keys[idx[lo]] {
			hi++
		}
		clear(open)
		for _, i := range idx[lo:hi] {
			t := &ts[i]
			if t.Words <= 0 {
				// Not a valid transfer; left alone for the scheduler to report.
				chains = append(chains, chain{head: i, first: i, words: t.Words})
				continue
			}
			c := -1
			cands := open[t.SrcRef.Off]
			for pos, ci := range cands {
				if chains[ci].words+t.Words <= tile.MaxTransferWords && dstsFollow(chains[ci].dstEnd, t.Dsts) {
					c = ci
					open[t.SrcRef.Off] = slices.Delete(cands, pos, pos+1)
					break
				}
			}
			if c < 0 {
				c = len(chains)
				ends := make([]int, len(t.Dsts))
				for k, d := range t.Dsts {
					ends[k] = d.Ref.Off + 4*t.Words
				}
				chains = append(chains, chain{head: i, first: i, words: t.Words, srcEnd: t.SrcRef.Off + 4*t.Words, dstEnd: ends})
			} else {
				ch := &chains[c]
				ch.first = min(ch.first, i)
				ch.words += t.Words
				ch.srcEnd += 4 * t.Words
				for k := range ch.dstEnd {
					ch.dstEnd[k] += 4 * t.Words
				}
			}
			open[chains[c].srcEnd] = append(open[chains[c].srcEnd], c)
		}
		lo = hi
	}
	if len(chains) == len(ts) {
		return ts
	}
	slices.SortFunc(chains, func(a, b chain) int { return cmp.Compare(a.first, b.first) })
	out := make([]tile.XTransfer, len(chains))
	for k, ch := range chains {
		out[k] = ts[ch.head]
		out[k].Words = ch.words
		out[k].Dsts = slices.Clone(ts[ch.head].Dsts)
	}
	return out
}

// mayGroup reports whether some transfer continues another: it starts,
// at its source and at every destination, where the other ends, on the
// same tiles and buffers. A cheap necessary condition for groupTransfers
// to merge anything (steps aside), checked first because most phases have
// nothing to merge.
func mayGroup(ts []tile.XTransfer) bool {
	idx := make([]int32, len(ts))
	for i := range idx {
		idx[i] = int32(i)
	}
	key := func(t *tile.XTransfer) (int, string, int) { return t.Src, t.SrcRef.Buf, t.SrcRef.Off }
	slices.SortFunc(idx, func(a, b int32) int {
		sa, ba, oa := key(&ts[a])
		sb, bb, ob := key(&ts[b])
		return cmp.Or(cmp.Compare(sa, sb), cmp.Compare(ba, bb), cmp.Compare(oa, ob))
	})
	for _, i := range idx {
		t := &ts[i]
		end := t.SrcRef.Off + 4*t.Words
		at, _ := slices.BinarySearchFunc(idx, t, func(e int32, t *tile.XTransfer) int {
			se, be, oe := key(&ts[e])
			return cmp.Or(cmp.Compare(se, t.Src), cmp.Compare(be, t.SrcRef.Buf), cmp.Compare(oe, end))
		})
		for ; at < len(idx); at++ {
			u := &ts[idx[at]]
			if u.Src != t.Src || u.SrcRef.Buf != t.SrcRef.Buf || u.SrcRef.Off != end {
				break
			}
			if continues(t, u) {
				return true
			}
		}
	}
	return false
}

// continues reports whether u starts, at every destination, where t ends
// (same tiles and buffers, in order).
func continues(t, u *tile.XTransfer) bool {
	if len(t.Dsts) != len(u.Dsts) {
		return false
	}
	for k, d := range t.Dsts {
		e := u.Dsts[k]
		if e.Tile != d.Tile || e.Ref.Buf != d.Ref.Buf || e.Ref.Off != d.Ref.Off+4*t.Words {
			return false
		}
	}
	return true
}

// dstsFollow reports whether every destination i of a piece starts where
// destination i of a chain ends (the buffers and steps are equal by the
// group key).
func dstsFollow(ends []int, dsts []tile.XDest) bool {
	if len(ends) != len(dsts) {
		return false
	}
	for k, d := range dsts {
		if d.Ref.Off != ends[k] {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// MergeCopies

// MergeCopies merges two copy_f16 calls that are adjacent in an op list and
// copy contiguous ranges (the second's out and in each start where the
// first's end, in the same buffers with the same steps) into one call of
// the summed size: one call, argument set-up and worker start instead of
// two. Loop bodies are merged within themselves; ops are never merged
// across a loop boundary. The merged call keeps the first's provenance
// (Node, Why).
//
// Host copies (OpHostCopy) are not merged: each copies Bytes from the host
// window at offset 0 (compiler/emit), i.e. from the slot the host filled
// in that host phase, so two host copies never read consecutive source
// bytes — the second reads the window again from its start — and one
// longer copy would read past the first's piece instead of the second's.
func MergeCopies(pl *tile.Program) Report {
	rep := Report{Pass: "merge_copies"}
	if pl == nil {
		return rep
	}
	merged, tiles := 0, 0
	var progs []tile.TileProgram
	for l := range pl.Programs {
		n0 := merged
		var calls [2][]tile.Op
		for c, ops := range pl.Programs[l].Calls {
			var k int
			calls[c], k = mergeCopyOps(ops)
			merged += k
		}
		if merged == n0 {
			continue
		}
		if progs == nil {
			progs = slices.Clone(pl.Programs)
		}
		progs[l].Calls = calls
		tiles++
	}
	if progs != nil {
		pl.Programs = progs
	}
	rep.Changes = merged
	rep.Detail = []any{"copies_merged", merged, "tiles_changed", tiles}
	return rep
}

// mergeCopyOps merges adjacent contiguous copies in ops and, separately,
// in every loop body; it returns ops itself when nothing merges (and then
// allocates nothing: most op lists have no adjacent copies).
func mergeCopyOps(ops []tile.Op) ([]tile.Op, int) {
	merged := 0
	var out []tile.Op // nil until something changes
	grow := func(i int) {
		if out == nil {
			out = append(make([]tile.Op, 0, len(ops)), ops[:i]...)
		}
	}
	for i := range ops {
		op := ops[i]
		if op.Kind == tile.OpLoop {
			if body, k := mergeCopyOps(op.Body); k > 0 {
				grow(i)
				op.Body = body
				merged += k
				out = append(out, op)
				continue
			}
		} else if i > 0 && isCopyCall(&op) {
			prev := &ops[i-1]
			if out != nil {
				prev = &out[len(out)-1]
			}
			if isCopyCall(prev) {
				if m, ok := mergeCopy(prev, &op); ok {
					grow(i)
					out[len(out)-1] = m
					merged++
					continue
				}
			}
		}
		if out != nil {
			out = append(out, op)
		}
	}
	if merged == 0 {
		return ops, 0
	}
	return out, merged
}

func isCopyCall(op *tile.Op) bool { return op.Kind == tile.OpKernel && op.Kernel == kernels.CopyF16 }

// copyRefs returns the out ($m2) and in ($m3) refs and the resolved size
// of a copy_f16 call.
func copyRefs(op *tile.Op) (out, in tile.Ref, n int, ok bool) {
	if op.Kind != tile.OpKernel || op.Kernel != kernels.CopyF16 || len(op.Args) != 2 {
		return out, in, 0, false
	}
	k, err := kernels.Lookup(op.Kernel)
	if err != nil {
		return out, in, 0, false
	}
	p, err := k.Resolve(op.Params)
	if err != nil {
		return out, in, 0, false
	}
	var hasOut, hasIn bool
	out, hasOut = opArg(op, "$m2")
	in, hasIn = opArg(op, "$m3")
	return out, in, p["n"], hasOut && hasIn
}

// mergeCopy returns a followed by b as one copy_f16 call, when both are
// copies of contiguous ranges and the kernel accepts the summed size.
//
// The merged call reads all of in before (as far as the contract is
// concerned, while) writing out, whereas the pair wrote a's out before b
// read its in. So the merged ranges must either be the same (an in-place
// copy, as the contract allows) or not overlap at all; then neither copy
// reads what the other writes and the order does not matter.
func mergeCopy(a, b *tile.Op) (tile.Op, bool) {
	outA, inA, n1, okA := copyRefs(a)
	outB, inB, n2, okB := copyRefs(b)
	if !okA || !okB || !followsRef(outA, n1, outB) || !followsRef(inA, n1, inB) {
		return tile.Op{}, false
	}
	n := n1 + n2
	if outA.Buf == inA.Buf {
		same := outA.Off == inA.Off && outA.Step == inA.Step
		apart := outA.Step == inA.Step && (outA.Off+n <= inA.Off || inA.Off+n <= outA.Off)
		if !same && !apart {
			return tile.Op{}, false
		}
	}
	k, err := kernels.Lookup(kernels.CopyF16)
	if err != nil {
		return tile.Op{}, false
	}
	m := tile.KernelOp(kernels.Copy{N: n}, *a)
	if _, err := k.Resolve(m.Params); err != nil {
		return tile.Op{}, false
	}
	m.Args = slices.Clone(a.Args)
	return m, true
}

// follows reports whether r2 starts where the n bytes at r1 end, in the
// same buffer and with the same loop steps.
func followsRef(r1 tile.Ref, n int, r2 tile.Ref) bool {
	return r1.Buf == r2.Buf && r1.Step == r2.Step && r2.Off == r1.Off+n
}

func opArg(op *tile.Op, reg string) (tile.Ref, bool) {
	for _, a := range op.Args {
		if a.Reg == reg {
			return a.Ref, true
		}
	}
	return tile.Ref{}, false
}

// ---------------------------------------------------------------------------
// Eliminate

// Eliminate removes work and storage the plan does not need:
//
//   - padding clears: a fill_zero call whose every byte is overwritten
//     before anything reads it (see clearIsDead);
//   - exchange phases without transfers, with the OpExchange ops that run
//     them (an exchange that moves nothing is only a barrier, and the
//     barriers that order data are the phases that carry it); the other
//     phases keep their order and are renumbered (XPhase.ID, Op.Phase);
//   - buffers that no op, transfer or host slice references on their tile,
//     with their names in other buffers' Apart lists (the memory they
//     would take can then hold something else).
func Eliminate(pl *tile.Program) Report {
	rep := Report{Pass: "eliminate"}
	if pl == nil {
		return rep
	}
	dropped, kept := eliminateClears(pl)
	phases, xops := eliminatePhases(pl)
	bufs := eliminateBuffers(pl)
	rep.Changes = dropped + phases + bufs
	rep.Detail = []any{"clears_dropped", dropped, "clears_kept", kept, "phases_removed", phases,
		"exchange_ops_removed", xops, "buffers_removed", bufs}
	return rep
}

func isClear(op *tile.Op) bool { return op.Kind == tile.OpKernel && op.Kernel == kernels.FillZero }

// eliminateClears drops the dead clears of every tile's calls; clears in
// loop bodies are kept (and counted as kept).
//
// Each clear is judged on the original list, the other clears counted as
// the writes they are. Dropping several at once is still sound: a clear
// dropped for being overwritten by a later (dead) clear has its bytes in
// that clear's range, which is itself overwritten before any read.
func eliminateClears(pl *tile.Program) (dropped, kept int) {
	var progs []tile.TileProgram
	for l := range pl.Programs {
		t := &pl.Programs[l]
		calls := t.Calls
		changed := false
		for c, ops := range t.Calls {
			var out []tile.Op
			for i := range ops {
				if ops[i].Kind == tile.OpLoop {
					kept += countClears(ops[i].Body)
				}
				if !isClear(&ops[i]) {
					if out != nil {
						out = append(out, ops[i])
					}
					continue
				}
				if !clearIsDead(pl, l, ops, i) {
					kept++
					if out != nil {
						out = append(out, ops[i])
					}
					continue
				}
				dropped++
				if out == nil {
					out = make([]tile.Op, i, len(ops)-1)
					copy(out, ops[:i])
				}
			}
			if out != nil {
				calls[c] = out
				changed = true
			}
		}
		if !changed {
			continue
		}
		if progs == nil {
			progs = slices.Clone(pl.Programs)
		}
		progs[l].Calls = calls
	}
	if progs != nil {
		pl.Programs = progs
	}
	return dropped, kept
}

func countClears(ops []tile.Op) int {
	n := 0
	for i := range ops {
		if isClear(&ops[i]) {
			n++
		}
		if ops[i].Kind == tile.OpLoop {
			n += countClears(ops[i].Body)
		}
	}
	return n
}

// byteSpan is a byte range [Lo, Hi) of a tile buffer. Refs are relative to
// their buffer, and different buffers never share bytes.
type byteSpan struct {
	Buf    string
	Lo, Hi int
}

func (s byteSpan) overlaps(o byteSpan) bool {
	return s.Buf == o.Buf && s.Lo < s.Hi && o.Lo < o.Hi && s.Lo < o.Hi && o.Lo < s.Hi
}

// byteSpans is a set of disjoint spans.
type byteSpans []byteSpan

func (ss byteSpans) overlapsAny(others []byteSpan) bool {
	for _, s := range ss {
		for _, o := range others {
			if s.overlaps(o) {
				return true
			}
		}
	}
	return false
}

// minus returns ss without the bytes of w.
func (ss byteSpans) minus(w byteSpan) byteSpans {
	var out byteSpans
	for _, s := range ss {
		if !s.overlaps(w) {
			out = append(out, s)
			continue
		}
		if s.Lo < w.Lo {
			out = append(out, byteSpan{s.Buf, s.Lo, w.Lo})
		}
		if w.Hi < s.Hi {
			out = append(out, byteSpan{s.Buf, w.Hi, s.Hi})
		}
	}
	return out
}

// clearIsDead reports whether the fill_zero at ops[i] of tile (its logical
// number, which indexes Programs) can go: along the rest of the list, every
// byte it clears is written before anything reads it. The walk is conservative: it gives up (keeps the clear) at a
// read of a still-cleared byte, at an op it cannot analyse (a loop, an
// unknown kernel or parameters, a stepping ref, an unknown phase) and at
// the end of the list, after which the bytes may be read by a later call,
// by the next run, or by the host's read-back of the outputs (which
// follows the run call's last op).
//
// Writes that count are the kernel operands the contract marks Written
// that the kernel does not also read (see kernelAccess), the destinations of
// this tile in an exchange phase it runs, and host copies. Reads are the
// other kernel operands (with their access tails) and this tile's sources
// in an exchange phase. Each op's reads are checked before its writes are
// applied, as a kernel or phase may read while it writes.
func clearIsDead(pl *tile.Program, tl int, ops []tile.Op, i int) bool {
	reads, writes, ok := opAccess(pl, tl, &ops[i])
	if !ok || len(reads) > 0 || len(writes) == 0 {
		return false
	}
	cleared := byteSpans(writes)
	for j := i + 1; j < len(ops); j++ {
		reads, writes, ok := opAccess(pl, tl, &ops[j])
		if !ok || cleared.overlapsAny(reads) {
			return false
		}
		for _, w := range writes {
			cleared = cleared.minus(w)
		}
		if len(cleared) == 0 {
			return true
		}
	}
	return false
}

// refSpan is n bytes at r, when r does not step with a loop.
func refSpan(r tile.Ref, n int) (byteSpan, bool) {
	if r.Step != [tile.MaxLoopDepth]int{} || n < 0 {
		return byteSpan{}, false
	}
	return byteSpan{r.Buf, r.Off, r.Off + n}, true
}

// access returns the bytes of the tile's buffers op reads and the bytes
// it overwrites completely; ok is false when the op cannot be analysed.
func opAccess(pl *tile.Program, tl int, op *tile.Op) (reads, writes []byteSpan, ok bool) {
	switch op.Kind {
	case tile.OpHostSync, tile.OpSample:
		// A handshake moves data through the host window, which is not a
		// plan buffer; the output read-back is handled at the list's end.
		return nil, nil, true
	case tile.OpHostCopy:
		// Reads the host window (not a plan buffer), writes Dst.
		s, ok := refSpan(op.Dst, op.Bytes)
		return nil, []byteSpan{s}, ok
	case tile.OpExchange:
		if op.Phase < 0 || op.Phase >= len(pl.Exchanges) {
			return nil, nil, false
		}
		for _, t := range pl.Exchanges[op.Phase].Transfers {
			if t.Src == tl {
				s, ok := refSpan(t.SrcRef, 4*t.Words)
				if !ok {
					return nil, nil, false
				}
				reads = append(reads, s)
			}
			for _, d := range t.Dsts {
				if d.Tile == tl {
					s, ok := refSpan(d.Ref, 4*t.Words)
					if !ok {
						return nil, nil, false
					}
					writes = append(writes, s)
				}
			}
		}
		return reads, writes, true
	case tile.OpKernel:
		return kernelAccess(op)
	}
	return nil, nil, false // loops and anything else: not analysed
}

// kernelAccess applies the kernel access contract (kernels.AccessOf of the
// call's spec) to a call. A Written operand counts as a write only if the
// kernel does not read it: not for an in-place updater (ReadFirst), not
// when a read operand's range overlaps it (gelu_f16 or copy_f16 with out
// == in, reduce_add_f16 with out on part 0), and not when the kernel
// leaves gaps in it (Gaps); such an operand counts as read (or, for gaps,
// as neither).
func kernelAccess(op *tile.Op) (reads, writes []byteSpan, ok bool) {
	spec, ok := op.Spec()
	if !ok {
		return nil, nil, false
	}
	acc, err := kernels.AccessOf(spec)
	if err != nil {
		return nil, nil, false
	}
	type operand struct {
		s byteSpan // the operand's bytes
		kernels.Access
	}
	ops := make([]operand, 0, len(acc))
	for _, a := range acc {
		r, found := opArg(op, a.Reg)
		if !found {
			return nil, nil, false
		}
		s, ok := refSpan(r, a.Bytes)
		if !ok {
			return nil, nil, false
		}
		ops = append(ops, operand{s, a})
	}
	for _, o := range ops {
		if !o.Written {
			reads = append(reads, byteSpan{o.s.Buf, o.s.Lo, o.s.Hi + o.Tail})
		}
	}
	pure := reads // the operands that are only read
	for _, o := range ops {
		if !o.Written {
			continue
		}
		read := o.ReadFirst
		for _, r := range pure {
			if r.overlaps(o.s) {
				read = true
			}
		}
		switch {
		case read:
			reads = append(reads, byteSpan{o.s.Buf, o.s.Lo, o.s.Hi + o.Tail})
		case o.Tail > 0:
			reads = append(reads, byteSpan{o.s.Buf, o.s.Hi, o.s.Hi + o.Tail})
			fallthrough
		default:
			if !o.Gaps {
				writes = append(writes, o.s)
			}
		}
	}
	return reads, writes, true
}

// eliminatePhases removes the exchange phases without transfers and the
// ops that run them, renumbers the others and returns how many phases and
// ops it removed. A loop whose body held only such ops goes too.
func eliminatePhases(pl *tile.Program) (phases, ops int) {
	newID := make([]int, len(pl.Exchanges))
	var kept []tile.XPhase
	for p, ph := range pl.Exchanges {
		if len(ph.Transfers) == 0 {
			newID[p] = -1
			phases++
			continue
		}
		newID[p] = len(kept)
		ph.ID = len(kept)
		kept = append(kept, ph)
	}
	if phases == 0 {
		return 0, 0
	}
	pl.Exchanges = kept
	progs := slices.Clone(pl.Programs)
	for l := range progs {
		for c, list := range progs[l].Calls {
			var n int
			progs[l].Calls[c], n = renumberPhases(list, newID)
			ops += n
		}
	}
	pl.Programs = progs
	return phases, ops
}

// renumberPhases returns ops with the exchanges of removed phases dropped
// and the others renumbered; phase numbers outside the old range are left
// as they are (still outside the new one).
func renumberPhases(ops []tile.Op, newID []int) ([]tile.Op, int) {
	if ops == nil {
		return nil, 0
	}
	removed := 0
	out := make([]tile.Op, 0, len(ops))
	for _, op := range ops {
		switch op.Kind {
		case tile.OpExchange:
			if op.Phase >= 0 && op.Phase < len(newID) {
				if newID[op.Phase] < 0 {
					removed++
					continue
				}
				op.Phase = newID[op.Phase]
			}
		case tile.OpLoop:
			body, n := renumberPhases(op.Body, newID)
			removed += n
			if len(body) == 0 && len(op.Body) > 0 {
				continue
			}
			op.Body = body
		}
		out = append(out, op)
	}
	return out, removed
}

// eliminateBuffers removes every tile's buffers that nothing references and
// returns how many it removed.
func eliminateBuffers(pl *tile.Program) int {
	// The names each tile's ops, transfers and host slices reference: a
	// tile has a handful of buffers, so a short list beats a map per tile.
	used := make([][]string, len(pl.Programs))
	use := func(tl int, r tile.Ref) {
		if tl < 0 || tl >= len(used) {
			return
		}
		if !slices.Contains(used[tl], r.Buf) {
			used[tl] = append(used[tl], r.Buf)
		}
	}
	var visit func(tl int, ops []tile.Op)
	visit = func(tl int, ops []tile.Op) {
		for i := range ops {
			op := &ops[i]
			if op.Kind == tile.OpHostCopy || op.Dst.Buf != "" {
				use(tl, op.Dst)
			}
			for _, a := range op.Args {
				use(tl, a.Ref)
			}
			visit(tl, op.Body)
		}
	}
	for l := range pl.Programs {
		for _, ops := range pl.Programs[l].Calls {
			visit(l, ops)
		}
	}
	for _, ph := range pl.Exchanges {
		for _, t := range ph.Transfers {
			use(t.Src, t.SrcRef)
			for _, d := range t.Dsts {
				use(d.Tile, d.Ref)
			}
		}
	}
	for _, bs := range [][]tile.HostBinding{pl.Inputs, pl.Weights, pl.Outputs} {
		for _, b := range bs {
			for _, s := range b.Slices {
				use(s.Tile, s.Ref)
			}
		}
	}
	removed := 0
	var progs []tile.TileProgram
	for l := range pl.Programs {
		bufs := pl.Programs[l].Buffers
		var gone map[string]bool // allocated only on the tiles that lose a buffer
		for i := range bufs {
			if !slices.Contains(used[l], bufs[i].Name) {
				if gone == nil {
					gone = map[string]bool{}
				}
				gone[bufs[i].Name] = true
			}
		}
		if len(gone) == 0 {
			continue
		}
		out := make([]tile.Buffer, 0, len(bufs)-len(gone))
		for _, b := range bufs {
			if gone[b.Name] {
				removed++
				continue
			}
			if slices.ContainsFunc(b.Apart, func(n string) bool { return gone[n] }) {
				b.Apart = slices.DeleteFunc(slices.Clone(b.Apart), func(n string) bool { return gone[n] })
			}
			out = append(out, b)
		}
		if progs == nil {
			progs = slices.Clone(pl.Programs)
		}
		progs[l].Buffers = out
	}
	if progs != nil {
		pl.Programs = progs
	}
	return removed
}
