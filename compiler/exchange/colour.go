package exchange

import (
	"cmp"
	"slices"

	"github.com/ipustack/ipustack/target"
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
	sid := make([]int, target.Tiles) // slot+1 of a sending tile, 0: none yet
	rid := make([]int, target.Tiles)
	sdeg, rdeg := []int{}, []int{}
	es0 := make([]int32, len(xs)) // sender slot per point-to-point transfer
	er0 := make([]int32, len(xs)) // receiver slot
	for i := range xs {
		x := &xs[i]
		if len(x.dsts) != 1 {
			continue
		}
		s := sid[x.src] - 1
		if s < 0 {
			s = len(sdeg)
			sid[x.src] = s + 1
			sdeg = append(sdeg, 0)
		}
		sdeg[s]++
		r := rid[x.dsts[0]] - 1
		if r < 0 {
			r = len(rdeg)
			rid[x.dsts[0]] = r + 1
			rdeg = append(rdeg, 0)
		}
		rdeg[r]++
		es0[i], er0[i] = int32(s), int32(r)
	}
	delta := 0
	for _, d := range sdeg {
		delta = max(delta, d)
	}
	for _, d := range rdeg {
		delta = max(delta, d)
	}
	if (len(sdeg)+len(rdeg))*delta > 1<<23 {
		return nil, false
	}
	sAt := make([]int32, len(sdeg)*delta) // edge of colour c at sender s, or none
	rAt := make([]int32, len(rdeg)*delta)
	for i := range sAt {
		sAt[i] = none
	}
	for i := range rAt {
		rAt[i] = none
	}
	col = make([]int, len(xs))
	for i := range col {
		col[i] = none
	}
	es := make([]int, 0, len(xs))
	for i := range xs {
		if len(xs[i].dsts) == 1 {
			es = append(es, i)
		}
	}
	slices.SortStableFunc(es, func(a, b int) int { return cmp.Compare(xs[b].n, xs[a].n) })
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
	for _, e := range es {
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
