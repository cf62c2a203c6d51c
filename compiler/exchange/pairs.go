package exchange

import (
	"cmp"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
)

// pairColours colours the transfers at the level of tile pairs, for
// phases with paired sends to single receiving pairs (ok is false when
// there is none, or when the tables would be too large).
//
// A paired send to one receiving pair holds both outgoing lanes of its
// sender's pair (its own and the partner's) and the receiving pair's
// shared 64-bit source, so it excludes every other transfer leaving or
// entering either pair. konigColours sees tiles: it takes such a send
// for a multicast (greedy rounds after every point-to-point one) and does
// not see the partner lane it borrows, so its rounds stall one another
// (the build's 32-tile all-gather, paired multicasts split by pair: 2395
// events against a bound of 1536; in these rounds 1631). Here every pair
// is one sender and one receiver node of a bipartite graph: a paired send
// is an edge between its two pairs, and so is a point-to-point transfer
// of words s -> d, coupled when possible with one s^2 -> d^2 (the two use
// the four tiles' lanes and muxes once each, so they run side by side:
// an all-gather's partner exchange a -> a^2, a^2 -> a is such a couple).
// König's colouring (konig) then gives as many rounds as the busiest pair
// has edges, each round a matching of sender pairs to receiver pairs: the
// open-shop construction of pass 3, one level up. Multicasts keep the
// greedy colouring's rounds, after those.
func (pr *problem) pairColours() (col []int, ok bool) {
	xs := pr.xs
	const none = -1
	pairOf := func(t int) int { return t &^ 2 } // the member with bit 1 clear
	var es []int                                // transfers between two pairs
	pairToPair := false
	for i := range xs {
		x := &xs[i]
		if x.paired && len(x.dsts) == 2 && pairOf(x.dsts[0]) == pairOf(x.dsts[1]) {
			es = append(es, i)
			pairToPair = true
		} else if !x.paired && len(x.dsts) == 1 {
			es = append(es, i)
		}
	}
	if !pairToPair {
		return nil, false
	}
	slices.SortStableFunc(es, func(a, b int) int { return cmp.Compare(xs[b].n, xs[a].n) })
	// Words transfers by their ends, longest first, to find couples.
	type ends struct{ s, d int }
	byEnds := map[ends][]int{}
	for _, i := range es {
		if x := &xs[i]; !x.paired {
			k := ends{x.src, x.dsts[0]}
			byEnds[k] = append(byEnds[k], i)
		}
	}
	mate := make([]int, len(xs)) // the coupled transfer, or none
	for i := range mate {
		mate[i] = none
	}
	taken := make([]bool, len(xs))
	var edges []int // one transfer per edge (a couple's longer one), longest first
	for _, i := range es {
		if taken[i] {
			continue
		}
		taken[i] = true
		edges = append(edges, i)
		x := &xs[i]
		if x.paired {
			continue
		}
		for _, j := range byEnds[ends{ipu21.Partner(x.src), ipu21.Partner(x.dsts[0])}] {
			if !taken[j] {
				taken[j], mate[i] = true, j
				break
			}
		}
	}
	// Pair slots, in order of first appearance (only participating pairs
	// get a row of konig's tables).
	sid := make([]int32, ipu21.Tiles) // slot+1 of a sending pair, 0: none yet
	rid := make([]int32, ipu21.Tiles)
	var ns, nr int32
	es0 := make([]int32, len(edges))
	er0 := make([]int32, len(edges))
	for k, i := range edges {
		x := &xs[i]
		if sp := pairOf(x.src); sid[sp] == 0 {
			ns++
			sid[sp] = ns
		}
		if rp := pairOf(x.dsts[0]); rid[rp] == 0 {
			nr++
			rid[rp] = nr
		}
		es0[k], er0[k] = sid[pairOf(x.src)]-1, rid[pairOf(x.dsts[0])]-1
	}
	ec, delta, ok := konig(int(ns), int(nr), es0, er0)
	if !ok {
		return nil, false
	}
	col = make([]int, len(xs))
	for i := range col {
		col[i] = none
	}
	for k, i := range edges {
		col[i] = ec[k]
		if mate[i] != none {
			col[mate[i]] = ec[k]
		}
	}
	if len(es) < len(xs) {
		g := pr.colours() // greedy colouring of everything; keep its multicast colours after delta
		for i := range xs {
			if col[i] == none {
				col[i] = delta + g[i]
			}
		}
	}
	return col, true
}
