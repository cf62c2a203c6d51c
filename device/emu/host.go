package emu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

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

// HostSession runs a package's host-exchange calls on a chip whose tiles
// wait at their first host sync (the state Load leaves them in). It has
// two sides. The device side, Handshake, is what the chip's host link does
// at one host sync: at a call's first handshake it reads the command word
// from the pages and writes it to every tile, then releases the tiles and,
// once they wait again, moves the current phase's bytes between the pages
// and the tiles. The host side, Call, is what a host program does around
// it: stage the inputs in the pages, poison the outputs, write the command
// word, handshake once for the command and once per phase, and collect the
// outputs. A device that owns the pages elsewhere (the C600 card model)
// gives them with UsePages and drives Handshake itself.
type HostSession struct {
	Link  *HostLink
	plan  *ipuexe.HostPlan
	pages map[uint32][]byte
	cur   *ipuexe.PlannedCall // the call in progress, nil between calls
	phase int                 // its next phase
	ended bool
}

// CallStats reports one call.
type CallStats struct {
	HostStats
	Phases int
	Cycles uint64 // chip cycles from the call's first release to its end
}

// NewHostSession checks the package's host plan (ipuexe.NewHostPlan)
// against the chip and prepares its pages. Every problem is reported with
// the call, phase and transfer it concerns.
func NewHostSession(link *HostLink, pkg *ipuexe.Package) (*HostSession, error) {
	plan, err := ipuexe.NewHostPlan(pkg)
	if err != nil {
		return nil, err
	}
	for _, t := range plan.Tiles {
		if link.Chip.Tile(t) == nil {
			return nil, fmt.Errorf("host plan: the package's tile %d is not on the chip", t)
		}
	}
	s := &HostSession{Link: link, plan: plan, pages: map[uint32][]byte{}}
	for _, pg := range plan.Pages {
		s.pages[pg.Index] = make([]byte, pg.Size)
	}
	return s, nil
}

// Plan is the session's resolved host plan.
func (s *HostSession) Plan() *ipuexe.HostPlan { return s.plan }

// UsePages makes the session move bytes through pages, owned by the
// caller (a card's attached buffers), instead of its own. Every page of
// the plan must be there at its size.
func (s *HostSession) UsePages(pages map[uint32][]byte) error {
	if err := s.plan.CheckPages(pages); err != nil {
		return fmt.Errorf("host link: %w", err)
	}
	s.pages = pages
	return nil
}

// InCall reports whether a call has started (its command handshake done)
// and not yet finished.
func (s *HostSession) InCall() bool { return s.cur != nil }

// Handshake is the device side of one host handshake (see HostSession).
// The handshake after a call's last phase ends the call; if the
// application ends there instead of reaching the next host sync, the
// session is Ended.
func (s *HostSession) Handshake(ctx context.Context) error {
	if s.ended {
		return fmt.Errorf("host link: handshake: %w", ErrEnded)
	}
	if s.cur == nil {
		c, err := s.plan.ReadCommand(s.pages)
		if err != nil {
			return fmt.Errorf("host link: command handshake: %w", err)
		}
		var cmd [4]byte
		binary.LittleEndian.PutUint32(cmd[:], c.Command)
		for _, t := range s.plan.Tiles {
			if err := s.Link.Write(t, HostCommandAddress, cmd[:]); err != nil {
				return err
			}
		}
		s.cur, s.phase = c, 0
	}
	c, k := s.cur, s.phase
	err := s.Link.Wait(ctx)
	if errors.Is(err, ErrEnded) && k == len(c.Phases) {
		s.ended = true
		err = nil
	}
	if err != nil {
		s.cur = nil
		if k < len(c.Phases) {
			return fmt.Errorf("call %q, before phase %d: %w", c.Name, k, err)
		}
		return fmt.Errorf("call %q, after its last phase: %w", c.Name, err)
	}
	if k == len(c.Phases) {
		s.cur = nil
		return nil
	}
	for _, op := range c.Phases[k] {
		pg := s.pages[op.Page][op.PageOffset : op.PageOffset+op.Length]
		if op.ToTile {
			err = s.Link.Write(op.Tile, op.Addr, pg)
		} else {
			err = s.Link.Read(op.Tile, op.Addr, pg)
		}
		if err != nil {
			s.cur = nil
			return fmt.Errorf("call %q phase %d: %w", c.Name, k, err)
		}
	}
	s.phase++
	return nil
}

// Calls returns the names of the session's calls, sorted.
func (s *HostSession) Calls() []string { return s.plan.Calls() }

// Call runs call name from the host side: the command handshake, then one
// handshake per phase, in order. Before phase k's handshake the host
// stages the phase's input and weight bytes (from in, by binding name) in
// the pages and poisons its output areas; after it, it collects the
// phase's output bytes into out (by binding name; a missing or wrongly
// sized buffer is replaced by a new one of the tensor's size). The call
// ends when every tile waits at the next host sync, or when the
// application ends after the last phase.
func (s *HostSession) Call(ctx context.Context, name string, in, out map[string][]byte) (CallStats, error) {
	var st CallStats
	c, err := s.plan.Call(name)
	if err != nil {
		return st, fmt.Errorf("host link: %w", err)
	}
	if s.ended {
		return st, fmt.Errorf("host link: call %q: %w", name, ErrEnded)
	}
	if s.cur != nil {
		return st, fmt.Errorf("host link: call %q: call %q is still in progress", name, s.cur.Name)
	}
	if err := c.CheckCallTensors(in, out); err != nil {
		return st, fmt.Errorf("host link: %w", err)
	}
	before := s.Link.Stats
	startCycle := s.Link.Chip.Cycle()
	s.plan.WriteCommand(s.pages, c)
	for k := 0; k <= len(c.Phases); k++ {
		if k < len(c.Phases) {
			c.StagePhase(k, s.pages, in)
			c.PoisonOutputs(k, s.pages)
		}
		if err := s.Handshake(ctx); err != nil {
			return st, err
		}
		if k < len(c.Phases) {
			c.CollectPhase(k, s.pages, out)
		}
	}
	st.HostStats = s.Link.Stats
	st.Handshakes -= before.Handshakes
	st.PacketsIn -= before.PacketsIn
	st.BytesIn -= before.BytesIn
	st.PacketsOut -= before.PacketsOut
	st.BytesOut -= before.BytesOut
	st.Phases = len(c.Phases)
	st.Cycles = s.Link.Chip.Cycle() - startCycle
	return st, nil
}

// Ended reports whether the application ended (every tile idle) after a
// call; no further call can run.
func (s *HostSession) Ended() bool { return s.ended }
