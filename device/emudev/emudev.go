// Package emudev is the emulator backend of package device: a Device whose
// chip is device/emu's cycle-level IPU21 emulator, registered as "emu".
// Import it (for its side effect) to make device.Open("emu") work.
//
// Loading follows the hardware loader's shape: tiles are written in
// batches of ipu21.LoaderBatchTiles in physical-id order, the startup mark
// counts the batches (23 for a full chip), every tile's supervisor starts
// at its entry point, and Load returns once every tile waits at its first
// host sync (the application's initial synchronization). Only the
// package's tiles are modelled: tiles outside the package take no part in
// syncs, which matches hardware because they run nothing.
//
// Configuration writes are checked (4-byte aligned offsets) and counted:
// the emulator has no register space they would change.
package emudev

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/config"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Name is the backend's registry name.
const Name = "emu"

func init() {
	device.RegisterEmulated(Name, func(opts device.Options) (device.Device, error) {
		o, err := device.BackendOptions[Options]("emu", opts.Backend)
		if err != nil {
			return nil, err
		}
		return New(o), nil
	})
}

// Options tune the emulated device.
type Options struct {
	// MaxCallCycles bounds how long the tiles may run between two host
	// syncs before the device reports them hung (default 1<<34 cycles).
	MaxCallCycles uint64
	// Conservative runs the chip with the conservative assumption set
	// (emu.ConservativeAssumptions; docs/machine.md, "Named assumptions")
	// instead of emu.DefaultAssumptions.
	Conservative bool
}

// Assumptions is the emulator assumption set the options select.
func (o Options) Assumptions() emu.AssumptionSet {
	if o.Conservative {
		return emu.ConservativeAssumptions
	}
	return emu.DefaultAssumptions
}

// Device is the emulated IPU21.
type Device struct {
	opts    Options
	st      device.Stage
	writes  int
	chip    *emu.Chip
	link    *emu.HostLink
	pkg     *ipuexe.Package
	mark    int
	session *session
}

// New makes an emulated device (not yet opened). Most callers use
// device.Open("emu", ...) instead, which also takes the device lock.
func New(opts Options) *Device { return &Device{opts: opts} }

// Info describes the emulated chip.
func (d *Device) Info() device.Info {
	return device.Info{Name: Name, Path: "emulator:ipu21", Target: "ipu21", Tiles: ipu21.Tiles, ClockHz: ipu21.ClockHz}
}

func (d *Device) need(op string, want ...device.Stage) error {
	if err := d.st.Need(op, want...); err != nil {
		return fmt.Errorf("emu device: %w", err)
	}
	return nil
}

// Open attaches to the emulator (nothing to do but change state).
func (d *Device) Open(ctx context.Context) error {
	if err := d.need("open", device.StageNew); err != nil {
		return err
	}
	d.st = device.StageOpen
	return ctx.Err()
}

// Initialize drops any loaded application.
func (d *Device) Initialize(ctx context.Context) error {
	if err := d.need("initialize", device.StageOpen, device.StageInitialized, device.StageLoaded); err != nil {
		return err
	}
	d.chip, d.link, d.pkg, d.mark, d.writes = nil, nil, nil, 0, 0
	d.st = device.StageInitialized
	return ctx.Err()
}

// ReplayConfig checks and counts the writes.
func (d *Device) ReplayConfig(ctx context.Context, writes []config.Write) error {
	if err := d.need("replay configuration", device.StageInitialized); err != nil {
		return err
	}
	for i, w := range writes {
		if w.Offset%4 != 0 {
			return fmt.Errorf("emu device: configuration write %d: offset %#x is not 4-byte aligned", i, w.Offset)
		}
	}
	d.writes += len(writes)
	return ctx.Err()
}

// ConfigWrites is the number of configuration writes replayed since
// Initialize.
func (d *Device) ConfigWrites() int { return d.writes }

// Load validates the package, writes the tiles in batches, starts them and
// runs the chip to the application's initial host sync.
func (d *Device) Load(ctx context.Context, pkg *ipuexe.Package, progress func(done, total int)) error {
	if err := d.need("load", device.StageInitialized); err != nil {
		return err
	}
	if pkg == nil {
		return errors.New("emu device: load: no package")
	}
	t, err := ipu21.Lookup(pkg.Target)
	if err != nil {
		return fmt.Errorf("emu device: load: %w", err)
	}
	if err := pkg.Validate(t); err != nil {
		return fmt.Errorf("emu device: load: %w", err)
	}
	if len(pkg.Tiles) == 0 {
		return errors.New("emu device: load: the package has no tiles")
	}
	ids := make([]int, len(pkg.Tiles))
	for i, tl := range pkg.Tiles {
		ids[i] = int(tl.Physical)
	}
	chip, err := emu.NewChip(ids...)
	if err != nil {
		return fmt.Errorf("emu device: load: %w", err)
	}
	chip.SetAssumptions(d.opts.Assumptions())
	// Physical-id order, as the chip holds its tiles.
	order := make([]*ipuexe.Tile, ipu21.Tiles)
	for i := range pkg.Tiles {
		order[pkg.Tiles[i].Physical] = &pkg.Tiles[i]
	}
	var tiles []*ipuexe.Tile
	for _, tl := range order {
		if tl != nil {
			tiles = append(tiles, tl)
		}
	}
	mark := 0
	for b := 0; b < len(tiles); b += ipu21.LoaderBatchTiles {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("emu device: load: %w", err)
		}
		batch := tiles[b:min(b+ipu21.LoaderBatchTiles, len(tiles))]
		for _, tl := range batch {
			et := chip.Tile(int(tl.Physical))
			for k, s := range tl.Segments {
				// A fresh chip's memory is zero, so zero-fill needs no writes.
				if err := et.Write(s.Address, s.Data); err != nil {
					return fmt.Errorf("emu device: load: tile %d segment %d: %w", tl.Physical, k, err)
				}
			}
		}
		mark++
		if progress != nil {
			progress(b+len(batch), len(tiles))
		}
	}
	for _, tl := range tiles {
		if err := chip.Start(int(tl.Physical), tl.Entry); err != nil {
			return fmt.Errorf("emu device: load: %w", err)
		}
	}
	link := &emu.HostLink{Chip: chip, MaxCycles: d.opts.MaxCallCycles}
	if err := link.Wait(ctx); err != nil {
		if errors.Is(err, emu.ErrEnded) {
			return fmt.Errorf("emu device: load: the application ended before its initial host synchronization (sync %d): %w", emu.HostZone, err)
		}
		return fmt.Errorf("emu device: load: initial synchronization: %w", err)
	}
	d.chip, d.link, d.pkg, d.mark = chip, link, pkg, mark
	d.st = device.StageLoaded
	return nil
}

// StartupMark is the loader's final mark (the number of batches loaded).
func (d *Device) StartupMark() int { return d.mark }

// Chip gives the emulated chip (nil before Load), for tests and tools
// that inspect tile state.
func (d *Device) Chip() *emu.Chip { return d.chip }

// StartSession attaches the package's host pages.
func (d *Device) StartSession(ctx context.Context) (device.Session, error) {
	if err := d.need("start session", device.StageLoaded); err != nil {
		return nil, err
	}
	hs, err := emu.NewHostSession(d.link, d.pkg)
	if err != nil {
		return nil, fmt.Errorf("emu device: %w", err)
	}
	d.session = &session{d: d, hs: hs}
	d.st = device.StageSession
	return d.session, ctx.Err()
}

// Close drops the chip.
func (d *Device) Close() error {
	d.chip, d.link, d.pkg, d.session = nil, nil, nil, nil
	d.st = device.StageClosed
	return nil
}

type session struct {
	d      *Device
	hs     *emu.HostSession
	closed bool
}

func (s *session) Call(ctx context.Context, name string, in, out map[string][]byte) (device.CallStats, error) {
	if s.closed || s.d.st != device.StageSession {
		return device.CallStats{}, errors.New("emu device: call on a closed session")
	}
	start := time.Now()
	st, err := s.hs.Call(ctx, name, in, out)
	cs := device.CallStats{Phases: st.Phases, Handshakes: st.Handshakes, PacketsIn: st.PacketsIn, BytesIn: st.BytesIn,
		PacketsOut: st.PacketsOut, BytesOut: st.BytesOut, Cycles: st.Cycles, Wall: time.Since(start)}
	return cs, err
}

func (s *session) ProfileWords(tile int, addrs []uint32) ([]uint32, error) {
	if s.closed || s.d.chip == nil {
		return nil, errors.New("emu device: profile read on a closed session")
	}
	t := s.d.chip.Tile(tile)
	if t == nil {
		return nil, fmt.Errorf("emu device: no tile %d", tile)
	}
	out := make([]uint32, len(addrs))
	for i, a := range addrs {
		w, err := t.ReadWord(a)
		if err != nil {
			return nil, fmt.Errorf("emu device: tile %d profile word %#x: %w", tile, a, err)
		}
		out[i] = w
	}
	return out, nil
}

func (s *session) StartupMark() int { return s.d.mark }

func (s *session) Close() error {
	if !s.closed && s.d.st == device.StageSession {
		s.d.st = device.StageLoaded
	}
	s.closed = true
	return nil
}
