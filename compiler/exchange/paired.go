package exchange

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
)

// Choosing paired transfers (Options.Paired = PairedAuto).
//
// A paired send halves the events its data takes at the sender and at
// every receiver, but it can only reach whole receiving pairs and it
// borrows the sender's partner's outgoing lane. So it shortens a phase
// whose critical tiles receive (or send) multicast data, and lengthens one
// whose critical tiles are the partners of busy senders. Build schedules
// the all-ordinary assignment and up to two paired ones and keeps the
// shortest; the paired ones are
//
//   - selective: candidates taken greedily, biggest saving first, each only
//     if it does not raise the endpoint lower bound (so the partner
//     reservation never becomes the bottleneck);
//   - full: every candidate paired (when it differs from selective).

// pairSplit returns the destinations of t (indices into t.Dsts) that can
// take t as paired items, and the rest. A destination qualifies when its
// pair partner is also a destination at the same 8-byte aligned address.
func pairSplit(t *Transfer) (paired, rest []int) {
	if t.Paired || t.Words%2 != 0 || t.Words/2 < MinPairedItems || t.SrcAddr%8 != 0 {
		return nil, nil
	}
	at := make(map[int]int, len(t.Dsts))
	for k, d := range t.Dsts {
		at[d.Tile] = k
	}
	for k, d := range t.Dsts {
		j, ok := at[ipu21.Partner(d.Tile)]
		if ok && d.Addr%8 == 0 && t.Dsts[j].Addr == d.Addr {
			paired = append(paired, k)
		} else {
			rest = append(rest, k)
		}
	}
	return paired, rest
}

// pairedAssignments returns the paired assignments worth scheduling
// (none when no transfer qualifies) and the number of candidates.
func pairedAssignments(p *Phase) ([][]part, int) {
	type cand struct {
		orig        int
		paired, rst []int
	}
	var cs []cand
	for i := range p.Transfers {
		pd, rest := pairSplit(&p.Transfers[i])
		if len(pd) > 0 {
			cs = append(cs, cand{i, pd, rest})
		}
	}
	if len(cs) == 0 {
		return nil, 0
	}
	// Endpoint loads (events) of the ordinary assignment.
	send, recv := make([]int, ipu21.Tiles), make([]int, ipu21.Tiles)
	for _, t := range p.Transfers {
		n := t.Words
		if t.Paired {
			n /= 2
			send[ipu21.Partner(t.Src)] += n
		}
		send[t.Src] += n
		for _, d := range t.Dsts {
			recv[d.Tile] += n
		}
	}
	bound := 0
	for i := range send {
		bound = max(bound, send[i], recv[i])
	}
	// Biggest saving first: half the words at the sender and each paired
	// receiver.
	slices.SortStableFunc(cs, func(a, b cand) int {
		wa := p.Transfers[a.orig].Words * (1 + len(a.paired))
		wb := p.Transfers[b.orig].Words * (1 + len(b.paired))
		return cmp.Or(cmp.Compare(wb, wa), cmp.Compare(a.orig, b.orig))
	})
	chosen := make([]bool, len(p.Transfers))
	nsel := 0
	for _, c := range cs {
		t := &p.Transfers[c.orig]
		h := t.Words / 2
		pt := ipu21.Partner(t.Src)
		// Paired: the sender and the paired receivers lose h events, the
		// partner gains h. Keep it only if the partner stays within the
		// current bound (the others only get lighter).
		if send[pt]+h > bound {
			continue
		}
		send[pt] += h
		send[t.Src] -= h
		for _, k := range c.paired {
			recv[t.Dsts[k].Tile] -= h
		}
		chosen[c.orig] = true
		nsel++
	}
	mk := func(all bool) []part {
		byOrig := map[int]cand{}
		for _, c := range cs {
			if all || chosen[c.orig] {
				byOrig[c.orig] = c
			}
		}
		var parts []part
		for i, t := range p.Transfers {
			c, ok := byOrig[i]
			if !ok {
				parts = append(parts, part{orig: i, paired: t.Paired, dsts: allDests(len(t.Dsts))})
				continue
			}
			parts = append(parts, part{orig: i, paired: true, dsts: c.paired})
			if len(c.rst) > 0 {
				parts = append(parts, part{orig: i, dsts: c.rst})
			}
		}
		return parts
	}
	var out [][]part
	if nsel > 0 {
		out = append(out, mk(false))
	}
	if nsel < len(cs) {
		out = append(out, mk(true))
	}
	return out, len(cs)
}

// checkPaired checks a transfer that asks for paired items.
func checkPaired(i int, t *Transfer) error {
	if t.Words%2 != 0 || t.Words/2 < MinPairedItems {
		return fmt.Errorf("transfer %d: paired transfers need an even number of words, at least %d (%d items); it has %d", i, 2*MinPairedItems, MinPairedItems, t.Words)
	}
	if t.SrcAddr%8 != 0 {
		return fmt.Errorf("transfer %d: paired source address 0x%x is not 8-byte aligned", i, t.SrcAddr)
	}
	if rest := unpairedDests(t); len(rest) > 0 {
		d := t.Dsts[rest[0]]
		return fmt.Errorf("transfer %d: paired destination tile %d at 0x%x: its pair partner %d is not a destination at the same 8-byte aligned address (paired items reach whole receiving pairs)", i, d.Tile, d.Addr, ipu21.Partner(d.Tile))
	}
	return nil
}

// unpairedDests returns the destinations of t whose partner is not a
// destination at the same 8-byte aligned address (pairSplit's rest,
// whatever t's size and source).
func unpairedDests(t *Transfer) []int {
	u := *t
	u.Paired, u.Words, u.SrcAddr = false, 2*MinPairedItems, 0
	_, rest := pairSplit(&u)
	return rest
}
