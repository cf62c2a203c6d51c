package elf

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/isa"
)

func words(ws ...uint32) []byte {
	b := make([]byte, 0, 4*len(ws))
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

func wordAt(b []byte, off uint32) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

const (
	setzi = 0x19000000 // setzi $m0, imm20: Reloc20 patches bits 0..19
	call  = 0x18000000 // call $m10, target: Reloc19S2 patches bits 0..18 with addr>>2
)

// objA: _start in .text calls foo (in objB), loads buf's address, and holds
// a data word and a RUN word; .text.unused is reachable from nothing.
func objA() *Object {
	return &Object{
		Name: "a.o",
		Sections: []*Section{
			{Name: ".text", Flags: FlagAlloc | FlagExec, Align: 4,
				Data: words(setzi, call|10<<20, 0, 0x40000000),
				Relocs: []Reloc{
					{Offset: 0, Type: isa.Reloc20, Symbol: "buf"},
					{Offset: 4, Type: isa.Reloc19S2, Symbol: "foo"},
					{Offset: 8, Type: isa.Reloc32, Symbol: "foo", Addend: 4},
					{Offset: 12, Type: isa.RelocRun, Symbol: "foo", Addend: 0x10000},
				}},
			{Name: ".text.unused", Flags: FlagAlloc | FlagExec, Align: 4, Data: words(call),
				Relocs: []Reloc{{Offset: 0, Type: isa.Reloc19S2, Symbol: ".text"}}},
		},
		Symbols: []*Symbol{
			{Name: "_start", Section: 0, Bind: Global, Type: Func, Size: 16},
			{Name: "loop", Section: 0, Value: 4, Bind: Local},
			{Name: "unused", Section: 1, Bind: Global, Type: Func, Size: 4},
			{Name: "foo", Section: Undefined, Bind: Global},
		},
	}
}

// objB defines foo (which refers to its .bss by section name) and buf.
func objB() *Object {
	return &Object{
		Name: "b.o",
		Sections: []*Section{
			{Name: ".text", Flags: FlagAlloc | FlagExec, Align: 4, Data: words(0, 0x12345678),
				Relocs: []Reloc{{Offset: 0, Type: isa.Reloc32, Symbol: ".bss", Addend: 8}}},
			{Name: ".data", Flags: FlagAlloc | FlagWrite, Align: 8, Data: words(1, 2)},
			{Name: ".bss", Flags: FlagAlloc | FlagWrite, Align: 16, NoBits: true, Size: 16},
			{Name: ".text.dead", Flags: FlagAlloc | FlagExec, Align: 4, Data: words(7)},
			{Name: ".comment", Data: []byte("ipustack\x00")},
		},
		Symbols: []*Symbol{
			{Name: "foo", Section: 0, Bind: Global, Type: Func, Size: 8},
			{Name: "buf", Section: 1, Bind: Global, Type: DataSym, Size: 8},
			{Name: "dead", Section: 3, Bind: Global, Type: Func, Size: 4},
			{Name: "ABS", Section: Absolute, Value: 0x58000, Bind: Global},
		},
	}
}

func mustMarshal(t testing.TB, o *Object) []byte {
	t.Helper()
	b, err := o.Marshal()
	if err != nil {
		t.Fatalf("Marshal %s: %v", o.Name, err)
	}
	return b
}

func TestObjectRoundTrip(t *testing.T) {
	for _, o := range []*Object{objA(), objB(), {Name: "empty.o"}} {
		t.Run(o.Name, func(t *testing.T) {
			b := mustMarshal(t, o)
			if b2 := mustMarshal(t, o); !bytes.Equal(b, b2) {
				t.Fatal("Marshal is not deterministic")
			}
			p, err := Parse(o.Name, b)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if b2 := mustMarshal(t, p); !bytes.Equal(b, b2) {
				t.Fatal("Marshal(Parse(x)) != x")
			}
			if len(p.Sections) != len(o.Sections) {
				t.Fatalf("sections: got %d, want %d", len(p.Sections), len(o.Sections))
			}
			for i, s := range o.Sections {
				q := p.Sections[i]
				if q.Name != s.Name || q.Flags != s.Flags || q.Align != max(s.Align, 1) || q.NoBits != s.NoBits || q.Len() != s.Len() || !bytes.Equal(q.Data, s.Data) {
					t.Errorf("section %d: got %+v, want %+v", i, q, s)
				}
				if len(q.Relocs) != len(s.Relocs) {
					t.Fatalf("section %s: %d relocs, want %d", s.Name, len(q.Relocs), len(s.Relocs))
				}
				for j := range s.Relocs {
					if q.Relocs[j] != s.Relocs[j] {
						t.Errorf("section %s reloc %d: got %+v, want %+v", s.Name, j, q.Relocs[j], s.Relocs[j])
					}
				}
			}
			want := map[string]Symbol{}
			for _, s := range o.Symbols {
				want[s.Name] = *s
			}
			if o.Name == "a.o" {
				// Marshal declares buf, which a relocation names.
				want["buf"] = Symbol{Name: "buf", Section: Undefined, Bind: Global}
			}
			if len(p.Symbols) != len(want) {
				t.Fatalf("symbols: got %d, want %d", len(p.Symbols), len(want))
			}
			for _, s := range p.Symbols {
				if *s != want[s.Name] {
					t.Errorf("symbol %s: got %+v, want %+v", s.Name, *s, want[s.Name])
				}
			}
			// Locals come first in the symbol table, so in the parsed order.
			seenGlobal := false
			for _, s := range p.Symbols {
				if s.Bind != Local {
					seenGlobal = true
				} else if seenGlobal {
					t.Errorf("local %s after a global", s.Name)
				}
			}
		})
	}
}

// A relocation naming nothing declared creates an undefined global, which
// Parse then returns explicitly.
func TestMarshalCreatesUndefined(t *testing.T) {
	o := &Object{Name: "u.o", Sections: []*Section{{Name: ".text", Flags: FlagAlloc | FlagExec, Align: 4, Data: words(call),
		Relocs: []Reloc{{Type: isa.Reloc19S2, Symbol: "ext"}}}}}
	p, err := Parse("u.o", mustMarshal(t, o))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Symbols) != 1 || *p.Symbols[0] != (Symbol{Name: "ext", Section: Undefined, Bind: Global}) {
		t.Fatalf("symbols %+v", p.Symbols)
	}
}

func TestDebugELFObject(t *testing.T) {
	o := objA()
	f, err := elf.NewFile(bytes.NewReader(mustMarshal(t, o)))
	if err != nil {
		t.Fatalf("debug/elf: %v", err)
	}
	if f.Class != elf.ELFCLASS32 || f.Data != elf.ELFDATA2LSB || f.Type != elf.ET_REL || f.Machine != elf.Machine(Machine) {
		t.Fatalf("header %+v", f.FileHeader)
	}
	var names []string
	for _, s := range f.Sections {
		names = append(names, s.Name)
	}
	if got, want := strings.Join(names, " "), " .text .text.unused .rela.text .rela.text.unused .symtab .strtab .shstrtab"; got != want {
		t.Fatalf("sections %q, want %q", got, want)
	}
	text := f.Section(".text")
	if text.Type != elf.SHT_PROGBITS || text.Flags != elf.SHF_ALLOC|elf.SHF_EXECINSTR || text.Addralign != 4 {
		t.Errorf(".text header %+v", text.SectionHeader)
	}
	if d, _ := text.Data(); !bytes.Equal(d, o.Sections[0].Data) {
		t.Errorf(".text data % x", d)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	// debug/elf drops the null symbol: STT_SECTION for .text (used by
	// .text.unused's relocation), the local, then the globals.
	var got []string
	for _, s := range syms {
		got = append(got, s.Name+":"+elf.ST_BIND(s.Info).String()+":"+elf.ST_TYPE(s.Info).String())
	}
	want := ":STB_LOCAL:STT_SECTION loop:STB_LOCAL:STT_NOTYPE _start:STB_GLOBAL:STT_FUNC unused:STB_GLOBAL:STT_FUNC foo:STB_GLOBAL:STT_NOTYPE buf:STB_GLOBAL:STT_NOTYPE"
	if strings.Join(got, " ") != want {
		t.Errorf("symbols\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	symtab := f.Section(".symtab")
	if symtab.Info != 2+1 { // null, section, loop
		t.Errorf(".symtab sh_info %d", symtab.Info)
	}
	rela := f.Section(".rela.text")
	if rela.Type != elf.SHT_RELA || rela.Info != 1 || rela.Link != uint32(len(f.Sections)-3) || rela.Entsize != 12 {
		t.Errorf(".rela.text header %+v", rela.SectionHeader)
	}
	d, _ := rela.Data()
	rs := make([]elf.Rela32, len(d)/12)
	if err := binary.Read(bytes.NewReader(d), binary.LittleEndian, rs); err != nil {
		t.Fatal(err)
	}
	for i, r := range o.Sections[0].Relocs {
		symName := syms[elf.R_SYM32(rs[i].Info)-1].Name
		if rs[i].Off != r.Offset || isa.Reloc(elf.R_TYPE32(rs[i].Info)) != r.Type || rs[i].Addend != r.Addend || symName != r.Symbol {
			t.Errorf("rela %d: %+v (symbol %s), want %+v", i, rs[i], symName, r)
		}
	}
	d, _ = f.Section(".rela.text.unused").Data()
	if sym := binary.LittleEndian.Uint32(d[4:]) >> 8; elf.ST_TYPE(syms[sym-1].Info) != elf.STT_SECTION || syms[sym-1].Section != 1 {
		t.Errorf("section-relative relocation uses symbol %d %+v", sym, syms[sym-1])
	}
}

func link(t *testing.T, opts LinkOptions, objs ...*Object) *Image {
	t.Helper()
	im, err := Link(objs, opts)
	if err != nil {
		t.Fatalf("Link: %v", err)
	}
	return im
}

func TestLinkTwoObjects(t *testing.T) {
	im := link(t, LinkOptions{}, objA(), objB())
	type pl struct {
		obj, name  string
		addr, size uint32
	}
	var got []pl
	for _, s := range im.Sections {
		got = append(got, pl{s.Object, s.Name, s.Addr, s.Size})
	}
	want := []pl{
		{"a.o", ".text", 0x4C010, 16},
		{"b.o", ".text", 0x4C020, 8},
		{"b.o", ".data", 0x4C028, 8},
		{"b.o", ".bss", 0x4C030, 16},
	}
	if len(got) != len(want) {
		t.Fatalf("placed %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("section %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if im.Entry != 0x4C010 {
		t.Errorf("entry 0x%x", im.Entry)
	}
	a := im.Sections[0].Data
	for _, c := range []struct {
		off  uint32
		want uint32
		what string
	}{
		{0, setzi | 0x4C028, "setzi buf (R_COLOSSUS_20)"},
		{4, call | 10<<20 | 0x4C020>>2, "call foo (R_COLOSSUS_19_S2)"},
		{8, 0x4C024, "foo+4 (R_COLOSSUS_32)"},
		{12, 0x40000000 | 4<<16 | 0x008, "RUN foo+0x10000: (0x5C020-0x4C000)>>2 = 0x4008, split 4:12"},
	} {
		if w := wordAt(a, c.off); w != c.want {
			t.Errorf("%s: word 0x%08x, want 0x%08x", c.what, w, c.want)
		}
	}
	if w := wordAt(im.Sections[1].Data, 0); w != 0x4C038 {
		t.Errorf("b.o .text: .bss+8 = 0x%x, want 0x4C038", w)
	}
	if w := wordAt(im.Sections[1].Data, 4); w != 0x12345678 {
		t.Errorf("unrelocated word changed: 0x%x", w)
	}
	// Inputs are not modified.
	if wordAt(objA().Sections[0].Data, 4) != call|10<<20 {
		t.Error("input modified")
	}

	// One segment: contiguous bytes then zero-fill.
	if len(im.Segments) != 1 {
		t.Fatalf("segments %+v", im.Segments)
	}
	g := im.Segments[0]
	if g.Addr != 0x4C010 || len(g.Data) != 0x20 || g.MemSize != 0x30 || g.Flags != FlagAlloc|FlagExec|FlagWrite {
		t.Errorf("segment addr 0x%x len %d mem %d flags %x", g.Addr, len(g.Data), g.MemSize, g.Flags)
	}
	if !bytes.Equal(g.Data[0x10:0x18], im.Sections[1].Data) {
		t.Error("segment bytes differ from section bytes")
	}

	// Symbols.
	for name, addr := range map[string]uint32{"_start": 0x4C010, "foo": 0x4C020, "buf": 0x4C028, "ABS": 0x58000} {
		s, ok := im.Lookup(name)
		if !ok || s.Addr != addr {
			t.Errorf("symbol %s: %+v %v, want 0x%x", name, s, ok, addr)
		}
	}
	var loop *ImageSymbol
	for i := range im.Symbols {
		if im.Symbols[i].Name == "loop" {
			loop = &im.Symbols[i]
		}
	}
	if loop == nil || loop.Addr != 0x4C014 || loop.Bind != Local || loop.Object != "a.o" {
		t.Errorf("local loop: %+v", loop)
	}
}

func TestLinkGC(t *testing.T) {
	im := link(t, LinkOptions{}, objA(), objB())
	for _, s := range im.Sections {
		if s.Name == ".text.unused" || s.Name == ".text.dead" || s.Name == ".comment" {
			t.Errorf("unreachable section %s %s kept", s.Object, s.Name)
		}
	}
	for _, n := range []string{"unused", "dead"} {
		if _, ok := im.Lookup(n); ok {
			t.Errorf("symbol %s of a dropped section kept", n)
		}
	}
	// Roots keep a section (and what it references).
	im = link(t, LinkOptions{Roots: []string{"unused"}}, objA(), objB())
	var names []string
	for _, s := range im.Sections {
		names = append(names, s.Object+":"+s.Name)
	}
	if got := strings.Join(names, " "); got != "a.o:.text a.o:.text.unused b.o:.text b.o:.data b.o:.bss" {
		t.Errorf("with root: %s", got)
	}
	// .text.unused calls a.o's .text by section name.
	u := im.Sections[1]
	if w := wordAt(u.Data, 0); w != call|0x4C010>>2 {
		t.Errorf(".text.unused call word 0x%x", w)
	}
	// KeepAll keeps every allocatable section, never non-alloc ones.
	im = link(t, LinkOptions{KeepAll: true}, objA(), objB())
	names = nil
	for _, s := range im.Sections {
		names = append(names, s.Object+":"+s.Name)
	}
	if got := strings.Join(names, " "); got != "a.o:.text a.o:.text.unused b.o:.text b.o:.data b.o:.text.dead b.o:.bss" {
		t.Errorf("KeepAll: %s", got)
	}
}

func TestLinkWeak(t *testing.T) {
	a := objA()
	a.Sections = append(a.Sections, &Section{Name: ".text.weak", Flags: FlagAlloc | FlagExec, Align: 4, Data: words(0)})
	a.Symbols = append(a.Symbols, &Symbol{Name: "buf", Section: 2, Bind: Weak}, &Symbol{Name: "opt", Section: Undefined, Bind: Weak})
	a.Sections[0].Relocs = append(a.Sections[0].Relocs, Reloc{Offset: 8, Type: isa.Reloc32, Symbol: "opt", Addend: 5})
	// The weak buf (a.o) yields to b.o's global buf; opt stays 0.
	im := link(t, LinkOptions{}, a, objB())
	if s, _ := im.Lookup("buf"); s.Object != "b.o" {
		t.Errorf("buf resolved to %+v", s)
	}
	if w := wordAt(im.Sections[0].Data, 8); w != 5 {
		t.Errorf("weak undefined + 5 = 0x%x", w)
	}
	for _, s := range im.Sections {
		if s.Name == ".text.weak" {
			t.Error("section of the overridden weak definition kept")
		}
	}
}

func TestLinkErrors(t *testing.T) {
	tests := []struct {
		name  string
		objs  func() []*Object
		opts  LinkOptions
		wants []string
	}{
		{"undefined", func() []*Object {
			a := objA()
			a.Sections[0].Relocs[1].Symbol = "missing"
			return []*Object{a, objB()}
		}, LinkOptions{}, []string{`undefined symbol "missing"`, "a.o", ".text", "offset 0x4", "R_COLOSSUS_19_S2"}},
		{"undefined without objB", func() []*Object { return []*Object{objA()} }, LinkOptions{},
			[]string{`undefined symbol "foo"`, `undefined symbol "buf"`}},
		{"duplicate", func() []*Object {
			c := objB()
			c.Name = "c.o"
			return []*Object{objA(), objB(), c}
		}, LinkOptions{}, []string{`duplicate definition of global symbol "foo"`, "in b.o (section .text) and in c.o (section .text)", `"buf"`}},
		{"out of range", func() []*Object {
			a := objA()
			a.Sections[0].Relocs[2].Type = isa.Reloc16
			return []*Object{a, objB()}
		}, LinkOptions{}, []string{"a.o section .text offset 0x8", "R_COLOSSUS_16", `"foo"`, "out of range"}},
		{"out of range 20", func() []*Object {
			a := objA()
			a.Sections[0].Relocs[0].Addend = 0x100000
			return []*Object{a, objB()}
		}, LinkOptions{}, []string{"R_COLOSSUS_20", `"buf"`, "out of range", "offset 0x0"}},
		{"misaligned", func() []*Object {
			a := objA()
			a.Sections[0].Relocs[1].Addend = 2
			return []*Object{a, objB()}
		}, LinkOptions{}, []string{"a.o section .text offset 0x4", "R_COLOSSUS_19_S2", `"foo"`, "not aligned", "0x4c022"}},
		{"too big", func() []*Object {
			b := objB()
			b.Sections[2].Size = 0x40000
			return []*Object{objA(), b}
		}, LinkOptions{}, []string{"do not fit", "b.o section .bss (262144 bytes)", "limit 0x80000", "a.o .text: 16 bytes"}},
		{"no entry", func() []*Object { return []*Object{objB()} }, LinkOptions{}, []string{`entry symbol "_start" is not defined`}},
		{"local entry", func() []*Object { return []*Object{objA(), objB()} }, LinkOptions{Entry: "loop"},
			[]string{`entry symbol "loop" is not defined`, "a.o defines a local"}},
		{"bad root", func() []*Object { return []*Object{objA(), objB()} }, LinkOptions{Roots: []string{"nope"}}, []string{`root symbol "nope"`}},
		{"entry misaligned", func() []*Object {
			a := objA()
			a.Sections[0].Align = 32
			return []*Object{a, objB()}
		}, LinkOptions{}, []string{"entry section .text of a.o needs 32-byte alignment"}},
		{"nil", func() []*Object { return []*Object{nil} }, LinkOptions{}, []string{"object #0 is nil"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Link(tc.objs(), tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLinkDeterministic(t *testing.T) {
	var first []byte
	for i := 0; i < 5; i++ {
		im := link(t, LinkOptions{KeepAll: true}, objA(), objB())
		b, err := im.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatal("link output differs between runs")
		}
	}
	// Linking the objects after a trip through their files gives the same
	// executable.
	var objs []*Object
	for _, o := range []*Object{objA(), objB()} {
		p, err := Parse(o.Name, mustMarshal(t, o))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, p)
	}
	b, err := link(t, LinkOptions{KeepAll: true}, objs...).Marshal()
	if err != nil || !bytes.Equal(first, b) {
		t.Fatalf("link of parsed objects differs (%v)", err)
	}
}

func TestExecutable(t *testing.T) {
	im := link(t, LinkOptions{}, objA(), objB())
	b, err := im.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("debug/elf: %v", err)
	}
	if f.Type != elf.ET_EXEC || f.Entry != 0x4C010 || f.Machine != elf.Machine(Machine) {
		t.Errorf("header %+v", f.FileHeader)
	}
	if len(f.Progs) != 1 {
		t.Fatalf("progs %d", len(f.Progs))
	}
	p := f.Progs[0]
	if p.Type != elf.PT_LOAD || p.Vaddr != 0x4C010 || p.Filesz != 0x20 || p.Memsz != 0x30 || p.Flags != elf.PF_R|elf.PF_W|elf.PF_X || p.Off%p.Align != p.Vaddr%p.Align {
		t.Errorf("PT_LOAD %+v", p.ProgHeader)
	}
	pd := make([]byte, p.Filesz)
	if _, err := p.ReadAt(pd, 0); err != nil || !bytes.Equal(pd, im.Segments[0].Data) {
		t.Errorf("segment bytes: %v", err)
	}
	fs := f.Section(".data")
	if fs == nil || fs.Addr != 0x4C028 {
		t.Fatalf(".data %+v", fs)
	}
	syms, _ := f.Symbols()
	found := false
	for _, s := range syms {
		if s.Name == "foo" && s.Value == 0x4C020 && f.Sections[s.Section].Addr == 0x4C020 {
			found = true
		}
	}
	if !found {
		t.Errorf("foo not in the executable's symbols: %+v", syms)
	}

	l, err := Load("a.out", b)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Exec || l.Entry != 0x4C010 || len(l.Sections) != len(im.Sections) {
		t.Fatalf("Load: %+v", l)
	}
	for i, s := range l.Sections {
		ps := im.Sections[i]
		if s.Name != ps.Name || s.Addr != ps.Addr || s.Size != ps.Size || s.Flags != ps.Flags || s.NoBits != ps.NoBits || !bytes.Equal(s.Data, ps.Data) {
			t.Errorf("section %d: %+v, want %+v", i, s, ps)
		}
	}
	if s := l.Sections[0].Symbols; len(s) != 2 || s[0] != (SectionSymbol{Name: "_start", Offset: 0, Size: 16, Bind: Global, Type: Func}) || s[1].Name != "loop" || s[1].Offset != 4 {
		t.Errorf("labels of .text: %+v", s)
	}
	// Parse is for objects only.
	if _, err := Parse("a.out", b); err == nil || !strings.Contains(err.Error(), "ET_EXEC") {
		t.Errorf("Parse of an executable: %v", err)
	}
}

func TestLoadObject(t *testing.T) {
	secs, err := Sections("b.o", mustMarshal(t, objB()))
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 5 || secs[0].Addr != 0 || secs[0].Symbols[0].Name != "foo" || len(secs[0].Relocs) != 1 || secs[2].Data != nil || secs[2].Size != 16 {
		t.Errorf("sections %+v", secs)
	}
}

func TestParseRejects(t *testing.T) {
	good := mustMarshal(t, objA())
	le := binary.LittleEndian
	mod := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	shoff := le.Uint32(good[32:])
	sh := func(b []byte, i int) []byte { return b[shoff+uint32(i)*shdrSize:] }
	// Section indices: 1 .text, 2 .text.unused, 3 .rela.text, 4 .rela.text.unused, 5 .symtab, 6 .strtab, 7 .shstrtab
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "shorter than an ELF32 header"},
		{"magic", mod(func(b []byte) { b[0] = 0 }), "not an ELF file"},
		{"class", mod(func(b []byte) { b[4] = 2 }), "EI_CLASS is 2, want 1 (ELFCLASS32)"},
		{"endian", mod(func(b []byte) { b[5] = 2 }), "EI_DATA is 2"},
		{"machine", mod(func(b []byte) { le.PutUint16(b[18:], 3) }), "e_machine is 0x3, want 0xf8"},
		{"type", mod(func(b []byte) { le.PutUint16(b[16:], 3) }), "e_type is 3 (ET_DYN), want 1 (ET_REL)"},
		{"shoff", mod(func(b []byte) { le.PutUint32(b[32:], uint32(len(b))) }), "section header table"},
		{"shentsize", mod(func(b []byte) { le.PutUint16(b[46:], 64) }), "e_shentsize is 64"},
		{"shstrndx", mod(func(b []byte) { le.PutUint16(b[50:], 99) }), "e_shstrndx 99"},
		{"truncated", good[:len(good)-1], "section header table"},
		{"section bounds", mod(func(b []byte) { le.PutUint32(sh(b, 1)[20:], 1<<20) }), `section 1 ".text": contents`},
		{"section name", mod(func(b []byte) { le.PutUint32(sh(b, 1)[0:], 1<<20) }), "section 1: name offset"},
		{"align", mod(func(b []byte) { le.PutUint32(sh(b, 1)[32:], 3) }), "sh_addralign 3 is not a power of two"},
		{"reloc offset", mod(func(b []byte) { le.PutUint32(b[le.Uint32(sh(b, 3)[16:])+12:], 14) }), `relocation 1 (offset 0xe in ".text"): R_COLOSSUS_19_S2 needs 4 bytes`},
		{"reloc type", mod(func(b []byte) { b[le.Uint32(sh(b, 3)[16:])+4] = 99 }), "unknown relocation type 99"},
		{"reloc symbol", mod(func(b []byte) { b[le.Uint32(sh(b, 3)[16:])+7] = 99 }), "symbol index"},
		{"rela link", mod(func(b []byte) { le.PutUint32(sh(b, 3)[24:], 1) }), "sh_link 1 is not the symbol table"},
		{"rela info", mod(func(b []byte) { le.PutUint32(sh(b, 3)[28:], 77) }), "sh_info 77"},
		{"rel", mod(func(b []byte) { le.PutUint32(sh(b, 3)[4:], shtRel) }), "SHT_REL"},
		{"symtab entsize", mod(func(b []byte) { le.PutUint32(sh(b, 5)[36:], 8) }), `".symtab": sh_entsize is 8`},
		{"symbol section", mod(func(b []byte) { le.PutUint16(b[le.Uint32(sh(b, 5)[16:])+3*16+14:], 40) }), `symbol 3 "_start": section index 40 out of range`},
		{"symbol value", mod(func(b []byte) { le.PutUint32(b[le.Uint32(sh(b, 5)[16:])+3*16+4:], 40) }), `symbol 3 "_start": value 0x28 beyond the end of section 1 ".text"`},
		{"common", mod(func(b []byte) { le.PutUint16(b[le.Uint32(sh(b, 5)[16:])+3*16+14:], shnCommon) }), "SHN_COMMON"},
		{"symbol name", mod(func(b []byte) { le.PutUint32(b[le.Uint32(sh(b, 5)[16:])+3*16:], 1<<20) }), "symbol 3: name offset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.o", tc.data)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "x.o: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want x.o: ...%s", err, tc.want)
			}
		})
	}
}

func TestMarshalRejects(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *Object)
		want string
	}{
		{"align", func(o *Object) { o.Sections[0].Align = 6 }, "alignment 6"},
		{"reloc offset", func(o *Object) { o.Sections[0].Relocs[0].Offset = 14 }, "offset 0xe: R_COLOSSUS_20 needs 4 bytes"},
		{"reloc type", func(o *Object) { o.Sections[0].Relocs[0].Type = 99 }, "unknown type 99"},
		{"symbol section", func(o *Object) { o.Symbols[0].Section = 9 }, `symbol 0 "_start": section index 9`},
		{"symbol value", func(o *Object) { o.Symbols[0].Value = 17 }, "beyond the end"},
		{"ambiguous section", func(o *Object) { o.Sections[1].Name = ".text" }, `".text" names 2 sections`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := objA()
			tc.edit(o)
			_, err := o.Marshal()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "a.o: ") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// Every truncation and every single-byte corruption of a valid object must
// give a result or an error, never a panic; successful parses re-marshal.
func TestParseCorruption(t *testing.T) {
	good := mustMarshal(t, objB())
	for n := 0; n < len(good); n++ {
		Parse("t.o", good[:n])
	}
	for i := range good {
		for _, v := range []byte{0, 0xff, good[i] ^ 1, good[i] + 0x10} {
			b := bytes.Clone(good)
			b[i] = v
			checkParse(t, b)
		}
	}
}

func checkParse(t *testing.T, data []byte) {
	Load("f", data)
	o, err := Parse("f", data)
	if err != nil {
		return
	}
	// Whatever parses must link (or fail cleanly) and round-trip as an
	// executable.
	for _, sym := range o.Symbols {
		if sym.Bind != Local && sym.Section >= 0 {
			if im, err := Link([]*Object{o}, LinkOptions{Entry: sym.Name, KeepAll: true}); err == nil {
				if b, err := im.Marshal(); err != nil {
					t.Fatalf("Marshal of a linked image: %v", err)
				} else if _, err := Load("a.out", b); err != nil {
					t.Fatalf("Load of a linked image: %v", err)
				}
			}
			break
		}
	}
	b, err := o.Marshal()
	if err != nil {
		return // e.g. too many sections once rewritten
	}
	o2, err := Parse("f", b)
	if err != nil {
		t.Fatalf("Parse of re-marshalled object: %v", err)
	}
	b2, err := o2.Marshal()
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("Marshal(Parse(Marshal(Parse(x)))) differs: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(mustMarshal(f, objA()))
	f.Add(mustMarshal(f, objB()))
	f.Add(mustMarshal(f, &Object{Name: "empty.o"}))
	im, err := Link([]*Object{objA(), objB()}, LinkOptions{})
	if err != nil {
		f.Fatal(err)
	}
	b, err := im.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParse(t, data)
	})
}
