package learn

import (
	"fmt"
	"strings"

	"github.com/ipustack/ipustack/isa"
)

// Probe kinds.
const (
	kindBase   = iota // every operand's stored field 0
	kindBit           // one operand's stored bit set, the others 0
	kindAll           // one operand's stored bits all set
	kindBundle        // the base instruction co-issued with a partner
)

// entry is one probe instruction (or bundle).
type entry struct {
	label string
	row   *isa.Inst
	kind  int
	op    int // operand index (kindBit, kindAll)
	bit   int // stored bit (kindBit)
	vals  []int64
	text  string
	size  int // bytes to read back
}

// Probe is the probe source and where each instruction sits.
type Probe struct {
	Source []byte
	// Unprobed maps the ID of a row that cannot be probed to the reason.
	Unprobed map[string]string
	entries  []*entry
	rows     []*isa.Inst // rows probed, table order
	// partner rows of bundles: the aux row bundled with main rows and the
	// main row bundled with aux rows (nil when the table has none).
	auxPartner, mainPartner *isa.Inst
}

// stored returns operand values with every stored field 0 except operand
// op, which stores s.
func baseVals(in *isa.Inst, op int, s uint64) []int64 {
	vals := make([]int64, len(in.Operands))
	for i := range in.Operands {
		o := &in.Operands[i]
		if i == op {
			vals[i] = o.ValueOf(s)
		} else {
			vals[i] = o.ValueOf(0)
		}
	}
	return vals
}

// NewProbe builds the probe for rows (normally isa.Table). Supervisor rows
// (and rows both contexts run) go in a .supervisor section, worker-only
// rows and every bundle in a .worker section; each probe instruction is
// 8-byte aligned under its own label probe_N, so the reader finds it by
// symbol whatever padding the assembler inserts.
func NewProbe(rows []*isa.Inst) *Probe {
	p := &Probe{Unprobed: map[string]string{}}
	for _, in := range rows {
		if len(in.Operands) == 0 && in.CoIssue && in.Ctx&isa.Worker != 0 {
			if in.Pipe == isa.Aux && p.auxPartner == nil {
				p.auxPartner = in
			}
			if in.Pipe == isa.Main && p.mainPartner == nil {
				p.mainPartner = in
			}
		}
	}
	var sup, wrk []*entry
	n := 0
	add := func(list *[]*entry, e *entry) {
		e.label = fmt.Sprintf("probe_%d", n)
		n++
		*list = append(*list, e)
	}
	for _, in := range rows {
		ctx := isa.Supervisor
		list := &sup
		if in.Ctx&isa.Supervisor == 0 {
			ctx, list = isa.Worker, &wrk
		}
		var es []*entry
		mk := func(kind, op, bit int, vals []int64) error {
			if _, err := in.Encode(vals, false); err != nil {
				return err
			}
			es = append(es, &entry{row: in, kind: kind, op: op, bit: bit, vals: vals, size: in.Size(),
				text: isa.Format(isa.Decoded{Inst: in, Values: vals, Ctx: ctx})})
			return nil
		}
		why := ""
		if err := mk(kindBase, -1, -1, baseVals(in, -1, 0)); err != nil {
			why = "the base values (every field 0) do not encode: " + err.Error()
		}
		for j := range in.Operands {
			if why != "" {
				break
			}
			o := &in.Operands[j]
			w := o.Width()
			for b := 0; b < w && why == ""; b++ {
				vals := baseVals(in, j, 1<<b)
				if err := mk(kindBit, j, b, vals); err != nil {
					why = fmt.Sprintf("operand %s with only stored bit %d set (value %d) does not encode: %v", o.Name, b, vals[j], err)
				}
			}
			if why == "" && w > 1 {
				vals := baseVals(in, j, 1<<w-1)
				if err := mk(kindAll, j, -1, vals); err != nil {
					why = fmt.Sprintf("operand %s with every stored bit set (value %d) does not encode: %v", o.Name, vals[j], err)
				}
			}
		}
		if why != "" {
			p.Unprobed[in.ID()] = why
			continue
		}
		for _, e := range es {
			add(list, e)
		}
		p.rows = append(p.rows, in)
		if in.CoIssue && in.Ctx&isa.Worker != 0 && in.Words == 1 {
			partner := p.auxPartner
			if in.Pipe == isa.Aux {
				partner = p.mainPartner
			}
			if partner != nil && partner != in {
				base := es[0]
				pt := isa.Format(isa.Decoded{Inst: partner, Values: nil, Ctx: isa.Worker})
				txt := "{ " + isa.Format(isa.Decoded{Inst: in, Values: base.vals, Ctx: isa.Worker}) + " ; " + pt + " }"
				if in.Pipe == isa.Aux {
					txt = "{ " + pt + " ; " + isa.Format(isa.Decoded{Inst: in, Values: base.vals, Ctx: isa.Worker}) + " }"
				}
				add(&wrk, &entry{row: in, kind: kindBundle, vals: base.vals, text: txt, size: 8})
			}
		}
	}
	var b strings.Builder
	b.WriteString("// ipustack ISA probe (ipu isa learn): every table row with each operand\n")
	b.WriteString("// field stored as 0, as each single bit, and as all ones; one probe per label.\n")
	emit := func(sec, mode string, list []*entry) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(&b, "\t.section %s, \"ax\"\n\t%s\n", sec, mode)
		for _, e := range list {
			fmt.Fprintf(&b, "\t.p2align 3\n%s:\n\t%s\n", e.label, e.text)
		}
	}
	emit(".text.probe_supervisor", ".supervisor", sup)
	emit(".text.probe_worker", ".worker", wrk)
	p.entries = append(sup, wrk...)
	p.Source = []byte(b.String())
	return p
}
