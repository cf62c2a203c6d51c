package asm

import (
	"fmt"
)

// deferError says an expression needs a symbol that is not defined yet; the
// caller reserves space and evaluates again at the end of the input.
type deferError struct{ name string }

func (e *deferError) Error() string { return e.name + " is not defined yet" }

// eval evaluates e. Before the end of input (final == false) an undefined
// symbol gives a *deferError; at the end it is an external symbol.
func (a *assembler) eval(e expr, final bool) (value, error) {
	return a.evalDepth(e, final, 0)
}

func (a *assembler) evalDepth(e expr, final bool, depth int) (value, error) {
	if depth > 1000 {
		return value{}, fmt.Errorf("expression too deep")
	}
	switch e := e.(type) {
	case eNum:
		return constVal(e.v), nil
	case eVal:
		return e.v, nil
	case eRef:
		s := e.s
		if s.kind != symLabel {
			if final {
				return value{}, &posError{s.firstRef, fmt.Sprintf("local label %s has no definition %s after this point", s.name, s.name[:len(s.name)-1]+":")}
			}
			return value{}, &deferError{s.name}
		}
		return value{sec: s.sec, off: s.val}, nil
	case eSym:
		return a.symValue(e, final, depth)
	case eUn:
		x, err := a.evalDepth(e.x, final, depth+1)
		if err != nil {
			return value{}, err
		}
		if !x.isConst() {
			return value{}, &posError{e.pos, fmt.Sprintf("operator %s needs a constant, found an address", e.op)}
		}
		return constVal(unOp(e.op, x.off)), nil
	case eBin:
		x, err := a.evalDepth(e.x, final, depth+1)
		if err != nil {
			return value{}, err
		}
		y, err := a.evalDepth(e.y, final, depth+1)
		if err != nil {
			return value{}, err
		}
		switch {
		case x.isConst() && y.isConst():
			v, err := constOp(e.op, x.off, y.off)
			if err != nil {
				return value{}, &posError{e.pos, err.Error()}
			}
			return constVal(v), nil
		case e.op == "+" && y.isConst():
			x.off += y.off
			return x, nil
		case e.op == "+" && x.isConst():
			y.off += x.off
			return y, nil
		case e.op == "-" && y.isConst():
			x.off -= y.off
			return x, nil
		case e.op == "-" && !x.isConst() && !y.isConst():
			// The difference of two addresses in one section is a constant
			// (the linker moves the section as a whole).
			if x.sec != nil && x.sec == y.sec || x.ext != nil && x.ext == y.ext {
				return constVal(x.off - y.off), nil
			}
			return value{}, &posError{e.pos, fmt.Sprintf("cannot subtract %s from %s: not in the same section", describe(y), describe(x))}
		}
		return value{}, &posError{e.pos, fmt.Sprintf("operator %s needs constants, found %s %s %s", e.op, describe(x), e.op, describe(y))}
	}
	return value{}, fmt.Errorf("bad expression")
}

func describe(v value) string {
	switch {
	case v.ext != nil:
		return "undefined symbol " + v.ext.name
	case v.base != nil:
		return "address of " + v.base.name
	case v.sec != nil:
		return "an address in " + v.sec.name
	}
	return fmt.Sprint(v.off)
}

func (a *assembler) symValue(e eSym, final bool, depth int) (value, error) {
	s := a.syms[e.name]
	if s == nil || s.kind == symUndef {
		if !final {
			return value{}, &deferError{e.name}
		}
		s = a.lookup(e.name)
		if !s.used {
			s.used, s.firstRef = true, e.pos
		}
		return value{ext: s, base: s}, nil
	}
	switch s.kind {
	case symLabel:
		return value{sec: s.sec, off: s.val, base: s}, nil
	case symEqu:
		if s.equVal != nil {
			return *s.equVal, nil
		}
		if s.busy {
			return value{}, &posError{e.pos, fmt.Sprintf("circular definition of %s", s.name)}
		}
		s.busy = true
		v, err := a.evalDepth(s.equExpr, final, depth+1)
		s.busy = false
		if err == nil && final {
			s.equVal = &v
		}
		return v, err
	}
	return value{}, fmt.Errorf("bad symbol %s", e.name)
}

// freeze replaces .set symbols that have a value now by that value, so a
// deferred expression sees the value at its point of use even when the
// symbol is set again later.
func (a *assembler) freeze(e expr) expr {
	switch x := e.(type) {
	case eSym:
		if s := a.syms[x.name]; s != nil && s.kind == symEqu && s.equVal != nil {
			return eVal{*s.equVal}
		}
	case eUn:
		x.x = a.freeze(x.x)
		return x
	case eBin:
		x.x = a.freeze(x.x)
		x.y = a.freeze(x.y)
		return x
	}
	return e
}
