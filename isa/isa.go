// Package isa owns the IPU21 instruction table: one row per instruction
// (mnemonic, operands, encoding, pipeline, co-issue rule, issue cost) and the
// encoder, decoder and disassembler that all read it, plus the Colossus
// relocation types that patch operand fields and the CSR name spaces. It
// imports no other package of this module.
//
// Encodings are public where the public record has them (the LLVM Colossus
// fork for integer, memory, control and supervisor rows; ipu-stack's
// SDK-verified exchange reference) and reproduced bit for bit; the rest
// (worker floating point, AMP, pace, 64/128-bit memory, rpt, exit) are
// ipustack's own, all inside one otherwise unused block (bits 30..28 =
// 101), so no word can mean two things. Everything a row does not encode as
// an operand is a fixed bit: masks are derived, and the tests prove that no
// word matches two rows. docs/isa.md explains the table and lists the rows
// (generated from it).
//
// An encoding overlay (overlay.go; learned from an SDK assembler by package
// isa/learn) may replace the rows' encodings before anything encodes or
// decodes: Install validates it against the table and rewrites the rows in
// place, so every user of the table follows.
package isa

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
)

// Pipe is the issue pipeline an instruction occupies.
type Pipe uint8

const (
	// Main is the integer, load/store and control pipeline. The supervisor
	// only has this one.
	Main Pipe = iota
	// Aux is the worker floating-point pipeline.
	Aux
)

func (p Pipe) String() string {
	if p == Aux {
		return "aux"
	}
	return "main"
}

// Context says which thread kinds may execute an instruction.
type Context uint8

const (
	Supervisor Context = 1 << iota
	Worker
	Both = Supervisor | Worker
)

func (c Context) String() string {
	switch c {
	case Supervisor:
		return "supervisor"
	case Worker:
		return "worker"
	case Both:
		return "supervisor+worker"
	}
	return fmt.Sprintf("Context(%d)", uint8(c))
}

// Kind is an operand's syntactic and semantic class.
type Kind uint8

const (
	KindMReg     Kind = iota // $m0..$m15
	KindAReg                 // $a0..$a15 (single 32-bit register)
	KindAPair                // $a0:1, $a2:3, ... (64-bit)
	KindAQuad                // $a0:3, $a4:7, ... (128-bit)
	KindMPair                // $m0:1, $m2:3, ...
	KindMRegInc              // $m3+= : base register post-incremented by the access
	KindMPairInc             // $m2:3+= : packed address pair (tapack) post-incremented
	KindCSR                  // control/status register, by name or number
	KindImm                  // immediate or symbolic expression
	// Broadcast sources of the vector float rows (LLVM Colossus
	// TileOpBCast): one $a register whose f32 (:B), low f16 (:BL) or high
	// f16 (:BU) is used in every lane.
	KindABcast   // $aN:B
	KindABcastLo // $aN:BL
	KindABcastHi // $aN:BU
	// Operand forms of the hover text's delta loads (ld64a32, ldd16*,
	// ldb16b16): a full pointer post-incremented by the access ($mN++), a
	// delta register the instruction also writes with the next delta
	// ($mN@), a mini-delta register shifted right by 4 after use
	// ($mN>>), and the upper three registers of a quad ($aN+1:N+3,
	// written $a1:3, $a5:7, $a9:11, $a13:15).
	KindMRegPostInc // $mN++
	KindMRegDelta   // $mN@
	KindMRegShr     // $mN>>
	KindATriple     // $a1:3
)

var kindNames = [...]string{"mreg", "areg", "apair", "aquad", "mpair", "mreg+=", "mpair+=", "csr", "imm", "areg:B", "areg:BL", "areg:BU", "mreg++", "mreg@", "mreg>>", "atriple"}

// BcastSuffix is the selector text of a broadcast kind (":B", ":BL",
// ":BU"), or "".
func (k Kind) BcastSuffix() string {
	switch k {
	case KindABcast:
		return ":B"
	case KindABcastLo:
		return ":BL"
	case KindABcastHi:
		return ":BU"
	}
	return ""
}

// RegSuffix is the text written after an $m register of a
// post-modified kind ("+=", "++", "@", ">>"), or "".
func (k Kind) RegSuffix() string {
	switch k {
	case KindMRegInc, KindMPairInc:
		return "+="
	case KindMRegPostInc:
		return "++"
	case KindMRegDelta:
		return "@"
	case KindMRegShr:
		return ">>"
	}
	return ""
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// IsRegister reports whether the kind names a register (or register group).
func (k Kind) IsRegister() bool { return k != KindImm && k != KindCSR }

// RegCount is the number of 32-bit registers a register operand spans.
func (k Kind) RegCount() int {
	switch k {
	case KindAPair, KindMPair, KindMPairInc:
		return 2
	case KindAQuad:
		return 4
	case KindATriple:
		return 3
	}
	return 1
}

// RegFile returns "m" or "a" for register kinds.
func (k Kind) RegFile() string {
	switch k {
	case KindMReg, KindMPair, KindMRegInc, KindMPairInc, KindMRegPostInc, KindMRegDelta, KindMRegShr:
		return "m"
	case KindAReg, KindAPair, KindAQuad, KindABcast, KindABcastLo, KindABcastHi, KindATriple:
		return "a"
	}
	return ""
}

// Field is a contiguous bit range of one instruction word.
type Field struct {
	Word  uint8 // 0 for the first word, 1 for an inline second word
	Lo    uint8 // least significant bit
	Width uint8
}

func (f Field) mask() uint32 {
	if f.Width >= 32 {
		return ^uint32(0)
	}
	return ((1 << f.Width) - 1) << f.Lo
}

// Operand describes one operand of a row. Its encoded value is spread over
// Fields, most significant field first. Register operands encode the register
// number; immediates encode Value>>Shift (Value must then be a multiple of
// 1<<Shift), two's complement when Signed.
type Operand struct {
	Name   string
	Kind   Kind
	Fields []Field
	Signed bool
	Shift  uint8 // value = stored << Shift (also used for register groups)
	// Offset is added to the stored value on decode (and subtracted on
	// encode): e.g. `delay N` stores N-1.
	Offset int64
	// Reloc is the relocation that patches this operand when it refers to a
	// symbol; RelocNone forbids symbolic operands.
	Reloc Reloc
	// Hex asks the disassembler to print the immediate in hexadecimal.
	Hex bool
	// RawText: the assembly text of the operand is the stored field (as the
	// LLVM Colossus tools spell it: llvm-objdump prints 0x40a00028 as
	// `delay 40`), while Values and Encode keep the meaning (events, byte
	// address) that Offset and Shift give. TextValue and ValueText convert.
	RawText bool
	// CSR is the register space a KindCSR operand names (see csr.go): get
	// and put address the lower space of the executing context, uget and
	// uput the worker's upper space.
	CSR CSRSpace
}

// Width is the total number of encoded bits.
func (o *Operand) Width() int {
	w := 0
	for _, f := range o.Fields {
		w += int(f.Width)
	}
	return w
}

// TextValue is the value that assembly text t denotes (t itself unless the
// operand is RawText, whose text is the stored field).
func (o *Operand) TextValue(t int64) int64 {
	if !o.RawText {
		return t
	}
	return t<<o.Shift + o.Offset
}

// ValueText is the assembly text of value v (the inverse of TextValue).
func (o *Operand) ValueText(v int64) int64 {
	if !o.RawText {
		return v
	}
	return (v - o.Offset) >> o.Shift
}

// TextRange is the inclusive range of the operand's assembly text.
func (o *Operand) TextRange() (lo, hi int64) {
	lo, hi = o.Range()
	return o.ValueText(lo), o.ValueText(hi)
}

// Range is the inclusive range of values the operand accepts (before
// alignment to 1<<Shift).
func (o *Operand) Range() (lo, hi int64) {
	w := o.Width()
	if o.Signed {
		lo = -(int64(1) << (w - 1))
		hi = int64(1)<<(w-1) - 1
	} else {
		lo, hi = 0, int64(1)<<w-1
	}
	return lo<<o.Shift + o.Offset, hi<<o.Shift + o.Offset
}

// Source says where a row's encoding comes from.
type Source string

const (
	SrcLLVM     Source = "llvm-colossus"      // Sanae6/llvm-project-fork generated TableGen
	SrcExchange Source = "ipu-stack-exchange" // ipu-stack EXCHANGE_INSTRUCTION_REFERENCE / oracle words
	SrcOurs     Source = "ipustack"           // defined by ipustack; see docs/isa.md
	// SrcListing: a public disassembly listing gives the word (the IPU1
	// tile bootloader disassembly in Saghetti0/graphcore-ipu-research, the
	// LLVM Colossus MC tests), and nothing of the IPU21 record contradicts
	// it; fields the listing does not vary are placed as in the public row
	// formats of the same group (docs/isa.md).
	SrcListing Source = "public-listing"
)

// Inst is one row of the instruction table.
type Inst struct {
	Mnemonic string
	// Variant distinguishes rows sharing a mnemonic (e.g. "zi", "si"); the
	// assembler accepts `mnemonic.variant` to force a row.
	Variant  string
	Operands []Operand
	// Match holds the fixed bits of word 0; every bit of word 0 that is not
	// an operand field (nor the co-issue flag, when the row may co-issue) is
	// fixed, so Mask is derived, never written by hand.
	Match uint32
	Words int // 1, or 2 for instructions with an inline word
	Pipe  Pipe
	Ctx   Context
	// CoIssue: may appear in a bundle {main ; aux}.
	CoIssue bool
	// Control: changes control flow (branch, call, run, exit, sync).
	Control bool
	// Cycles is the issue cost in the issuing context's slots (1 for almost
	// everything; see docs/machine.md for the rules the emulator adds).
	Cycles int
	Source Source
	// Doc is a one-line statement of the semantics.
	Doc string
	// Refines names the row (by ID) whose encoding space wholly contains this
	// row's: a special case with its own mnemonic, such as nop, which is the
	// word of setzi $m14, 0. Decoding prefers the refining row, and encoding
	// the general row with values that land on it is refused, so every word
	// still has exactly one meaning.
	Refines string

	mask  uint32 // derived
	index int
}

// CoIssueBit is bit 31: set on the first word of a two-instruction bundle.
const CoIssueBit = uint32(1) << 31

// ID is the row's unique name: mnemonic or mnemonic.variant.
func (in *Inst) ID() string {
	if in.Variant == "" {
		return in.Mnemonic
	}
	return in.Mnemonic + "." + in.Variant
}

// Mask is the set of fixed bits of word 0.
func (in *Inst) Mask() uint32 { return in.mask }

// Index is the row's position in Table.
func (in *Inst) Index() int { return in.index }

// Size is the encoded size in bytes.
func (in *Inst) Size() int { return 4 * in.Words }

// Encode packs operand values (register numbers, CSR numbers, immediates) into
// instruction words. coissue sets the bundle flag. It fails when a value does
// not fit or is misaligned, naming the operand.
func (in *Inst) Encode(vals []int64, coissue bool) ([]uint32, error) {
	if len(vals) != len(in.Operands) {
		return nil, fmt.Errorf("%s takes %d operands, got %d", in.Mnemonic, len(in.Operands), len(vals))
	}
	words := make([]uint32, in.Words)
	words[0] = in.Match
	if coissue {
		if !in.CoIssue {
			return nil, fmt.Errorf("%s cannot be co-issued", in.ID())
		}
		words[0] |= CoIssueBit
	}
	for i := range in.Operands {
		op := &in.Operands[i]
		if err := op.check(vals[i]); err != nil {
			return nil, fmt.Errorf("%s operand %d (%s): %w", in.ID(), i+1, op.Name, err)
		}
		op.put(words, vals[i])
	}
	if got := Lookup(words[0]); got != in && (got == nil || got.Refines != in.ID()) {
		name := "no instruction"
		if got != nil {
			name = got.ID()
		}
		return nil, fmt.Errorf("%s with these operands encodes 0x%08x, which is the word of %s; write that instead", in.ID(), words[0], name)
	}
	return words, nil
}

func (o *Operand) check(v int64) error {
	lo, hi := o.Range()
	if v < lo || v > hi {
		return fmt.Errorf("value %d out of range [%d, %d]", v, lo, hi)
	}
	if o.Shift > 0 && (v-o.Offset)&(int64(1)<<o.Shift-1) != 0 {
		if o.Kind.IsRegister() {
			return fmt.Errorf("register $%s%d is not aligned to a group of %d", o.Kind.RegFile(), v, int64(1)<<o.Shift)
		}
		return fmt.Errorf("value %d is not a multiple of %d", v, int64(1)<<o.Shift)
	}
	return nil
}

// put writes v into the operand's fields (v must have passed check).
func (o *Operand) put(words []uint32, v int64) {
	stored := uint64((v - o.Offset) >> o.Shift)
	shift := o.Width()
	for _, f := range o.Fields {
		shift -= int(f.Width)
		part := uint32(stored>>uint(shift)) & (uint32(1)<<f.Width - 1)
		words[f.Word] = words[f.Word]&^f.mask() | part<<f.Lo
	}
}

// get extracts the operand's value from words.
func (o *Operand) get(words []uint32) int64 {
	var stored uint64
	for _, f := range o.Fields {
		stored = stored<<f.Width | uint64((words[f.Word]>>f.Lo)&(uint32(1)<<f.Width-1))
	}
	return o.ValueOf(stored)
}

// ValueOf is the operand value (as written in assembly) whose encoding
// stores the field value stored: sign-extended when Signed, then shifted
// and offset. The SDK learner uses it to write operands that set chosen
// field bits.
func (o *Operand) ValueOf(stored uint64) int64 {
	w := o.Width()
	if w < 64 {
		stored &= uint64(1)<<w - 1
	}
	v := int64(stored)
	if o.Signed && w > 0 && stored&(1<<(w-1)) != 0 {
		v -= int64(1) << w
	}
	return v<<o.Shift + o.Offset
}

// Values decodes the operand values of words, which must match the row.
func (in *Inst) Values(words []uint32) []int64 {
	vals := make([]int64, len(in.Operands))
	for i := range in.Operands {
		vals[i] = in.Operands[i].get(words)
	}
	return vals
}

// Decoded is one decoded instruction.
type Decoded struct {
	Inst    *Inst
	Words   []uint32
	Values  []int64
	CoIssue bool
	// Ctx is the context the words were decoded for (DecodeIn), or 0 when
	// unknown (Decode). Format uses it to name CSRs whose numbers differ
	// between the supervisor and worker spaces.
	Ctx Context
}

// ErrUnknown is returned for a word that matches no row.
type ErrUnknown struct{ Word uint32 }

func (e *ErrUnknown) Error() string { return fmt.Sprintf("unknown instruction word 0x%08x", e.Word) }

// Decode decodes the instruction at the start of words, whatever context
// runs it. It needs a second word only for two-word rows.
func Decode(words []uint32) (Decoded, error) { return DecodeIn(0, words) }

// DecodeIn decodes for one context (Supervisor or Worker): a word whose row
// that context cannot execute is an error, and CSR operands are named from
// that context's space. ctx 0 means any context, as Decode.
//
// The IPU21 encodings ipustack uses have no word that means different
// instructions in the two contexts, so the context filters rather than
// selects; the uniqueness test checks that per context too.
func DecodeIn(ctx Context, words []uint32) (Decoded, error) {
	if len(words) == 0 {
		return Decoded{}, fmt.Errorf("decode: no words")
	}
	in := Lookup(words[0])
	if in == nil {
		return Decoded{}, &ErrUnknown{Word: words[0]}
	}
	if ctx != 0 && in.Ctx&ctx == 0 {
		return Decoded{}, fmt.Errorf("decode 0x%08x: %s is a %s instruction, not valid in %s context", words[0], in.ID(), in.Ctx, ctx)
	}
	if len(words) < in.Words {
		return Decoded{}, fmt.Errorf("decode 0x%08x: %s needs %d words, have %d", words[0], in.ID(), in.Words, len(words))
	}
	ws := append([]uint32(nil), words[:in.Words]...)
	return Decoded{Inst: in, Words: ws, Values: in.Values(ws), CoIssue: ws[0]&CoIssueBit != 0 && in.CoIssue, Ctx: ctx}, nil
}

// Lookup returns the row whose fixed bits match word, or nil. Buckets list
// refining rows (more fixed bits) first, so nop wins over setzi.
func Lookup(word uint32) *Inst {
	// Install refuses to change encodings once anything has decoded or
	// encoded; a load per lookup is cheap, the store happens once.
	if !used.Load() {
		used.Store(true)
	}
	for _, in := range decodeBuckets[word>>bucketShift] {
		if word&in.mask == in.Match {
			return in
		}
	}
	return nil
}

const bucketShift = 24 // buckets by bits 31..24 (the co-issue bit is handled by listing rows in both)

var (
	// Table is the instruction table, in assembler preference order: when
	// several rows accept the same operand text, the first wins.
	Table         []*Inst
	byMnemonic    = map[string][]*Inst{}
	byID          = map[string]*Inst{}
	decodeBuckets [256][]*Inst
)

// ByMnemonic returns the rows of a mnemonic (nil when unknown).
func ByMnemonic(m string) []*Inst { return byMnemonic[strings.ToLower(m)] }

// ByID returns the row with the given ID (mnemonic or mnemonic.variant).
func ByID(id string) *Inst { return byID[strings.ToLower(id)] }

func init() {
	// extRows (rows_ext.go) holds the mnemonics added after the first table.
	build(append(append(rows(), extRows()...), bcastRows()...))
}

// build indexes the table's rows and derives their masks. A broken row is
// a programming error: it panics with BUG. The rows' encodings (Match and
// operand fields) are saved as the default that Restore brings back.
func build(rs []Inst) {
	Table = make([]*Inst, len(rs))
	for i := range rs {
		in := &rs[i]
		in.index = i
		if in.Words == 0 {
			in.Words = 1
		}
		if in.Cycles == 0 {
			in.Cycles = 1
		}
		// Own the operand slice: installing an overlay rewrites fields in
		// place, which must not leak into another row sharing the array.
		in.Operands = append([]Operand(nil), in.Operands...)
		for j := range in.Operands {
			op := &in.Operands[j]
			op.Fields = append([]Field(nil), op.Fields...)
			if op.Reloc != RelocNone && op.Kind != KindImm {
				panic(fmt.Sprintf("BUG: isa row %s operand %s: relocation on a non-immediate", in.ID(), op.Name))
			}
		}
		if err := derive(in); err != nil {
			panic("BUG: " + err.Error())
		}
		if _, dup := byID[in.ID()]; dup {
			panic(fmt.Sprintf("BUG: isa row %s defined twice", in.ID()))
		}
		byID[in.ID()] = in
		byMnemonic[in.Mnemonic] = append(byMnemonic[in.Mnemonic], in)
		Table[i] = in
	}
	b, err := index(Table, func(id string) *Inst { return byID[id] })
	if err != nil {
		panic("BUG: " + err.Error())
	}
	decodeBuckets = b
	defaultEnc = snapshot(Table)
}

// derive checks a row's operand fields and derives its mask: every bit of
// word 0 that is not an operand field (nor the co-issue flag of a row that
// may co-issue) is fixed.
func derive(in *Inst) error {
	var used [2]uint32
	for j := range in.Operands {
		op := &in.Operands[j]
		if len(op.Fields) == 0 {
			return fmt.Errorf("isa row %s operand %d has no field", in.ID(), j)
		}
		for _, f := range op.Fields {
			if int(f.Word) >= in.Words || int(f.Lo)+int(f.Width) > 32 || f.Width == 0 {
				return fmt.Errorf("isa row %s operand %s field %+v out of the word", in.ID(), op.Name, f)
			}
			if used[f.Word]&f.mask() != 0 {
				return fmt.Errorf("isa row %s operand %s overlaps another field", in.ID(), op.Name)
			}
			used[f.Word] |= f.mask()
		}
		if op.Width() > 62 {
			return fmt.Errorf("isa row %s operand %s is too wide", in.ID(), op.Name)
		}
	}
	free := used[0]
	if in.CoIssue {
		free |= CoIssueBit
	}
	in.mask = ^free
	if in.Match&^in.mask != 0 {
		return fmt.Errorf("isa row %s: Match 0x%08x sets operand bits", in.ID(), in.Match)
	}
	return nil
}

// index checks refinements and builds the decode buckets of rows whose
// masks are derived.
func index(rs []*Inst, byID func(string) *Inst) ([256][]*Inst, error) {
	var buckets [256][]*Inst
	for _, in := range rs {
		// Register the row in every bucket its top byte can take.
		top := in.mask >> bucketShift
		fixed := in.Match >> bucketShift
		freeTop := ^top & 0xFF
		for sub := freeTop; ; sub = (sub - 1) & freeTop {
			buckets[fixed|sub] = append(buckets[fixed|sub], in)
			if sub == 0 {
				break
			}
		}
	}
	for _, in := range rs {
		if in.Refines == "" {
			continue
		}
		gen := byID(in.Refines)
		if gen == nil || gen.mask&^in.mask != 0 || (in.Match^gen.Match)&gen.mask != 0 {
			return buckets, fmt.Errorf("isa row %s does not refine %s", in.ID(), in.Refines)
		}
	}
	for b := range buckets {
		sort.SliceStable(buckets[b], func(i, j int) bool {
			return bits.OnesCount32(buckets[b][i].mask) > bits.OnesCount32(buckets[b][j].mask)
		})
	}
	return buckets, nil
}
