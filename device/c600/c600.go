package c600

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/config"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Name is the backend's registry name.
const Name = "c600"

func init() {
	device.RegisterHardware(Name, DefaultNode, func(opts device.Options) (device.Device, error) {
		node := opts.Node
		if node == "" {
			node = DefaultNode
		}
		d := &Device{node: node}
		switch b := opts.Backend.(type) {
		case nil:
		case Options:
			d.opts = b
		case *Options:
			if b != nil {
				d.opts = *b
			}
		default:
			return nil, fmt.Errorf("c600 backend options must be c600.Options, not %T", opts.Backend)
		}
		return d, nil
	})
}

// Options configure the card.
type Options struct {
	// Bootloader is the SDK's tile bootloader ELF
	// (bin/ipu/tile_bootloader_cc_ipu21.elf); Load needs it.
	Bootloader string
}

// card is what the driver needs of an opened card: the configuration
// window and the ioctls. The real card (card_linux.go) implements it.
type card interface {
	read(off uint32) (uint32, error)
	write(off, v uint32) error
	ioctl(req uintptr, arg uintptr) error
	mailbox(req [5]uint32) ([5]uint32, error)
	setSecondaryID(id uint32) error
	close() error
}

// Device is one C600 card.
type Device struct {
	opts Options
	node string
	c    card
}

// Info describes the card.
func (d *Device) Info() device.Info {
	return device.Info{Name: Name, Path: d.node, Target: "ipu21", Tiles: ipu21.Tiles, ClockHz: ipu21.ClockHz}
}

// Open opens the device node, maps the configuration window and attaches
// (USER_ATTACH 0, SET_IPU_ID 0).
func (d *Device) Open(ctx context.Context) error {
	if d.c != nil {
		return fmt.Errorf("c600 %s: already open", d.node)
	}
	c, err := openCard(d.node)
	if err != nil {
		return err
	}
	for _, s := range []struct {
		what string
		req  uintptr
	}{{"USER_ATTACH", ioctlUserAttach}, {"SET_IPU_ID", ioctlSetIPUID}} {
		if err := c.ioctl(s.req, 0); err != nil {
			c.close()
			return fmt.Errorf("c600 %s: %s (%#x): %w", d.node, s.what, s.req, err)
		}
	}
	d.c = c
	return ctx.Err()
}

// Initialize runs the reset sequence: STOP_MONITORING, the mailbox check,
// START_MONITORING, ACCUMULATE_ERRORS, RESET_DEVICE, SET_SECONDARY_IPU_ID.
func (d *Device) Initialize(ctx context.Context) error {
	if d.c == nil {
		return fmt.Errorf("c600 %s: initialize: the device is not open", d.node)
	}
	if err := d.c.ioctl(ioctlStopMonitoring, 0); err != nil {
		return fmt.Errorf("c600 %s: STOP_MONITORING: %w", d.node, err)
	}
	resp, err := d.c.mailbox([5]uint32{mailboxReset})
	if err != nil {
		return fmt.Errorf("c600 %s: MAILBOX_WRITE_READ: %w", d.node, err)
	}
	if resp[0]>>16 != mailboxReset>>16 {
		return fmt.Errorf("c600 %s: mailbox reset response %#08x: want high 16 bits %#04x", d.node, resp[0], mailboxReset>>16)
	}
	for _, s := range []struct {
		what string
		req  uintptr
	}{{"START_MONITORING", ioctlStartMonitoring}, {"ACCUMULATE_ERRORS", ioctlAccumulateErrors}, {"RESET_DEVICE", ioctlResetDevice}} {
		if err := d.c.ioctl(s.req, 0); err != nil {
			return fmt.Errorf("c600 %s: %s: %w", d.node, s.what, err)
		}
	}
	if err := d.c.setSecondaryID(0); err != nil {
		return fmt.Errorf("c600 %s: SET_SECONDARY_IPU_ID: %w", d.node, err)
	}
	return ctx.Err()
}

// ReplayConfig writes the configuration, skipping the writes to HSP GS1 and
// GS2 (the capture's protocol writes), then zeroes both and checks they
// read 0.
func (d *Device) ReplayConfig(ctx context.Context, writes []config.Write) error {
	if d.c == nil {
		return fmt.Errorf("c600 %s: replay configuration: the device is not open", d.node)
	}
	for i, w := range writes {
		if w.Offset == regHSPGS1 || w.Offset == regHSPGS2 {
			continue
		}
		if err := d.c.write(w.Offset, w.Value); err != nil {
			return fmt.Errorf("c600 %s: configuration write %d: %w", d.node, i, err)
		}
	}
	for _, r := range []struct {
		name string
		off  uint32
	}{{"HSP_GS1", regHSPGS1}, {"HSP_GS2", regHSPGS2}} {
		if err := d.c.write(r.off, 0); err != nil {
			return fmt.Errorf("c600 %s: clearing %s: %w", d.node, r.name, err)
		}
		v, err := d.c.read(r.off)
		if err != nil {
			return fmt.Errorf("c600 %s: reading %s: %w", d.node, r.name, err)
		}
		if v&hspMark != 0 {
			return fmt.Errorf("c600 %s: %s (%#x) did not clear: want mark 0, read %d", d.node, r.name, r.off, v&hspMark)
		}
	}
	return ctx.Err()
}

// errNotBuilt is the answer of the steps this revision does not have.
var errNotBuilt = errors.New("not built in this revision of the c600 driver (the bootloader, tile loading and the host session are issue 15's remaining work)")

// Load checks the bootloader, frames every tile of the package into its
// batch (checking the loader's limits) and installs the bootloader on every
// tile through the autoloader; sending the batches (the transport buffer,
// XB setup, GS1 handshakes), the final mark and the initial sync are not
// built yet.
func (d *Device) Load(ctx context.Context, pkg *ipuexe.Package, progress func(done, total int)) error {
	if d.c == nil {
		return fmt.Errorf("c600 %s: load: the device is not open", d.node)
	}
	if d.opts.Bootloader == "" {
		return fmt.Errorf("c600 %s: load: no bootloader: give the SDK's bin/ipu/tile_bootloader_cc_ipu21.elf (c600.Options.Bootloader)", d.node)
	}
	b, err := ReadBootloader(d.opts.Bootloader)
	if err != nil {
		return fmt.Errorf("c600 %s: load: %w", d.node, err)
	}
	if pkg == nil || len(pkg.Tiles) == 0 {
		return fmt.Errorf("c600 %s: load: the package has no tiles", d.node)
	}
	// Build (and so check) every batch before touching the card: tiles in
	// physical-id order, ipu21.LoaderBatchTiles a batch.
	tiles := make([]*ipuexe.Tile, len(pkg.Tiles))
	for i := range pkg.Tiles {
		tiles[i] = &pkg.Tiles[i]
	}
	slices.SortFunc(tiles, func(a, b *ipuexe.Tile) int { return cmp.Compare(a.Physical, b.Physical) })
	buf := make([]byte, transportBytes)
	for first := 0; first < len(tiles); first += ipu21.LoaderBatchTiles {
		if err := fillBatch(buf, tiles[first:min(first+ipu21.LoaderBatchTiles, len(tiles))]); err != nil {
			return fmt.Errorf("c600 %s: load: batch %d: %w", d.node, first/ipu21.LoaderBatchTiles, err)
		}
	}
	if err := installBootloader(d.c, b, ipu21.Tiles); err != nil {
		return fmt.Errorf("c600 %s: load: installing the bootloader: %w", d.node, err)
	}
	return fmt.Errorf("c600 %s: load: tile frames: %w", d.node, errNotBuilt)
}

// StartSession is not built yet.
func (d *Device) StartSession(ctx context.Context) (device.Session, error) {
	return nil, fmt.Errorf("c600 %s: host session: %w", d.node, errNotBuilt)
}

// Close unmaps the window and closes the node. It is safe to call twice.
func (d *Device) Close() error {
	if d.c == nil {
		return nil
	}
	err := d.c.close()
	d.c = nil
	return err
}
