package exchange

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/ipustack/ipustack/ipu21"
)

// The placement: a greedy list scheduler over two resources per tile, the
// outgoing stream (one word per event) and the incoming mux (one source
// window at a time; payload windows follow at the tile's fixed latency, so
// they never overlap when the mux windows do not). Transfers are taken in a
// priority order and each is given the earliest send timeline at which its
// source stream and every destination's mux window (shifted by the route
// delay ttm) are free, inserting into holes left by earlier placements.
// Memory-element clashes, the read-before-write order on a tile and the
// control guard are checked on the candidate and push it later. The
// orders (problem.order) are where the construction lies: placed round
// after round of an edge colouring, an all-to-all phase comes out as a
// near-perfect open-shop schedule.

// xfer is a transfer (or the part of one sent one way: see part) with its
// per-destination timing. For a paired part n counts 64-bit items, and the
// timing fields are chosen so that the same arithmetic serves both kinds:
// the receive window (the first item's mux sample) opens at
// u0 = ts + 1 + ttm[j] and the first write lands at u0 + lat[j].
type xfer struct {
	orig   int  // index of the phase transfer it carries
	paired bool // 64-bit items through the pair paths
	size   int  // bytes per item: 4, or 8 when paired
	src    int
	n      int // items
	saddr  uint32
	dsts   []int
	daddr  []uint32
	ttm    []int // ordinary: TimeToMux(src, dst); paired: PairedTimeToMux - 1
	lat    []int // ordinary: PayloadLatency + 2*row(dst); paired: one more
	sctl   int   // direction bits covering every destination (+SendPaired)
	crit   int   // max load of its endpoints
	// deps[j]: transfers whose source range on dsts[j] overlaps this
	// transfer's destination range there (they must read first).
	deps [][]int
}

// bytes is the length of the transfer's data.
func (x *xfer) bytes() uint32 { return uint32(x.size * x.n) }

// pad returns the events a receive reserves on a destination's receive
// path before and after its window [u0, u0+n). A paired receive sets
// INCOMING_FORMAT one event before its first sample's stage and back two
// events before its last write, and its writes trail the samples by one
// more cycle than a word's: one idle event on either side keeps every
// control of a neighbouring receive on its own event (at most one XPIC and
// one PIC per event) and the ordinary and paired writes apart.
func (x *xfer) pad() (pre, post int) {
	if x.paired {
		return 1, 1
	}
	return 0, 0
}

// part is what newProblem schedules: all or some destinations (indices
// into the transfer's Dsts) of a phase transfer, sent one way.
type part struct {
	orig   int
	paired bool
	dsts   []int
	// lo and words (ordinary parts only): the part carries words
	// lo .. lo+words-1 of the transfer; words 0 means all of them.
	lo, words int
}

type problem struct {
	xs         []xfer
	lowerBound int
	send, recv []int // events per tile (sends include the partner reservation)
	hasDeps    bool
	paired     int        // paired parts
	caps       []tileCaps // by tile (tileCapsOf)
}

// ordinaryParts sends every transfer of p whole, as 32-bit words unless
// it asks for paired items.
func ordinaryParts(p *Phase) []part {
	parts := make([]part, len(p.Transfers))
	for i, t := range p.Transfers {
		parts[i] = part{orig: i, paired: t.Paired, dsts: allDests(len(t.Dsts))}
	}
	return parts
}

func allDests(n int) []int {
	d := make([]int, n)
	for i := range d {
		d[i] = i
	}
	return d
}

func newProblem(p *Phase, parts []part) *problem {
	pr := &problem{send: make([]int, ipu21.Tiles), recv: make([]int, ipu21.Tiles)}
	pr.xs = make([]xfer, len(parts))
	for i, pt := range parts {
		t := &p.Transfers[pt.orig]
		x := &pr.xs[i]
		x.orig, x.paired, x.src, x.saddr = pt.orig, pt.paired, t.Src, t.SrcAddr
		x.size, x.n = 4, t.Words
		if pt.words > 0 {
			x.n = pt.words
			x.saddr += uint32(4 * pt.lo)
		}
		if pt.paired {
			x.size, x.n = 8, t.Words/2
			x.sctl = ipu21.SendPaired
			pr.send[ipu21.Partner(t.Src)] += x.n
			pr.paired++
		}
		pr.send[t.Src] += x.n
		for _, k := range pt.dsts {
			d := t.Dsts[k]
			x.dsts = append(x.dsts, d.Tile)
			x.daddr = append(x.daddr, d.Addr+uint32(4*pt.lo))
			L := ipu21.PayloadLatency + 2*ipu21.Row(d.Tile)
			if pt.paired {
				x.ttm = append(x.ttm, ipu21.PairedTimeToMux(t.Src, d.Tile)-1)
				x.lat = append(x.lat, L+1)
			} else {
				x.ttm = append(x.ttm, ipu21.TimeToMux(t.Src, d.Tile))
				x.lat = append(x.lat, L)
			}
			x.sctl |= ipu21.SendDirection(t.Src, d.Tile)
			pr.recv[d.Tile] += x.n
		}
	}
	for t := range pr.send {
		pr.lowerBound = max(pr.lowerBound, pr.send[t], pr.recv[t])
	}
	for i := range pr.xs {
		x := &pr.xs[i]
		x.crit = pr.send[x.src]
		if x.paired {
			x.crit = max(x.crit, pr.send[ipu21.Partner(x.src)])
		}
		for _, d := range x.dsts {
			x.crit = max(x.crit, pr.recv[d])
		}
	}
	pr.findDeps()
	pr.caps = pr.tileCapsOf()
	return pr
}

// leader reports whether destination j of a paired part issues the
// receiving pair's XPIC controls (the pair's source is shared, so only
// one member does: the one with bit 1 clear, whose value is then the
// sender itself, as ipu-stack's sender ^ (receiver & 2) also gives).
func (x *xfer) leader(j int) bool { return x.dsts[j]&2 == 0 }

// ctrlEvents appends destination j's receive control events for a window
// opening at u0: XPIC open and close and the write pointer; a paired
// receive also sets INCOMING_FORMAT to 64-bit at its first stage (two
// events before the first write) and back to 32-bit after its last.
func (x *xfer) ctrlEvents(dst []int, j, u0 int) []int {
	if !x.paired {
		return append(dst, u0, u0+x.n, u0+x.lat[j])
	}
	if x.leader(j) {
		dst = append(dst, u0, u0+x.n)
	}
	return append(dst, u0+x.lat[j]-2, u0+x.lat[j], u0+x.n+x.lat[j]-2)
}

// findDeps records, per tile, which transfers read (as source) a range that
// another transfer writes (as destination): the read must come first, as
// the phase's semantics is "every send reads the memory as it was at the
// start of the phase".
func (pr *problem) findDeps() {
	type rng struct {
		lo, hi uint32
		x, j   int // j < 0: a read
	}
	per := map[int][]rng{}
	for i := range pr.xs {
		x := &pr.xs[i]
		per[x.src] = append(per[x.src], rng{x.saddr, x.saddr + x.bytes(), i, -1})
	}
	any := false
	for i := range pr.xs {
		x := &pr.xs[i]
		for j, d := range x.dsts {
			if _, ok := per[d]; ok {
				per[d] = append(per[d], rng{x.daddr[j], x.daddr[j] + x.bytes(), i, j})
				any = true
			}
		}
	}
	if !any {
		return
	}
	tiles := make([]int, 0, len(per))
	for t := range per {
		tiles = append(tiles, t)
	}
	slices.Sort(tiles)
	for _, t := range tiles {
		rs := per[t]
		slices.SortFunc(rs, func(a, b rng) int { return cmp.Compare(a.lo, b.lo) })
		for a := range rs {
			for b := a + 1; b < len(rs) && rs[b].lo < rs[a].hi; b++ {
				r, w := rs[a], rs[b]
				if (r.j < 0) == (w.j < 0) {
					continue // two reads; two writes were rejected
				}
				if r.j >= 0 {
					r, w = w, r
				}
				x := &pr.xs[w.x]
				if x.deps == nil {
					x.deps = make([][]int, len(x.dsts))
				}
				x.deps[w.j] = append(x.deps[w.j], r.x)
				pr.hasDeps = true
			}
		}
	}
}

// order returns the transfers in the priority order of a pass; readers
// come before the writers that overwrite their data.
//
//   - 0: most critical endpoints first (their tiles bound the phase), then
//     longer transfers first;
//   - 1: longer transfers first, then most critical;
//   - 2: most critical first, pass-dependent pseudo-random tie breaks;
//   - 3: rounds of an optimal edge colouring (konigColours): in each
//     round every tile sends at most one transfer and receives at most
//     one, and there are only as many rounds as the busiest tile has
//     transfers, so placed round after round every tile's stream and mux
//     stay busy (the open-shop construction for point-to-point traffic;
//     it takes the build's reduce-scatter from 20 % to 1.5 % over the
//     endpoint bound);
//   - 4: rounds of a greedy colouring that also groups multicasts (first
//     free round at every tile of the transfer, longest first).
//
// Passes beyond 5 repeat these with other tie breaks for pass 2. Pass 3
// has a companion at the level of tile pairs, pairOrder, which schedule
// places after the passes.
func (pr *problem) order(pass int) ([]int, error) {
	ord := make([]int, len(pr.xs))
	for i := range ord {
		ord[i] = i
	}
	key := func(i int) uint64 { // deterministic tie break
		v := uint64(i)*0x9E3779B97F4A7C15 + uint64(pass)*0xD1B54A32D192ED03
		v ^= v >> 29
		return v * 0xBF58476D1CE4E5B9
	}
	xs := pr.xs
	byColour := func(col []int) { pr.sortByColour(ord, col) }
	switch pass % 5 {
	case 3:
		col, ok := pr.konigColours()
		if !ok {
			col = pr.colours()
		}
		byColour(col)
	case 4:
		byColour(pr.colours())
	case 0:
		slices.SortStableFunc(ord, func(a, b int) int {
			return cmp.Or(cmp.Compare(xs[b].crit, xs[a].crit), cmp.Compare(xs[b].n, xs[a].n), cmp.Compare(a, b))
		})
	case 1:
		slices.SortStableFunc(ord, func(a, b int) int {
			return cmp.Or(cmp.Compare(xs[b].n, xs[a].n), cmp.Compare(xs[b].crit, xs[a].crit), cmp.Compare(a, b))
		})
	default:
		slices.SortStableFunc(ord, func(a, b int) int {
			return cmp.Or(cmp.Compare(xs[b].crit, xs[a].crit), cmp.Compare(key(a), key(b)))
		})
	}
	return pr.topo(ord)
}

// sortByColour sorts ord by round, then most critical, then longest.
func (pr *problem) sortByColour(ord, col []int) {
	xs := pr.xs
	slices.SortStableFunc(ord, func(a, b int) int {
		return cmp.Or(cmp.Compare(col[a], col[b]), cmp.Compare(xs[b].crit, xs[a].crit), cmp.Compare(xs[b].n, xs[a].n), cmp.Compare(a, b))
	})
}

// pairOrder returns the rounds of pairColours in order (readers before
// the writers that overwrite their data), or ok false when the problem
// has no paired send to a single receiving pair: without one the pair
// rounds add nothing to the tile-level colourings of passes 3 and 4.
func (pr *problem) pairOrder() (ord []int, ok bool, err error) {
	col, ok := pr.pairColours()
	if !ok {
		return nil, false, nil
	}
	ord = make([]int, len(pr.xs))
	for i := range ord {
		ord[i] = i
	}
	pr.sortByColour(ord, col)
	ord, err = pr.topo(ord)
	return ord, err == nil, err
}

// colours gives each transfer a round such that in one round every tile
// sends at most one transfer and receives at most one (a greedy edge
// colouring of the sender-receiver multigraph, multicasts as hyperedges),
// taking long transfers first.
func (pr *problem) colours() []int {
	xs := pr.xs
	ord := make([]int, len(xs))
	for i := range ord {
		ord[i] = i
	}
	slices.SortStableFunc(ord, func(a, b int) int { return cmp.Compare(xs[b].n, xs[a].n) })
	sendC := make([][]uint64, ipu21.Tiles)
	recvC := make([][]uint64, ipu21.Tiles)
	has := func(set []uint64, c int) bool { return c/64 < len(set) && set[c/64]>>(c%64)&1 != 0 }
	put := func(set *[]uint64, c int) {
		for len(*set) <= c/64 {
			*set = append(*set, 0)
		}
		(*set)[c/64] |= 1 << (c % 64)
	}
	col := make([]int, len(xs))
	for _, i := range ord {
		x := &xs[i]
		c := 0
	search:
		for ; ; c++ {
			if has(sendC[x.src], c) {
				continue
			}
			for _, d := range x.dsts {
				if has(recvC[d], c) {
					continue search
				}
			}
			break
		}
		col[i] = c
		put(&sendC[x.src], c)
		for _, d := range x.dsts {
			put(&recvC[d], c)
		}
	}
	return col
}

// topo reorders ord so that readers come before the writers that
// overwrite their data, keeping ord's order otherwise.
func (pr *problem) topo(ord []int) ([]int, error) {
	xs := pr.xs
	if !pr.hasDeps {
		return ord, nil
	}
	// Kahn's algorithm, taking the ready transfer earliest in ord.
	pos := make([]int, len(ord))
	for r, i := range ord {
		pos[i] = r
	}
	indeg := make([]int, len(xs))
	succ := make([][]int, len(xs))
	for w := range xs {
		for _, ds := range xs[w].deps {
			for _, r := range ds {
				indeg[w]++
				succ[r] = append(succ[r], w)
			}
		}
	}
	h := &intHeap{less: func(a, b int) bool { return pos[a] < pos[b] }}
	for i := range xs {
		if indeg[i] == 0 {
			h.push(i)
		}
	}
	out := ord[:0:0]
	for h.len() > 0 {
		i := h.pop()
		out = append(out, i)
		for _, w := range succ[i] {
			if indeg[w]--; indeg[w] == 0 {
				h.push(w)
			}
		}
	}
	if len(out) != len(xs) {
		return nil, fmt.Errorf("transfers read and overwrite each other's data in a cycle (an in-place exchange); split the phase")
	}
	return out, nil
}

// promote moves the transfers touching the tile that ends last in pl (the
// one that sets the horizon) to the front of ord, keeping their order and
// the order of the rest.
func (pr *problem) promote(ord []int, pl *placement) ([]int, error) {
	end := make([]int, ipu21.Tiles)
	for i := range pr.xs {
		x := &pr.xs[i]
		end[x.src] = max(end[x.src], pl.ts[i]+x.n)
		for j, d := range x.dsts {
			end[d] = max(end[d], pl.ts[i]+1+x.ttm[j]+x.lat[j]+x.n)
		}
		if x.paired {
			p := ipu21.Partner(x.src)
			end[p] = max(end[p], pl.ts[i]+x.n)
		}
	}
	worst := 0
	for t := range end {
		if end[t] > end[worst] {
			worst = t
		}
	}
	touches := func(i int) bool {
		x := &pr.xs[i]
		if x.src == worst || x.paired && ipu21.Partner(x.src) == worst {
			return true
		}
		return slices.Contains(x.dsts, worst)
	}
	out := make([]int, 0, len(ord))
	for _, i := range ord {
		if touches(i) {
			out = append(out, i)
		}
	}
	for _, i := range ord {
		if !touches(i) {
			out = append(out, i)
		}
	}
	return pr.topo(out)
}

// iv is a half-open interval of events.
type iv struct{ lo, hi int }

// ivset is a sorted set of disjoint, non-adjacent intervals.
type ivset []iv

// fit returns the earliest t >= x such that [t, t+n) is free.
func (s ivset) fit(x, n int) int {
	i := sort.Search(len(s), func(i int) bool { return s[i].hi > x })
	t := x
	for ; i < len(s); i++ {
		if s[i].lo >= t+n {
			break
		}
		if s[i].hi > t {
			t = s[i].hi
		}
	}
	return t
}

// add inserts [lo, hi), which must be free.
func (s *ivset) add(lo, hi int) {
	v := *s
	i := sort.Search(len(v), func(i int) bool { return v[i].lo >= hi })
	// i: first interval after the new one; i-1 may touch it.
	if i > 0 && v[i-1].hi == lo {
		v[i-1].hi = hi
		if i < len(v) && v[i].lo == hi {
			v[i-1].hi = v[i].hi
			v = slices.Delete(v, i, i+1)
		}
		*s = v
		return
	}
	if i < len(v) && v[i].lo == hi {
		v[i].lo = lo
		return
	}
	*s = slices.Insert(v, i, iv{lo, hi})
}

// run is a send's reads or a receive's writes: item k at cycle c0+k,
// address addr+size*k (size 4, or 8 for paired items; 0 means 4).
type run struct {
	c0, n int
	addr  uint32
	size  int
}

func (r run) stride() uint32 {
	if r.size == 0 {
		return 4
	}
	return uint32(r.size)
}

// clash reports whether runs a and b touch the same memory element in the
// same cycle.
func clash(a, b run) bool {
	lo, hi := max(a.c0, b.c0), min(a.c0+a.n, b.c0+b.n)
	sa, sb := a.stride(), b.stride()
	for c := lo; c < hi; {
		aa := a.addr + sa*uint32(c-a.c0)
		ab := b.addr + sb*uint32(c-b.c0)
		ea, eb := ipu21.Element(aa), ipu21.Element(ab)
		if ea == eb {
			return true
		}
		_, ha, _ := ipu21.ElementBounds(ea)
		_, hb, _ := ipu21.ElementBounds(eb)
		c += int(min((ha-aa+sa-1)/sa, (hb-ab+sb-1)/sb))
	}
	return false
}

// runs is a tile's reads or its writes. extraOK asks, for every
// candidate timeline, whether a run clashes with any of the tile's. A few
// runs are scanned, in the order they came; past linearRuns they are kept
// sorted by first cycle, with the running maximum of their ends (end[i]:
// the latest end among v[:i+1], nondecreasing), so that only the runs
// that overlap the candidate in time are looked at: scanning them all
// made chunked phases quadratic (the second round of a 64-tile build's
// multicast), while keeping short lists sorted cost the default build
// more than it saved. Neither the order nor the switch changes an
// answer: clashes reports whether any run clashes, and its bound holds
// for whichever clashing run it finds.
type runs struct {
	v      []run
	end    []int
	sorted bool
}

// linearRuns is the longest list of runs scanned as it is.
const linearRuns = 32

func (rs *runs) add(r run) {
	if !rs.sorted {
		rs.v = append(rs.v, r)
		if len(rs.v) <= linearRuns {
			return
		}
		slices.SortStableFunc(rs.v, func(a, b run) int { return cmp.Compare(a.c0, b.c0) })
		rs.end, rs.sorted = rs.end[:0], true
		for k, w := range rs.v {
			e := w.c0 + w.n
			if k > 0 {
				e = max(e, rs.end[k-1])
			}
			rs.end = append(rs.end, e)
		}
		return
	}
	i := sort.Search(len(rs.v), func(i int) bool { return rs.v[i].c0 > r.c0 })
	rs.v = slices.Insert(rs.v, i, r)
	rs.end = slices.Insert(rs.end, i, 0)
	for k := i; k < len(rs.v); k++ {
		e := rs.v[k].c0 + rs.v[k].n
		if k > 0 {
			e = max(e, rs.end[k-1])
		}
		rs.end[k] = e
	}
}

// clashes reports whether r and a run of rs touch the same memory
// element in the same cycle. Sorted, the runs before the first whose
// running end passes r.c0 all end by r.c0, and those from the first that
// starts at or after r's end start too late: only the ones between can
// overlap r. On a clash, from is the first cycle at which r, started
// later, may stop clashing: r.c0+1 in general, but when r and the run it
// clashes with each lie within one element (the same one, then) they
// clash in every cycle they share, so until r starts at the run's end.
func (rs *runs) clashes(r run) (hit bool, from int) {
	v, i := rs.v, 0
	if rs.sorted {
		ends := rs.end
		i = sort.Search(len(ends), func(i int) bool { return ends[i] > r.c0 })
	}
	for ; i < len(v); i++ {
		w := v[i]
		if w.c0 >= r.c0+r.n {
			if rs.sorted {
				break
			}
			continue
		}
		if r.c0 < w.c0+w.n && clash(r, w) {
			if r.oneElement() && w.oneElement() {
				return true, w.c0 + w.n
			}
			return true, r.c0 + 1
		}
	}
	return false, 0
}

// oneElement reports whether every item of r lies in one memory element
// (elements are contiguous address ranges, so its first and last do).
func (r run) oneElement() bool {
	return ipu21.Element(r.addr) == ipu21.Element(r.addr+r.stride()*uint32(r.n-1))
}

type tileState struct {
	out, mux      ivset
	reads, writes runs
	ctrls         evset // control events (kept only with a guard)
	starts        []int // send first events (kept only with a guard)
	end           int   // the row's events
}

type placement struct {
	ts      []int // send issue timeline per transfer
	horizon int
}

// tileCaps bounds, per tile, the lengths of the lists a placement keeps
// (whatever the order: each is at most one entry per send or receive
// event the tile takes part in), so that place can take every tile's
// lists from one buffer per kind (placeScratch) instead of growing ~10^5
// small slices; in the default build that growth was a third of the
// scheduler's time.
type tileCaps struct {
	out, mux, reads, writes, starts int
}

// tileCapsOf computes problem.caps: out counts the tile's sends and its
// partner's paired sends (which borrow its lane), mux and writes its
// receives.
func (pr *problem) tileCapsOf() []tileCaps {
	c := make([]tileCaps, ipu21.Tiles)
	for i := range pr.xs {
		x := &pr.xs[i]
		s := &c[x.src]
		s.out++
		s.reads++
		s.starts++
		if x.paired {
			c[ipu21.Partner(x.src)].out++
		}
		for _, d := range x.dsts {
			c[d].mux++
			c[d].writes++
		}
	}
	return c
}

// arena hands out consecutive zero-length slices of one buffer, each
// capped (a full slice expression) at the length asked for, so that an
// append beyond its bound (there is none) would reallocate rather than
// overwrite the next tile's list.
type arena[E any] struct {
	buf []E
	at  int
}

// reset makes room for total elements, reusing the buffer when it is
// large enough: nothing reads a list beyond its length, so what an
// earlier placement left there does not matter.
func (a *arena[E]) reset(total int) {
	if cap(a.buf) < total {
		a.buf = make([]E, total)
	}
	a.buf, a.at = a.buf[:cap(a.buf)], 0
}

func (a *arena[E]) take(n int) []E {
	s := a.buf[a.at : a.at : a.at+n]
	a.at += n
	return s
}

// placeScratch is the memory of one placement: the tiles' states and the
// lists they hold (bounded by problem.caps) and their control bitmaps.
// Placements run by the hundred per build and allocating ~10 MB of fresh
// memory each time was a good part of their time, so scratchPool keeps
// it from one to the next; every list starts empty and every bitmap
// block is cleared when handed out, so nothing of one placement reaches
// another and the result does not depend on which scratch it got.
type placeScratch struct {
	tiles  []tileState
	ivs    arena[iv]
	runs   arena[run]
	ints   arena[int]
	ctrls  []evset
	blocks blockArena
}

var scratchPool = sync.Pool{New: func() any { return new(placeScratch) }}

func (pr *problem) place(order []int, guard int) *placement {
	sc := scratchPool.Get().(*placeScratch)
	if sc.tiles == nil {
		sc.tiles, sc.ctrls = make([]tileState, ipu21.Tiles), make([]evset, ipu21.Tiles)
	}
	tiles := sc.tiles
	defer func() {
		for t := range tiles {
			sc.ctrls[t] = tiles[t].ctrls[:0]
		}
		scratchPool.Put(sc)
	}()
	{
		ni, nr, nn := 0, 0, 0
		for i := range pr.caps {
			c := &pr.caps[i]
			ni += c.out + c.mux
			nr += c.reads + c.writes
			nn += c.reads + c.writes + c.starts
		}
		sc.ivs.reset(ni)
		sc.blocks.reset()
		sc.runs.reset(nr)
		sc.ints.reset(nn)
		for t := range tiles {
			c := &pr.caps[t]
			tiles[t] = tileState{
				out:    sc.ivs.take(c.out),
				mux:    sc.ivs.take(c.mux),
				reads:  runs{v: sc.runs.take(c.reads), end: sc.ints.take(c.reads)},
				writes: runs{v: sc.runs.take(c.writes), end: sc.ints.take(c.writes)},
				starts: sc.ints.take(c.starts),
				ctrls:  sc.ctrls[t],
			}
		}
	}
	st := func(t int) *tileState { return &tiles[t] }
	pl := &placement{ts: make([]int, len(pr.xs))}
	var evs []int
	for _, i := range order {
		x := &pr.xs[i]
		s := st(x.src)
		var lane *tileState // the partner's outgoing lane, borrowed by a paired send
		if x.paired {
			lane = st(ipu21.Partner(x.src))
		}
		pre, post := x.pad()
		lb := 0
		for j := range x.dsts {
			lb = max(lb, -x.ttm[j]) // the window must open at event >= 1
			for _, r := range depsOf(x, j) {
				lb = max(lb, pr.readFirst(x, j, &pr.xs[r], pl.ts[r]))
			}
		}
		ts := lb
		for {
			t := s.out.fit(ts+1, x.n) - 1
			if lane != nil {
				t = max(t, lane.out.fit(t+1, x.n)-1)
			}
			for j, d := range x.dsts {
				t = max(t, st(d).mux.fit(t+1+x.ttm[j]-pre, x.n+pre+post)-1-x.ttm[j]+pre)
			}
			if t != ts {
				ts = t
				continue
			}
			if ok, next := pr.extraOK(x, ts, s, st, guard); !ok {
				ts = max(ts+1, next)
				continue
			}
			break
		}
		pl.ts[i] = ts
		s.out.add(ts+1, ts+1+x.n)
		if lane != nil {
			lane.out.add(ts+1, ts+1+x.n)
		}
		s.reads.add(run{ts + 1, x.n, x.saddr, x.size})
		s.end = max(s.end, ts+x.n)
		if guard > 0 {
			s.starts = insertSorted(s.starts, ts+1)
		}
		for j, d := range x.dsts {
			ds := st(d)
			u0 := ts + 1 + x.ttm[j]
			ds.mux.add(u0-pre, u0+x.n+post)
			ds.writes.add(run{u0 + x.lat[j], x.n, x.daddr[j], x.size})
			ds.end = max(ds.end, u0+x.lat[j]+x.n)
			if guard > 0 {
				evs = x.ctrlEvents(evs[:0], j, u0)
				for _, e := range evs {
					ds.ctrls.add(e, &sc.blocks)
				}
			}
		}
	}
	// Tiles without a send or receive keep end 0, which leaves the
	// horizon (at least 0) as it is.
	for t := range tiles {
		pl.horizon = max(pl.horizon, tiles[t].end)
	}
	return pl
}

// readFirst returns the earliest send timeline of x at which its write to
// destination j comes after reader y (sent at ys) has read every byte the
// two share: item k of y is read in cycle ys+1+k, item k of x written in
// cycle ts+1+ttm+lat+k. Both are linear in the address, so checking the
// first and last shared words suffices.
func (pr *problem) readFirst(x *xfer, j int, y *xfer, ys int) int {
	lo := max(x.daddr[j], y.saddr)
	hi := min(x.daddr[j]+x.bytes(), y.saddr+y.bytes())
	lb := 0
	for _, b := range [2]uint32{lo, hi - 4} {
		rc := ys + 1 + int(b-y.saddr)/y.size
		wk := int(b-x.daddr[j]) / x.size
		lb = max(lb, rc-1-x.ttm[j]-x.lat[j]-wk+1)
	}
	return lb
}

func depsOf(x *xfer, j int) []int {
	if x.deps == nil {
		return nil
	}
	return x.deps[j]
}

func insertSorted(v []int, e int) []int {
	i, found := slices.BinarySearch(v, e)
	if found {
		return v
	}
	return slices.Insert(v, i, e)
}

// inGuard reports whether some start s in starts has s <= e < s+g.
func inGuard(starts []int, e, g int) bool {
	i := sort.SearchInts(starts, e-g+1)
	return i < len(starts) && starts[i] <= e
}

// evset is a set of events (non-negative: every event of a placement
// is, since a send issues at timeline >= 0 and its windows open at event
// >= 1): a bitmap in blocks of 4096 events, a block only where the set
// has an event. A tile's control events were a sorted slice, three or
// five inserted per receive and out of order, and the searching and
// shifting of the 10^5 inserts of a large phase's placement cost more
// than the rest of place; set and query are O(1) here. Blocks, not one
// bitmap over the tile's span: a phase of few long transfers (the
// default build's first, 46,464 events) would clear 8 MB per placement.
type evset []*evBlock // by event / 4096; nil: no event there

type evBlock [64]uint64

func (s *evset) add(e int, a *blockArena) {
	b := e >> 12
	if b >= len(*s) {
		*s = append(*s, make([]*evBlock, b+1-len(*s))...)
	}
	if (*s)[b] == nil {
		(*s)[b] = a.take()
	}
	(*s)[b][e>>6&63] |= 1 << (e & 63)
}

func (s evset) has(e int) bool {
	b := e >> 12
	return b < len(s) && s[b] != nil && s[b][e>>6&63]>>(e&63)&1 != 0
}

// blockArena hands out cleared blocks from chunks kept from one
// placement to the next (placeScratch).
type blockArena struct {
	chunks [][]evBlock
	c, at  int // the next block: chunks[c][at]
}

const blocksPerChunk = 256

func (a *blockArena) reset() { a.c, a.at = 0, 0 }

func (a *blockArena) take() *evBlock {
	if a.c < len(a.chunks) && a.at == blocksPerChunk {
		a.c, a.at = a.c+1, 0
	}
	if a.c == len(a.chunks) {
		a.chunks = append(a.chunks, make([]evBlock, blocksPerChunk))
	}
	b := &a.chunks[a.c][a.at]
	a.at++
	*b = evBlock{}
	return b
}

// anyIn reports whether the set has an event in [lo, hi), hi-lo being a
// guard (a few events).
func (s evset) anyIn(lo, hi int) bool {
	for e := max(lo, 0); e < hi; e++ {
		if s.has(e) {
			return true
		}
	}
	return false
}

// extraOK checks a candidate send timeline against memory-element clashes
// and the control guard on the source and every destination. When it
// fails, every timeline in [ts, next) fails too (next may be ts or less:
// nothing known), so place may go on from next rather than ts+1 and still
// find the earliest timeline that passes. A clash of two runs each within
// one element gives such a next: they clash as long as they overlap in
// time, and the candidate run only moves later. Chunked phases (32-word
// runs in 16 KiB elements) spent nearly all their time stepping one
// timeline at a time past such clashes (160 M steps for the 64-tile
// build's multicast).
func (pr *problem) extraOK(x *xfer, ts int, s *tileState, st func(int) *tileState, guard int) (ok bool, next int) {
	r := run{ts + 1, x.n, x.saddr, x.size}
	if hit, from := s.writes.clashes(r); hit {
		return false, from - 1 // r starts at ts'+1
	}
	if guard > 0 && s.ctrls.anyIn(ts+1, ts+1+guard) {
		return false, ts
	}
	var evs [5]int
	for j, d := range x.dsts {
		ds := st(d)
		u0 := ts + 1 + x.ttm[j]
		w := run{u0 + x.lat[j], x.n, x.daddr[j], x.size}
		if hit, from := ds.reads.clashes(w); hit {
			return false, from - 1 - x.ttm[j] - x.lat[j] // w starts at ts'+1+ttm+lat
		}
		if guard > 0 {
			for _, e := range x.ctrlEvents(evs[:0], j, u0) {
				if inGuard(ds.starts, e, guard) {
					return false, ts
				}
			}
		}
	}
	return true, ts
}

// intHeap is a small binary heap of ints with a custom order.
type intHeap struct {
	v    []int
	less func(a, b int) bool
}

func (h *intHeap) len() int { return len(h.v) }

func (h *intHeap) push(x int) {
	h.v = append(h.v, x)
	i := len(h.v) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.v[i], h.v[p]) {
			break
		}
		h.v[i], h.v[p] = h.v[p], h.v[i]
		i = p
	}
}

func (h *intHeap) pop() int {
	top := h.v[0]
	n := len(h.v) - 1
	h.v[0] = h.v[n]
	h.v = h.v[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(h.v[l], h.v[m]) {
			m = l
		}
		if r < n && h.less(h.v[r], h.v[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.v[i], h.v[m] = h.v[m], h.v[i]
		i = m
	}
	return top
}
