package asm

import (
	"reflect"
	"testing"

	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
)

// LLVM Colossus symbol variants on data (the facts of the public MC test
// symbol-variants.s: which suffix gives which relocation, at which
// offset, with which addend), in a source of our own.
func TestSymbolVariants(t *testing.T) {
	obj := mustAssemble(t, `
	.section .data.v, "aw"
	.globl here
here:
	.short (there + 4)@relative@16@s2
	.long (there + 4)@abs18@s2
	.long (there + 8)@abs19@s2
	.long (here + 4)@abs19@s2
	.long 0x4c010@abs19@s2
`, Options{})
	s := findSection(obj, ".data.v")
	want := []elf.Reloc{
		{Offset: 0, Type: isa.RelocRelative16S2, Symbol: "there", Addend: 4},
		{Offset: 2, Type: isa.Reloc18S2, Symbol: "there", Addend: 4},
		{Offset: 6, Type: isa.Reloc19S2, Symbol: "there", Addend: 8},
		{Offset: 10, Type: isa.Reloc19S2, Symbol: "here", Addend: 4},
	}
	if !reflect.DeepEqual(s.Relocs, want) {
		t.Errorf("relocs\n got %+v\nwant %+v", s.Relocs, want)
	}
	// A constant under a variant is patched as the linker would: 0x4c010>>2.
	if got := uint32(s.Data[14]) | uint32(s.Data[15])<<8 | uint32(s.Data[16])<<16 | uint32(s.Data[17])<<24; got != 0x4c010>>2 {
		t.Errorf("constant @abs19@s2 = 0x%x, want 0x%x", got, 0x4c010>>2)
	}
	for _, c := range []struct{ src, want string }{
		{".long x@abs20", "t.S:1:8: .long: unknown symbol variant @abs20 (known: @abs18@s2, @abs19@s2, @relative@16@s2)"},
		{".short x@abs18@s2", "t.S:1:9: .short: @abs18@s2 is R_COLOSSUS_18_S2, which patches 4 bytes, not 2"},
		{".long 6@abs19@s2", "t.S:1:7: R_COLOSSUS_19_S2: value 0x6 is not aligned to 4 bytes"},
	} {
		if _, err := Assemble("t.S", []byte(c.src), Options{}); err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}

// `$`-prefixed symbols defined by .set (the facts of the public MC test
// symbols-with-dollar-prefix.s), and the names they may not take.
func TestDollarSymbols(t *testing.T) {
	sameWords(t, "dollar set", `.set $limit, 50
	$base = 0x40
	get $m1, $limit
	setzi $m2, $base + $limit
	get $m3, $PC`, `get $m1, 50
	setzi $m2, 0x72
	get $m3, 0`)
	for _, c := range []struct{ src, want string }{
		{".set $m1, 5", "t.S:1:6: .set: $m1 is a register, not a symbol name"},
		{".set $WSR, 5", "t.S:1:6: .set: $WSR is a control register, not a symbol name"},
		{"get $m1, $later\n.set $later, 2", "t.S:1:10: get: unknown register or control register $later"},
	} {
		if _, err := Assemble("t.S", []byte(c.src), Options{}); err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}
