package tile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
)

// MaxTransferWords is the largest exchange transfer (words) the exchange
// scheduler accepts (compiler/exchange checkPhase).
const MaxTransferWords = 1 << 20

// LoopLimit bounds a loop's count and a ref's step (both below it): they
// are 20-bit immediates of the emitted code (compiler/emit).
const LoopLimit = 1 << 20

// maxVerifyErrors is how many violations Verify reports (then "and N more").
const maxVerifyErrors = 10

// maxSyncEvents bounds the flattened sync sequence Verify compares between
// tiles (a loop nest of huge counts is not expanded: the comparison is
// skipped, everything else is still checked).
const maxSyncEvents = 1 << 20

// Verify checks every invariant the passes, compiler/place and
// compiler/emit rely on, and returns an error listing the violations
// (the first few), each naming the tile, call, op, buffer, phase, binding
// or host transfer concerned; nil when the program is valid.
//
// The invariants:
//
//   - Tiles is 1..ipu21.Tiles and len(Programs); tile l has Logical l, a
//     distinct valid Physical, and Row and Col both -1 (inactive) or both
//     at least 0.
//   - Buffers: names non-empty, unique on their tile and not starting
//     with ReservedPrefix; Bytes > 0; Align 0 (the default) or a power of
//     two; Region AnyRegion or Interleaved; Apart names other buffers of
//     the tile; Live zero or 0 <= Live[0] < Live[1].
//   - Refs: name a buffer of the tile they are used on; Off >= 0 and, for
//     the bytes accessed (a host copy's Bytes, a kernel operand's
//     kernels.Operand.Bytes, a transfer's 4*Words, a host slice's Length),
//     every iteration's range inside the buffer; Step[d] in [0, LoopLimit)
//     and non-zero only at the depth of an enclosing loop.
//   - Ops: a known Kind; a Body only on OpLoop; host syncs, host copies
//     and samples only at the top level of a call; OpLoop Count in
//     [1, LoopLimit), Depth in [0, MaxLoopDepth) and deeper than the
//     enclosing loop's; OpKernel a kernel that kernels.Lookup finds whose
//     parameters Resolve, with exactly one argument per kernel argument
//     register; OpHostCopy Bytes in 1..SlotSize, a copy_f16 size that
//     resolves; OpExchange a phase in range; OpSample only in "run", 0
//     then 1, once each.
//   - Exchange phases: at most MaxRowPhases; ID their index; every phase
//     run; transfers of 1..MaxTransferWords words, word-aligned refs that
//     do not step, from an active tile to one or more distinct other
//     active tiles.
//   - Every tile runs the same host syncs and exchange phases in the same
//     order in each call (loops expanded; not compared when a tile's
//     would exceed 2^20 events): sync 7 and sync 3 are global. Each call
//     has one host sync per host phase of its HostCall.
//   - Host bindings: Inputs, Weights and Outputs of their Kind, names
//     non-empty and unique, Rows and Cols >= 1, PadRows 0 or >= Rows;
//     every slice on an active tile, of Length > 0 inside the binding's
//     Bytes, with its Block set: a known order, a non-empty rectangle in
//     the padded matrix (columns to 16, rows to PadRows, AMP-right rows to
//     16), AMP orders in whole 16-column groups (AMP-right rows in 16-row
//     groups), of exactly Length bytes (f16); the slices cover the
//     binding's bytes exactly.
//   - Host calls: "initialize" (command 0) and "run" (command 1), in that
//     order. Each transfer names a binding of its Kind (weights in
//     initialize; inputs and outputs in run), a slice of it, a piece
//     inside the slice of 1..SlotSize bytes, on the slice's tile; at most
//     one transfer per tile per phase (the slot); every slice's pieces
//     cover it exactly, once. After the host sync of phase k a tile copies
//     exactly its input or weight piece of phase k (OpHostCopy: Dst the
//     slice's ref advanced by the piece's offset, Bytes its length), and
//     copies nothing before the first sync.
func (p *Program) Verify() error {
	if p == nil {
		return errors.New("tile: verify: nil program")
	}
	v := &verifier{p: p, resolved: map[string]resolvedKernel{}, typed: map[kernels.Spec]resolvedKernel{}}
	v.verify()
	if len(v.errs) == 0 {
		return nil
	}
	msg := strings.Join(v.errs, "\n\t")
	if v.more > 0 {
		msg += fmt.Sprintf("\n\tand %d more", v.more)
	}
	return fmt.Errorf("tile: invalid program (%d tiles):\n\t%s", p.Tiles, msg)
}

type verifier struct {
	p    *Program
	errs []string
	more int
	// bufs[l] maps tile l's buffer names to their sizes.
	bufs     []map[string]int
	resolved map[string]resolvedKernel       // by kernel and parameters
	typed    map[kernels.Spec]resolvedKernel // by typed spec (cheaper keys)
}

type resolvedKernel struct {
	k   *kernels.Kernel
	p   kernels.Params
	err error
}

func (v *verifier) bad(format string, args ...any) {
	if len(v.errs) >= maxVerifyErrors {
		v.more++
		return
	}
	v.errs = append(v.errs, fmt.Sprintf(format, args...))
}

func (v *verifier) verify() {
	p := v.p
	if p.Tiles < 1 || p.Tiles > ipu21.Tiles || len(p.Programs) != p.Tiles {
		v.bad("%d tiles and %d programs: want 1..%d tiles, one program each", p.Tiles, len(p.Programs), ipu21.Tiles)
		return
	}
	v.tiles()
	v.phases()
	v.ops()
	v.bindings()
	v.hostCalls()
	v.syncs()
}

func (v *verifier) tiles() {
	seen := map[int]int{}
	v.bufs = make([]map[string]int, len(v.p.Programs))
	for l := range v.p.Programs {
		t := &v.p.Programs[l]
		if t.Logical != l {
			v.bad("tile %d: Logical %d", l, t.Logical)
		}
		if !ipu21.ValidPhysical(t.Physical) {
			v.bad("tile %d: physical tile %d is not one of the chip's", l, t.Physical)
		} else if o, dup := seen[t.Physical]; dup {
			v.bad("tile %d: physical tile %d, as tile %d's", l, t.Physical, o)
		} else {
			seen[t.Physical] = l
		}
		if t.Row < -1 || t.Col < -1 || (t.Row < 0) != (t.Col < 0) {
			v.bad("tile %d: grid position (%d,%d): want both -1 (inactive) or both >= 0", l, t.Row, t.Col)
		}
		m := make(map[string]int, len(t.Buffers))
		for i := range t.Buffers {
			b := &t.Buffers[i]
			what := func() string { return fmt.Sprintf("tile %d buffer %d %q", l, i, b.Name) }
			switch _, dup := m[b.Name]; {
			case b.Name == "" || strings.HasPrefix(b.Name, ReservedPrefix):
				v.bad("%s: empty or reserved name", what())
			case dup:
				v.bad("%s: a second buffer of that name", what())
			}
			m[b.Name] = b.Bytes
			if b.Bytes <= 0 {
				v.bad("%s: %d bytes", what(), b.Bytes)
			}
			if b.Align < 0 || b.Align&(b.Align-1) != 0 {
				v.bad("%s: alignment %d is not a power of two", what(), b.Align)
			}
			if b.Region != kernels.AnyRegion && b.Region != kernels.Interleaved {
				v.bad("%s: unknown region %d", what(), b.Region)
			}
			if lv := b.Live; lv != ([2]int{}) && (lv[0] < 0 || lv[0] >= lv[1]) {
				v.bad("%s: live span [%d,%d): want zero (always) or 0 <= start < end", what(), lv[0], lv[1])
			}
		}
		for i := range t.Buffers {
			b := &t.Buffers[i]
			for _, o := range b.Apart {
				if _, ok := m[o]; !ok || o == b.Name {
					v.bad("tile %d buffer %d %q: apart from %q, not another buffer of the tile", l, i, b.Name, o)
				}
			}
		}
		v.bufs[l] = m
	}
}

// loopLevel is one enclosing loop of an op: its depth and count.
type loopLevel struct{ depth, count int }

// ref checks that r names a buffer of tile and that n bytes at r, in every
// iteration of the enclosing loops, lie inside it; it returns the problem
// ("" if none), which the caller reports with where it found it (built
// only then: Verify visits every op of every tile).
func (v *verifier) ref(tile int, r Ref, n int, loops []loopLevel) string {
	size, ok := v.bufs[tile][r.Buf]
	if !ok {
		return fmt.Sprintf("tile %d has no buffer %q", tile, r.Buf)
	}
	hi := r.Off + n
	every := "" // "(every iteration)" for a ref that steps
	for d, st := range r.Step {
		if st == 0 {
			continue
		}
		at := slices.IndexFunc(loops, func(lv loopLevel) bool { return lv.depth == d })
		if st < 0 || st >= LoopLimit || at < 0 {
			return fmt.Sprintf("%q steps %d with loop level %d: want a step in [0, %d) of an enclosing loop", r.Buf, st, d, LoopLimit)
		}
		hi += (loops[at].count - 1) * st
		every = " (every iteration)"
	}
	if r.Off < 0 || n < 0 || hi > size {
		return fmt.Sprintf("%q bytes [%d,%d)%s outside its %d", r.Buf, r.Off, hi, every, size)
	}
	return ""
}

func (v *verifier) phases() {
	p := v.p
	if len(p.Exchanges) > MaxRowPhases {
		v.bad("%d exchange phases, the runtime's row table holds %d", len(p.Exchanges), MaxRowPhases)
	}
	active := func(t int) bool { return t >= 0 && t < p.Tiles && p.Programs[t].Active() }
	for i := range p.Exchanges {
		ph := &p.Exchanges[i]
		if ph.ID != i {
			v.bad("phase %d %q: ID %d", i, ph.Name, ph.ID)
		}
		for j := range ph.Transfers {
			x := &ph.Transfers[j]
			what := func() string { return fmt.Sprintf("phase %d %q transfer %d", i, ph.Name, j) }
			if x.Words < 1 || x.Words > MaxTransferWords || len(x.Dsts) == 0 {
				v.bad("%s: %d words to %d tiles: want 1..%d words to one or more", what(), x.Words, len(x.Dsts), MaxTransferWords)
			}
			if !active(x.Src) {
				v.bad("%s: source %d is not an active tile", what(), x.Src)
			} else if m := v.xref(x.Src, x.SrcRef, x.Words); m != "" {
				v.bad("%s source: %s", what(), m)
			}
			for k, d := range x.Dsts {
				switch {
				case !active(d.Tile):
					v.bad("%s destination %d: tile %d is not an active tile", what(), k, d.Tile)
					continue
				case d.Tile == x.Src:
					v.bad("%s destination %d: tile %d is the source", what(), k, d.Tile)
				case k > 0 && slices.ContainsFunc(x.Dsts[:k], func(e XDest) bool { return e.Tile == d.Tile }):
					v.bad("%s destination %d: tile %d is a destination twice", what(), k, d.Tile)
				}
				if m := v.xref(d.Tile, d.Ref, x.Words); m != "" {
					v.bad("%s destination %d: %s", what(), k, m)
				}
			}
		}
	}
}

// xref checks a transfer's ref: word-aligned, not stepping, inside its
// buffer.
func (v *verifier) xref(tile int, r Ref, words int) string {
	if r.Off%4 != 0 || r.Step != ([MaxLoopDepth]int{}) {
		return fmt.Sprintf("%q offset %d steps %v: want a word-aligned offset that does not step", r.Buf, r.Off, r.Step)
	}
	return v.ref(tile, r, 4*max(words, 0), nil)
}

func (v *verifier) ops() {
	for l := range v.p.Programs {
		t := &v.p.Programs[l]
		for c, ops := range t.Calls {
			name := [2]string{CallInitialize, CallRun}[c]
			samples := 0 // the samples of the call so far
			v.opList(l, name, nil, ops, nil, &samples)
			if c == 1 && samples != 2 {
				v.bad("tile %d %s: %d cycle samples: want start (0) and end (1)", l, name, samples)
			}
		}
	}
}

func (v *verifier) opList(l int, call string, path []int, ops []Op, loops []loopLevel, samples *int) {
	depth := -1
	if len(loops) > 0 {
		depth = loops[len(loops)-1].depth
	}
	for i := range ops {
		op := &ops[i]
		// what names the op: "tile 3 run op 7" (in a loop body "op 7.2").
		what := func() string {
			var b strings.Builder
			fmt.Fprintf(&b, "tile %d %s op ", l, call)
			for _, k := range path {
				fmt.Fprintf(&b, "%d.", k)
			}
			fmt.Fprintf(&b, "%d", i)
			if op.Kind == OpKernel {
				fmt.Fprintf(&b, " (%s)", op.Kernel)
			}
			return b.String()
		}
		if op.Kind != OpLoop && len(op.Body) > 0 {
			v.bad("%s: a body on a kind %d op", what(), op.Kind)
		}
		top := len(loops) == 0
		switch op.Kind {
		case OpHostSync:
			if !top {
				v.bad("%s: host sync inside a loop", what())
			}
		case OpHostCopy:
			if !top {
				v.bad("%s: host copy inside a loop", what())
			}
			if op.Bytes < 1 || op.Bytes > SlotSize {
				v.bad("%s: host copy of %d bytes: want 1..%d (the slot)", what(), op.Bytes, SlotSize)
			} else if rk := v.resolve(kernels.Copy{N: op.Bytes}, "", nil); rk.err != nil {
				v.bad("%s: host copy of %d bytes: %v", what(), op.Bytes, rk.err)
			}
			if m := v.ref(l, op.Dst, op.Bytes, loops); m != "" {
				v.bad("%s: host copy: %s", what(), m)
			}
		case OpKernel:
			v.kernel(what, l, op, loops)
		case OpExchange:
			if op.Phase < 0 || op.Phase >= len(v.p.Exchanges) {
				v.bad("%s: exchange phase %d of %d", what(), op.Phase, len(v.p.Exchanges))
			}
		case OpSample:
			if !top || call != CallRun || op.Sample != *samples || *samples > 1 {
				v.bad("%s: cycle sample %d: want sample 0 then 1, at the top level of %s", what(), op.Sample, CallRun)
			}
			*samples++
		case OpLoop:
			if op.Count < 1 || op.Count >= LoopLimit || op.Depth <= depth || op.Depth >= MaxLoopDepth {
				v.bad("%s: loop of %d iterations at level %d inside level %d: want 1..%d iterations, a level in (%d, %d)",
					what(), op.Count, op.Depth, depth, LoopLimit-1, depth, MaxLoopDepth)
				continue
			}
			v.opList(l, call, append(slices.Clip(path), i), op.Body, append(slices.Clip(loops), loopLevel{op.Depth, op.Count}), samples)
		default:
			v.bad("%s: unknown kind %d", what(), op.Kind)
		}
	}
}

// resolve looks a kernel call up and resolves its parameters, once per
// specialisation: by its typed spec s when it has one, else by name and
// parameters.
func (v *verifier) resolve(s kernels.Spec, name string, params kernels.Params) resolvedKernel {
	var key string
	if s != nil {
		if rk, ok := v.typed[s]; ok {
			return rk
		}
		name, params = s.Name(), s.Params()
	} else {
		key = name + "\x00" + params.String()
		if rk, ok := v.resolved[key]; ok {
			return rk
		}
	}
	var rk resolvedKernel
	rk.k, rk.err = kernels.Lookup(name)
	if rk.err == nil {
		rk.p, rk.err = rk.k.Resolve(params)
	}
	if s != nil {
		v.typed[s] = rk
	} else {
		v.resolved[key] = rk
	}
	return rk
}

func (v *verifier) kernel(what func() string, l int, op *Op, loops []loopLevel) {
	s, _ := op.Spec()
	rk := v.resolve(s, op.Kernel, op.Params)
	if rk.err != nil {
		v.bad("%s: %v", what(), rk.err)
		return
	}
	k := rk.k
	if len(op.Args) != len(k.Args) {
		v.bad("%s: %d arguments, the kernel takes %d", what(), len(op.Args), len(k.Args))
		return
	}
	for _, ka := range k.Args {
		n := 0
		for _, a := range op.Args {
			if a.Reg == ka.Reg {
				n++
			}
		}
		if n != 1 {
			v.bad("%s: %d arguments in %s (%s): want one", what(), n, ka.Reg, ka.Name)
			return
		}
	}
	for _, a := range op.Args {
		bytes := 0
		for _, o := range k.Operands {
			if o.Bytes == nil {
				continue
			}
			for _, ka := range k.Args {
				if ka.Reg == a.Reg && ka.Name == o.Name {
					bytes = o.Bytes(rk.p)
				}
			}
		}
		if m := v.ref(l, a.Ref, bytes, loops); m != "" {
			v.bad("%s %s: %s", what(), a.Reg, m)
		}
	}
}

// kindName names a binding list.
var kindName = map[ipuexe.BindingKind]string{ipuexe.KindInput: "input", ipuexe.KindWeight: "weight", ipuexe.KindOutput: "output"}

// bindingList returns the bindings of kind.
func (p *Program) bindingList(kind ipuexe.BindingKind) []HostBinding {
	switch kind {
	case ipuexe.KindInput:
		return p.Inputs
	case ipuexe.KindWeight:
		return p.Weights
	case ipuexe.KindOutput:
		return p.Outputs
	}
	return nil
}

// slice is the binding slice a host transfer moves, nil if none.
func (p *Program) slice(tr *HostTransfer) *HostSlice {
	bs := p.bindingList(tr.Kind)
	if tr.Binding < 0 || tr.Binding >= len(bs) || tr.Slice < 0 || tr.Slice >= len(bs[tr.Binding].Slices) {
		return nil
	}
	return &bs[tr.Binding].Slices[tr.Slice]
}

func (v *verifier) bindings() {
	p := v.p
	names := map[string]bool{}
	for _, kind := range []ipuexe.BindingKind{ipuexe.KindInput, ipuexe.KindWeight, ipuexe.KindOutput} {
		for i := range p.bindingList(kind) {
			hb := &p.bindingList(kind)[i]
			what := fmt.Sprintf("%s binding %d %q", kindName[kind], i, hb.Name)
			if hb.Kind != kind {
				v.bad("%s: kind %d", what, hb.Kind)
			}
			if hb.Name == "" || names[hb.Name] {
				v.bad("%s: empty or not a unique name", what)
			}
			names[hb.Name] = true
			if hb.Rows < 1 || hb.Cols < 1 || (hb.PadRows != 0 && hb.PadRows < hb.Rows) {
				v.bad("%s: %d x %d matrix, padded to %d rows: want >= 1 x 1, padded rows 0 or >= the rows", what, hb.Rows, hb.Cols, hb.PadRows)
			}
			type extent struct{ lo, hi, i int }
			ext := make([]extent, 0, len(hb.Slices))
			for j := range hb.Slices {
				sl := &hb.Slices[j]
				sw := func() string { return fmt.Sprintf("%s slice %d", what, j) }
				if sl.Tile < 0 || sl.Tile >= p.Tiles || !p.Programs[sl.Tile].Active() {
					v.bad("%s: tile %d is not an active tile", sw(), sl.Tile)
					continue
				}
				if m := v.ref(sl.Tile, sl.Ref, sl.Length, nil); m != "" {
					v.bad("%s: %s", sw(), m)
				}
				if sl.Length < 1 || sl.Offset < 0 || sl.Offset+sl.Length > hb.Bytes {
					v.bad("%s: bytes [%d,+%d) outside the binding's %d", sw(), sl.Offset, sl.Length, hb.Bytes)
				} else {
					ext = append(ext, extent{sl.Offset, sl.Offset + sl.Length, j})
				}
				v.block(sw, hb, sl)
			}
			slices.SortFunc(ext, func(a, b extent) int { return a.lo - b.lo })
			next := 0
			for _, e := range ext {
				if e.lo != next {
					v.bad("%s: slice %d at byte %d, after bytes up to %d: want the slices to cover the binding once", what, e.i, e.lo, next)
				}
				next = max(next, e.hi)
			}
			if next != hb.Bytes && len(ext) == len(hb.Slices) {
				v.bad("%s: the slices cover %d of its %d bytes", what, next, hb.Bytes)
			}
		}
	}
}

// block checks a slice's rectangle and order against its binding.
func (v *verifier) block(where func() string, hb *HostBinding, sl *HostSlice) {
	b := &sl.Block
	amp := b.Order == ipuexe.AMPLeft || b.Order == ipuexe.AMPRight || b.Order == ipuexe.AMPOut
	if b.Order != ipuexe.RowMajor && !amp {
		v.bad("%s: unknown element order %d", where(), b.Order)
		return
	}
	rows := max(hb.Rows, hb.PadRows)
	if b.Order == ipuexe.AMPRight {
		rows = (rows + 15) / 16 * 16
	}
	cols := (hb.Cols + 15) / 16 * 16
	r, c := b.Rows, b.Cols
	if r.Lo < 0 || r.Lo >= r.Hi || r.Hi > rows || c.Lo < 0 || c.Lo >= c.Hi || c.Hi > cols {
		v.bad("%s: rows %v x cols %v: want a non-empty rectangle of the padded %d x %d matrix", where(), r, c, rows, cols)
		return
	}
	if amp && (c.Lo%16 != 0 || c.Hi%16 != 0) || b.Order == ipuexe.AMPRight && (r.Lo%16 != 0 || r.Hi%16 != 0) {
		v.bad("%s: rows %v x cols %v in %s order: want whole 16-column (and for amp-right 16-row) groups", where(), r, c, b.Order)
	}
	if n := 2 * r.Len() * c.Len(); n != sl.Length {
		v.bad("%s: rows %v x cols %v are %d bytes (f16), the slice %d", where(), r, c, n, sl.Length)
	}
}

func (v *verifier) hostCalls() {
	p := v.p
	if len(p.Calls) != 2 || p.Calls[0].Name != CallInitialize || p.Calls[0].Command != 0 || p.Calls[1].Name != CallRun || p.Calls[1].Command != 1 {
		var got []string
		for _, c := range p.Calls {
			got = append(got, fmt.Sprintf("%q (%d)", c.Name, c.Command))
		}
		v.bad("host calls %v: want %q (0) and %q (1)", got, CallInitialize, CallRun)
		return
	}
	// pieces[kind][binding][slice]: the transferred [offset, end) pieces.
	pieces := map[ipuexe.BindingKind][][][][2]int{}
	for _, kind := range []ipuexe.BindingKind{ipuexe.KindInput, ipuexe.KindWeight, ipuexe.KindOutput} {
		bs := p.bindingList(kind)
		pieces[kind] = make([][][][2]int, len(bs))
		for b := range bs {
			pieces[kind][b] = make([][][2]int, len(bs[b].Slices))
		}
	}
	for c := range p.Calls {
		hc := &p.Calls[c]
		for k, ph := range hc.Phases {
			slot := map[int]int{} // tile -> its transfer in the phase
			for i, tr := range ph {
				what := func() string { return fmt.Sprintf("host call %s phase %d transfer %d", hc.Name, k, i) }
				want := tr.Kind == ipuexe.KindWeight
				if c == 1 {
					want = tr.Kind == ipuexe.KindInput || tr.Kind == ipuexe.KindOutput
				}
				sl := p.slice(&tr)
				if !want || sl == nil {
					v.bad("%s: kind %d binding %d slice %d: not a slice of a binding of this call", what(), tr.Kind, tr.Binding, tr.Slice)
					continue
				}
				name := p.bindingList(tr.Kind)[tr.Binding].Name
				if tr.Tile != sl.Tile {
					v.bad("%s (%s slice %d): through tile %d's slot, the slice is on tile %d", what(), name, tr.Slice, tr.Tile, sl.Tile)
				}
				if tr.Length < 1 || tr.Length > SlotSize || tr.SliceOffset < 0 || tr.SliceOffset+tr.Length > sl.Length {
					v.bad("%s (%s slice %d): bytes [%d,+%d) of the slice's %d: want a piece of 1..%d bytes (the slot) inside it", what(), name, tr.Slice, tr.SliceOffset, tr.Length, sl.Length, SlotSize)
				}
				if o, dup := slot[tr.Tile]; dup {
					v.bad("%s (%s slice %d): tile %d's slot already holds transfer %d", what(), name, tr.Slice, tr.Tile, o)
				}
				slot[tr.Tile] = i
				ps := &pieces[tr.Kind][tr.Binding][tr.Slice]
				*ps = append(*ps, [2]int{tr.SliceOffset, tr.SliceOffset + tr.Length})
			}
		}
	}
	for _, kind := range []ipuexe.BindingKind{ipuexe.KindInput, ipuexe.KindWeight, ipuexe.KindOutput} {
		for b, sls := range pieces[kind] {
			hb := &p.bindingList(kind)[b]
			for s, ps := range sls {
				slices.SortFunc(ps, func(a, b [2]int) int { return a[0] - b[0] })
				next := 0
				for _, pc := range ps {
					if pc[0] != next {
						break
					}
					next = pc[1]
				}
				if next != hb.Slices[s].Length || len(ps) == 0 {
					v.bad("%s binding %q slice %d: the host transfers do not move its %d bytes once each", kindName[kind], hb.Name, s, hb.Slices[s].Length)
				}
			}
		}
	}
	v.hostCopies()
}

// hostCopies checks that after the host sync of phase k every tile copies
// exactly its upload of phase k.
func (v *verifier) hostCopies() {
	p := v.p
	for c := range p.Calls {
		hc := &p.Calls[c]
		// uploads[k][tile]: the tile's input or weight transfer of phase k.
		uploads := make([]map[int]*HostTransfer, len(hc.Phases))
		for k := range hc.Phases {
			uploads[k] = map[int]*HostTransfer{}
			for i := range hc.Phases[k] {
				tr := &hc.Phases[k][i]
				if tr.Kind != ipuexe.KindOutput && p.slice(tr) != nil {
					uploads[k][tr.Tile] = tr
				}
			}
		}
		for l := range p.Programs {
			k := -1
			copied := -1 // the last phase whose upload was copied
			check := func(upTo int) {
				// Every upload of phases (copied, upTo] is missing but k's.
				for q := copied + 1; q < upTo && q < len(uploads); q++ {
					if _, ok := uploads[q][l]; ok {
						v.bad("tile %d %s: no host copy of its piece of host phase %d", l, hc.Name, q)
					}
				}
			}
			for i, op := range p.Programs[l].Calls[c] {
				switch op.Kind {
				case OpHostSync:
					k++
				case OpHostCopy:
					what := fmt.Sprintf("tile %d %s op %d", l, hc.Name, i)
					if k < 0 || k >= len(uploads) || copied == k {
						v.bad("%s: a host copy not after a host phase's sync that uploads to it", what)
						continue
					}
					check(k)
					copied = k
					tr, ok := uploads[k][l]
					if !ok {
						v.bad("%s: host copy after host phase %d, which uploads nothing to it", what, k)
						continue
					}
					want := p.slice(tr).Ref
					want.Off += tr.SliceOffset
					if op.Dst != want || op.Bytes != tr.Length {
						v.bad("%s: host copy of %d bytes to %q+%d, the host uploads %d bytes for %q+%d", what, op.Bytes, op.Dst.Buf, op.Dst.Off, tr.Length, want.Buf, want.Off)
					}
				}
			}
			check(len(uploads))
		}
	}
}

// syncs checks that every tile runs the same host syncs and exchange
// phases in the same order in each call, one host sync per host phase,
// and that every phase runs.
func (v *verifier) syncs() {
	p := v.p
	run := make([]bool, len(p.Exchanges))
	for c := range p.Calls[:min(len(p.Calls), 2)] {
		var ref []int
		differ := 0 // tiles whose sequence differs from tile 0's, after the first reported
		for l := range p.Programs {
			ops := p.Programs[l].Calls[c]
			if syncEvents(ops) > maxSyncEvents {
				return
			}
			seq := appendSyncs(nil, ops)
			if l == 0 {
				ref = seq
				hs := 0
				for _, e := range seq {
					if e < 0 {
						hs++
					} else if e < len(run) {
						run[e] = true
					}
				}
				if hs != len(p.Calls[c].Phases) {
					v.bad("tile 0 %s: %d host syncs for %d host phases", p.Calls[c].Name, hs, len(p.Calls[c].Phases))
				}
				continue
			}
			if !slices.Equal(seq, ref) {
				if differ++; differ > 1 {
					continue
				}
				at := 0
				for at < min(len(seq), len(ref)) && seq[at] == ref[at] {
					at++
				}
				v.bad("tile %d %s: its host syncs and exchange phases differ from tile 0's at sync %d (-1: a host sync): %v, tile 0 %v",
					l, p.Calls[c].Name, at, seq[at:min(len(seq), at+4)], ref[at:min(len(ref), at+4)])
			}
		}
		if differ > 1 {
			v.bad("%s: %d more tiles' host syncs and exchange phases differ from tile 0's", p.Calls[c].Name, differ-1)
		}
	}
	for i, r := range run {
		if !r {
			v.bad("phase %d %q: no tile runs it", i, p.Exchanges[i].Name)
		}
	}
}

// syncEvents counts the host syncs and exchanges ops runs (loops
// expanded), saturating past maxSyncEvents.
func syncEvents(ops []Op) int {
	n := 0
	for i := range ops {
		switch op := &ops[i]; op.Kind {
		case OpHostSync, OpExchange:
			n++
		case OpLoop:
			if b := syncEvents(op.Body); b > 0 {
				n += min(max(op.Count, 0), maxSyncEvents+1) * b
			}
		}
		if n > maxSyncEvents {
			return n
		}
	}
	return n
}

// appendSyncs appends the sync events ops runs: -1 per host sync, the
// phase per exchange.
func appendSyncs(seq []int, ops []Op) []int {
	for i := range ops {
		switch op := &ops[i]; op.Kind {
		case OpHostSync:
			seq = append(seq, -1)
		case OpExchange:
			seq = append(seq, op.Phase)
		case OpLoop:
			for range op.Count {
				seq = appendSyncs(seq, op.Body)
			}
		}
	}
	return seq
}
