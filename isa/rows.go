package isa

// Operand constructors keep the table readable. Bit positions are word 0
// unless a constructor says otherwise.

func f(lo, width uint8) Field { return Field{Lo: lo, Width: width} }

// M is a 4-bit $m register at bit lo.
func M(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindMReg, Fields: []Field{f(lo, 4)}}
}

// A is a 4-bit $a register at bit lo.
func A(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindAReg, Fields: []Field{f(lo, 4)}}
}

// U is an unsigned immediate.
func U(name string, lo, width uint8) Operand {
	return Operand{Name: name, Kind: KindImm, Fields: []Field{f(lo, width)}}
}

// S is a signed immediate.
func S(name string, lo, width uint8) Operand {
	return Operand{Name: name, Kind: KindImm, Fields: []Field{f(lo, width)}, Signed: true}
}

// withReloc returns o accepting symbolic values patched by r.
func (o Operand) withReloc(r Reloc) Operand { o.Reloc = r; return o }

func (o Operand) hex() Operand { o.Hex = true; return o }

func ops(o ...Operand) []Operand { return o }

// rows returns the instruction table in assembler preference order.
func rows() []Inst {
	return []Inst{
		{Mnemonic: "setzi", Match: 0x19000000, Operands: ops(M("dst", 20), U("imm", 0, 20).withReloc(Reloc20)),
			Pipe: Main, Ctx: Both, CoIssue: true, Source: SrcLLVM, Doc: "dst = zero-extended 20-bit immediate"},
		{Mnemonic: "br", Match: 0x43000000, Operands: ops(M("target", 20)),
			Pipe: Main, Ctx: Both, CoIssue: true, Control: true, Source: SrcLLVM, Doc: "jump to the address in target"},
		{Mnemonic: "sync", Match: 0x41800000, Operands: ops(U("zone", 0, 4)),
			Pipe: Main, Ctx: Both, Control: true, Source: SrcLLVM, Doc: "wait at the barrier of a sync zone"},
	}
}
