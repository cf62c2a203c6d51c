package asm

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
)

// Options configure one Assemble call.
type Options struct {
	// Defines are predefined C preprocessor macros (like cc -DNAME=VALUE);
	// an empty value defines the name as 1.
	Defines map[string]string
	// IncludeDirs are searched, in order, for #include "file" after the
	// directory of the including file.
	IncludeDirs []string
	// ReadFile reads included files (default os.ReadFile). Tests and the
	// kernel cache supply in-memory files through it.
	ReadFile func(path string) ([]byte, error)
}

// Limits that keep assembly of hostile input bounded in time and memory.
const (
	maxMacroDepth  = 100
	maxExpansions  = 1 << 16 // macro, .rept and .irp expansions
	maxStatements  = 1 << 20 // statements processed after expansion
	maxReptCount   = 1 << 20
	maxOutputBytes = 64 << 20 // all sections together
	maxSubstBytes  = 16 << 20 // text produced by macro argument substitution
	// Tokens re-lexed from substituted names (`\a\a\()`): each costs a
	// token, whatever its text, so they are limited as well as the bytes.
	maxSubstTokens = 1 << 20
)

// catchPanics turns an internal panic into an error. Tests switch it off so
// that the fuzzer sees the panic.
var catchPanics = true

// Assemble assembles one source file into a relocatable object. filename is
// used in error positions and to resolve #include. The error, when not nil,
// is an ErrorList.
func Assemble(filename string, src []byte, opts Options) (obj *elf.Object, err error) {
	if opts.ReadFile == nil {
		opts.ReadFile = os.ReadFile
	}
	if catchPanics {
		defer func() {
			if r := recover(); r != nil {
				obj = nil
				err = ErrorList{{File: filename, Line: 1, Col: 1, Msg: fmt.Sprintf("internal assembler error: %v", r)}}
			}
		}()
	}
	errs := &errSink{file: filename}
	pp := newCPP(opts, errs)
	pp.file(filename, src)
	a := newAssembler(errs)
	a.cppDefs = pp.everDefined
	if !errs.full() && !pp.failed {
		a.run(splitStatements(pp.out), 0)
		a.finishInput()
		if pp.truncated != nil && len(errs.list) == 0 {
			// The preprocessor stopped early (lines holding only ';' made
			// fewer statements than lines): still an error, never a
			// silently shortened program.
			errs.add(*pp.truncated, "more than %d statements after expansion; giving up", maxStatements)
		}
	}
	if len(errs.list) == 0 {
		a.finish()
	}
	if len(errs.list) == 0 {
		obj = a.object(filename)
	}
	if len(errs.list) > 0 {
		return nil, errs.list
	}
	return obj, nil
}

// stmt is one statement: the tokens between newlines and ';'.
type stmt struct {
	toks []token
	pos  srcPos
}

func splitStatements(lines []line) []stmt {
	var out []stmt
	for _, l := range lines {
		start := 0
		// # starts a comment to the end of the line, as in the LLVM
		// Colossus assembler (its comment string); the preprocessor has
		// already consumed every # that starts a directive.
		for i, t := range l.toks {
			if t.punct("#") || t.punct("##") {
				l.toks = l.toks[:i]
				break
			}
		}
		for i := 0; i <= len(l.toks); i++ {
			if i < len(l.toks) && !l.toks[i].punct(";") {
				continue
			}
			ts := l.toks[start:i]
			p := l.pos
			if len(ts) > 0 {
				p = ts[0].pos
			}
			if len(ts) > 0 {
				out = append(out, stmt{toks: ts, pos: p})
			}
			start = i + 1
		}
	}
	return out
}

type section struct {
	name      string
	flags     elf.SectionFlags
	nobits    bool
	data      []byte
	size      int64 // nobits only
	align     uint32
	relocs    []elf.Reloc
	index     int
	base      *symbol // section-start symbol for relocations, created on demand
	hasCode   bool
	hasBundle bool
}

func (s *section) offset() int64 {
	if s.nobits {
		return s.size
	}
	return int64(len(s.data))
}

type symKind uint8

const (
	symUndef symKind = iota
	symLabel
	symEqu
)

type symbol struct {
	name     string
	kind     symKind
	sec      *section // labels
	val      int64    // labels: offset in sec
	equVal   *value   // .set with a known value
	equExpr  expr     // .set whose value needs later symbols
	busy     bool     // cycle guard while evaluating equExpr
	bind     elf.Bind
	bindSet  bool
	typ      elf.SymType
	size     expr
	sizePos  srcPos
	numeric  bool // an anonymous numeric local label (1:)
	used     bool // referenced by a relocation or a final evaluation
	firstRef srcPos
	// relocated: an assembly-time constant that a relocation names (run's
	// vertex operand), so the object carries it as a local absolute symbol.
	relocated bool
}

// value is an evaluated expression: a constant, a section offset (sec) or
// an offset from an undefined symbol (ext). base is the label the value was
// derived from, so relocations can name it rather than the section.
type value struct {
	sec  *section
	ext  *symbol
	base *symbol
	off  int64
}

func (v value) isConst() bool { return v.sec == nil && v.ext == nil }

func constVal(n int64) value { return value{off: n} }

type macro struct {
	name   string
	params []mparam
	body   []stmt
	pos    srcPos
}

type mparam struct {
	name   string
	def    []token
	req    bool
	vararg bool
}

type ifFrame struct {
	active, taken, parentOn, elseSeen bool
	pos                               srcPos
}

type assembler struct {
	errs       *errSink
	secs       []*section
	secByN     map[string]*section
	cur        *section
	secStack   []*section
	prevSec    *section
	syms       map[string]*symbol
	order      []*symbol
	numBack    map[int64]*symbol
	numFwd     map[int64]*symbol
	macros     map[string]*macro
	ctx        isa.Context // 0 until .supervisor or .worker
	fixups     []fixup
	bundle     *bundleState
	counter    int // \@
	expanded   int
	stmts      int
	substBytes int
	substToks  int
	total      int64
	abort      bool
	note       string // "in macro X called at ..." for errors inside expansions
	noteDepth  int
	dotExtra   int64
	nopRow     *isa.Inst
	cppDefs    map[string]cdef // every #define, for messages about $NAME
}

func newAssembler(errs *errSink) *assembler {
	a := &assembler{errs: errs, secByN: map[string]*section{}, syms: map[string]*symbol{},
		numBack: map[int64]*symbol{}, numFwd: map[int64]*symbol{}, macros: map[string]*macro{}}
	for _, r := range isa.ByMnemonic("nop") {
		if len(r.Operands) == 0 && r.Words == 1 {
			a.nopRow = r
			break
		}
	}
	return a
}

// errorf reports an error at p, naming the macro call chain when inside an
// expansion.
func (a *assembler) errorf(p srcPos, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if a.note != "" {
		msg += " (" + a.note + ")"
	}
	a.errs.add(p, "%s", msg)
	if a.errs.full() {
		a.abort = true
	}
}

// exprErr reports an error from the expression parser or evaluator.
func (a *assembler) exprErr(err error, def srcPos) {
	var d *deferError
	if errors.As(err, &d) {
		a.errorf(def, "%s is not defined at this point (the value must be known here)", d.name)
		return
	}
	a.errorf(errPos(err, def), "%s", errMsg(err))
}

// section returns the current section, creating .text when code or data
// comes before any section directive.
func (a *assembler) section() *section {
	if a.cur == nil {
		a.cur = a.getSection(".text", defaultFlags(".text"), false)
	}
	return a.cur
}

func defaultFlags(name string) elf.SectionFlags {
	switch {
	case name == ".text" || strings.HasPrefix(name, ".text."):
		return elf.FlagAlloc | elf.FlagExec
	case name == ".data" || strings.HasPrefix(name, ".data.") || name == ".bss" || strings.HasPrefix(name, ".bss."):
		return elf.FlagAlloc | elf.FlagWrite
	}
	return elf.FlagAlloc
}

func (a *assembler) getSection(name string, flags elf.SectionFlags, nobits bool) *section {
	if s, ok := a.secByN[name]; ok {
		return s
	}
	s := &section{name: name, flags: flags, nobits: nobits, align: 1, index: len(a.secs)}
	a.secs = append(a.secs, s)
	a.secByN[name] = s
	return s
}

// lookupAt is lookup remembering where the symbol was first mentioned, for
// errors found only when the object is built.
func (a *assembler) lookupAt(t token) *symbol {
	s := a.lookup(t.text)
	if s.firstRef.file == "" {
		s.firstRef = t.pos
	}
	return s
}

func (a *assembler) lookup(name string) *symbol {
	s := a.syms[name]
	if s == nil {
		s = &symbol{name: name}
		a.syms[name] = s
		a.order = append(a.order, s)
	}
	return s
}

// run processes statements: conditionals, macro and repeat definitions, and
// everything else through statement. It reports whether .exitm was seen.
func (a *assembler) run(stmts []stmt, depth int) (exit bool) {
	var conds []ifFrame
	on := func() bool { return len(conds) == 0 || conds[len(conds)-1].active }
	for i := 0; i < len(stmts) && !a.abort; i++ {
		s := stmts[i]
		a.stmts++
		if a.stmts > maxStatements {
			a.errorf(s.pos, "more than %d statements after expansion; giving up", maxStatements)
			a.abort = true
			return false
		}
		d := strings.ToLower(s.toks[0].text)
		if s.toks[0].kind != tIdent {
			d = ""
		}
		switch d {
		case ".if", ".ifdef", ".ifndef", ".ifnotdef", ".ifeq", ".ifne", ".iflt", ".ifle", ".ifgt", ".ifge",
			".ifb", ".ifnb", ".ifc", ".ifnc":
			f := ifFrame{parentOn: on(), pos: s.pos}
			if f.parentOn {
				f.active = a.condition(d, s)
				f.taken = f.active
			}
			conds = append(conds, f)
			continue
		case ".else", ".elseif", ".endif":
			if len(conds) == 0 {
				a.errorf(s.pos, "%s without .if", d)
				continue
			}
			f := &conds[len(conds)-1]
			switch d {
			case ".endif":
				conds = conds[:len(conds)-1]
			case ".else":
				if f.elseSeen {
					a.errorf(s.pos, ".else after .else")
				}
				f.elseSeen = true
				f.active = f.parentOn && !f.taken
				f.taken = true
			case ".elseif":
				if f.elseSeen {
					a.errorf(s.pos, ".elseif after .else")
				}
				f.active = false
				if f.parentOn && !f.taken {
					f.active = a.condition(".if", s)
					f.taken = f.active
				}
			}
			continue
		}
		if !on() {
			continue
		}
		switch d {
		case ".macro":
			body, next, ok := collect(stmts, i, []string{".macro"}, ".endm", ".endmacro")
			if !ok {
				a.errorf(s.pos, ".macro without .endm")
				return false
			}
			a.defineMacro(s, body)
			i = next
			continue
		case ".rept", ".irp", ".irpc":
			body, next, ok := collect(stmts, i, []string{".rept", ".irp", ".irpc"}, ".endr", "")
			if !ok {
				a.errorf(s.pos, "%s without .endr", d)
				return false
			}
			i = next
			if a.repeat(d, s, body, depth) {
				return true
			}
			continue
		case ".endm", ".endmacro", ".endr":
			a.errorf(s.pos, "%s without a matching start", d)
			continue
		case ".exitm":
			if depth == 0 {
				a.errorf(s.pos, ".exitm outside a macro")
				continue
			}
			return true
		}
		if a.statement(s, depth) {
			return true
		}
	}
	for _, f := range conds {
		a.errorf(f.pos, ".if without .endif")
	}
	return false
}

// collect gathers the body of a block starting at stmts[i] up to its
// matching end directive, counting nested blocks of the same family.
func collect(stmts []stmt, i int, starts []string, end, end2 string) (body []stmt, last int, ok bool) {
	depth := 0
	for j := i + 1; j < len(stmts); j++ {
		d := strings.ToLower(stmts[j].toks[0].text)
		for _, s := range starts {
			if d == s {
				depth++
			}
		}
		if d == end || end2 != "" && d == end2 {
			if depth == 0 {
				return stmts[i+1 : j], j, true
			}
			depth--
		}
	}
	return nil, 0, false
}

// condition evaluates the argument of an .if-family directive.
func (a *assembler) condition(d string, s stmt) bool {
	args := s.toks[1:]
	switch d {
	case ".ifdef", ".ifndef", ".ifnotdef":
		if len(args) != 1 || args[0].kind != tIdent {
			a.errorf(s.pos, "%s: expected one symbol name", d)
			return false
		}
		sym := a.syms[args[0].text]
		def := sym != nil && sym.kind != symUndef
		return def == (d == ".ifdef")
	case ".ifb", ".ifnb":
		return (len(args) == 0) == (d == ".ifb")
	case ".ifc", ".ifnc":
		// The first string ends at the first comma, the second at the end
		// of the statement, commas included (LLVM MC's parseDirectiveIfc;
		// gas's s_ifc alike): `.ifnc, \NANOO, true` compares "" with
		// "true, true".
		comma := -1
		for i, t := range args {
			if t.punct(",") {
				comma = i
				break
			}
		}
		if comma < 0 {
			a.errorf(s.pos, "%s: expected two comma-separated strings", d)
			return false
		}
		parts := [][]token{args[:comma], args[comma+1:]}
		str := func(ts []token) string {
			if len(ts) == 1 && ts[0].kind == tStr {
				if b, err := unquote(ts[0].text); err == nil {
					return string(b)
				}
			}
			return joinTokens(ts)
		}
		return (str(parts[0]) == str(parts[1])) == (d == ".ifc")
	}
	v, ok := a.constExpr(args, s.toks[0], "condition")
	if !ok {
		return false
	}
	switch d {
	case ".ifeq":
		return v == 0
	case ".iflt":
		return v < 0
	case ".ifle":
		return v <= 0
	case ".ifgt":
		return v > 0
	case ".ifge":
		return v >= 0
	}
	return v != 0
}

// constExpr evaluates an expression that must be a constant known now.
func (a *assembler) constExpr(ts []token, at token, what string) (int64, bool) {
	e, err := parseExpr(ts, a, false, endPos(at, ts))
	if err != nil {
		a.exprErr(err, at.pos)
		return 0, false
	}
	v, err := a.eval(e, false)
	if err != nil {
		p := at.pos
		if len(ts) > 0 {
			p = ts[0].pos
		}
		a.exprErr(err, p)
		return 0, false
	}
	if !v.isConst() {
		a.errorf(ts[0].pos, "%s %s must be a constant, found an address", at.text, what)
		return 0, false
	}
	return v.off, true
}

// endPos is where "end of line" errors point: just after the last token.
func endPos(at token, ts []token) srcPos {
	last := at
	if len(ts) > 0 {
		last = ts[len(ts)-1]
	}
	p := last.pos
	p.col += len(last.text)
	return p
}

func splitCommas(ts []token) [][]token {
	if len(ts) == 0 {
		return nil
	}
	var out [][]token
	depth, start := 0, 0
	for i, t := range ts {
		switch {
		case t.punct("(") || t.punct("["):
			depth++
		case t.punct(")") || t.punct("]"):
			depth--
		case t.punct(",") && depth <= 0:
			out = append(out, ts[start:i])
			start = i + 1
		}
	}
	return append(out, ts[start:])
}

// statement handles labels, assignments, bundle braces, directives, macro
// calls and instructions.
func (a *assembler) statement(s stmt, depth int) (exit bool) {
	ts := s.toks
	for len(ts) >= 2 && ts[1].punct(":") && (ts[0].kind == tIdent && !strings.HasPrefix(ts[0].text, "$") || ts[0].kind == tNum && allDigits(ts[0].text)) {
		a.defineLabel(ts[0])
		ts = ts[2:]
	}
	if len(ts) == 0 {
		return false
	}
	if len(ts) >= 2 && ts[0].kind == tIdent && ts[1].punct("=") {
		a.set(ts[0], ts[2:], ts[1])
		return false
	}
	if ts[0].punct("{") {
		if a.bundle != nil {
			a.errorf(ts[0].pos, "{ inside a bundle (bundles do not nest)")
		} else {
			a.bundle = &bundleState{pos: ts[0].pos}
		}
		ts = ts[1:]
		for len(ts) >= 2 && ts[1].punct(":") && (ts[0].kind == tIdent && !strings.HasPrefix(ts[0].text, "$") || ts[0].kind == tNum && allDigits(ts[0].text)) {
			a.defineLabel(ts[0]) // reports the label inside the bundle
			ts = ts[2:]
		}
	}
	closing := false
	if len(ts) > 0 && ts[len(ts)-1].punct("}") {
		closing = true
		ts = ts[:len(ts)-1]
	}
	if len(ts) > 0 {
		exit = a.dispatch(ts, depth)
	}
	if closing {
		if a.bundle == nil {
			a.errorf(s.toks[len(s.toks)-1].pos, "} without {")
		} else {
			a.closeBundle()
		}
	}
	return exit
}

func (a *assembler) dispatch(ts []token, depth int) (exit bool) {
	t := ts[0]
	if t.kind == tErr {
		a.errorf(t.pos, "%s", t.text)
		return false
	}
	if t.kind != tIdent || strings.HasPrefix(t.text, "$") || strings.Contains(t.text, `\`) {
		a.errorf(t.pos, "expected a label, directive or instruction, found %q", t.text)
		return false
	}
	for _, x := range ts[1:] {
		if x.kind == tErr {
			a.errorf(x.pos, "%s", x.text)
			return false
		}
	}
	if m := a.macros[t.text]; m != nil {
		return a.expandMacro(m, t, ts[1:], depth)
	}
	if strings.HasPrefix(t.text, ".") {
		if a.bundle != nil {
			a.errorf(t.pos, "directive %s inside a bundle", t.text)
			return false
		}
		a.directive(t, ts[1:])
		return false
	}
	a.instruction(t, ts[1:])
	return false
}

func (a *assembler) defineLabel(t token) {
	if a.bundle != nil {
		a.errorf(t.pos, "label %s inside a bundle", t.text)
		return
	}
	sec := a.section()
	if t.kind == tNum {
		n, _ := strconv.ParseInt(t.text, 10, 64)
		sym := a.numFwd[n]
		delete(a.numFwd, n)
		if sym == nil {
			sym = &symbol{name: fmt.Sprintf("%db", n), numeric: true}
		}
		sym.kind, sym.sec, sym.val = symLabel, sec, sec.offset()
		a.numBack[n] = sym
		return
	}
	sym := a.lookup(t.text)
	if sym.kind != symUndef {
		a.errorf(t.pos, "symbol %s is already defined", t.text)
		return
	}
	sym.kind, sym.sec, sym.val = symLabel, sec, sec.offset()
}

// numLabel binds a numeric local label reference (labelCtx).
func (a *assembler) numLabel(n int64, forward bool, p srcPos) (*symbol, error) {
	if forward {
		sym := a.numFwd[n]
		if sym == nil {
			sym = &symbol{name: fmt.Sprintf("%df", n), numeric: true, firstRef: p}
			a.numFwd[n] = sym
		}
		return sym, nil
	}
	sym := a.numBack[n]
	if sym == nil {
		return nil, fmt.Errorf("local label %db: no label %d: before this point", n, n)
	}
	return sym, nil
}

// dot is the value of `.` (labelCtx).
func (a *assembler) dot() expr {
	sec := a.section()
	return eVal{value{sec: sec, off: sec.offset() + a.dotExtra}}
}

// set implements .set/.equ and NAME = expr.
func (a *assembler) set(name token, ts []token, at token) {
	if name.kind != tIdent || name.text == "$" || name.text == "." {
		a.errorf(name.pos, "expected a symbol name, found %q", name.text)
		return
	}
	if strings.HasPrefix(name.text, "$") {
		if why := dollarNameClash(name.text); why != "" {
			a.errorf(name.pos, "%s is %s, not a symbol name", name.text, why)
			return
		}
	}
	e, err := parseExpr(ts, a, false, endPos(at, ts))
	if err != nil {
		a.exprErr(err, at.pos)
		return
	}
	sym := a.lookupAt(name)
	if sym.kind == symLabel {
		a.errorf(name.pos, "symbol %s is already defined as a label", name.text)
		return
	}
	v, err := a.eval(e, false)
	var d *deferError
	switch {
	case err == nil:
		sym.kind, sym.equVal, sym.equExpr = symEqu, &v, nil
	case errors.As(err, &d):
		sym.kind, sym.equVal, sym.equExpr = symEqu, nil, a.freeze(e)
	default:
		a.exprErr(err, ts[0].pos)
	}
}
