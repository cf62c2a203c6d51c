// Package elf owns Colossus ELF32 objects (e_machine 0xF8, little-endian):
// the in-memory object model, writing and reading object files, and the
// linker that places sections in tile region 0 and resolves symbols and
// relocations.
package elf

import "github.com/ipustack/ipustack/isa"

// Machine is the Colossus ELF e_machine value.
const Machine = 0xF8

// SectionFlags are the ELF section flags ipustack uses.
type SectionFlags uint32

const (
	FlagWrite SectionFlags = 0x1 // SHF_WRITE
	FlagAlloc SectionFlags = 0x2 // SHF_ALLOC
	FlagExec  SectionFlags = 0x4 // SHF_EXECINSTR
)

// Section is one allocatable section of an object.
type Section struct {
	Name  string
	Flags SectionFlags
	Align uint32 // power of two, at least 1
	// NoBits marks a zero-initialised section (SHT_NOBITS): Data is nil and
	// Size gives its length.
	NoBits bool
	Data   []byte
	Size   uint32
	Relocs []Reloc
}

// Len is the section's size in bytes.
func (s *Section) Len() uint32 {
	if s.NoBits {
		return s.Size
	}
	return uint32(len(s.Data))
}

// Reloc is one relocation (an Elf32_Rela entry) against a named symbol.
type Reloc struct {
	Offset uint32 // within the section
	Type   isa.Reloc
	Symbol string
	Addend int32
}

// Bind is a symbol's binding.
type Bind uint8

const (
	Local Bind = iota
	Global
	Weak
)

// SymType is a symbol's type.
type SymType uint8

const (
	NoType SymType = iota
	DataSym
	Func
)

// Symbol is a named location. Section is the index of the defining section
// in Object.Sections, or -1 when the symbol is undefined (or -2 for an
// absolute symbol whose Value is an address).
type Symbol struct {
	Name    string
	Section int
	Value   uint32
	Size    uint32
	Bind    Bind
	Type    SymType
}

// Undefined and Absolute are the special Symbol.Section values.
const (
	Undefined = -1
	Absolute  = -2
)

// Object is a relocatable object (ET_REL).
type Object struct {
	Name     string // file name, for error messages
	Sections []*Section
	Symbols  []*Symbol
}
