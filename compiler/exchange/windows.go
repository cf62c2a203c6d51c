package exchange

import (
	"cmp"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
)

// UseKind says what a tile does in a Use.
type UseKind uint8

const (
	// UseSend: the tile sends items of a transfer (its outgoing lane).
	UseSend UseKind = iota
	// UseReceive: the tile's receive window (incoming mux) for a
	// transfer: item k passes its mux in cycle Start+k and has landed in
	// memory by cycle Start+k+Latency, so the receive is done at
	// End+Latency (the row's end, for its last receive).
	UseReceive
	// UsePartnerLane: the tile's outgoing lane is borrowed by its
	// partner's paired send (no bytes of its own).
	UsePartnerLane
)

func (k UseKind) String() string {
	switch k {
	case UseSend:
		return "send"
	case UseReceive:
		return "receive"
	case UsePartnerLane:
		return "partner-lane"
	}
	return "use(?)"
}

// Use is one scheduled interval of a tile in a phase, in cycles from the
// phase's start (the common return of `sync 3`): [Start, End), event e of
// a row (counted from 1) being cycle e-1, so every Use ends by the
// schedule's Horizon. Tile is physical; Peer is the other end (the
// sender of a receive, the partner of a borrowed lane, -1 for a send,
// which may have several destinations). Bytes is the data the send or
// receive moves (0 for UsePartnerLane). Transfer indexes Phase.Transfers.
type Use struct {
	Tile     int
	Kind     UseKind
	Start    int
	End      int
	Latency  int // UseReceive: cycles from an item's mux sample to its landing
	Bytes    int
	Peer     int
	Transfer int
}

// uses lists the intervals of a placement, by tile, then start, then kind.
func uses(pr *problem, pl *placement) []Use {
	n := 0
	for i := range pr.xs {
		n += 1 + len(pr.xs[i].dsts)
		if pr.xs[i].paired {
			n++
		}
	}
	out := make([]Use, 0, n)
	for i := range pr.xs {
		x := &pr.xs[i]
		ts := pl.ts[i]
		out = append(out, Use{Tile: x.src, Kind: UseSend, Start: ts, End: ts + x.n, Bytes: int(x.bytes()), Peer: -1, Transfer: x.orig})
		if x.paired {
			p := ipu21.Partner(x.src)
			out = append(out, Use{Tile: p, Kind: UsePartnerLane, Start: ts, End: ts + x.n, Peer: x.src, Transfer: x.orig})
		}
		for j, d := range x.dsts {
			u0 := ts + x.ttm[j] // the mux window opens at event ts+1+ttm
			out = append(out, Use{Tile: d, Kind: UseReceive, Start: u0, End: u0 + x.n, Latency: x.lat[j] + 1, Bytes: int(x.bytes()), Peer: x.src, Transfer: x.orig})
		}
	}
	// A stable sort by tile, start and kind: bucketed by tile (a
	// counting sort keeps the order within a tile), then each tile's few
	// uses sorted stably, which is much cheaper than sorting ~10^5 uses
	// at once.
	at := make([]int, ipu21.Tiles+1)
	for _, u := range out {
		at[u.Tile+1]++
	}
	for t := 1; t <= ipu21.Tiles; t++ {
		at[t] += at[t-1]
	}
	sorted := make([]Use, len(out))
	next := slices.Clone(at[:ipu21.Tiles])
	for _, u := range out {
		sorted[next[u.Tile]] = u
		next[u.Tile]++
	}
	for t := 0; t < ipu21.Tiles; t++ {
		slices.SortStableFunc(sorted[at[t]:at[t+1]], func(a, b Use) int {
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Kind, b.Kind))
		})
	}
	return sorted
}

// Windows returns the scheduled intervals of every tile of the phase:
// each send, each receive window (one per destination of a transfer) and,
// for paired sends, the partner's borrowed lane; ordered by tile, start
// and kind. The slice is the schedule's: do not modify it.
func (s *Schedule) Windows() []Use { return s.uses }
