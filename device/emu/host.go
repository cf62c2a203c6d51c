package emu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// The host link: how the host reaches the tiles of a Chip (docs/machine.md,
// "The host link").
//
// Every host/device rendezvous is a handshake on host sync zone HostZone:
// the tiles' runtime code issues `sync 7`, the chip stops once every
// active tile waits there (Chip.Run returns ChipHost), the host moves its
// bytes while the tiles wait, and the next Chip.Run releases them. Host to
// tile bytes travel as packets of at most ipu21.HostPacketInBytes bytes,
// each landing at a 32-byte aligned address in the tile's host write
// window [ipu21.HostApertureBase, ipu21.HostWriteEnd); tile to host bytes
// travel as packets of at most ipu21.HostPacketOutBytes bytes read from
// anywhere in tile SRAM (a tile sends its packets from its own memory).

// HostZone is the sync zone of every host handshake. ipu-stack's runtime
// synchronises with the host on `sync 7`; the chip treats zones 4..15 as
// host zones, and the host link uses this one only, so a tile waiting at
// another host zone is reported rather than taken for a handshake.
const HostZone = 7

// HostCommandAddress is where a call's command handshake writes the call's
// command word (4 bytes, little-endian) on every tile of the package: the
// first word of the host write window.
const HostCommandAddress = ipu21.HostApertureBase

// HostStats counts what the host link moved.
type HostStats struct {
	Handshakes int    // host syncs released
	PacketsIn  int    // host -> tile packets
	BytesIn    uint64 // host -> tile bytes
	PacketsOut int    // tile -> host packets
	BytesOut   uint64 // tile -> host bytes
}

// HostLink is the host's side of a chip: packet transfers into and out of
// tiles, and handshakes on HostZone.
type HostLink struct {
	Chip *Chip
	// MaxCycles bounds one Wait: a chip that has not reached the next host
	// sync this many cycles after the wait began is reported as hung.
	// Default 1<<34 (about 11 s of device time).
	MaxCycles uint64
	// Stats accumulates over the link's life.
	Stats HostStats
}

// ErrEnded reports that every tile went idle: the application ended
// instead of reaching a host sync.
var ErrEnded = errors.New("the application ended: every tile is idle")

// Write sends data to tile at addr as host -> tile packets: addr must be
// 32-byte aligned and [addr, addr+len(data)) inside the host write window.
// Each packet starts 32-byte aligned because every full packet is a
// multiple of 32 bytes.
func (h *HostLink) Write(tile int, addr uint32, data []byte) error {
	t := h.Chip.Tile(tile)
	if t == nil {
		return fmt.Errorf("host link: no tile %d on the chip", tile)
	}
	end := uint64(addr) + uint64(len(data))
	if addr%ipu21.HostWriteAlign != 0 || addr < ipu21.HostApertureBase || end > ipu21.HostWriteEnd {
		return fmt.Errorf("host link: write of %d bytes to tile %d at %#x: host writes must start %d-byte aligned inside [%#x,%#x)",
			len(data), tile, addr, ipu21.HostWriteAlign, ipu21.HostApertureBase, ipu21.HostWriteEnd)
	}
	for off := 0; off < len(data); off += ipu21.HostPacketInBytes {
		n := min(ipu21.HostPacketInBytes, len(data)-off)
		if err := t.Write(addr+uint32(off), data[off:off+n]); err != nil {
			return fmt.Errorf("host link: tile %d: %w", tile, err)
		}
		h.Stats.PacketsIn++
		h.Stats.BytesIn += uint64(n)
	}
	return nil
}

// Read fills buf from tile memory at addr as tile -> host packets.
func (h *HostLink) Read(tile int, addr uint32, buf []byte) error {
	t := h.Chip.Tile(tile)
	if t == nil {
		return fmt.Errorf("host link: no tile %d on the chip", tile)
	}
	end := uint64(addr) + uint64(len(buf))
	if addr < ipu21.SRAMBase || end > ipu21.SRAMEnd {
		return fmt.Errorf("host link: read of %d bytes from tile %d at %#x: outside SRAM [%#x,%#x)",
			len(buf), tile, addr, ipu21.SRAMBase, ipu21.SRAMEnd)
	}
	for off := 0; off < len(buf); off += ipu21.HostPacketOutBytes {
		n := min(ipu21.HostPacketOutBytes, len(buf)-off)
		if err := t.Read(addr+uint32(off), buf[off:off+n]); err != nil {
			return fmt.Errorf("host link: tile %d: %w", tile, err)
		}
		h.Stats.PacketsOut++
		h.Stats.BytesOut += uint64(n)
	}
	return nil
}

// Wait runs the chip (releasing the host sync it waits at, if any) until
// every active tile waits at HostZone. It returns ErrEnded when every tile
// went idle instead, the chip's *Fault or *DeadlockError, an error for a
// different host zone or too many cycles, or ctx's error (checked between
// slices of the run).
func (h *HostLink) Wait(ctx context.Context) error {
	limit := h.MaxCycles
	if limit == 0 {
		limit = 1 << 34
	}
	start := h.Chip.Cycle()
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("host link: stopped waiting for the tiles at cycle %d: %w", h.Chip.Cycle(), err)
		}
		res, err := h.Chip.Run(1 << 24)
		if err != nil {
			return err
		}
		switch res.Reason {
		case ChipHost:
			h.Stats.Handshakes++
			if res.Zone != HostZone {
				return fmt.Errorf("host link: the tiles wait at host sync zone %d; the host handshakes on zone %d only", res.Zone, HostZone)
			}
			return nil
		case ChipIdle:
			return ErrEnded
		}
		if res.Cycle-start > limit {
			return fmt.Errorf("host link: the tiles did not reach a host sync (zone %d) within %d cycles (now at cycle %d)",
				HostZone, limit, res.Cycle)
		}
	}
}

// hostOp is one transfer of a phase, resolved against the package.
type hostOp struct {
	tile     int
	toTile   bool
	addr     uint32 // aperture address (to tile) or slice address (to host)
	page     uint32
	pageOff  uint32
	length   uint32
	binding  string
	tensorAt uint64 // byte offset in the tensor
	size     uint64 // the tensor's bytes
}

type hostCall struct {
	command uint32
	phases  [][]hostOp
}

// HostSession runs a package's host-exchange calls on a chip whose tiles
// wait at their first host sync (the state Load leaves them in).
type HostSession struct {
	Link  *HostLink
	tiles []int
	pages map[uint32][]byte
	calls map[string]*hostCall
	ended bool
}

// CallStats reports one call.
type CallStats struct {
	HostStats
	Phases int
	Cycles uint64 // chip cycles from the call's first release to its end
}

// NewHostSession checks the package's host plan against the host link's
// rules and prepares its pages. Every problem is reported with the call,
// phase and transfer it concerns.
func NewHostSession(link *HostLink, pkg *ipuexe.Package) (*HostSession, error) {
	s := &HostSession{Link: link, pages: map[uint32][]byte{}, calls: map[string]*hostCall{}}
	for _, t := range pkg.Tiles {
		s.tiles = append(s.tiles, int(t.Physical))
	}
	slices.Sort(s.tiles)
	h := &pkg.Host
	for _, pg := range h.Pages {
		s.pages[pg.Index] = make([]byte, pg.Size)
	}
	names := map[string]bool{}
	for _, b := range pkg.Inputs {
		names[b.Name] = true
	}
	var errs []error
	for _, b := range pkg.Weights {
		if names[b.Name] {
			errs = append(errs, fmt.Errorf("host plan: %q is both an input and a weight; calls name tensors by binding name", b.Name))
		}
	}
	for ci, c := range h.Calls {
		hc := &hostCall{command: c.Command}
		for pi, ph := range c.Phases {
			var ops []hostOp
			aperture := map[int][][2]uint64{}
			for ti, tr := range ph.Transfers {
				where := fmt.Sprintf("host plan: call %q phase %d transfer %d", c.Name, pi, ti)
				op, err := s.resolve(pkg, tr)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", where, err))
					continue
				}
				if op.toTile {
					a, b := uint64(op.addr), uint64(op.addr)+uint64(op.length)
					for _, r := range aperture[op.tile] {
						if a < r[1] && r[0] < b {
							errs = append(errs, fmt.Errorf("%s: tile %d aperture bytes [%#x,%#x) overlap another transfer's [%#x,%#x) in this phase",
								where, op.tile, a, b, r[0], r[1]))
						}
					}
					aperture[op.tile] = append(aperture[op.tile], [2]uint64{a, b})
				}
				ops = append(ops, op)
			}
			hc.phases = append(hc.phases, ops)
		}
		if _, dup := s.calls[c.Name]; dup {
			errs = append(errs, fmt.Errorf("host plan: call %d: duplicate name %q", ci, c.Name))
		}
		s.calls[c.Name] = hc
	}
	if len(errs) > 20 {
		errs = append(errs[:20], fmt.Errorf("... and %d more problems", len(errs)-20))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// resolve maps one transfer onto the host link. Host -> tile: the bytes
// land in the tile's host write window at HostApertureBase + (PageOffset mod
// SlotSize), i.e. a tile's page slot is its window; tile -> host: the bytes
// are read from the slice itself.
func (s *HostSession) resolve(pkg *ipuexe.Package, tr ipuexe.HostTransfer) (hostOp, error) {
	var bs []ipuexe.Binding
	switch tr.Kind {
	case ipuexe.KindInput:
		bs = pkg.Inputs
	case ipuexe.KindWeight:
		bs = pkg.Weights
	case ipuexe.KindOutput:
		bs = pkg.Outputs
	default:
		return hostOp{}, fmt.Errorf("unknown binding kind %d", tr.Kind)
	}
	if uint64(tr.Binding) >= uint64(len(bs)) {
		return hostOp{}, fmt.Errorf("no %s binding %d", tr.Kind, tr.Binding)
	}
	b := bs[tr.Binding]
	if uint64(tr.Slice) >= uint64(len(b.Slices)) {
		return hostOp{}, fmt.Errorf("binding %q has no slice %d", b.Name, tr.Slice)
	}
	sl := b.Slices[tr.Slice]
	size, ok := b.Bytes()
	if !ok {
		return hostOp{}, fmt.Errorf("binding %q has no valid size", b.Name)
	}
	op := hostOp{tile: int(sl.Tile), toTile: tr.Kind != ipuexe.KindOutput, page: tr.Page, pageOff: tr.PageOffset,
		length: tr.Length, binding: b.Name, tensorAt: sl.Offset + uint64(tr.SliceOffset), size: size}
	if s.Link.Chip.Tile(op.tile) == nil {
		return hostOp{}, fmt.Errorf("binding %q slice %d is on tile %d, which the chip does not have", b.Name, tr.Slice, op.tile)
	}
	if uint64(tr.SliceOffset)+uint64(tr.Length) > uint64(sl.Length) || op.tensorAt+uint64(tr.Length) > size {
		return hostOp{}, fmt.Errorf("binding %q slice %d: bytes [%d,+%d) are outside the slice or tensor", b.Name, tr.Slice, tr.SliceOffset, tr.Length)
	}
	pg, ok := s.pages[tr.Page]
	if !ok || uint64(tr.PageOffset)+uint64(tr.Length) > uint64(len(pg)) {
		return hostOp{}, fmt.Errorf("page %d bytes [%d,+%d) are not in a host page", tr.Page, tr.PageOffset, tr.Length)
	}
	if !op.toTile {
		op.addr = sl.Address + tr.SliceOffset
		return op, nil
	}
	slot := pkg.Host.SlotSize
	if slot == 0 {
		return hostOp{}, fmt.Errorf("slot size is 0")
	}
	off := tr.PageOffset % slot
	op.addr = ipu21.HostApertureBase + off
	if off%ipu21.HostWriteAlign != 0 || uint64(op.addr)+uint64(tr.Length) > ipu21.HostWriteEnd {
		return hostOp{}, fmt.Errorf("binding %q slice %d: page offset %d puts %d bytes at aperture %#x; host writes must start %d-byte aligned and end by %#x",
			b.Name, tr.Slice, tr.PageOffset, tr.Length, op.addr, ipu21.HostWriteAlign, ipu21.HostWriteEnd)
	}
	return op, nil
}

// Calls returns the names of the session's calls, sorted.
func (s *HostSession) Calls() []string {
	var ns []string
	for n := range s.calls {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// Call runs call name: the command handshake (the command word written to
// HostCommandAddress on every package tile), then one handshake per phase,
// in order. Before releasing phase k's sync the host writes the phase's
// input and weight bytes (from in, by binding name) into the tiles' windows
// and reads its output bytes into out (by binding name; a missing or
// wrongly sized buffer is replaced by a new one of the tensor's size). The
// call ends when every tile waits at the next host sync, or when the
// application ends after the last phase.
func (s *HostSession) Call(ctx context.Context, name string, in, out map[string][]byte) (CallStats, error) {
	var st CallStats
	c, ok := s.calls[name]
	if !ok {
		return st, fmt.Errorf("host link: the package has no call %q (calls: %v)", name, s.Calls())
	}
	if s.ended {
		return st, fmt.Errorf("host link: call %q: %w", name, ErrEnded)
	}
	// Check the inputs before touching the device, so a bad call leaves
	// the session usable.
	for _, ops := range c.phases {
		for _, op := range ops {
			if !op.toTile {
				if b := out[op.binding]; uint64(len(b)) != op.size && out != nil {
					out[op.binding] = make([]byte, op.size)
				}
				continue
			}
			data, ok := in[op.binding]
			if !ok {
				return st, fmt.Errorf("host link: call %q needs tensor %q, which was not given", name, op.binding)
			}
			if uint64(len(data)) != op.size {
				return st, fmt.Errorf("host link: call %q: tensor %q has %d bytes, the package wants %d", name, op.binding, len(data), op.size)
			}
		}
	}
	before := s.Link.Stats
	startCycle := s.Link.Chip.Cycle()
	var cmd [4]byte
	binary.LittleEndian.PutUint32(cmd[:], c.command)
	for _, t := range s.tiles {
		if err := s.Link.Write(t, HostCommandAddress, cmd[:]); err != nil {
			return st, err
		}
	}
	for k := 0; k <= len(c.phases); k++ {
		err := s.Link.Wait(ctx)
		if errors.Is(err, ErrEnded) && k == len(c.phases) {
			s.ended = true
			err = nil
		}
		if err != nil {
			if k < len(c.phases) {
				return st, fmt.Errorf("call %q, before phase %d: %w", name, k, err)
			}
			return st, fmt.Errorf("call %q, after its last phase: %w", name, err)
		}
		if k == len(c.phases) {
			break
		}
		for _, op := range c.phases[k] {
			pg := s.pages[op.page][op.pageOff : op.pageOff+op.length]
			if op.toTile {
				copy(pg, in[op.binding][op.tensorAt:])
				err = s.Link.Write(op.tile, op.addr, pg)
			} else {
				err = s.Link.Read(op.tile, op.addr, pg)
				if err == nil && out != nil {
					copy(out[op.binding][op.tensorAt:], pg)
				}
			}
			if err != nil {
				return st, fmt.Errorf("call %q phase %d: %w", name, k, err)
			}
		}
	}
	st.HostStats = s.Link.Stats
	st.Handshakes -= before.Handshakes
	st.PacketsIn -= before.PacketsIn
	st.BytesIn -= before.BytesIn
	st.PacketsOut -= before.PacketsOut
	st.BytesOut -= before.BytesOut
	st.Phases = len(c.phases)
	st.Cycles = s.Link.Chip.Cycle() - startCycle
	return st, nil
}

// Ended reports whether the application ended (every tile idle) after a
// call; no further call can run.
func (s *HostSession) Ended() bool { return s.ended }
