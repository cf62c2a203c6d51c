package c600

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Load checks the package and frames every tile (before touching the
// card), installs the bootloader on every tile through the autoloader, then
// hands the tiles over in batches through the transport buffer: the buffer
// (TransportBytes, attached as buffer 0 after EXCHANGE_WINDOW_BASE =
// HEXOPT), the exchange buffers set up for loading, each batch's
// descriptors and frames followed by the GS1 handshake (GS1 = 1, wait for
// mark 0), then the execute sentinel (the buffer filled with 0xFF, GS1 =
// 1), the final mark (GS1 = the number of batches; the handshake completes
// once the application reached its initial synchronization), and the
// exchange buffers and CCSR restored.
func (d *Device) Load(ctx context.Context, pkg *ipuexe.Package, progress func(done, total int)) error {
	if err := d.need("load", device.StageInitialized); err != nil {
		return err
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("c600 %s: load: %w", d.node, fmt.Errorf(format, a...))
	}
	b, err := d.opts.loadBootloader()
	if err != nil {
		return fail("%w", err)
	}
	if pkg == nil || len(pkg.Tiles) == 0 {
		return fail("the package has no tiles")
	}
	t, err := ipu21.Lookup(pkg.Target)
	if err != nil {
		return fail("%w", err)
	}
	if err := pkg.Validate(t); err != nil {
		return fail("%w", err)
	}
	plan, err := ipuexe.NewHostPlan(pkg)
	if err != nil {
		return fail("%w", err)
	}
	// Tiles in physical-id order, ipu21.LoaderBatchTiles a batch; every
	// batch is built (and so checked) once before the card is touched.
	tiles := make([]*ipuexe.Tile, len(pkg.Tiles))
	for i := range pkg.Tiles {
		tiles[i] = &pkg.Tiles[i]
	}
	slices.SortFunc(tiles, func(a, b *ipuexe.Tile) int { return cmp.Compare(a.Physical, b.Physical) })
	var batches [][]*ipuexe.Tile
	for first := 0; first < len(tiles); first += ipu21.LoaderBatchTiles {
		batches = append(batches, tiles[first:min(first+ipu21.LoaderBatchTiles, len(tiles))])
	}
	check := make([]byte, TransportBytes)
	for i, bt := range batches {
		if err := fillBatch(check, bt); err != nil {
			return fail("batch %d: %w", i, err)
		}
	}
	check = nil

	if err := installBootloader(d.c, b, ipu21.Tiles); err != nil {
		return fail("installing the bootloader: %w", err)
	}
	buf, err := d.c.HostMemory(TransportBytes)
	if err != nil {
		return fail("transport buffer: %w", err)
	}
	defer d.c.FreeHostMemory(buf)
	if err := d.attach(0, buf); err != nil {
		return fail("attaching the transport buffer: %w", err)
	}
	defer d.c.Ioctl(IoctlBufferDetach, 0)
	saved, err := d.setupXB()
	if err != nil {
		return fail("exchange-buffer setup: %w", err)
	}
	restored := false
	defer func() {
		if !restored {
			d.restoreXB(saved) // best effort on the error path
		}
	}()
	done := 0
	for i, bt := range batches {
		if err := ctx.Err(); err != nil {
			return fail("%w", err)
		}
		if err := fillBatch(buf, bt); err != nil {
			return fail("batch %d: %w", i, err)
		}
		if err := d.handshake(RegHSPGS1, "HSP_GS1", 1); err != nil {
			return fail("batch %d of %d: %w", i+1, len(batches), err)
		}
		done += len(bt)
		if progress != nil {
			progress(done, len(tiles))
		}
	}
	for i := range buf {
		buf[i] = 0xFF
	}
	if err := waitFor(d.c, "HSP_GS1 mark", RegHSPGS1, HSPMark, 0, handshakeTimeout); err != nil {
		return fail("before the execute sentinel: %w", err)
	}
	if err := d.handshake(RegHSPGS1, "HSP_GS1", 1); err != nil {
		return fail("execute sentinel: %w", err)
	}
	if err := d.handshake(RegHSPGS1, "HSP_GS1", uint32(len(batches))); err != nil {
		return fail("final mark %d (the application's initial synchronization): %w", len(batches), err)
	}
	restored = true
	if err := d.restoreXB(saved); err != nil {
		return fail("restoring the exchange buffers: %w", err)
	}
	d.plan, d.mark, d.st = plan, len(batches), device.StageLoaded
	return nil
}

// attach attaches mem as buffer index, EXCHANGE_WINDOW_BASE = HEXOPT first.
func (d *Device) attach(index uint32, mem []byte) error {
	if err := d.c.WriteRegister(RegExchangeWindowBase, ExchangeWindowHEXOPT); err != nil {
		return err
	}
	if err := d.c.AttachBuffer(index, mem); err != nil {
		return fmt.Errorf("BUFFER_ATTACH %d (%d bytes): %w", index, len(mem), err)
	}
	return nil
}

// handshake writes mark to an HSP register and waits for its mark to read
// 0 again.
func (d *Device) handshake(reg uint32, name string, mark uint32) error {
	if err := d.c.WriteRegister(reg, mark); err != nil {
		return fmt.Errorf("writing %s = %d: %w", name, mark, err)
	}
	return waitFor(d.c, name+" mark", reg, HSPMark, 0, handshakeTimeout)
}

// setupXB prepares the exchange buffers for loading: save CCSR, park all
// XBCount request-ID controls at XBParkID, clear CCSR no-snoop and ECRC
// (read back), then give XB 0-7 request id 0. It returns the saved CCSR.
func (d *Device) setupXB() (uint32, error) {
	saved, err := d.c.ReadRegister(RegCCSR)
	if err != nil {
		return 0, err
	}
	for i := range XBCount {
		if err := d.c.WriteRegister(XBAddress(i), XBControl(XBParkID)); err != nil {
			return saved, err
		}
	}
	if err := d.c.WriteRegister(RegCCSR, saved&^(CCSRNoSnoop|CCSRECRC)); err != nil {
		return saved, err
	}
	if _, err := d.c.ReadRegister(RegCCSR); err != nil {
		return saved, err
	}
	for i := range 8 {
		if err := d.c.WriteRegister(XBAddress(i), XBControl(0)); err != nil {
			return saved, err
		}
	}
	return saved, nil
}

// restoreXB gives every exchange buffer its operational request id and
// restores CCSR.
func (d *Device) restoreXB(ccsr uint32) error {
	var errs []error
	for i := range XBCount {
		errs = append(errs, d.c.WriteRegister(XBAddress(i), XBControl(XBOperational(i))))
	}
	errs = append(errs, d.c.WriteRegister(RegCCSR, ccsr))
	_, err := d.c.ReadRegister(RegCCSR)
	return errors.Join(append(errs, err)...)
}
