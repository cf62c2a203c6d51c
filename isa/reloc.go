package isa

import (
	"encoding/binary"
	"fmt"
)

// Reloc is a Colossus ELF relocation type (the r_info type of an Elf32_Rela).
type Reloc uint32

// The Colossus relocation set. Numbers and patch rules are the public ones
// (LLVM Colossus fork, llvm/BinaryFormat/ColossusRelocs.h).
const (
	RelocNone         Reloc = 0
	Reloc8            Reloc = 1
	Reloc16           Reloc = 2
	Reloc20           Reloc = 3
	Reloc32           Reloc = 4
	Reloc64           Reloc = 5
	RelocRelative16S2 Reloc = 6
	Reloc18S2         Reloc = 7
	Reloc19S2         Reloc = 8
	RelocRun          Reloc = 9
	Reloc16S3         Reloc = 14
	Reloc16S4         Reloc = 15
	Reloc16S5         Reloc = 16
	Reloc21           Reloc = 17
)

// Region0Base is the image base that RELATIVE_16_S2 and RUN subtract
// (TMEM_REGION0_BASE_ADDR, the start of tile SRAM).
const Region0Base = 0x4C000

// RelocInfo says how a relocation patches the bytes at its offset.
type RelocInfo struct {
	Type Reloc
	Name string
	Size int // bytes read and written
	// Fields within the little-endian unit at the offset, most significant
	// first; nil for whole-unit data relocations.
	Fields []Field
	Shift  uint8 // the value must be a multiple of 1<<Shift; stored value>>Shift
	Base   int64 // subtracted before shifting
	Bits   int   // unsigned width after shifting (64 means unchecked)
}

var relocs = map[Reloc]*RelocInfo{
	RelocNone:         {Type: RelocNone, Name: "R_COLOSSUS_NONE"},
	Reloc8:            {Type: Reloc8, Name: "R_COLOSSUS_8", Size: 1, Bits: 8},
	Reloc16:           {Type: Reloc16, Name: "R_COLOSSUS_16", Size: 2, Bits: 16},
	Reloc20:           {Type: Reloc20, Name: "R_COLOSSUS_20", Size: 4, Bits: 20, Fields: []Field{{Lo: 0, Width: 20}}},
	Reloc32:           {Type: Reloc32, Name: "R_COLOSSUS_32", Size: 4, Bits: 32},
	Reloc64:           {Type: Reloc64, Name: "R_COLOSSUS_64", Size: 8, Bits: 64},
	RelocRelative16S2: {Type: RelocRelative16S2, Name: "R_COLOSSUS_RELATIVE_16_S2", Size: 2, Bits: 16, Shift: 2, Base: Region0Base},
	Reloc18S2:         {Type: Reloc18S2, Name: "R_COLOSSUS_18_S2", Size: 4, Bits: 18, Shift: 2, Fields: []Field{{Lo: 0, Width: 18}}},
	Reloc19S2:         {Type: Reloc19S2, Name: "R_COLOSSUS_19_S2", Size: 4, Bits: 19, Shift: 2, Fields: []Field{{Lo: 0, Width: 19}}},
	RelocRun:          {Type: RelocRun, Name: "R_COLOSSUS_RUN", Size: 4, Bits: 16, Shift: 2, Base: Region0Base, Fields: []Field{{Lo: 16, Width: 4}, {Lo: 0, Width: 12}}},
	Reloc16S3:         {Type: Reloc16S3, Name: "R_COLOSSUS_16_S3", Size: 2, Bits: 16, Shift: 3},
	Reloc16S4:         {Type: Reloc16S4, Name: "R_COLOSSUS_16_S4", Size: 2, Bits: 16, Shift: 4},
	Reloc16S5:         {Type: Reloc16S5, Name: "R_COLOSSUS_16_S5", Size: 2, Bits: 16, Shift: 5},
	Reloc21:           {Type: Reloc21, Name: "R_COLOSSUS_21", Size: 4, Bits: 21, Fields: []Field{{Lo: 0, Width: 21}}},
}

// RelocByType returns the description of a relocation type.
func RelocByType(t Reloc) (*RelocInfo, bool) {
	r, ok := relocs[t]
	return r, ok
}

func (t Reloc) String() string {
	if r, ok := relocs[t]; ok {
		return r.Name
	}
	return fmt.Sprintf("R_COLOSSUS_UNKNOWN(%d)", uint32(t))
}

// RelocTypes lists every known relocation type in numeric order.
func RelocTypes() []Reloc {
	return []Reloc{RelocNone, Reloc8, Reloc16, Reloc20, Reloc32, Reloc64, RelocRelative16S2,
		Reloc18S2, Reloc19S2, RelocRun, Reloc16S3, Reloc16S4, Reloc16S5, Reloc21}
}

// Apply patches loc (the bytes at the relocation's offset) with value
// (S + A). It reports a value that is misaligned or does not fit.
func (r *RelocInfo) Apply(loc []byte, value int64) error {
	if r.Type == RelocNone {
		return nil
	}
	if len(loc) < r.Size {
		return fmt.Errorf("%s needs %d bytes at its offset, have %d", r.Name, r.Size, len(loc))
	}
	v := value - r.Base
	if r.Shift > 0 && v&(int64(1)<<r.Shift-1) != 0 {
		return fmt.Errorf("%s: value 0x%x is not aligned to %d bytes", r.Name, value, int64(1)<<r.Shift)
	}
	v >>= r.Shift
	if r.Bits < 64 && (v < 0 || v >= int64(1)<<r.Bits) {
		return fmt.Errorf("%s out of range: %d is not in [0, %d]", r.Name, v, int64(1)<<r.Bits-1)
	}
	u := uint64(v)
	switch r.Size {
	case 1:
		loc[0] = byte(u)
	case 2:
		binary.LittleEndian.PutUint16(loc, uint16(u))
	case 8:
		binary.LittleEndian.PutUint64(loc, u)
	case 4:
		w := binary.LittleEndian.Uint32(loc)
		if r.Fields == nil {
			w = uint32(u)
		} else {
			shift := r.Bits
			for _, f := range r.Fields {
				shift -= int(f.Width)
				part := uint32(u>>uint(shift)) & (uint32(1)<<f.Width - 1)
				w = w&^f.mask() | part<<f.Lo
			}
		}
		binary.LittleEndian.PutUint32(loc, w)
	}
	return nil
}
