package emu

import (
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/elf"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the assumptions table of docs/machine.md")

const (
	docsPath     = "../../docs/machine.md"
	tableBegin   = "<!-- assumptions table: generated from device/emu/assumptions.go by `go test ./device/emu -run TestAssumptionsTable -update-docs` -->\n"
	tableEndMark = "<!-- end of assumptions table -->"
)

// TestAssumptionsTable: docs/machine.md lists exactly the registry.
func TestAssumptionsTable(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i := strings.Index(doc, tableBegin)
	j := strings.Index(doc, tableEndMark)
	if i < 0 || j < i {
		t.Fatalf("%s: no assumptions table markers (%q ... %q)", docsPath, strings.TrimSpace(tableBegin), tableEndMark)
	}
	want := AssumptionsTable()
	if got := doc[i+len(tableBegin) : j]; got != want {
		if *updateDocs {
			doc = doc[:i+len(tableBegin)] + want + doc[j:]
			if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("%s: the assumptions table differs from the registry; run with -update-docs\ngot:\n%s\nwant:\n%s", docsPath, got, want)
	}
}

func TestAssumptionSetSpelling(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range Assumptions() {
		if a.Name == "" || a.Rule == "" || a.Evidence == "" || a.Conservative == "" {
			t.Errorf("assumption %q: every field must be filled", a.Name)
		}
		if seen[a.Name] {
			t.Errorf("assumption %q listed twice", a.Name)
		}
		seen[a.Name] = true
	}
	for _, tc := range []struct {
		s    AssumptionSet
		text string
	}{
		{DefaultAssumptions, "amp-state-retained"},
		{ConservativeAssumptions, "conservative"},
	} {
		if got := tc.s.String(); got != tc.text {
			t.Errorf("%#x spelled %q, want %q", uint32(tc.s), got, tc.text)
		}
		back, err := ParseAssumptions(tc.text)
		if err != nil || back != tc.s {
			t.Errorf("ParseAssumptions(%q) = %#x, %v", tc.text, uint32(back), err)
		}
	}
	for _, bad := range []string{"", "amp-state", "worker-slot", "amp-state-retained,bogus"} {
		if _, err := ParseAssumptions(bad); err == nil {
			t.Errorf("ParseAssumptions(%q) accepted", bad)
		}
	}
	if NewTile(0).Assumptions() != DefaultAssumptions {
		t.Error("a new tile does not run with the default assumptions")
	}
}

// loadAsm assembles and links src (entry _start) onto a fresh tile.
func loadAsm(t *testing.T, src string) (*Tile, *elf.Image) {
	t.Helper()
	obj, err := asm.Assemble("test.S", []byte(src), asm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := elf.Link([]*elf.Object{obj}, elf.LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl := NewTile(0)
	for _, s := range img.Segments {
		if err := tl.Write(s.Addr, s.Data); err != nil {
			t.Fatal(err)
		}
	}
	tl.Start(img.Entry)
	return tl, img
}

// cweiSrc: the supervisor starts two workers that issue AMP instructions
// in a loop and, without waiting for them, reloads $CWEI. (With six
// running the supervisor would get no issue slot until they exit.)
const cweiSrc = `
	.supervisor
	.section .text._start, "ax"
	.globl _start
_start:
	setzi $m0, work
	setzi $m1, 0x90000
	put $CCCSLOAD, $m1
	setzi $m3, 0x90000 - 0x4C000 // run adds TMEM_REGION0_BASE_ADDR
	run $m0, $m3, 0
	run $m0, $m3, 0
	.globl reload
reload:
	ld128putcs 0
	sync 2
	sync 3

	.worker
	.section .text.work, "ax"
	.p2align 3
work:
	{ setzi $m0, 200 ; fnop }
1:
	{ add $m0, $m0, -1 ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 0 }
	{ brnz $m0, 1b ; fnop }
	{ exitz $mzero ; fnop }
`

// TestCWEIRewriteFaults: $CWEI written while workers run AMP is a fault
// (always, not an assumption) naming the tile, the PC and the instruction.
func TestCWEIRewriteFaults(t *testing.T) {
	for _, set := range []AssumptionSet{DefaultAssumptions, ConservativeAssumptions} {
		tl, img := loadAsm(t, cweiSrc)
		tl.SetAssumptions(set)
		res, err := tl.Run(1 << 20)
		var f *Fault
		if !errors.As(err, &f) || res.Reason != StopFault {
			t.Fatalf("%s: want a fault, got %v, %v", set, res, err)
		}
		reload, _ := img.Lookup("reload")
		if f.Kind != FaultWeights || f.Tile != 0 || f.Context != "supervisor" || f.PC != reload.Addr || f.Disasm != "ld128putcs 0" {
			t.Fatalf("%s: fault %+v, want a weight-state fault of the supervisor at 0x%x (ld128putcs 0)", set, f, reload.Addr)
		}
		msg := f.Error()
		t.Log(msg)
		for _, part := range []string{"tile 0 supervisor", "ld128putcs 0", "$CWEI", "workers 0, 1 run"} {
			if !strings.Contains(msg, part) {
				t.Errorf("%s: fault %q does not say %q", set, msg, part)
			}
		}
	}
	// Waiting for the workers first is fine.
	tl, _ := loadAsm(t, strings.Replace(cweiSrc, "reload:\n\tld128putcs 0\n\tsync 2", "reload:\n\tsync 2\n\tld128putcs 0", 1))
	if res, err := tl.Run(1 << 20); err != nil || res.Reason != StopSync || res.Zone != 3 {
		t.Fatalf("reload after sync 2: %v, %v", res, err)
	}
}

// ampStateSrc: worker run 1 feeds one row (phases 0..3) of ones through
// weights all 1.0; run 2 drains it with zero inputs.
// Under amp-state-retained run 2 reads the finished sums (4.0 each); under
// the conservative set the exit cleared them (0).
const ampStateSrc = `
	.supervisor
	.section .text._start, "ax"
	.globl _start
_start:
	setzi $m1, 0x90000
	put $CCCSLOAD, $m1
	setzi $m3, 0x90000 - 0x4C000 // run adds TMEM_REGION0_BASE_ADDR
	ld128putcs 0
	ld128putcs 2
	ld128putcs 4
	ld128putcs 6
	ld128putcs 8
	ld128putcs 10
	ld128putcs 12
	ld128putcs 14
	ld128putcs 16
	ld128putcs 18
	ld128putcs 20
	ld128putcs 22
	ld128putcs 24
	ld128putcs 26
	ld128putcs 28
	ld128putcs 30
	ld128putcs 32
	ld128putcs 34
	ld128putcs 36
	ld128putcs 38
	ld128putcs 40
	ld128putcs 42
	ld128putcs 44
	ld128putcs 46
	ld128putcs 48
	ld128putcs 50
	ld128putcs 52
	ld128putcs 54
	ld128putcs 56
	ld128putcs 58
	ld128putcs 60
	ld128putcs 62
	setzi $m0, feed
	run $m0, $m3, 0
	sync 2
	setzi $m0, drain
	run $m0, $m3, 0
	sync 2
	sync 3

	.worker
	.section .text.work, "ax"
	.p2align 3
feed:
	{ setzi $m0, 0 ; setzi $a0, 0x3C00 }	// f16 1.0 in the low lane
	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 0 }
	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 1 }
	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 2 }
	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 3 }
	{ exitz $mzero ; fnop }
drain:
	{ nop ; f16v4hihov4amp $a4:5, $azeros, $azeros, 0 }
	{ nop ; fnop }
	{ exitz $mzero ; fnop }
`

// TestConservativeClearsAMPState: the conservative alternative of
// amp-state-retained zeroes a worker's accumulators when it exits.
func TestConservativeClearsAMPState(t *testing.T) {
	for _, tc := range []struct {
		set  AssumptionSet
		want uint32 // the four drained f16 outputs 0..3, as the low word holds two
	}{
		{DefaultAssumptions, 0x44004400}, // 4.0, 4.0: each output adds 1.0 x 1.0 in each of four phases
		{ConservativeAssumptions, 0},     // cleared at the exit
	} {
		tl, _ := loadAsm(t, ampStateSrc)
		// Every weight 1.0 (f16 0x3C00).
		w := make([]uint32, 256)
		for i := range w {
			w[i] = 0x3C003C00
		}
		if err := tl.WriteWords(0x90000, w); err != nil {
			t.Fatal(err)
		}
		tl.SetAssumptions(tc.set)
		if res, err := tl.Run(1 << 20); err != nil || res.Reason != StopSync || res.Zone != 3 {
			t.Fatalf("%s: %v, %v", tc.set, res, err)
		}
		if got := tl.Workers[0].A[4]; got != tc.want {
			t.Errorf("%s: drained outputs 0, 1 = %08x, want %08x", tc.set, got, tc.want)
		}
	}
}

// TestConservativeClearAfterBundle: an AMP instruction co-issued with the
// exit completes before the conservative clear: it drains row A's sums.
func TestConservativeClearAfterBundle(t *testing.T) {
	src := strings.Replace(ampStateSrc, `	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 3 }
	{ exitz $mzero ; fnop }`, `	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 3 }
	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 0 }
	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 1 }
	{ nop ; f16v4hihov4amp $a4:5, $a0:1, $azeros, 2 }
	{ exitz $mzero ; f16v4hihov4amp $a6:7, $a0:1, $azeros, 3 }`, 1)
	if src == ampStateSrc {
		t.Fatal("BUG: test source not rewritten")
	}
	tl, _ := loadAsm(t, src)
	w := make([]uint32, 256)
	for i := range w {
		w[i] = 0x3C003C00
	}
	if err := tl.WriteWords(0x90000, w); err != nil {
		t.Fatal(err)
	}
	tl.SetAssumptions(ConservativeAssumptions)
	if res, err := tl.Run(1 << 20); err != nil || res.Reason != StopSync {
		t.Fatalf("%v, %v", res, err)
	}
	if got := tl.Workers[0].A[6]; got != 0x44004400 {
		t.Errorf("AMP co-issued with exitz drained %08x, want 44004400 (row A's sums, before the clear)", got)
	}
}

// FuzzParseAssumptions: any text either fails or round-trips through String.
func FuzzParseAssumptions(f *testing.F) {
	for _, s := range []string{"", "conservative", "amp-state-retained", "amp-state-retained,amp-state-retained", "worker-slot", ","} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseAssumptions(text)
		if err != nil {
			return
		}
		back, err := ParseAssumptions(s.String())
		if err != nil || back != s {
			t.Fatalf("%q -> %#x -> %q -> %#x, %v", text, uint32(s), s.String(), uint32(back), err)
		}
	})
}
