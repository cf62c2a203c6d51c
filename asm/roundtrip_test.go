package asm

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ipustack/ipustack/isa"
)

// operandSamples returns values for one operand: boundaries and a middle
// value that pass Operand.Check, and for CSRs also every named register.
func operandSamples(o *isa.Operand, ctx isa.Context) []int64 {
	lo, hi := o.Range()
	if o.Kind.IsRegister() {
		// Register fields are at most 4 bits; groups must fit in 16 registers.
		if hi > int64(16-o.Kind.RegCount()) {
			hi = int64(16 - o.Kind.RegCount())
		}
	}
	step := int64(1) << o.Shift
	mid := lo + (hi-lo)/2
	mid -= (mid - o.Offset) % step
	cands := []int64{lo, hi, mid, 0, 1, -1, step, hi - step}
	if o.Kind == isa.KindCSR {
		spaces := []isa.CSRSpace{o.CSR}
		if o.CSR == isa.CSRLower {
			spaces = []isa.CSRSpace{isa.CSRSupervisor, isa.CSRWorker}
		}
		for _, sp := range spaces {
			for _, name := range isa.CSRNames(sp) {
				if v, ok := o.CSRNumber(ctx, name); ok {
					cands = append(cands, v)
				}
			}
		}
	}
	var out []int64
	seen := map[int64]bool{}
	for _, v := range cands {
		if v >= lo && v <= hi && o.Check(v) == nil && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// TestRoundTrip checks, for every row of the instruction table, that the
// disassembler's text assembles back to the same words.
func TestRoundTrip(t *testing.T) {
	instances := 0
	for _, row := range isa.Table {
		samples := make([][]int64, len(row.Operands))
		n := 1
		ictx := isa.Worker
		if row.Ctx == isa.Supervisor {
			ictx = isa.Supervisor
		}
		for i := range row.Operands {
			samples[i] = operandSamples(&row.Operands[i], ictx)
			if len(samples[i]) == 0 {
				t.Errorf("%s: operand %d has no value passing Check", row.ID(), i+1)
				n = 0
				break
			}
			n = max(n, len(samples[i]))
		}
		ctx := ".worker"
		if ictx == isa.Supervisor {
			ctx = ".supervisor"
		}
		encoded := 0
		for k := 0; k < n; k++ {
			vals := make([]int64, len(row.Operands))
			for i := range vals {
				vals[i] = samples[i][k%len(samples[i])]
			}
			words, err := row.Encode(vals, false)
			if err != nil {
				continue // e.g. values that land on a refining row (nop)
			}
			encoded++
			instances++
			d, err := isa.Decode(words)
			if err != nil {
				t.Errorf("%s %v: decode: %v", row.ID(), vals, err)
				continue
			}
			if d.Inst != row {
				t.Errorf("%s %v: words %08x decode as %s", row.ID(), vals, words, d.Inst.ID())
				continue
			}
			text := isa.Format(d)
			src := fmt.Sprintf("%s\n\t%s\n", ctx, text)
			obj, err := Assemble("rt.S", []byte(src), Options{})
			if err != nil {
				t.Errorf("%s %v: %q does not assemble: %v", row.ID(), vals, text, err)
				continue
			}
			data := obj.Sections[0].Data
			got := make([]uint32, len(data)/4)
			for i := range got {
				got[i] = binary.LittleEndian.Uint32(data[4*i:])
			}
			if fmt.Sprint(got) != fmt.Sprint(words) {
				t.Errorf("%s %v: %q assembles to %08x, want %08x", row.ID(), vals, text, got, words)
			}
		}
		if encoded == 0 && n > 0 {
			t.Errorf("%s: no sample operand set encodes", row.ID())
		}
	}
	t.Logf("%d rows, %d instances", len(isa.Table), instances)
}

// TestBundleRoundTrip pairs every co-issuable worker row with the other
// pipe's no-op and checks the bundle's words: main first, with the
// co-issue bit.
func TestBundleRoundTrip(t *testing.T) {
	partner := map[isa.Pipe]*isa.Inst{isa.Main: isa.ByID("fnop"), isa.Aux: isa.ByID("nop")}
	if partner[isa.Main] == nil || partner[isa.Aux] == nil {
		t.Skip("table has no nop / fnop yet")
	}
	n := 0
	for _, row := range isa.Table {
		if !row.CoIssue || row.Ctx&isa.Worker == 0 || row.Words != 1 {
			continue
		}
		vals := make([]int64, len(row.Operands))
		for i := range row.Operands {
			s := operandSamples(&row.Operands[i], isa.Worker)
			vals[i] = s[len(s)-1]
		}
		coissue := row.Pipe == isa.Main
		w, err := row.Encode(vals, coissue)
		if err != nil {
			continue
		}
		d, err := isa.Decode(w)
		if err != nil {
			t.Errorf("%s: %v", row.ID(), err)
			continue
		}
		other := partner[row.Pipe]
		ow, _ := other.Encode(nil, !coissue)
		want := []uint32{w[0], ow[0]}
		if !coissue {
			want = []uint32{ow[0], w[0]}
		}
		// The partner is written first, so both orders are exercised (the
		// assembler emits main first whatever the order).
		src := fmt.Sprintf(".worker\n{ %s ; %s }\n", other.Mnemonic, isa.Format(d))
		obj, err := Assemble("b.S", []byte(src), Options{})
		if err != nil {
			t.Errorf("%s: %v", row.ID(), err)
			continue
		}
		if got := words(obj.Sections[0]); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%q: got %08x, want %08x", src, got, want)
		}
		n++
	}
	t.Logf("%d bundles", n)
}
