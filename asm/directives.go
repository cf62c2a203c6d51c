package asm

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"strings"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
)

func (a *assembler) directive(d token, args []token) {
	name := strings.ToLower(d.text)
	switch name {
	case ".text", ".data", ".bss":
		if len(args) > 0 {
			a.errorf(args[0].pos, "%s takes no operands", name)
			return
		}
		a.switchTo(a.getSection(name, defaultFlags(name), name == ".bss"))
	case ".section", ".pushsection":
		if name == ".pushsection" {
			a.secStack = append(a.secStack, a.cur)
		}
		a.sectionDirective(d, args)
	case ".popsection":
		if len(a.secStack) == 0 {
			a.errorf(d.pos, ".popsection without .pushsection")
			return
		}
		s := a.secStack[len(a.secStack)-1]
		a.secStack = a.secStack[:len(a.secStack)-1]
		a.switchTo(s)
	case ".previous":
		if a.prevSec == nil {
			a.errorf(d.pos, ".previous without an earlier section")
			return
		}
		a.switchTo(a.prevSec)
	case ".extern":
		// GNU as treats every undefined symbol as external; .extern only
		// names them. Recording the mention keeps "first used at".
		for _, part := range splitCommas(args) {
			if t, ok := a.symName(d, part); ok {
				a.lookupAt(t)
			}
		}
	case ".globl", ".global", ".local", ".weak", ".hidden", ".internal", ".protected":
		if name == ".hidden" || name == ".internal" || name == ".protected" {
			// Visibility: ipustack's objects have no dynamic linking, so
			// every visibility links alike; the names must still be
			// symbols.
			for _, part := range symbolList(args) {
				a.symName(d, part)
			}
			return
		}
		bind := map[string]elf.Bind{".globl": elf.Global, ".global": elf.Global, ".local": elf.Local, ".weak": elf.Weak}[name]
		for _, part := range symbolList(args) {
			if len(part) == 2 && part[0].punct("@") && part[1].kind == tIdent {
				// `.globl f, @function` (poplibs): LLVM reads @function as
				// one more name; it names no symbol of the program.
				continue
			}
			t, ok := a.symName(d, part)
			if !ok {
				return
			}
			s := a.lookupAt(t)
			s.bind, s.bindSet = bind, true
		}
		if len(args) == 0 {
			a.errorf(d.pos, "%s: expected symbol names", name)
		}
	case ".type":
		parts := splitCommas(args)
		if len(parts) == 1 && len(parts[0]) >= 2 && (parts[0][1].punct("@") || parts[0][1].punct("%")) {
			parts = [][]token{parts[0][:1], parts[0][1:]} // `.type sym @function`, as GNU as allows
		}
		if len(parts) != 2 {
			a.errorf(d.pos, ".type: expected `.type symbol, @function` or `@object`")
			return
		}
		t, ok := a.symName(d, parts[0])
		if !ok {
			return
		}
		typ := strings.ToLower(strings.TrimLeft(joinTokens(parts[1]), "@%# "))
		s := a.lookupAt(t)
		switch typ {
		case "function", "stt_func":
			s.typ = elf.Func
		case "object", "stt_object":
			s.typ = elf.DataSym
		case "notype", "stt_notype":
			s.typ = elf.NoType
		default:
			a.errorf(firstPos(parts[1], d), ".type: unknown symbol type %q (want @function, @object or @notype)", joinTokens(parts[1]))
		}
	case ".size":
		parts := splitCommas(args)
		if len(parts) != 2 {
			a.errorf(d.pos, ".size: expected `.size symbol, expression`")
			return
		}
		t, ok := a.symName(d, parts[0])
		if !ok {
			return
		}
		e, err := parseExpr(parts[1], a, false, endPos(d, args))
		if err != nil {
			a.exprErr(err, d.pos)
			return
		}
		s := a.lookupAt(t)
		s.size, s.sizePos = a.freeze(e), firstPos(parts[1], d)
	case ".set", ".equ", ".equiv":
		parts := splitCommas(args)
		if len(parts) < 2 {
			a.errorf(d.pos, "%s: expected `%s name, expression`", name, name)
			return
		}
		t, ok := a.setName(d, parts[0])
		if !ok {
			return
		}
		if s := a.syms[t.text]; name == ".equiv" && s != nil && s.kind != symUndef {
			a.errorf(t.pos, ".equiv: symbol %s is already defined", t.text)
			return
		}
		a.set(t, args[len(parts[0])+1:], d)
	case ".byte", ".short", ".hword", ".2byte", ".long", ".word", ".int", ".4byte", ".quad", ".8byte",
		".dc.b", ".dc.w", ".dc.l", ".dc.a", ".dc", ".dc.q":
		size := map[string]int{".byte": 1, ".short": 2, ".hword": 2, ".2byte": 2, ".long": 4, ".word": 4,
			".int": 4, ".4byte": 4, ".quad": 8, ".8byte": 8,
			// GNU as: .dc is .dc.w; .dc.a is an address (4 bytes on IPU).
			".dc.b": 1, ".dc.w": 2, ".dc": 2, ".dc.l": 4, ".dc.a": 4, ".dc.q": 8}[name]
		for _, part := range a.items(d, args) {
			part, rel, ok := a.symbolVariant(name, size, part)
			if !ok {
				return
			}
			e, err := parseExpr(part, a, false, endPos(d, part))
			if err != nil {
				a.exprErr(err, d.pos)
				return
			}
			a.data(size, e, part[0].pos, rel)
		}
	case ".float", ".single", ".double", ".half":
		for _, part := range a.items(d, args) {
			a.floatItem(name, d, part)
		}
	case ".ascii", ".asciz", ".string":
		for _, part := range a.items(d, args) {
			if len(part) != 1 || part[0].kind != tStr {
				a.errorf(part[0].pos, "%s: expected a string, found %q", name, joinTokens(part))
				return
			}
			b, err := unquote(part[0].text)
			if err != nil {
				a.errorf(part[0].pos, "%v", err)
				return
			}
			if name != ".ascii" {
				b = append(b, 0)
			}
			a.emit(part[0].pos, b)
		}
	case ".space", ".skip", ".zero":
		parts := splitCommas(args)
		if len(parts) < 1 || len(parts) > 2 || name == ".zero" && len(parts) != 1 {
			a.errorf(d.pos, "%s: expected a size and an optional fill byte", name)
			return
		}
		n, ok := a.constExpr(parts[0], d, "size")
		if !ok {
			return
		}
		fill := int64(0)
		if len(parts) == 2 {
			if fill, ok = a.constExpr(parts[1], d, "fill"); !ok {
				return
			}
		}
		if n < 0 || n > maxOutputBytes {
			a.errorf(firstPos(parts[0], d), "%s size %d out of range [0, %d]", name, n, maxOutputBytes)
			return
		}
		a.fill(d.pos, n, byte(fill), fill != 0)
	case ".p2align", ".align", ".balign":
		a.alignDirective(name, d, args)
	case ".uleb128", ".sleb128":
		for _, part := range a.items(d, args) {
			n, ok := a.constExpr(part, d, "value")
			if !ok {
				return
			}
			a.emit(part[0].pos, leb128(n, name == ".sleb128"))
		}
	case ".fill":
		a.fillDirective(d, args)
	case ".supervisor":
		a.ctx = isa.Supervisor
	case ".worker":
		a.ctx = isa.Worker
	case ".allow_optimizations", ".allow_invalid_repeat", ".allow_invalid_operands", ".error_on_invalid_operands",
		".allow_invalid_execution_mode", ".error_on_invalid_execution_mode",
		".warn_on_invalid_bundles", ".error_on_invalid_bundles":
		// The LLVM Colossus AsmParser's own switches (ParseDirective): they
		// relax its checks or allow relaxations. ipustack never relaxes
		// and keeps its checks, so they change nothing here.
	case ".file", ".ident", ".loc", ".loc_mark_labels", ".cfi_sections", ".cfi_startproc", ".cfi_endproc",
		".cfi_def_cfa", ".cfi_def_cfa_offset", ".cfi_def_cfa_register", ".cfi_offset", ".cfi_rel_offset",
		".cfi_restore", ".cfi_register", ".cfi_adjust_cfa_offset", ".cfi_remember_state", ".cfi_restore_state",
		".cfi_same_value", ".cfi_undefined", ".cfi_escape", ".cfi_return_column", ".cfi_signal_frame",
		".cfi_window_save", ".cfi_personality", ".cfi_lsda", ".addrsig", ".addrsig_sym":
		// Debug and unwind information: ipustack objects carry none (no
		// debugger reads them), so these are accepted and dropped.
	case ".error", ".err":
		a.errorf(d.pos, "%s", strings.Trim(joinTokens(args), `"`))
	case ".warning":
	case ".purgem":
		if len(args) != 1 || a.macros[args[0].text] == nil {
			a.errorf(d.pos, ".purgem: expected the name of a defined macro")
			return
		}
		delete(a.macros, args[0].text)
	default:
		a.errorf(d.pos, "unknown directive %s", d.text)
	}
}

// symbolList splits a symbol list at commas or, as poplibs also writes,
// white space (`.globl a b`).
func symbolList(args []token) [][]token {
	var out [][]token
	for _, part := range splitCommas(args) {
		start := 0
		for i := 1; i < len(part); i++ {
			if part[i].space && part[i].kind == tIdent && part[i-1].kind == tIdent {
				out = append(out, part[start:i])
				start = i
			}
		}
		out = append(out, part[start:])
	}
	return out
}

// leb128 encodes n as unsigned or signed LEB128.
func leb128(n int64, signed bool) []byte {
	var b []byte
	for {
		c := byte(n & 0x7F)
		if signed {
			n >>= 7
			if n == 0 && c&0x40 == 0 || n == -1 && c&0x40 != 0 {
				return append(b, c)
			}
		} else {
			n = int64(uint64(n) >> 7)
			if n == 0 {
				return append(b, c)
			}
		}
		b = append(b, c|0x80)
	}
}

// fillDirective is `.fill repeat[, size[, value]]`: repeat copies of a
// size-byte (at most 8) little-endian value.
func (a *assembler) fillDirective(d token, args []token) {
	parts := splitCommas(args)
	if len(parts) < 1 || len(parts) > 3 {
		a.errorf(d.pos, ".fill: expected `.fill repeat[, size[, value]]`")
		return
	}
	vals := []int64{0, 1, 0}
	for i, part := range parts {
		v, ok := a.constExpr(part, d, []string{"repeat", "size", "value"}[i])
		if !ok {
			return
		}
		vals[i] = v
	}
	rep, size := vals[0], vals[1]
	if size < 0 || size > 8 {
		a.errorf(firstPos(parts[min(1, len(parts)-1)], d), ".fill size %d out of range [0, 8]", size)
		return
	}
	if rep < 0 || rep*size > maxOutputBytes {
		a.errorf(firstPos(parts[0], d), ".fill repeat %d out of range", rep)
		return
	}
	var one [8]byte
	binary.LittleEndian.PutUint64(one[:], uint64(vals[2]))
	buf := make([]byte, 0, rep*size)
	for k := int64(0); k < rep; k++ {
		buf = append(buf, one[:size]...)
	}
	a.emit(d.pos, buf)
}

func (a *assembler) items(d token, args []token) [][]token {
	parts := splitCommas(args)
	if len(parts) == 0 {
		a.errorf(endPos(d, nil), "%s: expected at least one value", d.text)
		return nil
	}
	for _, p := range parts {
		if len(p) == 0 {
			a.errorf(d.pos, "%s: empty value in the list", d.text)
			return nil
		}
	}
	return parts
}

func (a *assembler) symName(d token, part []token) (token, bool) {
	if len(part) != 1 || part[0].kind != tIdent || strings.HasPrefix(part[0].text, "$") || part[0].text == "." {
		p := d.pos
		found := "nothing"
		if len(part) > 0 {
			p, found = part[0].pos, strconv.Quote(joinTokens(part))
		}
		a.errorf(p, "%s: expected a symbol name, found %s", d.text, found)
		return token{}, false
	}
	return part[0], true
}

// setName reads the name a .set/.equ/.equiv defines. As in the LLVM
// Colossus assembler (MC test symbols-with-dollar-prefix.s: `.set
// $test_symbol, 50` then `get $m1, $test_symbol`), it may start with `$`,
// unless the rest names a register or a control register.
func (a *assembler) setName(d token, part []token) (token, bool) {
	if len(part) == 1 && part[0].kind == tIdent && strings.HasPrefix(part[0].text, "$") && len(part[0].text) > 1 {
		if why := dollarNameClash(part[0].text); why != "" {
			a.errorf(part[0].pos, "%s: %s is %s, not a symbol name", d.text, part[0].text, why)
			return token{}, false
		}
		return part[0], true
	}
	return a.symName(d, part)
}

// dollarNameClash says what a $NAME already means ("a register", "a
// control register"), or "" when it can name a symbol.
func dollarNameClash(name string) string {
	if _, _, _, reg := isa.ParseRegister(name[1:]); reg {
		return "a register"
	}
	if _, csr := isa.CSRByName(name[1:]); csr {
		return "a control register"
	}
	return ""
}

func (a *assembler) switchTo(s *section) {
	if a.cur != s {
		a.prevSec = a.cur
	}
	a.cur = s
}

func (a *assembler) sectionDirective(d token, args []token) {
	parts := splitCommas(args)
	if len(parts) > 0 && len(parts[0]) > 1 && parts[0][0].kind == tIdent {
		// LLVM's ELF parser takes every token up to the comma as the
		// name, so .text.F(x)_y (a macro call the preprocessor left) is
		// one name; white space still ends it.
		nt := parts[0][0]
		for _, t := range parts[0][1:] {
			if t.space || t.kind == tStr {
				a.errorf(t.pos, ".section: unexpected %q after the section name %s", t.text, nt.text)
				return
			}
			nt.text += t.text
		}
		parts[0] = []token{nt}
	}
	if len(parts) == 0 || len(parts[0]) != 1 || parts[0][0].kind != tIdent && parts[0][0].kind != tStr {
		a.errorf(d.pos, ".section: expected a section name")
		return
	}
	nt := parts[0][0]
	name := nt.text
	if nt.kind == tStr {
		b, _ := unquote(name)
		name = string(b)
	}
	flags := defaultFlags(name)
	nobits := name == ".bss" || strings.HasPrefix(name, ".bss.")
	explicit := false
	if len(parts) >= 2 {
		if len(parts[1]) != 1 || parts[1][0].kind != tStr {
			a.errorf(firstPos(parts[1], d), `.section: expected flags as a string such as "ax"`)
			return
		}
		explicit = true
		flags = 0
		b, _ := unquote(parts[1][0].text)
		for _, c := range string(b) {
			switch c {
			case 'a':
				flags |= elf.FlagAlloc
			case 'w':
				flags |= elf.FlagWrite
			case 'x':
				flags |= elf.FlagExec
			default:
				a.errorf(firstPos(parts[1], d), ".section: unknown flag %q (want a, w or x)", c)
				return
			}
		}
	}
	if len(parts) >= 3 {
		typ := strings.ToLower(strings.TrimLeft(joinTokens(parts[2]), "@%"))
		switch typ {
		case "progbits":
			nobits = false
		case "nobits":
			nobits = true
		default:
			a.errorf(firstPos(parts[2], d), ".section: unknown section type %q (want @progbits or @nobits)", joinTokens(parts[2]))
			return
		}
	}
	if len(parts) > 3 {
		a.errorf(firstPos(parts[3], d), ".section: too many operands")
		return
	}
	if old, ok := a.secByN[name]; ok {
		if explicit && (old.flags != flags || old.nobits != nobits) {
			a.errorf(nt.pos, ".section %s: flags or type differ from its first declaration", name)
			return
		}
		a.switchTo(old)
		return
	}
	a.switchTo(a.getSection(name, flags, nobits))
}

// emit appends bytes to the current section.
func (a *assembler) emit(p srcPos, b []byte) (off int64, ok bool) {
	sec := a.section()
	off = sec.offset()
	if sec.nobits {
		for _, c := range b {
			if c != 0 {
				a.errorf(p, "section %s is @nobits: it cannot hold data", sec.name)
				return off, false
			}
		}
	}
	a.total += int64(len(b))
	if a.total > maxOutputBytes {
		a.errorf(p, "output larger than %d bytes", maxOutputBytes)
		a.abort = true
		return off, false
	}
	if sec.nobits {
		sec.size += int64(len(b))
	} else {
		sec.data = append(sec.data, b...)
	}
	return off, true
}

func (a *assembler) fill(p srcPos, n int64, b byte, explicit bool) {
	sec := a.section()
	if sec.nobits {
		if explicit {
			a.errorf(p, "section %s is @nobits: it cannot hold data", sec.name)
			return
		}
		a.total += n
		if a.total > maxOutputBytes {
			a.errorf(p, "output larger than %d bytes", maxOutputBytes)
			a.abort = true
			return
		}
		sec.size += n
		return
	}
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = b
	}
	a.emit(p, buf)
}

// symbolVariants are the LLVM Colossus data-relocation suffixes (the MC
// test symbol-variants.s: `.short (bar + 4)@relative@16@s2`, `.long
// (bar + 4)@abs18@s2`, `@abs19@s2`): the relocation that patches the
// value instead of the plain data one.
var symbolVariants = map[string]isa.Reloc{
	"relative@16@s2": isa.RelocRelative16S2,
	"abs18@s2":       isa.Reloc18S2,
	"abs19@s2":       isa.Reloc19S2,
}

// symbolVariant splits a data item's trailing @variant suffix (`expr@abs18@s2`)
// off and returns the relocation it names (RelocNone without one).
func (a *assembler) symbolVariant(dir string, size int, part []token) ([]token, isa.Reloc, bool) {
	i := len(part)
	for i >= 2 && part[i-2].punct("@") && (part[i-1].kind == tIdent || part[i-1].kind == tNum) {
		i -= 2
	}
	if i == len(part) {
		return part, isa.RelocNone, true
	}
	var b strings.Builder
	for j := i + 1; j < len(part); j += 2 {
		if b.Len() > 0 {
			b.WriteByte('@')
		}
		b.WriteString(part[j].text)
	}
	suffix := b.String()
	rel, ok := symbolVariants[suffix]
	if !ok || i == 0 {
		known := make([]string, 0, len(symbolVariants))
		for k := range symbolVariants {
			known = append(known, "@"+k)
		}
		sort.Strings(known)
		a.errorf(part[i].pos, "%s: unknown symbol variant @%s (known: %s)", dir, suffix, strings.Join(known, ", "))
		return nil, 0, false
	}
	if info, _ := isa.RelocByType(rel); info.Size != size {
		a.errorf(part[i].pos, "%s: @%s is %s, which patches %d bytes, not %d", dir, suffix, rel, info.Size, size)
		return nil, 0, false
	}
	return part[:i], rel, true
}

// data emits a size-byte value; an address becomes a relocation (rel, or
// the plain one of its size when rel is RelocNone) and a value not known
// yet is patched at the end.
func (a *assembler) data(size int, e expr, p srcPos, rel isa.Reloc) {
	v, err := a.eval(e, false)
	var d *deferError
	if err != nil && !errors.As(err, &d) {
		a.exprErr(err, p)
		return
	}
	off, ok := a.emit(p, make([]byte, size))
	if !ok {
		return
	}
	if err != nil {
		a.fixups = append(a.fixups, fixup{sec: a.section(), off: off, size: size, e: a.freeze(e), pos: p, note: a.note, rel: rel})
		return
	}
	a.putData(a.section(), off, size, v, p, rel)
}

var dataRelocs = map[int]isa.Reloc{1: isa.Reloc8, 2: isa.Reloc16, 4: isa.Reloc32, 8: isa.Reloc64}

func (a *assembler) putData(sec *section, off int64, size int, v value, p srcPos, rel isa.Reloc) {
	if sec.nobits {
		a.errorf(p, "section %s is @nobits: it cannot hold data", sec.name)
		return
	}
	if !v.isConst() {
		if rel == isa.RelocNone {
			rel = dataRelocs[size]
		}
		a.reloc(sec, off, rel, v, p)
		return
	}
	if rel != isa.RelocNone {
		// A constant under a variant is patched now, as the linker would.
		info, _ := isa.RelocByType(rel)
		if err := info.Apply(sec.data[off:off+int64(size)], v.off); err != nil {
			a.errorf(p, "%v", err)
		}
		return
	}
	n := v.off
	if size < 8 {
		lo, hi := -(int64(1) << (size*8 - 1)), int64(1)<<(size*8)-1
		if n < lo || n > hi {
			a.errorf(p, "value %d does not fit in %d bytes", n, size)
			return
		}
	}
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], uint64(n))
	copy(sec.data[off:off+int64(size)], buf[:size])
}

// reloc records a relocation at off for value v (an address).
func (a *assembler) reloc(sec *section, off int64, typ isa.Reloc, v value, p srcPos) {
	var name string
	addend := v.off
	switch {
	case v.ext != nil:
		name = v.ext.name
		v.ext.used = true
	case v.base != nil && !v.base.numeric:
		name = v.base.name
		addend = v.off - v.base.val
	default:
		if v.sec.base == nil {
			v.sec.base = &symbol{name: v.sec.name, kind: symLabel, sec: v.sec}
		}
		name = v.sec.name
	}
	if addend < math.MinInt32 || addend > math.MaxInt32 {
		a.errorf(p, "relocation addend %d out of the 32-bit range", addend)
		return
	}
	sec.relocs = append(sec.relocs, elf.Reloc{Offset: uint32(off), Type: typ, Symbol: name, Addend: int32(addend)})
}

func (a *assembler) floatItem(name string, d token, part []token) {
	text := joinTokens(part)
	f, err := strconv.ParseFloat(strings.ReplaceAll(text, " ", ""), 64)
	if err != nil {
		n, ok := a.constExpr(part, d, "value")
		if !ok {
			return
		}
		f = float64(n)
	}
	var b []byte
	switch name {
	case ".double":
		b = binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))
	case ".half":
		b = binary.LittleEndian.AppendUint16(nil, f32ToF16(float32(f)))
	default:
		b = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(f)))
	}
	a.emit(part[0].pos, b)
}

// f32ToF16 converts to IEEE binary16, rounding to nearest even.
func f32ToF16(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	exp := int32(u>>23) & 0xFF
	man := u & 0x7FFFFF
	if exp == 0xFF {
		if man != 0 {
			return sign | 0x7E00
		}
		return sign | 0x7C00
	}
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7C00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		man |= 0x800000
		shift := uint32(14 - e)
		half := man >> shift
		rem := man & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || rem == mid && half&1 != 0 {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | man>>13
	rem := man & 0x1FFF
	if rem > 0x1000 || rem == 0x1000 && half&1 != 0 {
		half++ // may carry into the exponent, which is the right answer
	}
	return sign | uint16(half)
}

func (a *assembler) alignDirective(name string, d token, args []token) {
	parts := splitCommas(args)
	if len(parts) < 1 || len(parts) > 3 {
		a.errorf(d.pos, "%s: expected an alignment and an optional fill", name)
		return
	}
	n, ok := a.constExpr(parts[0], d, "alignment")
	if !ok {
		return
	}
	var align int64
	if name == ".p2align" {
		if n < 0 || n > 16 {
			a.errorf(firstPos(parts[0], d), ".p2align %d out of range [0, 16]", n)
			return
		}
		align = 1 << n
	} else {
		if n < 1 || n > 1<<16 || bits.OnesCount64(uint64(n)) != 1 {
			a.errorf(firstPos(parts[0], d), "%s %d is not a power of two in [1, 65536]", name, n)
			return
		}
		align = n
	}
	fill, explicit := int64(0), false
	if len(parts) >= 2 && len(parts[1]) > 0 {
		if fill, ok = a.constExpr(parts[1], d, "fill"); !ok {
			return
		}
		explicit = true
	}
	max := int64(-1)
	if len(parts) == 3 {
		if max, ok = a.constExpr(parts[2], d, "maximum"); !ok {
			return
		}
	}
	sec := a.section()
	if uint32(align) > sec.align {
		sec.align = uint32(align)
	}
	off := sec.offset()
	pad := (align - off%align) % align
	if pad == 0 || max >= 0 && pad > max {
		return
	}
	// Code is padded with nops so that falling through the gap is harmless.
	if !explicit && sec.flags&elf.FlagExec != 0 && !sec.nobits && a.nopRow != nil && off%4 == 0 {
		w, err := a.nopRow.Encode(nil, false)
		if err == nil {
			for k := int64(0); k < pad/4; k++ {
				a.emit(d.pos, binary.LittleEndian.AppendUint32(nil, w[0]))
			}
			return
		}
	}
	a.fill(d.pos, pad, byte(fill), explicit && fill != 0)
}
