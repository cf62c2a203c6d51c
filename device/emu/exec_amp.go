package emu

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/ipustack/ipustack/isa"
)

// ampState is the AMP unit as docs/amp-and-pace.md defines it: 64 weight
// slots of 64 bits shared by the tile ($CWEI), and per worker context the
// accumulators cur[16] and done[16] ($AACC).
type ampState struct {
	cwei [64]uint64
	// Decoded views of cwei kept in step with every write, so the AMP
	// handlers do no conversion: wh[4s+j] is lane j of slot s as f16 ->
	// f32, wf[2s+j] lane j as f32.
	wh [256]float32
	wf [128]float32
	// whv[m][j][n] is wh[16n+4m+j]: the weight by which phase m multiplies
	// input j into output n. Phase-major, then input-major, so that the 16
	// weights of one (phase, input) are contiguous: two 8-lane vectors for
	// hihoAVX, and an in-order walk for hihoGo.
	whv [4][4][16]float32
	acc [NumWorkers]ampAcc
}

type ampAcc struct {
	cur, done [16]float32
	// mix is the four-lane accumulator f16v4mix writes and f16v4gacc
	// reads (exec_ext_float.go): f32 lanes, rounded to f16 when read;
	// f32v2axpy keeps its two f32 results in lanes 0 and 1 (exec_float.go,
	// named assumption axpy-shares-mix-lanes). Part of the context's
	// accumulator state, so ZAACC and the conservative exit clear it with
	// cur and done.
	mix [4]float32
}

func (a *ampState) setSlot(s int, v uint64) {
	a.cwei[s] = v
	for j := 0; j < 4; j++ {
		w := h2f(uint32(v>>(16*j)) & 0xFFFF)
		a.wh[4*s+j] = w
		a.whv[s&3][j][s>>2] = w
	}
	a.wf[2*s] = f32(uint32(v))
	a.wf[2*s+1] = f32(uint32(v >> 32))
}

// CWEI returns weight slot s (0..63).
func (t *Tile) CWEI(s int) uint64 { return t.amp.cwei[s&63] }

// bindPutcs: ld64putcs / ld128putcs (supervisor): weight slots from memory
// at $CCCSLOAD, which then advances by the bytes loaded.
func bindPutcs(bytes uint32) binder {
	return func(in *isa.Inst) (impl, error) {
		if !shape(in, kI) {
			return impl{}, layoutErr(in, "imm")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			if t.running != 0 {
				// $CWEI is shared by every worker and the AMP reads it at
				// every issue: poplibs' supervisors always wait for all
				// workers (sync LOCAL) before loading it ("must wait for
				// all workers ... as it is shared"), and no public source
				// says what a worker's AMP sees mid-reload. Always a fault,
				// not an assumption.
				t.raise(FaultWeights, "%s rewrites $CWEI while %s (a worker may still issue AMP instructions; wait for the workers with sync 2 first)", o.row.Mnemonic, runningWorkers(t.running))
				return
			}
			s := int(o.v[0])
			if s < 0 || s+int(bytes/8) > 64 || (bytes == 16 && s&1 != 0) {
				t.raise(FaultIllegal, "%s: weight slot %d out of range (0..63, even for 128-bit loads)", o.row.Mnemonic, s)
				return
			}
			addr := t.Sup.CSR[csrCCCSLoad]
			if !t.check(addr, bytes, "weight load") {
				return
			}
			if bytes == 16 && addr < region1Base {
				t.raise(FaultInterleave, "ld128putcs at 0x%x: 128-bit loads need interleaved memory (region 1)", addr)
				return
			}
			for i := 0; i < int(bytes/8); i++ {
				t.amp.setSlot(s+i, t.load64(addr+uint32(8*i)))
			}
			t.Sup.CSR[csrCCCSLoad] = addr + bytes
		}}, nil
	}
}

// runningWorkers names the workers in mask, for fault reasons.
func runningWorkers(mask uint8) string {
	var ws []string
	for w := 0; w < NumWorkers; w++ {
		if mask&(1<<w) != 0 {
			ws = append(ws, fmt.Sprint(w))
		}
	}
	if len(ws) == 1 {
		return "worker " + ws[0] + " runs"
	}
	return "workers " + strings.Join(ws, ", ") + " run"
}

func aPair(c *Context, r int32) uint64 {
	r &= 14
	return uint64(c.A[r]) | uint64(c.A[r+1])<<32
}

// f16v4hihov4amp $aD:D+1, $aX:X+1, $aP:P+1, p (docs/amp-and-pace.md).
func bindHiho(in *isa.Inst) (impl, error) {
	if !shape(in, kAP, kAP, kAP, kI) {
		return impl{}, layoutErr(in, "apair, apair, apair, imm")
	}
	return impl{auxDst: true, fn: func(t *Tile, c *Context, o *inst) {
		acc := &t.amp.acc[c.Worker&7%NumWorkers]
		x, pp := aPair(c, o.v[1]), aPair(c, o.v[2])
		p := int(o.v[3] & 3)
		d := o.v[0] & 14
		// 1. Drain four finished sums, rounded to f16: to nearest even, or
		// stochastically when $FP_CTL.ESR is set (sround.go; one 64-bit
		// draw, output 4p+i using bits 16i..16i+15). The stochastic drain
		// reads done before step 4 can replace it; hiho then computes (and
		// we drop) the nearest-even one.
		var out uint64
		sr := srOn(c)
		if sr {
			r := c.next64()
			out = uint64(pack16SR(acc.done[4*p], acc.done[4*p+1], uint32(r))) |
				uint64(pack16SR(acc.done[4*p+2], acc.done[4*p+3], uint32(r>>32)))<<32
		}
		// Steps 1 (nearest even) to 4; the assembly is the fast path on
		// x86-64 with AVX and F16C, bit-identical to hihoGo.
		var rne uint64
		if hihoAsm {
			rne = hihoAVX(acc, &t.amp.whv[p], x, pp, p)
		} else {
			rne = hihoGo(acc, &t.amp.whv[p], x, pp, p)
		}
		if !sr {
			out = rne
		}
		c.A[d], c.A[d+1] = uint32(out), uint32(out>>32)
	}}, nil
}

// hihoGo is f16v4hihov4amp's arithmetic for phase p with input x and
// partials pp (four f16 each) on one context's accumulators, w being the
// phase's weights (ampState.whv[p]). It returns the four drained outputs
// rounded to nearest even, packed as the destination pair holds them.
func hihoGo(acc *ampAcc, w *[4][16]float32, x, pp uint64, p int) uint64 {
	p &= 3
	// 1. Drain four finished sums.
	out := uint64(pack16(acc.done[4*p], acc.done[4*p+1])) |
		uint64(pack16(acc.done[4*p+2], acc.done[4*p+3]))<<32
	// 2. 16 outputs x 4 inputs, each product exact in f32 and added
	// one at a time in j order.
	x0, x1, x2, x3 := h2f(uint32(x)&0xFFFF), h2f(uint32(x>>16)&0xFFFF), h2f(uint32(x>>32)&0xFFFF), h2f(uint32(x>>48))
	cur := &acc.cur
	for n := range cur {
		s := cur[n]
		s += float32(w[0][n] * x0)
		s += float32(w[1][n] * x1)
		s += float32(w[2][n] * x2)
		s += float32(w[3][n] * x3)
		cur[n] = s
	}
	// 3. Partials in.
	for i := 0; i < 4; i++ {
		cur[4*p+i] += h2f(uint32(pp>>(16*i)) & 0xFFFF)
	}
	// 4. Row complete.
	if p == 3 {
		acc.done, acc.cur = acc.cur, [16]float32{}
	}
	return out
}

// f16v4sisoamp: f16 inputs, f32 partials, 8 outputs.
func bindSiso16(in *isa.Inst) (impl, error) {
	if !shape(in, kAP, kAP, kAP, kI) {
		return impl{}, layoutErr(in, "apair, apair, apair, imm")
	}
	return impl{auxDst: true, fn: func(t *Tile, c *Context, o *inst) {
		acc := &t.amp.acc[c.Worker&7%NumWorkers]
		x, pp := aPair(c, o.v[1]), aPair(c, o.v[2])
		p := int(o.v[3] & 3)
		d := o.v[0] & 14
		c.A[d], c.A[d+1] = bitsf(acc.done[2*p]), bitsf(acc.done[2*p+1])
		x0, x1, x2, x3 := h2f(uint32(x)&0xFFFF), h2f(uint32(x>>16)&0xFFFF), h2f(uint32(x>>32)&0xFFFF), h2f(uint32(x>>48))
		w := &t.amp.wh
		for n := 0; n < 8; n++ {
			b := 4 * (4*n + p)
			s := acc.cur[n]
			s += float32(w[b] * x0)
			s += float32(w[b+1] * x1)
			s += float32(w[b+2] * x2)
			s += float32(w[b+3] * x3)
			acc.cur[n] = s
		}
		acc.cur[2*p] += f32(uint32(pp))
		acc.cur[2*p+1] += f32(uint32(pp >> 32))
		if p == 3 {
			acc.done, acc.cur = acc.cur, [16]float32{}
		}
	}}, nil
}

// f32sisov2amp: one f32 input per issue against 16 outputs, eight phases
// (docs/amp-and-pace.md). Each multiply-add is fused: computed exactly as
// math.FMA in float64 and then rounded to f32 (docs/machine.md notes the rare
// double-rounding difference from a single f32 rounding).
func bindSiso32(in *isa.Inst) (impl, error) {
	if !shape(in, kAP, kA, kAP, kI) {
		return impl{}, layoutErr(in, "apair, areg, apair, imm")
	}
	return impl{auxDst: true, fn: func(t *Tile, c *Context, o *inst) {
		acc := &t.amp.acc[c.Worker&7%NumWorkers]
		x := float64(f32(c.A[o.v[1]&15]))
		pp := aPair(c, o.v[2])
		p := int(o.v[3] & 7)
		d := o.v[0] & 14
		c.A[d], c.A[d+1] = bitsf(acc.done[2*p]), bitsf(acc.done[2*p+1])
		w := &t.amp.wf
		for n := 0; n < 16; n++ {
			acc.cur[n] = float32(math.FMA(float64(w[8*n+p]), x, float64(acc.cur[n])))
		}
		acc.cur[2*p] += f32(uint32(pp))
		acc.cur[2*p+1] += f32(uint32(pp >> 32))
		if p == 7 {
			acc.done, acc.cur = acc.cur, [16]float32{}
		}
	}}, nil
}

// ---- pace loads/stores and tapack (docs/amp-and-pace.md) ----

const addrMask = 1<<21 - 1

// bindTapack: dst pair = load0 | load1<<21 | store<<42.
func bindTapack(in *isa.Inst) (impl, error) {
	if !shape(in, kMP, kM, kM, kM) {
		return impl{}, layoutErr(in, "mpair, mreg, mreg, mreg")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		v := uint64(c.M[r4(o.v[1])]&addrMask) | uint64(c.M[r4(o.v[2])]&addrMask)<<21 | uint64(c.M[r4(o.v[3])]&addrMask)<<42
		d := o.v[0] & 14
		c.M[d], c.M[d+1] = uint32(v), uint32(v>>32)
	}}, nil
}

// paceInc returns the advance selected by a 2-bit field.
func paceInc(sel, stride uint32) uint32 {
	switch sel & 3 {
	case 0:
		return 8
	case 1:
		return 8 * uint32(int32(stride<<22)>>22)
	case 2:
		return 8 * uint32(int32(stride<<12)>>22)
	}
	return 0
}

// paceKind: which accesses a pace row makes.
type paceKind struct {
	loads int  // 0, 1 or 2
	store bool // stores to the third packed address
	quad  bool // the two loads fill one quad (ld2xst64pace)
}

// bindPace binds the pace family. Operand layouts (isa rows):
// ld2x64pace  apair, apair, mpair+=, mreg, imm
// ldst64pace  apair(dst), apair(src), mpair+=, mreg, imm
// ld2xst64pace aquad(dst), apair(src), mpair+=, mreg, imm
// st64pace    apair(src), mpair+=, mreg, imm
func bindPace(k paceKind) binder {
	return func(in *isa.Inst) (impl, error) {
		var ok bool
		switch {
		case k.quad:
			ok = shape(in, kAQ, kAP, kMPI, kM, kI)
		case k.loads == 0:
			ok = shape(in, kAP, kMPI, kM, kI)
		default:
			ok = shape(in, kAP, kAP, kMPI, kM, kI)
		}
		if !ok {
			return impl{}, layoutErr(in, "the pace layouts of docs/amp-and-pace.md")
		}
		return impl{readsA: k.store, writesA: k.loads > 0, fn: paceFast(k, paceSlow(k))}, nil
	}
}

// paceSlow returns the general handler of a pace row: every access checked
// in turn, so the first bad one raises the fault.
func paceSlow(k paceKind) handler {
	ai := 2 // operand index of the address pair
	if k.loads == 0 {
		ai = 1
	}
	return func(t *Tile, c *Context, o *inst) {
		if k.loads == 0 && !st64paceSelector(t, uint32(o.v[ai+2])) {
			return
		}
		pr := o.v[ai] & 14
		packed := uint64(c.M[pr]) | uint64(c.M[pr+1])<<32
		a0 := uint32(packed) & addrMask
		a1 := uint32(packed>>21) & addrMask
		as := uint32(packed>>42) & addrMask
		stride := c.M[r4(o.v[ai+1])]
		f := uint32(o.v[ai+2])
		// Loads first, then the store (docs/amp-and-pace.md).
		var l0, l1 uint64
		if k.loads >= 1 {
			if !t.check(a0, 8, "pace load") {
				return
			}
			l0 = t.load64(a0)
		}
		if k.loads == 2 {
			if !t.check(a1, 8, "pace load") {
				return
			}
			l1 = t.load64(a1)
		}
		var sv uint64
		if k.store {
			sr := o.v[0]
			if k.loads > 0 {
				sr = o.v[1]
			}
			sv = aPair(c, sr)
			if !t.check(as, 8, "pace store") {
				return
			}
		}
		switch {
		case k.quad:
			d := o.v[0] & 12
			c.A[d], c.A[d+1], c.A[d+2], c.A[d+3] = uint32(l0), uint32(l0>>32), uint32(l1), uint32(l1>>32)
		case k.loads == 2:
			d0, d1 := o.v[0]&14, o.v[1]&14
			c.A[d0], c.A[d0+1] = uint32(l0), uint32(l0>>32)
			c.A[d1], c.A[d1+1] = uint32(l1), uint32(l1>>32)
		case k.loads == 1:
			d := o.v[0] & 14
			c.A[d], c.A[d+1] = uint32(l0), uint32(l0>>32)
		}
		if k.store {
			t.store64(as, sv)
		}
		// Advance: 2-bit selectors, load 0 first, load 1, store last.
		sh := uint32(0)
		if k.loads >= 1 {
			a0 = (a0 + paceInc(f>>sh, stride)) & addrMask
			sh += 2
		}
		if k.loads == 2 {
			a1 = (a1 + paceInc(f>>sh, stride)) & addrMask
			sh += 2
		}
		if k.store {
			as = (as + paceInc(f>>sh, stride)) & addrMask
		}
		packed = uint64(a0) | uint64(a1)<<21 | uint64(as)<<42
		c.M[pr], c.M[pr+1] = uint32(packed), uint32(packed>>32)
	}
}

// st64paceSelector reports whether st64pace's selector f is one the
// emulator defines, and faults when it is not. The hover text names the
// operand Strimm2 (2 bits: the store's advance), but poplibs writes 4-bit
// values that Graphcore's assembler accepts (0x05, 0b1010), always with
// two equal halves, as in ldst64pace's layout (store selector in bits
// 3..2). Whether the hardware reads bits 1..0 or 3..2 then makes no
// difference, so such values advance by their low half; a value whose
// halves differ would need that choice, and faults instead.
func st64paceSelector(t *Tile, f uint32) bool {
	if f <= 3 || f>>2 == f&3 {
		return true
	}
	t.raise(FaultNoEmulation, "not emulated: st64pace with selector 0b%04b (the public text gives a 2-bit Strimm2; "+
		"a 4-bit value is defined here only when its halves agree, as poplibs writes them)", f)
	return false
}

// paceFast returns the handler of a pace row: the general handler slow
// (paceSlow), behind a fast path for the common case in which every access is
// aligned and inside SRAM. The fast path checks all addresses at once and
// does what slow does in the same order (loads, then the store, then the
// advance), so the two are interchangeable whenever the check passes; any
// access that would fault goes to slow, which raises the fault in the
// documented order. It exists because the GEMM inner loop issues a pace
// instruction in every bundle.
func paceFast(k paceKind, slow handler) handler {
	switch {
	case k.quad: // ld2xst64pace aquad, apair, mpair+=, mreg, imm
		return func(t *Tile, c *Context, o *inst) {
			pr := o.v[2] & 14
			a0, a1, as := paceAddrs(c, pr)
			if !paceOK(a0, a1, as) {
				slow(t, c, o)
				return
			}
			inc := paceIncs(c.M[r4(o.v[3])])
			mem := (*[sramBytes]byte)(t.mem)
			l0 := binary.LittleEndian.Uint64(mem[a0-sramBase:])
			l1 := binary.LittleEndian.Uint64(mem[a1-sramBase:])
			sv := aPair(c, o.v[1])
			d := o.v[0] & 12
			c.A[d], c.A[d+1], c.A[d+2], c.A[d+3] = uint32(l0), uint32(l0>>32), uint32(l1), uint32(l1>>32)
			t.store64(as, sv)
			f := uint32(o.v[4])
			paceAdvance(c, pr, a0+inc[f&3], a1+inc[f>>2&3], as+inc[f>>4&3])
		}
	case k.loads == 1 && k.store: // ldst64pace apair, apair, mpair+=, mreg, imm
		return func(t *Tile, c *Context, o *inst) {
			pr := o.v[2] & 14
			a0, a1, as := paceAddrs(c, pr)
			if !paceOK(a0, a0, as) {
				slow(t, c, o)
				return
			}
			inc := paceIncs(c.M[r4(o.v[3])])
			l0 := binary.LittleEndian.Uint64((*[sramBytes]byte)(t.mem)[a0-sramBase:])
			sv := aPair(c, o.v[1])
			d := o.v[0] & 14
			c.A[d], c.A[d+1] = uint32(l0), uint32(l0>>32)
			t.store64(as, sv)
			f := uint32(o.v[4])
			paceAdvance(c, pr, a0+inc[f&3], a1, as+inc[f>>2&3])
		}
	case k.loads == 2 && !k.store: // ld2x64pace apair, apair, mpair+=, mreg, imm
		return func(t *Tile, c *Context, o *inst) {
			pr := o.v[2] & 14
			a0, a1, as := paceAddrs(c, pr)
			if !paceOK(a0, a1, a1) {
				slow(t, c, o)
				return
			}
			inc := paceIncs(c.M[r4(o.v[3])])
			mem := (*[sramBytes]byte)(t.mem)
			l0 := binary.LittleEndian.Uint64(mem[a0-sramBase:])
			l1 := binary.LittleEndian.Uint64(mem[a1-sramBase:])
			d0, d1 := o.v[0]&14, o.v[1]&14
			c.A[d0], c.A[d0+1] = uint32(l0), uint32(l0>>32)
			c.A[d1], c.A[d1+1] = uint32(l1), uint32(l1>>32)
			f := uint32(o.v[4])
			paceAdvance(c, pr, a0+inc[f&3], a1+inc[f>>2&3], as)
		}
	case k.loads == 0 && k.store: // st64pace apair, mpair+=, mreg, imm
		return func(t *Tile, c *Context, o *inst) {
			if !st64paceSelector(t, uint32(o.v[3])) {
				return
			}
			pr := o.v[1] & 14
			a0, a1, as := paceAddrs(c, pr)
			if !paceOK(as, as, as) {
				slow(t, c, o)
				return
			}
			inc := paceIncs(c.M[r4(o.v[2])])
			t.store64(as, aPair(c, o.v[0]))
			paceAdvance(c, pr, a0, a1, as+inc[uint32(o.v[3])&3])
		}
	}
	return slow
}

// paceAddrs unpacks the three 21-bit addresses of a tapack'd pair.
func paceAddrs(c *Context, pr int32) (a0, a1, as uint32) {
	packed := uint64(c.M[pr&14]) | uint64(c.M[pr&14+1])<<32
	return uint32(packed) & addrMask, uint32(packed>>21) & addrMask, uint32(packed>>42) & addrMask
}

// paceOK reports whether 8-byte accesses at a, b and s are all aligned
// and inside SRAM (what three Tile.check calls would accept).
func paceOK(a, b, s uint32) bool {
	return (a|b|s)&7 == 0 && a-sramBase <= sramBytes-8 && b-sramBase <= sramBytes-8 && s-sramBase <= sramBytes-8
}

// paceIncs is the advance each 2-bit selector picks (paceInc) for stride.
func paceIncs(stride uint32) [4]uint32 {
	return [4]uint32{8, 8 * uint32(int32(stride<<22)>>22), 8 * uint32(int32(stride<<12)>>22), 0}
}

// paceAdvance writes the advanced addresses back to the pair.
func paceAdvance(c *Context, pr int32, a0, a1, as uint32) {
	packed := uint64(a0&addrMask) | uint64(a1&addrMask)<<21 | uint64(as&addrMask)<<42
	c.M[pr&14], c.M[pr&14+1] = uint32(packed), uint32(packed>>32)
}

// ---- rpt ----

// rptIterations is how many times a body runs for a repeat count n: n
// times, none for 0 (docs/isa.md; public hover text for rpt: "If the
// repeat-count is zero initially, rpt will act as a branch over the
// repeat-body").
func rptIterations(n uint32) uint32 { return n }

// bindRpt: `rpt count, last` repeats the next last+1 bundles. The count
// rule is rptCountRule (see docs/machine-tile.md and docs/isa.md).
func bindRpt(in *isa.Inst) (impl, error) {
	var fromReg bool
	switch {
	case shape(in, kM, kI):
		fromReg = true
	case shape(in, kI, kI):
	default:
		return impl{}, layoutErr(in, "mreg, imm", "imm, imm")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		n := uint32(o.v[0])
		if fromReg {
			n = c.M[r4(o.v[0])]
		}
		n &= 0xFFFF // $REPEAT_COUNT is 16 bits wide (hover text)
		iters := rptIterations(n)
		first := c.PC // the bundle after rpt (and its co-issued aux)
		if first&7 != 0 {
			t.raise(FaultRepeat, "rpt body at 0x%x is not 8-byte aligned (docs/isa.md)", first)
			return
		}
		end, ok := t.rptBody(first, int(o.v[1])+1)
		if !ok {
			return
		}
		if iters == 0 {
			c.PC = end
			return
		}
		c.rptFirst, c.rptEnd, c.rptCount = first, end, iters-1
	}}, nil
}

// rptBody validates the repeat body of nb bundles from first and returns
// its end. The check is cached on the rpt's own bundle until region 0 is
// written again.
func (t *Tile) rptBody(first uint32, nb int) (uint32, bool) {
	self := t.fetch(t.curPC)
	if self != nil && self.gen == t.codeGen && self.rptLen != 0 {
		return first + self.rptLen, true
	}
	pc := first
	for i := 0; i < nb; i++ {
		b := t.fetch(pc)
		if b == nil {
			// fetch raised a fault at the body address; say it is the
			// rpt body.
			if t.fault != nil {
				t.fault.Kind = FaultRepeat
				t.fault.Reason = "rpt body: " + t.fault.Reason
			}
			return 0, false
		}
		switch {
		case b.ctl:
			t.raise(FaultRepeat, "rpt body bundle %d at 0x%x holds a control instruction (%s)", i, pc, bundleIDs(b))
			return 0, false
		case b.n != 2:
			t.raise(FaultRepeat, "rpt body bundle %d at 0x%x is a solo instruction (%s); every body bundle must be a main+aux pair", i, pc, bundleIDs(b))
			return 0, false
		}
		pc += uint32(b.size)
	}
	if self != nil {
		self.gen, self.rptLen = t.codeGen, pc-first
	}
	return pc, true
}

var ampBinders = map[string]binder{
	"ld64putcs":      bindPutcs(8),
	"ld128putcs":     bindPutcs(16),
	"f16v4hihov4amp": bindHiho,
	"f16v4sisoamp":   bindSiso16,
	"f32sisov2amp":   bindSiso32,
	"tapack":         bindTapack,
	"ld2x64pace":     bindPace(paceKind{loads: 2}),
	"ldst64pace":     bindPace(paceKind{loads: 1, store: true}),
	"ld2xst64pace":   bindPace(paceKind{loads: 2, store: true, quad: true}),
	"st64pace":       bindPace(paceKind{store: true}),
	"rpt":            bindRpt,
}
