package emit

import (
	"testing"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// Two specialisations of one kernel link into one image.
func TestTwoSpecialisationsLink(t *testing.T) {
	a, err := compileKernel(Spec{"gemm_f16", kernels.Params{"k": 32, "c": 16, "r": 12}}, assemble.Cache{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := compileKernel(Spec{"gemm_f16", kernels.Params{"k": 16, "c": 32, "r": 12}}, assemble.Cache{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Entry == b.Entry || a.Entry != "gemm_f16__c16_k32_r12" {
		t.Fatalf("entries %q %q", a.Entry, b.Entry)
	}
	prog := Program{Text: "\t.section .text, \"ax\"\n\t.supervisor\n\t.globl _start\n_start:\n\tcall $m10, " + a.Entry +
		"\n\tcall $m10, " + b.Entry + "\n\tbr $m10\n", Kernels: []string{a.Spec.Key(), b.Spec.Key()}}
	imgs, err := Link([]Program{prog}, map[string]*Compiled{a.Spec.Key(): a, b.Spec.Key(): b})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{a.Entry, b.Entry} {
		if _, ok := imgs[0].Lookup(e); !ok {
			t.Errorf("image lacks %s", e)
		}
	}
	var _ *elf.Image = imgs[0]
}
