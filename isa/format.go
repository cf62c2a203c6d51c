package isa

import (
	"fmt"
	"strconv"
	"strings"
)

// Register aliases accepted by the assembler. The disassembler prints only
// the canonical $mN / $aN names, plus $mzero and $azero for register 15.
var mAliases = map[string]int{
	"mzero": 15, "lr": 10, "fp": 11, "sp": 12, "mworker_base": 13, "mvertex_base": 14,
}

var aAliases = map[string]int{"azero": 15}

// ParseRegister parses a register name without the leading '$', such as
// "m3", "a4:5", "a0:3", "mzero", "azero". It returns the register file
// ("m" or "a"), the first register and the count of registers named.
func ParseRegister(name string) (file string, first, count int, ok bool) {
	name = strings.ToLower(name)
	lo, hi, ranged := strings.Cut(name, ":")
	switch lo {
	case "azeros": // the zero pair: pair field 14 (LLVM Colossus AZEROS)
		if !ranged {
			return "a", 14, 2, true
		}
	case "aqzero": // the zero quad: quad field 12 (LLVM Colossus AQZERO)
		if !ranged {
			return "a", 12, 4, true
		}
	}
	if p, isPair := pairAlias(lo); isPair && !ranged {
		return "a", p, 2, true
	}
	file, first, ok = parseOneReg(lo)
	if !ok {
		return "", 0, 0, false
	}
	if !ranged {
		return file, first, 1, true
	}
	// The upper bound may be written "1" (as in $a0:1) or "a1".
	last, err := strconv.Atoi(strings.TrimPrefix(hi, file))
	if err != nil || last < first || last > 15 {
		return "", 0, 0, false
	}
	return file, first, last - first + 1, true
}

// pairAlias reads LLVM Colossus's register-pair names $ap0..$ap15 (the
// public MC test reg-pairs.s): $apN is $a2N:2N+1 for N < 7, and $ap7 to
// $ap15 all encode pair 7, $a14:15 ($azeros), as that test shows (0xe0).
func pairAlias(s string) (int, bool) {
	if len(s) < 3 || s[:2] != "ap" || (len(s) > 3 && s[2] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(s[2:])
	if err != nil || n < 0 || n > 15 {
		return 0, false
	}
	return 2 * min(n, 7), true
}

func parseOneReg(s string) (string, int, bool) {
	if v, ok := mAliases[s]; ok {
		return "m", v, true
	}
	if v, ok := aAliases[s]; ok {
		return "a", v, true
	}
	if len(s) < 2 || (s[0] != 'm' && s[0] != 'a') {
		return "", 0, false
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 0 || n > 15 || (len(s) > 2 && s[1] == '0') {
		return "", 0, false
	}
	return s[:1], n, true
}

// RegisterName renders a register operand of the given kind.
func RegisterName(k Kind, n int64) string {
	file := k.RegFile()
	var s string
	switch k.RegCount() {
	case 1:
		if n == 15 {
			s = "$" + file + "zero"
		} else {
			s = fmt.Sprintf("$%s%d", file, n)
		}
	default:
		switch {
		case k == KindAPair && n == 14:
			s = "$azeros"
		case k == KindAQuad && n == 12:
			s = "$aqzero"
		default:
			s = fmt.Sprintf("$%s%d:%d", file, n, n+int64(k.RegCount())-1)
		}
	}
	if suf := k.RegSuffix(); suf != "" {
		s += suf
	}
	if suf := k.BcastSuffix(); suf != "" {
		s = fmt.Sprintf("$a%d%s", n, suf) // $a15:B, not $azero:B
	}
	return s
}

// FormatOperand renders one decoded operand value, context unknown.
func (o *Operand) FormatOperand(v int64) string { return o.FormatOperandIn(0, v) }

// FormatOperandIn renders one decoded operand value for code running in ctx
// (0 when unknown: lower-space CSRs are then named only when both spaces
// agree, else printed as numbers).
func (o *Operand) FormatOperandIn(ctx Context, v int64) string {
	switch {
	case o.Kind.IsRegister():
		return RegisterName(o.Kind, v)
	case o.Kind == KindCSR:
		if name, ok := CSRNameIn(o.CSR, ctx, v); ok {
			return "$" + name
		}
		if o.Hex {
			return fmt.Sprintf("0x%x", v)
		}
		return strconv.FormatInt(v, 10)
	case o.RawText:
		return o.formatImm(o.ValueText(v))
	case o.Hex && v >= 0:
		return fmt.Sprintf("0x%x", v)
	default:
		return strconv.FormatInt(v, 10)
	}
}

func (o *Operand) formatImm(v int64) string {
	if o.Hex && v >= 0 {
		return fmt.Sprintf("0x%x", v)
	}
	return strconv.FormatInt(v, 10)
}

// Format renders a decoded instruction as assembly text. When the text would
// select a different row (e.g. a signed-immediate variant holding a
// non-negative value), the mnemonic carries the row's variant suffix so that
// assembling the text gives back the same words.
func Format(d Decoded) string {
	in := d.Inst
	ctx := d.Ctx
	if ctx == 0 && (in.Ctx == Supervisor || in.Ctx == Worker) {
		ctx = in.Ctx
	}
	ops := make([]string, len(in.Operands))
	for i := range in.Operands {
		ops[i] = in.Operands[i].FormatOperandIn(ctx, d.Values[i])
	}
	name := in.Mnemonic
	if first := preferredRow(in.Mnemonic, in.Operands, d.Values); first != in {
		name = in.ID()
	}
	if len(ops) == 0 {
		return name
	}
	return name + " " + strings.Join(ops, ", ")
}

// preferredRow is the row the assembler would pick for these operand values
// written without a variant suffix: the first row of the mnemonic whose
// operand kinds agree and whose fields accept the values.
func preferredRow(mnemonic string, ops []Operand, vals []int64) *Inst {
	for _, cand := range byMnemonic[mnemonic] {
		if Accepts(cand, ops, vals) {
			return cand
		}
	}
	return nil
}

// Accepts reports whether row cand accepts values of the given operand kinds.
// The assembler uses the same rule to choose among rows of a mnemonic.
func Accepts(cand *Inst, kinds []Operand, vals []int64) bool {
	if len(cand.Operands) != len(kinds) {
		return false
	}
	for i := range cand.Operands {
		if !SameSyntax(cand.Operands[i].Kind, kinds[i].Kind) {
			return false
		}
		if cand.Operands[i].check(vals[i]) != nil {
			return false
		}
	}
	return true
}

// SameSyntax reports whether operands of kinds a and b are written alike
// (immediates and CSR numbers are both plain numbers).
func SameSyntax(a, b Kind) bool {
	if a == b {
		return true
	}
	// A CSR may be written by number, and an unnamed CSR disassembles as one.
	return (a == KindImm && b == KindCSR) || (a == KindCSR && b == KindImm)
}

// Check validates a value for the operand (range and alignment).
func (o *Operand) Check(v int64) error { return o.check(v) }

// CSRNumber resolves a CSR name (without '$') for this operand's space, for
// code assembled in ctx (Supervisor, Worker, or 0 when unknown).
func (o *Operand) CSRNumber(ctx Context, name string) (int64, bool) {
	return CSRByNameIn(o.CSR, ctx, name)
}
