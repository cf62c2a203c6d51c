package exchange

import (
	"cmp"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
)

// konigColours colours the point-to-point transfers of pr (one
// destination) so that no tile sends two, or receives two, of one colour,
// with as many colours as the largest number of transfers a tile sends or
// receives (König's theorem: the sender-receiver graph is bipartite; each
// conflict is repaired by swapping the two colours along an alternating
// path). Multicasts then take the first colour free at all their tiles.
// ok is false when the tables would be too large (the caller falls back).
func (pr *problem) konigColours() (col []int, ok bool) {
	xs := pr.xs
	const none = -1
	// Tile slots: only participating tiles get a row of the table.
	sid := make([]int, ipu21.Tiles) // slot+1 of a sending tile, 0: none yet
	rid := make([]int, ipu21.Tiles)
	ns, nr := 0, 0
	es0 := make([]int32, len(xs)) // sender slot per point-to-point transfer
	er0 := make([]int32, len(xs)) // receiver slot
	for i := range xs {
		x := &xs[i]
		if len(x.dsts) != 1 {
			continue
		}
		s := sid[x.src] - 1
		if s < 0 {
			s = ns
			ns++
			sid[x.src] = s + 1
		}
		r := rid[x.dsts[0]] - 1
		if r < 0 {
			r = nr
			nr++
			rid[x.dsts[0]] = r + 1
		}
		es0[i], er0[i] = int32(s), int32(r)
	}
	es := make([]int, 0, len(xs))
	for i := range xs {
		if len(xs[i].dsts) == 1 {
			es = append(es, i)
		}
	}
	slices.SortStableFunc(es, func(a, b int) int { return cmp.Compare(xs[b].n, xs[a].n) })
	s0 := make([]int32, len(es))
	r0 := make([]int32, len(es))
	for k, i := range es {
		s0[k], r0[k] = es0[i], er0[i]
	}
	ec, delta, ok := konig(ns, nr, s0, r0)
	if !ok {
		return nil, false
	}
	col = make([]int, len(xs))
	for i := range col {
		col[i] = none
	}
	for k, i := range es {
		col[i] = ec[k]
	}
	// Multicasts: first fit above the point-to-point colours' tables.
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

// konig edge-colours a bipartite multigraph with ns senders and nr
// receivers, edge k joining sender es0[k] and receiver er0[k], with as many
// colours (delta) as the largest degree, taking the edges in order: each
// takes the lowest colour free at its sender and, when that colour is
// taken at its receiver, the two colours are swapped along the alternating
// path from the receiver (which cannot end at the sender). ok is false
// when the tables would be too large.
func konig(ns, nr int, es0, er0 []int32) (col []int, delta int, ok bool) {
	const none = -1
	sdeg, rdeg := make([]int, ns), make([]int, nr)
	for k := range es0 {
		sdeg[es0[k]]++
		rdeg[er0[k]]++
	}
	for _, d := range sdeg {
		delta = max(delta, d)
	}
	for _, d := range rdeg {
		delta = max(delta, d)
	}
	if (ns+nr)*delta > 1<<23 {
		return nil, 0, false
	}
	sAt := make([]int32, ns*delta) // edge of colour c at sender s, or none
	rAt := make([]int32, nr*delta)
	for i := range sAt {
		sAt[i] = none
	}
	for i := range rAt {
		rAt[i] = none
	}
	col = make([]int, len(es0))
	for i := range col {
		col[i] = none
	}
	free := func(at []int32, u int) int {
		row := at[u*delta : (u+1)*delta]
		for c, e := range row {
			if e == none {
				return c
			}
		}
		return -1
	}
	var path []int32
	for e := range es0 {
		u, v := int(es0[e]), int(er0[e])
		a := free(sAt, u)
		if rAt[v*delta+a] != none {
			b := free(rAt, v)
			// Alternating a/b path from v: v -a- s1 -b- r2 -a- s3 ...
			// Swap a and b on it; it cannot end at u.
			path = path[:0]
			atR, c := true, a
			node := v
			for {
				var f int32
				if atR {
					f = rAt[node*delta+c]
				} else {
					f = sAt[node*delta+c]
				}
				if f == none {
					break
				}
				path = append(path, f)
				if atR {
					node = int(es0[f])
				} else {
					node = int(er0[f])
				}
				atR = !atR
				c = a + b - c
			}
			for _, f := range path {
				fs, fr := int(es0[f]), int(er0[f])
				old := col[f]
				if sAt[fs*delta+old] == f {
					sAt[fs*delta+old] = none
				}
				if rAt[fr*delta+old] == f {
					rAt[fr*delta+old] = none
				}
			}
			for _, f := range path {
				fs, fr := int(es0[f]), int(er0[f])
				nc := a + b - col[f]
				col[f] = nc
				sAt[fs*delta+nc] = f
				rAt[fr*delta+nc] = f
			}
		}
		col[e] = a
		sAt[u*delta+a] = int32(e)
		rAt[v*delta+a] = int32(e)
	}
	return col, delta, true
}
