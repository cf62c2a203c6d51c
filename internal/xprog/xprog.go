// Package xprog generates the tile programs ("rows") of one exchange phase:
// given point-to-point and multicast transfers of 32-bit words between
// tiles, it produces for every tile the timed sequence of exchange
// instructions (delay, send, sendoff, delayxpic, delaypic) that performs
// them on the IPU21 time-deterministic exchange, under the rules the chip
// emulator checks (docs/machine.md, "The chip: syncs and exchange").
//
// It aims at correctness, not speed: transfers are placed greedily in
// sweeps, each sweep taking transfers whose tiles are all still unused in
// that sweep, and each placed as early as its own tiles allow; a tile does
// one transfer at a time (its send and its receives never overlap). The
// compiler's optimising scheduler replaces it; this package is the small
// reference that diagnostics and tests rely on. The placement rules are
// those of the emulator's randomized fabric test (device/emu/fabric_test.go),
// which checks them word by word.
//
// Using a Program: every tile of the phase must start its row in the same
// cycle relative to a chip-wide sync (e.g. `sync 3` followed by the same
// instructions on every tile, then the row), with no worker running (a
// running worker takes issue slots and shifts the row's timing), and must
// issue a non-exchange instruction after the row (that ends the tile's
// exchange segment). Keep instruction fetch (region 0 code), send buffers
// and receive buffers in different memory elements (ipu21.Element): an
// instruction fetch, a send's read and an incoming write may not use one
// element in one cycle.
package xprog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/isa"
)

// Dest is one receiver of a transfer: the words land at Addr on Tile.
type Dest struct {
	Tile int    // physical id
	Addr uint32 // byte address, 4-byte aligned
}

// Transfer sends Words 32-bit words from Addr on tile Src to every Dest
// (more than one: multicast, which costs the sender nothing extra).
type Transfer struct {
	Src   int    // physical id
	Addr  uint32 // byte address, 4-byte aligned
	Words int
	Dests []Dest
}

// Inst is one instruction of a row: an isa row ID and its operand values in
// the row's order (as isa.Inst.Encode takes them).
type Inst struct {
	ID     string
	Values []int64
}

// Encode gives the instruction's words.
func (in Inst) Encode() ([]uint32, error) {
	row := isa.ByID(in.ID)
	if row == nil {
		return nil, fmt.Errorf("xprog: no isa row %q", in.ID)
	}
	return row.Encode(in.Values, false)
}

// String is the instruction as assembly text that assembles back to the
// same words (isa.Format of the decoded words).
func (in Inst) String() string {
	w, err := in.Encode()
	if err != nil {
		return fmt.Sprintf("<%s %v: %v>", in.ID, in.Values, err)
	}
	d, err := isa.DecodeIn(isa.Supervisor, w)
	if err != nil {
		return fmt.Sprintf("<%s %v: %v>", in.ID, in.Values, err)
	}
	return isa.Format(d)
}

// Program is the exchange rows of one phase.
type Program struct {
	// Horizon is the number of exchange events every row lasts, counted
	// from the row's first instruction: all rows end together.
	Horizon int64
	// Rows holds each tile's row by physical id.
	Rows map[int][]Inst
}

// Tiles returns the tiles with a row, in increasing order.
func (p *Program) Tiles() []int {
	ts := make([]int, 0, len(p.Rows))
	for t := range p.Rows {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// Words gives tile's row as instruction words (nil for a tile without a row).
func (p *Program) Words(tile int) ([]uint32, error) {
	var out []uint32
	for _, in := range p.Rows[tile] {
		w, err := in.Encode()
		if err != nil {
			return nil, fmt.Errorf("xprog: tile %d: %w", tile, err)
		}
		out = append(out, w...)
	}
	return out, nil
}

// Assembly gives tile's row as assembly text, one instruction per line,
// each line indented by a tab.
func (p *Program) Assembly(tile int) string {
	var b strings.Builder
	for _, in := range p.Rows[tile] {
		b.WriteString("\t")
		b.WriteString(in.String())
		b.WriteString("\n")
	}
	return b.String()
}

// Options tune Generate.
type Options struct {
	// Tiles also get a row (only delays to the horizon) when they take no
	// part in a transfer, so that every tile leaves the phase together.
	Tiles []int
}

// Limits of the instruction fields the rows use (docs/isa.md).
const (
	maxDelay     = 1 << 19 // delay events
	maxXpicDelay = 4096    // delayxpic events
	maxPicDelay  = 128     // delaypic events
	maxSendFirst = 64      // send items
	maxSendOff   = 4096    // sendoff items
	// slack is added past the last event any transfer needs, so the last
	// incoming write lands well before the tile leaves its segment.
	slack = 8
)

// act is one timed action of a tile's row.
type act struct {
	at   int64 // send: issue timeline; control: its event
	send bool
	n    int64 // send items
	addr uint32
	sctl int64
	id   string // "delayxpic" or "delaypic"
	val  int64
}

// key orders a tile's actions: a control at event e needs its own
// instruction issued at e-1 at the latest, so it sorts just before a send
// issued at e.
func (a act) key() int64 {
	if a.send {
		return 2 * a.at
	}
	return 2*(a.at-1) + 1
}

// Generate schedules the transfers of one phase and returns every tile's
// row. It checks the transfers first and reports every problem it finds.
func Generate(ts []Transfer, opts Options) (*Program, error) {
	if err := check(ts, opts); err != nil {
		return nil, err
	}
	acts := map[int][]act{}
	for _, t := range opts.Tiles {
		acts[t] = acts[t][:0:0]
	}
	free := map[int]int64{} // first event a tile is free from (default 1)
	freeAt := func(t int) int64 { return max(1, free[t]) }
	var horizon int64 = 1

	remaining := make([]int, len(ts))
	for i := range remaining {
		remaining[i] = i
	}
	for len(remaining) > 0 {
		used := map[int]bool{}
		var next []int
		for _, i := range remaining {
			x := &ts[i]
			clash := used[x.Src]
			for _, d := range x.Dests {
				clash = clash || used[d.Tile]
			}
			if clash {
				next = append(next, i)
				continue
			}
			used[x.Src] = true
			for _, d := range x.Dests {
				used[d.Tile] = true
			}
			end := place(x, acts, freeAt)
			free[x.Src] = end + 2
			for _, d := range x.Dests {
				free[d.Tile] = end + 2
			}
			horizon = max(horizon, end+2)
		}
		remaining = next
	}
	p := &Program{Horizon: horizon + slack, Rows: map[int][]Inst{}}
	for t, as := range acts {
		row, err := buildRow(as, p.Horizon)
		if err != nil {
			return nil, fmt.Errorf("xprog: tile %d: %w", t, err)
		}
		p.Rows[t] = row
	}
	return p, nil
}

// place puts one transfer as early as its tiles allow and returns the last
// event it needs.
func place(x *Transfer, acts map[int][]act, free func(int) int64) int64 {
	ts := free(x.Src)
	for _, d := range x.Dests {
		ts = max(ts, free(d.Tile)-int64(ipu21.TimeToMux(x.Src, d.Tile)))
	}
	sctl := int64(ipu21.SendBoth)
	if len(x.Dests) == 1 {
		sctl = int64(ipu21.SendDirection(x.Src, x.Dests[0].Tile))
	}
	n := int64(x.Words)
	acts[x.Src] = append(acts[x.Src], act{at: ts, send: true, n: n, addr: x.Addr, sctl: sctl})
	end := ts + n
	for _, d := range x.Dests {
		// The receiver's source window opens at a; its first word is
		// written PayloadLatency + 2*row later, where the pointer must be.
		a := ts + int64(ipu21.TimeToMux(x.Src, d.Tile)) + 1
		lat := int64(ipu21.PayloadLatency + 2*ipu21.Row(d.Tile))
		pe := a + lat
		if n == lat {
			pe-- // the window's close would fall on the pointer's event
		}
		ne := a + n
		if ne == pe {
			ne++
		}
		acts[d.Tile] = append(acts[d.Tile],
			act{at: a, id: "delayxpic", val: int64(x.Src)},
			act{at: ne, id: "delayxpic", val: ipu21.MuxNeutral},
			act{at: pe, id: "delaypic", val: int64(d.Addr >> 2)})
		end = max(end, ne, a+lat+n)
	}
	return end
}

// delays appends delay instructions covering g events.
func delays(row []Inst, g int64) []Inst {
	for g > 0 {
		k := min(g, maxDelay)
		row = append(row, Inst{ID: "delay", Values: []int64{k}})
		g -= k
	}
	return row
}

// buildRow turns a tile's timed actions into its row, ending at event h.
func buildRow(acts []act, h int64) ([]Inst, error) {
	slices.SortStableFunc(acts, func(a, b act) int { return cmp.Compare(a.key(), b.key()) })
	var row []Inst
	cur := int64(0)
	for _, a := range acts {
		if a.send {
			if a.at < cur {
				return nil, fmt.Errorf("send at event %d, row already at %d", a.at, cur)
			}
			row = delays(row, a.at-cur)
			first := min(a.n, maxSendFirst)
			row = append(row, Inst{ID: "send", Values: []int64{first, int64(a.addr), a.sctl}})
			for rest := a.n - first; rest > 0; {
				k := min(rest, maxSendOff)
				row = append(row, Inst{ID: "sendoff", Values: []int64{k, 0, a.sctl}})
				rest -= k
			}
			cur = a.at + a.n
			continue
		}
		n := a.at - cur
		if n < 1 {
			return nil, fmt.Errorf("control at event %d, row already at %d", a.at, cur)
		}
		lim := int64(maxXpicDelay)
		if a.id == "delaypic" {
			lim = maxPicDelay
		}
		if n > lim {
			row = delays(row, n-lim)
			n = lim
		}
		row = append(row, Inst{ID: a.id, Values: []int64{n, 0, a.val}})
		cur = a.at
	}
	if h <= cur {
		return nil, fmt.Errorf("horizon %d is not past the row's end %d", h, cur)
	}
	return delays(row, h-cur), nil
}

// check reports every problem with the transfers.
func check(ts []Transfer, opts Options) error {
	var errs []error
	tile := func(where string, t int) {
		if !ipu21.ValidPhysical(t) {
			errs = append(errs, fmt.Errorf("%s: %d is not a physical tile id (0..%d)", where, t, ipu21.Tiles-1))
		}
	}
	span := func(where string, addr uint32, words int) {
		end := uint64(addr) + 4*uint64(max(words, 0))
		if addr%4 != 0 || addr < ipu21.SRAMBase || end > ipu21.SRAMEnd {
			errs = append(errs, fmt.Errorf("%s: [%#x,%#x) is not 4-byte aligned inside SRAM [%#x,%#x)",
				where, addr, end, ipu21.SRAMBase, ipu21.SRAMEnd))
		}
	}
	for i, t := range opts.Tiles {
		tile(fmt.Sprintf("xprog: options tile %d", i), t)
	}
	for i, x := range ts {
		where := fmt.Sprintf("xprog: transfer %d (tile %d -> %d receivers)", i, x.Src, len(x.Dests))
		tile(where+" source", x.Src)
		if x.Words < 1 {
			errs = append(errs, fmt.Errorf("%s: %d words", where, x.Words))
		}
		span(where+" source", x.Addr, x.Words)
		if len(x.Dests) == 0 {
			errs = append(errs, fmt.Errorf("%s: no receivers", where))
		}
		seen := map[int]bool{}
		for j, d := range x.Dests {
			dw := fmt.Sprintf("%s receiver %d", where, j)
			tile(dw, d.Tile)
			span(dw, d.Addr, x.Words)
			switch {
			case d.Tile == x.Src:
				errs = append(errs, fmt.Errorf("%s: tile %d sends to itself (use a local copy)", dw, d.Tile))
			case seen[d.Tile]:
				errs = append(errs, fmt.Errorf("%s: tile %d is listed twice", dw, d.Tile))
			}
			seen[d.Tile] = true
		}
	}
	if len(errs) > 20 {
		errs = append(errs[:20], fmt.Errorf("... and %d more problems", len(errs)-20))
	}
	return errors.Join(errs...)
}
