package elf

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/ipustack/ipustack/isa"
)

// maxFileAlign caps the file-offset alignment of section contents. ELF does
// not require file offsets of ET_REL sections to be aligned at all; aligning
// small alignments keeps the contents easy to inspect with a hex dump, and
// the cap keeps a section with a huge alignment from bloating the file.
const maxFileAlign = 64

// Marshal writes the object as an ELF32 little-endian relocatable file
// (ET_REL, e_machine Machine, e_flags 0: ipustack defines no flags).
//
// Layout: ELF header; the contents of each section in order; one .rela<name>
// section per section that has relocations; .symtab; .strtab; .shstrtab; the
// section header table. Section header indices are: 0 null, 1..n the
// Sections in order (so Symbol.Section i is ELF index i+1), then the .rela
// sections in section order, then .symtab, .strtab, .shstrtab.
//
// Symbol table order: the null symbol; an STT_SECTION symbol for each section
// that a relocation names by section name (see below), in section order;
// Local symbols in Object order; then Global and Weak symbols in Object order;
// then any undefined globals created for relocation names that match nothing.
// .symtab's sh_info is the index of the first non-local symbol.
//
// Relocation symbol names resolve in this order:
//   - "" means no symbol (r_sym 0, S = 0);
//   - the first Symbol with that name;
//   - otherwise the section of that name (which must be unique), through its
//     STT_SECTION symbol: this is how relocations against section-relative
//     locations (e.g. local labels) are expressed in the object model;
//   - otherwise a new undefined global NoType symbol of that name.
//
// Parse applies the inverse convention, so Marshal(Parse(Marshal(o))) is
// byte-identical to Marshal(o). The output depends only on the Object.
func (o *Object) Marshal() ([]byte, error) {
	if o == nil {
		return nil, fmt.Errorf("elf: Marshal of nil object")
	}
	name := o.Name
	if name == "" {
		name = "<object>"
	}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...))
	}

	// Validate sections.
	secByName := map[string][]int{}
	for i, s := range o.Sections {
		if s == nil {
			return nil, errf("section %d is nil", i)
		}
		if strings.IndexByte(s.Name, 0) >= 0 {
			return nil, errf("section %d %q: name contains a NUL byte", i, s.Name)
		}
		if s.Align != 0 && !isPow2(s.Align) {
			return nil, errf("section %d %q: alignment %d is not a power of two", i, s.Name, s.Align)
		}
		if s.NoBits && len(s.Data) != 0 {
			return nil, errf("section %d %q: NoBits section has %d bytes of data", i, s.Name, len(s.Data))
		}
		if s.NoBits && len(s.Relocs) != 0 {
			return nil, errf("section %d %q: NoBits section has relocations", i, s.Name)
		}
		if uint64(len(s.Data)) > 1<<32-1 {
			return nil, errf("section %d %q: too large", i, s.Name)
		}
		secByName[s.Name] = append(secByName[s.Name], i)
	}

	// Validate symbols.
	symByName := map[string]int{}
	for i, sym := range o.Symbols {
		if sym == nil {
			return nil, errf("symbol %d is nil", i)
		}
		if strings.IndexByte(sym.Name, 0) >= 0 {
			return nil, errf("symbol %d %q: name contains a NUL byte", i, sym.Name)
		}
		if _, err := symInfo(sym.Bind, sym.Type); err != nil {
			return nil, errf("symbol %d %q: %v", i, sym.Name, err)
		}
		switch {
		case sym.Section == Undefined || sym.Section == Absolute:
		case sym.Section < 0 || sym.Section >= len(o.Sections):
			return nil, errf("symbol %d %q: section index %d out of range (object has %d sections)", i, sym.Name, sym.Section, len(o.Sections))
		case sym.Value > o.Sections[sym.Section].Len():
			s := o.Sections[sym.Section]
			return nil, errf("symbol %d %q: value 0x%x beyond the end of section %q (size 0x%x)", i, sym.Name, sym.Value, s.Name, s.Len())
		}
		if _, ok := symByName[sym.Name]; !ok {
			symByName[sym.Name] = i
		}
	}

	// Resolve relocation symbol names (see the doc comment for the order).
	type target struct {
		kind int // 0 none, 1 symbol, 2 section, 3 created undefined
		idx  int
	}
	relTargets := make([][]target, len(o.Sections))
	needSecSym := make([]bool, len(o.Sections))
	var created []string
	createdIdx := map[string]int{}
	for i, s := range o.Sections {
		relTargets[i] = make([]target, len(s.Relocs))
		for j, r := range s.Relocs {
			info, ok := isa.RelocByType(r.Type)
			if !ok {
				return nil, errf("section %d %q: relocation %d at offset 0x%x: unknown type %d", i, s.Name, j, r.Offset, uint32(r.Type))
			}
			if uint64(r.Offset)+uint64(info.Size) > uint64(s.Len()) {
				return nil, errf("section %d %q: relocation %d at offset 0x%x: %s needs %d bytes, section size is 0x%x", i, s.Name, j, r.Offset, info.Name, info.Size, s.Len())
			}
			if strings.IndexByte(r.Symbol, 0) >= 0 {
				return nil, errf("section %d %q: relocation %d at offset 0x%x: symbol name contains a NUL byte", i, s.Name, j, r.Offset)
			}
			var t target
			if r.Symbol == "" {
				t = target{kind: 0}
			} else if k, ok := symByName[r.Symbol]; ok {
				t = target{kind: 1, idx: k}
			} else if secs := secByName[r.Symbol]; len(secs) > 0 {
				if len(secs) > 1 {
					return nil, errf("section %d %q: relocation %d at offset 0x%x: %q names %d sections; a section-relative relocation needs a unique section name", i, s.Name, j, r.Offset, r.Symbol, len(secs))
				}
				t = target{kind: 2, idx: secs[0]}
				needSecSym[secs[0]] = true
			} else {
				k, ok := createdIdx[r.Symbol]
				if !ok {
					k = len(created)
					created = append(created, r.Symbol)
					createdIdx[r.Symbol] = k
				}
				t = target{kind: 3, idx: k}
			}
			relTargets[i][j] = t
		}
	}

	// Build the symbol table.
	str := newStrtab()
	syms := []elfSym{{}}
	secSymIdx := make([]uint32, len(o.Sections))
	for i, need := range needSecSym {
		if need {
			secSymIdx[i] = uint32(len(syms))
			syms = append(syms, elfSym{info: stbLocal<<4 | sttSection, shndx: uint16(i + 1)})
		}
	}
	symIdx := make([]uint32, len(o.Symbols))
	addSym := func(k int) {
		sym := o.Symbols[k]
		info, _ := symInfo(sym.Bind, sym.Type)
		var shndx uint16
		switch sym.Section {
		case Undefined:
			shndx = shnUndef
		case Absolute:
			shndx = shnAbs
		default:
			shndx = uint16(sym.Section + 1)
		}
		symIdx[k] = uint32(len(syms))
		syms = append(syms, elfSym{nameOff: str.add(sym.Name), value: sym.Value, size: sym.Size, info: info, shndx: shndx})
	}
	for k, sym := range o.Symbols {
		if sym.Bind == Local {
			addSym(k)
		}
	}
	firstGlobal := uint32(len(syms))
	for k, sym := range o.Symbols {
		if sym.Bind != Local {
			addSym(k)
		}
	}
	createdSym := make([]uint32, len(created))
	for k, n := range created {
		createdSym[k] = uint32(len(syms))
		syms = append(syms, elfSym{nameOff: str.add(n), info: stbGlobal<<4 | sttNotype, shndx: shnUndef})
	}

	// Section headers: null, sections, .rela*, .symtab, .strtab, .shstrtab.
	nsec := len(o.Sections)
	nrela := 0
	for _, s := range o.Sections {
		if len(s.Relocs) > 0 {
			nrela++
		}
	}
	shnum := 1 + nsec + nrela + 3
	if shnum >= shnLoreserve {
		return nil, errf("too many sections (%d section headers; the limit is %d)", shnum, shnLoreserve-1)
	}
	symtabIdx := uint32(1 + nsec + nrela)
	shstr := newStrtab()
	hdrs := make([]shdr, 1, shnum)

	out := make([]byte, ehdrSize, 4096)
	le := binary.LittleEndian
	for _, s := range o.Sections {
		align := s.Align
		if align == 0 {
			align = 1
		}
		out = pad(out, min(align, maxFileAlign))
		h := shdr{nameOff: shstr.add(s.Name), typ: shtProgbits, flags: uint32(s.Flags), off: uint32(len(out)), size: s.Len(), align: align}
		if s.NoBits {
			h.typ = shtNobits
		} else {
			out = append(out, s.Data...)
		}
		hdrs = append(hdrs, h)
	}
	for i, s := range o.Sections {
		if len(s.Relocs) == 0 {
			continue
		}
		out = pad(out, 4)
		off := uint32(len(out))
		for j, r := range s.Relocs {
			var sym uint32
			t := relTargets[i][j]
			switch t.kind {
			case 1:
				sym = symIdx[t.idx]
			case 2:
				sym = secSymIdx[t.idx]
			case 3:
				sym = createdSym[t.idx]
			}
			if uint32(r.Type) > 0xff {
				return nil, errf("section %d %q: relocation %d: type %d does not fit in r_info", i, s.Name, j, uint32(r.Type))
			}
			if sym >= 1<<24 {
				return nil, errf("too many symbols for ELF32 relocations")
			}
			out = le.AppendUint32(out, r.Offset)
			out = le.AppendUint32(out, sym<<8|uint32(r.Type)&0xff)
			out = le.AppendUint32(out, uint32(r.Addend))
		}
		hdrs = append(hdrs, shdr{nameOff: shstr.add(".rela" + s.Name), typ: shtRela, flags: shfInfoLink, off: off,
			size: uint32(len(out)) - off, link: symtabIdx, info: uint32(i + 1), align: 4, entsize: relaSize})
	}
	out = pad(out, 4)
	symOff := uint32(len(out))
	for k := range syms {
		out = appendSym(out, &syms[k])
	}
	hdrs = append(hdrs, shdr{nameOff: shstr.add(".symtab"), typ: shtSymtab, off: symOff, size: uint32(len(out)) - symOff,
		link: symtabIdx + 1, info: firstGlobal, align: 4, entsize: symSize})
	hdrs = append(hdrs, shdr{nameOff: shstr.add(".strtab"), typ: shtStrtab, off: uint32(len(out)), size: uint32(len(str.data)), align: 1})
	out = append(out, str.data...)
	shstrNameOff := shstr.add(".shstrtab")
	hdrs = append(hdrs, shdr{nameOff: shstrNameOff, typ: shtStrtab, off: uint32(len(out)), size: uint32(len(shstr.data)), align: 1})
	out = append(out, shstr.data...)
	out = pad(out, 4)
	shoff := uint32(len(out))
	for k := range hdrs {
		out = appendShdr(out, &hdrs[k])
	}
	if uint64(len(out)) > 1<<32-1 {
		return nil, errf("object too large for ELF32")
	}
	hdr := appendEhdr(nil, etRel, 0, 0, 0, shoff, uint16(shnum), uint16(shnum-1))
	copy(out, hdr)
	return out, nil
}
