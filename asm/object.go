package asm

import (
	"sort"

	"github.com/ipustack/ipustack/elf"
)

// object builds the elf.Object: sections in order of first use, then the
// symbol table — section-start symbols that relocations use, then named
// symbols in order of first mention.
func (a *assembler) object(name string) *elf.Object {
	obj := &elf.Object{Name: name}
	for _, s := range a.secs {
		align := s.align
		if s.hasCode && align < 4 {
			align = 4
		}
		// Bundles are checked for 8-byte alignment within the section, which
		// means something only if the section itself is 8-byte aligned.
		if s.hasBundle && align < 8 {
			align = 8
		}
		// Relocations resolved at the end are recorded late; keep the
		// table in offset order, as readers expect.
		sort.SliceStable(s.relocs, func(i, j int) bool { return s.relocs[i].Offset < s.relocs[j].Offset })
		es := &elf.Section{Name: s.name, Flags: s.flags, Align: align, NoBits: s.nobits, Relocs: s.relocs}
		if s.nobits {
			es.Size = uint32(s.size)
		} else {
			es.Data = s.data
			if es.Data == nil {
				es.Data = []byte{}
			}
			es.Size = uint32(len(s.data))
		}
		obj.Sections = append(obj.Sections, es)
	}
	for _, s := range a.secs {
		if s.base != nil {
			obj.Symbols = append(obj.Symbols, &elf.Symbol{Name: s.name, Section: s.index, Bind: elf.Local})
		}
	}
	for _, s := range a.order {
		sym := &elf.Symbol{Name: s.name, Bind: s.bind, Type: s.typ}
		switch s.kind {
		case symLabel:
			sym.Section, sym.Value = s.sec.index, uint32(s.val)
		case symEqu:
			// Assembly-time constants stay private unless exported.
			if (!s.bindSet || s.bind == elf.Local) && !s.relocated {
				continue
			}
			if !s.bindSet {
				sym.Bind = elf.Local
			}
			v, err := a.eval(eSym{name: s.name}, true)
			if err != nil || v.ext != nil {
				a.errorf(s.firstRef, "exported symbol %s has no value in this object", s.name)
				continue
			}
			if v.sec != nil {
				sym.Section, sym.Value = v.sec.index, uint32(v.off)
			} else {
				sym.Section, sym.Value = elf.Absolute, uint32(v.off)
			}
		case symUndef:
			if !s.used && !s.bindSet {
				continue
			}
			if s.bindSet && s.bind == elf.Local {
				a.errorf(s.firstRef, "symbol %s is declared .local but never defined", s.name)
				continue
			}
			sym.Section = elf.Undefined
			if !s.bindSet {
				sym.Bind = elf.Global
			}
		}
		if s.size != nil {
			v, err := a.eval(s.size, true)
			switch {
			case err != nil:
				a.exprErr(err, s.sizePos)
			case !v.isConst() || v.off < 0 || v.off > 1<<32-1:
				a.errorf(s.sizePos, ".size of %s must be a constant in [0, 2^32), found %s", s.name, describe(v))
			default:
				sym.Size = uint32(v.off)
			}
		}
		obj.Symbols = append(obj.Symbols, sym)
	}
	return obj
}
