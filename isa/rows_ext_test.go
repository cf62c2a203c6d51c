package isa

import (
	"fmt"
	"testing"
)

// extVectors are words of the rows added in rows_ext.go whose encodings
// are public: each was assembled by hand from the fixed bits and operand
// fields of the row's class in the LLVM Colossus fork's generated TableGen
// (ColossusInstrInfoCommonGenerated.td), e.g. inst_popc_mmmn: bits 30..24
// 0100010, 14..12 011, op0 at 7..4, op1 at 23..20.
var extVectors = []struct {
	words []uint32
	text  string
}{
	{[]uint32{0x42600050}, "bitrev8 $m5, $m6"},
	{[]uint32{0x42301020}, "cms $m2, $m3"},
	{[]uint32{0x42402030}, "clz $m3, $m4"},
	{[]uint32{0x42203010}, "popc $m1, $m2"},
	{[]uint32{0x42204010}, "sort8 $m1, $m2"},
	{[]uint32{0x42205010}, "swap8 $m1, $m2"},
	{[]uint32{0x42107000}, "abs $m0, $m1"},
	{[]uint32{0xC2107000}, "abs $m0, $m1"}, // co-issue bit
	{[]uint32{0x44203312}, "roll16 $m1, $m2, $m3"},
	{[]uint32{0x44203313}, "roll8l $m1, $m2, $m3"},
	{[]uint32{0x44203410}, "roll8r $m1, $m2, $m3"},
	{[]uint32{0x44203413}, "shrs $m1, $m2, $m3"},
	{[]uint32{0x4221E005}, "shrs $m1, $m2, 5"},
	{[]uint32{0x44203510}, "shuf8x8hi $m1, $m2, $m3"},
	{[]uint32{0x44203511}, "shuf8x8lo $m1, $m2, $m3"},
	{[]uint32{0x44203610}, "sort8x8hi $m1, $m2, $m3"},
	{[]uint32{0x44203611}, "sort8x8lo $m1, $m2, $m3"},
	{[]uint32{0x44506740}, "xnor $m4, $m5, $m6"},
	{[]uint32{0x47231A00}, "movz $m1, $m2, $m3"},
	{[]uint32{0x47312900}, "stm32step $m1, $m2+=, $m3"},
	{[]uint32{0x06213004}, "ldz16 $m1, $m2, $m3, 4"},
	{[]uint32{0x4D243114}, "ldz16 $m1, $m2, $m3, $m4"},
	{[]uint32{0x04213FFF}, "lds16 $m1, $m2, $m3, 4095"},
	{[]uint32{0x4D243110}, "lds16 $m1, $m2, $m3, $m4"},
	{[]uint32{0x07F12003}, "ldz8 $m1, $mzero, $m2, 3"},
	{[]uint32{0x4D243115}, "ldz8 $m1, $m2, $m3, $m4"},
	{[]uint32{0x05F12003}, "lds8 $m1, $mzero, $m2, 3"},
	{[]uint32{0x4D243111}, "lds8 $m1, $m2, $m3, $m4"},
	{[]uint32{0x1C213601}, "ldz16step $m1, $m2, $m3+=, 1"},
	{[]uint32{0x47243610}, "ldz16step $m1, $m2, $m3+=, $m4"},
	{[]uint32{0x1C2137FE}, "ldz8step $m1, $m2, $m3+=, -2"},
	{[]uint32{0x47243710}, "ldz8step $m1, $m2, $m3+=, $m4"},
	{[]uint32{0x1C213480}, "lds16step $m1, $m2, $m3+=, -128"},
	{[]uint32{0x47243410}, "lds16step $m1, $m2, $m3+=, $m4"},
	{[]uint32{0x1C21357F}, "lds8step $m1, $m2, $m3+=, 127"},
	{[]uint32{0x47243510}, "lds8step $m1, $m2, $m3+=, $m4"},
}

func TestExtPublicVectors(t *testing.T) {
	for _, v := range extVectors {
		d, err := Decode(v.words)
		if err != nil {
			t.Errorf("%08x: %v", v.words, err)
			continue
		}
		if d.Inst.Source != SrcLLVM {
			t.Errorf("%08x: row %s has source %s, want %s", v.words, d.Inst.ID(), d.Inst.Source, SrcLLVM)
		}
		if got := Format(d); got != v.text {
			t.Errorf("%08x: got %q, want %q", v.words, got, v.text)
		}
		w, err := assemble(0, v.text, d.CoIssue)
		if err != nil || fmt.Sprint(w) != fmt.Sprint(v.words) {
			t.Errorf("%q: assembled %08x, %v; want %08x", v.text, w, err, v.words)
		}
	}
}

// hoverMnemonics is every instruction of the public IPU21 ISA hover text
// (graphcore/ipu_assembly_support, isa_doc_generated/hover: one file per
// mnemonic), by name.
var hoverMnemonics = []string{
	"abs", "add", "and", "and64", "andc", "andc64", "atom", "bitrev8", "br", "bri", "brneg", "brnz", "brnzdec", "brpos", "brz",
	"call", "clz", "cmpeq", "cmpne", "cmpslt", "cmpult", "cms", "exitneg", "exitnz", "exitpos", "exitz",
	"f16tof32", "f16v2absadd", "f16v2absmax", "f16v2add", "f16v2clamp", "f16v2class", "f16v2cmac", "f16v2cmpeq", "f16v2cmpge",
	"f16v2cmpgt", "f16v2cmple", "f16v2cmplt", "f16v2cmpne", "f16v2exp", "f16v2exp2", "f16v2gina", "f16v2grand", "f16v2ln",
	"f16v2log2", "f16v2max", "f16v2maxc", "f16v2min", "f16v2mul", "f16v2sigm", "f16v2sub", "f16v2sufromui", "f16v2sum",
	"f16v2tanh", "f16v2tof32", "f16v4absacc", "f16v4absadd", "f16v4absmax", "f16v4acc", "f16v4add", "f16v4clamp", "f16v4class",
	"f16v4cmac", "f16v4cmpeq", "f16v4cmpge", "f16v4cmpgt", "f16v4cmple", "f16v4cmplt", "f16v4cmpne", "f16v4gacc",
	"f16v4hihoamp", "f16v4hihoslic", "f16v4istacc", "f16v4max", "f16v4maxc", "f16v4min", "f16v4mix", "f16v4mul", "f16v4rmask",
	"f16v4sihoamp", "f16v4sihoslic", "f16v4sisoamp", "f16v4sisoslic", "f16v4stacc", "f16v4sub", "f16v4sufromui", "f16v4sum",
	"f16v8absacc", "f16v8acc", "f16v8sqacc", "f32absadd", "f32absmax", "f32add", "f32clamp", "f32class", "f32cmpeq", "f32cmpge",
	"f32cmpgt", "f32cmple", "f32cmplt", "f32cmpne", "f32div", "f32exp", "f32exp2", "f32fromi32", "f32fromui32", "f32int", "f32ln",
	"f32log2", "f32mac", "f32max", "f32min", "f32mul", "f32oorx", "f32oox", "f32sigm", "f32sisoamp", "f32sisoslic", "f32sqrt",
	"f32sub", "f32sufromui", "f32tanh", "f32tof16", "f32toi32", "f32toui32", "f32v2absadd", "f32v2absmax", "f32v2add", "f32v2aop",
	"f32v2axpy", "f32v2clamp", "f32v2class", "f32v2cmpeq", "f32v2cmpge", "f32v2cmpgt", "f32v2cmple", "f32v2cmplt", "f32v2cmpne",
	"f32v2gina", "f32v2grand", "f32v2mac", "f32v2max", "f32v2min", "f32v2mul", "f32v2rmask", "f32v2sub", "f32v2sufromui",
	"f32v2tof16", "f32v4absacc", "f32v4acc", "f32v4sqacc", "f32v4tof16", "get", "ld128", "ld128putcs", "ld128step", "ld2x64pace",
	"ld2xst64pace", "ld32", "ld32step", "ld64", "ld64a32", "ld64a32pace", "ld64b16pace", "ld64putcs", "ld64step", "ldb16",
	"ldb16b16", "ldb16step", "ldd16a32", "ldd16a64", "ldd16b16", "ldd16v2a32", "lds16", "lds16step", "lds8", "lds8step", "ldst64pace",
	"ldz16", "ldz16step", "ldz8", "ldz8step", "max", "min", "movz", "mul", "not", "not64", "or", "or64", "popc", "put", "roll16",
	"roll32", "roll8l", "roll8r", "rpt", "run", "runall", "setzi", "shl", "shr", "shrs", "shuf8x8hi", "shuf8x8lo", "sort4x16hi",
	"sort4x16lo", "sort4x32hi", "sort4x32lo", "sort8", "sort8x8hi", "sort8x8lo", "st32", "st32step", "st64", "st64pace", "st64step",
	"stm32", "stm32step", "sub", "swap8", "tapack", "trap", "uget", "uput", "urand32", "urand64", "xnor", "xor",
}

// hoverMissing are the hover mnemonics the table does not have yet, and
// why (docs/isa.md "New mnemonics"; none today). The test fails when one
// appears, so the list stays true.
var hoverMissing = map[string]string{}

func TestHoverMnemonicsCovered(t *testing.T) {
	for _, mn := range hoverMnemonics {
		_, missing := hoverMissing[mn]
		switch has := ByMnemonic(mn) != nil; {
		case !has && !missing:
			t.Errorf("%s: in the public ISA text but not in the table", mn)
		case has && missing:
			t.Errorf("%s: now in the table; drop it from hoverMissing", mn)
		}
	}
}

// Rows of ipustack's own encoding stay inside its block (bits 30..28 =
// 101), where no public encoding lies.
func TestOwnRowsInOwnBlock(t *testing.T) {
	for _, in := range Table {
		if in.Source == SrcOurs && in.Match>>28&7 != 5 {
			t.Errorf("%s: ipustack encoding 0x%08x outside the 0x50..0x5F block", in.ID(), in.Match)
		}
	}
}
