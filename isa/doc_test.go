package isa

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated sections of docs/isa.md")

const (
	docPath  = "../docs/isa.md"
	docBegin = "<!-- BEGIN GENERATED: go test ./isa -run TestDocTable -update -->"
	docEnd   = "<!-- END GENERATED -->"
)

// TestDocTable keeps the per-instruction section of docs/isa.md equal to the
// table: it fails when the doc is stale, and -update rewrites it.
func TestDocTable(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: generated-section markers missing", docPath)
	}
	want := doc[:i] + docBegin + "\n" + docTable() + docEnd + doc[j+len(docEnd):]
	if want == doc {
		return
	}
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: run go test ./isa -run TestDocTable -update", docPath)
}

func docTable() string {
	var b strings.Builder
	count := map[Source]int{}
	for _, in := range Table {
		count[in.Source]++
	}
	fmt.Fprintf(&b, "\n%d rows: %d %s (LLVM Colossus fork), %d %s (ipu-stack exchange reference), %d %s (a public disassembly listing), %d %s (ours).\n\n",
		len(Table), count[SrcLLVM], SrcLLVM, count[SrcExchange], SrcExchange, count[SrcListing], SrcListing, count[SrcOurs], SrcOurs)
	b.WriteString("| row | syntax | match | operand fields (word 0 unless `w1`) | source | pipe, context | co-issue | cycles | semantics |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, in := range Table {
		co := "no"
		if in.CoIssue {
			co = "yes"
		}
		ctl := ""
		if in.Control {
			ctl = " (control)"
		}
		fmt.Fprintf(&b, "| `%s` | `%s` | `%08X`/`%08X` | %s | %s | %s, %s%s | %s | %d | %s |\n",
			in.ID(), syntax(in), in.Match, in.Mask(), fieldText(in), in.Source, in.Pipe, in.Ctx, ctl, co, in.Cycles,
			strings.ReplaceAll(docEscape(in.Doc), "; see docs/isa.md", " (below)"))
	}
	b.WriteString("\n### CSR names\n\n| space | name = number |\n|---|---|\n")
	for _, sp := range []CSRSpace{CSRSupervisor, CSRWorker, CSRUpper} {
		var parts []string
		for _, n := range CSRNames(sp) {
			v, _ := CSRByNameIn(sp, 0, n)
			parts = append(parts, fmt.Sprintf("`$%s`=0x%X", n, v))
		}
		fmt.Fprintf(&b, "| %s | %s |\n", sp, strings.Join(parts, ", "))
	}
	b.WriteString("\n")
	return b.String()
}

func docEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func syntax(in *Inst) string {
	var ops []string
	for _, o := range in.Operands {
		switch o.Kind {
		case KindImm:
			ops = append(ops, o.Name)
		case KindCSR:
			ops = append(ops, "$"+strings.ToUpper(o.Name))
		default:
			ops = append(ops, "$"+o.Kind.String()+":"+o.Name)
		}
	}
	if len(ops) == 0 {
		return in.Mnemonic
	}
	return in.Mnemonic + " " + strings.Join(ops, ", ")
}

func fieldText(in *Inst) string {
	var parts []string
	for _, o := range in.Operands {
		var fs []string
		for _, x := range o.Fields {
			w := ""
			if x.Word == 1 {
				w = "w1 "
			}
			fs = append(fs, fmt.Sprintf("%s%d..%d", w, x.Lo+x.Width-1, x.Lo))
		}
		s := o.Name + "[" + strings.Join(fs, ",") + "]"
		var notes []string
		if o.Signed {
			notes = append(notes, "signed")
		}
		if o.Shift > 0 {
			if o.Kind.IsRegister() {
				notes = append(notes, fmt.Sprintf("first reg, multiple of %d", 1<<o.Shift))
			} else {
				notes = append(notes, fmt.Sprintf(">>%d", o.Shift))
			}
		}
		if o.Offset != 0 {
			notes = append(notes, fmt.Sprintf("stored value-%#x", o.Offset))
		}
		if o.Reloc != RelocNone {
			notes = append(notes, o.Reloc.String())
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, " ")
}
