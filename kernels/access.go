package kernels

import "fmt"

// Access is what one call does to one memory operand: the registry's
// Operand record (the kernel access contract) evaluated for the call's
// parameters, with the argument register that carries the operand's
// address. The compiler's passes reason about a call's reads and writes
// from these alone.
type Access struct {
	Operand string // the operand's name, e.g. "out"
	Reg     string // the argument register carrying its address, e.g. "$m2"
	Bytes   int    // the operand's extent from that address (Operand.Bytes)
	Tail    int    // how far past Bytes the kernel may read, never write (Operand.TailBytes)
	Written bool   // the kernel writes the operand (Operand.Written)
	// ReadFirst: the kernel may read the Written operand before it writes
	// it, an in-place update (Operand.ReadFirst).
	ReadFirst bool
	// Gaps: the kernel leaves some bytes of the Written operand's extent
	// untouched with these parameters, so it overwrites none of them for
	// certain (Operand.Gaps).
	Gaps bool
}

// AccessOf is the access contract of a call of s, one Access per operand
// in the record's order. It fails for parameters the kernel rejects and
// for an operand the record gives no argument register or size.
func AccessOf(s Spec) ([]Access, error) {
	k, err := Lookup(s.Name())
	if err != nil {
		return nil, err
	}
	p, err := k.Resolve(s.Params())
	if err != nil {
		return nil, err
	}
	return k.access(p)
}

// access evaluates the contract for resolved parameters p.
func (k *Kernel) access(p Params) ([]Access, error) {
	out := make([]Access, 0, len(k.Operands))
	for _, o := range k.Operands {
		reg := ""
		for _, a := range k.Args {
			if a.Name == o.Name {
				reg = a.Reg
			}
		}
		if reg == "" || o.Bytes == nil {
			return nil, fmt.Errorf("kernel %s: operand %s has no argument register or size", k.Name, o.Name)
		}
		out = append(out, Access{Operand: o.Name, Reg: reg, Bytes: o.Bytes(p), Tail: o.TailBytes,
			Written: o.Written, ReadFirst: o.Written && o.ReadFirst, Gaps: o.Written && o.Gaps != nil && o.Gaps(p)})
	}
	return out, nil
}
