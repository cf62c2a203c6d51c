package emit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// Spec is one kernel specialisation.
type Spec struct {
	Kernel string
	Params kernels.Params
}

// specFrom is the specialisation a typed kernel spec calls.
func specFrom(s kernels.Spec) Spec { return Spec{s.Name(), s.Params()} }

// Key is "name k=.. c=..".
func (s Spec) Key() string { return s.Kernel + " " + s.Params.String() }

// Symbol is the specialisation's entry symbol in linked images: the
// kernel's entry with the parameters appended, so that several
// specialisations of one kernel link into one tile image.
func (s Spec) Symbol(k *kernels.Kernel) string {
	var b strings.Builder
	b.WriteString(k.Entry)
	b.WriteString("__")
	keys := make([]string, 0, len(s.Params))
	for n := range s.Params {
		keys = append(keys, n)
	}
	sort.Strings(keys)
	for i, n := range keys {
		if i > 0 {
			b.WriteString("_")
		}
		fmt.Fprintf(&b, "%s%d", n, s.Params[n])
	}
	return b.String()
}

// Compiled is a built specialisation with its globals renamed.
type Compiled struct {
	Spec   Spec
	Entry  string
	Object *elf.Object
	Cached bool
	Key    string
}

// compileKernel builds s through the cache and renames every global the
// object defines (suffix "__params"), consistently in its relocations.
func compileKernel(s Spec, cache assemble.Cache) (*Compiled, error) {
	k, err := kernels.Lookup(s.Kernel)
	if err != nil {
		return nil, err
	}
	b, err := assemble.Build(k, s.Params, cache)
	if err != nil {
		return nil, err
	}
	sym := s.Symbol(k)
	suffix := strings.TrimPrefix(sym, k.Entry)
	obj := renameGlobals(b.Object, suffix)
	obj.Name = sym + ".o"
	return &Compiled{Spec: s, Entry: sym, Object: obj, Cached: b.Cached, Key: b.Key}, nil
}

// renameGlobals returns a copy of o whose defined global and weak symbols
// carry suffix, with the relocations naming them renamed too.
func renameGlobals(o *elf.Object, suffix string) *elf.Object {
	ren := map[string]string{}
	n := &elf.Object{Name: o.Name}
	for _, s := range o.Symbols {
		c := *s
		if s.Bind != elf.Local && s.Section != elf.Undefined {
			c.Name = s.Name + suffix
			ren[s.Name] = c.Name
		}
		n.Symbols = append(n.Symbols, &c)
	}
	for _, s := range o.Sections {
		c := *s
		c.Relocs = make([]elf.Reloc, len(s.Relocs))
		for i, r := range s.Relocs {
			if to, ok := ren[r.Symbol]; ok {
				r.Symbol = to
			}
			c.Relocs[i] = r
		}
		n.Sections = append(n.Sections, &c)
	}
	return n
}
