package exchange

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/isa"
	"github.com/ipustack/ipustack/target"
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
//     tiles or neutral; the 64-bit path stays unused (pair source neutral,
//     INCOMING_FORMAT 0);
//   - no control on the first Guard events of a send (a send is a run of
//     stream items contiguous in events and addresses);
//   - receive source windows: each opens on its source's first word,
//     receives one word per event, the source is then silent until the
//     window closes, every word travels towards the receiver (direction
//     bits), and every window is closed when the row ends;
//   - payload windows: every write goes through a pointer set by a PIC
//     control, lands in SRAM before the receiver's row ends, and two
//     writes never hit one address;
//   - the writes are exactly the phase's transfers: each destination word
//     comes from the right source word, and nothing else is written;
//   - no memory-element clash between a send's read and an incoming write
//     on one tile in one event (target.Element);
//   - read/write order: on a tile, a word that is both sent and
//     overwritten in the phase is read before it is written;
//   - Events matches each row's length; Horizon and LowerBound match.
func (s *Schedule) Validate() error {
	v := &validator{s: s, tiles: map[int]*vtile{}}
	for i := range s.Tiles {
		p := &s.Tiles[i]
		if i > 0 && s.Tiles[i-1].Tile >= p.Tile {
			return fmt.Errorf("programs not in strictly increasing tile order at tile %d", p.Tile)
		}
		if !target.ValidPhysical(p.Tile) {
			return fmt.Errorf("program for tile %d: not a physical tile", p.Tile)
		}
		t, err := decodeRow(p, s.Guard)
		if err != nil {
			return fmt.Errorf("tile %d: %w", p.Tile, err)
		}
		v.tiles[p.Tile] = t
		v.order = append(v.order, p.Tile)
	}
	return v.check()
}

type vsend struct {
	e0, n int // items at events e0 .. e0+n-1
	addr  uint32
	dirs  int
	pc    int // word index of the instruction
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
	streamDirs := 0
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
		emit := func(addr uint32, sctl int) error {
			if sctl&4 != 0 {
				return fmt.Errorf("word %d: %s: 64-bit sends are not part of this schedule model", wi, isa.Format(d))
			}
			if addr%4 != 0 || !target.InSRAM(addr, uint32(4*n)) {
				return fmt.Errorf("word %d: %s reads outside SRAM", wi, isa.Format(d))
			}
			if sctl&3 != 0 {
				t.sends = append(t.sends, vsend{cur + 1, n, addr, sctl & 3, wi})
			}
			streamOpen, streamNext, streamDirs = true, addr+uint32(4*n), sctl
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
			if err := emit(uint32(vals[1]), int(vals[2])); err != nil {
				return nil, err
			}
		case "sendoff":
			if !streamOpen {
				return nil, fmt.Errorf("word %d: sendoff without an outgoing stream", wi)
			}
			if err := emit(streamNext+uint32(vals[1]), int(vals[2])); err != nil {
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
				if err := emit(streamNext, streamDirs); err != nil {
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
				if err := emit(uint32(vals[1]), int(vals[2])); err != nil {
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
		switch c.kind {
		case 0:
			if c.v >= target.Tiles && c.v != target.MuxNeutral {
				return nil, fmt.Errorf("word %d: XPIC value 0x%x is neither a tile nor neutral", c.pc, c.v)
			}
		case 1:
			if c.v != target.MuxNeutral {
				return nil, fmt.Errorf("word %d: selects a 64-bit pair source 0x%x", c.pc, c.v)
			}
		case 3:
			if c.v != 0 {
				return nil, fmt.Errorf("word %d: sets INCOMING_FORMAT %d (64-bit items)", c.pc, c.v)
			}
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
				if p.e0+p.n == s.e0 && p.addr+uint32(4*p.n) == s.addr {
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
	// Resolve every tile's receive path.
	for _, id := range v.order {
		if err := v.resolve(v.tiles[id]); err != nil {
			return fmt.Errorf("tile %d: %w", id, err)
		}
	}
	// Exactly the phase's transfers.
	type exp struct {
		addr  uint32
		n     int
		src   int
		saddr uint32
	}
	want := map[int][]exp{}
	send, recv := map[int]int{}, map[int]int{}
	for _, x := range v.s.Phase.Transfers {
		send[x.Src] += x.Words
		for _, d := range x.Dsts {
			want[d.Tile] = append(want[d.Tile], exp{d.Addr, x.Words, x.Src, x.SrcAddr})
			recv[d.Tile] += x.Words
		}
	}
	lb := 0
	for _, w := range send {
		lb = max(lb, w)
	}
	for _, w := range recv {
		lb = max(lb, w)
	}
	if lb != v.s.LowerBound {
		return fmt.Errorf("LowerBound %d, the phase gives %d", v.s.LowerBound, lb)
	}
	horizon := 0
	for _, id := range v.order {
		t := v.tiles[id]
		horizon = max(horizon, t.events)
		es := want[id]
		delete(want, id)
		slices.SortFunc(es, func(a, b exp) int { return cmp.Compare(a.addr, b.addr) })
		ws := t.writes
		slices.SortFunc(ws, func(a, b vwrite) int { return cmp.Compare(a.addr, b.addr) })
		total, got := 0, 0
		for _, e := range es {
			total += e.n
		}
		for i, w := range ws {
			if i > 0 && w.addr < ws[i-1].addr+uint32(4*ws[i-1].n) {
				return fmt.Errorf("tile %d: address 0x%x written twice", id, w.addr)
			}
			k, _ := slices.BinarySearchFunc(es, w.addr, func(e exp, a uint32) int {
				if e.addr+uint32(4*e.n) <= a {
					return -1
				}
				return 1
			})
			if k == len(es) || es[k].addr > w.addr || w.addr+uint32(4*w.n) > es[k].addr+uint32(4*es[k].n) {
				return fmt.Errorf("tile %d: cycle %d writes 0x%x (%d words from tile %d): no transfer's destination", id, w.w, w.addr, w.n, w.src)
			}
			e := es[k]
			if w.src != e.src || w.saddr-e.saddr != w.addr-e.addr {
				return fmt.Errorf("tile %d: 0x%x receives tile %d's word at 0x%x, want tile %d's at 0x%x", id, w.addr, w.src, w.saddr, e.src, e.saddr+(w.addr-e.addr))
			}
			got += w.n
		}
		if got != total {
			return fmt.Errorf("tile %d: %d of %d destination words written", id, got, total)
		}
	}
	for id := range want {
		return fmt.Errorf("tile %d receives data but has no program", id)
	}
	for id := range send {
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
			r := run{s.e0, s.n, s.addr}
			for _, w := range t.writes {
				wr := run{w.w, w.n, w.addr}
				if w.w < s.e0+s.n && s.e0 < w.w+w.n && clash(r, wr) {
					return fmt.Errorf("tile %d: memory-element clash: the send at word %d (reads 0x%x from event %d) and the incoming write to 0x%x from cycle %d", id, s.pc, s.addr, s.e0, w.addr, w.w)
				}
				// Read/write order on overlapping addresses.
				lo := max(s.addr, w.addr)
				hi := min(s.addr+uint32(4*s.n), w.addr+uint32(4*w.n))
				if lo < hi {
					rc := s.e0 + int(lo-s.addr)/4
					wc := w.w + int(lo-w.addr)/4
					if rc >= wc {
						return fmt.Errorf("tile %d: 0x%x is overwritten in cycle %d before the send at word %d reads it in cycle %d", id, lo, wc, s.pc, rc)
					}
				}
			}
		}
	}
	return nil
}

// resolve computes tile d's incoming writes from its XPIC windows and the
// senders' items.
func (v *validator) resolve(d *vtile) error {
	L := target.PayloadLatency + 2*target.Row(d.id)
	type arrival struct {
		u, n  int
		src   int
		saddr uint32
	}
	var arr []arrival
	var mux []vctrl
	var ptrs []vctrl
	for _, c := range d.ctrls {
		switch c.kind {
		case 0:
			mux = append(mux, c)
		case 2:
			ptrs = append(ptrs, c)
		}
	}
	if len(mux) > 0 && mux[len(mux)-1].v != target.MuxNeutral {
		return fmt.Errorf("the row ends with the source window on tile %d open (close it with XPIC 0x640)", mux[len(mux)-1].v)
	}
	for i, c := range mux {
		if c.v == target.MuxNeutral {
			continue
		}
		a, b := c.e, mux[i+1].e // a window [a, b)
		s := v.tiles[int(c.v)]
		if s == nil {
			return fmt.Errorf("word %d: window from event %d selects tile %d, which has no row", c.pc, a, c.v)
		}
		ttm := target.TimeToMux(s.id, d.id)
		dir := target.SendDirection(s.id, d.id)
		cursor := a
		for _, r := range s.sends {
			u0, u1 := r.e0+ttm, r.e0+r.n+ttm
			lo, hi := max(u0, a), min(u1, b)
			if lo >= hi {
				continue
			}
			if lo != cursor {
				if cursor == a {
					return fmt.Errorf("word %d: window opens at event %d but tile %d's first word arrives at %d", c.pc, a, s.id, lo)
				}
				return fmt.Errorf("word %d: tile %d's words stop at %d and resume at %d while the window (events %d..%d) is open", c.pc, s.id, cursor, lo, a, b)
			}
			if r.dirs&dir == 0 {
				return fmt.Errorf("word %d: tile %d's send at word %d goes away from this tile (direction bits %d, need %d)", c.pc, s.id, r.pc, r.dirs, dir)
			}
			arr = append(arr, arrival{lo, hi - lo, s.id, r.addr + uint32(4*(lo-u0))})
			cursor = hi
		}
		if cursor == a {
			return fmt.Errorf("word %d: window from event %d selects tile %d, whose words never arrive in it", c.pc, a, s.id)
		}
	}
	// Payload: write cycle u+L through the pointer in force then.
	slices.SortFunc(arr, func(a, b arrival) int { return cmp.Compare(a.u, b.u) })
	pi := 0
	havePtr := false
	var ptr uint32
	for _, a := range arr {
		for k := 0; k < a.n; {
			w := a.u + L + k
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
			if !target.InSRAM(ptr, uint32(4*m)) {
				return fmt.Errorf("write to 0x%x in cycle %d is outside SRAM", ptr, w)
			}
			if w+m-1 >= d.events {
				return fmt.Errorf("write in cycle %d lands after the row ends (event %d)", w+m-1, d.events)
			}
			d.writes = append(d.writes, vwrite{w, m, ptr, a.src, a.saddr + uint32(4*k)})
			ptr += uint32(4 * m)
			k += m
		}
	}
	return nil
}
