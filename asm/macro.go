package asm

import (
	"fmt"
	"strconv"
	"strings"
)

// defineMacro parses `.macro name [param[:req|:vararg][=default]], ...`.
func (a *assembler) defineMacro(s stmt, body []stmt) {
	ts := s.toks[1:]
	if len(ts) == 0 || ts[0].kind != tIdent || strings.HasPrefix(ts[0].text, "$") {
		a.errorf(s.pos, ".macro: expected a macro name")
		return
	}
	m := &macro{name: ts[0].text, body: body, pos: ts[0].pos}
	ts = ts[1:]
	if len(ts) > 0 && ts[0].punct(",") {
		ts = ts[1:]
	}
	for len(ts) > 0 {
		t := ts[0]
		if t.kind != tIdent {
			a.errorf(t.pos, ".macro %s: expected a parameter name, found %q", m.name, t.text)
			return
		}
		p := mparam{name: t.text}
		ts = ts[1:]
		if len(ts) >= 2 && ts[0].punct(":") && ts[1].kind == tIdent {
			switch ts[1].text {
			case "req":
				p.req = true
			case "vararg":
				p.vararg = true
			default:
				a.errorf(ts[1].pos, ".macro %s: unknown parameter qualifier :%s (want :req or :vararg)", m.name, ts[1].text)
				return
			}
			ts = ts[2:]
		}
		if len(ts) > 0 && ts[0].punct("=") {
			// The default ends at a comma or, as in GNU as, where white
			// space starts the next parameter.
			j := 1
			if j < len(ts) {
				j = 1 + len(gasArgs(ts[1:])[0])
			}
			p.def = unquoteArg(ts[1:j])
			ts = ts[j:]
		}
		for _, q := range m.params {
			if q.name == p.name {
				a.errorf(t.pos, ".macro %s: parameter %s given twice", m.name, p.name)
				return
			}
		}
		m.params = append(m.params, p)
		if len(ts) > 0 && ts[0].punct(",") {
			ts = ts[1:]
		}
	}
	for i, p := range m.params {
		if p.vararg && i != len(m.params)-1 {
			a.errorf(s.pos, ".macro %s: only the last parameter may be :vararg", m.name)
			return
		}
	}
	a.macros[m.name] = m
}

// expandMacro binds the call's arguments and runs the body.
func (a *assembler) expandMacro(m *macro, call token, args []token, depth int) bool {
	if depth >= maxMacroDepth {
		a.errorf(call.pos, "macro %s: expansion nested more than %d deep (recursive macro?)", m.name, maxMacroDepth)
		return false
	}
	a.expanded++
	if a.expanded > maxExpansions {
		a.errorf(call.pos, "more than %d macro expansions; giving up", maxExpansions)
		a.abort = true
		return false
	}
	vals := make([][]token, len(m.params))
	set := make([]bool, len(m.params))
	next := 0
	parts := gasArgs(args)
	for _, part := range parts {
		if len(part) >= 2 && part[0].kind == tIdent && part[1].punct("=") {
			if idx := m.param(part[0].text); idx >= 0 {
				vals[idx], set[idx] = unquoteArg(part[2:]), true
				continue
			}
		}
		for next < len(m.params) && set[next] {
			next++
		}
		if next >= len(m.params) {
			a.errorf(firstPos(part, call), "macro %s takes %d arguments, found %d", m.name, len(m.params), len(parts))
			return false
		}
		if m.params[next].vararg {
			// The vararg parameter takes the rest of the line as written,
			// commas included (parts share args' array: cap gives the
			// offset).
			rest := args[cap(args)-cap(part):]
			vals[next], set[next] = rest, true
			break
		}
		part = unquoteArg(part)
		vals[next], set[next] = part, len(part) > 0
		next++
	}
	for i, p := range m.params {
		if !set[i] || len(vals[i]) == 0 {
			if p.req {
				a.errorf(call.pos, "macro %s: missing value for required argument %s", m.name, p.name)
				return false
			}
			if !set[i] || len(vals[i]) == 0 {
				vals[i] = p.def
			}
		}
	}
	names := make([]string, len(m.params))
	for i, p := range m.params {
		names[i] = p.name
	}
	body := a.substitute(m.body, names, vals, a.counter)
	a.counter++
	saved, savedDepth := a.note, a.noteDepth
	// Name the innermost calls; a deep recursion would otherwise print
	// a hundred call sites.
	switch {
	case a.noteDepth < 3:
		a.note = fmt.Sprintf("in macro %s called at %s", m.name, call.pos)
		if saved != "" {
			a.note += ", " + saved
		}
	default:
		a.note = fmt.Sprintf("in macro %s called at %s, ...", m.name, call.pos)
	}
	a.noteDepth++
	a.run(body, depth+1)
	a.note, a.noteDepth = saved, savedDepth
	return false // .exitm ends only this macro
}

// gasArgs splits macro call arguments as GNU as does: at commas, and at
// white space between two operands (`M x 8 nop` is three arguments), while
// parentheses, brackets and quotes group (`M (SIZE + 4) f(a, b)` is two).
// White space next to a binary operator does not split, so `M x + 4` is
// one argument: gas itself would split it, but every use in the public
// kernels means the expression.
func gasArgs(ts []token) [][]token {
	if len(ts) == 0 {
		return nil
	}
	var out [][]token
	depth, start := 0, 0
	for i, t := range ts {
		switch {
		case t.punct("(") || t.punct("["):
			if depth == 0 && i > start && t.space && !isBinaryOp(ts[i-1]) {
				out = append(out, ts[start:i])
				start = i
			}
			depth++
			continue
		case t.punct(")") || t.punct("]"):
			depth--
			continue
		case t.punct(",") && depth <= 0:
			out = append(out, ts[start:i])
			start = i + 1
			continue
		}
		if depth <= 0 && i > start && t.space && !isBinaryOp(t) && !isBinaryOp(ts[i-1]) && !ts[i-1].punct("=") && !t.punct("=") {
			out = append(out, ts[start:i])
			start = i
		}
	}
	return append(out, ts[start:])
}

// isBinaryOp reports an operator that joins two operands of an expression.
func isBinaryOp(t token) bool {
	if t.kind != tPunct {
		return false
	}
	switch t.text {
	case "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "&&", "||", "==", "!=", "<", ">", "<=", ">=", ":", "~", "!":
		return true
	}
	return false
}

// unquoteArg: an argument written as one quoted string stands for its
// contents, quotes removed and escapes kept as written (GNU as outside
// .altmacro; LLVM MC's expandMacro writes a string token's contents).
// poplibs relies on it: `f32v2LOGADD "{nop;" "};"` opens and closes
// bundles, `INSTRUCTIONv2="void"` is compared with .ifc to void. The
// argument "" is empty.
func unquoteArg(ts []token) []token {
	if len(ts) != 1 || ts[0].kind != tStr || len(ts[0].text) < 2 || ts[0].text[0] != '"' {
		return ts
	}
	inner := ts[0].text[1 : len(ts[0].text)-1]
	if inner == "" {
		return nil
	}
	re := relex(inner, ts[0].pos)
	if len(re) > 0 {
		re[0].space = ts[0].space
	}
	return re
}

func (m *macro) param(name string) int {
	for i, p := range m.params {
		if p.name == name {
			return i
		}
	}
	return -1
}

func firstPos(ts []token, def token) srcPos {
	if len(ts) > 0 {
		return ts[0].pos
	}
	return def.pos
}

// substitute replaces \name, \@ and \() in a macro or .irp body. A token that
// is exactly \name becomes the argument's tokens; a name embedding an escape
// (.Lloop_\@, .text.\name) is rebuilt as text and lexed again at its place.
func (a *assembler) substitute(body []stmt, names []string, vals [][]token, count int) []stmt {
	out := make([]stmt, 0, len(body))
	lookup := func(name string) int {
		for i, n := range names {
			if n == name {
				return i
			}
		}
		return -1
	}
	for _, s := range body {
		var ts []token
		for _, t := range s.toks {
			if a.substBytes > maxSubstBytes {
				if !a.abort {
					a.errorf(t.pos, "macro expansion produced more than %d bytes; giving up", maxSubstBytes)
					a.abort = true
				}
				return nil
			}
			if !strings.Contains(t.text, `\`) {
				ts = append(ts, t)
				continue
			}
			if t.kind == tIdent && len(t.text) > 1 && t.text[0] == '\\' {
				if k := lookup(t.text[1:]); k >= 0 {
					for n, v := range vals[k] {
						if n == 0 {
							v.space = t.space
						}
						ts = append(ts, v)
						a.substBytes += len(v.text) + 1
					}
					continue
				}
			}
			if t.kind != tIdent && t.kind != tStr {
				ts = append(ts, t)
				continue
			}
			text := expandEscapes(t.text, t.kind == tStr, func(name string) (string, bool) {
				if k := lookup(name); k >= 0 {
					return joinTokens(vals[k]), true
				}
				return "", false
			}, count)
			if t.kind == tStr {
				t.text = text
				ts = append(ts, t)
				continue
			}
			a.substBytes += len(text)
			if a.substBytes > maxSubstBytes {
				continue // reported on the next token or statement
			}
			re := relex(text, t.pos)
			if len(re) > 0 {
				re[0].space = t.space
			}
			if a.substToks += len(re); a.substToks > maxSubstTokens {
				if !a.abort {
					a.errorf(t.pos, "macro expansion produced more than %d tokens from substituted names; giving up", maxSubstTokens)
					a.abort = true
				}
				return nil
			}
			ts = append(ts, re...)
		}
		// An argument may carry statement separators ("{nop;"): the
		// expansion is text that is split into statements again.
		start := 0
		for i := 0; i <= len(ts); i++ {
			if i < len(ts) && !ts[i].punct(";") {
				continue
			}
			if i > start {
				p := s.pos
				if start > 0 {
					p = ts[start].pos
				}
				out = append(out, stmt{toks: ts[start:i], pos: p})
			}
			start = i + 1
		}
	}
	if a.substBytes > maxSubstBytes && !a.abort {
		a.errorf(body[0].pos, "macro expansion produced more than %d bytes; giving up", maxSubstBytes)
		a.abort = true
		return nil
	}
	return out
}

func isParamChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func expandEscapes(text string, inString bool, arg func(string) (string, bool), count int) string {
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '\\' || i+1 >= len(text) {
			b.WriteByte(c)
			continue
		}
		switch n := text[i+1]; {
		case n == '@':
			b.WriteString(strconv.Itoa(count))
			i++
			continue
		case n == '(' && !inString && i+2 < len(text) && text[i+2] == ')':
			i += 2
			continue
		case isParamChar(n):
			j := i + 1
			for j < len(text) && isParamChar(text[j]) {
				j++
			}
			if v, ok := arg(text[i+1 : j]); ok {
				b.WriteString(v)
				i = j - 1
				continue
			}
		case inString && n == '\\':
			b.WriteString(`\\`)
			i++
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// repeat runs .rept, .irp and .irpc bodies.
func (a *assembler) repeat(d string, s stmt, body []stmt, depth int) bool {
	args := s.toks[1:]
	run := func(b []stmt) bool {
		a.expanded++
		if a.expanded > maxExpansions {
			a.errorf(s.pos, "more than %d macro and repeat expansions; giving up", maxExpansions)
			a.abort = true
			return false
		}
		return a.run(b, depth)
	}
	switch d {
	case ".rept":
		n, ok := a.constExpr(args, s.toks[0], "count")
		if !ok {
			return false
		}
		if n < 0 || n > maxReptCount {
			a.errorf(s.pos, ".rept count %d out of range [0, %d]", n, maxReptCount)
			return false
		}
		for k := int64(0); k < n && !a.abort; k++ {
			if run(body) {
				return true
			}
		}
	case ".irp", ".irpc":
		if len(args) == 0 || args[0].kind != tIdent {
			a.errorf(s.pos, "%s: expected a parameter name", d)
			return false
		}
		name := args[0].text
		rest := args[1:]
		if len(rest) > 0 && rest[0].punct(",") {
			rest = rest[1:]
		}
		var items [][]token
		if d == ".irp" {
			items = splitCommas(rest)
			if len(items) == 0 {
				items = [][]token{nil}
			}
		} else {
			for _, ch := range joinTokens(rest) {
				if ch != ' ' {
					items = append(items, relex(string(ch), s.pos))
				}
			}
		}
		for _, it := range items {
			if a.abort {
				break
			}
			if run(a.substitute(body, []string{name}, [][]token{it}, a.counter)) {
				return true
			}
		}
	}
	return false
}
