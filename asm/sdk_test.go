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
