package elf

import (
	"encoding/binary"
	"fmt"
)

// maxSegAlign caps p_align: a segment's file offset is made congruent to
// its address modulo p_align, which needs at most p_align-1 bytes of padding.
const maxSegAlign = 4096

// Marshal writes the image as an ELF32 little-endian executable (ET_EXEC,
// e_machine Machine, e_flags 0, e_entry Image.Entry).
//
// Program headers: one PT_LOAD per Segment (p_flags R, plus X and W from
// the section flags; p_filesz the stored bytes, p_memsz including NoBits
// zero-fill). Section headers: null; one SHT_PROGBITS/SHT_NOBITS header per
// placed section in address order, with sh_addr, its original name and
// flags, and its bytes inside its segment's file image; .symtab (locals
// first, then globals, each in Image.Symbols order); .strtab; .shstrtab.
// Load reads the result back.
func (im *Image) Marshal() ([]byte, error) {
	if im == nil {
		return nil, fmt.Errorf("elf: Marshal of nil image")
	}
	le := binary.LittleEndian
	nseg := len(im.Segments)
	nsec := len(im.Sections)
	shnum := 1 + nsec + 3
	if shnum >= shnLoreserve || nseg > 0xffff {
		return nil, fmt.Errorf("elf: image has too many sections or segments for ELF32")
	}

	// Segment contents, each at a file offset congruent to its address.
	out := make([]byte, ehdrSize+nseg*phdrSize, 4096)
	segOff := make([]uint32, nseg)
	segAlign := make([]uint32, nseg)
	for i := range im.Segments {
		g := &im.Segments[i]
		a := uint32(4)
		for _, s := range im.Sections {
			if s.Addr >= g.Addr && uint64(s.Addr) < uint64(g.Addr)+uint64(g.MemSize) {
				a = max(a, min(s.Align, maxSegAlign))
			}
		}
		segAlign[i] = a
		for uint32(len(out))%a != g.Addr%a {
			out = append(out, 0)
		}
		segOff[i] = uint32(len(out))
		out = append(out, g.Data...)
	}
	for i := range im.Segments {
		g := &im.Segments[i]
		flags := uint32(pfR)
		if g.Flags&FlagExec != 0 {
			flags |= pfX
		}
		if g.Flags&FlagWrite != 0 {
			flags |= pfW
		}
		if g.MemSize < uint32(len(g.Data)) {
			return nil, fmt.Errorf("elf: segment %d at 0x%x: MemSize %d is smaller than its %d bytes", i, g.Addr, g.MemSize, len(g.Data))
		}
		b := out[ehdrSize+i*phdrSize:]
		for k, v := range []uint32{ptLoad, segOff[i], g.Addr, g.Addr, uint32(len(g.Data)), g.MemSize, flags, segAlign[i]} {
			le.PutUint32(b[4*k:], v)
		}
	}

	// Section headers point into the segments.
	shstr := newStrtab()
	hdrs := make([]shdr, 1, shnum)
	for _, s := range im.Sections {
		h := shdr{nameOff: shstr.add(s.Name), typ: shtProgbits, flags: uint32(s.Flags), addr: s.Addr, size: s.Size, align: max(s.Align, 1)}
		found := false
		for i, g := range im.Segments {
			if s.Addr >= g.Addr && uint64(s.Addr)+uint64(s.Size) <= uint64(g.Addr)+uint64(g.MemSize) {
				if !s.NoBits && uint64(s.Addr-g.Addr)+uint64(s.Size) > uint64(len(g.Data)) {
					continue
				}
				h.off = segOff[i] + (s.Addr - g.Addr)
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("elf: section %s of %s at 0x%x (size %d) is in no segment", s.Name, s.Object, s.Addr, s.Size)
		}
		if s.NoBits {
			h.typ = shtNobits
		}
		hdrs = append(hdrs, h)
	}

	// Symbol table: locals first.
	str := newStrtab()
	syms := []elfSym{{}}
	add := func(s *ImageSymbol) error {
		info, err := symInfo(s.Bind, s.Type)
		if err != nil {
			return fmt.Errorf("elf: image symbol %q: %v", s.Name, err)
		}
		shndx := uint16(shnAbs)
		if s.Section != Absolute {
			if s.Section < 0 || s.Section >= nsec {
				return fmt.Errorf("elf: image symbol %q: section index %d out of range", s.Name, s.Section)
			}
			shndx = uint16(s.Section + 1)
		}
		syms = append(syms, elfSym{nameOff: str.add(s.Name), value: s.Addr, size: s.Size, info: info, shndx: shndx})
		return nil
	}
	for i := range im.Symbols {
		if im.Symbols[i].Bind == Local {
			if err := add(&im.Symbols[i]); err != nil {
				return nil, err
			}
		}
	}
	firstGlobal := uint32(len(syms))
	for i := range im.Symbols {
		if im.Symbols[i].Bind != Local {
			if err := add(&im.Symbols[i]); err != nil {
				return nil, err
			}
		}
	}
	out = pad(out, 4)
	symOff := uint32(len(out))
	for k := range syms {
		out = appendSym(out, &syms[k])
	}
	symtabIdx := uint32(1 + nsec)
	hdrs = append(hdrs, shdr{nameOff: shstr.add(".symtab"), typ: shtSymtab, off: symOff, size: uint32(len(out)) - symOff,
		link: symtabIdx + 1, info: firstGlobal, align: 4, entsize: symSize})
	hdrs = append(hdrs, shdr{nameOff: shstr.add(".strtab"), typ: shtStrtab, off: uint32(len(out)), size: uint32(len(str.data)), align: 1})
	out = append(out, str.data...)
	n := shstr.add(".shstrtab")
	hdrs = append(hdrs, shdr{nameOff: n, typ: shtStrtab, off: uint32(len(out)), size: uint32(len(shstr.data)), align: 1})
	out = append(out, shstr.data...)
	out = pad(out, 4)
	shoff := uint32(len(out))
	for k := range hdrs {
		out = appendShdr(out, &hdrs[k])
	}
	var phoff uint32
	if nseg > 0 {
		phoff = ehdrSize
	}
	copy(out, appendEhdr(nil, etExec, im.Entry, phoff, uint16(nseg), shoff, uint16(shnum), uint16(shnum-1)))
	return out, nil
}
