package c600model

import (
	"github.com/ipustack/ipustack/device/c600"
	"github.com/ipustack/ipustack/ipu21"
)

// tdiState is one tile's debug interface. The $m registers the injected
// instructions use are the model's own, one set a context: the model never
// writes an emulated tile's registers (docs/c600.md, assumption "debug
// registers"), and the driver restores them as hardware needs.
type tdiState struct {
	regs [16]uint32
	m    [7][16]uint32
}

// tdiReg splits a window offset in the tile debug interface.
func tdiReg(off uint32) (tile int, reg uint32, ok bool) {
	if off < c600.TDIBase || off >= c600.TDIBase+ipu21.Tiles*c600.TDITileStride {
		return 0, 0, false
	}
	return int((off - c600.TDIBase) / c600.TDITileStride), (off - c600.TDIBase) % c600.TDITileStride / 4, true
}

func (c *Card) tdiOf(tile int) *tdiState {
	s := c.tdi[tile]
	if s == nil {
		s = &tdiState{}
		c.tdi[tile] = s
	}
	return s
}

// tdiRead: context status reports a context stopped (2) when its run/break
// bit is set and running (1) otherwise; status is never busy (an
// instruction completes within the write).
func (c *Card) tdiRead(tile int, reg uint32) uint32 {
	s := c.tdiOf(tile)
	if reg == c600.TDIContextStatus {
		var v uint32
		for ctx := range 7 {
			st := uint32(1)
			if s.regs[c600.TDIRunBreak]&(1<<ctx) != 0 {
				st = 2
			}
			v |= st << (2 * ctx)
		}
		return v
	}
	return s.regs[reg]
}

func (c *Card) tdiWrite(tile int, reg, v uint32) error {
	s := c.tdiOf(tile)
	switch reg {
	case c600.TDIStatusClear:
		s.regs[c600.TDIStatus] &^= v
		return nil
	case c600.TDIInstruction:
		return c.tdiExec(tile, s, v)
	}
	s.regs[reg] = v
	return nil
}

// tdiExec runs one of the driver's instruction words in the owning
// context.
func (c *Card) tdiExec(tile int, s *tdiState, w uint32) error {
	ctx := s.regs[c600.TDIOwner]
	if ctx >= 7 {
		return refuse(RuleTDI, "tile %d: instruction %#08x owned by context %d (contexts are 0..6)", tile, w, ctx)
	}
	if s.regs[c600.TDIRunBreak]&(1<<ctx) == 0 {
		return refuse(RuleTDI, "tile %d: instruction %#08x into context %d, which is running (set its run/break bit first)", tile, w, ctx)
	}
	m := &s.m[ctx]
	data := &s.regs[c600.TDIData]
	switch {
	case w&^(0xF<<16) == c600.TDIGetMDebugData:
		m[w>>16&0xF] = *data
	case w&^(0xF<<20) == c600.TDIPutDebugDataM:
		*data = m[w>>20&0xF]
	case w == c600.TDILoadM0FromM1:
		if c.chip == nil || c.chip.Tile(tile) == nil {
			return refuse(RuleTDI, "tile %d: a memory read through the debug interface, but the tile is not loaded", tile)
		}
		v, err := c.chip.Tile(tile).ReadWord(m[1])
		if err != nil {
			s.regs[c600.TDIStatus] |= 1
			return nil
		}
		m[0] = v
	default:
		return refuse(RuleTDI, "tile %d: instruction word %#08x is not one the model executes", tile, w)
	}
	return nil
}
