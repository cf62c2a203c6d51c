package asm

import (
	"strings"
	"testing"
)

// The stand-in SDK headers in sdk/include let a codelet written the way
// poplibs writes them assemble: CSR and sync-zone names from
// gc_tile_defines.h, DEF_STACK_USAGE from StackSizeDefs.hpp.
func TestStandInSDKHeaders(t *testing.T) {
	src := `#include "arch/gc_tile_defines.h"
#include "poplar/StackSizeDefs.hpp"
#define OUT m1
.globl vertex
.type vertex, @function
DEF_STACK_USAGE 0 vertex
.section .text.vertex, "ax"
.worker
vertex:
  setzi $OUT, CTXT_WORKERS
  exitz $mzero
.size vertex, .-vertex
`
	obj, err := Assemble("codelet.S", []byte(src), Options{IncludeDirs: []string{"../sdk/include"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range obj.Sections {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); !strings.Contains(got, ".text.vertex") || !strings.Contains(got, ".stack_sizes") {
		t.Fatalf("sections %q, want .text.vertex and .stack_sizes", got)
	}
}

// The SLIC and istacc mode names of the stand-in header are immediates of
// the AMP/SLIC rows (their values are ipustack's; the header says so).
func TestStandInSLICModes(t *testing.T) {
	src := `#include "arch/gc_tile_defines.h"
.section .text.slic, "ax"
.worker
  f16v4hihoslic $a0, $a2:3, $a4, TSLIC_F16V4_1x4_W1
  f16v4istacc $a0:1, $a2:3, $a4:5, TISTACC_P1
  f16v4stacc $a6:7, TSTACC_P1
`
	obj, err := Assemble("slic.S", []byte(src), Options{IncludeDirs: []string{"../sdk/include"}})
	if err != nil {
		t.Fatal(err)
	}
	got := words(findSection(obj, ".text.slic"))
	want := []uint32{enc(t, "f16v4hihoslic", false, 0, 2, 4, 1), enc(t, "f16v4istacc", false, 0, 2, 4, 1), enc(t, "f16v4stacc", false, 6, 1)}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("words %08x, want %08x", got, want)
	}
}
