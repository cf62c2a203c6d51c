package asm

import (
	"bytes"
	"errors"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// cmacro is a C preprocessor macro.
type cmacro struct {
	name   string
	fn     bool     // function-like
	params []string // "__VA_ARGS__" last when variadic
	body   []token
}

type condFrame struct {
	active    bool // lines are kept
	taken     bool // a branch of this #if was already true
	parentOn  bool
	elseSeen  bool
	directive srcPos
}

// Preprocessor limits: they keep hostile input (recursive includes, macro
// bombs) bounded in time and memory.
const (
	maxIncludeDepth   = 64
	maxCppTokens      = 1 << 16 // tokens one line may grow to by expansion
	maxCppExpansions  = 1 << 20 // macro expansions in one file set
	maxCppWork        = 1 << 22 // tokens copied by expansions in one file set
	maxPreprocessLine = 4 << 20 // output lines
)

type cpp struct {
	opts       Options
	macros     map[string]*cmacro
	errs       *errSink
	out        []line
	stack      []string // files being included, outermost first
	expansions int
	work       int
	failed     bool // a limit was hit: stop
	// everDefined records every #define seen (name -> first position), so
	// that the assembler can say an unknown $NAME is a macro defined later
	// or a function-like macro used without arguments.
	everDefined map[string]cdef
	truncated   *srcPos // output stopped at the statement limit, here
}

// cdef is what the assembler learns about a C macro for its messages.
type cdef struct {
	pos srcPos
	fn  bool
}

func newCPP(opts Options, errs *errSink) *cpp {
	p := &cpp{opts: opts, macros: map[string]*cmacro{}, errs: errs, everDefined: map[string]cdef{}}
	pre := map[string]string{"__IPU__": "1", "__IPU_ARCH_VERSION__": "21", "__ASSEMBLER__": "1"}
	for k, v := range opts.Defines {
		if v == "" {
			v = "1" // -DNAME means NAME=1, as in cc
		}
		pre[k] = v
	}
	names := make([]string, 0, len(pre))
	for k := range pre {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		p.macros[k] = &cmacro{name: k, body: relex(pre[k], srcPos{"<command line>", 1, 1})}
	}
	return p
}

func (p *cpp) file(name string, src []byte) {
	if len(p.stack) >= maxIncludeDepth {
		p.errs.add(srcPos{name, 1, 1}, "#include nested more than %d deep", maxIncludeDepth)
		return
	}
	if i := bytes.IndexByte(src, 0); i >= 0 {
		// Source text has no NUL bytes; a file with one is an object, an
		// executable or other binary data given by mistake. One error says
		// so, instead of hundreds about the bytes.
		line := 1 + bytes.Count(src[:i], []byte{'\n'})
		col := i - (bytes.LastIndexByte(src[:i], '\n') + 1) + 1
		p.errs.add(srcPos{name, line, col}, "not assembly source: %s (a NUL byte at offset %d)", binaryKind(src), i)
		p.failed = true
		return
	}
	p.stack = append(p.stack, name)
	defer func() { p.stack = p.stack[:len(p.stack)-1] }()
	var conds []condFrame
	stopped := false
	unterminated := lexLines(name, src, func(l line) bool {
		// More output lines than the assembler takes statements cannot
		// assemble: stop here and let it report its statement limit,
		// rather than hold the rest of a huge file as tokens.
		if p.errs.full() || p.failed || len(p.out) > maxPreprocessLine || len(p.out) > maxStatements {
			if !p.failed && !p.errs.full() && p.truncated == nil {
				pos := l.pos
				p.truncated = &pos
			}
			stopped = true
			return false
		}
		p.line(l, &conds)
		return true
	})
	if stopped {
		return
	}
	for _, f := range conds {
		p.errs.add(f.directive, "#if without #endif")
	}
	if unterminated != nil {
		p.errs.add(*unterminated, "unterminated /* comment")
	}
}

// line handles one logical line of a file.
func (p *cpp) line(l line, condsp *[]condFrame) {
	conds := *condsp
	defer func() { *condsp = conds }()
	on := func() bool { return len(conds) == 0 || conds[len(conds)-1].active }
	{
		ts := l.toks
		if len(ts) > 0 && ts[0].punct("##") {
			return // a comment line: ## text
		}
		if len(ts) == 0 || !ts[0].punct("#") {
			if on() && len(ts) > 0 {
				p.out = append(p.out, line{toks: p.expand(ts), pos: l.pos})
			}
			return
		}
		if len(ts) == 1 {
			return // the null directive
		}
		d := ts[1]
		if d.kind != tIdent || d.space && !cppDirectives[d.text] {
			return // a comment line (see default below)
		}
		args := ts[2:]
		switch d.text {
		case "if", "ifdef", "ifndef":
			f := condFrame{parentOn: on(), directive: d.pos}
			if f.parentOn {
				f.active = p.cond(d, args)
				f.taken = f.active
			}
			conds = append(conds, f)
			return
		case "elif", "else", "endif":
			if len(conds) == 0 {
				p.errs.add(d.pos, "#%s without #if", d.text)
				return
			}
			f := &conds[len(conds)-1]
			switch d.text {
			case "endif":
				conds = conds[:len(conds)-1]
			case "else":
				if f.elseSeen {
					p.errs.add(d.pos, "#else after #else")
				}
				f.elseSeen = true
				f.active = f.parentOn && !f.taken
				f.taken = true
			case "elif":
				if f.elseSeen {
					p.errs.add(d.pos, "#elif after #else")
				}
				f.active = false
				if f.parentOn && !f.taken {
					f.active = p.cond(d, args)
					f.taken = f.active
				}
			}
			return
		}
		if !on() {
			return
		}
		switch d.text {
		case "define":
			p.define(d, args)
		case "undef":
			if len(args) == 0 || args[0].kind != tIdent {
				p.errs.add(d.pos, "#undef: expected a macro name")
				return
			}
			delete(p.macros, args[0].text)
		case "include":
			p.include(d, args)
		case "error":
			p.errs.add(d.pos, "#error %s", joinTokens(args))
		case "warning", "pragma", "line", "ident":
			// Nothing to do for an assembler.
		default:
			// A line marker (# 12 "file") from another preprocessor, or a
			// comment: in clang's assembler-with-cpp mode a # that does not
			// start a directive is passed to the assembler, whose comment
			// character it is (# text, ## text).
		}
	}
}

// cppDirectives are the directive names; a # followed by anything else is
// a comment line.
var cppDirectives = map[string]bool{"if": true, "ifdef": true, "ifndef": true, "elif": true, "else": true,
	"endif": true, "define": true, "undef": true, "include": true, "error": true, "warning": true,
	"pragma": true, "line": true, "ident": true}

// cond evaluates an #if / #ifdef / #ifndef / #elif condition.
func (p *cpp) cond(d token, args []token) bool {
	if d.text == "ifdef" || d.text == "ifndef" {
		if len(args) == 0 || args[0].kind != tIdent {
			p.errs.add(d.pos, "#%s: expected a macro name", d.text)
			return false
		}
		_, def := p.macros[args[0].text]
		return def == (d.text == "ifdef")
	}
	// Replace defined(X) before expansion, so X itself is not expanded.
	var ts []token
	for i := 0; i < len(args); i++ {
		t := args[i]
		if !t.is(tIdent, "defined") {
			ts = append(ts, t)
			continue
		}
		j := i + 1
		paren := j < len(args) && args[j].punct("(")
		if paren {
			j++
		}
		if j >= len(args) || args[j].kind != tIdent {
			p.errs.add(t.pos, "defined: expected a macro name")
			return false
		}
		_, def := p.macros[args[j].text]
		if paren {
			j++
			if j >= len(args) || !args[j].punct(")") {
				p.errs.add(t.pos, "defined: expected )")
				return false
			}
		}
		v := "0"
		if def {
			v = "1"
		}
		ts = append(ts, token{kind: tNum, text: v, pos: t.pos})
		i = j
	}
	ts = p.expandTokens(ts)
	end := d.pos
	if len(args) > 0 {
		last := args[len(args)-1]
		end = last.pos
		end.col += len(last.text)
	}
	e, err := parseExpr(ts, nil, true, end)
	if err == nil {
		var v int64
		v, err = evalConst(e)
		if err == nil {
			return v != 0
		}
	}
	p.errs.add(errPos(err, d.pos), "#%s: %s", d.text, errMsg(err))
	return false
}

func errPos(err error, def srcPos) srcPos {
	var pe *posError
	if errors.As(err, &pe) && pe.pos.file != "" {
		return pe.pos
	}
	return def
}

func errMsg(err error) string {
	var pe *posError
	if errors.As(err, &pe) {
		return pe.msg
	}
	return err.Error()
}

func (p *cpp) define(d token, args []token) {
	if len(args) == 0 || args[0].kind != tIdent || strings.HasPrefix(args[0].text, "$") {
		p.errs.add(d.pos, "#define: expected a macro name")
		return
	}
	m := &cmacro{name: args[0].text}
	body := args[1:]
	if len(body) > 0 && body[0].punct("(") && !body[0].space {
		m.fn = true
		i := 1
		for {
			if i >= len(body) {
				p.errs.add(d.pos, "#define %s: unterminated parameter list", m.name)
				return
			}
			t := body[i]
			if t.punct(")") && len(m.params) == 0 {
				i++
				break
			}
			switch {
			case t.text == "...": // lexed as one name, since '.' is a name character
				m.params = append(m.params, "__VA_ARGS__")
			case t.kind == tIdent:
				m.params = append(m.params, t.text)
			default:
				p.errs.add(t.pos, "#define %s: expected a parameter name, found %q", m.name, t.text)
				return
			}
			i++
			if i < len(body) && body[i].punct(")") {
				i++
				break
			}
			if i >= len(body) || !body[i].punct(",") {
				p.errs.add(d.pos, "#define %s: expected , or ) in parameter list", m.name)
				return
			}
			i++
		}
		body = body[i:]
	}
	m.body = body
	p.macros[m.name] = m
	if _, ok := p.everDefined[m.name]; !ok {
		p.everDefined[m.name] = cdef{pos: args[0].pos, fn: m.fn}
	}
}

func (p *cpp) include(d token, args []token) {
	var name string
	switch {
	case len(args) == 1 && args[0].kind == tStr:
		name = args[0].text[1 : len(args[0].text)-1]
	case len(args) >= 2 && args[0].punct("<") && args[len(args)-1].punct(">"):
		name = joinTokens(args[1 : len(args)-1])
	default:
		p.errs.add(d.pos, `#include: expected "file" or <file>`)
		return
	}
	read := p.opts.ReadFile
	cur := p.stack[len(p.stack)-1]
	var tried []string
	if filepath.IsAbs(name) {
		tried = []string{name}
	} else {
		tried = append(tried, filepath.Join(filepath.Dir(cur), name))
		for _, dir := range p.opts.IncludeDirs {
			tried = append(tried, filepath.Join(dir, name))
		}
	}
	for _, path := range tried {
		src, err := read(path)
		if err != nil {
			continue
		}
		for _, open := range p.stack {
			if filepath.Clean(open) == filepath.Clean(path) {
				p.errs.add(d.pos, "#include cycle: %s -> %s", strings.Join(p.stack, " -> "), path)
				return
			}
		}
		p.file(path, src)
		return
	}
	p.errs.add(d.pos, "#include: cannot find %q (looked in %s)", name, strings.Join(tried, ", "))
}

// expand macro-expands one line (Prosser's algorithm, simplified: each token
// carries the set of macros it came from, which are not expanded again).
func (p *cpp) expand(in []token) []token {
	ts, glue := p.splitNames(in)
	n := p.expansions
	ts = p.expandTokens(ts)
	if glue {
		ts = p.glue(ts)
	}
	if p.expansions != n {
		ts = joinAdjacentNames(ts)
	}
	return ts
}

// joinAdjacentNames merges names and numbers that an expansion left side
// by side with no white space between: clang's output is text, which the
// assembler lexes again, so `F(x).kernel` is the one symbol F's expansion
// spells followed by .kernel.
func joinAdjacentNames(ts []token) []token {
	word := func(t token) bool { return t.kind == tIdent || t.kind == tNum }
	for i := 1; i < len(ts); i++ {
		if !word(ts[i-1]) || !word(ts[i]) || ts[i].space {
			continue
		}
		out := append([]token(nil), ts[:i-1]...)
		for j := i - 1; j < len(ts); j++ {
			if len(out) > 0 && j > i-1 && word(out[len(out)-1]) && word(ts[j]) && !ts[j].space {
				last := out[len(out)-1]
				re := relex(last.text+ts[j].text, last.pos)
				if len(re) == 1 {
					re[0].space, re[0].hide = last.space, last.hide
					out[len(out)-1] = re[0]
					continue
				}
			}
			out = append(out, ts[j])
		}
		return out
	}
	return ts
}

// splitNames prepares names the assembler lexes as one token but clang's
// assembler-with-cpp lexes as several, so that macros inside them expand:
// $NAME (in this mode $ is not part of an identifier: `#define IN_PTR m1`
// then `$IN_PTR` is `$m1`) and dotted names (`.text.SYM`, `.data.F(x)`, split
// at '.'). It reports whether any name was split; the pieces are marked
// with glueNext so that glue rejoins them after expansion.
func (p *cpp) splitNames(in []token) ([]token, bool) {
	var out []token
	split := false
	for i, t := range in {
		if t.kind != tIdent || !p.hasMacroPart(t.text) {
			if out != nil {
				out = append(out, t)
			}
			continue
		}
		if out == nil {
			out = append([]token(nil), in[:i]...)
		}
		split = true
		parts := namePieces(t.text)
		for k, piece := range parts {
			nt := t
			nt.text = piece
			nt.space = k == 0 && t.space
			if piece == "$" || piece == "." || piece == `\` {
				nt.kind = tPunct
			}
			nt.glue = k < len(parts)-1
			out = append(out, nt)
		}
	}
	if out == nil {
		return in, false
	}
	return out, split
}

// namePieces splits "$a.b.c" into "$", "a", ".", "b", ".", "c", and a gas
// macro argument reference "$\ONE" into "$", "\", "ONE": clang's cpp
// lexes the backslash as a character of its own, so a #define of ONE
// changes the reference as it changes the .macro parameter list.
func namePieces(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' || s[i] == '$' || s[i] == '\\' {
			if i > start {
				out = append(out, s[start:i])
			}
			out = append(out, s[i:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// hasMacroPart reports whether a name holding $ or . has a piece that is a
// macro (the whole name was already looked up by expandTokens' caller).
func (p *cpp) hasMacroPart(s string) bool {
	if !strings.ContainsAny(s, ".$\\") {
		return false
	}
	for _, piece := range namePieces(s) {
		if piece == "." || piece == "$" || piece == `\` {
			continue
		}
		if _, ok := p.macros[piece]; ok && piece != s {
			return true
		}
	}
	return false
}

// glue rejoins the pieces splitNames made, with whatever their macros
// expanded to: a run of tokens joined by glue marks (and the tokens of an
// expansion that took a piece's place) becomes the text it spells, lexed
// again.
func (p *cpp) glue(ts []token) []token {
	var out []token
	for i := 0; i < len(ts); {
		if !ts[i].glue {
			out = append(out, ts[i])
			i++
			continue
		}
		j := i
		var b strings.Builder
		for j < len(ts) {
			b.WriteString(ts[j].text)
			if !ts[j].glue {
				break
			}
			j++
			// The token after a glued piece belongs to the name unless
			// white space separates it.
			if j < len(ts) && ts[j].space {
				j--
				break
			}
		}
		re := relex(b.String(), ts[i].pos)
		if len(re) > 0 {
			re[0].space = ts[i].space
		}
		out = append(out, re...)
		i = j + 1
	}
	return out
}

func (p *cpp) expandTokens(in []token) []token {
	ts := in
	copied := false
	for i := 0; i < len(ts) && !p.failed; {
		t := ts[i]
		if t.kind == tIdent && (t.text == "__LINE__" || t.text == "__FILE__") && p.macros[t.text] == nil {
			if !copied {
				ts = append([]token(nil), ts...)
				copied = true
			}
			if t.text == "__LINE__" {
				ts[i] = token{kind: tNum, text: strconv.Itoa(t.pos.line), pos: t.pos, space: t.space, glue: t.glue}
			} else {
				ts[i] = token{kind: tStr, text: strconv.Quote(t.pos.file), pos: t.pos, space: t.space, glue: t.glue}
			}
			i++
			continue
		}
		m := p.macros[t.text]
		if t.kind != tIdent || m == nil || t.hidden(m.name) {
			i++
			continue
		}
		end := i + 1
		var args [][]token
		if m.fn {
			if end >= len(ts) || !ts[end].punct("(") {
				i++
				continue
			}
			var ok bool
			args, end, ok = splitArgs(ts, end)
			if !ok {
				p.errs.add(t.pos, "macro %s: unterminated argument list", m.name)
				return ts
			}
			nparams := len(m.params)
			if len(args) == 1 && len(args[0]) == 0 && nparams == 0 {
				args = nil
			}
			variadic := nparams > 0 && m.params[nparams-1] == "__VA_ARGS__"
			if variadic && len(args) >= nparams {
				// Fold the extra arguments back into __VA_ARGS__.
				var va []token
				for j := nparams - 1; j < len(args); j++ {
					if j > nparams-1 {
						va = append(va, token{kind: tPunct, text: ",", pos: t.pos})
					}
					va = append(va, args[j]...)
				}
				args = append(args[:nparams-1], va)
			} else if variadic && len(args) == nparams-1 {
				args = append(args, nil)
			}
			if len(args) != nparams {
				p.errs.add(t.pos, "macro %s takes %d arguments, found %d", m.name, nparams, len(args))
				return ts
			}
		}
		p.expansions++
		p.work += len(ts) + len(m.body)
		if p.expansions > maxCppExpansions || len(ts) > maxCppTokens || p.work > maxCppWork {
			// Stop all preprocessing: the enclosing expansions would
			// otherwise go on copying the oversized result.
			if !p.failed {
				p.errs.add(t.pos, "macro expansion too large (recursive macro %s?)", m.name)
			}
			p.failed = true
			return ts
		}
		body := p.subst(m, args, t)
		if !copied {
			ts = append([]token(nil), ts...)
			copied = true
		}
		rest := append(body, ts[end:]...)
		ts = append(ts[:i], rest...)
	}
	return ts
}

// splitArgs reads a parenthesised, comma-separated argument list starting at
// ts[open] == "(". It returns the arguments and the index after ")".
func splitArgs(ts []token, open int) (args [][]token, end int, ok bool) {
	depth := 0
	var cur []token
	for j := open + 1; j < len(ts); j++ {
		t := ts[j]
		switch {
		case t.punct("("):
			depth++
		case t.punct(")"):
			if depth == 0 {
				return append(args, cur), j + 1, true
			}
			depth--
		case t.punct(",") && depth == 0:
			args = append(args, cur)
			cur = nil
			continue
		}
		cur = append(cur, t)
	}
	return nil, 0, false
}

func (p *cpp) subst(m *cmacro, args [][]token, use token) []token {
	param := func(t token) int {
		if t.kind != tIdent || !m.fn {
			return -1
		}
		for i, name := range m.params {
			if name == t.text {
				return i
			}
		}
		return -1
	}
	var out []token
	var pasteAt []int // indexes in out of ## operators from the body
	for j := 0; j < len(m.body); j++ {
		t := m.body[j]
		if t.punct("#") && m.fn && j+1 < len(m.body) && param(m.body[j+1]) >= 0 {
			s := joinTokens(args[param(m.body[j+1])])
			s = strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`)
			out = append(out, token{kind: tStr, text: `"` + s + `"`, space: t.space})
			j++
			continue
		}
		if t.punct("##") {
			pasteAt = append(pasteAt, len(out))
			out = append(out, t)
			continue
		}
		if k := param(t); k >= 0 {
			raw := j > 0 && m.body[j-1].punct("##") || j+1 < len(m.body) && m.body[j+1].punct("##")
			a := args[k]
			if !raw {
				a = p.expandTokens(append([]token(nil), a...))
			} else if len(a) == 0 {
				// C11 6.10.3.3: an empty operand of ## is a placemarker,
				// so `A ## x ## B` with x empty pastes to AB.
				a = []token{{kind: tIdent, text: ""}}
			}
			p.work += len(a)
			if p.failed || p.work > maxCppWork || len(out) > maxCppTokens {
				if !p.failed {
					p.errs.add(use.pos, "macro expansion too large (in macro %s)", m.name)
				}
				p.failed = true
				return nil
			}
			for n, at := range a {
				if n == 0 {
					at.space = t.space
				}
				out = append(out, at)
			}
			continue
		}
		out = append(out, t)
	}
	// Paste left to right, as GCC and clang do: `_ ## 2 ## _ ## x` must
	// glue "_2" first, or the intermediate "2_x" would lex as a number.
	if len(pasteAt) > 0 {
		isPaste := make(map[int]bool, len(pasteAt))
		for _, i := range pasteAt {
			isPaste[i] = true
		}
		res := make([]token, 0, len(out))
		for i := 0; i < len(out); i++ {
			if !isPaste[i] {
				res = append(res, out[i])
				continue
			}
			if len(res) == 0 || i+1 >= len(out) {
				continue // ## at an end of the body pastes nothing
			}
			left := res[len(res)-1]
			glued := relex(left.text+out[i+1].text, use.pos)
			if len(glued) > 0 {
				glued[0].space = left.space
			}
			res = append(res[:len(res)-1], glued...)
			i++
		}
		out = res[:0]
		for _, t := range res {
			if t.text != "" || t.kind != tIdent {
				out = append(out, t) // drops unpasted placemarkers
			}
		}
	}
	hide := append(append([]string(nil), use.hide...), m.name)
	for i := range out {
		out[i].pos = use.pos
		out[i].hide = hide
		out[i].glue = false
		if i == 0 {
			out[i].space = use.space
		}
	}
	if len(out) > 0 {
		out[len(out)-1].glue = use.glue
	}
	return out
}

// binaryKind names the kind of a binary file for an error message.
func binaryKind(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x7fELF")):
		return "an ELF object or executable"
	case bytes.HasPrefix(b, []byte("IPUEXE")):
		return "an application package (.ipuexe)"
	case bytes.HasPrefix(b, []byte("IPUPROF")):
		return "a profile"
	}
	return "binary data"
}
