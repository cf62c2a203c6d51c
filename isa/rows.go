package isa

// Operand constructors keep the table readable. Bit positions are word 0
// unless a constructor says otherwise.
//
// Register groups follow the LLVM Colossus encoding: a 4-bit register field
// holds the number of the group's first register, which must be even for a
// pair and a multiple of 4 for a quad. In the table that is a narrower field
// one or two bits up with Shift 1 or 2, so the low bits of the nibble are
// fixed zero (part of Match) and a word with them set decodes as nothing.

func f(lo, width uint8) Field { return Field{Lo: lo, Width: width} }

// M is a 4-bit $m register at bit lo.
func M(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindMReg, Fields: []Field{f(lo, 4)}}
}

// A is a 4-bit $a register at bit lo.
func A(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindAReg, Fields: []Field{f(lo, 4)}}
}

// AP is an $a register pair ($a0:1 .. $a12:13, $azeros) in the nibble at lo.
func AP(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindAPair, Fields: []Field{f(lo+1, 3)}, Shift: 1}
}

// AQ is an $a register quad ($a0:3 .. $a8:11, $aqzero) in the nibble at lo.
func AQ(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindAQuad, Fields: []Field{f(lo+2, 2)}, Shift: 2}
}

// MP is an $m register pair in the nibble at lo.
func MP(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindMPair, Fields: []Field{f(lo+1, 3)}, Shift: 1}
}

// ABc is a broadcast $a source (kind KindABcast, KindABcastLo or
// KindABcastHi) at bit lo.
func ABc(k Kind) func(string, uint8) Operand {
	return func(name string, lo uint8) Operand {
		return Operand{Name: name, Kind: k, Fields: []Field{f(lo, 4)}}
	}
}

// MInc is a post-incremented $m register ($m3+=) at bit lo.
func MInc(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindMRegInc, Fields: []Field{f(lo, 4)}}
}

// MPInc is a post-incremented $m register pair ($m10:11+=) in the nibble at lo.
func MPInc(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindMPairInc, Fields: []Field{f(lo+1, 3)}, Shift: 1}
}

// MPost, MDelta and MShr are the $m operands of the delta loads: a full
// pointer post-incremented by the access ($mN++), a delta register the
// row also writes ($mN@) and a mini-delta register shifted after use
// ($mN>>), each a nibble at lo.
func MPost(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindMRegPostInc, Fields: []Field{f(lo, 4)}}
}

func MDelta(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindMRegDelta, Fields: []Field{f(lo, 4)}}
}

func MShr(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindMRegShr, Fields: []Field{f(lo, 4)}}
}

// ATri is the upper three registers of an $a quad ($a1:3 .. $a13:15), the
// quad's number in bits lo+3..lo+2 as AQ.
func ATri(name string, lo uint8) Operand {
	return Operand{Name: name, Kind: KindATriple, Fields: []Field{f(lo+2, 2)}, Shift: 2, Offset: 1}
}

// CSR is a control/status register number of a space.
func CSR(name string, lo, width uint8, space CSRSpace) Operand {
	return Operand{Name: name, Kind: KindCSR, Fields: []Field{f(lo, width)}, CSR: space, Hex: true}
}

// U is an unsigned immediate.
func U(name string, lo, width uint8) Operand {
	return Operand{Name: name, Kind: KindImm, Fields: []Field{f(lo, width)}}
}

// S is a signed immediate.
func S(name string, lo, width uint8) Operand {
	return Operand{Name: name, Kind: KindImm, Fields: []Field{f(lo, width)}, Signed: true}
}

// Rel is an unsigned address immediate stored >>shift and patched by r.
func Rel(name string, lo, width, shift uint8, r Reloc) Operand {
	return Operand{Name: name, Kind: KindImm, Fields: []Field{f(lo, width)}, Shift: shift, Reloc: r, Hex: true}
}

// withReloc returns o accepting symbolic values patched by r.
func (o Operand) withReloc(r Reloc) Operand { o.Reloc = r; return o }

func (o Operand) hex() Operand { o.Hex = true; return o }

// shifted stores value>>s (value must be a multiple of 1<<s).
func (o Operand) shifted(s uint8) Operand { o.Shift = s; return o }

// count stores value-1: the operand is written as a count of events/words.
func (o Operand) count() Operand { o.Offset = 1; return o }

// raw makes the operand's text its stored field (Operand.RawText).
func (o Operand) raw() Operand { o.RawText = true; return o }

// split spreads the operand over fields, most significant first.
func (o Operand) split(fs ...Field) Operand { o.Fields = fs; return o }

// word1 moves every field of o to the inline second word.
func (o Operand) word1() Operand {
	fs := make([]Field, len(o.Fields))
	for i, x := range o.Fields {
		x.Word = 1
		fs[i] = x
	}
	o.Fields = fs
	return o
}

func ops(o ...Operand) []Operand { return o }

// Row helpers: the fixed properties of each family, so the table lists only
// what differs.

// mainAny: an integer/control row of the main pipe for both contexts,
// co-issuable, public (LLVM Colossus fork).
func mainAny(mn, variant string, match uint32, o []Operand, doc string) Inst {
	return Inst{Mnemonic: mn, Variant: variant, Match: match, Operands: o, Pipe: Main, Ctx: Both,
		CoIssue: true, Source: SrcLLVM, Doc: doc}
}

// supLLVM: a supervisor-only public row. The supervisor never bundles, so
// bit 31 is fixed zero.
func supLLVM(mn, variant string, match uint32, o []Operand, doc string) Inst {
	return Inst{Mnemonic: mn, Variant: variant, Match: match, Operands: o, Pipe: Main, Ctx: Supervisor,
		Source: SrcLLVM, Doc: doc}
}

// exch: a supervisor exchange row (ipu-stack exchange reference).
func exch(mn string, match uint32, words int, o []Operand, doc string) Inst {
	return Inst{Mnemonic: mn, Match: match, Words: words, Operands: o, Pipe: Main, Ctx: Supervisor,
		Source: SrcExchange, Doc: doc}
}

// wmain: a worker main-pipe row in ipustack's own space (block 0x50..0x57).
func wmain(mn, variant string, match uint32, o []Operand, doc string) Inst {
	return Inst{Mnemonic: mn, Variant: variant, Match: match, Operands: o, Pipe: Main, Ctx: Worker,
		CoIssue: true, Source: SrcOurs, Doc: doc}
}

// waux: a worker auxiliary-pipe (floating point) row in ipustack's own
// space (block 0x58..0x5F).
func waux(mn, variant string, match uint32, o []Operand, doc string) Inst {
	return Inst{Mnemonic: mn, Variant: variant, Match: match, Operands: o, Pipe: Aux, Ctx: Worker,
		CoIssue: true, Source: SrcOurs, Doc: doc}
}

func control(in Inst) Inst { in.Control = true; return in }

// Integer register-register ALU rows (LLVM format FMXMN): 0x44000000 with a
// sub-opcode in bits 10..8 and 1..0; sources at 23..20 and 15..12, the
// destination at 7..4.
func rrr(mn string, sub uint32, doc string) Inst {
	return mainAny(mn, "", 0x44000000|sub, ops(M("dst", 4), M("a", 20), M("b", 12)), doc)
}

// Integer register-immediate16 rows (FMNI4): destination at 19..16, source
// at 23..20, immediate 15..0; the opcode is the top byte.
func ri16(mn, variant string, top uint32, signed bool, doc string) Inst {
	imm := U("imm", 0, 16)
	if signed {
		imm = S("imm", 0, 16)
	}
	return mainAny(mn, variant, top<<24, ops(M("dst", 16), M("a", 20), imm), doc)
}

// Integer register-immediate12 rows (FSDI3): 0x42008000 with a sub-opcode
// in bits 14..12.
func ri12(mn, variant string, sub uint32, imm Operand, doc string) Inst {
	return mainAny(mn, variant, 0x42008000|sub<<12, ops(M("dst", 16), M("a", 20), imm), doc)
}

// Worker aux three-register rows: 0x58000000 | sub (bits 7..0), dst at
// 23..20, sources at 19..16 and 15..12, bits 11..8 zero.
func aux3(mn, variant string, sub uint32, d, a, b func(string, uint8) Operand, doc string) Inst {
	return waux(mn, variant, 0x58000000|sub, ops(d("dst", 20), a("a", 16), b("b", 12)), doc)
}

// Worker aux two-register rows: 0x59000000 | sub, dst at 23..20, source at
// 19..16, bits 15..8 zero.
func aux2(mn, variant string, sub uint32, d, a func(string, uint8) Operand, doc string) Inst {
	return waux(mn, variant, 0x59000000|sub, ops(d("dst", 20), a("a", 16)), doc)
}

// memImm: worker loads/stores with a register base, a register delta and a
// 12-bit unsigned immediate in access-size units (ipustack block,
// laid out like the public ld32: base 23..20, data 19..16, delta 15..12).
func memImm(mn, variant string, top uint32, data Operand, scale uint8, doc string) Inst {
	_ = scale // the immediate is written in access-size units, as ld32's
	return wmain(mn, variant, top<<24, ops(data, M("base", 20), M("delta", 12), U("off", 0, 12)), doc)
}

// memStep: worker load/store with post-increment (block 0x55, sub-opcode in
// bits 11..8): base 23..20, data 19..16, incremented register 15..12,
// signed 8-bit step 7..0 scaled by the access size.
func memStep(mn, variant string, sub uint32, data Operand, scale uint8, doc string) Inst {
	_ = scale
	return wmain(mn, variant, 0x55000000|sub<<8, ops(data, M("base", 20), MInc("ptr", 12), S("step", 0, 8)), doc)
}

// memStepReg: memStep with a register stride (signed, in access-size
// units) at bits 7..4 instead of the immediate.
func memStepReg(mn, variant string, sub uint32, data Operand, doc string) Inst {
	return wmain(mn, variant, 0x55000000|sub<<8, ops(data, M("base", 20), MInc("ptr", 12), M("stride", 4)), doc)
}

// pace: the pace family (block 0x56, sub-opcode in bits 1..0): data
// registers at 23..20 and 19..16, the packed address pair at 15..12, the
// stride register at 11..8, the increment selectors from bit 2.
func pace(mn string, sub uint32, o []Operand, doc string) Inst {
	return wmain(mn, "", 0x56000000|sub, o, doc)
}

// rows returns the instruction table in assembler preference order: within
// a mnemonic, the first row whose operand kinds and ranges accept the
// operands wins, so e.g. add with an immediate picks the signed form
// (0x22) before the unsigned one (0x20), as the public tools do.
func rows() []Inst {
	sd := "; see docs/isa.md"
	return []Inst{
		// ---- Integer ALU (MRF), public: LLVM Colossus CommonGenerated.td ----
		rrr("add", 0x001, "dst = a + b"),
		ri16("add", "si", 0x22, true, "dst = a + sign-extended imm16"),
		ri16("add", "zi", 0x20, false, "dst = a + zero-extended imm16"),
		rrr("sub", 0x602, "dst = a - b").withOps(ops(M("dst", 4), M("a", 12), M("b", 20))),
		ri16("sub", "si", 0x39, true, "dst = sign-extended imm16 - b (reverse subtract; text order dst, imm, b)").withOps(ops(M("dst", 16), S("imm", 0, 16), M("b", 20))),
		ri16("sub", "zi", 0x37, false, "dst = zero-extended imm16 - b (reverse subtract)").withOps(ops(M("dst", 16), U("imm", 0, 16), M("b", 20))),
		rrr("mul", 0x300, "dst = low 32 bits of a * b"),
		ri16("mul", "si", 0x36, true, "dst = low 32 bits of a * sign-extended imm16"),
		rrr("and", 0x003, "dst = a & b"),
		ri12("and", "zi", 0, U("imm", 0, 12), "dst = a & zero-extended imm12"),
		rrr("andc", 0x100, "dst = a & ^b"),
		ri12("andc", "zi", 3, U("imm", 0, 12), "dst = a & ^zero-extended imm12"),
		rrr("or", 0x301, "dst = a | b"),
		ri12("or", "zi", 1, U("imm", 0, 12), "dst = a | zero-extended imm12"),
		ri12("or", "iz", 4, U("imm", 0, 12).shifted(20).hex(), "dst = a | imm, imm = imm12 << 20 (written as the 32-bit value)"),
		rrr("xor", 0x701, "dst = a ^ b"),
		rrr("shl", 0x401, "dst = a << b (counts >= 32 give 0)"),
		ri12("shl", "zi", 2, U("imm", 0, 12), "dst = a << imm (counts >= 32 give 0)"),
		rrr("shr", 0x402, "dst = a >> b, logical (counts >= 32 give 0)"),
		ri12("shr", "zi", 5, U("imm", 0, 12), "dst = a >> imm, logical (counts >= 32 give 0)"),
		rrr("cmpeq", 0x102, "dst = 1 if a == b else 0"),
		ri16("cmpeq", "si", 0x28, true, "dst = 1 if a == sign-extended imm16 else 0"),
		ri16("cmpeq", "zi", 0x26, false, "dst = 1 if a == zero-extended imm16 else 0"),
		rrr("cmpne", 0x103, "dst = 1 if a != b else 0"),
		rrr("cmpslt", 0x200, "dst = 1 if a < b (signed) else 0"),
		ri16("cmpslt", "si", 0x29, true, "dst = 1 if a < sign-extended imm16 (signed) else 0"),
		rrr("cmpult", 0x201, "dst = 1 if a < b (unsigned) else 0"),
		Inst{Mnemonic: "cmpult", Variant: "zi", Match: 0x2A000000, Operands: ops(M("dst", 16), M("a", 20), U("imm", 0, 16).withReloc(Reloc16)),
			Pipe: Main, Ctx: Both, CoIssue: true, Source: SrcLLVM, Doc: "dst = 1 if a < zero-extended imm16 (unsigned) else 0; imm may be a symbol (R_COLOSSUS_16)"},
		rrr("max", 0x202, "dst = signed maximum of a and b"),
		ri16("max", "si", 0x30, true, "dst = signed maximum of a and sign-extended imm16"),
		ri16("max", "zi", 0x2E, false, "dst = signed maximum of a and zero-extended imm16"),
		rrr("min", 0x203, "dst = signed minimum of a and b"),
		ri16("min", "si", 0x33, true, "dst = signed minimum of a and sign-extended imm16"),
		ri16("min", "zi", 0x31, false, "dst = signed minimum of a and zero-extended imm16"),
		rrr("sort4x16lo", 0x503, "dst = low 16-bit halves of a and b: dst.lo = a.lo, dst.hi = b.lo"),
		rrr("sort4x16hi", 0x502, "dst = high 16-bit halves of a and b: dst.lo = a.hi, dst.hi = b.hi"),
		Inst{Mnemonic: "nop", Match: 0x19E00000, Refines: "setzi", Pipe: Main, Ctx: Both, CoIssue: true, Source: SrcLLVM,
			Doc: "no operation; the word is the LLVM Colossus assembler's padding word (that of setzi $m14, 0), which ipustack defines as having no effect"},
		mainAny("setzi", "", 0x19000000, ops(M("dst", 20), U("imm", 0, 20).withReloc(Reloc20)), "dst = zero-extended imm20 (a symbol: R_COLOSSUS_20)"),

		// ---- Loads and stores (MRF), public ----
		mainAny("ld32", "", 0x01000000, ops(M("dst", 16), M("base", 20), M("delta", 12), U("off", 0, 12)),
			"dst = mem32[base + delta + 4*off]"),
		mainAny("ld32", "r", 0x4D000000, ops(M("dst", 4), M("base", 20), M("delta", 12), M("off", 16)),
			"dst = mem32[base + delta + 4*off]"),
		mainAny("st32", "", 0x4F000000, ops(M("src", 16), M("base", 20), M("delta", 12), U("off", 0, 12)),
			"mem32[base + delta + 4*off] = src"),
		mainAny("stm32", "", 0x4C000000, ops(M("src", 16), M("base", 20), M("off", 12)),
			"mem32[base + 4*off] = src (st32 without a delta register)"),
		mainAny("ld32step", "", 0x47000100, ops(M("dst", 4), M("base", 20), MInc("ptr", 12), M("step", 16)),
			"dst = mem32[base + ptr]; ptr += 4*step"),
		mainAny("ld32step", "si", 0x1C000100, ops(M("dst", 16), M("base", 20), MInc("ptr", 12), S("step", 0, 8)),
			"dst = mem32[base + ptr]; ptr += 4*step"),
		mainAny("st32step", "", 0x4E000000, ops(M("src", 16), M("base", 20), MInc("ptr", 12), S("step", 0, 8)),
			"mem32[base + ptr] = src; ptr += 4*step"),

		// ---- Control, public ----
		control(mainAny("br", "", 0x43000000, ops(M("target", 20)), "jump to the address in target")),
		control(mainAny("bri", "", 0x40800000, ops(Rel("target", 0, 19, 2, Reloc19S2)), "jump to target (absolute, word aligned)")),
		control(mainAny("brz", "", 0x13000000, ops(M("cond", 20), Rel("target", 0, 19, 2, Reloc19S2)), "jump to target if cond == 0")),
		control(mainAny("brnz", "", 0x11000000, ops(M("cond", 20), Rel("target", 0, 19, 2, Reloc19S2)), "jump to target if cond != 0")),
		control(mainAny("brneg", "", 0x10000000, ops(M("cond", 20), Rel("target", 0, 19, 2, Reloc19S2)), "jump to target if cond < 0 (signed)")),
		control(mainAny("brpos", "", 0x12000000, ops(M("cond", 20), Rel("target", 0, 19, 2, Reloc19S2)), "jump to target if cond > 0 (signed)")),
		control(mainAny("brnzdec", "", 0x13080000, ops(M("count", 20), Rel("target", 0, 19, 2, Reloc19S2)),
			"if count != 0 { count -= 1; jump to target } (the loop runs count+1 times)")),
		control(mainAny("call", "", 0x18000000, ops(M("link", 20), Rel("target", 0, 19, 2, Reloc19S2)),
			"link = address of the next bundle; jump to target. Bit 19 (the top bit of LLVM's 20-bit field) is fixed zero: addresses are 21-bit")),
		control(mainAny("trap", "", 0x41801000, ops(U("code", 0, 4)), "raise a trap (ipustack: the emulator stops the tile with a fault naming code)")),

		// ---- CSR access, public ----
		{Mnemonic: "get", Match: 0x41000000, Operands: ops(M("dst", 16), CSR("csr", 0, 8, CSRLower)), Pipe: Main, Ctx: Both, CoIssue: true,
			Source: SrcLLVM, Doc: "dst = the CSR, in the executing context's lower space"},
		{Mnemonic: "put", Match: 0x43008000, Operands: ops(CSR("csr", 0, 8, CSRLower), M("src", 20)), Pipe: Main, Ctx: Both, CoIssue: true,
			Source: SrcLLVM, Doc: "the CSR (executing context's lower space) = src"},

		// ---- Supervisor, public: LLVM Colossus SupervisorGenerated.td ----
		supLLVM("ld64putcs", "", 0x4100C000, ops(U("slot", 0, 8)), "CWEI slot = mem64[$CCCSLOAD]; $CCCSLOAD += 8 (docs/amp-and-pace.md)"),
		supLLVM("ld128putcs", "", 0x4100D000, ops(U("slot", 0, 8)), "CWEI slots slot, slot+1 = mem128[$CCCSLOAD]; $CCCSLOAD += 16 (docs/amp-and-pace.md)"),
		control(supLLVM("run", "", 0x14000000, ops(M("entry", 20), M("vbase", 12),
			Rel("vertex", 0, 16, 2, RelocRun).split(f(16, 4), f(0, 12)).off(Region0Base)),
			"start one idle worker at PC = entry with $VERTEX_BASE = vbase + vertex, i.e. vbase + 4*field + 0x4C000 (hover text: TMEM_REGION0_BASE_ADDR is added); vertex is a region-0 address (R_COLOSSUS_RUN)")),
		control(supLLVM("runall", "", 0x15000000, ops(M("entry", 20), M("vbase", 12), U("off", 0, 16).split(f(16, 4), f(0, 12))),
			"start all six workers at PC = entry; worker n gets $VERTEX_BASE = vbase + n*4*off (hover text)")),
		control(supLLVM("sync", "", 0x41800000, ops(U("zone", 0, 4)),
			"wait at the barrier of sync zone (0 RECV, 1 ANS, 2 LOCAL, 3 INTERNAL, ...)")),

		// ---- Exchange (supervisor, not co-issued), ipu-stack reference ----
		exch("delay", 0x40A00000, 1, ops(U("events", 0, 19).count().raw()), "wait events cycles, advancing the exchange timeline by events; the text is the field, events-1, as LLVM spells it (`delay 40` waits 41)"),
		exch("sans", 0x40C00000, 1, ops(U("n", 0, 19)), "ANS (answer) sync-zone signal with selector n; ipu-stack emits sans 0 on tiles idle in an exchange phase"),
		exch("delaypic", 0x60000000, 1, ops(U("events", 19, 7).count().raw(), U("sel", 18, 1), U("value", 0, 18).hex()),
			"after events exchange events, apply PIC (incoming write pointer) control sel with value"),
		exch("delayxpic", 0x64000000, 1, ops(U("events", 14, 12).count().raw(), U("sel", 13, 1), U("value", 0, 13).hex()),
			"after events exchange events, apply XPIC (incoming mux) control sel with value (0x640 = neutral)"),
		exch("send", 0x78000000, 1, ops(U("words", 21, 6).count().raw(), U("addr", 3, 18).shifted(2).hex().raw(), U("sctl", 0, 3)),
			"send words items from addr; sctl bits 0..1 directions, bit 2 64-bit items. The text is the fields, as LLVM spells them: words-1, then addr/4 (the item index from $OUTGOING_BASE: 4-byte items, or 8-byte items for 64-bit sends)"),
		exch("sendoff", 0x70000000, 1, ops(U("words", 0, 12).split(f(14, 6), f(21, 6)).count().raw(), U("delta", 3, 11).shifted(2).hex().raw(), U("sctl", 0, 3)),
			"continue the outgoing stream: skip delta (bytes for 32-bit items, half the bytes for 64-bit items), send words items; the count is split (low 6 bits at 26..21, high 6 at 19..14)"),
		exch("sendpic", 0x70100000, 1, ops(U("words", 21, 6).count().raw(), U("sel", 18, 2), U("value", 0, 18).hex()),
			"continue the outgoing stream for words items and apply one incoming control at the first event (sel 0,1 XPIC; 2,3 PIC)"),
		exch("sendpicp", 0xF0000000, 2, ops(U("words", 21, 6).count().raw(), U("addr", 3, 18).shifted(2).hex().raw(), U("sctl", 0, 3), U("picsel", 27, 1),
			U("xpic", 18, 14).word1().hex(), U("pic", 0, 18).word1().hex()),
			"send words items from byte address addr and apply both incoming controls (XPIC = xpic, PIC sel picsel = pic) at the first event; two words, 8-byte aligned"),

		// ---- Worker main pipe, ipustack encodings (block 0x50..0x57) ----
		memImm("ld64", "", 0x50, AP("dst", 16), 3, "dst = mem64[base + delta + 8*off]"),
		memImm("st64", "", 0x51, AP("src", 16), 3, "mem64[base + delta + 8*off] = src"),
		memImm("ld128", "", 0x52, AQ("dst", 16), 4, "dst = mem128[base + delta + 16*off] (interleaved memory only)"),
		memImm("ld32", "a", 0x53, A("dst", 16), 2, "dst = mem32[base + delta + 4*off]"),
		memImm("st32", "a", 0x54, A("src", 16), 2, "mem32[base + delta + 4*off] = src"),
		memStep("ld64step", "", 0, AP("dst", 16), 0, "dst = mem64[base + ptr]; ptr += 8*step"),
		memStep("st64step", "", 1, AP("src", 16), 0, "mem64[base + ptr] = src; ptr += 8*step"),
		memStep("ld32step", "a", 2, A("dst", 16), 0, "dst = mem32[base + ptr]; ptr += 4*step"),
		memStep("st32step", "a", 3, A("src", 16), 0, "mem32[base + ptr] = src; ptr += 4*step"),
		// The register-stride forms of the ISA hover text (ld64step,
		// st64step, ld32step/st32step with $a data: `..., $mDelta0+=,
		// $mStride0`), in the same block with sub-opcodes 10..13 in bits
		// 11..8 and the stride register at 7..4.
		memStepReg("ld64step", "r", 0xA, AP("dst", 16), "dst = mem64[base + ptr]; ptr += 8*stride"),
		memStepReg("st64step", "r", 0xB, AP("src", 16), "mem64[base + ptr] = src; ptr += 8*stride"),
		memStepReg("ld32step", "ar", 0xC, A("dst", 16), "dst = mem32[base + ptr]; ptr += 4*stride"),
		memStepReg("st32step", "ar", 0xD, A("src", 16), "mem32[base + ptr] = src; ptr += 4*stride"),
		pace("ld2x64pace", 0, ops(AP("dst0", 20), AP("dst1", 16), MPInc("addrs", 12), M("strides", 8), U("incs", 2, 4)),
			"dst0 = mem64[load address 0], dst1 = mem64[load address 1]; advance both per incs"+sd),
		pace("ld2xst64pace", 1, ops(AQ("dst", 20), AP("src", 16), MPInc("addrs", 12), M("strides", 8), U("incs", 2, 6)),
			"dst = two 64-bit loads (addresses 0, 1), store src at the store address; advance all three per incs"+sd),
		pace("ldst64pace", 2, ops(AP("dst", 20), AP("src", 16), MPInc("addrs", 12), M("strides", 8), U("incs", 2, 4)),
			"dst = mem64[load address 0], store src at the store address; advance both per incs"+sd),
		// st64pace's immediate is the hover text's Strimm2, but poplibs
		// writes 4-bit values (0x05, 0b1010) that Graphcore's assembler
		// accepts, always with equal halves, as if in ldst64pace's layout
		// (store selector in bits 3..2): the field is 4 bits, and values
		// above 3 whose halves differ do not execute (docs/isa.md).
		pace("st64pace", 3, ops(AP("src", 20), MPInc("addrs", 12), M("strides", 8), U("incs", 2, 4)),
			"store src at the store address; advance it per incs (0..3, or 4..15 with equal 2-bit halves)"+sd),
		wmain("tapack", "", 0x57400000, ops(MP("dst", 16), M("load0", 12), M("load1", 8), M("store", 4)),
			"dst pair = load0 | load1 << 21 | store << 42 (21-bit byte addresses)"+sd),
		control(wmain("rpt", "", 0x57000000, ops(M("count", 16), U("last", 0, 8)),
			"repeat the body (the next last+1 bundles, 8 bytes each) count times; count 0 skips it"+sd)),
		control(wmain("rpt", "i", 0x57100000, ops(U("count", 8, 12), U("last", 0, 8)),
			"as rpt with an immediate count")),
		control(Inst{Mnemonic: "exitz", Match: 0x43004000, Operands: ops(M("cond", 20)), Pipe: Main, Ctx: Worker, CoIssue: true, Source: SrcListing,
			Doc: "the worker exits (its slot returns to the supervisor) with Boolean status cond == 0; word from the IPU1 bootloader listing (exitz $m15 = 0x43f04000)"}),
		control(wmain("exitnz", "", 0x57300000, ops(M("cond", 16)), "the worker exits with Boolean status cond != 0")),

		// ---- Worker aux pipe (floating point), ipustack encodings (block 0x58..0x5F) ----
		aux3("f16v2add", "", 0x00, A, A, A, "two f16 lanes: dst = a + b"),
		aux3("f16v2mul", "", 0x01, A, A, A, "two f16 lanes: dst = a * b"),
		aux3("f16v4add", "", 0x02, AP, AP, AP, "four f16 lanes: dst = a + b"),
		aux3("f16v4mul", "", 0x03, AP, AP, AP, "four f16 lanes: dst = a * b"),
		aux3("f32add", "", 0x04, A, A, A, "f32: dst = a + b"),
		aux3("f32sub", "", 0x05, A, A, A, "f32: dst = a - b"),
		aux3("f32mul", "", 0x06, A, A, A, "f32: dst = a * b"),
		aux3("f32max", "", 0x07, A, A, A, "f32: dst = max(a, b) (a NaN operand gives the other)"),
		aux3("f32v2add", "", 0x08, AP, AP, AP, "two f32 lanes: dst = a + b"),
		aux3("f32v2mul", "", 0x09, AP, AP, AP, "two f32 lanes: dst = a * b"),
		aux3("f32v2max", "", 0x0A, AP, AP, AP, "two f32 lanes: dst = max(a, b)"),
		aux3("f32v4add", "", 0x0B, AQ, AQ, AQ, "four f32 lanes: dst = a + b"),
		// Broadcast source forms of the ISA hover text (`f16v2add $aDst0,
		// $aSrc0:BL, $aSrc1`, `f32v2mul $aDst0:Dst0+1, $aSrc0:B, ...`):
		// sub-opcodes 0xE0..0xE9 of the same block.
		aux3("f16v2add", "bl", 0xE0, A, ABc(KindABcastLo), A, "two f16 lanes: dst = low f16 of a (both lanes) + b"),
		aux3("f16v2add", "bu", 0xE1, A, ABc(KindABcastHi), A, "two f16 lanes: dst = high f16 of a (both lanes) + b"),
		aux3("f16v2mul", "bl", 0xE2, A, ABc(KindABcastLo), A, "two f16 lanes: dst = low f16 of a (both lanes) * b"),
		aux3("f16v2mul", "bu", 0xE3, A, ABc(KindABcastHi), A, "two f16 lanes: dst = high f16 of a (both lanes) * b"),
		aux3("f16v4add", "bl", 0xE4, AP, ABc(KindABcastLo), AP, "four f16 lanes: dst = low f16 of a (all lanes) + b"),
		aux3("f16v4add", "bu", 0xE5, AP, ABc(KindABcastHi), AP, "four f16 lanes: dst = high f16 of a (all lanes) + b"),
		aux3("f16v4mul", "bl", 0xE6, AP, ABc(KindABcastLo), AP, "four f16 lanes: dst = low f16 of a (all lanes) * b"),
		aux3("f16v4mul", "bu", 0xE7, AP, ABc(KindABcastHi), AP, "four f16 lanes: dst = high f16 of a (all lanes) * b"),
		aux3("f32v2add", "b", 0xE8, AP, ABc(KindABcast), AP, "two f32 lanes: dst = a (both lanes) + b"),
		aux3("f32v2mul", "b", 0xE9, AP, ABc(KindABcast), AP, "two f32 lanes: dst = a (both lanes) * b"),
		aux3("f32v2axpy", "", 0x0C, AP, AP, AP, "two f32 lanes: the accumulator state (MIX lanes 0, 1) = $TAS * a + b (product and sum each rounded); dst = its previous value (docs/isa.md, MIX and AXPY)"),
		aux3("sort4x16lo", "a", 0x10, A, A, A, "dst.lo = a.lo, dst.hi = b.lo (16-bit halves)"),
		aux3("sort4x16hi", "a", 0x11, A, A, A, "dst.lo = a.hi, dst.hi = b.hi (16-bit halves)"),
		aux3("and", "a", 0x12, A, A, A, "dst = a & b (bitwise, $a registers)"),
		{Mnemonic: "or", Variant: "a", Match: 0x58000E00, Operands: ops(A("dst", 4), A("a", 20), A("b", 12)), Pipe: Aux, Ctx: Worker, CoIssue: true,
			Source: SrcListing, Doc: "dst = a | b (bitwise, $a registers); the IPU1 bootloader listing gives zero $aN = or $aN, $azero, $azero as 0x58f0fe00 | N<<4, the sources placed as in the public MRF or (0x44000301)"},
		aux3("andc", "a", 0x14, A, A, A, "dst = a & ^b (bitwise, $a registers)"),
		aux3("xor", "a", 0x15, A, A, A, "dst = a ^ b (bitwise, $a registers)"),
		aux2("f16v2tof32", "", 0x00, AP, A, "dst pair = the two f16 lanes of a widened to f32 (exact)"),
		aux2("f32v2tof16", "", 0x01, A, AP, "dst = the two f32 of a rounded to f16 (low lane from the first register)"),
		aux2("f16v2exp", "", 0x02, A, A, "two f16 lanes: dst = e^a"+sd),
		aux2("f16v2tanh", "", 0x03, A, A, "two f16 lanes: dst = tanh(a)"+sd),
		aux2("f32exp", "", 0x04, A, A, "f32: dst = e^a"+sd),
		aux2("f32oox", "", 0x05, A, A, "f32: dst = 1/a"+sd),
		aux2("f32tof16", "", 0x06, A, A, "a rounded to f16, duplicated into both halves of dst (hover text: broadcast)"),
		aux2("f16tof32", "", 0x07, A, A, "dst = the low f16 lane of a widened to f32 (exact)"),
		aux2("not", "", 0x08, A, A, "dst = ^a (bitwise, $a registers)"),
		waux("f16v4hihov4amp", "", 0x5A000000, ops(AP("dst", 20), AP("x", 16), AP("p", 12), U("phase", 8, 2)),
			"AMP f16 in, f16 partials in and out: 64 MAC per issue (docs/amp-and-pace.md)"),
		waux("f16v4sisoamp", "", 0x5A000001, ops(AP("dst", 20), AP("x", 16), AP("p", 12), U("phase", 8, 2)),
			"AMP f16 in, f32 partials in and out: 32 MAC per issue (docs/amp-and-pace.md)"),
		waux("f32sisov2amp", "", 0x5A000002, ops(AP("dst", 20), A("x", 16), AP("p", 12), U("phase", 8, 3)),
			"AMP f32 in (one value per issue), f32 partials in and out (two per issue): 16 outputs x 1 input = 16 MAC per issue, eight phases (docs/amp-and-pace.md)"),
		waux("setzi", "a", 0x5B000000, ops(A("dst", 20), U("imm", 0, 20).withReloc(Reloc20)), "dst = zero-extended imm20 ($a register)"),
		waux("or", "aiz", 0x5C000000, ops(A("dst", 20), A("a", 16), U("imm", 0, 12).shifted(20).hex()), "dst = a | imm, imm = imm12 << 20 ($a registers)"),
		waux("and", "aiz", 0x5C001000, ops(A("dst", 20), A("a", 16), U("imm", 0, 12).shifted(20).hex()), "dst = a & imm, imm = imm12 << 20 ($a registers)"),
		waux("uput", "", 0x5D000000, ops(CSR("csr", 0, 8, CSRUpper), A("src", 16)), "the worker upper-space CSR = src"),
		waux("uget", "", 0x5D100000, ops(A("dst", 16), CSR("csr", 0, 8, CSRUpper)), "dst = the worker upper-space CSR"),
		{Mnemonic: "fnop", Match: 0x5BD00000, Refines: "setzi.a", Pipe: Aux, Ctx: Worker, CoIssue: true, Source: SrcOurs,
			Doc: "no operation (aux pipe); the word of setzi $a13, 0, as the LLVM Colossus assembler reads fnop (assemble-inst-alias.s), with no effect"},
		waux("urand64", "", 0x5E000001, ops(AP("dst", 20)), "dst pair = 64 bits from the worker's generator"+sd),
	}
}

func (in Inst) withOps(o []Operand) Inst { in.Operands = o; return in }

func (o Operand) off(n int64) Operand { o.Offset = n; return o }
