package learn

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
)

// Options configure Learn.
type Options struct {
	// Assembler is the command template; see SplitCommand.
	Assembler string
	// Dir receives probe.S and probe.o; "" uses a temporary directory that
	// is removed afterwards.
	Dir string
	// Timeout bounds the assembler run (default 10 minutes).
	Timeout time.Duration
}

// Result is what Learn found.
type Result struct {
	Overlay *isa.Overlay
	// Learned is the number of rows in the overlay; Total the table size.
	Learned, Total int
	// Unprobed maps rows that could not be probed to the reason.
	Unprobed map[string]string
}

// UnprobedIDs lists the unprobed rows, sorted.
func (r *Result) UnprobedIDs() []string {
	ids := make([]string, 0, len(r.Unprobed))
	for id := range r.Unprobed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Learn writes the probe, runs the assembler on it, and derives the
// encodings of every probed row of isa.Table. A row whose words do not
// behave as an encoding with plain operand fields (a stored bit that moves
// no bit or several, two operand bits on one instruction bit, an all-ones
// value that is not the union of the single bits, a co-issued word
// without bit 31) is an error naming the row; so is an overlay the table
// check refuses (rows that overlap, public rows that disagree).
func Learn(opts Options) (*Result, error) {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "ipu-isa-learn-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	in, out := filepath.Join(dir, "probe.S"), filepath.Join(dir, "probe.o")
	argv, err := SplitCommand(opts.Assembler, in, out)
	if err != nil {
		return nil, err
	}
	p := NewProbe(isa.Table)
	if err := os.WriteFile(in, p.Source, 0o644); err != nil {
		return nil, err
	}
	_ = os.Remove(out) // a stale object must not pass for the assembler's output
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		msg := stderr.Bytes()
		if len(msg) > 4000 {
			msg = append([]byte("..."), msg[len(msg)-4000:]...)
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %v", timeout)
		}
		return nil, fmt.Errorf("assembler %q on %s: %v\n%s", argv[0], in, err, bytes.TrimSpace(msg))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("assembler %q wrote no object %s: %w", argv[0], out, err)
	}
	obj, err := elf.Parse(out, data)
	if err != nil {
		return nil, err
	}
	ov, err := p.Derive(obj)
	if err != nil {
		return nil, err
	}
	ov.Assembler = opts.Assembler
	return &Result{Overlay: ov, Learned: len(ov.Rows), Total: len(isa.Table), Unprobed: p.Unprobed}, nil
}

// Derive reads each probe instruction from obj and derives the overlay.
func (p *Probe) Derive(obj *elf.Object) (*isa.Overlay, error) {
	syms := map[string]*elf.Symbol{}
	for _, s := range obj.Symbols {
		if s.Section >= 0 {
			if _, dup := syms[s.Name]; !dup {
				syms[s.Name] = s
			}
		}
	}
	words := map[*entry][]uint32{}
	for _, e := range p.entries {
		s := syms[e.label]
		if s == nil {
			return nil, fmt.Errorf("%s: no symbol %s (the probe of %s: %s)", obj.Name, e.label, e.row.ID(), e.text)
		}
		sec := obj.Sections[s.Section]
		if sec.NoBits || int(s.Value)+e.size > len(sec.Data) {
			return nil, fmt.Errorf("%s: %s at 0x%x in %s: fewer than %d bytes of code (the probe of %s: %s)", obj.Name, e.label, s.Value, sec.Name, e.size, e.row.ID(), e.text)
		}
		ws := make([]uint32, e.size/4)
		for i := range ws {
			ws[i] = binary.LittleEndian.Uint32(sec.Data[int(s.Value)+4*i:])
		}
		words[e] = ws
	}
	byRow := map[*isa.Inst][]*entry{}
	for _, e := range p.entries {
		byRow[e.row] = append(byRow[e.row], e)
	}
	base := map[*isa.Inst][]uint32{}
	for _, e := range p.entries {
		if e.kind == kindBase {
			base[e.row] = words[e]
		}
	}
	ov := &isa.Overlay{Schema: isa.OverlaySchema, Version: isa.OverlayVersion}
	var errs []error
	for _, in := range p.rows {
		r, err := p.deriveRow(in, byRow[in], words, base)
		if err != nil {
			errs = append(errs, fmt.Errorf("row %s: %w", in.ID(), err))
			continue
		}
		ov.Rows = append(ov.Rows, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := isa.Validate(ov); err != nil {
		return nil, fmt.Errorf("learned encodings: %w", err)
	}
	return ov, nil
}

func (p *Probe) deriveRow(in *isa.Inst, es []*entry, words map[*entry][]uint32, base map[*isa.Inst][]uint32) (isa.OverlayRow, error) {
	b := base[in]
	r := isa.OverlayRow{ID: in.ID(), Words: in.Words, Operands: []isa.OverlayOperand{}}
	if in.CoIssue && b[0]&isa.CoIssueBit != 0 {
		return r, fmt.Errorf("alone (%s) it encodes 0x%08x, with bit 31 (the co-issue flag) set", es[0].text, b[0])
	}
	type owner struct{ op, bit int }
	claimed := map[int]owner{}
	pos := make([][]int, len(in.Operands)) // per operand, per stored bit
	for j := range in.Operands {
		pos[j] = make([]int, in.Operands[j].Width())
	}
	for _, e := range es {
		ws := words[e]
		switch e.kind {
		case kindBit:
			var changed []int
			for w := range b {
				d := ws[w] ^ b[w]
				for d != 0 {
					k := bits.TrailingZeros32(d)
					changed = append(changed, 32*w+k)
					d &^= 1 << k
				}
			}
			o := &in.Operands[e.op]
			if len(changed) != 1 {
				return r, fmt.Errorf("operand %s stored bit %d (%s): words %s differ from the base %s in %d bits %v, want exactly one (not a plain operand field)",
					o.Name, e.bit, e.text, hexWords(ws), hexWords(b), len(changed), changed)
			}
			q := changed[0]
			if b[q/32]&(1<<(q%32)) != 0 {
				return r, fmt.Errorf("operand %s stored bit %d (%s) clears bit %d of the base %s: a field stored as 0 must encode as 0", o.Name, e.bit, e.text, q, hexWords(b))
			}
			if prev, dup := claimed[q]; dup {
				return r, fmt.Errorf("instruction bit %d holds both operand %s bit %d and operand %s bit %d", q, in.Operands[prev.op].Name, prev.bit, o.Name, e.bit)
			}
			if q == 31 && in.CoIssue {
				return r, fmt.Errorf("operand %s stored bit %d (%s) lands on bit 31, the co-issue flag", o.Name, e.bit, e.text)
			}
			claimed[q] = owner{e.op, e.bit}
			pos[e.op][e.bit] = q
		}
	}
	for _, e := range es {
		ws := words[e]
		switch e.kind {
		case kindAll:
			want := append([]uint32(nil), b...)
			for _, q := range pos[e.op] {
				want[q/32] |= 1 << (q % 32)
			}
			if !slices.Equal(ws, want) {
				return r, fmt.Errorf("operand %s all bits set (%s): words %s, but the single bits give %s (bits move inconsistently)",
					in.Operands[e.op].Name, e.text, hexWords(ws), hexWords(want))
			}
		case kindBundle:
			partner := p.auxPartner
			if in.Pipe == isa.Aux {
				partner = p.mainPartner
			}
			if base[partner] == nil {
				return r, fmt.Errorf("its bundle partner %s was not probed", partner.ID())
			}
			var want []uint32
			if in.Pipe == isa.Aux {
				want = []uint32{base[p.mainPartner][0] | isa.CoIssueBit, b[0]}
			} else {
				want = []uint32{b[0] | isa.CoIssueBit, base[p.auxPartner][0]}
			}
			if !slices.Equal(ws, want) {
				return r, fmt.Errorf("co-issued (%s) it encodes %s, want %s (main first with bit 31 set, then aux)", e.text, hexWords(ws), hexWords(want))
			}
		}
	}
	for w := 1; w < in.Words; w++ {
		fixed := b[w]
		if fixed != 0 {
			return r, fmt.Errorf("inline word %d has fixed bits 0x%08x; ipustack's table has none there", w, fixed)
		}
	}
	r.Match = []string{fmt.Sprintf("0x%08x", b[0])}
	for w := 1; w < in.Words; w++ {
		r.Match = append(r.Match, "0x00000000")
	}
	for j := range in.Operands {
		w := len(pos[j])
		ob := make([]int, w)
		for k := 0; k < w; k++ {
			ob[k] = pos[j][w-1-k] // most significant first
		}
		r.Operands = append(r.Operands, isa.OverlayOperand{Name: in.Operands[j].Name, Bits: ob})
	}
	return r, nil
}

func hexWords(ws []uint32) string {
	var b bytes.Buffer
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%08x", w)
	}
	return b.String()
}
