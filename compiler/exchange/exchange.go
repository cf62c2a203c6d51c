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
// Paired 64-bit transfers (docs/machine.md, IPU21.md): a send with
// SendPaired puts one 8-byte item per event on the sender's stream and
// borrows its partner tile's outgoing lane meanwhile; the item reaches the
// receiving pair's shared 64-bit source at u = e + PairedTimeToMux(s, d) - 1
// and is written one cycle later than a word would be, 8 bytes, to both
// tiles of the pair, whose INCOMING_FORMAT must say 64-bit items in the
// item's stage cycle (u + 51 + 2*row). A transfer (or the part of a
// multicast that goes to whole receiving pairs at one address) can go this
// way when it has at least 64 items and 8-byte aligned addresses: half the
// events at the sender and at every receiver, at the price of the
// partner's lane. Transfer.Paired asks for it; Options.Paired = PairedAuto
// lets Build choose per transfer and keep the shorter schedule.
//
// How Build schedules (sched.go, colour.go, split.go). Every assignment
// of the transfers to sends (ordinary, and the paired ones) is placed by a
// greedy list scheduler in several priority orders (problem.order), the
// orders placed in parallel and the shortest kept:
//
//   - endpoint-critical transfers first (those whose tiles carry the
//     endpoint lower bound), by criticality and length in three variants;
//   - the rounds of an optimal edge colouring of the point-to-point
//     traffic (König: as many rounds as the busiest tile has transfers,
//     each round a matching of senders to receivers), the open-shop
//     construction that keeps every tile's stream and mux busy in
//     all-to-all phases such as the compiler's reduce-scatter;
//   - the rounds of a greedy colouring that groups multicasts;
//   - when paired sends go to single receiving pairs, the rounds of the
//     same König colouring one level up, over tile pairs (pairColours: a
//     paired send holds both tiles of its sending and of its receiving
//     pair).
//
// Then a bounded local search re-places the phase with the transfers of
// the tile that ends last (the critical path) moved to the front
// (Options.Improve), until the schedule meets TargetHorizon. A phase that
// still misses it is scheduled again with multicasts split into several
// sends where their senders have events to spare, and with every send cut
// into chunks, so that busy receivers need not be free all at once
// (Options.NoSplit); with paired multicasts, also with those split by
// receiving pair (an all-gather among the pairs of a grid row meets the
// target only so: TestAllGatherSnapshot); the shortest schedule that
// encodes is kept.
//
// Quality target (issue 6): Horizon <= TargetHorizon(LowerBound) = 1.05 x
// the endpoint lower bound + 200 events of latency allowance. The
// compiler's phases meet it (the siglip-mlp-f16 reduce-scatter, 77,274
// transfers on 1458 tiles: 15,494 events against a bound of 15,264;
// rs_test.go). Random multicast phases in general cannot reach the
// endpoint bound (TestRandomGap explains why); TestMulticastGapDistribution
// logs how far they are.
package exchange

import (
	"fmt"
	"hash/fnv"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/isa"
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
	// Paired sends the transfer as Words/2 64-bit items (see the package
	// comment). It needs an even Words of at least 2*MinPairedItems,
	// 8-byte aligned addresses, and destinations that are whole receiving
	// pairs (tiles d and d^2) writing at one address per pair; Build
	// rejects the phase otherwise.
	Paired bool
}

// MinPairedItems is the smallest paired transfer: 64 items of 8 bytes
// (IPU21.md: "at least 64 items").
const MinPairedItems = 64

// PairedMode says which transfers Build may send as paired 64-bit items.
type PairedMode int

const (
	// PairedOff: only transfers with Transfer.Paired set (the default).
	PairedOff PairedMode = iota
	// PairedAuto: Build also considers every transfer that qualifies, in
	// whole or for the destinations that form whole receiving pairs (the
	// rest of a multicast then goes as words), schedules the phase with
	// and without them and keeps the shorter schedule (ties: ordinary).
	PairedAuto
)

// Comparison records Build's choice between an ordinary and a paired
// schedule of a phase (Options.Paired = PairedAuto).
type Comparison struct {
	// Candidates is the number of transfers that could go paired.
	Candidates int
	// OrdinaryHorizon and PairedHorizon are the two schedules' horizons
	// (PairedHorizon: the best of the paired assignments tried).
	OrdinaryHorizon, PairedHorizon int
	// OrdinaryBound and PairedBound are their endpoint lower bounds.
	OrdinaryBound, PairedBound int
	UsePaired                  bool
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
	// max(items sent, items received), where a tile's sent items include
	// the paired items its partner sends (the partner reservation) and an
	// item is a word, or an 8-byte paired item. Every tile sends and
	// receives at most one item per event, so no schedule sending the
	// same transfers the same way is shorter. Without paired transfers it
	// is max(words sent, words received).
	LowerBound int
	// Tiles holds one program per participating tile, in tile order.
	Tiles []Program
	// Guard is Options.Guard as used (Validate checks it).
	Guard int
	// PairedSends is the number of 64-bit sends in the schedule: paired
	// transfers, and the paired parts of multicasts.
	PairedSends int
	// SplitSends is the number of sends added by sending multicasts more
	// than once and transfers in chunks (Options.NoSplit).
	SplitSends int
	// Compared is set when Build compared ordinary and paired schedules
	// (before any multicast split).
	Compared *Comparison

	uses []Use // Windows
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
	// the shortest schedule (default 5, see problem.order; 1 is fastest).
	// With 4 or more, an assignment with paired sends to single receiving
	// pairs is also placed in pair-level rounds (problem.pairOrder).
	// Orders equal to an earlier pass's are not placed again; the others
	// are placed GOMAXPROCS at a time (the result does not depend on it).
	Passes int
	// Improve is how many times the scheduler re-places the phase with
	// the transfers of the tile that ends last moved to the front of the
	// order (default 8; negative: none).
	Improve int
	// Paired: which transfers may go as paired 64-bit items (default
	// PairedOff: those that ask for it).
	Paired PairedMode
	// NoSplit sends every transfer (every paired and ordinary part of it)
	// in one send. By default, when the best schedule misses
	// TargetHorizon, Build also schedules the phase with multicasts split
	// into several sends where their senders have events to spare
	// (splitMulticasts: the endpoint bound does not rise), and that again
	// with every ordinary send cut into chunks of at most chunkWords (32) words
	// (chunkParts: pieces fit into holes the whole could not), and keeps
	// the shortest schedule. Splitting and chunking cost row code (one
	// send and its receive controls per piece), not events.
	NoSplit bool
}

// TargetHorizon is the quality target (issue 6) of a phase with endpoint
// lower bound bound: 1.05 x bound plus a fixed latency allowance of 200
// events, which covers the route and payload latency of a phase's last
// transfer (at most 165 events over every tile pair, ordinary or paired:
// TestLatencyAllowance). Build stops re-placing (Options.Improve) once a
// schedule meets it.
func TargetHorizon(bound int) int { return bound + bound/20 + 200 }

// chunkWords is the largest piece chunkParts leaves (32 did best on random
// multicast phases, against 64 to 256), unless that makes more than
// maxChunkParts parts (a bound on Build's time: a 1472-tile random
// multicast phase would have 150k pieces of 32 words).
const (
	chunkWords    = 32
	maxChunkParts = 1 << 16
)

// chunkSize is the chunk size for parts: chunkWords, or larger so that
// there are at most about maxChunkParts pieces.
func chunkSize(p *Phase, parts []part) int {
	words := 0
	for _, pt := range parts {
		if !pt.paired {
			words += p.Transfers[pt.orig].Words
		}
	}
	return max(chunkWords, (words+maxChunkParts-1)/maxChunkParts)
}

// latencySlack: a gap this small is pure fabric latency (a phase with no
// endpoint conflict can end this late: 1 + max ttm + 52 + 2*22 events), so
// re-placing is not tried.
const latencySlack = 1 + ipu21.MaxTimeToMux + ipu21.PayloadLatency + 2*(ipu21.PhysicalRows-1)

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
	if opt.Passes <= 0 {
		opt.Passes = 5
	}
	if opt.Improve == 0 {
		opt.Improve = 8
	}
	lg := opt.Logger
	if lg == nil {
		lg = slog.Default()
	}
	cands := [][]part{ordinaryParts(&p)}
	ncand := 0
	if opt.Paired == PairedAuto {
		var extra [][]part
		extra, ncand = pairedAssignments(&p)
		cands = append(cands, extra...)
	}
	res := make([]*attempt, len(cands))
	errs := make([]error, len(cands))
	var wg sync.WaitGroup
	for k := range cands {
		wg.Go(func() { res[k], errs[k] = schedule(&p, cands[k], opt) })
	}
	wg.Wait()
	best := 0
	for k := range res {
		if errs[k] != nil {
			return nil, fmt.Errorf("exchange phase %d: %w", p.ID, errs[k])
		}
		if res[k].pl.horizon < res[best].pl.horizon {
			best = k
		}
	}
	var cmpr *Comparison
	if len(res) > 1 {
		pb := 1
		for k := 2; k < len(res); k++ {
			if res[k].pl.horizon < res[pb].pl.horizon {
				pb = k
			}
		}
		cmpr = &Comparison{Candidates: ncand,
			OrdinaryHorizon: res[0].pl.horizon, PairedHorizon: res[pb].pl.horizon,
			OrdinaryBound: res[0].pr.lowerBound, PairedBound: res[pb].pr.lowerBound,
			UsePaired: best != 0}
		lg.Info("compared ordinary and paired exchange schedules",
			"phase", p.ID, "candidates", ncand, "ordinary_horizon", cmpr.OrdinaryHorizon,
			"paired_horizon", cmpr.PairedHorizon, "use_paired", cmpr.UsePaired)
	}
	// Schedules to emit, shortest first; the unsplit best comes last.
	type choice struct {
		a      *attempt
		splits int
	}
	choices := []choice{{res[best], 0}}
	if r := res[best]; !opt.NoSplit && r.pl.horizon > TargetHorizon(r.pr.lowerBound) {
		// Second round: multicasts split, and everything in chunks.
		base := cands[best]
		var more [][]part
		if sp := splitMulticasts(&p, base, false); sp != nil {
			more = append(more, sp)
			base = sp
		}
		if cp := chunkParts(&p, base, chunkSize(&p, base)); len(cp) > len(base) {
			more = append(more, cp)
		}
		// And with paired multicasts split per receiving pair too (where
		// the sender's and its partner's lanes have events to spare): a
		// paired multicast must find every receiving pair free at once, so
		// in an all-gather among pairs the pairs take turns and the
		// partner's words transfer fits nowhere; sent pair by pair, the
		// rounds of problem.pairOrder pack them. Tried besides the
		// ordinary split, not instead of it: it spends the spare events of
		// senders and partners on paired sends, where the ordinary split
		// may have put them to better use (in place of it, it lost on
		// random paired phases about as often as it won).
		if sp := splitMulticasts(&p, cands[best], true); sp != nil && !slices.EqualFunc(sp, base, samePart) {
			more = append(more, sp)
			if cp := chunkParts(&p, sp, chunkSize(&p, sp)); len(cp) > len(sp) {
				more = append(more, cp)
			}
		}
		rs := make([]*attempt, len(more))
		errs := make([]error, len(more))
		for k := range more {
			wg.Go(func() { rs[k], errs[k] = schedule(&p, more[k], opt) })
		}
		wg.Wait()
		var better []choice
		for k := range more {
			if errs[k] != nil {
				return nil, fmt.Errorf("exchange phase %d: %w", p.ID, errs[k])
			}
			if rs[k].pl.horizon < r.pl.horizon {
				better = append(better, choice{rs[k], len(more[k]) - len(cands[best])})
			}
		}
		slices.SortStableFunc(better, func(x, y choice) int { return x.a.pl.horizon - y.a.pl.horizon })
		choices = append(better, choices...)
	}
	// Pieces packed densely can leave a row no way to align a sendpicp
	// (encode.go): then the next choice is emitted.
	var (
		r      *attempt
		splits int
		progs  []Program
		err    error
	)
	// The first choice's windows are listed while its rows are emitted
	// (again for another choice, should the rows fail).
	first := choices[0].a
	var firstUses []Use
	wg.Go(func() { firstUses = uses(first.pr, first.pl) })
	for _, c := range choices {
		r, splits = c.a, c.splits
		if progs, err = emitAll(r.pr, r.pl); err == nil {
			break
		}
	}
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("exchange phase %d: %w", p.ID, err)
	}
	s := &Schedule{Phase: p, LowerBound: r.pr.lowerBound, Guard: r.guard, PairedSends: r.pr.paired, SplitSends: splits, Compared: cmpr}
	s.Tiles = progs
	if s.uses = firstUses; r != first {
		s.uses = uses(r.pr, r.pl)
	}
	for i := range progs {
		s.Horizon = max(s.Horizon, progs[i].Events)
	}
	dests := 0
	for _, t := range p.Transfers {
		dests += len(t.Dsts)
	}
	lg.Info("optimized physical exchange schedule",
		"phase", p.ID, "transfers", len(p.Transfers), "destinations", dests,
		"tiles", len(progs), "endpoint_lower_bound", s.LowerBound,
		"selected_horizon", s.Horizon, "lower_bound_gap", s.Horizon-s.LowerBound,
		"paired_sends", s.PairedSends, "split_sends", s.SplitSends,
		"passes", opt.Passes, "improvements", r.improvements, "elapsed_ms", time.Since(t0).Milliseconds())
	return s, nil
}

// attempt is one scheduled assignment of a phase's transfers.
type attempt struct {
	pr           *problem
	pl           *placement
	guard        int
	improvements int
}

// schedule places one assignment: several priority orders, then re-placing
// with the critical tile's transfers promoted.
func schedule(p *Phase, parts []part, opt Options) (*attempt, error) {
	pr := newProblem(p, parts)
	a := &attempt{pr: pr, guard: opt.Guard}
	if pr.paired > 0 && a.guard == 0 {
		// A control on a send's first event needs a sendpicp whose second
		// control is a no-op (encode.go); with paired receives around no
		// such no-op is safe, so keep controls off first events.
		a.guard = 1
	}
	// The passes' orders, placed GOMAXPROCS at a time (an order equal to
	// an earlier pass's, by hash, is not placed again); the first
	// shortest wins, so the result does not depend on timing.
	var bestOrder []int
	seen := map[uint64]bool{}
	batch := max(1, runtime.GOMAXPROCS(0))
	// Pass 3 (König's rounds of tiles) comes with König's rounds of
	// pairs when paired sends go pair to pair (problem.pairOrder); it is
	// placed after the last pass, so ties keep the passes' schedule.
	extra := 0
	var pairOrd []int
	if opt.Passes > 3 {
		o, ok, err := pr.pairOrder()
		if err != nil {
			return nil, err
		}
		if ok {
			pairOrd, extra = o, 1
		}
	}
	for p0 := 0; p0 < opt.Passes+extra; p0 += batch {
		var orders [][]int
		for pass := p0; pass < min(p0+batch, opt.Passes+extra); pass++ {
			order := pairOrd
			if pass < opt.Passes {
				var err error
				if order, err = pr.order(pass); err != nil {
					return nil, err
				}
			}
			if h := hashOrder(order); !seen[h] {
				seen[h] = true
				orders = append(orders, order)
			}
		}
		pls := make([]*placement, len(orders))
		var wg sync.WaitGroup
		for k := range orders {
			wg.Go(func() { pls[k] = pr.place(orders[k], a.guard) })
		}
		wg.Wait()
		for k, pl := range pls {
			if a.pl == nil || pl.horizon < a.pl.horizon {
				a.pl, bestOrder = pl, orders[k]
			}
		}
	}
	for it := 0; it < opt.Improve && a.pl.horizon > max(pr.lowerBound+latencySlack, TargetHorizon(pr.lowerBound)); it++ {
		order, err := pr.promote(bestOrder, a.pl)
		if err != nil {
			break
		}
		pl := pr.place(order, a.guard)
		if pl.horizon < a.pl.horizon {
			a.pl, bestOrder = pl, order
			a.improvements++
		} else {
			bestOrder = order // keep exploring from the promoted order
		}
	}
	return a, nil
}

// hashOrder identifies an order (FNV-1a: deterministic; a collision would
// only skip a pass).
func hashOrder(o []int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, v := range o {
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		h.Write(b[:])
	}
	return h.Sum64()
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
		if !ipu21.ValidPhysical(t.Src) {
			return fmt.Errorf("transfer %d: source %d is not a physical tile", i, t.Src)
		}
		if t.Words <= 0 {
			return fmt.Errorf("transfer %d: %d words", i, t.Words)
		}
		if len(t.Dsts) == 0 {
			return fmt.Errorf("transfer %d: no destination", i)
		}
		bytes := uint32(4 * t.Words)
		if t.SrcAddr%4 != 0 || !ipu21.InSRAM(t.SrcAddr, bytes) || t.Words > 1<<20 {
			return fmt.Errorf("transfer %d: source range 0x%x + %d words misaligned or outside SRAM", i, t.SrcAddr, t.Words)
		}
		if t.Paired {
			if err := checkPaired(i, &t); err != nil {
				return err
			}
		}
		seen := map[int]bool{}
		for _, d := range t.Dsts {
			if !ipu21.ValidPhysical(d.Tile) {
				return fmt.Errorf("transfer %d: destination %d is not a physical tile", i, d.Tile)
			}
			if d.Tile == t.Src {
				return fmt.Errorf("transfer %d: tile %d sends to itself (loopback is not supported)", i, d.Tile)
			}
			if seen[d.Tile] {
				return fmt.Errorf("transfer %d: tile %d is a destination twice", i, d.Tile)
			}
			seen[d.Tile] = true
			if d.Addr%4 != 0 || !ipu21.InSRAM(d.Addr, bytes) {
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
