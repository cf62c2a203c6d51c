// Package kernels owns the tile kernels' ABI records — entry symbol,
// argument registers, operand alignment, memory-element rules and access
// tails, the "kernel access contract" the compiler relies on — their
// parameters, and the typed specs the compiler builds its calls from.
//
// The package neither assembles nor runs kernels: kernels/assemble holds
// the IPU21 sources and builds a specialisation into an ELF object through
// a content-addressed cache; kernels/bench runs one on the emulator. So the
// planner and the cost model import this package without importing the
// assembler, the ELF code or a device.
package kernels

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Arg is one argument register of a kernel's supervisor entry.
type Arg struct {
	Reg  string // e.g. "$m2"
	Name string // e.g. "out"
	Doc  string
}

// Region constrains where an operand may be placed.
type Region uint8

const (
	AnyRegion   Region = iota
	Interleaved        // region 1 (ld128 / ld128putcs need it)
)

// Operand is the access contract of one memory operand.
type Operand struct {
	Name   string
	Align  int    // byte alignment of its start
	Region Region // where it may live
	// Bytes is the operand's size for given parameters.
	Bytes func(p Params) int
	// TailBytes is how far past Bytes the kernel may read (never write):
	// the compiler must keep that much addressable memory after it.
	TailBytes int
	// DistinctElementFrom names operands that must not share a memory
	// element with this one (e.g. AMP output and left input).
	DistinctElementFrom []string
	// Written: the kernel writes this operand.
	Written bool
	// ReadFirst: the kernel may read this Written operand before writing
	// it, an in-place update such as out += bias (Written alone says
	// nothing about reads).
	ReadFirst bool
	// Gaps, when set, reports whether with parameters p the kernel leaves
	// some bytes of this Written operand's extent (Bytes) untouched, as an
	// unpack with a row stride wider than the written columns does.
	Gaps func(p Params) bool
}

// Param is one specialisation parameter (a -D definition of the source).
type Param struct {
	Name    string
	Default int
	Doc     string
	// Check validates a value in the context of all parameters.
	Check func(v int, p Params) error
}

// Kernel is the ABI record of one kernel.
type Kernel struct {
	Name     string // registry name, e.g. "gemm_f16"
	Source   string // file under kernels/assemble/src/
	Entry    string // supervisor entry symbol
	Doc      string
	Params   []Param
	Args     []Arg
	Operands []Operand
	// MACs is the useful multiply-accumulate count of one call (0 for
	// kernels that do none).
	MACs func(p Params) int64
}

// Params are parameter values by name.
type Params map[string]int

// String renders params deterministically ("c=48 k=240 r=232").
func (p Params) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Itoa(p[k])
	}
	return strings.Join(parts, " ")
}

var registry = map[string]*Kernel{}

// register adds a kernel record; called from init in the files defining
// kernels. A malformed record is a programming error (that its source is
// embedded is checked by kernels/assemble's tests).
func register(k *Kernel) {
	if _, dup := registry[k.Name]; dup {
		panic("BUG: kernel " + k.Name + " registered twice")
	}
	registry[k.Name] = k
}

// Lookup returns a kernel by name.
func Lookup(name string) (*Kernel, error) {
	if k, ok := registry[name]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("unknown kernel %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the registered kernels, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Resolve fills defaults for missing parameters, rejects unknown ones and
// runs each parameter's check.
func (k *Kernel) Resolve(given Params) (Params, error) {
	p := Params{}
	known := map[string]bool{}
	for _, d := range k.Params {
		known[d.Name] = true
		p[d.Name] = d.Default
	}
	for name, v := range given {
		if !known[name] {
			var names []string
			for _, d := range k.Params {
				names = append(names, d.Name)
			}
			return nil, fmt.Errorf("kernel %s has no parameter %q (parameters: %s)", k.Name, name, strings.Join(names, ", "))
		}
		p[name] = v
	}
	for _, d := range k.Params {
		if d.Check != nil {
			if err := d.Check(p[d.Name], p); err != nil {
				return nil, fmt.Errorf("kernel %s parameter %s=%d: %w", k.Name, d.Name, p[d.Name], err)
			}
		}
	}
	return p, nil
}

// maxOperandBytes bounds the operands of the data-movement and elementwise
// kernels: two of them (an input and an output) fit in a tile's 416 KiB of
// interleaved memory with room to spare, which is also where the bench
// places them.
const maxOperandBytes = 192 << 10

// multipleUpTo checks for a positive multiple of n no larger than max.
func multipleUpTo(n, max int) func(int, Params) error {
	return func(v int, _ Params) error {
		if v <= 0 || v%n != 0 || v > max {
			return fmt.Errorf("must be a positive multiple of %d up to %d", n, max)
		}
		return nil
	}
}
