package config

import (
	"fmt"

	"github.com/ipustack/ipustack/ipu21"
)

// Register groups and registers the reference capture lets us name.
// Source: reference/IPU21.md ("Host exchange and runtime"): the C600 capture
// writes DBG_RBRK = 0x40000000 at 0x30000 + tile*0x40 + 4 for every tile.
// Nothing public names the other 531 writes beyond "PCI and exchange
// blocks", so they stay anonymous rather than carrying invented names.
const (
	// TileDebugBase is the offset of tile 0's debug register block.
	TileDebugBase = 0x30000
	// TileDebugStride is the size of one tile's debug register block.
	TileDebugStride = 0x40
	// TileDebugEnd is the first offset past the last tile's block.
	TileDebugEnd = TileDebugBase + ipu21.Tiles*TileDebugStride

	// RegDBGRBRK is the offset of DBG_RBRK inside a tile's debug block.
	RegDBGRBRK = 0x4
	// DBGRBRKInit is the value the reference stack writes to every tile's
	// DBG_RBRK at initialisation.
	DBGRBRKInit = 0x40000000
)

// Group is a family of device registers.
type Group int

const (
	// GroupChip is every register outside a known per-tile block.
	GroupChip Group = iota
	// GroupTileDebug is a register of a tile's debug block.
	GroupTileDebug
)

func (g Group) String() string {
	switch g {
	case GroupChip:
		return "chip"
	case GroupTileDebug:
		return "tile-debug"
	}
	return fmt.Sprintf("Group(%d)", int(g))
}

// Register says what a register offset addresses.
type Register struct {
	Group Group
	// Tile is the tile id for per-tile groups, -1 for chip registers.
	Tile int
	// Reg is the offset inside the tile's block (per-tile groups) or the
	// full offset (chip registers).
	Reg uint32
	// Name is the register's name when known ("DBG_RBRK"), else "".
	Name string
}

// Classify names the register at a byte offset.
func Classify(offset uint32) Register {
	if offset >= TileDebugBase && offset < TileDebugEnd {
		rel := offset - TileDebugBase
		r := Register{Group: GroupTileDebug, Tile: int(rel / TileDebugStride), Reg: rel % TileDebugStride}
		if r.Reg == RegDBGRBRK {
			r.Name = "DBG_RBRK"
		}
		return r
	}
	return Register{Group: GroupChip, Tile: -1, Reg: offset}
}

// String renders the register the way Describe does, without a value:
// "tile 17 DBG_RBRK", "tile 17 debug+0x08", "chip 0x00005400".
func (r Register) String() string {
	switch r.Group {
	case GroupTileDebug:
		if r.Name != "" {
			return fmt.Sprintf("tile %d %s", r.Tile, r.Name)
		}
		return fmt.Sprintf("tile %d debug+%#02x", r.Tile, r.Reg)
	default:
		return fmt.Sprintf("chip %#08x", r.Reg)
	}
}

// Describe renders one write for logs and `ipu inspect`-style listings,
// for example "tile 17 DBG_RBRK = 0x40000000" or "chip 0x00005400 = 0x00000004".
func Describe(w Write) string {
	return fmt.Sprintf("%v = %#08x", Classify(w.Offset), w.Value)
}
