package elf

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// ELF32 constants used by the writer and the reader. They are spelled out
// here rather than taken from debug/elf so that the byte layout this package
// produces is visible in one place.
const (
	ehdrSize = 52 // sizeof(Elf32_Ehdr)
	phdrSize = 32 // sizeof(Elf32_Phdr)
	shdrSize = 40 // sizeof(Elf32_Shdr)
	symSize  = 16 // sizeof(Elf32_Sym)
	relaSize = 12 // sizeof(Elf32_Rela)

	etRel  = 1
	etExec = 2

	shtNull     = 0
	shtProgbits = 1
	shtSymtab   = 2
	shtStrtab   = 3
	shtRela     = 4
	shtNobits   = 8
	shtRel      = 9

	shfInfoLink = 0x40

	shnUndef     = 0
	shnLoreserve = 0xff00
	shnAbs       = 0xfff1
	shnCommon    = 0xfff2
	shnXindex    = 0xffff

	stbLocal  = 0
	stbGlobal = 1
	stbWeak   = 2

	sttNotype  = 0
	sttObject  = 1
	sttFunc    = 2
	sttSection = 3
	sttFile    = 4

	ptLoad = 1
	pfX    = 1
	pfW    = 2
	pfR    = 4
)

// strtab builds an ELF string table. Index 0 is the empty string; equal
// names share one entry so that the output depends only on the order in
// which names are added.
type strtab struct {
	data []byte
	idx  map[string]uint32
}

func newStrtab() *strtab { return &strtab{data: []byte{0}, idx: map[string]uint32{"": 0}} }

func (t *strtab) add(s string) uint32 {
	if i, ok := t.idx[s]; ok {
		return i
	}
	i := uint32(len(t.data))
	t.data = append(t.data, s...)
	t.data = append(t.data, 0)
	t.idx[s] = i
	return i
}

// shdr is one section header as written or read.
type shdr struct {
	name                                                    string
	nameOff                                                 uint32
	typ, flags, addr, off, size, link, info, align, entsize uint32
}

func appendShdr(b []byte, h *shdr) []byte {
	le := binary.LittleEndian
	for _, v := range []uint32{h.nameOff, h.typ, h.flags, h.addr, h.off, h.size, h.link, h.info, h.align, h.entsize} {
		b = le.AppendUint32(b, v)
	}
	return b
}

// elfSym is one Elf32_Sym as written or read.
type elfSym struct {
	name    string
	nameOff uint32
	value   uint32
	size    uint32
	info    uint8
	other   uint8
	shndx   uint16
}

func appendSym(b []byte, s *elfSym) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, s.nameOff)
	b = le.AppendUint32(b, s.value)
	b = le.AppendUint32(b, s.size)
	b = append(b, s.info, s.other)
	return le.AppendUint16(b, s.shndx)
}

// appendEhdr writes an ELF32 little-endian header with the fields that vary.
func appendEhdr(b []byte, typ uint16, entry, phoff uint32, phnum uint16, shoff uint32, shnum, shstrndx uint16) []byte {
	le := binary.LittleEndian
	b = append(b, 0x7f, 'E', 'L', 'F', 1 /* ELFCLASS32 */, 1 /* ELFDATA2LSB */, 1 /* EV_CURRENT */, 0 /* ELFOSABI_NONE */)
	b = append(b, make([]byte, 8)...)
	b = le.AppendUint16(b, typ)
	b = le.AppendUint16(b, Machine)
	b = le.AppendUint32(b, 1) // e_version
	b = le.AppendUint32(b, entry)
	b = le.AppendUint32(b, phoff)
	b = le.AppendUint32(b, shoff)
	b = le.AppendUint32(b, 0) // e_flags: ipustack defines none (see Object.Marshal)
	b = le.AppendUint16(b, ehdrSize)
	if phnum > 0 {
		b = le.AppendUint16(b, phdrSize)
	} else {
		b = le.AppendUint16(b, 0)
	}
	b = le.AppendUint16(b, phnum)
	b = le.AppendUint16(b, shdrSize)
	b = le.AppendUint16(b, shnum)
	return le.AppendUint16(b, shstrndx)
}

// pad appends zero bytes until len(b) is a multiple of align (a power of two).
func pad(b []byte, align uint32) []byte {
	if align <= 1 {
		return b
	}
	for uint32(len(b))&(align-1) != 0 {
		b = append(b, 0)
	}
	return b
}

func isPow2(v uint32) bool { return v != 0 && bits.OnesCount32(v) == 1 }

// symInfo packs binding and type into st_info.
func symInfo(b Bind, t SymType) (uint8, error) {
	var eb, et uint8
	switch b {
	case Local:
		eb = stbLocal
	case Global:
		eb = stbGlobal
	case Weak:
		eb = stbWeak
	default:
		return 0, fmt.Errorf("unknown binding %d", b)
	}
	switch t {
	case NoType:
		et = sttNotype
	case DataSym:
		et = sttObject
	case Func:
		et = sttFunc
	default:
		return 0, fmt.Errorf("unknown symbol type %d", t)
	}
	return eb<<4 | et, nil
}

func (b Bind) String() string {
	switch b {
	case Local:
		return "local"
	case Global:
		return "global"
	case Weak:
		return "weak"
	}
	return fmt.Sprintf("bind(%d)", uint8(b))
}

func (t SymType) String() string {
	switch t {
	case NoType:
		return "notype"
	case DataSym:
		return "object"
	case Func:
		return "func"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}
