package exchange

import (
	"cmp"
	"slices"

	"github.com/ipustack/ipustack/target"
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
func splitMulticasts(p *Phase, parts []part) []part {
	send, recv := make([]int, target.Tiles), make([]int, target.Tiles)
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
			send[target.Partner(t.Src)] += n
		}
		for _, k := range pt.dsts {
			recv[t.Dsts[k].Tile] += n
		}
	}
	bound := 0
	for i := range send {
		bound = max(bound, send[i], recv[i])
	}
	var cand []int
	for i := range parts {
		if !parts[i].paired && len(parts[i].dsts) >= 2 {
			cand = append(cand, i)
		}
	}
	slices.SortStableFunc(cand, func(a, b int) int { return cmp.Compare(items(&parts[b]), items(&parts[a])) })
	split := map[int][]part{}
	for _, i := range cand {
		pt := &parts[i]
		t := &p.Transfers[pt.orig]
		n := items(pt)
		m := min(len(pt.dsts), 1+(bound-send[t.Src])/n)
		if m < 2 {
			continue
		}
		send[t.Src] += (m - 1) * n
		ds := slices.Clone(pt.dsts)
		slices.SortStableFunc(ds, func(a, b int) int { return cmp.Compare(recv[t.Dsts[b].Tile], recv[t.Dsts[a].Tile]) })
		var out []part
		for _, k := range ds[:m-1] {
			out = append(out, part{orig: pt.orig, dsts: []int{k}})
		}
		rest := slices.Clone(ds[m-1:])
		slices.Sort(rest)
		out = append(out, part{orig: pt.orig, dsts: rest})
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
