package elf

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ipustack/ipustack/isa"
)

// Default link layout: tile region 0, with the loader's entry slot at
// 0x4C010 (see reference/IPU21.md, "loader").
const (
	DefaultEntry     = "_start"
	DefaultBase      = isa.Region0Base // 0x4C000
	DefaultEntryAddr = 0x4C010
	DefaultLimit     = 0x80000 // end of region 0: code must be fetchable
)

// LinkOptions control Link. Zero values take the defaults.
type LinkOptions struct {
	// Entry names the global symbol execution starts at (default
	// "_start"). It must be defined in a section; that section is placed
	// first, at EntryAddr.
	Entry string
	// Roots name further global symbols whose sections are kept (with
	// everything they reference) even if the entry does not reach them.
	Roots []string
	// Base is the start of region 0 (default 0x4C000). [Base, EntryAddr) is
	// left to the loader.
	Base uint32
	// EntryAddr is the address of the entry section (default Base+0x10,
	// i.e. 0x4C010).
	EntryAddr uint32
	// Limit is the end of region 0 (default 0x80000); every placed
	// section must end at or below it.
	Limit uint32
	// KeepAll disables garbage collection: every allocatable section of
	// every object is placed.
	KeepAll bool
}

// PlacedSection is a section of an input object at its final address.
type PlacedSection struct {
	Object   string // Object.Name
	ObjIndex int    // index of the object in Link's input
	Index    int    // index of the section in its object
	Name     string
	Addr     uint32
	Size     uint32
	Align    uint32
	Flags    SectionFlags
	NoBits   bool
	Data     []byte // relocated contents; nil for NoBits
}

// Segment is a contiguous run of placed sections: Data holds the bytes of
// [Addr, Addr+len(Data)) (alignment gaps zero-filled); MemSize may exceed
// len(Data) when the run ends in NoBits sections, which are zero.
type Segment struct {
	Addr    uint32
	Data    []byte
	MemSize uint32
	Flags   SectionFlags // union of the sections' flags
}

// ImageSymbol is a symbol of the linked image.
type ImageSymbol struct {
	Name    string
	Addr    uint32
	Size    uint32
	Type    SymType
	Bind    Bind
	Object  string // defining object
	Section int    // index into Image.Sections, or Absolute
}

// Image is the result of Link.
type Image struct {
	Entry       uint32 // address of the entry symbol
	EntrySymbol string
	Base, Limit uint32
	Sections    []PlacedSection // in address order
	Segments    []Segment       // in address order
	// Symbols holds every symbol defined in a placed section, plus absolute
	// symbols, sorted by address, then name, then object order. Locals of
	// different objects may share a name; Lookup finds globals.
	Symbols []ImageSymbol
}

// Lookup returns the global (or weak) symbol name of the image.
func (im *Image) Lookup(name string) (ImageSymbol, bool) {
	for _, s := range im.Symbols {
		if s.Name == name && s.Bind != Local {
			return s, true
		}
	}
	return ImageSymbol{}, false
}

// secKey identifies a section of an input object.
type secKey struct{ obj, sec int }

// symRef is a symbol definition: object and index into its Symbols.
type symRef struct{ obj, sym int }

// target is what a relocation's symbol resolves to.
type target struct {
	kind int // tNone, tSym, tSection, tWeakUndef, tUndef
	sym  symRef
	sec  secKey
}

const (
	tNone      = iota // Symbol "": S = 0
	tSym              // a defined symbol
	tSection          // a section, by the section-name convention
	tWeakUndef        // an undefined weak reference: S = 0
	tUndef            // undefined: an error
)

type linker struct {
	objs     []*Object
	opts     LinkOptions
	globals  map[string]symRef
	locals   []map[string]int // per object: first defined local of each name
	declared []map[string]int // per object: first symbol of each name
	secNames []map[string][]int
	errs     []error
}

func (l *linker) errorf(format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf(format, args...))
}

func (l *linker) objName(i int) string {
	if n := l.objs[i].Name; n != "" {
		return n
	}
	return fmt.Sprintf("object #%d", i)
}

func (l *linker) secName(k secKey) string {
	return l.objs[k.obj].Sections[k.sec].Name
}

// Link places the sections of objs in region 0 and resolves symbols and
// relocations.
//
// Garbage collection: unless KeepAll, only sections reachable from the
// entry symbol's section and the Roots' sections through relocations are
// kept. Only allocatable (FlagAlloc) sections are ever placed.
//
// Placement: the entry section at EntryAddr; then the other kept sections
// with contents in object order and section order; then the kept NoBits
// sections in the same order, so the loadable bytes form one contiguous
// run followed by zero-fill. Each section is aligned to its Align.
//
// Symbol resolution, for a relocation in object o naming N: "" is S = 0; if
// o declares symbols named N, the first of them decides (as in Marshal): a
// defined local is used, a global, weak or undefined one resolves through
// the global table; otherwise a section of o named N (the section-name
// convention of Marshal and Parse); otherwise N resolves through the global
// table. A global defined in two objects is an error; a weak definition
// yields to a global one and the first weak definition wins among weak
// ones; an undefined weak reference resolves to 0.
//
// Relocations are applied with isa.RelocByType(type).Apply(loc, S+A).
// Every problem found is reported (errors.Join), each naming the symbol,
// object, section, offset and relocation type involved.
func Link(objs []*Object, opts LinkOptions) (*Image, error) {
	if opts.Entry == "" {
		opts.Entry = DefaultEntry
	}
	if opts.Base == 0 {
		opts.Base = DefaultBase
	}
	if opts.EntryAddr == 0 {
		opts.EntryAddr = opts.Base + (DefaultEntryAddr - DefaultBase)
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultLimit
	}
	if opts.EntryAddr < opts.Base || opts.EntryAddr >= opts.Limit {
		return nil, fmt.Errorf("link: entry address 0x%x is outside region [0x%x, 0x%x)", opts.EntryAddr, opts.Base, opts.Limit)
	}
	l := &linker{objs: objs, opts: opts, globals: map[string]symRef{}}
	if err := l.check(); err != nil {
		return nil, err
	}
	l.resolveGlobals()

	// Roots.
	var roots []secKey
	entry, ok := l.globals[opts.Entry]
	if !ok {
		msg := fmt.Sprintf("link: entry symbol %q is not defined", opts.Entry)
		for i := range objs {
			if _, ok := l.locals[i][opts.Entry]; ok {
				msg += fmt.Sprintf(" (%s defines a local symbol of that name; make it global)", l.objName(i))
				break
			}
		}
		l.errs = append(l.errs, errors.New(msg))
		return nil, errors.Join(l.errs...)
	}
	esym := objs[entry.obj].Symbols[entry.sym]
	if esym.Section < 0 {
		l.errorf("link: entry symbol %q (%s) is not defined in a section", opts.Entry, l.objName(entry.obj))
		return nil, errors.Join(l.errs...)
	}
	entrySec := secKey{entry.obj, esym.Section}
	if objs[entry.obj].Sections[esym.Section].Flags&FlagAlloc == 0 {
		l.errorf("link: entry symbol %q is in section %s of %s, which is not allocatable (no FlagAlloc)", opts.Entry, l.secName(entrySec), l.objName(entry.obj))
		return nil, errors.Join(l.errs...)
	}
	roots = append(roots, entrySec)
	for _, r := range opts.Roots {
		ref, ok := l.globals[r]
		if !ok {
			l.errorf("link: root symbol %q is not defined", r)
			continue
		}
		if s := objs[ref.obj].Symbols[ref.sym]; s.Section >= 0 {
			roots = append(roots, secKey{ref.obj, s.Section})
		}
	}
	if opts.KeepAll {
		for i, o := range objs {
			for j, s := range o.Sections {
				if s.Flags&FlagAlloc != 0 {
					roots = append(roots, secKey{i, j})
				}
			}
		}
	}

	// Garbage collection: mark sections reachable through relocations,
	// resolving every relocation of a kept section once.
	kept := map[secKey]bool{}
	targets := map[secKey][]target{}
	work := append([]secKey(nil), roots...)
	for len(work) > 0 {
		k := work[0]
		work = work[1:]
		if kept[k] {
			continue
		}
		kept[k] = true
		s := objs[k.obj].Sections[k.sec]
		ts := make([]target, len(s.Relocs))
		for j, r := range s.Relocs {
			t := l.resolve(k.obj, r.Symbol)
			ts[j] = t
			var dst secKey
			switch t.kind {
			case tSym:
				sym := objs[t.sym.obj].Symbols[t.sym.sym]
				if sym.Section < 0 {
					continue
				}
				dst = secKey{t.sym.obj, sym.Section}
			case tSection:
				dst = t.sec
			case tUndef:
				l.errorf("link: undefined symbol %q referenced from %s section %s offset 0x%x (%s)", r.Symbol, l.objName(k.obj), s.Name, r.Offset, r.Type)
				continue
			default:
				continue
			}
			if objs[dst.obj].Sections[dst.sec].Flags&FlagAlloc == 0 {
				l.errorf("link: %s section %s offset 0x%x (%s) refers to %q in section %s of %s, which is not allocatable (no FlagAlloc)",
					l.objName(k.obj), s.Name, r.Offset, r.Type, r.Symbol, l.secName(dst), l.objName(dst.obj))
				continue
			}
			if !kept[dst] {
				work = append(work, dst)
			}
		}
		targets[k] = ts
	}
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}

	// Placement order: entry section, sections with contents, NoBits.
	order := []secKey{entrySec}
	for _, nobits := range []bool{false, true} {
		for i, o := range objs {
			for j, s := range o.Sections {
				k := secKey{i, j}
				if kept[k] && k != entrySec && s.NoBits == nobits {
					order = append(order, k)
				}
			}
		}
	}
	im := &Image{EntrySymbol: opts.Entry, Base: opts.Base, Limit: opts.Limit}
	addr := uint64(opts.EntryAddr)
	placedIdx := map[secKey]int{}
	for n, k := range order {
		s := objs[k.obj].Sections[k.sec]
		align := uint64(max(s.Align, 1))
		a := (addr + align - 1) &^ (align - 1)
		if n == 0 && a != addr {
			l.errorf("link: entry section %s of %s needs %d-byte alignment, but the entry address 0x%x is not aligned", s.Name, l.objName(k.obj), align, opts.EntryAddr)
			return nil, errors.Join(l.errs...)
		}
		ps := PlacedSection{Object: l.objName(k.obj), ObjIndex: k.obj, Index: k.sec, Name: s.Name, Addr: uint32(a),
			Size: s.Len(), Align: uint32(align), Flags: s.Flags, NoBits: s.NoBits}
		end := a + uint64(s.Len())
		if end > uint64(opts.Limit) {
			// Report the total and the sizes so the user sees what to cut.
			var b strings.Builder
			total := uint64(0)
			for _, k2 := range order {
				s2 := objs[k2.obj].Sections[k2.sec]
				total += uint64(s2.Len())
				fmt.Fprintf(&b, "\n  %s %s: %d bytes", l.objName(k2.obj), s2.Name, s2.Len())
			}
			l.errorf("link: sections do not fit in region 0: %s section %s (%d bytes) placed at 0x%x would end at 0x%x, beyond the limit 0x%x; %d sections, %d bytes in total, %d bytes available from 0x%x:%s",
				l.objName(k.obj), s.Name, s.Len(), a, end, opts.Limit, len(order), total, opts.Limit-opts.EntryAddr, opts.EntryAddr, b.String())
			return nil, errors.Join(l.errs...)
		}
		if !s.NoBits {
			ps.Data = append([]byte{}, s.Data...)
		}
		placedIdx[k] = len(im.Sections)
		im.Sections = append(im.Sections, ps)
		addr = end
	}

	// Symbol addresses.
	symAddr := func(r symRef) int64 {
		sym := objs[r.obj].Symbols[r.sym]
		if sym.Section == Absolute {
			return int64(sym.Value)
		}
		return int64(im.Sections[placedIdx[secKey{r.obj, sym.Section}]].Addr) + int64(sym.Value)
	}

	// Relocation.
	for n, k := range order {
		s := objs[k.obj].Sections[k.sec]
		ps := &im.Sections[n]
		for j, r := range s.Relocs {
			t := targets[k][j]
			var S int64
			switch t.kind {
			case tSym:
				S = symAddr(t.sym)
			case tSection:
				S = int64(im.Sections[placedIdx[t.sec]].Addr)
			}
			info, ok := isa.RelocByType(r.Type)
			if !ok {
				l.errorf("link: %s section %s offset 0x%x: unknown relocation type %d against %q", ps.Object, s.Name, r.Offset, uint32(r.Type), r.Symbol)
				continue
			}
			if uint64(r.Offset)+uint64(info.Size) > uint64(len(ps.Data)) {
				l.errorf("link: %s section %s offset 0x%x: %s against %q needs %d bytes, section size is %d", ps.Object, s.Name, r.Offset, r.Type, r.Symbol, info.Size, ps.Size)
				continue
			}
			v := S + int64(r.Addend)
			if err := info.Apply(ps.Data[r.Offset:], v); err != nil {
				l.errorf("link: %s section %s offset 0x%x (address 0x%x): %s against %q (S+A = 0x%x): %v", ps.Object, s.Name, r.Offset, ps.Addr+r.Offset, r.Type, r.Symbol, v, err)
			}
		}
	}
	if len(l.errs) > 0 {
		return nil, errors.Join(l.errs...)
	}

	im.Entry = uint32(symAddr(entry))
	im.Segments = segments(im.Sections)

	// Symbol table: every symbol defined in a placed section, plus
	// absolute ones; weak definitions that lost to another are left out.
	for i, o := range objs {
		for j, sym := range o.Symbols {
			if sym.Section == Undefined {
				continue
			}
			if sym.Bind != Local && l.globals[sym.Name] != (symRef{i, j}) {
				continue
			}
			is := ImageSymbol{Name: sym.Name, Size: sym.Size, Type: sym.Type, Bind: sym.Bind, Object: l.objName(i), Section: Absolute}
			if sym.Section >= 0 {
				p, ok := placedIdx[secKey{i, sym.Section}]
				if !ok {
					continue
				}
				is.Section = p
			}
			is.Addr = uint32(symAddr(symRef{i, j}))
			im.Symbols = append(im.Symbols, is)
		}
	}
	sort.SliceStable(im.Symbols, func(a, b int) bool {
		x, y := &im.Symbols[a], &im.Symbols[b]
		if x.Addr != y.Addr {
			return x.Addr < y.Addr
		}
		return x.Name < y.Name
	})
	return im, nil
}

// check validates the inputs so that the rest of Link can index freely.
func (l *linker) check() error {
	for i, o := range l.objs {
		if o == nil {
			l.errorf("link: object #%d is nil", i)
			continue
		}
		for j, s := range o.Sections {
			if s == nil {
				l.errorf("link: %s: section %d is nil", l.objName(i), j)
				continue
			}
			if s.Align != 0 && !isPow2(s.Align) {
				l.errorf("link: %s section %s: alignment %d is not a power of two", l.objName(i), s.Name, s.Align)
			}
			if s.NoBits && len(s.Relocs) > 0 {
				l.errorf("link: %s section %s: NoBits section has relocations", l.objName(i), s.Name)
			}
		}
		for j, sym := range o.Symbols {
			if sym == nil {
				l.errorf("link: %s: symbol %d is nil", l.objName(i), j)
				continue
			}
			if sym.Section >= len(o.Sections) || sym.Section < Absolute {
				l.errorf("link: %s: symbol %d %q: section index %d out of range", l.objName(i), j, sym.Name, sym.Section)
			}
		}
	}
	return errors.Join(l.errs...)
}

// resolveGlobals builds the per-object name tables and the global table,
// reporting duplicate strong definitions.
func (l *linker) resolveGlobals() {
	for i, o := range l.objs {
		loc, decl, secs := map[string]int{}, map[string]int{}, map[string][]int{}
		for j, sym := range o.Symbols {
			if _, ok := decl[sym.Name]; !ok {
				decl[sym.Name] = j
			}
			if sym.Bind == Local && sym.Section != Undefined {
				if _, ok := loc[sym.Name]; !ok {
					loc[sym.Name] = j
				}
			}
			if sym.Bind == Local || sym.Section == Undefined {
				continue
			}
			prev, ok := l.globals[sym.Name]
			if !ok {
				l.globals[sym.Name] = symRef{i, j}
				continue
			}
			ps := l.objs[prev.obj].Symbols[prev.sym]
			switch {
			case sym.Bind == Weak:
				// The earlier definition (strong, or the first weak) stays.
			case ps.Bind == Weak:
				l.globals[sym.Name] = symRef{i, j}
			default:
				l.errorf("link: duplicate definition of global symbol %q: in %s (%s) and in %s (%s)",
					sym.Name, l.objName(prev.obj), l.where(prev.obj, ps), l.objName(i), l.where(i, sym))
			}
		}
		for j, s := range o.Sections {
			secs[s.Name] = append(secs[s.Name], j)
		}
		l.locals = append(l.locals, loc)
		l.declared = append(l.declared, decl)
		l.secNames = append(l.secNames, secs)
	}
}

func (l *linker) where(obj int, sym *Symbol) string {
	switch sym.Section {
	case Absolute:
		return "absolute"
	case Undefined:
		return "undefined"
	}
	return "section " + l.objs[obj].Sections[sym.Section].Name
}

// resolve finds what name means in object obj (see Link).
func (l *linker) resolve(obj int, name string) target {
	if name == "" {
		return target{kind: tNone}
	}
	if j, ok := l.declared[obj][name]; ok {
		// The first symbol of that name, as Marshal writes it.
		sym := l.objs[obj].Symbols[j]
		if sym.Bind == Local && sym.Section != Undefined {
			return target{kind: tSym, sym: symRef{obj, j}}
		}
		if sym.Bind != Local {
			if g, ok := l.globals[name]; ok {
				return target{kind: tSym, sym: g}
			}
			if sym.Bind == Weak {
				return target{kind: tWeakUndef}
			}
			return target{kind: tUndef}
		}
		// An undefined local declaration: fall through to the
		// section-name convention and the global table.
	}
	if secs := l.secNames[obj][name]; len(secs) == 1 {
		return target{kind: tSection, sec: secKey{obj, secs[0]}}
	}
	if g, ok := l.globals[name]; ok {
		return target{kind: tSym, sym: g}
	}
	return target{kind: tUndef}
}

// segments merges placed sections (in address order) into contiguous runs.
// A run ends when a section with contents follows a NoBits one, since the
// zero-fill tail of a run is not stored.
func segments(secs []PlacedSection) []Segment {
	var segs []Segment
	for _, s := range secs {
		if n := len(segs); n > 0 {
			g := &segs[n-1]
			tailZero := g.MemSize > uint32(len(g.Data))
			if !tailZero || s.NoBits {
				if !s.NoBits {
					g.Data = append(g.Data, make([]byte, s.Addr-g.Addr-uint32(len(g.Data)))...)
					g.Data = append(g.Data, s.Data...)
				}
				g.MemSize = s.Addr + s.Size - g.Addr
				g.Flags |= s.Flags
				continue
			}
		}
		g := Segment{Addr: s.Addr, MemSize: s.Size, Flags: s.Flags}
		if !s.NoBits {
			g.Data = append([]byte{}, s.Data...)
		}
		segs = append(segs, g)
	}
	return segs
}
