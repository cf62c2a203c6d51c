// Package exchange schedules one compiled exchange phase of the IPU21 and
// emits each participating tile's supervisor exchange row.
//
// A phase is a set of transfers, each from one source tile to one or more
// destination tiles (multicast costs nothing on the fabric). The scheduler
// picks, for every transfer, the event at which its source sends; the
// receive controls of its destinations follow from the timing rules of
// docs/machine.md ("The chip: syncs and exchange"):
//
//   - a send issued at timeline ts puts word k on the source's outgoing
//     stream at event ts+1+k;
//   - it reaches destination d's incoming mux at u = ts+1+k+ttm(s, d), so
//     d's source window (XPIC selecting s) opens at u0 = ts+1+ttm(s, d)
//     and is closed (XPIC 0x640, or the next window's XPIC) at u0+n;
//   - word k is written at u0+k+L(d), L(d) = 52 + 2*row(d), through the
//     write pointer, which a PIC control sets to the destination address at
//     u0+L(d), the first write.
//
// Events are counted from the phase's common start: the cycle in which the
// `sync 3` before the phase returns on every tile is timeline 0; a tile's
// row is issued from there, so its first instruction's first event is 1.
//
// Conventions the emitted rows rely on (the caller's side of the contract):
//   - $INCOMING_BASE and $OUTGOING_BASE are 0 (their reset value), so send
//     and PIC address operands are absolute;
//   - each tile's Words are placed at an 8-byte aligned address (a row may
//     contain the two-word `sendpicp`, which must start 8-byte aligned);
//   - no worker runs during the row (exchange timing is exact only then);
//   - the row's code and the code that follows it (fetched in the row's
//     last event) do not share a memory element with the phase's data
//     (the scheduler does not know where the code lives);
//   - the previous phase left every receive window closed (every row this
//     package emits does).
//
// Only 32-bit (ordinary) transfers are scheduled; paired 64-bit transfers
// are not supported yet (Build rejects them).
package exchange

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/ipustack/ipustack/isa"
	"github.com/ipustack/ipustack/target"
)

// Dest is one receiver of a transfer: physical tile and byte address.
type Dest struct {
	Tile int
	Addr uint32
}

// Transfer moves Words 32-bit words from SrcAddr on physical tile Src to
// every destination. Addresses are 4-byte aligned SRAM byte addresses.
type Transfer struct {
	Src     int
	SrcAddr uint32
	Words   int
	Dsts    []Dest
}

// Phase is one exchange phase: what moves between two chip-wide syncs.
type Phase struct {
	ID        int
	Transfers []Transfer
}

// Program is one tile's exchange row.
type Program struct {
	Tile int
	// Words are encoded supervisor exchange instructions, to be run right
	// after the phase's `sync 3` returns (8-byte aligned). The row ends
	// when the tile's last exchange event is done: every incoming word has
	// landed, so the code after it may use the received data.
	Words []uint32
	// Events is the row's length in exchange events (cycles): the next
	// instruction issues at timeline Events.
	Events int
}

// Schedule is the result of scheduling a phase.
type Schedule struct {
	Phase Phase
	// Horizon is the number of events from the phase's common start to
	// the last tile's last event (the maximum of the programs' Events).
	Horizon int
	// LowerBound is the endpoint lower bound: the maximum over tiles of
	// max(words sent, words received). Every tile sends and receives at
	// most one word per event, so no schedule is shorter.
	LowerBound int
	// Tiles holds one program per participating tile, in tile order.
	Tiles []Program
	// Guard is Options.Guard as used (Validate checks it).
	Guard int
}

// DefaultGuard is the hardware rule of IPU21.md: no receive control on a
// send's first two events. NoGuard asks for no guard at all.
const (
	DefaultGuard = 2
	NoGuard      = -1
)

// Options tune the scheduler. The zero value is valid.
type Options struct {
	// Guard is the number of a send's first events on which the row may
	// not apply a receive control. IPU21.md lists "no control on a send's
	// first two events" among the constraints a physical schedule must
	// meet (ipu-stack's hardware-derived rule), so 0 means DefaultGuard;
	// NoGuard (-1) drops the rule, which our emulator does not enforce.
	Guard int
	// Logger receives one line per phase (default slog.Default()).
	Logger *slog.Logger
	// Passes is how many priority orders the scheduler tries, keeping
	// the shortest schedule (default 4; 1 is fastest).
	Passes int
	// Improve is how many times the scheduler re-places the phase with
	// the transfers of the tile that ends last moved to the front of the
	// order (default 8; negative: none).
	Improve int
}

// latencySlack: a gap this small is pure fabric latency (a phase with no
// endpoint conflict can end this late: 1 + max ttm + 52 + 2*22 events), so
// re-placing is not tried.
const latencySlack = 1 + target.MaxTimeToMux + target.PayloadLatency + 2*(target.PhysicalRows-1)

// Program returns the program of tile, or nil when tile does not take
// part in the phase.
func (s *Schedule) Program(tile int) *Program {
	i, ok := slices.BinarySearchFunc(s.Tiles, tile, func(p Program, t int) int { return p.Tile - t })
	if !ok {
		return nil
	}
	return &s.Tiles[i]
}

// Assembly returns tile's row as text, one instruction per line, with the
// events each instruction covers.
func (s *Schedule) Assembly(tile int) string {
	p := s.Program(tile)
	if p == nil {
		return ""
	}
	var b strings.Builder
	ev := 0
	for i := 0; i < len(p.Words); {
		d, err := isa.DecodeIn(isa.Supervisor, p.Words[i:])
		if err != nil {
			fmt.Fprintf(&b, "%08x\t; %v\n", p.Words[i], err)
			i++
			continue
		}
		n := 1
		if len(d.Values) > 0 {
			n = int(d.Values[0])
		}
		ws := make([]string, len(d.Words))
		for k, w := range d.Words {
			ws[k] = fmt.Sprintf("%08x", w)
		}
		fmt.Fprintf(&b, "%-18s %-44s ; events %d..%d\n", strings.Join(ws, " "), isa.Format(d), ev+1, ev+n)
		ev += n
		i += len(d.Words)
	}
	return b.String()
}

// Build schedules a phase and emits every participating tile's row.
func Build(p Phase, opt Options) (*Schedule, error) {
	t0 := time.Now()
	if err := checkPhase(&p); err != nil {
		return nil, fmt.Errorf("exchange phase %d: %w", p.ID, err)
	}
	switch {
	case opt.Guard == 0:
		opt.Guard = DefaultGuard
	case opt.Guard == NoGuard:
		opt.Guard = 0
	case opt.Guard < 0:
		return nil, fmt.Errorf("exchange phase %d: negative guard %d", p.ID, opt.Guard)
	}
	passes := opt.Passes
	if passes <= 0 {
		passes = 4
	}
	pr := newProblem(&p)
	var best *placement
	var bestOrder []int
	for pass := 0; pass < passes; pass++ {
		order, err := pr.order(pass)
		if err != nil {
			return nil, fmt.Errorf("exchange phase %d: %w", p.ID, err)
		}
		pl := pr.place(order, opt.Guard)
		if best == nil || pl.horizon < best.horizon {
			best, bestOrder = pl, order
		}
	}
	improve := opt.Improve
	if improve == 0 {
		improve = 8
	}
	improvements := 0
	for it := 0; it < improve && best.horizon > pr.lowerBound+latencySlack; it++ {
		order, err := pr.promote(bestOrder, best)
		if err != nil {
			break
		}
		pl := pr.place(order, opt.Guard)
		if pl.horizon < best.horizon {
			best, bestOrder = pl, order
			improvements++
		} else {
			bestOrder = order // keep exploring from the promoted order
		}
	}
	s := &Schedule{Phase: p, LowerBound: pr.lowerBound, Guard: opt.Guard}
	progs, err := emitAll(pr, best)
	if err != nil {
		return nil, fmt.Errorf("exchange phase %d: %w", p.ID, err)
	}
	s.Tiles = progs
	for i := range progs {
		s.Horizon = max(s.Horizon, progs[i].Events)
	}
	lg := opt.Logger
	if lg == nil {
		lg = slog.Default()
	}
	dests := 0
	for _, t := range p.Transfers {
		dests += len(t.Dsts)
	}
	lg.Info("optimized physical exchange schedule",
		"phase", p.ID, "transfers", len(p.Transfers), "destinations", dests,
		"tiles", len(progs), "endpoint_lower_bound", s.LowerBound,
		"selected_horizon", s.Horizon, "lower_bound_gap", s.Horizon-s.LowerBound,
		"passes", passes, "improvements", improvements, "elapsed_ms", time.Since(t0).Milliseconds())
	return s, nil
}

// checkPhase rejects transfers the scheduler cannot place: bad tiles,
// misaligned or out-of-SRAM ranges, a source among its own destinations,
// a tile twice in one transfer, and destination ranges that overlap on a
// tile (their final contents would depend on the schedule).
func checkPhase(p *Phase) error {
	type rng struct {
		lo, hi uint32
		x      int
	}
	dsts := map[int][]rng{}
	for i, t := range p.Transfers {
		if !target.ValidPhysical(t.Src) {
			return fmt.Errorf("transfer %d: source %d is not a physical tile", i, t.Src)
		}
		if t.Words <= 0 {
			return fmt.Errorf("transfer %d: %d words", i, t.Words)
		}
		if len(t.Dsts) == 0 {
			return fmt.Errorf("transfer %d: no destination", i)
		}
		bytes := uint32(4 * t.Words)
		if t.SrcAddr%4 != 0 || !target.InSRAM(t.SrcAddr, bytes) || t.Words > 1<<20 {
			return fmt.Errorf("transfer %d: source range 0x%x + %d words misaligned or outside SRAM", i, t.SrcAddr, t.Words)
		}
		seen := map[int]bool{}
		for _, d := range t.Dsts {
			if !target.ValidPhysical(d.Tile) {
				return fmt.Errorf("transfer %d: destination %d is not a physical tile", i, d.Tile)
			}
			if d.Tile == t.Src {
				return fmt.Errorf("transfer %d: tile %d sends to itself (loopback is not supported)", i, d.Tile)
			}
			if seen[d.Tile] {
				return fmt.Errorf("transfer %d: tile %d is a destination twice", i, d.Tile)
			}
			seen[d.Tile] = true
			if d.Addr%4 != 0 || !target.InSRAM(d.Addr, bytes) {
				return fmt.Errorf("transfer %d: destination 0x%x on tile %d misaligned or outside SRAM", i, d.Addr, d.Tile)
			}
			dsts[d.Tile] = append(dsts[d.Tile], rng{d.Addr, d.Addr + bytes, i})
		}
	}
	tiles := make([]int, 0, len(dsts))
	for t := range dsts {
		tiles = append(tiles, t)
	}
	slices.Sort(tiles)
	for _, tile := range tiles {
		rs := dsts[tile]
		slices.SortFunc(rs, func(a, b rng) int { return int(a.lo) - int(b.lo) })
		for i := 1; i < len(rs); i++ {
			if rs[i].lo < rs[i-1].hi {
				return fmt.Errorf("transfers %d and %d write overlapping ranges on tile %d", rs[i-1].x, rs[i].x, tile)
			}
		}
	}
	return nil
}
