package learn

import (
	"fmt"
	"strings"
)

// SplitCommand splits an assembler command template into argv, without a
// shell. Words are separated by blanks; 'single quotes' keep everything
// literally; in "double quotes" a backslash escapes only " and \; outside
// quotes a backslash escapes the next character. Unquoted shell syntax
// (| & ; < > ( ) $ `) is refused, since nothing interprets it: write
// sh -c '...' to get a shell. {in} and {out}, anywhere in a word, are
// replaced after splitting by the probe source and object paths, so paths
// with blanks or quotes stay one argument. Both must appear.
func SplitCommand(tmpl, in, out string) ([]string, error) {
	var argv []string
	var cur strings.Builder
	inWord := false
	quote := byte(0)
	for i := 0; i < len(tmpl); i++ {
		c := tmpl[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(tmpl) && (tmpl[i+1] == '"' || tmpl[i+1] == '\\'):
				i++
				cur.WriteByte(tmpl[i])
			default:
				cur.WriteByte(c)
			}
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				argv = append(argv, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\':
			if i+1 >= len(tmpl) {
				return nil, fmt.Errorf("assembler template %q: ends with a backslash", tmpl)
			}
			i++
			cur.WriteByte(tmpl[i])
			inWord = true
		case strings.IndexByte("|&;<>()$`", c) >= 0:
			return nil, fmt.Errorf("assembler template %q: unquoted %q at byte %d: the template is run without a shell (quote it, or write sh -c '...')", tmpl, c, i)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("assembler template %q: unterminated %c quote", tmpl, quote)
	}
	if inWord {
		argv = append(argv, cur.String())
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("assembler template is empty: want e.g. 'llvm-mc -filetype=obj {in} -o {out}'")
	}
	var hasIn, hasOut bool
	for i, a := range argv {
		hasIn = hasIn || strings.Contains(a, "{in}")
		hasOut = hasOut || strings.Contains(a, "{out}")
		argv[i] = strings.NewReplacer("{in}", in, "{out}", out).Replace(a)
	}
	if !hasIn || !hasOut {
		return nil, fmt.Errorf("assembler template %q: must contain both {in} (the probe source) and {out} (the object it writes)", tmpl)
	}
	return argv, nil
}
