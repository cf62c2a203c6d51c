package asm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// expr is a parsed expression. Symbols stay symbolic until evaluation so the
// same tree serves the preprocessor (#if), pass one and the final pass.
type expr interface{}

type (
	eNum struct{ v int64 }
	eSym struct {
		name string
		pos  srcPos
	}
	eRef struct{ s *symbol } // a numeric local label, bound when parsed
	eVal struct{ v value }   // a frozen .set value
	eUn  struct {
		op  string
		x   expr
		pos srcPos
	}
	eBin struct {
		op   string
		x, y expr
		pos  srcPos
	}
)

// labelCtx lets the parser bind `.` and numeric label references (1f, 1b) at
// the point where the expression is written.
type labelCtx interface {
	numLabel(n int64, forward bool, p srcPos) (*symbol, error)
	dot() expr
}

type exprParser struct {
	toks []token
	i    int
	ctx  labelCtx // nil in the preprocessor
	cpp  bool
	end  srcPos // position reported at end of input
}

type posError struct {
	pos srcPos
	msg string
}

func (e *posError) Error() string { return e.msg }

func (p *exprParser) errf(t srcPos, format string, args ...any) error {
	return &posError{t, fmt.Sprintf(format, args...)}
}

func (p *exprParser) peek() (token, bool) {
	if p.i < len(p.toks) {
		return p.toks[p.i], true
	}
	return token{}, false
}

func (p *exprParser) here() srcPos {
	if t, ok := p.peek(); ok {
		return t.pos
	}
	return p.end
}

// parseExpr parses the whole of toks as one expression.
func parseExpr(toks []token, ctx labelCtx, cpp bool, end srcPos) (expr, error) {
	p := &exprParser{toks: toks, ctx: ctx, cpp: cpp, end: end}
	if len(toks) == 0 {
		return nil, p.errf(end, "expected an expression, found end of line")
	}
	e, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if t, ok := p.peek(); ok {
		return nil, p.errf(t.pos, "unexpected %q in expression", t.text)
	}
	return e, nil
}

// Binary operator precedence, C style (loosest first).
var precedence = map[string]int{
	"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5,
	"==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
	"<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10,
}

const maxExprDepth = 200

func (p *exprParser) binary(minPrec int) (expr, error) {
	x, err := p.unary(0)
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.peek()
		if !ok || t.kind != tPunct {
			return x, nil
		}
		prec, isOp := precedence[t.text]
		if !isOp || prec <= minPrec {
			return x, nil
		}
		p.i++
		y, err := p.binary(prec)
		if err != nil {
			return nil, err
		}
		x = eBin{op: t.text, x: x, y: y, pos: t.pos}
	}
}

func (p *exprParser) unary(depth int) (expr, error) {
	if depth > maxExprDepth {
		return nil, p.errf(p.here(), "expression nested too deeply")
	}
	t, ok := p.peek()
	if !ok {
		return nil, p.errf(p.end, "expected an operand, found end of line")
	}
	if t.kind == tPunct {
		switch t.text {
		case "-", "+", "~", "!":
			p.i++
			x, err := p.unary(depth + 1)
			if err != nil {
				return nil, err
			}
			if t.text == "+" {
				return x, nil
			}
			return eUn{op: t.text, x: x, pos: t.pos}, nil
		case "(":
			p.i++
			x, err := p.binaryDepth(depth + 1)
			if err != nil {
				return nil, err
			}
			c, ok := p.peek()
			if !ok || !c.punct(")") {
				return nil, p.errf(p.here(), "expected ) to close ( at %d:%d", t.pos.line, t.pos.col)
			}
			p.i++
			return x, nil
		}
	}
	p.i++
	switch t.kind {
	case tNum:
		return p.number(t)
	case tChar:
		v, err := charValue(t.text)
		if err != nil {
			return nil, p.errf(t.pos, "%v", err)
		}
		return eNum{v}, nil
	case tIdent:
		if p.cpp {
			return eNum{0}, nil // undefined identifiers are 0 in #if
		}
		if t.text == "." && p.ctx != nil {
			return p.ctx.dot(), nil
		}
		if strings.HasPrefix(t.text, "$") && (t.text == "$" || dollarNameClash(t.text) != "") {
			// Other $NAMEs are symbols, as in LLVM (setName).
			return nil, p.errf(t.pos, "register %s is not allowed in an expression", t.text)
		}
		return eSym{name: t.text, pos: t.pos}, nil
	case tErr:
		return nil, p.errf(t.pos, "%s", t.text)
	}
	return nil, p.errf(t.pos, "expected an operand, found %q", t.text)
}

// binaryDepth is binary with a nesting guard (parentheses recurse).
func (p *exprParser) binaryDepth(depth int) (expr, error) {
	if depth > maxExprDepth {
		return nil, p.errf(p.here(), "expression nested too deeply")
	}
	return p.binary(0)
}

func (p *exprParser) number(t token) (expr, error) {
	s := t.text
	if !p.cpp && p.ctx != nil && len(s) >= 2 && (s[len(s)-1] == 'f' || s[len(s)-1] == 'b') && allDigits(s[:len(s)-1]) {
		n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
		if err != nil {
			return nil, p.errf(t.pos, "bad local label reference %q", s)
		}
		sym, err := p.ctx.numLabel(n, s[len(s)-1] == 'f', t.pos)
		if err != nil {
			return nil, p.errf(t.pos, "%v", err)
		}
		return eRef{sym}, nil
	}
	if p.cpp {
		s = strings.TrimRight(s, "uUlL")
	}
	v, ok := parseInt(s)
	if !ok {
		return nil, p.errf(t.pos, "bad number %q", t.text)
	}
	return eNum{v}, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// parseInt accepts decimal, 0x hex, 0b binary and 0-prefixed octal (GAS and
// C agree on these). Values up to 2^64-1 wrap into int64.
func parseInt(s string) (int64, bool) {
	base := 10
	digits := s
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		base, digits = 16, s[2:]
	case len(s) > 2 && (s[:2] == "0b" || s[:2] == "0B"):
		base, digits = 2, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, digits = 8, s[1:]
	}
	u, err := strconv.ParseUint(digits, base, 64)
	if err != nil {
		return 0, false
	}
	return int64(u), true
}

func charValue(lit string) (int64, error) {
	b, err := unquote(lit)
	if err != nil {
		return 0, err
	}
	if len(b) != 1 {
		return 0, fmt.Errorf("character constant %s must hold one byte", lit)
	}
	return int64(b[0]), nil
}

// unquote decodes a "..." or '...' literal with C escapes.
func unquote(lit string) ([]byte, error) {
	if len(lit) < 2 {
		return nil, fmt.Errorf("bad string %s", lit)
	}
	s := lit[1 : len(lit)-1]
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(s) {
			return nil, fmt.Errorf("bad escape at end of %s", lit)
		}
		switch e := s[i]; e {
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'v':
			out = append(out, 11)
		case 'x':
			v, n := 0, 0
			for i+1 < len(s) && n < 2 && strings.IndexByte("0123456789abcdefABCDEF", s[i+1]) >= 0 {
				d, _ := strconv.ParseUint(s[i+1:i+2], 16, 8)
				v = v*16 + int(d)
				i++
				n++
			}
			if n == 0 {
				return nil, fmt.Errorf("\\x without hex digits in %s", lit)
			}
			out = append(out, byte(v))
		default:
			if e >= '0' && e <= '7' {
				v, n := 0, 0
				for i < len(s) && n < 3 && s[i] >= '0' && s[i] <= '7' {
					v = v*8 + int(s[i]-'0')
					i++
					n++
				}
				i--
				out = append(out, byte(v))
			} else {
				out = append(out, e) // \\ \" \' and anything else stands for itself
			}
		}
	}
	return out, nil
}

// constOp applies a binary operator to constants.
func constOp(op string, x, y int64) (int64, error) {
	b := func(c bool) int64 {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case "+":
		return x + y, nil
	case "-":
		return x - y, nil
	case "*":
		return x * y, nil
	case "/", "%":
		if y == 0 {
			return 0, fmt.Errorf("division by zero")
		}
		if x == math.MinInt64 && y == -1 {
			if op == "/" {
				return x, nil
			}
			return 0, nil
		}
		if op == "/" {
			return x / y, nil
		}
		return x % y, nil
	case "<<":
		if y < 0 || y > 63 {
			return 0, nil
		}
		return x << uint(y), nil
	case ">>":
		if y < 0 || y > 63 {
			if x < 0 {
				return -1, nil
			}
			return 0, nil
		}
		return x >> uint(y), nil
	case "&":
		return x & y, nil
	case "|":
		return x | y, nil
	case "^":
		return x ^ y, nil
	case "==":
		return b(x == y), nil
	case "!=":
		return b(x != y), nil
	case "<":
		return b(x < y), nil
	case "<=":
		return b(x <= y), nil
	case ">":
		return b(x > y), nil
	case ">=":
		return b(x >= y), nil
	case "&&":
		return b(x != 0 && y != 0), nil
	case "||":
		return b(x != 0 || y != 0), nil
	}
	return 0, fmt.Errorf("unknown operator %s", op)
}

func unOp(op string, x int64) int64 {
	switch op {
	case "-":
		return -x
	case "~":
		return ^x
	case "!":
		if x == 0 {
			return 1
		}
	}
	return 0
}

// evalConst evaluates a preprocessor expression (identifiers are already 0).
func evalConst(e expr) (int64, error) {
	switch e := e.(type) {
	case eNum:
		return e.v, nil
	case eUn:
		x, err := evalConst(e.x)
		return unOp(e.op, x), err
	case eBin:
		x, err := evalConst(e.x)
		if err != nil {
			return 0, err
		}
		// Short-circuit so that `defined(X) && 1/X` works.
		if e.op == "&&" && x == 0 || e.op == "||" && x != 0 {
			return unOp("!", unOp("!", x)), nil
		}
		y, err := evalConst(e.y)
		if err != nil {
			return 0, err
		}
		v, err := constOp(e.op, x, y)
		if err != nil {
			return 0, &posError{e.pos, err.Error()}
		}
		return v, nil
	}
	return 0, fmt.Errorf("not a constant")
}
