package asm

import (
	"strings"
)

type tkind uint8

const (
	tIdent tkind = iota + 1 // names, directives, registers ($m0), \macro args
	tNum                    // numbers, including 1f / 1b local label references
	tStr                    // "..." (text keeps the quotes and escapes)
	tChar                   // 'c'
	tPunct                  // operators and separators
	tErr                    // a lexical error; text is the message
)

// token is one lexical token. Tokens carry their own position so that the
// preprocessor and the macro expander can move them around freely.
type token struct {
	kind  tkind
	text  string
	pos   srcPos
	space bool     // white space precedes the token (for # stringizing)
	hide  []string // C macros already expanded into this token
	glue  bool     // the preprocessor rejoins it with the next token (cpp.glue)
}

func (t token) is(kind tkind, text string) bool { return t.kind == kind && t.text == text }

func (t token) punct(text string) bool { return t.kind == tPunct && t.text == text }

func (t token) hidden(name string) bool {
	for _, h := range t.hide {
		if h == name {
			return true
		}
	}
	return false
}

// line is one logical source line (backslash-newline joined).
type line struct {
	toks []token
	pos  srcPos // start of the line, for errors on empty lines
}

func isIdentStart(c byte) bool {
	return c == '_' || c == '.' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentChar(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

var puncts2 = []string{"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "##"}

// lexer splits a file into logical lines of tokens. Lexical errors become tErr
// tokens rather than immediate errors, because text inside `#if 0` or a
// skipped `.if` may legitimately contain anything.
type lexer struct {
	file    string
	src     []byte
	i       int
	line    int
	lineBeg int
	lines   []line
	cur     line
	emit    func(line) bool // when set, receives each line instead of lines
	stop    bool            // emit asked to stop
}

func (lx *lexer) pos() srcPos { return srcPos{lx.file, lx.line, lx.i - lx.lineBeg + 1} }

func (lx *lexer) newline() {
	lx.i++
	lx.line++
	lx.lineBeg = lx.i
}

func (lx *lexer) endLine() {
	if lx.emit != nil {
		if !lx.stop && !lx.emit(lx.cur) {
			lx.stop = true
		}
	} else {
		lx.lines = append(lx.lines, lx.cur)
	}
	lx.cur = line{pos: srcPos{lx.file, lx.line, 1}}
}

// lexFile tokenizes a whole file. unterminated reports an unterminated block
// comment (its start), which is a hard error.
func lexFile(file string, src []byte) (lines []line, unterminated *srcPos) {
	lx := &lexer{file: file, src: src, line: 1}
	u := lx.run()
	return lx.lines, u
}

// lexLines is lexFile handing each line to emit as soon as it is complete,
// so that a huge file is never held as tokens all at once; emit returns
// false to stop.
func lexLines(file string, src []byte, emit func(line) bool) (unterminated *srcPos) {
	lx := &lexer{file: file, src: src, line: 1, emit: emit}
	return lx.run()
}

func (lx *lexer) run() (unterminated *srcPos) {
	src, file := lx.src, lx.file
	lx.cur.pos = srcPos{file, 1, 1}
	space := false
	for lx.i < len(src) && !lx.stop {
		c := src[lx.i]
		switch {
		case c == '\n':
			lx.newline()
			lx.endLine()
			space = false
			continue
		case c == '\\' && lx.i+1 < len(src) && (src[lx.i+1] == '\n' || src[lx.i+1] == '\r' && lx.i+2 < len(src) && src[lx.i+2] == '\n'):
			// Line continuation: the logical line goes on.
			if src[lx.i+1] == '\r' {
				lx.i++
			}
			lx.i++
			lx.newline()
			continue // spliced: no white space, as in C
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			lx.i++
			space = true
			continue
		case c == '/' && lx.i+1 < len(src) && src[lx.i+1] == '/':
			for lx.i < len(src) && src[lx.i] != '\n' {
				lx.i++
			}
			continue
		case c == '/' && lx.i+1 < len(src) && src[lx.i+1] == '*':
			start := lx.pos()
			lx.i += 2
			closed := false
			for lx.i < len(src) {
				if src[lx.i] == '*' && lx.i+1 < len(src) && src[lx.i+1] == '/' {
					lx.i += 2
					closed = true
					break
				}
				if src[lx.i] == '\n' {
					lx.newline()
					continue
				}
				lx.i++
			}
			if !closed {
				p := start
				lx.endLine()
				return &p
			}
			space = true
			continue
		}
		p := lx.pos()
		start := lx.i
		t := token{pos: p, space: space}
		space = false
		switch {
		case isIdentStart(c) || c == '\\' && lx.escapeAt(lx.i):
			lx.ident()
			t.kind = tIdent
		case isDigit(c):
			hex := c == '0' && lx.i+1 < len(src) && (src[lx.i+1] == 'x' || src[lx.i+1] == 'X')
			for lx.i < len(src) {
				d := src[lx.i]
				if isIdentChar(d) && d != '$' {
					lx.i++
					continue
				}
				// An exponent sign belongs to a decimal floating constant.
				if (d == '+' || d == '-') && !hex && (src[lx.i-1] == 'e' || src[lx.i-1] == 'E') {
					lx.i++
					continue
				}
				break
			}
			t.kind = tNum
		case c == '"' || c == '\'':
			lx.i++
			ok := false
			for lx.i < len(src) && src[lx.i] != '\n' {
				if src[lx.i] == '\\' && lx.i+1 < len(src) && src[lx.i+1] != '\n' {
					lx.i += 2
					continue
				}
				if src[lx.i] == c {
					lx.i++
					ok = true
					break
				}
				lx.i++
			}
			t.kind = tStr
			if c == '\'' {
				t.kind = tChar
			}
			if !ok {
				t.kind = tErr
				if c == '"' {
					t.text = "unterminated string"
				} else {
					t.text = "unterminated character constant"
				}
				lx.cur.toks = append(lx.cur.toks, t)
				continue
			}
		default:
			t.kind = tPunct
			lx.i++
			for _, p2 := range puncts2 {
				if strings.HasPrefix(string(src[start:min(len(src), start+2)]), p2) {
					lx.i = start + 2
					break
				}
			}
		}
		if t.text == "" {
			t.text = string(src[start:lx.i])
			if t.kind == tIdent && strings.Contains(t.text, "\\\n") {
				t.text = strings.ReplaceAll(t.text, "\\\n", "") // a spliced name (ident)
			}
		}
		lx.cur.toks = append(lx.cur.toks, t)
	}
	if len(lx.cur.toks) > 0 {
		lx.endLine()
	}
	return nil
}

// escapeAt reports a GAS macro escape at i: \name, \@ or \().
func (lx *lexer) escapeAt(i int) bool {
	if lx.src[i] != '\\' || i+1 >= len(lx.src) {
		return false
	}
	n := lx.src[i+1]
	return isIdentChar(n) || n == '@' || n == '(' && i+2 < len(lx.src) && lx.src[i+2] == ')'
}

// ident consumes a name, which may embed macro escapes (.Lloop_\@, .text.\name).
func (lx *lexer) ident() {
	for lx.i < len(lx.src) {
		c := lx.src[lx.i]
		switch {
		case isIdentChar(c):
			lx.i++
		case c == '\\' && lx.i+1 < len(lx.src) && lx.src[lx.i+1] == '\n':
			// A backslash-newline inside a name splices it (C translation
			// phase 2): `abc\<newline>def` is the one name abcdef.
			lx.i++
			lx.newline()
		case lx.escapeAt(lx.i):
			if lx.src[lx.i+1] == '(' {
				lx.i += 3
			} else {
				lx.i += 2
			}
		default:
			return
		}
	}
}

// relex tokenizes text produced by pasting or macro substitution; every
// token gets position p.
func relex(text string, p srcPos) []token {
	lines, _ := lexFile(p.file, []byte(text))
	if len(lines) == 1 { // the usual case: reuse the line's tokens
		out := lines[0].toks
		for i := range out {
			out[i].pos = p
		}
		return out
	}
	n := 0
	for _, l := range lines {
		n += len(l.toks)
	}
	out := make([]token, 0, n)
	for _, l := range lines {
		for _, t := range l.toks {
			t.pos = p
			out = append(out, t)
		}
	}
	return out
}

func joinTokens(ts []token) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 && t.space {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}
