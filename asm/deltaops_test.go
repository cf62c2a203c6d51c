package asm

import "testing"

// The operand forms of the hover text's delta loads: `$mN++` (a pointer
// post-incremented by the access), `$mN@` (a delta register the load also
// writes), `$mN>>` (a mini-delta shifted after use) and the quad's upper
// three registers `$aN+1:N+3`, each as written in poplibs (popsparse
// SparseGatherElementWise.S) and the hover syntax lines.
func TestDeltaOperandForms(t *testing.T) {
	got := assembleWords(t, `.worker
	ldd16a32 $a0, $m1++, $m2, $m3@
	ldd16a64 $a4:5, $m1 ++, $m2, $m3 @
	ldd16b16 $a7, $mzero++, $m2, $m3@
	ldd16v2a32 $a1, $m8++, $m9, $m10@
	ld64a32 $a5:7, $m1++, $m2, $m3
	ldb16b16 $a2:3, $m2, $m4++, $m5>>
`)
	want := []uint32{
		enc(t, "ldd16a32", false, 0, 1, 2, 3),
		enc(t, "ldd16a64", false, 4, 1, 2, 3),
		enc(t, "ldd16b16", false, 7, 15, 2, 3),
		enc(t, "ldd16v2a32", false, 1, 8, 9, 10),
		enc(t, "ld64a32", false, 5, 1, 2, 3),
		enc(t, "ldb16b16", false, 2, 2, 4, 5),
	}
	if len(got) != len(want) {
		t.Fatalf("%08x, want %08x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("word %d: %08x, want %08x", i, got[i], want[i])
		}
	}
	if want[0] != 0x55201e30 || want[4] != 0x55241630 {
		t.Errorf("ldd16a32 %08x, ld64a32 %08x: the documented words changed (docs/isa.md)", want[0], want[4])
	}
}

func TestDeltaOperandErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{".worker\nldd16a32 $a0, $a1++, $m2, $m3@", "t.S:2:15: ldd16a32: $a1++: only a single $m register takes the ++ suffix"},
		{".worker\nldd16a32 $a0, $m0:1@, $m2, $m3@", "t.S:2:15: ldd16a32: $m0:1@: only a single $m register takes the @ suffix"},
		{".worker\nldd16a32 $a0, $m1, $m2, $m3@", "t.S:2:15: ldd16a32: operand 2: expected a post-incremented pointer register ($mN++), found $m1"},
		{".worker\nldd16a32 $a0, $m1++, $m2, $m3", "t.S:2:27: ldd16a32: operand 4: expected a delta register ($mN@), found $m3"},
		{".worker\nld64a32 $a4:6, $m1++, $m2, $m3", "t.S:2:9: ld64a32: $a4:6 is not a register, register pair or quad the machine has"},
		{".worker\nldb16b16 $a2:3, $m2, $m4++, $m5", "t.S:2:29: ldb16b16: operand 4: expected a mini-delta register ($mN>>), found $m5"},
		{".worker\nadd $m1++, $m2, $m3", "t.S:2:5: add: operand 1: expected an $m register, found $m1++"},
	} {
		_, err := Assemble("t.S", []byte(c.src), Options{})
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.src, err, c.want)
		}
	}
}

// Which suffix each operand takes, as the public LLVM Colossus MC test
// post_modify_asm_operand.s states it: the right one assembles, a missing,
// wrong or stray one is an error.
func TestPostModifySuffixes(t *testing.T) {
	for _, src := range []string{
		"ldd16b16 $a0, $m0++, $m0, $m1@",
		"ldb16b16 $a0:1, $m0, $m0++, $m0>>",
		"ldd16v2a32 $a0, $m0++, $m0, $m0@",
		"ld2x64pace $a0:1, $a2:3, $m0:1+=, $m15, 0x00",
		"ld32step $a0, $mzero, $m0+=, 1",
	} {
		if _, err := Assemble("t.S", []byte(".worker\n"+src), Options{}); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	for _, src := range []string{
		"ldd16b16 $a0, $m0, $m0, $m0", "ldb16b16 $a0:1, $m0, $m0, $m0", "ldd16v2a32 $a0, $m0, $m0, $m0",
		"ld2x64pace $a0:1, $a2:3, $m0:1, $m15, 0",
		"setzi $m0++, 1", "setzi $m0+=, 1", "setzi $m0@, 1", "setzi $m0>>, 1",
		"ld32step $a0, $mzero, $m0++, 1", "ld32step $a0, $mzero, $m0>>, 1", "ld32step $a0, $mzero, $m0@, 1",
		"ldd16b16 $a0, $m0+=, $m0, $m1@", "ldd16b16 $a0, $m0>>, $m0, $m1@", "ldd16b16 $a0, $m0@, $m0, $m1@",
		"ldb16b16 $a0:1, $m0, $m0++, $m0++", "ldb16b16 $a0:1, $m0, $m0++, $m0+=", "ldb16b16 $a0:1, $m0, $m0++, $m0@",
		"ldd16v2a32 $a0, $m0++, $m0, $m0++", "ldd16v2a32 $a0, $m0++, $m0, $m0+=", "ldd16v2a32 $a0, $m0++, $m0, $m0>>",
		"setzi $m0?, 1", "setzi $m0<<, 1", "setzi $m0>=, 1",
	} {
		if _, err := Assemble("t.S", []byte(".worker\n"+src), Options{}); err == nil {
			t.Errorf("%q: assembled, want an error", src)
		}
	}
}
