package asm

import (
	"fmt"
	"strings"
)

// srcPos is a position in an original source file. Every token keeps one, so
// that errors found after preprocessing and macro expansion still point at
// the text the user wrote.
type srcPos struct {
	file      string
	line, col int
}

func (p srcPos) String() string { return fmt.Sprintf("%s:%d:%d", p.file, p.line, p.col) }

// Error is one assembly error at a source position.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// maxReported bounds how many errors ErrorList.Error prints; the rest are
// usually consequences of the first ones.
const maxReported = 20

// ErrorList is every error of one Assemble call, in the order found.
type ErrorList []*Error

func (l ErrorList) Error() string {
	var b strings.Builder
	for i, e := range l {
		if i == maxReported {
			fmt.Fprintf(&b, "\n(and %d more errors)", len(l)-maxReported)
			break
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// maxErrors stops assembly once this many errors are collected, which also
// bounds the work done on garbage input.
const maxErrors = 200

type errSink struct {
	list ErrorList
	file string // the main file: the position of last resort
}

func (s *errSink) add(p srcPos, format string, args ...any) {
	if len(s.list) >= maxErrors {
		return
	}
	if p.file == "" || p.line < 1 {
		p = srcPos{s.file, 1, 1}
	}
	s.list = append(s.list, &Error{File: p.file, Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...)})
}

func (s *errSink) full() bool { return len(s.list) >= maxErrors }
