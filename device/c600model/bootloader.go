package c600model

import (
	"encoding/binary"

	"github.com/ipustack/ipustack/device/c600"
)

// standInTag fills the stand-in bootloader's segment.
const standInTag = "ipustack c600model stand-in bootloader: not code; the card model performs the SDK bootloader's effect\x00"

// StandInBootloader is an ELF32 file the driver accepts as a bootloader
// (one loadable 1 KiB segment at c600.BootloaderBase) built here, holding
// a text tag, not code: the model never runs it (the SDK's bootloader is
// not redistributable, and what it does inside is not public). The model
// places the autoloader's bytes in tile memory as the autoloader would.
func StandInBootloader() []byte {
	le := binary.LittleEndian
	const eh, ph, seg = 52, 32, 1024
	b := make([]byte, eh+ph+seg)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 1, 1, 1 // ELFCLASS32, little-endian, version 1
	le.PutUint16(b[16:], 2)    // ET_EXEC
	le.PutUint16(b[18:], 0xF8) // EM: Graphcore Colossus
	le.PutUint32(b[20:], 1)
	le.PutUint32(b[24:], c600.BootloaderBase) // e_entry
	le.PutUint32(b[28:], eh)                  // e_phoff
	le.PutUint16(b[40:], eh)
	le.PutUint16(b[42:], ph)
	le.PutUint16(b[44:], 1)
	p := b[eh:]
	le.PutUint32(p[0:], 1) // PT_LOAD
	le.PutUint32(p[4:], eh+ph)
	le.PutUint32(p[8:], c600.BootloaderBase)
	le.PutUint32(p[12:], c600.BootloaderBase)
	le.PutUint32(p[16:], seg)
	le.PutUint32(p[20:], seg)
	le.PutUint32(p[24:], 5) // R+X
	le.PutUint32(p[28:], 4)
	copy(b[eh+ph:], standInTag)
	return b
}
