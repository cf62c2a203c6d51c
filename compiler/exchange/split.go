package exchange

import (
	"cmp"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
)

// splitMulticasts returns parts with multicasts split into several sends
// where the sender has the events to spare, or nil when none is split.
//
// A multicast must find every destination's receive path free at once
// (shifted by the route delays), so on busy receivers it waits for the
// latest of them and leaves holes on the others. When its sender sends
// less than the endpoint bound, sending it again costs only sender events:
// each of the busiest destinations gets its own send and the rest share
// one, as long as the sender's events stay within the bound (so the bound
// never rises). Multicasts are taken longest first.
//
// With splitPaired, paired multicasts are split too, by receiving pair
// (the two members share the pair's 64-bit source, so they stay in one
// send); each extra send costs events at the sender and at its partner,
// whose lane it borrows, so both must have them to spare.
func splitMulticasts(p *Phase, parts []part, splitPaired bool) []part {
	send, recv := make([]int, ipu21.Tiles), make([]int, ipu21.Tiles)
	items := func(pt *part) int {
		if pt.paired {
			return p.Transfers[pt.orig].Words / 2
		}
		return p.Transfers[pt.orig].Words
	}
	for i := range parts {
		pt := &parts[i]
		t := &p.Transfers[pt.orig]
		n := items(pt)
		send[t.Src] += n
		if pt.paired {
			send[ipu21.Partner(t.Src)] += n
		}
		for _, k := range pt.dsts {
			recv[t.Dsts[k].Tile] += n
		}
	}
	bound := 0
	for i := range send {
		bound = max(bound, send[i], recv[i])
	}
	// groups returns the destinations of a part as the units a split may
	// separate: single tiles, or for a paired part whole receiving pairs
	// (both members, which share the pair's 64-bit source).
	groups := func(pt *part) [][]int {
		t := &p.Transfers[pt.orig]
		if !pt.paired {
			g := make([][]int, len(pt.dsts))
			for k, d := range pt.dsts {
				g[k] = []int{d}
			}
			return g
		}
		var g [][]int
		at := map[int]int{} // pair (tile &^ 2) -> index in g
		for _, k := range pt.dsts {
			key := t.Dsts[k].Tile &^ 2
			if x, ok := at[key]; ok {
				g[x] = append(g[x], k)
				continue
			}
			at[key] = len(g)
			g = append(g, []int{k})
		}
		return g
	}
	var cand []int
	for i := range parts {
		if len(parts[i].dsts) >= 2 && (!parts[i].paired || splitPaired && len(groups(&parts[i])) >= 2) {
			cand = append(cand, i)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(items(&parts[b]), items(&parts[a])) })
	split := map[int][]part{}
	for _, i := range cand {
		pt := &parts[i]
		t := &p.Transfers[pt.orig]
		n := items(pt)
		gs := groups(pt)
		// A paired send also takes the partner's lane: both must have the
		// events to spare.
		busy := send[t.Src]
		if pt.paired {
			busy = max(busy, send[ipu21.Partner(t.Src)])
		}
		m := min(len(gs), 1+(bound-busy)/n)
		if m < 2 {
			continue
		}
		send[t.Src] += (m - 1) * n
		if pt.paired {
			send[ipu21.Partner(t.Src)] += (m - 1) * n
		}
		load := func(g []int) int {
			l := 0
			for _, k := range g {
				l = max(l, recv[t.Dsts[k].Tile])
			}
			return l
		}
		slices.SortStableFunc(gs, func(a, b []int) int { return cmp.Compare(load(b), load(a)) })
		var out []part
		for _, g := range gs[:m-1] {
			out = append(out, part{orig: pt.orig, paired: pt.paired, dsts: slices.Sorted(slices.Values(g))})
		}
		var rest []int
		for _, g := range gs[m-1:] {
			rest = append(rest, g...)
		}
		slices.Sort(rest)
		out = append(out, part{orig: pt.orig, paired: pt.paired, dsts: rest})
		split[i] = out
	}
	if len(split) == 0 {
		return nil
	}
	var out []part
	for i := range parts {
		if s, ok := split[i]; ok {
			out = append(out, s...)
		} else {
			out = append(out, parts[i])
		}
	}
	return out
}

// chunkParts cuts every ordinary part of more than size words into
// near-equal pieces of at most size words, each its own send.
func chunkParts(p *Phase, parts []part, size int) []part {
	var out []part
	for _, pt := range parts {
		n := p.Transfers[pt.orig].Words
		if pt.words > 0 {
			n = pt.words
		}
		if pt.paired || n <= size {
			out = append(out, pt)
			continue
		}
		k := (n + size - 1) / size
		lo := pt.lo
		for c := 0; c < k; c++ {
			w := n / k
			if c < n%k {
				w++
			}
			q := pt
			q.lo, q.words = lo, w
			out = append(out, q)
			lo += w
		}
	}
	return out
}

// samePart reports whether two parts send the same data the same way.
func samePart(a, b part) bool {
	return a.orig == b.orig && a.paired == b.paired && a.lo == b.lo && a.words == b.words && slices.Equal(a.dsts, b.dsts)
}
