package asm

import (
	"math"
	"strconv"
	"strings"

	"github.com/ipustack/ipustack/isa"
)

// The instruction aliases of the LLVM Colossus assembler (its AsmParser and
// its MC tests: assemble-inst-alias.s, sub_immediate.s, memory-aliases.s,
// mem-operands.s). Each is a rewrite of the written instruction into
// instructions of the table, decided by the mnemonic and the kinds of the
// written operands; the rewritten text then goes through the ordinary row
// choice, so an alias whose target mnemonic the table lacks says so
// ("unknown mnemonic ...") instead of guessing.

// opClass is the syntactic class of a written operand, enough to pick an
// alias's expansion.
type opClass uint8

const (
	clImm   opClass = iota // anything that is not a register
	clM                    // $mN (one register)
	clA                    // $aN
	clAPair                // $aN:N+1, $azeros
	clOther                // register groups and forms no alias rewrites
)

func classify(part []token) opClass {
	if len(part) == 0 || part[0].kind != tIdent || !strings.HasPrefix(part[0].text, "$") {
		return clImm
	}
	name := part[0].text[1:]
	if len(part) == 3 && part[1].punct(":") {
		name += ":" + part[2].text
	} else if len(part) != 1 {
		return clOther
	}
	file, _, count, ok := isa.ParseRegister(name)
	switch {
	case !ok:
		return clImm // a CSR name or a symbol with a '$'
	case file == "m" && count == 1:
		return clM
	case file == "a" && count == 1:
		return clA
	case file == "a" && count == 2:
		return clAPair
	}
	return clOther
}

// suffixAliases: `addz $d, $a, imm` is add with a zero-extended immediate,
// `adds` with a sign-extended one (the rows' zi / si variants).
var suffixAliases = map[string]string{
	"addz": "add.zi", "adds": "add.si", "cmpeqz": "cmpeq.zi", "cmpeqs": "cmpeq.si",
	"maxz": "max.zi", "maxs": "max.si", "minz": "min.zi", "mins": "min.si",
	"subz": "sub.zi", "subs": "sub.si",
}

func tok(kind tkind, text string, p srcPos) token {
	return token{kind: kind, text: text, pos: p, space: true}
}

// joinOps builds an operand list from parts, separated by commas.
func joinOps(p srcPos, parts ...[]token) []token {
	var out []token
	for i, part := range parts {
		if i > 0 {
			out = append(out, tok(tPunct, ",", p))
		}
		out = append(out, part...)
	}
	return out
}

func reg(name string, p srcPos) []token { return []token{tok(tIdent, name, p)} }

func num(v int64, p srcPos) []token { return []token{tok(tNum, strconv.FormatInt(v, 10), p)} }

// alias expands mn when it is an alias form; it reports whether it did
// (then the expansion has been assembled, or an error reported).
func (a *assembler) alias(mn token, args []token) bool {
	name := strings.ToLower(mn.text)
	parts := splitCommas(args)
	cls := make([]opClass, len(parts))
	empty := false
	for i, part := range parts {
		if len(part) == 0 {
			empty = true
			continue
		}
		cls[i] = classify(part)
	}
	p := mn.pos
	emit := func(m string, ops []token) {
		a.instruction(token{kind: tIdent, text: m, pos: p}, ops)
	}
	if base, ok := suffixAliases[name]; ok {
		emit(base, args)
		return true
	}
	if empty {
		return false // the row match reports the empty operand
	}
	switch {
	case name == "zero" && len(parts) == 1:
		switch cls[0] {
		case clM:
			emit("or", joinOps(p, parts[0], reg("$mzero", p), reg("$mzero", p)))
		case clA:
			emit("or", joinOps(p, parts[0], reg("$azero", p), reg("$azero", p)))
		case clAPair:
			emit("or64", joinOps(p, parts[0], reg("$azeros", p), reg("$azeros", p)))
		default:
			a.errorf(parts[0][0].pos, "zero: expected an $m or $a register or an $a register pair, found %s", joinTokens(parts[0]))
		}
		return true
	case name == "mov" && len(parts) == 2:
		switch {
		case cls[0] == clM && cls[1] == clM, cls[0] == clA && cls[1] == clA:
			emit("or", joinOps(p, parts[0], parts[1], num(0, p)))
		case cls[0] == clM && cls[1] == clA:
			emit("atom", args)
		case cls[0] == clAPair && cls[1] == clAPair:
			// A pair move is the 64-bit or with the zero pair.
			emit("or64", joinOps(p, parts[0], parts[1], reg("$azeros", p)))
		default:
			a.errorf(p, "mov: expected $mD, $mS or $aD, $aS or $mD, $aS or $aD:D+1, $aS:S+1, found %s", joinTokens(args))
		}
		return true
	case name == "sub" && len(parts) == 3 && cls[0] == clM && cls[1] == clM && cls[2] == clImm:
		// sub $d, $a, imm is add $d, $a, -imm (sub_immediate.s).
		neg := append([]token{tok(tPunct, "-", parts[2][0].pos), tok(tPunct, "(", parts[2][0].pos)}, parts[2]...)
		neg = append(neg, tok(tPunct, ")", parts[2][0].pos))
		emit("add.si", joinOps(p, parts[0], parts[1], neg))
		return true
	case name == "swap16" && len(parts) == 2:
		// swap16 $d, $s exchanges the halves of $s: roll16 $d, $s, $s
		// (roll16 gives a.hi | b.lo<<16; with a = b that is the swap).
		emit("roll16", joinOps(p, parts[0], parts[1], parts[1]))
		return true
	case name == "put" && len(parts) == 2 && cls[1] == clA:
		emit("uput", args) // put with an $a source is uput (assemble-inst-alias.s)
		return true
	case name == "get" && len(parts) == 2 && cls[0] == clA:
		emit("uget", args)
		return true
	case name == "ldconst":
		a.ldconst(mn, parts, cls)
		return true
	}
	if len(parts) == 3 && len(isa.ByMnemonic(name)) > 0 && impliedDelta(name) {
		// The short memory form: ld32 $d, $base, off means
		// ld32 $d, $base, $m15, off (memory-aliases.s).
		emit(mn.text, joinOps(p, parts[0], parts[1], reg("$mzero", p), parts[2]))
		return true
	}
	return false
}

// impliedDelta: the mnemonic has no three-operand row, but has rows of the
// form data, base, delta, offset.
func impliedDelta(mn string) bool {
	found := false
	for _, r := range isa.ByMnemonic(mn) {
		if len(r.Operands) == 3 {
			return false
		}
		if len(r.Operands) == 4 && r.Operands[1].Name == "base" && r.Operands[2].Name == "delta" {
			found = true
		}
	}
	return found
}

// ldconst $r, value: setzi $r, value[19:0], then, when the upper bits are
// not zero, or $r, $r, value[31:20] << 20 (the LLVM Colossus ldconst
// macro). The value must be a constant of 32 bits.
func (a *assembler) ldconst(mn token, parts [][]token, cls []opClass) {
	if len(parts) != 2 || cls[0] != clM && cls[0] != clA {
		a.errorf(mn.pos, "ldconst: expected $mD or $aD, then a constant")
		return
	}
	if a.bundle != nil {
		a.errorf(mn.pos, "ldconst is a macro instruction (one or two instructions): not allowed in a bundle")
		a.bundle.failed = true
		return
	}
	v, ok := a.operandConst(parts[1], mn)
	if !ok {
		return
	}
	if v < math.MinInt32 || v > math.MaxUint32 {
		a.errorf(parts[1][0].pos, "ldconst: %d does not fit in 32 bits", v)
		return
	}
	u := uint32(v)
	p := mn.pos
	a.instruction(token{kind: tIdent, text: "setzi", pos: p}, joinOps(p, parts[0], num(int64(u&0xFFFFF), p)))
	if hi := u &^ 0xFFFFF; hi != 0 {
		a.instruction(token{kind: tIdent, text: "or", pos: p}, joinOps(p, parts[0], parts[0], num(int64(hi), p)))
	}
}

// operandConst evaluates an operand that must be a constant now (half
// literals included).
func (a *assembler) operandConst(part []token, mn token) (int64, bool) {
	if v, ok, bad := halfLiteral(part); bad != "" {
		a.errorf(part[0].pos, "%s", bad)
		return 0, false
	} else if ok {
		return v, true
	}
	n, ok := a.constExpr(part, mn, "value")
	return n, ok
}

// halfLiteral reads an IEEE half literal as the LLVM Colossus assembler
// takes it: a decimal real with an h suffix (1.0h, -2.0h, 6.10352e-5h),
// infh or -infh; the value is its 16-bit pattern. A real without the
// suffix is an error there ("missing h suffix from float16 operand"), and
// here too. ok is false when the operand is no real literal at all.
func halfLiteral(part []token) (v int64, ok bool, bad string) {
	neg := false
	if len(part) == 2 && part[0].punct("-") {
		neg, part = true, part[1:]
	}
	if len(part) != 1 {
		return 0, false, ""
	}
	t := part[0]
	var f float64
	switch {
	case t.kind == tIdent && t.text == "infh":
		f = math.Inf(1)
	case t.kind == tNum && !strings.HasPrefix(t.text, "0x") && !strings.HasPrefix(t.text, "0X") && strings.ContainsAny(t.text, ".eE"):
		text := t.text
		if !strings.HasSuffix(text, "h") {
			if _, err := strconv.ParseFloat(strings.TrimSuffix(text, "f"), 64); err == nil {
				return 0, false, "missing h suffix from float16 operand " + t.text
			}
			return 0, false, ""
		}
		x, err := strconv.ParseFloat(strings.TrimSuffix(text, "h"), 64)
		if err != nil {
			return 0, false, ""
		}
		f = x
	default:
		return 0, false, ""
	}
	if neg {
		f = -f
	}
	return int64(toHalf(f)), true, ""
}

// toHalf rounds f to the nearest IEEE binary16 value (ties to even) and
// returns its bit pattern; out-of-range values become infinities.
func toHalf(f float64) uint16 {
	b := math.Float64bits(f)
	sign := uint16(b>>48) & 0x8000
	if math.IsNaN(f) {
		return sign | 0x7E00
	}
	a := math.Abs(f)
	if a == 0 {
		return sign
	}
	if math.IsInf(f, 0) {
		return sign | 0x7C00
	}
	// Scale to an integer count of the result's unit in the last place.
	exp := math.Ilogb(a) // a = m * 2^exp, 1 <= m < 2
	if exp < -14 {
		exp = -14 // subnormal: ulp is 2^-24
	}
	ulp := math.Ldexp(1, exp-10)
	q := a / ulp // exact: a power-of-two scaling
	r := math.RoundToEven(q)
	m := uint64(r)
	if m >= 2048 { // rounding carried into the next binade
		exp++
		m >>= 1
	}
	if exp > 15 {
		return sign | 0x7C00
	}
	if m < 1024 { // subnormal
		return sign | uint16(m)
	}
	return sign | uint16(exp+15)<<10 | uint16(m-1024)
}
