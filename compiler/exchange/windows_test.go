package exchange

import (
	"testing"

	"github.com/ipustack/ipustack/ipu21"
)

// TestWindowsPaired: the paired oracle's intervals: the sender's send and
// its partner's borrowed lane over the same 64 events, and the receive
// windows of 64 and 66 opening at event 1 (cycle 0), their writes ending
// at the horizon.
func TestWindowsPaired(t *testing.T) {
	p := Phase{Transfers: []Transfer{{Src: 0, SrcAddr: 0x50000, Words: 128, Paired: true, Dsts: []Dest{{64, 0x60000}, {66, 0x60000}}}}}
	s := build(t, p, Options{})
	ws := s.Windows()
	if len(ws) != 4 {
		t.Fatalf("%d intervals, want 4: %+v", len(ws), ws)
	}
	send, lane := ws[0], ws[1]
	if ipu21.Partner(0) < 0 {
		send, lane = ws[1], ws[0]
	}
	if send.Tile != 0 || send.Kind != UseSend || send.Bytes != 512 || send.End-send.Start != 64 {
		t.Errorf("send %+v", send)
	}
	if lane.Tile != ipu21.Partner(0) || lane.Kind != UsePartnerLane || lane.Start != send.Start || lane.End != send.End || lane.Bytes != 0 {
		t.Errorf("partner lane %+v (send %+v)", lane, send)
	}
	end := 0
	for _, u := range ws[2:] {
		if u.Kind != UseReceive || (u.Tile != 64 && u.Tile != 66) || u.Start != 0 || u.End != 64 || u.Bytes != 512 || u.Peer != 0 {
			t.Errorf("receive %+v", u)
		}
		end = max(end, u.End+u.Latency)
	}
	if end != s.Horizon {
		t.Errorf("last write lands at %d, horizon %d", end, s.Horizon)
	}
}

// TestWindowsRandom: on random phases every interval lies in [0, horizon)
// (receives with their writes), a tile's sends and receive windows do not
// overlap each other, and the bytes add up: every destination receives
// each transfer's words once; sends carry each transfer once plus the
// repeated sends of split multicasts.
func TestWindowsRandom(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		p := randomPhase(seed, true)
		s := build(t, p, Options{Paired: PairedAuto})
		var sent, recv, wantSent, wantRecv int
		for _, x := range p.Transfers {
			wantSent += 4 * x.Words
			wantRecv += 4 * x.Words * len(x.Dsts)
		}
		last := map[[2]int]int{}
		for _, u := range s.Windows() {
			if u.Start < 0 || u.End <= u.Start || u.End+u.Latency > s.Horizon {
				t.Errorf("seed %d: %+v outside [0,%d)", seed, u, s.Horizon)
			}
			lane := 0
			if u.Kind == UseReceive {
				lane = 1
				recv += u.Bytes
			} else {
				sent += u.Bytes
			}
			k := [2]int{u.Tile, lane}
			if e, ok := last[k]; ok && u.Start < e && u.Kind != UseReceive {
				t.Errorf("seed %d: tile %d: %v at %d overlaps the lane's use until %d", seed, u.Tile, u.Kind, u.Start, e)
			}
			last[k] = max(last[k], u.End)
		}
		if recv != wantRecv || (s.SplitSends == 0 && sent != wantSent) || sent < wantSent {
			t.Errorf("seed %d: sent %d received %d bytes, transfers %d to %d destinations (split sends %d)", seed, sent, recv, wantSent, wantRecv, s.SplitSends)
		}
	}
}
