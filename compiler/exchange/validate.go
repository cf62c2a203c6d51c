package exchange

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/isa"
)

// Validate re-checks a schedule from its encoded words alone, independently
// of how they were built: it decodes every tile's row into timed sends and
// receive controls, resolves the fabric with the timing rules of
// docs/machine.md, and checks
//
//   - every word is a supervisor exchange instruction; each `sendpicp`
//     starts 8-byte aligned (the row starts 8-byte aligned);
//   - a tile's outgoing items never overlap (one word per event);
//   - at most one XPIC and one PIC control per event; XPIC values are
//     tiles or neutral;
//   - a paired (64-bit) send's items are 8-byte aligned and its partner
//     tile sends nothing meanwhile (the lane reservation);
//   - no control on the first Guard events of a send (a send is a run of
//     stream items contiguous in events and addresses);
//   - receive source windows, on the ordinary path (words) and on the
//     receiving pair's shared 64-bit path (items from the selected tile or
//     its partner, PairedTimeToMux - 1 after they are sent): each opens on
//     its source's first item,
//     receives one word per event, the source is then silent until the
//     window closes, every word travels towards the receiver (direction
//     bits), and every window is closed when the row ends;
//   - payload windows: every write goes through a pointer set by a PIC
//     control, lands in SRAM before the receiver's row ends, and two
//     writes never hit one address or one cycle; INCOMING_FORMAT in each
//     item's stage cycle (write - 1 for a word, write - 2 for a 64-bit
//     item) matches the item;
//   - the writes are exactly the phase's transfers: each destination word
//     comes from the right source word, and nothing else is written;
//   - no memory-element clash between a send's read and an incoming write
//     on one tile in one event (ipu21.Element);
//   - read/write order: on a tile, a word that is both sent and
//     overwritten in the phase is read before it is written;
//   - Events matches each row's length; Horizon matches, and LowerBound is
//     the endpoint bound of the sends and writes the rows make.
func (s *Schedule) Validate() error {
	v := &validator{s: s, tiles: map[int]*vtile{}}
	// Rows decode independently, so concurrently; the checks then go in
	// tile order, so the error is the one decoding in order would give.
	rows := make([]*vtile, len(s.Tiles))
	errs := make([]error, len(s.Tiles))
	parallelFor(len(s.Tiles), func(i int) { rows[i], errs[i] = decodeRow(&s.Tiles[i], s.Guard) })
	for i := range s.Tiles {
		p := &s.Tiles[i]
		if i > 0 && s.Tiles[i-1].Tile >= p.Tile {
			return fmt.Errorf("programs not in strictly increasing tile order at tile %d", p.Tile)
		}
		if !ipu21.ValidPhysical(p.Tile) {
			return fmt.Errorf("program for tile %d: not a physical tile", p.Tile)
		}
		if err := errs[i]; err != nil {
			return fmt.Errorf("tile %d: %w", p.Tile, err)
		}
		v.tiles[p.Tile] = rows[i]
		v.order = append(v.order, p.Tile)
	}
	return v.check()
}

type vsend struct {
	e0, n int // items at events e0 .. e0+n-1
	addr  uint32
	dirs  int
	pc    int // word index of the instruction
	size  int // bytes per item: 4, or 8 (paired)
}

type vctrl struct {
	e    int
	kind uint8 // 0 mux, 1 pair, 2 ptr, 3 fmt
	v    uint32
	pc   int
}

type vwrite struct {
	w, n  int // cycles w .. w+n-1
	addr  uint32
	src   int
	saddr uint32
	size  int
}

type vtile struct {
	id     int
	sends  []vsend
	ctrls  []vctrl
	events int
	writes []vwrite
}

type validator struct {
	s     *Schedule
	tiles map[int]*vtile
	order []int
}

// decodeRow turns a row into timed sends and controls and checks the
// per-tile rules that need no other tile.
func decodeRow(p *Program, guard int) (*vtile, error) {
	t := &vtile{id: p.Tile}
	cur := 0
	streamOpen := false
	var streamNext uint32
	streamDirs := 0 // sctl of the stream, with the item size bit
	for wi := 0; wi < len(p.Words); {
		d, err := isa.DecodeIn(isa.Supervisor, p.Words[wi:])
		if err != nil {
			return nil, fmt.Errorf("word %d: %w", wi, err)
		}
		switch d.Inst.Mnemonic {
		case "delay", "delaypic", "delayxpic", "send", "sendoff", "sendpic", "sendpicp":
		default:
			return nil, fmt.Errorf("word %d: %s is not an exchange row instruction", wi, isa.Format(d))
		}
		vals := d.Values
		n := int(vals[0])
		// emit records n items from addr; operand says the address is a
		// send operand (a 64-bit send's operand is half its byte address).
		emit := func(addr uint32, sctl int, operand bool) error {
			size := 4
			if sctl&ipu21.SendPaired != 0 {
				size = 8
				if operand {
					addr *= 2
				}
			}
			if addr%uint32(size) != 0 || !ipu21.InSRAM(addr, uint32(size*n)) {
				return fmt.Errorf("word %d: %s reads outside SRAM or misaligned", wi, isa.Format(d))
			}
			if sctl&3 != 0 {
				t.sends = append(t.sends, vsend{cur + 1, n, addr, sctl & 3, wi, size})
			}
			streamOpen, streamNext, streamDirs = true, addr+uint32(size*n), sctl
			return nil
		}
		ctl := func(e int, kind uint8, v uint32) {
			t.ctrls = append(t.ctrls, vctrl{e, kind, v, wi})
		}
		switch d.Inst.Mnemonic {
		case "delay":
		case "delaypic":
			ctl(cur+n, 2+uint8(vals[1]&1), uint32(vals[2]))
		case "delayxpic":
			ctl(cur+n, uint8(vals[1]&1), uint32(vals[2]))
		case "send":
			if err := emit(uint32(vals[1]), int(vals[2]), true); err != nil {
				return nil, err
			}
		case "sendoff":
			if !streamOpen {
				return nil, fmt.Errorf("word %d: sendoff without an outgoing stream", wi)
			}
			delta := uint32(vals[1])
			if vals[2]&ipu21.SendPaired != 0 {
				delta *= 2 // the delta counts items, like send's address
			}
			if err := emit(streamNext+delta, int(vals[2]), false); err != nil {
				return nil, err
			}
		case "sendpic":
			sel := vals[1]
			if sel < 2 {
				ctl(cur+1, uint8(sel&1), uint32(vals[2])&0x1FFF)
			} else {
				ctl(cur+1, 2+uint8(sel&1), uint32(vals[2]))
			}
			if streamOpen {
				if err := emit(streamNext, streamDirs, false); err != nil {
					return nil, err
				}
			}
		case "sendpicp":
			if wi%2 != 0 {
				return nil, fmt.Errorf("word %d: sendpicp is not 8-byte aligned", wi)
			}
			x := uint32(vals[4])
			ctl(cur+1, uint8(x>>13&1), x&0x1FFF)
			ctl(cur+1, 2+uint8(vals[3]&1), uint32(vals[5]))
			if vals[2]&3 != 0 {
				if err := emit(uint32(vals[1]), int(vals[2]), true); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf("word %d: %s is not an exchange row instruction", wi, isa.Format(d))
		}
		cur += n
		wi += len(d.Words)
	}
	t.events = cur
	if cur != p.Events {
		return nil, fmt.Errorf("row covers %d events, Program.Events says %d", cur, p.Events)
	}
	// Outgoing items never overlap.
	for i := 1; i < len(t.sends); i++ {
		a, b := t.sends[i-1], t.sends[i]
		if b.e0 < a.e0+a.n {
			return nil, fmt.Errorf("outgoing items overlap at event %d (words %d and %d)", b.e0, a.pc, b.pc)
		}
	}
	// Controls: at most one XPIC and one PIC per event; values.
	slices.SortStableFunc(t.ctrls, func(a, b vctrl) int { return cmp.Compare(a.e, b.e) })
	for i, c := range t.ctrls {
		for j := i + 1; j < len(t.ctrls) && t.ctrls[j].e == c.e; j++ {
			if (c.kind < 2) == (t.ctrls[j].kind < 2) {
				what := "XPIC"
				if c.kind >= 2 {
					what = "PIC"
				}
				return nil, fmt.Errorf("two %s controls at event %d (words %d and %d)", what, c.e, c.pc, t.ctrls[j].pc)
			}
		}
		if c.kind < 2 && c.v >= ipu21.Tiles && c.v != ipu21.MuxNeutral {
			return nil, fmt.Errorf("word %d: XPIC value 0x%x is neither a tile nor neutral", c.pc, c.v)
		}
		if c.e < 1 {
			return nil, fmt.Errorf("word %d: control at event %d", c.pc, c.e)
		}
	}
	// Guard: no control on a send's first events.
	if guard > 0 {
		var starts []int
		for i, s := range t.sends {
			if i > 0 {
				p := t.sends[i-1]
				if p.e0+p.n == s.e0 && p.size == s.size && p.addr+uint32(p.size*p.n) == s.addr {
					continue // the same send, split
				}
			}
			starts = append(starts, s.e0)
		}
		for _, c := range t.ctrls {
			if inGuard(starts, c.e, guard) {
				return nil, fmt.Errorf("word %d: control at event %d within the first %d events of a send", c.pc, c.e, guard)
			}
		}
	}
	return t, nil
}

func (v *validator) check() error {
	// Paired sends borrow the partner's lane.
	for _, id := range v.order {
		t := v.tiles[id]
		pt := v.tiles[ipu21.Partner(id)]
		if pt == nil {
			continue
		}
		for _, s := range t.sends {
			if s.size != 8 {
				continue
			}
			for _, q := range pt.sends {
				if q.e0 < s.e0+s.n && s.e0 < q.e0+q.n {
					return fmt.Errorf("tile %d: the paired send at word %d (events %d..%d) borrows the outgoing lane of partner tile %d, which sends from event %d (word %d)", id, s.pc, s.e0, s.e0+s.n-1, pt.id, q.e0, q.pc)
				}
			}
		}
	}
	// Resolve every tile's receive paths: concurrently (a tile's resolve
	// reads the other rows and writes only its own writes), the first
	// error in tile order reported.
	errs := make([]error, len(v.order))
	parallelFor(len(v.order), func(k int) { errs[k] = v.resolve(v.tiles[v.order[k]]) })
	for k, id := range v.order {
		if err := errs[k]; err != nil {
			return fmt.Errorf("tile %d: %w", id, err)
		}
	}
	// The endpoint bound of what the rows do.
	load := map[int]int{}
	for _, id := range v.order {
		t := v.tiles[id]
		for _, s := range t.sends {
			load[id] += s.n
			if s.size == 8 {
				load[ipu21.Partner(id)] += s.n
			}
		}
	}
	lb := 0
	for _, w := range load {
		lb = max(lb, w)
	}
	for _, id := range v.order {
		items := 0
		for _, w := range v.tiles[id].writes {
			items += w.n
		}
		lb = max(lb, items)
	}
	if lb != v.s.LowerBound {
		return fmt.Errorf("LowerBound %d, the rows give %d", v.s.LowerBound, lb)
	}
	// Exactly the phase's transfers.
	type exp struct {
		addr  uint32
		bytes uint32
		src   int
		saddr uint32
	}
	want := map[int][]exp{}
	senders := map[int]bool{}
	for _, x := range v.s.Phase.Transfers {
		senders[x.Src] = true
		for _, d := range x.Dsts {
			want[d.Tile] = append(want[d.Tile], exp{d.Addr, uint32(4 * x.Words), x.Src, x.SrcAddr})
		}
	}
	horizon := 0
	for _, id := range v.order {
		t := v.tiles[id]
		horizon = max(horizon, t.events)
		es := want[id]
		delete(want, id)
		slices.SortFunc(es, func(a, b exp) int { return cmp.Compare(a.addr, b.addr) })
		ws := slices.Clone(t.writes)
		slices.SortFunc(ws, func(a, b vwrite) int { return cmp.Compare(a.addr, b.addr) })
		var total, got uint32
		for _, e := range es {
			total += e.bytes
		}
		for i, w := range ws {
			wb := uint32(w.size * w.n)
			if i > 0 && w.addr < ws[i-1].addr+uint32(ws[i-1].size*ws[i-1].n) {
				return fmt.Errorf("tile %d: address 0x%x written twice", id, w.addr)
			}
			k, _ := slices.BinarySearchFunc(es, w.addr, func(e exp, a uint32) int {
				if e.addr+e.bytes <= a {
					return -1
				}
				return 1
			})
			if k == len(es) || es[k].addr > w.addr || w.addr+wb > es[k].addr+es[k].bytes {
				return fmt.Errorf("tile %d: cycle %d writes 0x%x (%d items of %d bytes from tile %d): no transfer's destination", id, w.w, w.addr, w.n, w.size, w.src)
			}
			e := es[k]
			if w.src != e.src || w.saddr-e.saddr != w.addr-e.addr {
				return fmt.Errorf("tile %d: 0x%x receives tile %d's word at 0x%x, want tile %d's at 0x%x", id, w.addr, w.src, w.saddr, e.src, e.saddr+(w.addr-e.addr))
			}
			got += wb
		}
		if got != total {
			return fmt.Errorf("tile %d: %d of %d destination words written", id, got/4, total/4)
		}
	}
	for id := range want {
		return fmt.Errorf("tile %d receives data but has no program", id)
	}
	for id := range senders {
		if v.tiles[id] == nil {
			return fmt.Errorf("tile %d sends data but has no program", id)
		}
	}
	if horizon != v.s.Horizon {
		return fmt.Errorf("horizon %d, the rows give %d", v.s.Horizon, horizon)
	}
	// Per-tile memory rules.
	for _, id := range v.order {
		t := v.tiles[id]
		for _, s := range t.sends {
			r := run{s.e0, s.n, s.addr, s.size}
			for _, w := range t.writes {
				wr := run{w.w, w.n, w.addr, w.size}
				if w.w < s.e0+s.n && s.e0 < w.w+w.n && clash(r, wr) {
					return fmt.Errorf("tile %d: memory-element clash: the send at word %d (reads 0x%x from event %d) and the incoming write to 0x%x from cycle %d", id, s.pc, s.addr, s.e0, w.addr, w.w)
				}
				// Read/write order on overlapping addresses: both cycles
				// are linear in the address, so the first and the last
				// shared word decide.
				lo := max(s.addr, w.addr)
				hi := min(s.addr+uint32(s.size*s.n), w.addr+uint32(w.size*w.n))
				if lo >= hi {
					continue
				}
				for _, b := range [2]uint32{lo, hi - 4} {
					rc := s.e0 + int(b-s.addr)/s.size
					wc := w.w + int(b-w.addr)/w.size
					if rc >= wc {
						return fmt.Errorf("tile %d: 0x%x is overwritten in cycle %d before the send at word %d reads it in cycle %d", id, b, wc, s.pc, rc)
					}
				}
			}
		}
	}
	return nil
}

// resolve computes tile d's incoming writes from its source windows (the
// ordinary mux, and the pair's 64-bit source, which either tile of the
// pair may set) and the senders' items.
func (v *validator) resolve(d *vtile) error {
	L := ipu21.PayloadLatency + 2*ipu21.Row(d.id)
	type arrival struct {
		u, n  int
		src   int
		saddr uint32
		size  int
	}
	var arr []arrival
	var mux, pair, ptrs, fmts []vctrl
	for _, c := range d.ctrls {
		switch c.kind {
		case 0:
			mux = append(mux, c)
		case 2:
			ptrs = append(ptrs, c)
		case 3:
			fmts = append(fmts, c)
		}
	}
	// The pair's source controls of both tiles, in event order (ties: the
	// tile with bit 1 clear first, as the emulator merges them).
	for _, t := range []*vtile{v.tiles[d.id&^2], v.tiles[d.id|2]} {
		if t == nil {
			continue
		}
		for _, c := range t.ctrls {
			if c.kind == 1 {
				pair = append(pair, c)
			}
		}
	}
	slices.SortStableFunc(pair, func(a, b vctrl) int { return cmp.Compare(a.e, b.e) })
	for pathNo, path := range [2][]vctrl{mux, pair} {
		paired := pathNo == 1
		item := "word"
		if paired {
			item = "64-bit item"
		}
		if len(path) > 0 && path[len(path)-1].v != ipu21.MuxNeutral {
			what := ""
			if paired {
				what = "64-bit "
			}
			return fmt.Errorf("the row ends with the %ssource window on tile %d open (close it with XPIC 0x640)", what, path[len(path)-1].v)
		}
		for i, c := range path {
			if c.v == ipu21.MuxNeutral {
				continue
			}
			a, b := c.e, path[i+1].e // a window [a, b)
			srcs := []int{int(c.v)}
			if paired {
				srcs = append(srcs, int(c.v)^2)
			}
			type seg struct {
				lo, hi int
				s      *vtile
				r      vsend
				u0     int
			}
			var segs []seg
			for _, sid := range srcs {
				s := v.tiles[sid]
				if s == nil {
					continue
				}
				delay := ipu21.TimeToMux(s.id, d.id)
				if paired {
					delay = ipu21.PairedTimeToMux(s.id, d.id) - 1
				}
				for _, r := range s.sends {
					if (r.size == 8) != paired {
						continue
					}
					u0, u1 := r.e0+delay, r.e0+r.n+delay
					lo, hi := max(u0, a), min(u1, b)
					if lo < hi {
						segs = append(segs, seg{lo, hi, s, r, u0})
					}
				}
			}
			if len(segs) == 0 && v.tiles[int(c.v)] == nil {
				return fmt.Errorf("word %d: window from event %d selects tile %d, which has no row", c.pc, a, c.v)
			}
			slices.SortFunc(segs, func(x, y seg) int { return cmp.Compare(x.lo, y.lo) })
			cursor := a
			for _, sg := range segs {
				if sg.lo != cursor {
					if cursor == a {
						return fmt.Errorf("word %d: window opens at event %d but tile %d's first %s arrives at %d", c.pc, a, sg.s.id, item, sg.lo)
					}
					return fmt.Errorf("word %d: tile %d's %ss stop at %d and resume at %d while the window (events %d..%d) is open", c.pc, sg.s.id, item, cursor, sg.lo, a, b)
				}
				dir := ipu21.SendDirection(sg.s.id, d.id)
				if sg.r.dirs&dir == 0 {
					return fmt.Errorf("word %d: tile %d's send at word %d goes away from this tile (direction bits %d, need %d)", c.pc, sg.s.id, sg.r.pc, sg.r.dirs, dir)
				}
				arr = append(arr, arrival{sg.lo, sg.hi - sg.lo, sg.s.id, sg.r.addr + uint32(sg.r.size*(sg.lo-sg.u0)), sg.r.size})
				cursor = sg.hi
			}
			if cursor == a {
				return fmt.Errorf("word %d: window from event %d selects tile %d, whose %ss never arrive in it", c.pc, a, c.v, item)
			}
		}
	}
	// Payload: a word sampled in u is written in u+L, a 64-bit item in
	// u+L+1, through the pointer in force then; INCOMING_FORMAT in force
	// in u+L-1 must match the item.
	wcyc := func(a arrival) int {
		if a.size == 8 {
			return a.u + L + 1
		}
		return a.u + L
	}
	slices.SortFunc(arr, func(a, b arrival) int { return cmp.Compare(wcyc(a), wcyc(b)) })
	for i := 1; i < len(arr); i++ {
		if p, q := arr[i-1], arr[i]; wcyc(q) < wcyc(p)+p.n {
			return fmt.Errorf("the ordinary and the paired receive paths both write in cycle %d (from tiles %d and %d)", wcyc(q), p.src, q.src)
		}
	}
	fmtAt := func(c int) uint32 {
		k := sort.Search(len(fmts), func(k int) bool { return fmts[k].e > c })
		if k == 0 {
			return 0
		}
		return fmts[k-1].v
	}
	pi := 0
	havePtr := false
	var ptr uint32
	for _, a := range arr {
		// The format must hold over every stage cycle of the arrival.
		st := a.u + L - 1
		k0 := sort.Search(len(fmts), func(k int) bool { return fmts[k].e > st })
		if f := fmtAt(st); (f != 0) != (a.size == 8) {
			return fmt.Errorf("the item sampled in cycle %d (from tile %d, %d bytes) meets INCOMING_FORMAT %d", a.u, a.src, a.size, f)
		}
		if k0 < len(fmts) && fmts[k0].e < st+a.n && (fmts[k0].v != 0) != (a.size == 8) {
			return fmt.Errorf("word %d: INCOMING_FORMAT changes to %d in cycle %d while items from tile %d (%d bytes) are in flight", fmts[k0].pc, fmts[k0].v, fmts[k0].e, a.src, a.size)
		}
		w0 := wcyc(a)
		for k := 0; k < a.n; {
			w := w0 + k
			for pi < len(ptrs) && ptrs[pi].e <= w {
				ptr, havePtr = ptrs[pi].v<<2, true
				pi++
			}
			if !havePtr {
				return fmt.Errorf("write in cycle %d (from tile %d) before any PIC sets the pointer", w, a.src)
			}
			m := a.n - k
			if pi < len(ptrs) {
				m = min(m, ptrs[pi].e-w)
			}
			if ptr%uint32(a.size) != 0 || !ipu21.InSRAM(ptr, uint32(a.size*m)) {
				return fmt.Errorf("write to 0x%x in cycle %d is outside SRAM or not %d-byte aligned", ptr, w, a.size)
			}
			if w+m-1 >= d.events {
				return fmt.Errorf("write in cycle %d lands after the row ends (event %d)", w+m-1, d.events)
			}
			d.writes = append(d.writes, vwrite{w, m, ptr, a.src, a.saddr + uint32(a.size*k), a.size})
			ptr += uint32(a.size * m)
			k += m
		}
	}
	return nil
}
