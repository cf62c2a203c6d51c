package ipuexe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
)

// The host side of the host-exchange plan, shared by every device that
// runs it (the emulator's host link, the C600 driver and its card model):
// resolving transfers, and moving tensor bytes between the caller's
// tensors and the host pages. What a device does with the pages (pushing
// them into tiles) is the device's own.

// OutputPoison fills a phase's output areas of the pages before the phase
// runs, so that bytes a device failed to write are visible (0xA5, the
// byte IPU21.md's host session writes).
const OutputPoison = 0xA5

// ResolvedTransfer is one HostTransfer resolved against its package.
type ResolvedTransfer struct {
	Tile   int  // physical tile of the slice
	ToTile bool // inputs and weights; outputs go to the host
	// Addr is where the bytes go on the tile (host -> tile: in the tile's
	// host write window, HostApertureBase + PageOffset mod SlotSize) or
	// come from (tile -> host: the slice's own address).
	Addr       uint32
	Page       uint32
	PageOffset uint32
	Length     uint32
	Binding    string
	TensorAt   uint64 // byte offset in the tensor
	Size       uint64 // the tensor's bytes
}

// ResolveTransfer resolves tr: its binding, slice, tile, tile address and
// page range. It is the one place that decides where a transfer's bytes
// land; every error names the binding, slice or page at fault.
func (p *Package) ResolveTransfer(tr HostTransfer) (ResolvedTransfer, error) {
	var bs []Binding
	switch tr.Kind {
	case KindInput, KindOutput, KindWeight:
		bs = p.bindings(tr.Kind)
	default:
		return ResolvedTransfer{}, fmt.Errorf("unknown binding kind %d", tr.Kind)
	}
	if uint64(tr.Binding) >= uint64(len(bs)) {
		return ResolvedTransfer{}, fmt.Errorf("no %s binding %d", tr.Kind, tr.Binding)
	}
	b := bs[tr.Binding]
	if uint64(tr.Slice) >= uint64(len(b.Slices)) {
		return ResolvedTransfer{}, fmt.Errorf("binding %q has no slice %d", b.Name, tr.Slice)
	}
	sl := b.Slices[tr.Slice]
	size, ok := b.Bytes()
	if !ok {
		return ResolvedTransfer{}, fmt.Errorf("binding %q has no valid size", b.Name)
	}
	r := ResolvedTransfer{Tile: int(sl.Tile), ToTile: tr.Kind != KindOutput, Page: tr.Page, PageOffset: tr.PageOffset,
		Length: tr.Length, Binding: b.Name, TensorAt: sl.Offset + uint64(tr.SliceOffset), Size: size}
	if !slices.ContainsFunc(p.Tiles, func(t Tile) bool { return t.Physical == sl.Tile }) {
		return ResolvedTransfer{}, fmt.Errorf("binding %q slice %d is on tile %d, which the package does not load", b.Name, tr.Slice, sl.Tile)
	}
	if uint64(tr.SliceOffset)+uint64(tr.Length) > uint64(sl.Length) || r.TensorAt+uint64(tr.Length) > size {
		return ResolvedTransfer{}, fmt.Errorf("binding %q slice %d: bytes [%d,+%d) are outside the slice or tensor", b.Name, tr.Slice, tr.SliceOffset, tr.Length)
	}
	pg := slices.IndexFunc(p.Host.Pages, func(pg HostPage) bool { return pg.Index == tr.Page })
	if pg < 0 || uint64(tr.PageOffset)+uint64(tr.Length) > uint64(p.Host.Pages[pg].Size) {
		return ResolvedTransfer{}, fmt.Errorf("page %d bytes [%d,+%d) are not in a host page", tr.Page, tr.PageOffset, tr.Length)
	}
	if !r.ToTile {
		r.Addr = sl.Address + tr.SliceOffset
		return r, nil
	}
	slot := p.Host.SlotSize
	if slot == 0 {
		return ResolvedTransfer{}, errors.New("slot size is 0")
	}
	off := tr.PageOffset % slot
	r.Addr = ipu21.HostApertureBase + off
	if off%ipu21.HostWriteAlign != 0 || uint64(r.Addr)+uint64(tr.Length) > ipu21.HostWriteEnd {
		return ResolvedTransfer{}, fmt.Errorf("binding %q slice %d: page offset %d puts %d bytes at aperture %#x; host writes must start %d-byte aligned and end by %#x",
			b.Name, tr.Slice, tr.PageOffset, tr.Length, r.Addr, ipu21.HostWriteAlign, ipu21.HostWriteEnd)
	}
	return r, nil
}

// HostPlan is a package's host-exchange plan resolved and checked: what
// both sides of a host link need.
type HostPlan struct {
	// Tiles are the package's physical tiles, ascending (every one
	// receives the command word).
	Tiles []int
	// Pages are the pages in the package's attach order (Host.Pages).
	Pages         []HostPage
	CommandPage   uint32
	CommandOffset uint32
	calls         map[string]*PlannedCall
	byCommand     map[uint32]*PlannedCall
}

// PlannedCall is one call with its transfers resolved, phase by phase.
type PlannedCall struct {
	Name    string
	Command uint32
	Phases  [][]ResolvedTransfer
}

// NewHostPlan resolves and checks pkg's host plan: every transfer
// (ResolveTransfer), host -> tile bytes of one phase that overlap on a
// tile, duplicate call names, duplicate command words (a device tells
// calls apart by their command word only) and a command word outside every
// page. Every problem names the call, phase and transfer it concerns.
func NewHostPlan(pkg *Package) (*HostPlan, error) {
	h := &pkg.Host
	p := &HostPlan{Pages: slices.Clone(h.Pages), CommandPage: h.CommandPage, CommandOffset: h.CommandOffset,
		calls: map[string]*PlannedCall{}, byCommand: map[uint32]*PlannedCall{}}
	for _, t := range pkg.Tiles {
		p.Tiles = append(p.Tiles, int(t.Physical))
	}
	slices.Sort(p.Tiles)
	var errs []error
	names := map[string]bool{}
	for _, b := range pkg.Inputs {
		names[b.Name] = true
	}
	for _, b := range pkg.Weights {
		if names[b.Name] {
			errs = append(errs, fmt.Errorf("host plan: %q is both an input and a weight; calls name tensors by binding name", b.Name))
		}
	}
	if len(h.Calls) > 0 {
		pg := slices.IndexFunc(h.Pages, func(pg HostPage) bool { return pg.Index == h.CommandPage })
		if pg < 0 || h.CommandOffset%4 != 0 || uint64(h.CommandOffset)+4 > uint64(h.Pages[pg].Size) {
			errs = append(errs, fmt.Errorf("host plan: the command word (page %d offset %d) is outside every host page", h.CommandPage, h.CommandOffset))
		}
	}
	for ci, c := range h.Calls {
		pc := &PlannedCall{Name: c.Name, Command: c.Command}
		for pi, ph := range c.Phases {
			var ops []ResolvedTransfer
			aperture := map[int][][2]uint64{}
			for ti, tr := range ph.Transfers {
				where := fmt.Sprintf("host plan: call %q phase %d transfer %d", c.Name, pi, ti)
				op, err := pkg.ResolveTransfer(tr)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", where, err))
					continue
				}
				if op.ToTile {
					a, b := uint64(op.Addr), uint64(op.Addr)+uint64(op.Length)
					for _, r := range aperture[op.Tile] {
						if a < r[1] && r[0] < b {
							errs = append(errs, fmt.Errorf("%s: tile %d aperture bytes [%#x,%#x) overlap another transfer's [%#x,%#x) in this phase",
								where, op.Tile, a, b, r[0], r[1]))
						}
					}
					aperture[op.Tile] = append(aperture[op.Tile], [2]uint64{a, b})
				}
				ops = append(ops, op)
			}
			pc.Phases = append(pc.Phases, ops)
		}
		if _, dup := p.calls[c.Name]; dup {
			errs = append(errs, fmt.Errorf("host plan: call %d: duplicate name %q", ci, c.Name))
		}
		if o, dup := p.byCommand[c.Command]; dup {
			errs = append(errs, fmt.Errorf("host plan: call %d (%q): command word %d is also call %q's", ci, c.Name, c.Command, o.Name))
		} else {
			p.byCommand[c.Command] = pc
		}
		p.calls[c.Name] = pc
	}
	if len(errs) > 20 {
		errs = append(errs[:20], fmt.Errorf("... and %d more problems", len(errs)-20))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// Calls returns the names of the plan's calls, sorted.
func (p *HostPlan) Calls() []string {
	var ns []string
	for n := range p.calls {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// Call is call name.
func (p *HostPlan) Call(name string) (*PlannedCall, error) {
	c, ok := p.calls[name]
	if !ok {
		return nil, fmt.Errorf("the package has no call %q (calls: %v)", name, p.Calls())
	}
	return c, nil
}

// CheckPages checks that pages hold every page of the plan at its size.
func (p *HostPlan) CheckPages(pages map[uint32][]byte) error {
	for _, pg := range p.Pages {
		if b, ok := pages[pg.Index]; !ok || uint64(len(b)) != uint64(pg.Size) {
			return fmt.Errorf("host page %d: have %d bytes, the package wants %d", pg.Index, len(b), pg.Size)
		}
	}
	return nil
}

// WriteCommand writes c's command word (little-endian) into the pages.
func (p *HostPlan) WriteCommand(pages map[uint32][]byte, c *PlannedCall) {
	binary.LittleEndian.PutUint32(pages[p.CommandPage][p.CommandOffset:], c.Command)
}

// ReadCommand finds the call whose command word the pages hold.
func (p *HostPlan) ReadCommand(pages map[uint32][]byte) (*PlannedCall, error) {
	pg := pages[p.CommandPage]
	if uint64(p.CommandOffset)+4 > uint64(len(pg)) {
		return nil, fmt.Errorf("the command word (page %d offset %d) is outside the attached page of %d bytes", p.CommandPage, p.CommandOffset, len(pg))
	}
	w := binary.LittleEndian.Uint32(pg[p.CommandOffset:])
	c, ok := p.byCommand[w]
	if !ok {
		return nil, fmt.Errorf("command word %#x (page %d offset %d) names no call of the package", w, p.CommandPage, p.CommandOffset)
	}
	return c, nil
}

// CheckCallTensors checks in before a device is touched, so that a bad
// call leaves the session usable: every input and weight the call moves
// must be given at the tensor's size. Missing or wrongly sized output
// buffers in a non-nil out are replaced by new ones of the tensor's size.
func (c *PlannedCall) CheckCallTensors(in, out map[string][]byte) error {
	for _, ops := range c.Phases {
		for _, op := range ops {
			if !op.ToTile {
				if b := out[op.Binding]; uint64(len(b)) != op.Size && out != nil {
					out[op.Binding] = make([]byte, op.Size)
				}
				continue
			}
			data, ok := in[op.Binding]
			if !ok {
				return fmt.Errorf("call %q needs tensor %q, which was not given", c.Name, op.Binding)
			}
			if uint64(len(data)) != op.Size {
				return fmt.Errorf("call %q: tensor %q has %d bytes, the package wants %d", c.Name, op.Binding, len(data), op.Size)
			}
		}
	}
	return nil
}

// StagePhase copies phase k's input and weight bytes from in into the
// pages (CheckCallTensors must have passed).
func (c *PlannedCall) StagePhase(k int, pages map[uint32][]byte, in map[string][]byte) {
	for _, op := range c.Phases[k] {
		if op.ToTile {
			copy(pages[op.Page][op.PageOffset:op.PageOffset+op.Length], in[op.Binding][op.TensorAt:])
		}
	}
}

// PoisonOutputs fills phase k's output areas of the pages with
// OutputPoison.
func (c *PlannedCall) PoisonOutputs(k int, pages map[uint32][]byte) {
	for _, op := range c.Phases[k] {
		if !op.ToTile {
			for i := range pages[op.Page][op.PageOffset : op.PageOffset+op.Length] {
				pages[op.Page][int(op.PageOffset)+i] = OutputPoison
			}
		}
	}
}

// CollectPhase copies phase k's output bytes from the pages into out (nil
// discards them).
func (c *PlannedCall) CollectPhase(k int, pages map[uint32][]byte, out map[string][]byte) {
	if out == nil {
		return
	}
	for _, op := range c.Phases[k] {
		if !op.ToTile {
			copy(out[op.Binding][op.TensorAt:], pages[op.Page][op.PageOffset:op.PageOffset+op.Length])
		}
	}
}

// Traffic is what a call moves over a host link of n tiles: host -> tile
// packets (of at most ipu21.HostPacketInBytes, the command word to every
// tile included) and tile -> host packets (at most
// ipu21.HostPacketOutBytes). A device that cannot count its packets
// reports these.
func (c *PlannedCall) Traffic(tiles int) (packetsIn int, bytesIn uint64, packetsOut int, bytesOut uint64) {
	packetsIn, bytesIn = tiles, 4*uint64(tiles)
	for _, ops := range c.Phases {
		for _, op := range ops {
			if op.ToTile {
				packetsIn += (int(op.Length) + ipu21.HostPacketInBytes - 1) / ipu21.HostPacketInBytes
				bytesIn += uint64(op.Length)
			} else {
				packetsOut += (int(op.Length) + ipu21.HostPacketOutBytes - 1) / ipu21.HostPacketOutBytes
				bytesOut += uint64(op.Length)
			}
		}
	}
	return
}
