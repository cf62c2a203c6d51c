package asm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
)

// operand is one written instruction operand.
type operand struct {
	pos   srcPos
	text  string
	reg   bool     // a register or register group
	kind  isa.Kind // for registers
	num   int64    // first register number
	csr   string   // the name of a control register written as $NAME
	sym   string   // the symbol an immediate names when it is one symbol alone
	e     expr     // immediates and CSR numbers
	v     value
	known bool
}

// regKind maps a written register (file, count, post-increment) to its kind.
func regKind(file string, count int, inc bool) (isa.Kind, bool) {
	switch {
	case file == "m" && count == 1 && !inc:
		return isa.KindMReg, true
	case file == "m" && count == 1:
		return isa.KindMRegInc, true
	case file == "m" && count == 2 && !inc:
		return isa.KindMPair, true
	case file == "m" && count == 2:
		return isa.KindMPairInc, true
	case file == "a" && !inc && count == 1:
		return isa.KindAReg, true
	case file == "a" && !inc && count == 2:
		return isa.KindAPair, true
	case file == "a" && !inc && count == 4:
		return isa.KindAQuad, true
	case file == "a" && !inc && count == 3:
		return isa.KindATriple, true
	}
	return 0, false
}

// parseBcast reads a broadcast operand name (without '$'): aN:B, aN:BL,
// aN:BU.
func parseBcast(name string) (isa.Kind, int, bool) {
	lo, sel, ok := strings.Cut(name, ":")
	if !ok {
		return 0, 0, false
	}
	var k isa.Kind
	switch strings.ToUpper(sel) {
	case "B":
		k = isa.KindABcast
	case "BL":
		k = isa.KindABcastLo
	case "BU":
		k = isa.KindABcastHi
	default:
		return 0, 0, false
	}
	file, first, count, ok := isa.ParseRegister(lo)
	if !ok || file != "a" || count != 1 {
		return 0, 0, false
	}
	return k, first, true
}

func kindDesc(k isa.Kind) string {
	switch k {
	case isa.KindMReg:
		return "an $m register"
	case isa.KindAReg:
		return "an $a register"
	case isa.KindAPair:
		return "an $a register pair ($aN:N+1)"
	case isa.KindAQuad:
		return "an $a register quad ($aN:N+3)"
	case isa.KindMPair:
		return "an $m register pair ($mN:N+1)"
	case isa.KindMRegInc:
		return "a post-incremented $m register ($mN+=)"
	case isa.KindMPairInc:
		return "a post-incremented $m register pair ($mN:N+1+=)"
	case isa.KindMRegPostInc:
		return "a post-incremented pointer register ($mN++)"
	case isa.KindMRegDelta:
		return "a delta register ($mN@)"
	case isa.KindMRegShr:
		return "a mini-delta register ($mN>>)"
	case isa.KindATriple:
		return "the upper three registers of an $a quad ($aN+1:N+3)"
	case isa.KindCSR:
		return "a control register ($NAME or number)"
	case isa.KindABcast, isa.KindABcastLo, isa.KindABcastHi:
		return "a broadcast $a register ($aN" + k.BcastSuffix() + ")"
	}
	return "an immediate"
}

func (a *assembler) parseOperands(mn token, args []token) ([]*operand, bool) {
	parts := splitCommas(args)
	ops := make([]*operand, 0, len(parts))
	for i, part := range parts {
		if len(part) == 0 {
			p := mn.pos
			if i > 0 && len(parts[i-1]) > 0 {
				p = endPos(mn, parts[i-1])
			}
			a.errorf(p, "%s: operand %d is empty", mn.text, i+1)
			return nil, false
		}
		op := &operand{pos: part[0].pos, text: joinTokens(part)}
		t := part[0]
		if t.kind == tIdent && strings.HasPrefix(t.text, "$") && !a.dollarSymbol(t.text) {
			name := t.text[1:]
			rest := part[1:]
			ranged := false
			if len(rest) >= 2 && rest[0].punct(":") && (rest[1].kind == tNum || rest[1].kind == tIdent) {
				name += ":" + rest[1].text
				rest = rest[2:]
				ranged = true
			}
			inc := false
			var post isa.Kind // $mN++, $mN@, $mN>> (the delta loads)
			switch {
			case len(rest) > 0 && rest[0].punct("+="):
				inc = true
				rest = rest[1:]
			case len(rest) > 1 && rest[0].punct("+") && rest[1].punct("+") && !rest[1].space:
				post, rest = isa.KindMRegPostInc, rest[2:]
			case len(rest) > 0 && rest[0].punct("@"):
				post, rest = isa.KindMRegDelta, rest[1:]
			case len(rest) > 0 && rest[0].punct(">>"):
				post, rest = isa.KindMRegShr, rest[1:]
			}
			if len(rest) > 0 {
				a.errorf(rest[0].pos, "%s: unexpected %q after %s", mn.text, rest[0].text, t.text)
				return nil, false
			}
			if k, n, ok := parseBcast(name); ok && !inc && post == 0 {
				op.reg, op.kind, op.num, op.known = true, k, int64(n), true
				ops = append(ops, op)
				continue
			}
			if file, first, count, ok := isa.ParseRegister(name); ok {
				k, ok := regKind(file, count, inc)
				if post != 0 && (file != "m" || count != 1 || ranged) {
					a.errorf(t.pos, "%s: %s: only a single $m register takes the %s suffix", mn.text, op.text, post.RegSuffix())
					return nil, false
				}
				if post != 0 {
					k, ok = post, true
				}
				if k == isa.KindATriple && first%4 != 1 {
					ok = false // only $aN+1:N+3 of a quad is a group
				}
				if !ok {
					a.errorf(t.pos, "%s: %s is not a register, register pair or quad the machine has", mn.text, op.text)
					return nil, false
				}
				op.reg, op.kind, op.num, op.known = true, k, int64(first), true
			} else if _, ok := isa.CSRByName(name); ok && !ranged && !inc {
				// The number depends on the row's CSR space and the
				// context; rows resolve it when they are tried.
				op.csr, op.known = name, true
			} else {
				a.errorf(t.pos, "%s: unknown register or control register %s%s", mn.text, op.text, a.macroHint(t))
				return nil, false
			}
			ops = append(ops, op)
			continue
		}
		if v, ok, bad := halfLiteral(part); bad != "" {
			a.errorf(part[0].pos, "%s: operand %d: %s", mn.text, i+1, bad)
			return nil, false
		} else if ok {
			op.v, op.known = constVal(v), true
			ops = append(ops, op)
			continue
		}
		e, err := parseExpr(part, a, false, endPos(mn, part))
		if err != nil {
			a.exprErr(err, part[0].pos)
			return nil, false
		}
		if es, ok := e.(eSym); ok {
			op.sym = es.name
		}
		v, err := a.eval(e, false)
		var d *deferError
		switch {
		case err == nil:
			op.v, op.known = v, true
		case errors.As(err, &d):
			op.e = a.freeze(e)
		default:
			a.exprErr(err, part[0].pos)
			return nil, false
		}
		ops = append(ops, op)
	}
	return ops, true
}

// accepts reports whether row r takes the operands; unknown values (pass
// one) are accepted by any immediate field. It returns the index of the first
// operand that does not fit, and why.
func accepts(r *isa.Inst, ops []*operand, ctx isa.Context, loose bool) (bad int, why string) {
	for i, op := range ops {
		o := &r.Operands[i]
		switch {
		case op.reg:
			if o.Kind != op.kind && !(loose && zeroForM(o.Kind, op)) {
				return i, "kind"
			}
			if o.Check(op.num) != nil {
				return i, "value"
			}
		case op.csr != "":
			if o.Kind != isa.KindCSR {
				return i, "kind"
			}
			n, ok := o.CSRNumber(ctx, op.csr)
			if !ok {
				return i, "csr"
			}
			if o.Check(n) != nil {
				return i, "value"
			}
		default:
			if o.Kind != isa.KindImm && o.Kind != isa.KindCSR {
				return i, "kind"
			}
			if !op.known {
				continue
			}
			if op.v.isConst() && op.sym != "" && o.Reloc == isa.RelocRun {
				continue // a relocation even when the symbol is absolute
			}
			if !op.v.isConst() {
				if o.Reloc == isa.RelocNone {
					return i, "reloc"
				}
				continue
			}
			if o.Check(textValue(o, op.v.off)) != nil {
				return i, "value"
			}
		}
	}
	return -1, ""
}

// selectRow picks the first row that accepts the operands (the rule
// isa.Format relies on), or explains why none does.
func selectRow(mn string, rows []*isa.Inst, ops []*operand, ctx isa.Context) (*isa.Inst, *operand, string) {
	bestBad, var0 := -1, []*isa.Inst(nil)
	counts := map[int]bool{}
	for _, r := range rows {
		counts[len(r.Operands)] = true
		if len(r.Operands) != len(ops) {
			continue
		}
		bad, _ := accepts(r, ops, ctx, false)
		if bad < 0 {
			return r, nil, ""
		}
		if bad > bestBad {
			bestBad, var0 = bad, nil
		}
		if bad == bestBad {
			var0 = append(var0, r)
		}
	}
	// Only when no row takes the operands as written: $azero for $mzero
	// (zeroForM), so that a row for $a operands keeps its preference.
	for _, r := range rows {
		if len(r.Operands) == len(ops) {
			if bad, _ := accepts(r, ops, ctx, true); bad < 0 {
				return r, nil, ""
			}
		}
	}
	if var0 == nil {
		var ns []string
		for n := 0; n <= 8; n++ {
			if counts[n] {
				ns = append(ns, fmt.Sprint(n))
			}
		}
		want := strings.Join(ns, " or ")
		if len(ns) > 2 {
			want = strings.Join(ns[:len(ns)-1], ", ") + " or " + ns[len(ns)-1]
		}
		return nil, nil, fmt.Sprintf("%s: expected %s operands, found %d", mn, want, len(ops))
	}
	op := ops[bestBad]
	// Report a value problem in preference to a kind mismatch: a row of the
	// right kind is what the writer most likely meant.
	r := var0[0]
	_, why := accepts(r, ops, ctx, false)
	for _, c := range var0 {
		if _, w := accepts(c, ops, ctx, false); w != "kind" {
			r, why = c, w
			break
		}
	}
	o := &r.Operands[bestBad]
	if why == "value" && !op.reg && op.csr == "" {
		// Immediates: name the union of the ranges the rows accept.
		lo, hi := o.TextRange()
		aligned := true
		for _, c := range var0 {
			if _, w := accepts(c, ops, ctx, false); w == "value" {
				l, h := c.Operands[bestBad].TextRange()
				lo, hi = min(lo, l), max(hi, h)
				if c.Operands[bestBad].Shift != 0 {
					aligned = false
				}
			}
		}
		if aligned && (op.v.off < lo || op.v.off > hi) {
			return nil, op, fmt.Sprintf("value %d out of range [%d, %d] for operand %d of %s", op.v.off, lo, hi, bestBad+1, mn)
		}
	}
	switch why {
	case "kind":
		var descs []string
		seen := map[string]bool{}
		for _, r := range var0 {
			d := kindDesc(r.Operands[bestBad].Kind)
			if !seen[d] {
				seen[d] = true
				descs = append(descs, d)
			}
		}
		return nil, op, fmt.Sprintf("%s: operand %d: expected %s, found %s", mn, bestBad+1, strings.Join(descs, " or "), op.text)
	case "csr":
		space := r.Operands[bestBad].CSR.String()
		if r.Operands[bestBad].CSR == isa.CSRLower && ctx != 0 {
			space = ctx.String()
		}
		return nil, op, fmt.Sprintf("%s: operand %d: %s is not a control register of the %s space", mn, bestBad+1, op.text, space)
	case "reloc":
		return nil, op, fmt.Sprintf("%s: operand %d: %s is an address, known only at link time, and this operand takes no relocation", mn, bestBad+1, op.text)
	}
	v := op.num
	if !op.reg {
		v = textValue(o, op.v.off)
	}
	if op.csr != "" {
		v, _ = o.CSRNumber(ctx, op.csr)
	}
	err := o.Check(v)
	if o.Reloc == isa.RelocRun && !op.reg {
		lo, hi := o.Range()
		return nil, op, fmt.Sprintf("%s: operand %d: %s is neither a vertex offset in words [0, %d] nor a region-0 address [0x%x, 0x%x]",
			mn, bestBad+1, op.text, (hi-lo)>>o.Shift, lo, hi)
	}
	if op.reg {
		return nil, op, fmt.Sprintf("%s: operand %d: %s is not aligned to a group of %d registers", mn, bestBad+1, op.text, int64(1)<<o.Shift)
	}
	return nil, op, fmt.Sprintf("%v for operand %d of %s", err, bestBad+1, mn)
}

// candidates returns the rows an instruction may use in the current context.
func (a *assembler) candidates(mn token, inBundle bool) []*isa.Inst {
	name := strings.ToLower(mn.text)
	var rows []*isa.Inst
	if r := isa.ByID(name); r != nil && strings.Contains(name, ".") {
		rows = []*isa.Inst{r}
	} else {
		rows = isa.ByMnemonic(name)
	}
	if len(rows) == 0 {
		if base, v, ok := strings.Cut(name, "."); ok && len(isa.ByMnemonic(base)) > 0 {
			a.errorf(mn.pos, "%s has no variant %q", base, v)
		} else {
			a.errorf(mn.pos, "unknown mnemonic %q", mn.text)
		}
		return nil
	}
	ctx := a.ctx
	if inBundle {
		ctx = isa.Worker
	}
	if ctx != 0 {
		var in []*isa.Inst
		for _, r := range rows {
			if r.Ctx&ctx != 0 {
				in = append(in, r)
			}
		}
		if len(in) == 0 {
			a.errorf(mn.pos, "%s is a %s instruction: not allowed in %s code", mn.text, rows[0].Ctx, ctx)
			return nil
		}
		rows = in
	}
	if inBundle {
		var co []*isa.Inst
		for _, r := range rows {
			if r.CoIssue {
				co = append(co, r)
			}
		}
		if len(co) == 0 {
			a.errorf(mn.pos, "%s cannot be co-issued: it may not appear in a bundle", mn.text)
			return nil
		}
		rows = co
	}
	return rows
}

// pending is an instruction whose row is chosen but whose words are not
// written yet (bundles, and operands that need later symbols).
type pending struct {
	mn   token
	rows []*isa.Inst
	row  *isa.Inst
	ops  []*operand
	note string
	ctx  isa.Context // context the operands are read in (CSR names)
}

func (p *pending) allKnown() bool {
	for _, op := range p.ops {
		if !op.known {
			return false
		}
	}
	return true
}

type bundleState struct {
	pos    srcPos
	insts  []*pending
	failed bool // an instruction of the bundle had an error
}

type fixup struct {
	sec  *section
	off  int64
	pos  srcPos
	note string
	// data fixups
	size int
	e    expr
	rel  isa.Reloc // a symbol variant's relocation (RelocNone: the plain one)
	// instruction fixups
	inst    *pending
	coissue bool
}

func (a *assembler) instruction(mn token, args []token) {
	if a.alias(mn, args) {
		return
	}
	inBundle := a.bundle != nil
	accepted := false
	if inBundle {
		// After an error in one of its instructions, the bundle's own
		// checks would only repeat it.
		b := a.bundle
		defer func() {
			if !accepted {
				b.failed = true
			}
		}()
	}
	rows := a.candidates(mn, inBundle)
	if !inBundle {
		// A rejected instruction still takes its place, so that one error
		// does not move every later label and bundle (and report each of
		// them as misaligned).
		defer func() {
			if !accepted {
				a.reserve(rows, mn.pos)
			}
		}()
	}
	if rows == nil {
		return
	}
	if inBundle {
		a.dotExtra = 4 * int64(len(a.bundle.insts))
	}
	ops, ok := a.parseOperands(mn, args)
	a.dotExtra = 0
	if !ok {
		return
	}
	ctx := a.ctx
	if inBundle {
		ctx = isa.Worker
	}
	row, bad, msg := selectRow(mn.text, rows, ops, ctx)
	if row == nil {
		p := mn.pos
		if bad != nil {
			p = bad.pos
		}
		a.errorf(p, "%s", msg)
		return
	}
	pi := &pending{mn: mn, rows: rows, row: row, ops: ops, note: a.note, ctx: ctx}
	accepted = true
	if inBundle {
		a.bundle.insts = append(a.bundle.insts, pi)
		return
	}
	a.place(pi, false)
}

// macroHint explains an unknown $NAME that is the name of a C macro the
// preprocessor did not expand here.
func (a *assembler) macroHint(t token) string {
	name := strings.TrimPrefix(t.text, "$")
	d, ok := a.cppDefs[name]
	switch {
	case !ok:
		return ""
	case d.fn:
		return fmt.Sprintf(" (%s is a function-like macro, defined at %s: it expands only when followed by its (arguments))", name, d.pos)
	case d.pos.file == t.pos.file && d.pos.line > t.pos.line:
		return fmt.Sprintf(" (%s is a macro defined later, at %s: #define it before its use)", name, d.pos)
	}
	return fmt.Sprintf(" (%s is a macro, defined at %s, that is not in effect here: #undef?)", name, d.pos)
}

// reserve emits zero words where an instruction was rejected: as many as
// its shortest row has (one for an unknown mnemonic). The object is never
// written, since there was an error; only the offsets matter.
func (a *assembler) reserve(rows []*isa.Inst, p srcPos) {
	words := 1
	for i, r := range rows {
		if i == 0 || r.Words < words {
			words = r.Words
		}
	}
	a.reserveBytes(4*int64(words), p)
}

func (a *assembler) reserveBytes(n int64, p srcPos) {
	sec := a.section()
	if sec.nobits || sec.offset()%4 != 0 {
		return
	}
	a.emit(p, make([]byte, n))
}

// place reserves the instruction's words and encodes it now or at the end.
func (a *assembler) place(pi *pending, coissue bool) {
	sec := a.section()
	off := sec.offset()
	if off%4 != 0 {
		a.errorf(pi.mn.pos, "instruction at %s+0x%x is not 4-byte aligned", sec.name, off)
		return
	}
	if sec.nobits {
		a.errorf(pi.mn.pos, "section %s is @nobits: it cannot hold instructions", sec.name)
		return
	}
	sec.hasCode = true
	if sec.align < 4 {
		sec.align = 4
	}
	if _, ok := a.emit(pi.mn.pos, make([]byte, pi.row.Size())); !ok {
		return
	}
	if !pi.allKnown() {
		a.fixups = append(a.fixups, fixup{sec: sec, off: off, pos: pi.mn.pos, note: pi.note, inst: pi, coissue: coissue})
		return
	}
	a.encode(sec, off, pi.row, pi, coissue)
}

func (a *assembler) encode(sec *section, off int64, r *isa.Inst, pi *pending, coissue bool) {
	vals := make([]int64, len(pi.ops))
	for i, op := range pi.ops {
		switch {
		case op.reg:
			vals[i] = op.num
		case op.csr != "":
			vals[i], _ = r.Operands[i].CSRNumber(pi.ctx, op.csr)
		case op.v.isConst() && op.sym != "" && r.Operands[i].Reloc == isa.RelocRun:
			// run's vertex is relative to the image base, which only the
			// linker knows: like the LLVM Colossus backend, always leave it
			// to R_COLOSSUS_RUN (run-fixup.s), naming the symbol.
			o := &r.Operands[i]
			vals[i] = o.Offset
			if s := a.syms[op.sym]; s != nil {
				s.relocated = true
			}
			sec.relocs = append(sec.relocs, elf.Reloc{Offset: uint32(off + 4*int64(o.Fields[0].Word)), Type: o.Reloc, Symbol: op.sym, Addend: 0})
		case op.v.isConst():
			vals[i] = textValue(&r.Operands[i], op.v.off)
		default:
			// Symbolic: the field stays 0 and the linker patches it.
			o := &r.Operands[i]
			a.reloc(sec, off+4*int64(o.Fields[0].Word), o.Reloc, op.v, op.pos)
		}
	}
	words, err := r.Encode(vals, coissue)
	if err != nil {
		a.errorf(pi.mn.pos, "%v", err)
		return
	}
	for k, w := range words {
		binary.LittleEndian.PutUint32(sec.data[off+4*int64(k):], w)
	}
}

// closeBundle checks the co-issue rules and emits main then aux.
func (a *assembler) closeBundle() {
	b := a.bundle
	a.bundle = nil
	placed := false
	defer func() {
		if !placed {
			a.reserveBytes(8, b.pos) // as reserve does for a rejected instruction
		}
	}()
	if b.failed {
		return
	}
	if a.ctx == isa.Supervisor {
		a.errorf(b.pos, "bundles are only allowed in worker code (the supervisor has no aux pipe)")
		return
	}
	if len(b.insts) != 2 {
		a.errorf(b.pos, "a bundle holds exactly two instructions (one main, one aux), found %d", len(b.insts))
		return
	}
	x, y := b.insts[0], b.insts[1]
	if x.row.Pipe == y.row.Pipe {
		a.errorf(b.pos, "a bundle needs one main-pipe and one aux-pipe instruction: %s and %s both use the %s pipe", x.mn.text, y.mn.text, x.row.Pipe)
		return
	}
	if x.row.Pipe != isa.Main {
		x, y = y, x
	}
	sec := a.section()
	if off := sec.offset(); off%8 == 4 && !sec.nobits {
		// A bundle at 4 mod 8 is preceded by one nop, the padding word of
		// the LLVM Colossus assembler backend (0x19e00000), as popc does
		// ("Nops are automatically inserted to align instruction bundles",
		// graphcore/ipu_assembly_support). Labels defined before the
		// bundle keep their address: the nop's (docs/isa.md, "Bundle
		// alignment").
		var pad [4]byte
		binary.LittleEndian.PutUint32(pad[:], isa.ByID("nop").Match)
		sec.hasCode = true
		a.emit(b.pos, pad[:])
	}
	sec.hasBundle = true
	placed = true
	a.place(x, true)
	a.place(y, false)
}

// finishInput reports blocks left open at the end of the input.
func (a *assembler) finishInput() {
	if a.bundle != nil {
		a.errorf(a.bundle.pos, "bundle { without }")
		a.bundle = nil
	}
}

// finish resolves everything that waited for the end of the input.
func (a *assembler) finish() {
	for _, f := range a.fixups {
		a.note = f.note
		if f.inst == nil {
			v, err := a.eval(f.e, true)
			if err != nil {
				a.exprErr(err, f.pos)
				continue
			}
			a.putData(f.sec, f.off, f.size, v, f.pos, f.rel)
			continue
		}
		pi := f.inst
		ok := true
		for _, op := range pi.ops {
			if op.known {
				continue
			}
			v, err := a.eval(op.e, true)
			if err != nil {
				a.exprErr(err, op.pos)
				ok = false
				break
			}
			op.v, op.known = v, true
		}
		if !ok {
			continue
		}
		// The words are already reserved: only rows of the same size and
		// pipe can take the final values.
		var rows []*isa.Inst
		for _, r := range pi.rows {
			if r.Words == pi.row.Words && r.Pipe == pi.row.Pipe {
				rows = append(rows, r)
			}
		}
		r, bad, msg := selectRow(pi.mn.text, rows, pi.ops, pi.ctx)
		if r == nil {
			p := pi.mn.pos
			if bad != nil {
				p = bad.pos
			}
			a.errorf(p, "%s", msg)
			continue
		}
		a.encode(f.sec, f.off, r, pi, f.coissue)
	}
	a.note = ""
}

// zeroForM: $azero ($a15) written where the row takes an $m register is
// $mzero. Both zero registers are number 15 and read as 0, so the word and
// the result are those of $mzero; poplibs writes `ld32 $OUT_0, $OUT_PTR,
// $azero, 0` (popnn NonLinearityGrad2D_gelu.S), which Graphcore's assembler
// accepts. Any other $a register stays an error.
func zeroForM(k isa.Kind, op *operand) bool {
	return k == isa.KindMReg && op.kind == isa.KindAReg && op.num == 15
}

// textValue is o.TextValue of a written immediate, except that an operand
// standing for the top bits of a 32-bit word (the zero-tailed immz12 of
// `or $m, $m, 0xfff00000`) takes a negative 32-bit value as the same word:
// poplibs writes `or $SCRATCH, $mzero, DELTAN_OFFSET_MASK_COMPL` with the
// mask a complement (~0xffffff = -16777216, i.e. 0xff000000).
//
// And `run`'s vertex operand, which ipustack writes as the region-0 address
// (0x4C000 up), also takes the hover text's and LLVM's zimm16 (the stored
// field: poplibs writes `run $mworker_entry0, $mregion_base, 0`): a
// literal below the region-0 base is that field. The two ranges do not
// overlap, so either reading gives the same word.
func textValue(o *isa.Operand, v int64) int64 {
	if _, hi := o.Range(); !o.Signed && hi >= 1<<31 && hi < 1<<32 && v < 0 && v >= -(1<<31) {
		v += 1 << 32
	}
	if o.Reloc == isa.RelocRun && !o.RawText && v >= 0 && v < o.Offset {
		return v<<o.Shift + o.Offset
	}
	return o.TextValue(v)
}

// dollarSymbol reports whether name ($NAME) is a symbol a .set defined
// (setName) rather than a register or control register.
func (a *assembler) dollarSymbol(name string) bool {
	s := a.syms[name]
	return s != nil && s.kind != symUndef
}
