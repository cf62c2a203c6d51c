package isa

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// vectors are words whose encodings are public (LLVM Colossus fork,
// ipu-stack instruction.rs and its exchange reference, the exchange oracle
// of reference/IPU21.md), with the text ipustack prints for them.
var vectors = []struct {
	ctx   Context
	words []uint32
	text  string
}{
	{0, []uint32{0x19100005}, "setzi $m1, 5"},
	{0, []uint32{0x99100005}, "setzi $m1, 5"}, // co-issue bit: first word of a bundle
	{0, []uint32{0x43A00000}, "br $m10"},
	{0, []uint32{0x41800003}, "sync 3"},
	{0, []uint32{0x19E00000}, "nop"},
	{0, []uint32{0x41801002}, "trap 2"},
	{0, []uint32{0x40C00000}, "sans 0"},
	{0, []uint32{0x40C00005}, "sans 5"},
	{0, []uint32{0x22BBFFF0}, "add $m11, $m11, -16"},
	{0, []uint32{0x22BB0010}, "add $m11, $m11, 16"},
	{0, []uint32{0x0138F000}, "ld32 $m8, $m3, $mzero, 0"},
	{0, []uint32{0x4FB2F001}, "st32 $m2, $m11, $mzero, 1"},
	{Supervisor, []uint32{0x43408050}, "put $CCCSLOAD, $m4"},
	{Supervisor, []uint32{0x43808020}, "put $FP_ICTL, $m8"},
	{Worker, []uint32{0x41000001}, "get $m0, $WSR"},
	{0, []uint32{0x41000001}, "get $m0, 0x1"},
	{Worker, []uint32{0x41000060}, "get $m0, $COUNT_L"},
	{0, []uint32{0x18A13040}, "call $m10, 0x4c100"},
	{0, []uint32{0x13113004}, "brz $m1, 0x4c010"},
	{0, []uint32{0x13793008}, "brnzdec $m7, 0x4c020"},
	{0, []uint32{0x40813000}, "bri 0x4c000"}, // IPU21 bri is 0x40800000 | addr>>2 (LLVM FXI5 row; IPU1 bootloader listing bri 0x400fc = 0x4081003f)
	{0, []uint32{0x4221A003}, "shl $m1, $m2, 3"},
	{0, []uint32{0x4200800F}, "and $m0, $m0, 15"},
	{0, []uint32{0x44001301}, "or $m0, $m0, $m1"},
	{0, []uint32{0x44001701}, "xor $m0, $m0, $m1"},
	{0, []uint32{0x44409273}, "min $m7, $m4, $m9"},
	{0, []uint32{0x44102201}, "cmpult $m0, $m1, $m2"},
	{0, []uint32{0x4100C005}, "ld64putcs 5"},
	{0, []uint32{0x4100D03E}, "ld128putcs 62"},
	{0, []uint32{0x1500B000}, "runall $m0, $m11, 0"},
	{0, []uint32{0x14102004}, "run $m1, $m2, 0x4c010"},
	// Exchange oracle, tile 0 -> 1286, 3 words: sender.
	{Supervisor, []uint32{0x40A00086}, "delay 134"},
	{Supervisor, []uint32{0x78400001}, "send 2, 0x0, 1"},
	// Receiver.
	{Supervisor, []uint32{0x641C0000}, "delayxpic 112, 0, 0x0"},
	{Supervisor, []uint32{0x64008640}, "delayxpic 2, 0, 0x640"},
	{Supervisor, []uint32{0x61800000}, "delaypic 48, 0, 0x0"},
	{Supervisor, []uint32{0x40A00007}, "delay 7"},
	// ipu-stack EXCHANGE_INSTRUCTION_REFERENCE examples (SDK-generated rows).
	{Supervisor, []uint32{0xF54A0109, 0x19015000}, "sendpicp 42, 0x14021, 1, 0, 0x640, 0x15000"},
	{Supervisor, []uint32{0xF6600000, 0x03014048}, "sendpicp 51, 0x0, 0, 0, 0xc0, 0x14048"},
	{Supervisor, []uint32{0xF7200000, 0x19017000}, "sendpicp 57, 0x0, 0, 0, 0x640, 0x17000"},
	{Supervisor, []uint32{0x64000082}, "delayxpic 0, 0, 0x82"},
	{Supervisor, []uint32{0x40A00032}, "delay 50"},
}

func TestPublicVectors(t *testing.T) {
	for _, v := range vectors {
		d, err := DecodeIn(v.ctx, v.words)
		if err != nil {
			t.Errorf("%08x: %v", v.words, err)
			continue
		}
		if got := Format(d); got != v.text {
			t.Errorf("%08x: got %q, want %q", v.words, got, v.text)
		}
		w, err := d.Inst.Encode(d.Values, d.CoIssue)
		if err != nil || fmt.Sprint(w) != fmt.Sprint(v.words) {
			t.Errorf("%08x: re-encoded %08x, %v", v.words, w, err)
		}
		// The text assembles back to the same words.
		w2, err := assemble(v.ctx, v.text, d.CoIssue)
		if err != nil || fmt.Sprint(w2) != fmt.Sprint(v.words) {
			t.Errorf("%q: assembled %08x, %v; want %08x", v.text, w2, err, v.words)
		}
	}
}

// The oracle transfer words of reference/IPU21.md decode as a whole program.
func TestExchangeOracle(t *testing.T) {
	for _, prog := range [][]uint32{
		{0x41800003, 0x40a00086, 0x78400001, 0x43a00000},
		{0x41800003, 0x641c0000, 0x64008640, 0x61800000, 0x40a00007, 0x43a00000},
	} {
		for pc := 0; pc < len(prog); {
			d, err := DecodeIn(Supervisor, prog[pc:])
			if err != nil {
				t.Fatalf("%08x: %v", prog[pc], err)
			}
			pc += d.Inst.Words
		}
	}
}

func TestContexts(t *testing.T) {
	if _, err := DecodeIn(Worker, []uint32{0x41800003}); err == nil {
		t.Error("sync decoded in worker context")
	}
	if _, err := DecodeIn(Supervisor, []uint32{0x5BD00000}); err == nil {
		t.Error("fnop decoded in supervisor context")
	}
	if n, ok := ByMnemonic("uput")[0].Operands[0].CSRNumber(Worker, "FP_CLR"); !ok || n != 1 {
		t.Errorf("$FP_CLR = %d %v", n, ok)
	}
	if n, ok := CSRByNameIn(CSRLower, Supervisor, "ssr"); !ok || n != 1 {
		t.Errorf("$SSR = %d %v", n, ok)
	}
	if _, ok := CSRByNameIn(CSRLower, Supervisor, "wsr"); ok {
		t.Error("$WSR resolved in the supervisor space")
	}
}

// Two rows collide when some word matches both: their fixed bits agree
// wherever both are fixed. A refining row (nop) is allowed inside its
// general row; decode then prefers it.
func TestNoCollisions(t *testing.T) {
	for _, ctx := range []Context{Supervisor, Worker, Both} {
		for i, a := range Table {
			if a.Ctx&ctx == 0 {
				continue
			}
			for _, b := range Table[i+1:] {
				if b.Ctx&ctx == 0 || a.Refines == b.ID() || b.Refines == a.ID() {
					continue
				}
				if (a.Match^b.Match)&a.Mask()&b.Mask() == 0 {
					t.Errorf("%s: %s (%08x/%08x) and %s (%08x/%08x) collide", ctx, a.ID(), a.Match, a.Mask(), b.ID(), b.Match, b.Mask())
				}
			}
		}
	}
}

// instances returns operand value lists for a row: every boundary
// combination per operand plus random values.
func instances(in *Inst, r *rand.Rand) [][]int64 {
	var out [][]int64
	pick := func(o *Operand, mode int) int64 {
		lo, hi := o.Range()
		step := int64(1) << o.Shift
		switch mode {
		case 0:
			return lo
		case 1:
			return hi - (hi-o.Offset)%step
		case 2:
			if lo <= 0 && hi >= 0 && o.Offset == 0 {
				return 0
			}
			return lo
		}
		n := (hi-lo)/step + 1
		return lo + r.Int63n(n)*step
	}
	for mode := 0; mode < 3; mode++ {
		vals := make([]int64, len(in.Operands))
		for i := range in.Operands {
			vals[i] = pick(&in.Operands[i], mode)
		}
		out = append(out, vals)
	}
	for k := 0; k < 200; k++ {
		vals := make([]int64, len(in.Operands))
		for i := range in.Operands {
			vals[i] = pick(&in.Operands[i], 3)
		}
		out = append(out, vals)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, in := range Table {
		for _, vals := range instances(in, r) {
			for i := range in.Operands {
				if err := in.Operands[i].Check(vals[i]); err != nil {
					t.Fatalf("%s: generated %v: %v", in.ID(), vals, err)
				}
			}
			for _, co := range []bool{false, true} {
				if co && !in.CoIssue {
					if _, err := in.Encode(vals, true); err == nil {
						t.Errorf("%s encoded with the co-issue bit", in.ID())
					}
					continue
				}
				w, err := in.Encode(vals, co)
				if err != nil {
					if in.Refines == "" && strings.Contains(err.Error(), "is the word of") {
						continue // e.g. setzi $m14, 0 is nop
					}
					t.Errorf("%s %v: %v", in.ID(), vals, err)
					continue
				}
				d, err := Decode(w)
				if err != nil || d.Inst != in || fmt.Sprint(d.Values) != fmt.Sprint(vals) || d.CoIssue != co {
					t.Errorf("%s %v -> %08x -> %v %v", in.ID(), vals, w, d.Values, err)
					continue
				}
				for _, ctx := range []Context{0, Supervisor, Worker} {
					if ctx != 0 && in.Ctx&ctx == 0 {
						continue
					}
					d.Ctx = ctx
					text := Format(d)
					if Format(d) != text {
						t.Errorf("%s: unstable text %q", in.ID(), text)
					}
					w2, err := assemble(ctx, text, co)
					if err != nil || fmt.Sprint(w2) != fmt.Sprint(w) {
						t.Errorf("%s %v: %q assembles to %08x (%v), want %08x", in.ID(), vals, text, w2, err, w)
					}
					// A suffix appears only when the plain mnemonic would pick another row.
					mn, _, _ := strings.Cut(text, " ")
					if strings.Contains(mn, ".") && preferredRow(in.Mnemonic, in.Operands, vals) == in {
						t.Errorf("%s: needless suffix in %q", in.ID(), text)
					}
				}
			}
		}
	}
}

// assemble is a minimal assembler for one instruction of disassembly text,
// using the same row choice as the real assembler (Accepts, in table order).
func assemble(ctx Context, text string, coissue bool) ([]uint32, error) {
	mn, rest, _ := strings.Cut(text, " ")
	var fields []string
	if rest != "" {
		fields = strings.Split(rest, ", ")
	}
	kinds := make([]Operand, len(fields))
	vals := make([]int64, len(fields))
	csrNames := make([]string, len(fields))
	for i, s := range fields {
		switch {
		case strings.HasPrefix(s, "$"):
			name := strings.TrimPrefix(s, "$")
			var suffix Kind
			for _, k := range []Kind{KindMRegInc, KindMRegPostInc, KindMRegDelta, KindMRegShr} {
				if strings.HasSuffix(name, k.RegSuffix()) {
					suffix, name = k, strings.TrimSuffix(name, k.RegSuffix())
					break
				}
			}
			if lo, sel, ok := strings.Cut(name, ":"); ok && (sel == "B" || sel == "BL" || sel == "BU") {
				_, first, _, _ := ParseRegister(lo)
				kinds[i].Kind, vals[i] = map[string]Kind{"B": KindABcast, "BL": KindABcastLo, "BU": KindABcastHi}[sel], int64(first)
				continue
			}
			file, first, count, ok := ParseRegister(name)
			if !ok {
				kinds[i].Kind, csrNames[i] = KindCSR, name
				continue
			}
			k := map[string]Kind{"m1": KindMReg, "m2": KindMPair, "a1": KindAReg, "a2": KindAPair, "a3": KindATriple, "a4": KindAQuad}[file+strconv.Itoa(count)]
			switch {
			case suffix == KindMRegInc:
				k = map[Kind]Kind{KindMReg: KindMRegInc, KindMPair: KindMPairInc}[k]
			case suffix != 0 && k == KindMReg:
				k = suffix
			}
			kinds[i].Kind, vals[i] = k, int64(first)
		default:
			v, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				return nil, err
			}
			kinds[i].Kind, vals[i] = KindImm, v
		}
	}
	var cands []*Inst
	if in := ByID(mn); in != nil && strings.Contains(mn, ".") {
		cands = []*Inst{in}
	} else {
		cands = ByMnemonic(mn)
	}
	for _, c := range cands {
		if ctx != 0 && c.Ctx&ctx == 0 || len(c.Operands) != len(fields) {
			continue
		}
		vs := append([]int64(nil), vals...)
		ok := true
		for i, name := range csrNames {
			if name == "" {
				continue
			}
			if c.Operands[i].Kind != KindCSR {
				ok = false
				break
			}
			n, found := c.Operands[i].CSRNumber(ctx, name)
			if !found {
				ok = false
				break
			}
			vs[i] = n
		}
		for i := range vs {
			if kinds[i].Kind == KindImm && csrNames[i] == "" {
				vs[i] = c.Operands[i].TextValue(vs[i])
			}
		}
		if ok && Accepts(c, kinds, vs) {
			return c.Encode(vs, coissue)
		}
	}
	return nil, fmt.Errorf("no row of %q accepts %q", mn, rest)
}

// Every operand that takes a symbol has exactly the layout its relocation
// patches, so the linker's patch equals the encoder's.
func TestRelocFields(t *testing.T) {
	for _, in := range Table {
		for _, o := range in.Operands {
			if o.Reloc == RelocNone {
				continue
			}
			ri, ok := RelocByType(o.Reloc)
			if !ok {
				t.Fatalf("%s %s: unknown relocation %d", in.ID(), o.Name, o.Reloc)
			}
			fields := ri.Fields
			if fields == nil && ri.Size <= 4 {
				fields = []Field{{Lo: 0, Width: uint8(8 * ri.Size)}}
			}
			if fmt.Sprint(fields) != fmt.Sprint(o.Fields) || ri.Shift != o.Shift || ri.Base != o.Offset || o.Signed || ri.Bits != o.Width() {
				t.Errorf("%s %s: operand %+v vs %s %+v", in.ID(), o.Name, o, ri.Name, ri)
				continue
			}
			// Patching with the reloc gives the encoder's word.
			lo, hi := o.Range()
			for _, v := range []int64{lo, hi, lo + (hi-lo)/3&^(int64(1)<<o.Shift-1)} {
				vals := make([]int64, len(in.Operands))
				for i := range in.Operands {
					if in.Operands[i].Name != o.Name {
						vals[i], _ = in.Operands[i].Range()
					} else {
						vals[i] = v
					}
				}
				want, err := in.Encode(vals, false)
				if err != nil {
					continue
				}
				zero := append([]int64(nil), vals...)
				for i := range in.Operands {
					if in.Operands[i].Name == o.Name {
						zero[i] = o.Offset
					}
				}
				base, err := in.Encode(zero, false)
				if err != nil {
					continue
				}
				buf := make([]byte, 4)
				binary.LittleEndian.PutUint32(buf, base[0])
				if err := ri.Apply(buf, v); err != nil {
					t.Errorf("%s %s: apply %#x: %v", in.ID(), o.Name, v, err)
					continue
				}
				if got := binary.LittleEndian.Uint32(buf); got != want[0] {
					t.Errorf("%s %s = %#x: reloc gives %08x, encoder %08x", in.ID(), o.Name, v, got, want[0])
				}
			}
		}
	}
}

func TestRowsWellFormed(t *testing.T) {
	for _, in := range Table {
		if in.Doc == "" || in.Source == "" || in.Ctx == 0 || in.Cycles < 1 {
			t.Errorf("%s: missing Doc/Source/Ctx/Cycles", in.ID())
		}
		if in.Pipe == Aux && in.Ctx != Worker {
			t.Errorf("%s: aux rows are worker-only", in.ID())
		}
		if in.Ctx == Supervisor && in.CoIssue {
			t.Errorf("%s: the supervisor does not bundle", in.ID())
		}
	}
	if len(ByMnemonic("f16v4hihov4amp")) != 1 || ByID("ld32.a") == nil {
		t.Error("missing rows")
	}
}

func FuzzDecode(f *testing.F) {
	for _, v := range vectors {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, v.words[0])
		if len(v.words) > 1 {
			binary.LittleEndian.PutUint32(b[4:], v.words[1])
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			b = append(b, make([]byte, 8-len(b))...)
		}
		words := []uint32{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])}
		for _, ctx := range []Context{0, Supervisor, Worker} {
			d, err := DecodeIn(ctx, words)
			if err != nil {
				continue
			}
			w, err := d.Inst.Encode(d.Values, d.CoIssue)
			if err != nil {
				t.Fatalf("%08x decodes as %s %v but does not re-encode: %v", words, d.Inst.ID(), d.Values, err)
			}
			for i := range w {
				if w[i] != words[i] {
					t.Fatalf("%08x -> %s %v -> %08x", words, d.Inst.ID(), d.Values, w)
				}
			}
			_ = Format(d)
		}
	})
}

// Register names, including LLVM's pair aliases $apN (MC test reg-pairs.s:
// $ap0..$ap6 are the pairs, $ap7..$ap15 all encode pair 7, the zero pair).
func TestParseRegisterNames(t *testing.T) {
	for _, c := range []struct {
		name         string
		file         string
		first, count int
		ok           bool
	}{
		{"m3", "m", 3, 1, true}, {"a4:5", "a", 4, 2, true}, {"a0:3", "a", 0, 4, true}, {"mzero", "m", 15, 1, true},
		{"ap0", "a", 0, 2, true}, {"ap3", "a", 6, 2, true}, {"AP6", "a", 12, 2, true}, {"ap7", "a", 14, 2, true},
		{"ap8", "a", 14, 2, true}, {"ap15", "a", 14, 2, true},
		{"ap16", "", 0, 0, false}, {"ap01", "", 0, 0, false}, {"ap", "", 0, 0, false}, {"ap1:2", "", 0, 0, false},
	} {
		file, first, count, ok := ParseRegister(c.name)
		if file != c.file || first != c.first || count != c.count || ok != c.ok {
			t.Errorf("%s: %q %d %d %v, want %q %d %d %v", c.name, file, first, count, ok, c.file, c.first, c.count, c.ok)
		}
	}
}
