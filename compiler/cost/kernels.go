// Package cost holds ipustack's cost models: the cycles of every tile kernel
// as a function of its parameters, the cycles of an exchange phase, and the
// memory an operand takes on a tile. The mid-level planner (compiler/mid)
// ranks plans with them, so they must be cheap and close to what the
// emulator measures.
//
// # Kernel models
//
// Each kernel model is structural: the number of bundles each of the six
// workers issues in each worker run is counted from the kernel's source
// (kernels/assemble/src/*.S: prologue instructions, rpt bodies, per-group overheads,
// the work split "worker w takes n/6 + (w < n%6) rows/words"), and those
// counts are fed through the tile's issue rules (issueModel: six slots, one
// bundle per 6 cycles per worker, the supervisor in the free slots, sync 2
// resuming after the last exit). Nothing is fitted: the only inputs are the
// sources and docs/machine.md. The differential test (models_test.go) runs
// kernels/bench on a table of parameter points, extremes included, and
// checks each model against the emulated cycles; the bounds it asserts are
// stated there and in docs of Kernel.
//
// A GEMM model costs O(c/16 * k/16) steps (one per weight group), the others
// O(1); all allocate nothing.
package cost

import (
	"fmt"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// gemmWorkerBundles is the bundle count of one worker run of the AMP GEMM
// (src/gemm.inc) for a worker owning n rows. kind: 0 first inner group of a
// column group, 1 middle, 2 last (drains), 3 first and last (k = 16).
func gemmWorkerBundles(fast bool, kind, n int) int {
	if fast {
		// FASTBODY: L + 5 PB + rpt + 4(n-2) body + 2 PB = 4n + 1.
		body := 4*n + 1
		switch kind {
		case 0:
			return 4 + body + 1 // 3 adds + tapack; exitz tail
		case 1:
			return 1 + body + 1 // add; exitz tail
		case 2:
			return 1 + body + 7 // add; drain tail (6 stores + exitz)
		default:
			return 4 + body + 7
		}
	}
	// Small path (r < 12): SMALLRUN with n = 0, 1 or 2 rows.
	var run int
	switch n {
	case 0:
		run = 2 // brz; exitz
	case 1:
		run = 15
	default:
		run = 19
	}
	if kind == 0 || kind == 3 {
		return 2 + run // add, add
	}
	return 1 + run // add
}

// gemm is the model of gemm_f16 (cols 16, putcs 32) and gemm_f16_f32acc
// (cols 8, putcs 16).
func gemm(k, c, r, cols, putcs int) int64 {
	kg, cg := k/16, c/cols
	rows := rowsPerWorker(r)
	fast := r/slots >= 2
	var b [ipu21.WorkerContexts]int
	m := newIssueModel()
	m.issue(2) // put $CCCSLOAD; setzi
	for w := range b {
		if fast {
			b[w] = 22
		} else {
			b[w] = 12
		}
	}
	m.runall(&b)
	m.issue(4) // setzi $m1, $m7, $m8, $m5
	group := func(kind int) {
		m.sync2()
		m.issue(putcs)
		for w := range b {
			b[w] = gemmWorkerBundles(fast, kind, rows[w])
		}
		m.runall(&b)
	}
	m.repeat(cg, func() {
		if kg == 1 {
			group(3)
		} else {
			group(0)
		}
		if kg >= 3 {
			m.issue(1) // setzi $m6
			m.repeat(kg-2, func() {
				group(1)
				m.issue(1) // brnzdec $m6
			})
		}
		if kg >= 2 {
			group(2)
		}
		m.issue(1) // brnzdec $m5
	})
	m.sync2()
	return int64(m.issue(1)) // br $m10
}

// gemmDrainWorkerBundles is the bundle count of one worker run of
// gemm_f16_drain (src/gemm_drain.inc) for a worker owning n rows; first is
// the first inner group of a column group.
func gemmDrainWorkerBundles(fast, first bool, n int) int {
	if fast {
		// RUN2: L + 5 + rpt + 4(n-2) + 2 + 1 + drain 6 = 4n + 8, after
		// 3 (first: add, add, tapack) or 2 (add, tapack) setup bundles.
		if first {
			return 3 + 4*n + 8
		}
		return 2 + 4*n + 8
	}
	// SMALL: brz (n = 0: taken, then exitz), tapack, brz, RUN2 or RUN1.
	var run int
	switch n {
	case 0:
		run = 2
	case 1:
		run = 3 + 11
	default:
		run = 3 + 4*n + 8
	}
	if first {
		return 2 + run // add, add
	}
	return 1 + run // add
}

// GemmF16Drain is the cycle count of one gemm_f16_drain call (gemm_f16's
// parameters).
func GemmF16Drain(k, c, r int) int64 { return gemmDrain(k, c, r, 16, 32) }

// GemmF16F32AccDrain is the cycle count of one gemm_f16_f32acc_drain call
// (gemm_f16_f32acc's parameters).
func GemmF16F32AccDrain(k, c, r int) int64 { return gemmDrain(k, c, r, 8, 16) }

// gemmDrain is the model of gemm_drain.inc with cols output columns and
// putcs ld128putcs per weight block.
func gemmDrain(k, c, r, cols, putcs int) int64 {
	kg, cg := k/16, c/cols
	rows := rowsPerWorker(r)
	fast := r/slots >= 2
	var b [ipu21.WorkerContexts]int
	m := newIssueModel()
	m.issue(2) // put $CCCSLOAD; setzi
	for w := range b {
		if fast {
			b[w] = 13
		} else {
			b[w] = 14
		}
	}
	m.runall(&b)
	m.issue(3) // setzi $m1, $m7, $m5
	group := func(first bool) {
		m.sync2()
		m.issue(putcs)
		for w := range b {
			b[w] = gemmDrainWorkerBundles(fast, first, rows[w])
		}
		m.runall(&b)
	}
	m.repeat(cg, func() {
		group(true)
		if kg >= 2 {
			m.issue(1) // setzi $m6
			m.repeat(kg-1, func() {
				group(false)
				m.issue(1) // brnzdec $m6
			})
		}
		m.issue(1) // brnzdec $m5
	})
	m.sync2()
	return int64(m.issue(1)) // br $m10
}

// GemmF16For is the cycle count of the f16 GEMM kernel
// kernels.GemmF16For(conservative) picks.
func GemmF16For(conservative bool, k, c, r int) int64 {
	if conservative {
		return GemmF16Drain(k, c, r)
	}
	return GemmF16(k, c, r)
}

// GemmF16 is the cycle count of one gemm_f16 call (k, c multiples of 16,
// 1 <= r <= 768).
func GemmF16(k, c, r int) int64 { return gemm(k, c, r, 16, 32) }

// GemmF16F32Acc is the cycle count of one gemm_f16_f32acc call (k multiple
// of 16, c multiple of 8, 1 <= r <= 768).
func GemmF16F32Acc(k, c, r int) int64 { return gemm(k, c, r, 8, 16) }

// PackLeftF16 is the cycle count of pack_left_f16 (r rows, k columns; the
// input row stride does not change the timing).
func PackLeftF16(r, k int) int64 {
	gf, kv := k/16, k%16
	rows := rowsPerWorker(r)
	var b [ipu21.WorkerContexts]int
	for w, n := range rows {
		if n == 0 {
			b[w] = 6
			continue
		}
		t := 20 + 1 // prologue, exitz
		if gf > 0 {
			t += 2 + gf*(4*n+6)
		}
		if kv > 0 {
			lag := 1
			if kv%4 != 0 {
				lag = 2
			}
			// setzi, the nop aligning the group code (.p2align 3 after an
			// odd number of 4-byte instructions), tapack, PACK_GROUP.
			t += 3 + 4*n + 1 + lag
		}
		b[w] = t
	}
	return singleRun(b)
}

// unpackF16Bundles is unpack_out_f16's per-worker count.
func unpackF16Bundles(n, c int) int {
	if n == 0 {
		return 6
	}
	gf, cv := c/16, c%16
	t := 17 + 1 // prologue, exitz
	if gf > 0 {
		// 2 setzi and the aligning nop (17+2 instructions of 4 bytes).
		t += 3 + gf*(4*n+6)
	}
	if cv > 0 {
		nw := (cv + 3) / 4
		t += 2 + nw*n + 2
		if gf > 0 {
			t++ // aligning nop after the odd setzi
		}
	}
	return t
}

// UnpackOutF16 is the cycle count of unpack_out_f16 (r rows, c columns).
func UnpackOutF16(r, c int) int64 {
	var b [ipu21.WorkerContexts]int
	for w, n := range rowsPerWorker(r) {
		b[w] = unpackF16Bundles(n, c)
	}
	return singleRun(b)
}

// UnpackOutF32 is the cycle count of unpack_out_f32 (r rows, c columns).
func UnpackOutF32(r, c int) int64 {
	gf, cv := c/8, c%8
	var b [ipu21.WorkerContexts]int
	for w, n := range rowsPerWorker(r) {
		if n == 0 {
			b[w] = 6
			continue
		}
		t := 17 + 1
		group := func(nwo int) int {
			tail := 2
			if nwo == 2 {
				tail = 3
			}
			return 4 + 1 + 4*(n-1) + tail
		}
		if gf > 0 {
			// 2 setzi and the aligning nop (17+2 instructions of 4 bytes).
			t += 3 + gf*(2+group(2)+3)
		}
		if cv > 0 {
			t += 3 + group((cv+3)/4)
			if gf == 0 {
				t++ // aligning nop (17+2 instructions)
			}
		}
		b[w] = t
	}
	return singleRun(b)
}

// wordLoop is the per-worker count of gelu_f16 and reduce_add_f16: a
// prologue of pro 4-byte instructions, then per 64-bit word `per` bundles.
// The loop code is 8-byte aligned: an odd prologue is followed by an
// executed nop; the single-word path starts after a 4-byte `bri`, so it
// always begins with one.
func wordLoop(words, per, pro int) [ipu21.WorkerContexts]int {
	var b [ipu21.WorkerContexts]int
	for w, q := range rowsPerWorker(words) {
		switch {
		case q == 0:
			b[w] = 6
		case q == 1:
			b[w] = pro + 1 + per + 2 // nop, word, st64step, exitz
		default:
			b[w] = pro + pro%2 + per*q + 2 + 2 // rpt, bri, st64step, exitz
		}
	}
	return b
}

// GeluF16 is the cycle count of gelu_f16 on n values (precise 0 or 1).
func GeluF16(n, precise int) int64 {
	per := 9
	if precise != 0 {
		per = 23 // f32v2axpy primed and flushed: 3 issues per word (src/gelu.S)
	}
	return singleRun(wordLoop(n/4, per, 19))
}

// ReduceAddF16 is the cycle count of reduce_add_f16 (n outputs, parts
// partial arrays).
func ReduceAddF16(n, parts int) int64 {
	return singleRun(wordLoop(n/4, 3*parts+1, 18))
}

// CopyF16 is the cycle count of copy_f16 moving n bytes.
func CopyF16(n int) int64 {
	var b [ipu21.WorkerContexts]int
	for w, q := range rowsPerWorker(n / 8) {
		if q == 0 {
			b[w] = 6
		} else {
			// 17 instructions, the aligning nop, rpt, q-1 body bundles,
			// st64pace, exitz.
			b[w] = q + 20
		}
	}
	return singleRun(b)
}

// AddBiasF16 is the cycle count of add_bias_f16 on rows panel rows of a
// panel with r rows per column group, starting at row first of a group.
func AddBiasF16(rows, r, first int) int64 {
	// src/add_bias.S, per worker with n >= 1 rows: 19 prologue
	// instructions (WORKER_SPLIT with rpt=1, the vertex table loads), the
	// group entry (4 bias loads and the nop aligning the row loop: 19+4
	// instructions of 4 bytes), 13 bundles per row but 11 for the last
	// (its brz leaves to exitz), exitz, and per column group boundary
	// crossed between two of its rows 3 bundles (add, setzi, bri) and
	// another group entry. An empty worker leaves at its brz (6 bundles).
	var b [ipu21.WorkerContexts]int
	p0 := 0 // the worker's first row: w*Q + min(w, REM)
	for w, n := range rowsPerWorker(rows) {
		if n == 0 {
			b[w] = 6
			continue
		}
		crossed := (first+p0+n-1)/r - (first+p0)/r
		b[w] = 13*n + 23 + 8*crossed
		p0 += n
	}
	return singleRun(b)
}

// FillZero is the cycle count of fill_zero on n bytes.
func FillZero(n int) int64 {
	// src/fill.S: worker w zeroes min(words - w*chunk, chunk) words,
	// chunk = ceil(words/6): 7 instructions, the aligning nop, rpt, one
	// st64step per word, exitz; a worker with a negative count exits after
	// its 6-instruction prologue.
	words := n / 8
	chunk := (words + slots - 1) / slots
	var b [ipu21.WorkerContexts]int
	for w := range b {
		q := min(words-w*chunk, chunk)
		if q < 0 {
			b[w] = 7
		} else {
			b[w] = q + 10
		}
	}
	m := newIssueModel()
	m.issue(1) // setzi
	m.runall(&b)
	m.sync2()
	return int64(m.issue(1))
}

// Kernel returns the modelled cycles of one call of the named kernel with
// the given parameters (defaults filled and checked by the kernel's ABI
// record, exactly as a build would), through the kernel's typed spec.
func Kernel(name string, given kernels.Params) (int64, error) {
	k, err := kernels.Lookup(name)
	if err != nil {
		return 0, err
	}
	p, err := k.Resolve(given)
	if err != nil {
		return 0, err
	}
	if s, ok := kernels.SpecOf(name, p); ok {
		if c, ok := cycles(s); ok {
			return c, nil
		}
	}
	return 0, fmt.Errorf("cost: no model for kernel %q", name)
}

// Cycles returns the modelled cycles of one call of a typed kernel spec
// (the launch overhead not included). The per-kernel functions above are
// the models; this is the one place that maps a spec to its model. A spec
// type without a model is a programming error (Kernel reports it as an
// error instead).
func Cycles(s kernels.Spec) int64 {
	c, ok := cycles(s)
	if !ok {
		panic(fmt.Sprintf("BUG: cost: no model for kernel spec %T", s))
	}
	return c
}

// cycles is Cycles, ok false for a spec type without a model.
func cycles(s kernels.Spec) (int64, bool) {
	switch s := s.(type) {
	case kernels.Gemm:
		switch {
		case !s.F32Acc:
			return GemmF16For(s.Conservative, s.K, s.C, s.R), true
		case s.Conservative:
			return GemmF16F32AccDrain(s.K, s.C, s.R), true
		}
		return GemmF16F32Acc(s.K, s.C, s.R), true
	case kernels.Copy:
		return CopyF16(s.N), true
	case kernels.ReduceAdd:
		return ReduceAddF16(s.N, s.Parts), true
	case kernels.Gelu:
		return GeluF16(s.N, b2i(s.Precise)), true
	case kernels.AddBias:
		return AddBiasF16(s.Rows, s.R, s.First), true
	case kernels.UnpackOut: // the row stride does not change the cycles
		if s.F32 {
			return UnpackOutF32(s.R, s.C), true
		}
		return UnpackOutF16(s.R, s.C), true
	case kernels.PackLeft: // nor here
		return PackLeftF16(s.R, s.K), true
	case kernels.Fill:
		return FillZero(s.Bytes), true
	case kernels.Add:
		return AddF16(s.N), true
	case kernels.LayerNorm:
		return LayerNormF16(s.Rows, s.Width, b2i(s.Residual), b2i(s.Panels)), true
	case kernels.Softmax:
		return SoftmaxF16(s.Rows, s.Keys, s.Valid, b2i(s.Stats), b2i(s.Panels)), true
	case kernels.AttentionMerge:
		return AttentionMergeF16(s.Rows, s.Values, int(s.Mode), b2i(s.Bacc32)), true
	}
	return 0, false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// singleRunEntry is singleRun for a supervisor entry that stores args
// operand registers into the vertex record (setzi, args st32, setzi before
// the runall).
func singleRunEntry(args int, bundles [ipu21.WorkerContexts]int) int64 {
	m := newIssueModel()
	m.issue(2 + args)
	m.runall(&bundles)
	m.sync2()
	return int64(m.issue(1)) // br $m10
}

// AddF16 is the cycle count of add_f16 on n values.
func AddF16(n int) int64 {
	// src/add.S, per worker with q >= 1 words: 17 prologue instructions,
	// the nop aligning the rpt (17 instructions of 4 bytes), rpt, 3
	// bundles for each of q-1 words, the last add and store, exitz. An
	// empty worker leaves at its brz (6 bundles).
	var b [ipu21.WorkerContexts]int
	for w, q := range rowsPerWorker(n / 4) {
		if q == 0 {
			b[w] = 6
		} else {
			b[w] = 3*q + 19
		}
	}
	return singleRunEntry(3, b)
}

// LayerNormF16 is the cycle count of layer_norm_f16 (rows rows of width
// values; residual 0 or 1; panels 0 (row-major) or 1 (AMP panels)).
func LayerNormF16(rows, width, residual, panels int) int64 {
	if panels != 0 {
		return layerNormF16Panels(rows, width, residual)
	}
	// src/layer_norm.S: the supervisor stores 7 operands (setzi, 7 st32,
	// setzi) and runs three worker runs, each followed by sync 2 (and a
	// setzi before the next runall). Per worker with c words of each row:
	//   A: 15 prologue instructions (17 with the residual pointers), the
	//      aligning nop, 4 clears; per row the rpt, 3 (5) bundles per word
	//      and the 7-bundle partial sum; exitz;
	//   B: 19 prologue instructions, the aligning nop, 4 clears; per row
	//      the 8-bundle mean, the mean pair, the rpt, 7 bundles per word,
	//      the 7-bundle partial sum; exitz;
	//   C: 19 prologue instructions, the aligning nop; per row 1/width
	//      (3), mean and variance (16), the 5 statistics bundles, the rpt,
	//      11 bundles per word, 3 loop bundles; exitz.
	// Workers with c = 0 run the same per-row code with empty rpts.
	perA, proA := 3, 16
	if residual != 0 {
		perA, proA = 5, 18
	}
	var a, b, c [ipu21.WorkerContexts]int
	for w, q := range rowsPerWorker(width / 4) {
		a[w] = proA + 4 + rows*(1+perA*q+7) + 1
		b[w] = 20 + 4 + rows*(17+7*q) + 1
		c[w] = 20 + rows*(28+11*q) + 1
	}
	return threeRuns(7, &a, &b, &c)
}

// layerNormF16Panels is LayerNormF16 with panels=1 (src/layer_norm.S).
func layerNormF16Panels(rows, width, residual int) int64 {
	// Runs A and B: the same split, the slice setup 4 instructions shorter
	// and the walk (LN_WALK) 17 longer, so A has 28 prologue instructions
	// (30 with the residual pointers) and B 32, both even; per row the
	// walk's three rpts and the jump bundle replace the one rpt (3 more).
	// Run C splits whole panels (4 words each): 18 prologue instructions
	// (17 and the aligning nop); per row the 24 statistics bundles, the
	// rpt, 44 bundles per panel and 2 closing (the next row's offset in
	// the statistics bundles' free main slots).
	perA, proA := 3, 28
	if residual != 0 {
		perA, proA = 5, 30
	}
	var a, b, c [ipu21.WorkerContexts]int
	for w, q := range rowsPerWorker(width / 4) {
		a[w] = proA + 4 + rows*(4+perA*q+7) + 1
		b[w] = 32 + 4 + rows*(20+7*q) + 1
	}
	for w, q := range rowsPerWorker(width / 16) {
		c[w] = 18 + rows*(27+44*q) + 1
	}
	return threeRuns(7, &a, &b, &c)
}

// threeRuns is the supervisor of layer_norm_f16 and softmax_f16: args
// operand stores (setzi, args st32, setzi), then three worker runs each
// ended by sync 2, a setzi before the second and third.
func threeRuns(args int, a, b, c *[ipu21.WorkerContexts]int) int64 {
	m := newIssueModel()
	m.issue(2 + args)
	m.runall(a)
	m.sync2()
	m.issue(1)
	m.runall(b)
	m.sync2()
	m.issue(1)
	m.runall(c)
	m.sync2()
	return int64(m.issue(1)) // br $m10
}

// SoftmaxF16 is the cycle count of softmax_f16 (rows rows of keys scores,
// valid of them valid, 0 meaning all; stats 0 or 1; panels 0 (row-major) or
// 1 (AMP panels); dk does not change the timing).
func SoftmaxF16(rows, keys, valid, stats, panels int) int64 {
	if panels != 0 {
		return softmaxF16Panels(rows, keys, valid, stats)
	}
	// src/softmax.S. The live words NW = ceil(valid/4) are split over the
	// workers; with a partial last word (vt = valid%4 != 0) the worker
	// whose slice ends with it (flag = 1) handles it apart, masked. The
	// padding words are split the same way. Per worker with c live and z
	// padding words:
	//   A: 15 prologue instructions (19 with vt), aligned to an even count;
	//      per row the -inf load, the rpt, 2 bundles per full word, the
	//      partial word's brz (vt) and 7 bundles (flag), 5 closing bundles;
	//   B: 21 instructions (26 with vt), aligned; per row 13 bundles (the
	//      maximum, the -mf pair, the clears), the rpt, 13 per full word,
	//      brz (vt) and 18 (flag), 6 closing;
	//   C: 25 instructions (29 with vt), aligned; per row 9 (the
	//      reciprocal sum), the rpt, 7 per live word, the rpt, 1 per padding
	//      word, 4 closing; with stats 4 more prologue instructions and per
	//      row 17 (the sum, the maximum, the store) instead of the
	//      normalisation;
	// each ending with exitz.
	if valid == 0 {
		valid = keys
	}
	nw, vt := (valid+3)/4, valid%4
	even := func(n int) int { return n + n%2 }
	proA, proB, proC, brz := 15, 21, 25, 0
	if vt != 0 {
		proA, proB, proC, brz = 19, 26, 29, 1
	}
	var a, b, c [ipu21.WorkerContexts]int
	live, pad := rowsPerWorker(nw), rowsPerWorker(keys/4-nw)
	f := 0
	for w, q := range live {
		flag := 0
		if vt != 0 && q > 0 && f+q == nw {
			flag = 1
		}
		full := q - flag
		a[w] = even(proA) + rows*(2+2*full+brz+7*flag+5) + 1
		b[w] = even(proB) + rows*(14+13*full+brz+18*flag+6) + 1
		if stats != 0 {
			c[w] = even(proC+4) + rows*(17+1+pad[w]+4) + 1
		} else {
			c[w] = even(proC) + rows*(10+7*q+1+pad[w]+4) + 1
		}
		f += q
	}
	return threeRuns(3, &a, &b, &c)
}

// softmaxF16Panels is SoftmaxF16 with panels=1 (src/softmax.S): the same
// split, each row's slice walked as head, full panels and tail.
func softmaxF16Panels(rows, keys, valid, stats int) int64 {
	// The slice setup is 4 instructions shorter (10, 14 with vt) and the
	// walk (SM_WALK) 17 longer. Per row and run the walk's rpts (head,
	// panels, tail) and the jump bundle replace the one rpt (3 more), and
	// the next row's offset takes the closing bundles' free main slots;
	// run C closes its rows with 4 bundles and zeroes the padding after
	// them: 2 instructions, then for the partial panel (nza = (4 -
	// nw%4)%4 words per row, rows split) 8 instructions, the rpt and nza
	// stores per row, and for the full padding panels (zb words, split by
	// words) 8, the rpt and a store per word. STATS=1's run C needs no
	// walk: per row the 17 statistics bundles and 2 closing.
	if valid == 0 {
		valid = keys
	}
	nw, vt := (valid+3)/4, valid%4
	even := func(n int) int { return n + n%2 }
	slice, brz := 10, 0
	if vt != 0 {
		slice, brz = 14, 1
	}
	vsub := brz // run A and B's full-word count
	nza := (4 - nw%4) % 4
	zb := (keys/16 - (nw+3)/4) * 4 * rows
	rowsW, zbW := rowsPerWorker(rows), rowsPerWorker(zb)
	var a, b, c [ipu21.WorkerContexts]int
	f := 0
	for w, q := range rowsPerWorker(nw) {
		flag := 0
		if vt != 0 && q > 0 && f+q == nw {
			flag = 1
		}
		full := q - flag
		a[w] = even(slice+1+vsub+17) + rows*(10+2*full+brz+7*flag) + 1
		b[w] = even(slice+2+vsub+17+5) + rows*(17+13*full+brz+18*flag+6) + 1
		if stats != 0 {
			c[w] = even(slice+2+4) + rows*19
		} else {
			c[w] = even(slice+1+17+1) + rows*(17+7*q)
		}
		c[w] += 2 + 1
		if nza != 0 {
			c[w] += 9 + nza*rowsW[w]
		}
		if zb != 0 {
			c[w] += 9 + zbW[w]
		}
		f += q
	}
	return threeRuns(3, &a, &b, &c)
}

// AttentionMergeF16 is the cycle count of attention_merge_f16 (rows rows
// of values values; mode 0 initial, 1 update, 2 final; bacc32 0 or 1).
func AttentionMergeF16(rows, values, mode, bacc32 int) int64 {
	// src/merge.S. Run 1, per worker with c words of each row: 20
	// prologue instructions; per row the factors (9 bundles; 14 in the
	// final mode, none in the initial), the rpt, per word 4 (initial), 10
	// (update; 9 with bacc32) or 13 (final) bundles, 3 loop bundles;
	// exitz. Run 2 (modes 0 and 1; rows split): 12 prologue instructions,
	// per row 3 (initial) or 12 (update) bundles, exitz; 6 for a worker
	// without rows.
	factors, per := 0, 4
	switch mode {
	case 1:
		factors, per = 9, 10-bacc32
	case 2:
		factors, per = 14, 13
	}
	var a, b [ipu21.WorkerContexts]int
	for w, q := range rowsPerWorker(values / 4) {
		a[w] = 20 + rows*(factors+1+per*q+3) + 1
	}
	perRow := 3
	if mode == 1 {
		perRow = 12
	}
	for w, q := range rowsPerWorker(rows) {
		if q == 0 {
			b[w] = 6
		} else {
			b[w] = 12 + perRow*q + 1
		}
	}
	m := newIssueModel()
	m.issue(7) // setzi, 5 st32, setzi
	m.runall(&a)
	if mode != 2 {
		m.sync2()
		m.issue(1)
		m.runall(&b)
	}
	m.sync2()
	return int64(m.issue(1)) // br $m10
}
