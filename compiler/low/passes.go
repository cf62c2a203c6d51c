package low

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/ipustack/ipustack/kernels"
)

// Optimisation passes over a lowered plan. Each pass rewrites the plan in
// place and reports what it changed; none changes what the plan computes.
//
// A pass never writes into a slice or map it did not allocate: it replaces
// Programs, Exchanges, op lists, buffer lists and parameter maps with new
// ones when it changes them, so a plan copied by value (cp := *pl) before a
// pass keeps its original content.
//
// The passes only rely on the plan's data model and the kernel access
// contract (kernels.Operand): an op they cannot analyse (an unknown kernel,
// parameters that do not resolve, a ref that steps with a loop where none
// is expected) is kept as it is, never a panic.

// PassReport is what one pass changed.
type PassReport struct {
	Pass    string // "group_exchanges", "merge_copies", "eliminate"
	Changes int    // items removed or merged (0: nothing to do)
	Detail  []any  // slog-style key/value pairs describing the change, e.g. "phase", 2, "transfers_before", 9000, "transfers_after", 2970
}

// Log records the report on log (nil: slog.Default()) as one "low pass"
// event: the pass, its change count and its detail.
func (r PassReport) Log(log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	log.Info("low pass", append([]any{"pass", r.Pass, "changes", r.Changes}, r.Detail...)...)
}

// Optimize runs GroupExchanges, MergeCopies and Eliminate in that order and
// returns their reports (also kept in pl.Passes for the build's log).
//
// Eliminate can make two copies adjacent (by dropping a clear or the
// exchange of an empty phase between them), so when it changed anything
// MergeCopies runs once more and its changes are added to the MergeCopies
// report (under "after_eliminate"). Nothing else feeds back (grouping
// transfers and merging copies read and write the same bytes as before, so
// they cannot enable another elimination), which makes Optimize
// idempotent: a second run reports no changes.
func Optimize(pl *Plan) []PassReport {
	g := GroupExchanges(pl)
	m := MergeCopies(pl)
	e := Eliminate(pl)
	if e.Changes > 0 {
		if again := MergeCopies(pl); again.Changes > 0 {
			m.Changes += again.Changes
			m.Detail = append(m.Detail, slog.Group("after_eliminate", again.Detail...))
		}
	}
	reps := []PassReport{g, m, e}
	if pl != nil {
		pl.Passes = reps
	}
	return reps
}

// ---------------------------------------------------------------------------
// GroupExchanges

// maxTransferWords is the largest transfer the exchange scheduler accepts
// (compiler/exchange checkPhase); merging stops short of it.
const maxTransferWords = 1 << 20

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
func GroupExchanges(pl *Plan) PassReport {
	rep := PassReport{Pass: "group_exchanges"}
	if pl == nil {
		return rep
	}
	before, after := 0, 0
	var changed []string
	var phases []XPhase
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
func groupKey(t *XTransfer) string {
	b := make([]byte, 0, 32+16*len(t.Dsts))
	ref := func(r Ref) {
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
func groupTransfers(ts []XTransfer) []XTransfer {
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
				if chains[ci].words+t.Words <= maxTransferWords && dstsFollow(chains[ci].dstEnd, t.Dsts) {
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
	out := make([]XTransfer, len(chains))
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
func mayGroup(ts []XTransfer) bool {
	idx := make([]int32, len(ts))
	for i := range idx {
		idx[i] = int32(i)
	}
	key := func(t *XTransfer) (int, string, int) { return t.Src, t.SrcRef.Buf, t.SrcRef.Off }
	slices.SortFunc(idx, func(a, b int32) int {
		sa, ba, oa := key(&ts[a])
		sb, bb, ob := key(&ts[b])
		return cmp.Or(cmp.Compare(sa, sb), cmp.Compare(ba, bb), cmp.Compare(oa, ob))
	})
	for _, i := range idx {
		t := &ts[i]
		end := t.SrcRef.Off + 4*t.Words
		at, _ := slices.BinarySearchFunc(idx, t, func(e int32, t *XTransfer) int {
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
func continues(t, u *XTransfer) bool {
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
func dstsFollow(ends []int, dsts []XDest) bool {
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
func MergeCopies(pl *Plan) PassReport {
	rep := PassReport{Pass: "merge_copies"}
	if pl == nil {
		return rep
	}
	merged, tiles := 0, 0
	var progs []TileProgram
	for l := range pl.Programs {
		n0 := merged
		var calls [2][]Op
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
func mergeCopyOps(ops []Op) ([]Op, int) {
	merged := 0
	var out []Op // nil until something changes
	grow := func(i int) {
		if out == nil {
			out = append(make([]Op, 0, len(ops)), ops[:i]...)
		}
	}
	for i := range ops {
		op := ops[i]
		if op.Kind == OpLoop {
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

func isCopyCall(op *Op) bool { return op.Kind == OpKernel && op.Kernel == kernels.CopyF16 }

// copyRefs returns the out ($m2) and in ($m3) refs and the resolved size
// of a copy_f16 call.
func copyRefs(op *Op) (out, in Ref, n int, ok bool) {
	if op.Kind != OpKernel || op.Kernel != kernels.CopyF16 || len(op.Args) != 2 {
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
func mergeCopy(a, b *Op) (Op, bool) {
	outA, inA, n1, okA := copyRefs(a)
	outB, inB, n2, okB := copyRefs(b)
	if !okA || !okB || !followsRef(outA, n1, outB) || !followsRef(inA, n1, inB) {
		return Op{}, false
	}
	n := n1 + n2
	if outA.Buf == inA.Buf {
		same := outA.Off == inA.Off && outA.Step == inA.Step
		apart := outA.Step == inA.Step && (outA.Off+n <= inA.Off || inA.Off+n <= outA.Off)
		if !same && !apart {
			return Op{}, false
		}
	}
	k, err := kernels.Lookup(kernels.CopyF16)
	if err != nil {
		return Op{}, false
	}
	m := kernelOp(kernels.Copy{N: n}, *a)
	if _, err := k.Resolve(m.Params); err != nil {
		return Op{}, false
	}
	m.Args = slices.Clone(a.Args)
	return m, true
}

// follows reports whether r2 starts where the n bytes at r1 end, in the
// same buffer and with the same loop steps.
func followsRef(r1 Ref, n int, r2 Ref) bool {
	return r1.Buf == r2.Buf && r1.Step == r2.Step && r2.Off == r1.Off+n
}

func opArg(op *Op, reg string) (Ref, bool) {
	for _, a := range op.Args {
		if a.Reg == reg {
			return a.Ref, true
		}
	}
	return Ref{}, false
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
func Eliminate(pl *Plan) PassReport {
	rep := PassReport{Pass: "eliminate"}
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

func isClear(op *Op) bool { return op.Kind == OpKernel && op.Kernel == kernels.FillZero }

// eliminateClears drops the dead clears of every tile's calls; clears in
// loop bodies are kept (and counted as kept).
//
// Each clear is judged on the original list, the other clears counted as
// the writes they are. Dropping several at once is still sound: a clear
// dropped for being overwritten by a later (dead) clear has its bytes in
// that clear's range, which is itself overwritten before any read.
func eliminateClears(pl *Plan) (dropped, kept int) {
	var progs []TileProgram
	for l := range pl.Programs {
		t := &pl.Programs[l]
		calls := t.Calls
		changed := false
		for c, ops := range t.Calls {
			var out []Op
			for i := range ops {
				if ops[i].Kind == OpLoop {
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
					out = make([]Op, i, len(ops)-1)
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

func countClears(ops []Op) int {
	n := 0
	for i := range ops {
		if isClear(&ops[i]) {
			n++
		}
		if ops[i].Kind == OpLoop {
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
func clearIsDead(pl *Plan, tile int, ops []Op, i int) bool {
	reads, writes, ok := opAccess(pl, tile, &ops[i])
	if !ok || len(reads) > 0 || len(writes) == 0 {
		return false
	}
	cleared := byteSpans(writes)
	for j := i + 1; j < len(ops); j++ {
		reads, writes, ok := opAccess(pl, tile, &ops[j])
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
func refSpan(r Ref, n int) (byteSpan, bool) {
	if r.Step != [MaxLoopDepth]int{} || n < 0 {
		return byteSpan{}, false
	}
	return byteSpan{r.Buf, r.Off, r.Off + n}, true
}

// access returns the bytes of the tile's buffers op reads and the bytes
// it overwrites completely; ok is false when the op cannot be analysed.
func opAccess(pl *Plan, tile int, op *Op) (reads, writes []byteSpan, ok bool) {
	switch op.Kind {
	case OpHostSync, OpSample:
		// A handshake moves data through the host window, which is not a
		// plan buffer; the output read-back is handled at the list's end.
		return nil, nil, true
	case OpHostCopy:
		// Reads the host window (not a plan buffer), writes Dst.
		s, ok := refSpan(op.Dst, op.Bytes)
		return nil, []byteSpan{s}, ok
	case OpExchange:
		if op.Phase < 0 || op.Phase >= len(pl.Exchanges) {
			return nil, nil, false
		}
		for _, t := range pl.Exchanges[op.Phase].Transfers {
			if t.Src == tile {
				s, ok := refSpan(t.SrcRef, 4*t.Words)
				if !ok {
					return nil, nil, false
				}
				reads = append(reads, s)
			}
			for _, d := range t.Dsts {
				if d.Tile == tile {
					s, ok := refSpan(d.Ref, 4*t.Words)
					if !ok {
						return nil, nil, false
					}
					writes = append(writes, s)
				}
			}
		}
		return reads, writes, true
	case OpKernel:
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
func kernelAccess(op *Op) (reads, writes []byteSpan, ok bool) {
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
func eliminatePhases(pl *Plan) (phases, ops int) {
	newID := make([]int, len(pl.Exchanges))
	var kept []XPhase
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
func renumberPhases(ops []Op, newID []int) ([]Op, int) {
	if ops == nil {
		return nil, 0
	}
	removed := 0
	out := make([]Op, 0, len(ops))
	for _, op := range ops {
		switch op.Kind {
		case OpExchange:
			if op.Phase >= 0 && op.Phase < len(newID) {
				if newID[op.Phase] < 0 {
					removed++
					continue
				}
				op.Phase = newID[op.Phase]
			}
		case OpLoop:
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
func eliminateBuffers(pl *Plan) int {
	// The names each tile's ops, transfers and host slices reference: a
	// tile has a handful of buffers, so a short list beats a map per tile.
	used := make([][]string, len(pl.Programs))
	use := func(tile int, r Ref) {
		if tile < 0 || tile >= len(used) {
			return
		}
		if !slices.Contains(used[tile], r.Buf) {
			used[tile] = append(used[tile], r.Buf)
		}
	}
	var visit func(tile int, ops []Op)
	visit = func(tile int, ops []Op) {
		for i := range ops {
			op := &ops[i]
			if op.Kind == OpHostCopy || op.Dst.Buf != "" {
				use(tile, op.Dst)
			}
			for _, a := range op.Args {
				use(tile, a.Ref)
			}
			visit(tile, op.Body)
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
	for _, bs := range [][]HostBinding{pl.Inputs, pl.Weights, pl.Outputs} {
		for _, b := range bs {
			for _, s := range b.Slices {
				use(s.Tile, s.Ref)
			}
		}
	}
	removed := 0
	var progs []TileProgram
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
		out := make([]Buffer, 0, len(bufs)-len(gone))
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
