package c600

import (
	"errors"
	"fmt"

	"github.com/ipustack/ipustack/ipu21"
)

// ReadTileWords reads 32-bit words of tile memory through the tile debug
// interface (IPU21.md: 0x30000 + tile*0x40 + reg*4), in the supervisor
// context (0): stop the context (run/break) unless it is stopped already,
// save $m0 and $m1, and for each address put it in the data register and
// run "$m1 = debug data; $m0 = [$m1]; debug data = $m0"; then restore $m1,
// $m0 and run/break, clearing the stop's exception. Every poll times out
// naming the register, the value expected and the value read.
func (d *Device) ReadTileWords(tile int, addrs []uint32) ([]uint32, error) {
	if d.c == nil {
		return nil, errors.New("tile debug read: the device is not open")
	}
	if !ipu21.ValidPhysical(tile) {
		return nil, fmt.Errorf("tile debug read: no tile %d (physical ids are 0..%d)", tile, ipu21.Tiles-1)
	}
	for _, a := range addrs {
		if a%4 != 0 || a < ipu21.SRAMBase || uint64(a)+4 > ipu21.SRAMEnd {
			return nil, fmt.Errorf("tile %d debug read at %#x: want a 4-aligned address in SRAM [%#x,%#x)", tile, a, ipu21.SRAMBase, ipu21.SRAMEnd)
		}
	}
	t := tdi{c: d.c, tile: tile}
	const ctx = 0
	oldRB, err := t.read(TDIRunBreak)
	if err != nil {
		return nil, err
	}
	st, err := t.read(TDIContextStatus)
	if err != nil {
		return nil, err
	}
	stopped := func(v uint32) bool { s := v >> (2 * ctx) & 3; return s == 2 || s == 3 }
	wasStopped := stopped(st)
	if !wasStopped {
		if err := t.write(TDIRunBreak, oldRB|1<<ctx); err != nil {
			return nil, err
		}
		reg := TDIAddress(tile, TDIContextStatus)
		if err := waitFor(d.c, fmt.Sprintf("tile %d TDI context status (context %d stopped)", tile, ctx), reg, 2<<(2*ctx), 2<<(2*ctx), waitTimeout); err != nil {
			return nil, err
		}
	}
	out, err := t.readWords(ctx, addrs)
	if !wasStopped {
		err = errors.Join(err, t.write(TDIRunBreak, oldRB))
		if oldRB&(1<<ctx) == 0 {
			err = errors.Join(err, t.write(TDIExceptionClr, 1<<ctx))
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// tdi is one tile's debug interface.
type tdi struct {
	c    Card
	tile int
}

func (t tdi) read(reg uint32) (uint32, error) {
	v, err := t.c.ReadRegister(TDIAddress(t.tile, reg))
	if err != nil {
		return 0, fmt.Errorf("tile %d TDI register %d: %w", t.tile, reg, err)
	}
	return v, nil
}

func (t tdi) write(reg, v uint32) error {
	if err := t.c.WriteRegister(TDIAddress(t.tile, reg), v); err != nil {
		return fmt.Errorf("tile %d TDI register %d: %w", t.tile, reg, err)
	}
	return nil
}

// exec runs one instruction word in context ctx and waits until the
// interface is not busy; an error bit fails naming the word.
func (t tdi) exec(ctx, word uint32) error {
	for _, w := range [][2]uint32{{TDIStatusClear, TDIStatusError &^ 1}, {TDIOwner, ctx}, {TDIInstruction, word}} {
		if err := t.write(w[0], w[1]); err != nil {
			return err
		}
	}
	reg := TDIAddress(t.tile, TDIStatus)
	if err := waitFor(t.c, fmt.Sprintf("tile %d TDI status busy", t.tile), reg, TDIStatusBusy, 0, waitTimeout); err != nil {
		return fmt.Errorf("instruction %#08x: %w", word, err)
	}
	st, err := t.read(TDIStatus)
	if err != nil {
		return err
	}
	if st&TDIStatusError != 0 {
		return fmt.Errorf("tile %d TDI instruction %#08x failed: status %#x", t.tile, word, st)
	}
	return nil
}

// getM reads $m(r) of context ctx.
func (t tdi) getM(ctx, r uint32) (uint32, error) {
	if err := t.exec(ctx, TDIPutDebugDataM|r<<20); err != nil {
		return 0, err
	}
	return t.read(TDIData)
}

// setM writes $m(r) of context ctx.
func (t tdi) setM(ctx, r, v uint32) error {
	if err := t.write(TDIData, v); err != nil {
		return err
	}
	return t.exec(ctx, TDIGetMDebugData|r<<16)
}

// readWords saves $m0/$m1, reads every address and restores them.
func (t tdi) readWords(ctx uint32, addrs []uint32) ([]uint32, error) {
	m0, err := t.getM(ctx, 0)
	if err != nil {
		return nil, err
	}
	m1, err := t.getM(ctx, 1)
	if err != nil {
		return nil, err
	}
	out := make([]uint32, len(addrs))
	for i, a := range addrs {
		if err = t.setM(ctx, 1, a); err != nil {
			break
		}
		if err = t.exec(ctx, TDILoadM0FromM1); err != nil {
			break
		}
		if out[i], err = t.getM(ctx, 0); err != nil {
			break
		}
	}
	err = errors.Join(err, t.setM(ctx, 1, m1), t.setM(ctx, 0, m0))
	if err != nil {
		return nil, err
	}
	return out, nil
}
