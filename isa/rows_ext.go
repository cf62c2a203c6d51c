package isa

// The instructions of the public IPU21 ISA documentation (Graphcore's ISA
// hover text, graphcore/ipu_assembly_support isa_doc_generated/hover) that
// the original table lacked. build appends these rows after rows(), so the
// original rows keep their indexes and their assembler preference.
//
// Sources: the integer and memory rows that the LLVM Colossus fork's
// generated TableGen (ColossusInstrInfoCommonGenerated.td, Sanae6 fork)
// encodes are reproduced bit for bit (SrcLLVM); everything else is
// encoded in ipustack's own block (SrcOurs; docs/isa.md "New mnemonics").
// Rows whose result the public text does not define still assemble and
// disassemble; the emulator faults with "not emulated: MNEMONIC" when it
// executes them (device/emu, exec_ext_*.go).

// llvmUnary: public FSXD rows (0x42000000, sub-opcode in bits 14..12):
// dst 7..4, source 23..20.
func llvmUnary(mn string, sub uint32, doc string) Inst {
	return mainAny(mn, "", 0x42000000|sub<<12, ops(M("dst", 4), M("a", 20)), doc)
}

// llvmLoadImm: public FMDMI3 loads: top byte, base 23..20, dst 19..16,
// delta 15..12, unsigned offset 11..0 in access-size units.
func llvmLoadImm(mn string, top uint32, doc string) Inst {
	return mainAny(mn, "", top<<24, ops(M("dst", 16), M("base", 20), M("delta", 12), U("off", 0, 12)), doc)
}

// llvmLoadReg: public FM3D loads (0x4D000000 | sub): base 23..20, off
// 19..16, delta 15..12, dst 7..4.
func llvmLoadReg(mn string, sub uint32, doc string) Inst {
	return mainAny(mn, "r", 0x4D000000|sub, ops(M("dst", 4), M("base", 20), M("delta", 12), M("off", 16)), doc)
}

// llvmStepReg / llvmStepImm: public FM2PD (0x47000000) and FMDPI2
// (0x1C000000) post-incrementing loads, sub-opcode in bits 10..8.
func llvmStepReg(mn string, sub uint32, doc string) Inst {
	return mainAny(mn, "", 0x47000000|sub<<8, ops(M("dst", 4), M("base", 20), MInc("ptr", 12), M("step", 16)), doc)
}

func llvmStepImm(mn string, sub uint32, doc string) Inst {
	return mainAny(mn, "si", 0x1C000000|sub<<8, ops(M("dst", 16), M("base", 20), MInc("ptr", 12), S("step", 0, 8)), doc)
}

// auxSrc2: aux rows with two sources and no register destination (the
// result goes to accumulator state): 0x58000000 | sub, 23..20 zero,
// sources at 19..16 and 15..12.
func auxSrc2(mn string, sub uint32, a, b func(string, uint8) Operand, doc string) Inst {
	return waux(mn, "", 0x58000000|sub, ops(a("a", 16), b("b", 12)), doc)
}

// auxSrc1 / auxDst1: one-operand aux rows in the 0x59 group, the operand
// a source at 19..16 (23..20 zero) or a destination at 23..20 (19..16
// zero).
func auxSrc1(mn string, sub uint32, a func(string, uint8) Operand, doc string) Inst {
	return waux(mn, "", 0x59000000|sub, ops(a("a", 16)), doc)
}

func auxDst1(mn string, sub uint32, d func(string, uint8) Operand, doc string) Inst {
	return waux(mn, "", 0x59000000|sub, ops(d("dst", 20)), doc)
}

// ampRow: the AMP/SLIC group (0x5A, sub-opcode 7..0): dst 23..20, input
// 19..16, partials 15..12, a 4-bit flags immediate at 11..8.
func ampRow(mn string, sub uint32, d, x, p func(string, uint8) Operand, doc string) Inst {
	return waux(mn, "", 0x5A000000|sub, ops(d("dst", 20), x("x", 16), p("p", 12), U("flags", 8, 4)), doc)
}

const (
	ne  = " Not emulated: the public text does not define the result" // suffix of rows the emulator refuses
	acc = " Not emulated: the public text does not define the accumulator ($AACC) layout and propagation"
)

func extRows() []Inst {
	return []Inst{
		// ---- Integer (MRF), public: LLVM Colossus CommonGenerated.td ----
		llvmUnary("bitrev8", 0, "dst = a with the bit order reversed inside each byte"),
		llvmUnary("cms", 1, "dst = the number of high-order bits below bit 31 that equal bit 31 (0..31)"),
		llvmUnary("clz", 2, "dst = the number of leading zero bits of a (32 for 0)"),
		llvmUnary("popc", 3, "dst = the number of set bits of a"),
		llvmUnary("sort8", 4, "SIMD sort8 permutation of the 4 bytes of a."+ne),
		llvmUnary("swap8", 5, "SIMD swap permutation of the 4 bytes of a."+ne),
		llvmUnary("abs", 7, "dst = |a| (signed; 0x80000000 stays 0x80000000)"),
		rrr("roll16", 0x302, "dst = a.hi | b.lo << 16 (the middle word of the 16-bit roll of b:a; see docs/isa.md)"),
		rrr("roll8l", 0x303, "SIMD roll-left of the 8 bytes of b:a."+ne),
		rrr("roll8r", 0x400, "SIMD roll-right of the 8 bytes of b:a."+ne),
		rrr("shrs", 0x403, "dst = a >> b, arithmetic (counts >= 32 give the sign)"),
		ri12("shrs", "zi", 6, U("imm", 0, 12), "dst = a >> imm, arithmetic (counts >= 32 give the sign)"),
		rrr("shuf8x8hi", 0x500, "upper word of the SIMD shuffle of the 8 bytes of a, b."+ne),
		rrr("shuf8x8lo", 0x501, "lower word of the SIMD shuffle of the 8 bytes of a, b."+ne),
		rrr("sort8x8hi", 0x600, "upper word of the SIMD sort of the 8 bytes of a, b."+ne),
		rrr("sort8x8lo", 0x601, "lower word of the SIMD sort of the 8 bytes of a, b."+ne),
		rrr("xnor", 0x700, "dst = ^(a ^ b)"),
		mainAny("movz", "", 0x47000A00, ops(M("srcdst", 12), M("a", 20), M("b", 16)),
			"conditional copy of a register into srcdst, gated on a third."+ne+" (which operand gates)"),
		mainAny("stm32step", "", 0x47000900, ops(M("src", 16), MInc("base", 12), M("stride", 20)),
			"mem32[base] = src; base += 4*stride (signed)"),

		// ---- Narrow loads (MRF), public ----
		llvmLoadImm("lds16", 0x04, "dst = sign-extended mem16[base + delta + 2*off]"),
		llvmLoadReg("lds16", 0x100, "dst = sign-extended mem16[base + delta + 2*off]"),
		llvmLoadImm("lds8", 0x05, "dst = sign-extended mem8[base + delta + off]"),
		llvmLoadReg("lds8", 0x101, "dst = sign-extended mem8[base + delta + off]"),
		llvmLoadImm("ldz16", 0x06, "dst = zero-extended mem16[base + delta + 2*off]"),
		llvmLoadReg("ldz16", 0x104, "dst = zero-extended mem16[base + delta + 2*off]"),
		llvmLoadImm("ldz8", 0x07, "dst = zero-extended mem8[base + delta + off]"),
		llvmLoadReg("ldz8", 0x105, "dst = zero-extended mem8[base + delta + off]"),
		llvmStepReg("lds16step", 4, "dst = sign-extended mem16[base + ptr]; ptr += 2*step"),
		llvmStepImm("lds16step", 4, "dst = sign-extended mem16[base + ptr]; ptr += 2*step"),
		llvmStepReg("lds8step", 5, "dst = sign-extended mem8[base + ptr]; ptr += step"),
		llvmStepImm("lds8step", 5, "dst = sign-extended mem8[base + ptr]; ptr += step"),
		llvmStepReg("ldz16step", 6, "dst = zero-extended mem16[base + ptr]; ptr += 2*step"),
		llvmStepImm("ldz16step", 6, "dst = zero-extended mem16[base + ptr]; ptr += 2*step"),
		llvmStepReg("ldz8step", 7, "dst = zero-extended mem8[base + ptr]; ptr += step"),
		llvmStepImm("ldz8step", 7, "dst = zero-extended mem8[base + ptr]; ptr += step"),

		// ---- Worker main pipe, ipustack encodings ----
		memImm("ldb16", "", 0x5F, A("dst", 16), 1, "dst = mem16[base + delta + 2*off] broadcast to both halves"),
		wmain("ldb16", "r", 0x57700000, ops(A("dst", 16), M("base", 12), M("delta", 8), M("off", 4)),
			"dst = mem16[base + delta + 2*off] broadcast to both halves"),
		// Register-offset forms of the worker loads and stores (poplibs
		// writes `ld64 $a0:1, $mzero, $ptr, $delta`), laid out as ldb16.r.
		wmain("ld32", "ar", 0x57B00000, ops(A("dst", 16), M("base", 12), M("delta", 8), M("off", 4)),
			"dst = mem32[base + delta + 4*off]"),
		wmain("st32", "ar", 0x57C00000, ops(A("src", 16), M("base", 12), M("delta", 8), M("off", 4)),
			"mem32[base + delta + 4*off] = src"),
		wmain("ld64", "r", 0x57D00000, ops(AP("dst", 16), M("base", 12), M("delta", 8), M("off", 4)),
			"dst = mem64[base + delta + 8*off]"),
		wmain("st64", "r", 0x57E00000, ops(AP("src", 16), M("base", 12), M("delta", 8), M("off", 4)),
			"mem64[base + delta + 8*off] = src"),
		wmain("ld128", "r", 0x57F00000, ops(AQ("dst", 16), M("base", 12), M("delta", 8), M("off", 4)),
			"dst = mem128[base + delta + 16*off] (interleaved memory only)"),
		memStep("ldb16step", "", 4, A("dst", 16), 1, "dst = mem16[base + ptr] broadcast; ptr += 2*step"),
		wmain("ldb16step", "r", 0x55000800, ops(A("dst", 16), M("base", 20), MInc("ptr", 12), M("stride", 4)),
			"dst = mem16[base + ptr] broadcast; ptr += 2*stride"),
		memStep("ld128step", "", 5, AQ("dst", 16), 4, "dst = mem128[base + ptr] (interleaved memory); ptr += 16*step"),
		wmain("ld128step", "r", 0x55000900, ops(AQ("dst", 16), M("base", 20), MInc("ptr", 12), M("stride", 4)),
			"dst = mem128[base + ptr] (interleaved memory); ptr += 16*stride"),
		// atom (public mnemonic and operands, hover text; encoding ours:
		// the LLVM fork's encoding is not on this machine) and movnz (the
		// mnemonic poplibs uses, `movnz $value, $ifVal, $trueVal`; its
		// operand order mirrors the public movz).
		wmain("atom", "", 0x57800000, ops(M("dst", 16), A("a", 12)),
			"dst = a: copy an $a register to an $m register, no format conversion"),
		wmain("movnz", "", 0x57200000, ops(M("srcdst", 16), M("cond", 12), M("src", 8)),
			"if cond != 0 then srcdst = src (else srcdst keeps its value)"),
		control(wmain("exitneg", "", 0x57500000, ops(M("cond", 16)), "the worker exits with Boolean status cond < 0 (signed)")),
		control(wmain("exitpos", "", 0x57600000, ops(M("cond", 16)), "the worker exits with Boolean status cond > 0 (signed)")),
		// Delta loads (hover text; ours, 0x55 sub 6, 7 and 0xE with the
		// selector at 3..0): base 23..20, data 19..16, pointer or packed
		// deltas 15..12, delta or mini-delta 7..4.
		wmain("ld64a32", "", 0x55000600, ops(ATri("dst", 16), MPost("addr", 12), M("base", 20), M("delta", 4)),
			"dst[1:2] = mem64[addr], dst[0] = mem32[base + delta[15:0]] (the quad's first register unchanged); addr += 8"),
		wmain("ldb16b16", "", 0x55000700, ops(AP("dst", 16), M("base", 20), MPost("deltas", 12), MShr("minid", 4)),
			"dst = mem16[base + deltas[15:0]], mem16[base + deltas[31:16]] each broadcast; the two deltas post-incremented, one by 2, one by minid[3:0]; minid >>= 4."+
				ne+" (which delta takes 2 and which the mini-delta, and the mini-delta's unit)"),
		wmain("ldd16a32", "", 0x55000E00, ops(A("dst", 16), MPost("addr", 12), M("base", 20), MDelta("delta", 4)),
			"dst = mem32[base + delta]; delta = zero-extended mem16[addr]; addr += 2"),
		wmain("ldd16a64", "", 0x55000E01, ops(AP("dst", 16), MPost("addr", 12), M("base", 20), MDelta("delta", 4)),
			"dst = mem64[base + delta]; delta = zero-extended mem16[addr]; addr += 2"),
		wmain("ldd16b16", "", 0x55000E02, ops(A("dst", 16), MPost("addr", 12), M("base", 20), MDelta("delta", 4)),
			"dst = mem16[base + delta] broadcast to both halves; delta = zero-extended mem16[addr]; addr += 2"),
		wmain("ldd16v2a32", "", 0x55000E03, ops(A("dst", 16), MPost("addr", 12), M("base", 20), MDelta("delta", 4)),
			"dst = mem32[base + delta[31:16]]; delta = mem32[addr] (the next pair of 16-bit deltas); addr += 4"),
		wmain("ld64a32pace", "", 0x57900000, ops(AP("dst0", 16), A("dst1", 12), MPInc("addrs", 8), M("stride", 4), U("incs", 0, 4)),
			"64-bit load from the pair's low address, 32-bit load from its high address, both post-incremented per incs."+ne+" (increment encoding)"),
		wmain("ld64b16pace", "", 0x57A00000, ops(AP("dst0", 16), A("dst1", 12), MPInc("addrs", 8), M("stride", 4), U("incs", 0, 4)),
			"64-bit load and broadcast 16-bit load from the pair's two addresses, post-incremented per incs."+ne+" (increment encoding)"),

		// ---- Worker aux pipe: f16/f32 arithmetic, ipustack encodings (0x58 group) ----
		aux3("f16v2sub", "", 0x20, A, A, A, "two f16 lanes: dst = a - b"),
		aux3("f16v4sub", "", 0x21, AP, AP, AP, "four f16 lanes: dst = a - b"),
		aux3("f32v2sub", "", 0x22, AP, AP, AP, "two f32 lanes: dst = a - b"),
		aux3("f16v2max", "", 0x23, A, A, A, "two f16 lanes: dst = max(a, b) (a NaN operand gives the other)"),
		aux3("f16v2min", "", 0x24, A, A, A, "two f16 lanes: dst = min(a, b) (a NaN operand gives the other)"),
		aux3("f16v4max", "", 0x25, AP, AP, AP, "four f16 lanes: dst = max(a, b)"),
		aux3("f16v4min", "", 0x26, AP, AP, AP, "four f16 lanes: dst = min(a, b)"),
		aux3("f32min", "", 0x27, A, A, A, "f32: dst = min(a, b) (a NaN operand gives the other)"),
		aux3("f32v2min", "", 0x28, AP, AP, AP, "two f32 lanes: dst = min(a, b)"),
		aux3("f16v2absadd", "", 0x29, A, A, A, "two f16 lanes: dst = |a| + |b|"),
		aux3("f16v4absadd", "", 0x2A, AP, AP, AP, "four f16 lanes: dst = |a| + |b|"),
		aux3("f32absadd", "", 0x2B, A, A, A, "f32: dst = |a| + |b|"),
		aux3("f32v2absadd", "", 0x2C, AP, AP, AP, "two f32 lanes: dst = |a| + |b|"),
		aux3("f16v2absmax", "", 0x2D, A, A, A, "two f16 lanes: dst = max(|a|, |b|)"),
		aux3("f16v4absmax", "", 0x2E, AP, AP, AP, "four f16 lanes: dst = max(|a|, |b|)"),
		aux3("f32absmax", "", 0x2F, A, A, A, "f32: dst = max(|a|, |b|)"),
		aux3("f32v2absmax", "", 0x30, AP, AP, AP, "two f32 lanes: dst = max(|a|, |b|)"),
		aux3("f16v2clamp", "", 0x31, A, A, A, "two f16 lanes: dst = min(max(a, b.lo), b.hi)"),
		aux3("f16v4clamp", "", 0x32, AP, AP, A, "four f16 lanes: dst = min(max(a, b.lo), b.hi)"),
		aux3("f32clamp", "", 0x33, A, A, AP, "f32: dst = min(max(a, b[0]), b[1])"),
		aux3("f32v2clamp", "", 0x34, AP, AP, AP, "two f32 lanes: dst = min(max(a, b[0]), b[1])"),
		aux3("f32div", "", 0x35, A, A, A, "f32: dst = a / b (IEEE division, round to nearest even)"),
		aux3("and64", "", 0x36, AP, AP, AP, "dst = a & b (64-bit)"),
		aux3("andc64", "", 0x37, AP, AP, AP, "dst = a & ^b (64-bit)"),
		aux3("or64", "", 0x38, AP, AP, AP, "dst = a | b (64-bit)"),
		aux3("roll16", "a", 0x39, A, A, A, "dst = a.hi | b.lo << 16 ($a registers; as roll16)"),
		aux3("roll32", "", 0x3A, AP, AP, AP, "dst = (a[1], b[0]) (the 32-bit analogue of roll16)"),
		aux3("sort4x32lo", "", 0x3B, AP, AP, AP, "dst = (a[0], b[0]) (the 32-bit analogue of sort4x16lo)"),
		aux3("sort4x32hi", "", 0x3C, AP, AP, AP, "dst = (a[1], b[1]) (the 32-bit analogue of sort4x16hi)"),
		aux3("f16v4mix", "", 0x3D, AP, AP, AP, "four f16 lanes: the mix accumulators = $TAS.lo*a + $TAS.hi*b (kept in f32); dst = their previous values as f16 (docs/isa.md, MIX)"),
		aux3("f16v4rmask", "", 0x3E, AP, AP, A, "four f16 lanes masked at random with probability b[15:0]/65536."+ne+" (the PRNG draw)"),
		aux3("f32v2rmask", "", 0x3F, AP, AP, A, "two f32 lanes masked at random with probability b[15:0]/65536."+ne+" (the PRNG draw)"),
		aux3("f16v2cmpeq", "", 0x40, A, A, A, "two f16 lanes: dst = 0xFFFF where a == b, else 0"),
		aux3("f16v2cmpge", "", 0x41, A, A, A, "two f16 lanes: dst = 0xFFFF where a >= b, else 0"),
		aux3("f16v2cmpgt", "", 0x42, A, A, A, "two f16 lanes: dst = 0xFFFF where a > b, else 0"),
		aux3("f16v2cmple", "", 0x43, A, A, A, "two f16 lanes: dst = 0xFFFF where a <= b, else 0"),
		aux3("f16v2cmplt", "", 0x44, A, A, A, "two f16 lanes: dst = 0xFFFF where a < b, else 0"),
		aux3("f16v2cmpne", "", 0x45, A, A, A, "two f16 lanes: dst = 0xFFFF where a != b, else 0"),
		aux3("f16v4cmpeq", "", 0x48, AP, AP, AP, "four f16 lanes: dst = 0xFFFF where a == b, else 0"),
		aux3("f16v4cmpge", "", 0x49, AP, AP, AP, "four f16 lanes: dst = 0xFFFF where a >= b, else 0"),
		aux3("f16v4cmpgt", "", 0x4A, AP, AP, AP, "four f16 lanes: dst = 0xFFFF where a > b, else 0"),
		aux3("f16v4cmple", "", 0x4B, AP, AP, AP, "four f16 lanes: dst = 0xFFFF where a <= b, else 0"),
		aux3("f16v4cmplt", "", 0x4C, AP, AP, AP, "four f16 lanes: dst = 0xFFFF where a < b, else 0"),
		aux3("f16v4cmpne", "", 0x4D, AP, AP, AP, "four f16 lanes: dst = 0xFFFF where a != b, else 0"),
		aux3("f32cmpeq", "", 0x50, A, A, A, "f32: dst = 0xFFFFFFFF if a == b, else 0"),
		aux3("f32cmpge", "", 0x51, A, A, A, "f32: dst = 0xFFFFFFFF if a >= b, else 0"),
		aux3("f32cmpgt", "", 0x52, A, A, A, "f32: dst = 0xFFFFFFFF if a > b, else 0"),
		aux3("f32cmple", "", 0x53, A, A, A, "f32: dst = 0xFFFFFFFF if a <= b, else 0"),
		aux3("f32cmplt", "", 0x54, A, A, A, "f32: dst = 0xFFFFFFFF if a < b, else 0"),
		aux3("f32cmpne", "", 0x55, A, A, A, "f32: dst = 0xFFFFFFFF if a != b, else 0"),
		aux3("f32v2cmpeq", "", 0x58, AP, AP, AP, "two f32 lanes: dst = 0xFFFFFFFF where a == b, else 0"),
		aux3("f32v2cmpge", "", 0x59, AP, AP, AP, "two f32 lanes: dst = 0xFFFFFFFF where a >= b, else 0"),
		aux3("f32v2cmpgt", "", 0x5A, AP, AP, AP, "two f32 lanes: dst = 0xFFFFFFFF where a > b, else 0"),
		aux3("f32v2cmple", "", 0x5B, AP, AP, AP, "two f32 lanes: dst = 0xFFFFFFFF where a <= b, else 0"),
		aux3("f32v2cmplt", "", 0x5C, AP, AP, AP, "two f32 lanes: dst = 0xFFFFFFFF where a < b, else 0"),
		aux3("f32v2cmpne", "", 0x5D, AP, AP, AP, "two f32 lanes: dst = 0xFFFFFFFF where a != b, else 0"),
		auxSrc2("f16v2cmac", 0x60, A, A, "f16 lanes of a*b summed laterally and accumulated in f32."+acc),
		auxSrc2("f16v4cmac", 0x61, AP, AP, "f16 lanes of a*b, 2x2 lateral sums accumulated in f32."+acc),
		auxSrc2("f32mac", 0x62, A, A, "f32 a*b accumulated."+acc),
		auxSrc2("f32v2mac", 0x63, AP, AP, "two f32 lanes of a*b accumulated."+acc),

		// ---- Worker aux pipe: unary and conversions (0x59 group) ----
		aux2("f16v2class", "", 0x20, A, A, "IEEE 754-2008 5.7.2 class of each f16 lane."+ne+" (the class codes)"),
		aux2("f32class", "", 0x21, A, A, "IEEE 754-2008 5.7.2 class of a."+ne+" (the class codes)"),
		aux2("f16v4class", "", 0x22, A, AP, "IEEE 754-2008 5.7.2 class of each f16 lane."+ne+" (the class codes)"),
		aux2("f32v2class", "", 0x23, A, AP, "IEEE 754-2008 5.7.2 class of each f32 lane."+ne+" (the class codes)"),
		aux2("f16v2exp2", "", 0x24, A, A, "two f16 lanes: dst = 2^a (see docs/isa.md)"),
		aux2("f16v2ln", "", 0x25, A, A, "two f16 lanes: dst = ln(a) (see docs/isa.md)"),
		aux2("f16v2log2", "", 0x26, A, A, "two f16 lanes: dst = log2(a) (see docs/isa.md)"),
		aux2("f16v2sigm", "", 0x27, A, A, "two f16 lanes: dst = 1/(1+e^-a) (see docs/isa.md)"),
		aux2("f32exp2", "", 0x28, A, A, "f32: dst = 2^a (see docs/isa.md)"),
		aux2("f32ln", "", 0x29, A, A, "f32: dst = ln(a) (see docs/isa.md)"),
		aux2("f32log2", "", 0x2A, A, A, "f32: dst = log2(a) (see docs/isa.md)"),
		aux2("f32sigm", "", 0x2B, A, A, "f32: dst = 1/(1+e^-a) (see docs/isa.md)"),
		aux2("f32tanh", "", 0x2C, A, A, "f32: dst = tanh(a) (see docs/isa.md)"),
		aux2("f32oorx", "", 0x2D, A, A, "f32: dst = 1/sqrt(a) (see docs/isa.md)"),
		aux2("f32sqrt", "", 0x2E, A, A, "f32: dst = sqrt(a), correctly rounded"),
		aux2("f32fromi32", "", 0x2F, A, A, "dst = the signed integer a as f32, round to nearest even"),
		aux2("f32fromui32", "", 0x30, A, A, "dst = the unsigned integer a as f32, round to nearest even"),
		aux2("f32toi32", "", 0x31, A, A, "dst = a as a signed integer, rounding per $FP_CTL.RND."+ne+" (RND encoding, out-of-range results)"),
		aux2("f32toui32", "", 0x32, A, A, "dst = a as an unsigned integer, rounding per $FP_CTL.RND."+ne+" (RND encoding, out-of-range results)"),
		aux2("f32sufromui", "", 0x33, A, A, "symmetric unbiased conversion of an unsigned integer to f32 in [-1/2, 1/2]."+ne+" (the mapping)"),
		aux2("f16v2sufromui", "", 0x34, A, A, "symmetric unbiased conversion of two u16 to f16 in [-1/2, 1/2]."+ne+" (the mapping)"),
		aux2("f16v4sufromui", "", 0x35, AP, AP, "symmetric unbiased conversion of four u16 to f16 in [-1/2, 1/2]."+ne+" (the mapping)"),
		aux2("f32v2sufromui", "", 0x36, AP, AP, "symmetric unbiased conversion of two u32 to f32 in [-1/2, 1/2]."+ne+" (the mapping)"),
		aux2("f16v2sum", "", 0x37, A, A, "dst = f32(a.lo + a.hi), rounded once to f32"),
		aux2("f16v4sum", "", 0x38, AP, AP, "dst = (f32(a0 + a1), f32(a2 + a3)) over the four f16 lanes of a, each rounded once"),
		aux2("f16v2maxc", "", 0x39, A, A, "lateral maximum of the two f16 lanes of a."+ne+" (which half of dst)"),
		aux2("f16v4maxc", "", 0x3A, A, AP, "dst = (max(a0, a1), max(a2, a3)) over the four f16 lanes of a"),
		aux2("not64", "", 0x3B, AP, AP, "dst = ^a (64-bit)"),
		aux2("f32v4tof16", "", 0x3C, AP, AQ, "dst = the four f32 of a rounded to f16 (lane i from register i)"),
		waux("f32int", "", 0x5900003D, ops(A("dst", 20), A("a", 16), U("rnd", 8, 4)),
			"a rounded to an integral f32 as the immediate says."+ne+" (the rounding-mode encoding)"),
		auxSrc1("f16v4acc", 0x40, AP, "four f16 lanes accumulated in f32."+acc),
		auxSrc1("f16v8acc", 0x41, AQ, "eight f16 lanes accumulated in f32."+acc),
		auxSrc1("f32v4acc", 0x42, AQ, "four f32 lanes accumulated in f32."+acc),
		auxSrc1("f16v4absacc", 0x43, AP, "absolute values of four f16 lanes accumulated in f32."+acc),
		auxSrc1("f16v8absacc", 0x44, AQ, "absolute values of eight f16 lanes accumulated in f32."+acc),
		auxSrc1("f32v4absacc", 0x45, AQ, "absolute values of four f32 lanes accumulated."+acc),
		auxSrc1("f16v8sqacc", 0x46, AQ, "squares of eight f16 lanes accumulated in f32."+acc),
		auxSrc1("f32v4sqacc", 0x47, AQ, "squares of four f32 lanes accumulated."+acc),
		auxDst1("f16v2grand", 0x50, A, "two Gaussian f16 random values."+ne+" (the distribution's generator)"),
		auxDst1("f32v2grand", 0x51, AP, "two Gaussian f32 random values."+ne+" (the distribution's generator)"),
		auxDst1("urand32", 0x52, A, "dst = the low 32 bits of the next 64-bit draw of the worker's generator (as urand64)"),
		auxDst1("f16v4gacc", 0x53, AP, "read the four mix accumulators (those f16v4mix writes) as f16 (docs/isa.md, MIX)"),

		// ---- Worker aux pipe: accumulator and AMP/SLIC variants (0x5A, 0x5C groups) ----
		ampRow("f16v4hihoamp", 0x10, A, AP, A, "AMP f16 in, f16 partials in and out (8x1x1x16 sequence)."+acc),
		ampRow("f16v4hihoslic", 0x11, A, AP, A, "SLIC f16 in, f16 partials."+acc),
		ampRow("f16v4sihoamp", 0x12, A, AP, AP, "AMP f16 in, f32 partials in, f16 out."+acc),
		ampRow("f16v4sihoslic", 0x13, A, AP, AP, "SLIC f16 in, f32 partials in, f16 out."+acc),
		ampRow("f16v4sisoslic", 0x14, AP, AP, AP, "SLIC f16 in, f32 partials in and out."+acc),
		ampRow("f32sisoamp", 0x15, AP, A, AP, "AMP f32 in, f32 partials in and out."+acc),
		ampRow("f32sisoslic", 0x16, AP, A, AP, "SLIC f32 in, f32 partials in and out."+acc),
		ampRow("f16v4istacc", 0x17, AP, AP, AP, "permute a:b through the accumulators; dst = 64 bits of accumulator state."+acc),
		waux("f16v4stacc", "", 0x5A000018, ops(AP("dst", 20), U("flags", 8, 4)), "dst = 64 bits of accumulator state, propagated per flags."+acc),
		waux("f32v2aop", "", 0x5A000019, ops(AP("a", 16), AP("b", 12), U("flags", 8, 4)), "outer product of two f32 pairs accumulated."+acc),
		// The zero-extended imm12 forms of the $a logic ops (hover text
		// `or $aDst0, $aSrc0, zimm12`, `and $aDst0, $aSrc0, zimm12`).
		waux("or", "azi", 0x5C004000, ops(A("dst", 20), A("a", 16), U("imm", 0, 12)), "dst = a | zero-extended imm12 ($a registers)"),
		waux("and", "azi", 0x5C005000, ops(A("dst", 20), A("a", 16), U("imm", 0, 12)), "dst = a & zero-extended imm12 ($a registers)"),
		waux("f16v2gina", "", 0x5C002000, ops(A("dst", 20), A("a", 16), U("imm", 0, 12)),
			"read two accumulators as f16, write a (widened) to two, selected by imm."+acc),
		waux("f32v2gina", "", 0x5C003000, ops(AP("dst", 20), AP("a", 16), U("imm", 0, 12)),
			"read two accumulators as f32, write a to two, selected by imm."+acc),
	}
}

// bcastRows: the broadcast-source forms of the hover text's f16v2/f16v4
// subtraction and compares (`f16v4cmpgt $aDst0:Dst0+1, $aSrc0:BL,
// $aSrc1:Src1+1`) and the f32v2 ones (`$aSrc0:B`), which the original
// table gave only for add and mul (rows.go, 0x58 sub 0xE0..0xE9). Ours:
// 0x58 sub-opcodes 0x70..0x92, in the order generated here.
func bcastRows() []Inst {
	ops := []struct{ name, doc string }{
		{"sub", "a - b"}, {"cmpeq", "a == b"}, {"cmpge", "a >= b"}, {"cmpgt", "a > b"},
		{"cmple", "a <= b"}, {"cmplt", "a < b"}, {"cmpne", "a != b"},
	}
	what := func(op, doc string, all bool) string {
		if op == "sub" {
			return "dst = " + doc
		}
		if all {
			return "dst = all ones where " + doc + ", else 0"
		}
		return "dst = 0xFFFF where " + doc + ", else 0"
	}
	var out []Inst
	sub := uint32(0x70)
	for _, o := range ops {
		for _, f := range []struct {
			pre   string
			reg   func(string, uint8) Operand
			lanes string
		}{{"f16v2", A, "two"}, {"f16v4", AP, "four"}} {
			out = append(out,
				aux3(f.pre+o.name, "bl", sub, f.reg, ABc(KindABcastLo), f.reg,
					f.lanes+" f16 lanes, a the low f16 of its register in every lane: "+what(o.name, o.doc, false)),
				aux3(f.pre+o.name, "bu", sub+1, f.reg, ABc(KindABcastHi), f.reg,
					f.lanes+" f16 lanes, a the high f16 of its register in every lane: "+what(o.name, o.doc, false)))
			sub += 2
		}
		out = append(out, aux3("f32v2"+o.name, "b", sub, AP, ABc(KindABcast), AP,
			"two f32 lanes, a one f32 register in both lanes: "+what(o.name, o.doc, true)))
		sub++
	}
	// Selector forms poplibs writes that the hover text does not list
	// (poplin OuterProduct.S `f16v4mul $PRODUCT_PAIR, $INVAL:B,
	// $WEIGHT_PAIR`, poprand TruncatedNormal.S `f32v2mul $randOut,
	// $scaleOut:BL, $randOut`): they assemble, 0x58 sub 0x93, 0x94; what
	// :B means on f16 lanes and :BL on f32 lanes the public text does not say.
	out = append(out,
		aux3("f16v4mul", "b", 0x93, AP, ABc(KindABcast), AP, "four f16 lanes times a 32-bit broadcast source."+ne+" (what :B selects for f16 lanes)"),
		aux3("f32v2mul", "bl", 0x94, AP, ABc(KindABcastLo), AP, "two f32 lanes times a low-half broadcast source."+ne+" (what :BL selects for f32 lanes)"))
	return out
}
