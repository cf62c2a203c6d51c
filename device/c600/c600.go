package c600

import (
	"context"
	"errors"
	"fmt"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/config"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Name is the backend's registry name.
const Name = "c600"

func init() {
	device.RegisterHardware(Name, DefaultNode, func(opts device.Options) (device.Device, error) {
		o, err := device.BackendOptions[Options]("c600", opts.Backend)
		if err != nil {
			return nil, err
		}
		return New(opts.Node, o, OpenCard), nil
	})
}

// Options configure the card.
type Options struct {
	// Bootloader is the SDK's tile bootloader ELF
	// (bin/ipu/tile_bootloader_cc_ipu21.elf); Load needs it, or
	// BootloaderELF, the same file's bytes.
	Bootloader    string
	BootloaderELF []byte
}

// Device is one C600 card, driven through a Card.
type Device struct {
	opts    Options
	node    string
	open    Opener
	c       Card
	st      device.Stage
	plan    *ipuexe.HostPlan
	mark    int
	session *session
}

// New makes the driver of the card at node ("" is DefaultNode), opened by
// open when Open is called: OpenCard for a real card.
func New(node string, opts Options, open Opener) *Device {
	if node == "" {
		node = DefaultNode
	}
	return &Device{opts: opts, node: node, open: open}
}

// Info describes the card.
func (d *Device) Info() device.Info {
	return device.Info{Name: Name, Path: d.node, Target: "ipu21", Tiles: ipu21.Tiles, ClockHz: ipu21.ClockHz}
}

func (d *Device) need(op string, want ...device.Stage) error {
	if err := d.st.Need(op, want...); err != nil {
		return fmt.Errorf("c600 %s: %w", d.node, err)
	}
	return nil
}

// Open opens the card (the device node, the configuration window) and
// attaches (USER_ATTACH 0, SET_IPU_ID 0).
func (d *Device) Open(ctx context.Context) error {
	if err := d.need("open", device.StageNew); err != nil {
		return err
	}
	c, err := d.open(d.node)
	if err != nil {
		return err
	}
	for _, s := range []struct {
		what string
		req  uint32
	}{{"USER_ATTACH", IoctlUserAttach}, {"SET_IPU_ID", IoctlSetIPUID}} {
		if err := c.Ioctl(s.req, 0); err != nil {
			c.Close()
			return fmt.Errorf("c600 %s: %s (%#x): %w", d.node, s.what, s.req, err)
		}
	}
	d.c, d.st = c, device.StageOpen
	return ctx.Err()
}

// Initialize runs the reset sequence: STOP_MONITORING, the mailbox check,
// START_MONITORING, ACCUMULATE_ERRORS, RESET_DEVICE, SET_SECONDARY_IPU_ID.
func (d *Device) Initialize(ctx context.Context) error {
	if err := d.need("initialize", device.StageOpen, device.StageInitialized, device.StageLoaded); err != nil {
		return err
	}
	if err := d.c.Ioctl(IoctlStopMonitoring, 0); err != nil {
		return fmt.Errorf("c600 %s: STOP_MONITORING: %w", d.node, err)
	}
	resp, err := d.c.Mailbox([5]uint32{MailboxReset})
	if err != nil {
		return fmt.Errorf("c600 %s: MAILBOX_WRITE_READ: %w", d.node, err)
	}
	if resp[0]>>16 != MailboxReset>>16 {
		return fmt.Errorf("c600 %s: mailbox reset response %#08x: want high 16 bits %#04x", d.node, resp[0], MailboxReset>>16)
	}
	for _, s := range []struct {
		what string
		req  uint32
	}{{"START_MONITORING", IoctlStartMonitoring}, {"ACCUMULATE_ERRORS", IoctlAccumulateErrors}, {"RESET_DEVICE", IoctlResetDevice}} {
		if err := d.c.Ioctl(s.req, 0); err != nil {
			return fmt.Errorf("c600 %s: %s: %w", d.node, s.what, err)
		}
	}
	if err := d.c.SetSecondaryID(0); err != nil {
		return fmt.Errorf("c600 %s: SET_SECONDARY_IPU_ID: %w", d.node, err)
	}
	d.plan, d.mark, d.st = nil, 0, device.StageInitialized
	return ctx.Err()
}

// ReplayConfig writes the configuration, skipping the writes to HSP GS1 and
// GS2 (the capture's protocol writes), then zeroes both and checks they
// read 0.
func (d *Device) ReplayConfig(ctx context.Context, writes []config.Write) error {
	if err := d.need("replay configuration", device.StageInitialized); err != nil {
		return err
	}
	for i, w := range writes {
		if w.Offset == RegHSPGS1 || w.Offset == RegHSPGS2 {
			continue
		}
		if err := d.c.WriteRegister(w.Offset, w.Value); err != nil {
			return fmt.Errorf("c600 %s: configuration write %d: %w", d.node, i, err)
		}
	}
	for _, r := range []struct {
		name string
		off  uint32
	}{{"HSP_GS1", RegHSPGS1}, {"HSP_GS2", RegHSPGS2}} {
		if err := d.c.WriteRegister(r.off, 0); err != nil {
			return fmt.Errorf("c600 %s: clearing %s: %w", d.node, r.name, err)
		}
		v, err := d.c.ReadRegister(r.off)
		if err != nil {
			return fmt.Errorf("c600 %s: reading %s: %w", d.node, r.name, err)
		}
		if v&HSPMark != 0 {
			return fmt.Errorf("c600 %s: %s (%#x) did not clear: want mark 0, read %d", d.node, r.name, r.off, v&HSPMark)
		}
	}
	return ctx.Err()
}

// StartupMark is the loader's final mark (the number of batches loaded).
func (d *Device) StartupMark() int { return d.mark }

// Close ends a session, then closes the card. It is safe to call twice.
func (d *Device) Close() error {
	var err error
	if d.session != nil {
		err = d.session.Close()
	}
	if d.c != nil {
		err = errors.Join(err, d.c.Close())
	}
	d.c, d.session, d.st = nil, nil, device.StageClosed
	return err
}
