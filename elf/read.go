package elf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/ipustack/ipustack/isa"
)

// rawFile is an ELF file after the checks common to objects and
// executables: header, section headers with names, and the symbol table.
type rawFile struct {
	name   string
	data   []byte
	typ    uint16
	entry  uint32
	shdrs  []shdr
	symtab int // index of the SHT_SYMTAB section, or -1
	syms   []elfSym
}

func (f *rawFile) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", f.name, fmt.Sprintf(format, args...))
}

// secErrorf reports a problem in section i, naming it.
func (f *rawFile) secErrorf(i int, format string, args ...any) error {
	return fmt.Errorf("%s: section %d %q: %s", f.name, i, f.shdrs[i].name, fmt.Sprintf(format, args...))
}

// bytesOf returns the file contents of section i, bounds-checked.
func (f *rawFile) bytesOf(i int) ([]byte, error) {
	h := &f.shdrs[i]
	if uint64(h.off)+uint64(h.size) > uint64(len(f.data)) {
		return nil, f.secErrorf(i, "contents [0x%x, 0x%x) extend past the end of the file (%d bytes)", h.off, uint64(h.off)+uint64(h.size), len(f.data))
	}
	return f.data[h.off : h.off+h.size], nil
}

// cstring reads the NUL-terminated string at off in a string table.
func cstring(tab []byte, off uint32) (string, bool) {
	if uint64(off) >= uint64(len(tab)) {
		return "", false
	}
	end := bytes.IndexByte(tab[off:], 0)
	if end < 0 {
		return "", false
	}
	return string(tab[off : int(off)+end]), true
}

var typeNames = map[uint16]string{0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}

// readRaw checks the ELF header and reads the section headers and the
// symbol table. Every offset and size is checked against the file.
func readRaw(name string, data []byte) (*rawFile, error) {
	f := &rawFile{name: name, data: data, symtab: -1}
	if len(data) < ehdrSize {
		return nil, f.errorf("file is %d bytes, shorter than an ELF32 header (%d bytes)", len(data), ehdrSize)
	}
	if !bytes.Equal(data[:4], []byte{0x7f, 'E', 'L', 'F'}) {
		return nil, f.errorf("not an ELF file (magic % x)%s", data[:4], otherKind(data))
	}
	if data[4] != 1 {
		hint := ""
		if data[4] == 2 {
			hint = ": a 64-bit ELF file, not a Colossus IPU one"
		}
		return nil, f.errorf("EI_CLASS is %d, want 1 (ELFCLASS32)%s", data[4], hint)
	}
	if data[5] != 1 {
		return nil, f.errorf("EI_DATA is %d, want 1 (ELFDATA2LSB, little-endian)", data[5])
	}
	if data[6] != 1 {
		return nil, f.errorf("EI_VERSION is %d, want 1", data[6])
	}
	le := binary.LittleEndian
	f.typ = le.Uint16(data[16:])
	if m := le.Uint16(data[18:]); m != Machine {
		return nil, f.errorf("e_machine is 0x%x, want 0x%x (Colossus)", m, Machine)
	}
	if v := le.Uint32(data[20:]); v != 1 {
		return nil, f.errorf("e_version is %d, want 1", v)
	}
	f.entry = le.Uint32(data[24:])
	shoff := le.Uint32(data[32:])
	// e_flags (data[36:40]) is not interpreted: ipustack writes 0 and
	// accepts what other Colossus tools write.
	shentsize := le.Uint16(data[46:])
	shnum := le.Uint16(data[48:])
	shstrndx := le.Uint16(data[50:])
	if shnum == 0 {
		return nil, f.errorf("no section headers (e_shnum 0, e_shoff 0x%x); extended section numbering is not supported", shoff)
	}
	if shentsize != shdrSize {
		return nil, f.errorf("e_shentsize is %d, want %d", shentsize, shdrSize)
	}
	if uint64(shoff)+uint64(shnum)*shdrSize > uint64(len(data)) {
		return nil, f.errorf("section header table [0x%x, +%d*%d) extends past the end of the file (%d bytes)", shoff, shnum, shdrSize, len(data))
	}
	if shstrndx == shnUndef || shstrndx >= shnum {
		return nil, f.errorf("e_shstrndx %d is not a section index (e_shnum %d)", shstrndx, shnum)
	}
	f.shdrs = make([]shdr, shnum)
	for i := range f.shdrs {
		b := data[uint64(shoff)+uint64(i)*shdrSize:]
		h := &f.shdrs[i]
		h.nameOff, h.typ, h.flags, h.addr = le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:]), le.Uint32(b[12:])
		h.off, h.size, h.link, h.info = le.Uint32(b[16:]), le.Uint32(b[20:]), le.Uint32(b[24:]), le.Uint32(b[28:])
		h.align, h.entsize = le.Uint32(b[32:]), le.Uint32(b[36:])
	}
	if f.shdrs[shstrndx].typ != shtStrtab {
		return nil, f.errorf("e_shstrndx %d: section type is %d, want SHT_STRTAB", shstrndx, f.shdrs[shstrndx].typ)
	}
	shstr, err := f.bytesOf(int(shstrndx))
	if err != nil {
		return nil, err
	}
	for i := range f.shdrs {
		h := &f.shdrs[i]
		if i == 0 {
			continue
		}
		n, ok := cstring(shstr, h.nameOff)
		if !ok {
			return nil, f.errorf("section %d: name offset 0x%x is outside the section name table or unterminated", i, h.nameOff)
		}
		h.name = n
	}
	for i := 1; i < len(f.shdrs); i++ {
		h := &f.shdrs[i]
		if h.typ != shtNobits && h.typ != shtNull {
			if _, err := f.bytesOf(i); err != nil {
				return nil, err
			}
		}
		if h.align > 1 && !isPow2(h.align) {
			return nil, f.secErrorf(i, "sh_addralign %d is not a power of two", h.align)
		}
		if h.typ == shtSymtab {
			if f.symtab >= 0 {
				return nil, f.secErrorf(i, "second symbol table (the first is section %d)", f.symtab)
			}
			f.symtab = i
		}
	}
	if f.symtab >= 0 {
		if err := f.readSymtab(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *rawFile) readSymtab() error {
	i := f.symtab
	h := &f.shdrs[i]
	if h.entsize != symSize {
		return f.secErrorf(i, "sh_entsize is %d, want %d", h.entsize, symSize)
	}
	if h.size%symSize != 0 {
		return f.secErrorf(i, "size %d is not a multiple of %d", h.size, symSize)
	}
	if h.link == 0 || h.link >= uint32(len(f.shdrs)) || f.shdrs[h.link].typ != shtStrtab {
		return f.secErrorf(i, "sh_link %d is not a string table section", h.link)
	}
	tab, err := f.bytesOf(i)
	if err != nil {
		return err
	}
	str, err := f.bytesOf(int(h.link))
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	f.syms = make([]elfSym, len(tab)/symSize)
	for k := range f.syms {
		b := tab[k*symSize:]
		s := &f.syms[k]
		s.nameOff, s.value, s.size = le.Uint32(b), le.Uint32(b[4:]), le.Uint32(b[8:])
		s.info, s.other, s.shndx = b[12], b[13], le.Uint16(b[14:])
		n, ok := cstring(str, s.nameOff)
		if !ok {
			return f.secErrorf(i, "symbol %d: name offset 0x%x is outside %q or unterminated", k, s.nameOff, f.shdrs[h.link].name)
		}
		s.name = n
	}
	return nil
}

// symErrorf reports a problem with symbol k of the symbol table.
func (f *rawFile) symErrorf(k int, format string, args ...any) error {
	return fmt.Errorf("%s: symbol %d %q: %s", f.name, k, f.syms[k].name, fmt.Sprintf(format, args...))
}

// modelSym converts ELF symbol k to the object model. secMap maps ELF
// section indices to model section indices (-1: not kept). dropped reports a
// symbol the model has no place for (file symbols, symbols of sections that
// are not kept); the caller decides whether that matters.
func (f *rawFile) modelSym(k int, secMap []int, secLen func(int) uint32) (sym *Symbol, dropped bool, err error) {
	s := &f.syms[k]
	bind, typ := s.info>>4, s.info&0xf
	if typ == sttFile {
		return nil, true, nil
	}
	sym = &Symbol{Name: s.name, Value: s.value, Size: s.size}
	switch bind {
	case stbLocal:
		sym.Bind = Local
	case stbGlobal:
		sym.Bind = Global
	case stbWeak:
		sym.Bind = Weak
	default:
		return nil, false, f.symErrorf(k, "unsupported binding %d", bind)
	}
	switch typ {
	case sttNotype:
		sym.Type = NoType
	case sttObject:
		sym.Type = DataSym
	case sttFunc:
		sym.Type = Func
	default:
		return nil, false, f.symErrorf(k, "unsupported symbol type %d", typ)
	}
	switch {
	case s.shndx == shnUndef:
		sym.Section = Undefined
	case s.shndx == shnAbs:
		sym.Section = Absolute
	case s.shndx == shnCommon:
		return nil, false, f.symErrorf(k, "common symbols (SHN_COMMON) are not supported")
	case s.shndx >= shnLoreserve:
		return nil, false, f.symErrorf(k, "unsupported special section index 0x%x", s.shndx)
	case int(s.shndx) >= len(f.shdrs):
		return nil, false, f.symErrorf(k, "section index %d out of range (%d sections)", s.shndx, len(f.shdrs))
	case secMap[s.shndx] < 0:
		return nil, true, nil
	default:
		sym.Section = secMap[s.shndx]
		if n := secLen(sym.Section); sym.Value > n {
			return nil, false, f.symErrorf(k, "value 0x%x beyond the end of section %d %q (size 0x%x)", sym.Value, s.shndx, f.shdrs[s.shndx].name, n)
		}
	}
	return sym, false, nil
}

// Parse reads a Colossus ELF32 relocatable object (ET_REL, e_machine 0xF8,
// little-endian). name is used in error messages.
//
// SHT_PROGBITS and SHT_NOBITS sections become Sections (in file order, so
// Symbol.Section i is ELF section i' in file order among those); SHT_RELA
// sections become their target's Relocs; other section types (notes,
// groups, ...) are ignored, together with relocations against them. SHT_REL
// is rejected: Colossus objects use SHT_RELA.
//
// Symbols keep the symbol table's order minus STT_SECTION and STT_FILE
// symbols and symbols defined in ignored sections. A relocation against an
// STT_SECTION symbol names the section (Reloc.Symbol = section name), the
// convention Object.Marshal writes back; r_sym 0 gives Symbol "". Names must
// be unambiguous for that to work, so Parse rejects a relocation whose
// symbol name is not the first symbol of that name, or whose section symbol
// names a section whose name is shared with another section or a symbol.
func Parse(name string, data []byte) (*Object, error) {
	f, err := readRaw(name, data)
	if err != nil {
		return nil, err
	}
	if f.typ != etRel {
		hint := ""
		if f.typ == etExec {
			hint = ": a linked executable, not an object from ipu asm"
		}
		return nil, f.errorf("e_type is %d (%s), want 1 (ET_REL)%s", f.typ, typeNames[f.typ], hint)
	}
	return f.object()
}

// otherKind names the ipustack file kinds that are not ELF, for the error
// of a file given to the wrong command.
func otherKind(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("IPUEXE")):
		return ": it is an application package (.ipuexe); see ipu inspect"
	case bytes.HasPrefix(data, []byte("IPUPROF")):
		return ": it is a profile; see ipu profile query"
	}
	return ""
}

func (f *rawFile) object() (*Object, error) {
	o := &Object{Name: f.name}
	secMap := make([]int, len(f.shdrs))
	secNameCount := map[string]int{}
	for i := range f.shdrs {
		secMap[i] = -1
		h := &f.shdrs[i]
		if i == 0 {
			continue
		}
		switch h.typ {
		case shtProgbits, shtNobits:
			s := &Section{Name: h.name, Flags: SectionFlags(h.flags), Align: max(h.align, 1)}
			if h.typ == shtNobits {
				s.NoBits = true
				s.Size = h.size
			} else {
				b, err := f.bytesOf(i)
				if err != nil {
					return nil, err
				}
				s.Data = bytes.Clone(b)
				if s.Data == nil {
					s.Data = []byte{}
				}
			}
			secMap[i] = len(o.Sections)
			o.Sections = append(o.Sections, s)
			secNameCount[h.name]++
		case shtRel:
			return nil, f.secErrorf(i, "SHT_REL relocations are not supported (Colossus objects use SHT_RELA)")
		}
	}
	secLen := func(k int) uint32 { return o.Sections[k].Len() }

	// Symbols. symModel maps ELF symbol indices to model indices; -1 for
	// dropped symbols, -2 for section symbols (secSym gives the section).
	symModel := make([]int, len(f.syms))
	secSym := make([]int, len(f.syms))
	firstByName := map[string]int{}
	for k := range f.syms {
		symModel[k] = -1
		if k == 0 {
			continue
		}
		s := &f.syms[k]
		if s.info&0xf == sttSection {
			if s.shndx == shnUndef || s.shndx >= shnLoreserve || int(s.shndx) >= len(f.shdrs) {
				return nil, f.symErrorf(k, "section symbol with section index 0x%x", s.shndx)
			}
			if secMap[s.shndx] >= 0 {
				symModel[k] = -2
				secSym[k] = secMap[s.shndx]
			}
			continue
		}
		sym, dropped, err := f.modelSym(k, secMap, secLen)
		if err != nil {
			return nil, err
		}
		if dropped {
			continue
		}
		symModel[k] = len(o.Symbols)
		if _, ok := firstByName[sym.Name]; !ok {
			firstByName[sym.Name] = len(o.Symbols)
		}
		o.Symbols = append(o.Symbols, sym)
	}

	// Relocations.
	le := binary.LittleEndian
	for i := range f.shdrs {
		h := &f.shdrs[i]
		if h.typ != shtRela {
			continue
		}
		if h.info == 0 || h.info >= uint32(len(f.shdrs)) {
			return nil, f.secErrorf(i, "sh_info %d is not a section index", h.info)
		}
		tgt := secMap[h.info]
		if tgt < 0 {
			continue // relocations of an ignored section
		}
		ts := o.Sections[tgt]
		if ts.NoBits {
			return nil, f.secErrorf(i, "relocations for SHT_NOBITS section %q", ts.Name)
		}
		if h.entsize != relaSize {
			return nil, f.secErrorf(i, "sh_entsize is %d, want %d", h.entsize, relaSize)
		}
		if h.size%relaSize != 0 {
			return nil, f.secErrorf(i, "size %d is not a multiple of %d", h.size, relaSize)
		}
		if f.symtab < 0 || h.link != uint32(f.symtab) {
			return nil, f.secErrorf(i, "sh_link %d is not the symbol table", h.link)
		}
		b, err := f.bytesOf(i)
		if err != nil {
			return nil, err
		}
		for j := 0; j+relaSize <= len(b); j += relaSize {
			off, info, add := le.Uint32(b[j:]), le.Uint32(b[j+4:]), int32(le.Uint32(b[j+8:]))
			typ, symk := isa.Reloc(info&0xff), info>>8
			where := fmt.Sprintf("relocation %d (offset 0x%x in %q)", j/relaSize, off, ts.Name)
			ri, ok := isa.RelocByType(typ)
			if !ok {
				return nil, f.secErrorf(i, "%s: unknown relocation type %d", where, uint32(typ))
			}
			if uint64(off)+uint64(ri.Size) > uint64(ts.Len()) {
				return nil, f.secErrorf(i, "%s: %s needs %d bytes, section size is 0x%x", where, ri.Name, ri.Size, ts.Len())
			}
			if symk >= uint32(len(f.syms)) {
				return nil, f.secErrorf(i, "%s: symbol index %d out of range (%d symbols)", where, symk, len(f.syms))
			}
			r := Reloc{Offset: off, Type: typ, Addend: add}
			switch m := symModel[symk]; {
			case symk == 0:
			case m == -2:
				sn := o.Sections[secSym[symk]].Name
				if secNameCount[sn] > 1 {
					return nil, f.secErrorf(i, "%s: against the section symbol of %q, a name shared by %d sections", where, sn, secNameCount[sn])
				}
				if _, ok := firstByName[sn]; ok {
					return nil, f.secErrorf(i, "%s: against the section symbol of %q, a name that is also a symbol's", where, sn)
				}
				r.Symbol = sn
			case m == -1:
				return nil, f.secErrorf(i, "%s: against symbol %d %q, which is not in a supported section", where, symk, f.syms[symk].name)
			default:
				sn := o.Symbols[m].Name
				if sn == "" {
					return nil, f.secErrorf(i, "%s: against unnamed symbol %d", where, symk)
				}
				if firstByName[sn] != m {
					return nil, f.secErrorf(i, "%s: against symbol %d %q, a name defined more than once in this object", where, symk, sn)
				}
				r.Symbol = sn
			}
			ts.Relocs = append(ts.Relocs, r)
		}
	}
	return o, nil
}

// LoadedSection is one section of an object or executable as a disassembler
// sees it.
type LoadedSection struct {
	Name   string
	Addr   uint32 // sh_addr: 0 in an object, the load address in an executable
	Flags  SectionFlags
	NoBits bool
	Size   uint32
	Data   []byte // nil for NoBits
	// Symbols defined in the section, by offset then name (for labels).
	Symbols []SectionSymbol
	// Relocs are the section's relocations (objects only).
	Relocs []Reloc
}

// SectionSymbol is a symbol defined in a LoadedSection.
type SectionSymbol struct {
	Name   string
	Offset uint32 // from the start of the section
	Size   uint32
	Bind   Bind
	Type   SymType
}

// Loaded is the content of an object or executable file.
type Loaded struct {
	Exec     bool   // ET_EXEC (else ET_REL)
	Entry    uint32 // e_entry (executables)
	Sections []LoadedSection
}

// Load reads a Colossus ELF32 object (ET_REL) or executable (ET_EXEC) into
// sections with addresses and symbols: what `ipu objdump` needs. Objects are
// read with Parse; executables with the same checks.
func Load(name string, data []byte) (*Loaded, error) {
	f, err := readRaw(name, data)
	if err != nil {
		return nil, err
	}
	switch f.typ {
	case etRel:
		o, err := f.object()
		if err != nil {
			return nil, err
		}
		l := &Loaded{Sections: make([]LoadedSection, len(o.Sections))}
		for i, s := range o.Sections {
			l.Sections[i] = LoadedSection{Name: s.Name, Flags: s.Flags, NoBits: s.NoBits, Size: s.Len(), Data: s.Data, Relocs: s.Relocs}
		}
		for _, sym := range o.Symbols {
			if sym.Section >= 0 {
				ls := &l.Sections[sym.Section]
				ls.Symbols = append(ls.Symbols, SectionSymbol{Name: sym.Name, Offset: sym.Value, Size: sym.Size, Bind: sym.Bind, Type: sym.Type})
			}
		}
		sortSectionSymbols(l.Sections)
		return l, nil
	case etExec:
		return f.loadExec()
	}
	return nil, f.errorf("e_type is %d (%s), want 1 (ET_REL) or 2 (ET_EXEC)", f.typ, typeNames[f.typ])
}

// Sections is Load(name, data).Sections.
func Sections(name string, data []byte) ([]LoadedSection, error) {
	l, err := Load(name, data)
	if err != nil {
		return nil, err
	}
	return l.Sections, nil
}

func (f *rawFile) loadExec() (*Loaded, error) {
	l := &Loaded{Exec: true, Entry: f.entry}
	secMap := make([]int, len(f.shdrs))
	for i := range f.shdrs {
		secMap[i] = -1
		h := &f.shdrs[i]
		if i == 0 || (h.typ != shtProgbits && h.typ != shtNobits) {
			continue
		}
		if uint64(h.addr)+uint64(h.size) > 1<<32 {
			return nil, f.secErrorf(i, "address range [0x%x, +0x%x) wraps around", h.addr, h.size)
		}
		ls := LoadedSection{Name: h.name, Addr: h.addr, Flags: SectionFlags(h.flags), Size: h.size}
		if h.typ == shtNobits {
			ls.NoBits = true
		} else {
			b, err := f.bytesOf(i)
			if err != nil {
				return nil, err
			}
			ls.Data = bytes.Clone(b)
			if ls.Data == nil {
				ls.Data = []byte{}
			}
		}
		secMap[i] = len(l.Sections)
		l.Sections = append(l.Sections, ls)
	}
	secLen := func(k int) uint32 { return ^uint32(0) } // checked against addresses below
	for k := 1; k < len(f.syms); k++ {
		if f.syms[k].info&0xf == sttSection {
			continue
		}
		sym, dropped, err := f.modelSym(k, secMap, secLen)
		if err != nil {
			return nil, err
		}
		if dropped || sym.Section < 0 {
			continue
		}
		ls := &l.Sections[sym.Section]
		if sym.Value < ls.Addr || uint64(sym.Value) > uint64(ls.Addr)+uint64(ls.Size) {
			return nil, f.symErrorf(k, "address 0x%x is outside its section %q [0x%x, 0x%x)", sym.Value, ls.Name, ls.Addr, uint64(ls.Addr)+uint64(ls.Size))
		}
		ls.Symbols = append(ls.Symbols, SectionSymbol{Name: sym.Name, Offset: sym.Value - ls.Addr, Size: sym.Size, Bind: sym.Bind, Type: sym.Type})
	}
	sortSectionSymbols(l.Sections)
	return l, nil
}

func sortSectionSymbols(secs []LoadedSection) {
	for i := range secs {
		s := secs[i].Symbols
		sort.SliceStable(s, func(a, b int) bool {
			if s[a].Offset != s[b].Offset {
				return s[a].Offset < s[b].Offset
			}
			return s[a].Name < s[b].Name
		})
	}
}
