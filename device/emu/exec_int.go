package emu

import (
	"fmt"
	"strings"

	"github.com/ipustack/ipustack/isa"
)

// Operand-kind helpers for binders.

const (
	kM   = isa.KindMReg
	kA   = isa.KindAReg
	kAP  = isa.KindAPair
	kAQ  = isa.KindAQuad
	kMP  = isa.KindMPair
	kMI  = isa.KindMRegInc
	kMPI = isa.KindMPairInc
	kCSR = isa.KindCSR
	kI   = isa.KindImm
)

// shape reports whether the row's operand kinds are exactly ks.
func shape(in *isa.Inst, ks ...isa.Kind) bool {
	if len(in.Operands) != len(ks) {
		return false
	}
	for i, k := range ks {
		if in.Operands[i].Kind != k {
			return false
		}
	}
	return true
}

// layoutErr says which operand layouts a binder knows.
func layoutErr(in *isa.Inst, want ...string) error {
	got := make([]string, len(in.Operands))
	for i := range in.Operands {
		got[i] = in.Operands[i].Kind.String()
	}
	return fmt.Errorf("operands (%s) are not one of the layouts the emulator knows: %s",
		strings.Join(got, ", "), strings.Join(want, " | "))
}

// scale returns the multiplier that turns operand i's decoded value into
// bytes: rows whose operand carries the scale in its Shift already decode
// to bytes; rows with Shift 0 decode to a count of atoms (the public
// syntax's "scaled offset" / word address), so the handler multiplies.
func scale(in *isa.Inst, i int, atom int32) int32 {
	if in.Operands[i].Shift > 0 {
		return 1
	}
	return atom
}

func r4(v int32) int32 { return v & 15 }

// ALU operations on 32-bit values, named after the public mnemonics.
var aluOps = map[string]func(a, b uint32) uint32{
	"add": func(a, b uint32) uint32 { return a + b },
	"sub": func(a, b uint32) uint32 { return a - b },
	"and": func(a, b uint32) uint32 { return a & b },
	"andc": func(a, b uint32) uint32 {
		return a &^ b
	},
	"or":  func(a, b uint32) uint32 { return a | b },
	"xor": func(a, b uint32) uint32 { return a ^ b },
	"mul": func(a, b uint32) uint32 { return uint32(int32(a) * int32(b)) },
	// Shifts of 32 or more give 0 (sign bits for shrs): the public text
	// says "of up to 31 bits"; larger amounts are our assumption.
	"shl": func(a, b uint32) uint32 {
		if b >= 32 {
			return 0
		}
		return a << b
	},
	"shr": func(a, b uint32) uint32 {
		if b >= 32 {
			return 0
		}
		return a >> b
	},
	"shrs": func(a, b uint32) uint32 {
		if b >= 32 {
			b = 31
		}
		return uint32(int32(a) >> b)
	},
	"min":   func(a, b uint32) uint32 { return uint32(min(int32(a), int32(b))) },
	"max":   func(a, b uint32) uint32 { return uint32(max(int32(a), int32(b))) },
	"cmpeq": func(a, b uint32) uint32 { return b2u(a == b) },
	"cmpne": func(a, b uint32) uint32 { return b2u(a != b) },
	"cmpult": func(a, b uint32) uint32 {
		return b2u(a < b)
	},
	"cmpslt": func(a, b uint32) uint32 { return b2u(int32(a) < int32(b)) },
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// bindALU handles `op $d, $s, $t`, `op $d, $s, imm` and (sub's reversed
// form) `op $d, imm, $s` in either register file. The result is
// f(first source, second source) in written order.
func bindALU(name string) binder {
	f := aluOps[name]
	return func(in *isa.Inst) (impl, error) {
		switch {
		case name == "add" && shape(in, kM, kM, kI):
			// The hottest integer form gets a closure without an
			// indirect ALU call.
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				c.M[r4(o.v[0])] = c.M[r4(o.v[1])] + uint32(o.v[2])
			}}, nil
		case name == "add" && shape(in, kM, kM, kM):
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				c.M[r4(o.v[0])] = c.M[r4(o.v[1])] + c.M[r4(o.v[2])]
			}}, nil
		case shape(in, kM, kM, kM):
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				c.M[r4(o.v[0])] = f(c.M[r4(o.v[1])], c.M[r4(o.v[2])])
			}}, nil
		case shape(in, kM, kM, kI):
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				c.M[r4(o.v[0])] = f(c.M[r4(o.v[1])], uint32(o.v[2]))
			}}, nil
		case shape(in, kM, kI, kM):
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				c.M[r4(o.v[0])] = f(uint32(o.v[1]), c.M[r4(o.v[2])])
			}}, nil
		case shape(in, kA, kA, kA):
			return impl{readsA: true, writesA: true, fn: func(t *Tile, c *Context, o *inst) {
				c.A[r4(o.v[0])] = f(c.A[r4(o.v[1])], c.A[r4(o.v[2])])
			}}, nil
		case shape(in, kA, kA, kI):
			return impl{readsA: true, writesA: true, fn: func(t *Tile, c *Context, o *inst) {
				c.A[r4(o.v[0])] = f(c.A[r4(o.v[1])], uint32(o.v[2]))
			}}, nil
		}
		return impl{}, layoutErr(in, "mreg, mreg, mreg", "mreg, mreg, imm", "mreg, imm, mreg", "areg, areg, areg", "areg, areg, imm")
	}
}

var intBinders = func() map[string]binder {
	m := map[string]binder{}
	for name := range aluOps {
		m[name] = bindALU(name)
	}
	m["setzi"] = bindSet
	m["nop"] = func(in *isa.Inst) (impl, error) {
		return impl{fn: func(*Tile, *Context, *inst) {}}, nil
	}
	m["br"] = bindBr
	m["bri"] = bindBri
	m["call"] = bindCall
	m["brz"] = bindCond(func(v uint32) bool { return v == 0 })
	m["brnz"] = bindCond(func(v uint32) bool { return v != 0 })
	m["brneg"] = bindCond(func(v uint32) bool { return int32(v) < 0 })
	m["brpos"] = bindCond(func(v uint32) bool { return int32(v) > 0 })
	m["brnzdec"] = bindBrnzdec
	m["exitz"] = bindExit(func(v uint32) bool { return v == 0 })
	m["exitnz"] = bindExit(func(v uint32) bool { return v != 0 })
	m["exitneg"] = bindExit(func(v uint32) bool { return int32(v) < 0 })
	m["exitpos"] = bindExit(func(v uint32) bool { return int32(v) > 0 })
	m["run"] = bindRun
	m["runall"] = bindRunall
	m["sync"] = bindSync
	m["trap"] = bindTrap
	m["get"] = bindGet(0)
	m["uget"] = bindGet(0x100)
	m["put"] = bindPut(0)
	m["uput"] = bindPut(0x100)
	return m
}()

func bindSet(in *isa.Inst) (impl, error) {
	switch {
	case shape(in, kM, kI):
		return impl{fn: func(t *Tile, c *Context, o *inst) { c.M[r4(o.v[0])] = uint32(o.v[1]) }}, nil
	case shape(in, kA, kI):
		return impl{writesA: true, fn: func(t *Tile, c *Context, o *inst) { c.A[r4(o.v[0])] = uint32(o.v[1]) }}, nil
	}
	return impl{}, layoutErr(in, "mreg, imm", "areg, imm")
}

func bindBr(in *isa.Inst) (impl, error) {
	if !shape(in, kM) {
		return impl{}, layoutErr(in, "mreg")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) { c.PC = c.M[r4(o.v[0])] }}, nil
}

// Branch immediates are word-addressed absolute targets (public hover
// text); scale turns them into byte addresses when the row does not.
func bindBri(in *isa.Inst) (impl, error) {
	if !shape(in, kI) {
		return impl{}, layoutErr(in, "imm")
	}
	s := scale(in, 0, 4)
	return impl{fn: func(t *Tile, c *Context, o *inst) { c.PC = uint32(o.v[0] * s) }}, nil
}

func bindCall(in *isa.Inst) (impl, error) {
	if !shape(in, kM, kI) {
		return impl{}, layoutErr(in, "mreg, imm")
	}
	s := scale(in, 1, 4)
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		c.M[r4(o.v[0])] = c.PC // already the address after the bundle
		c.PC = uint32(o.v[1] * s)
	}}, nil
}

func bindCond(cond func(uint32) bool) binder {
	return func(in *isa.Inst) (impl, error) {
		if !shape(in, kM, kI) {
			return impl{}, layoutErr(in, "mreg, imm")
		}
		s := scale(in, 1, 4)
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			if cond(c.M[r4(o.v[0])]) {
				c.PC = uint32(o.v[1] * s)
			}
		}}, nil
	}
}

// brnzdec: taken, and the counter decremented, only when it is not zero.
func bindBrnzdec(in *isa.Inst) (impl, error) {
	if !shape(in, kM, kI) {
		return impl{}, layoutErr(in, "mreg, imm")
	}
	s := scale(in, 1, 4)
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		r := r4(o.v[0])
		if c.M[r] != 0 {
			c.M[r]--
			c.PC = uint32(o.v[1] * s)
		}
	}}, nil
}

// exitX $m: the worker always exits; ExitStatus records the Boolean
// condition on the register (hover text for exitz/exitnz).
func bindExit(cond func(uint32) bool) binder {
	return func(in *isa.Inst) (impl, error) {
		if !shape(in, kM) {
			return impl{}, layoutErr(in, "mreg")
		}
		return impl{fn: func(t *Tile, c *Context, o *inst) {
			if c.Worker < 0 {
				t.raise(FaultIllegal, "%s in the supervisor", o.row.Mnemonic)
				return
			}
			// Public semantics (hover text): the worker always exits and
			// returns the Boolean cond(v) as its exit status.
			if cond(c.M[r4(o.v[0])]) {
				c.ExitStatus = 1
			} else {
				c.ExitStatus = 0
			}
			t.exitWorker(c)
		}}, nil
	}
}

func (t *Tile) exitWorker(c *Context) {
	c.State = Idle
	c.Exits++
	c.rptCount, c.rptEnd = 0, 0
	t.running &^= 1 << c.Worker
	t.lastExit = t.cycle
	// The rest of the bundle (an AMP co-issued with the exit) still
	// runs; issue applies the exit's effect on $AACC after it.
	t.exited = true
	if t.Sup.State == WaitingRun {
		// A context is free again: the supervisor re-issues its run.
		t.Sup.State = Running
		t.Sup.next = max(t.Sup.next, t.cycle+1)
	}
}

// vertexImm turns run's vertex operand into the offset added to $vbase.
// The hover text: $VERTEX_BASE = $vbase + 4*zimm16 + TMEM_REGION0_BASE_ADDR
// (0x4C000), so with the field holding (vertex - 0x4C000) >> 2 it is $vbase
// + vertex. poplibs relies on the added base: CTCInferenceUpdate.S
// subtracts TMEM_REGION0_BASE_ADDR from its vertex base before `run $e,
// $base, 0`. The row decodes to the absolute vertex address (Shift 2,
// Offset 0x4C000), which is therefore the offset itself; a row without
// Shift would hold the word count.
func vertexImm(in *isa.Inst, i int) (mul, add int32) {
	return scale(in, i, 4), 0
}

func (t *Tile) checkEntry(entry uint32) bool {
	if entry&3 != 0 || entry < sramBase || entry >= region1Base {
		t.raise(FaultIllegal, "worker entry 0x%x is not a 4-byte aligned address in executable region 0", entry)
		return false
	}
	return true
}

// run starts one worker in the lowest-numbered idle context; when all six
// run, the supervisor waits (re-issuing run after the next exit).
func bindRun(in *isa.Inst) (impl, error) {
	if !shape(in, kM, kM, kI) {
		return impl{}, layoutErr(in, "mreg, mreg, imm")
	}
	mul, add := vertexImm(in, 2)
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		if c.Worker >= 0 {
			t.raise(FaultIllegal, "run in a worker")
			return
		}
		entry, vb := c.M[r4(o.v[0])], c.M[r4(o.v[1])]
		if vb&3 != 0 {
			t.raise(FaultIllegal, "run: vertex base 0x%x is not 4-byte aligned", vb)
			return
		}
		if !t.checkEntry(entry) {
			return
		}
		if t.running == 0x3F {
			c.PC = t.curPC
			c.State = WaitingRun
			return
		}
		w := 0
		for t.running&(1<<w) != 0 {
			w++
		}
		t.startWorker(w, entry, vb+uint32(o.v[2]*mul+add))
	}}, nil
}

// runall starts all six workers at one entry; worker n gets
// $VERTEX_BASE = $vbase + n*4*off. This is the public hover text for
// runall; docs/isa.md words it as "$vbase + 4*off" for all six, which
// agrees for worker 0 and for off = 0 (the only form ipu-stack uses). See
// docs/machine-tile.md.
func bindRunall(in *isa.Inst) (impl, error) {
	if !shape(in, kM, kM, kI) {
		return impl{}, layoutErr(in, "mreg, mreg, imm")
	}
	mul := scale(in, 2, 4)
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		if c.Worker >= 0 {
			t.raise(FaultIllegal, "runall in a worker")
			return
		}
		if t.running != 0 {
			t.raise(FaultRunall, "runall while workers are running (running mask 0b%06b)", t.running)
			return
		}
		entry, vb := c.M[r4(o.v[0])], c.M[r4(o.v[1])]
		if vb&3 != 0 {
			t.raise(FaultIllegal, "runall: vertex base 0x%x is not 4-byte aligned", vb)
			return
		}
		if !t.checkEntry(entry) {
			return
		}
		stride := uint32(o.v[2] * mul)
		for w := 0; w < NumWorkers; w++ {
			t.startWorker(w, entry, vb+uint32(w)*stride)
		}
	}}, nil
}

func bindSync(in *isa.Inst) (impl, error) {
	if !shape(in, kI) {
		return impl{}, layoutErr(in, "imm")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		if c.Worker >= 0 {
			t.raise(FaultSync, "sync in a worker context is not emulated")
			return
		}
		z := uint32(o.v[0])
		if z == localZone && t.running == 0 {
			return
		}
		c.State = WaitingSync
		c.syncZone = z
	}}, nil
}

func bindTrap(in *isa.Inst) (impl, error) {
	if !shape(in, kI) {
		return impl{}, layoutErr(in, "imm")
	}
	return impl{fn: func(t *Tile, c *Context, o *inst) {
		t.raise(FaultTrap, "trap %d", o.v[0])
		if t.fault != nil {
			t.fault.Code = uint32(o.v[0])
		}
	}}, nil
}

// get/uget: read a CSR of the executing context's space into a register.
func bindGet(space int32) binder {
	return func(in *isa.Inst) (impl, error) {
		var file isa.Kind
		switch {
		case shape(in, kM, kCSR), shape(in, kM, kI):
			file = kM
		case shape(in, kA, kCSR), shape(in, kA, kI):
			file = kA
		default:
			return impl{}, layoutErr(in, "mreg, csr", "areg, csr")
		}
		if file == kM {
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				c.M[r4(o.v[0])] = t.getCSR(c, csrIndex(o.v[1], space))
			}}, nil
		}
		return impl{writesA: true, fn: func(t *Tile, c *Context, o *inst) {
			c.A[r4(o.v[0])] = t.getCSR(c, csrIndex(o.v[1], space))
		}}, nil
	}
}

func bindPut(space int32) binder {
	return func(in *isa.Inst) (impl, error) {
		switch {
		case shape(in, kCSR, kM), shape(in, kI, kM):
			return impl{fn: func(t *Tile, c *Context, o *inst) {
				t.putCSR(c, csrIndex(o.v[0], space), c.M[r4(o.v[1])])
			}}, nil
		case shape(in, kCSR, kA), shape(in, kI, kA):
			return impl{readsA: true, fn: func(t *Tile, c *Context, o *inst) {
				t.putCSR(c, csrIndex(o.v[0], space), c.A[r4(o.v[1])])
			}}, nil
		}
		return impl{}, layoutErr(in, "csr, mreg", "csr, areg")
	}
}

// csrIndex places a CSR operand in the 512-entry space: uget/uput address
// the upper half whether the row encodes 0..255 or 256..511.
func csrIndex(v, space int32) int {
	return int((v | space) & (numCSRs - 1))
}

// getCSR reads a CSR with its side effects.
func (t *Tile) getCSR(c *Context, n int) uint32 {
	switch n {
	case csrCountL:
		return uint32(t.cycle)
	case csrCountU:
		return uint32(t.cycle >> 32)
	}
	if c.Worker >= 0 {
		switch n {
		case csrRepeatCount:
			return c.rptCount
		case csrRepeatFirst:
			return c.rptFirst
		case csrRepeatEnd:
			return c.rptEnd
		case csrPRNG00, csrPRNG00 + 1:
			return uint32(c.rng[0] >> (32 * (n - csrPRNG00)))
		case csrPRNG00 + 2, csrPRNG00 + 3:
			return uint32(c.rng[1] >> (32 * (n - csrPRNG00 - 2)))
		}
		return c.CSR[n]
	}
	if n == csrCtxtSts {
		// Our encoding: bit w set while worker w runs, bit 6 for a
		// supervisor that is not waiting.
		return uint32(t.running) | 1<<6
	}
	return c.CSR[n]
}

// putCSR writes a CSR with its side effects.
func (t *Tile) putCSR(c *Context, n int, v uint32) {
	switch n {
	case csrCountL, csrCountU:
		return // read only
	}
	if c.Worker >= 0 {
		switch n {
		case csrFPClr:
			if v&fpClrZAACC != 0 { // ZAACC (docs/amp-and-pace.md)
				t.amp.acc[c.Worker] = ampAcc{}
			}
			return
		case csrPRNG00, csrPRNG00 + 1:
			sh := 32 * uint(n-csrPRNG00)
			c.rng[0] = c.rng[0]&^(0xFFFFFFFF<<sh) | uint64(v)<<sh
			return
		case csrPRNG00 + 2, csrPRNG00 + 3:
			sh := 32 * uint(n-csrPRNG00-2)
			c.rng[1] = c.rng[1]&^(0xFFFFFFFF<<sh) | uint64(v)<<sh
			return
		case csrPRNGSeed:
			c.seed(uint64(v)) // reads return 0, so the value is not kept
			return
		case csrRepeatCount:
			c.rptCount = v & 0xFFFF
			return
		}
		c.CSR[n] = v
		return
	}
	if n >= csrIncomingMux && n <= csrOutgoingDelta && t.putExchangeCSR(n, v) {
		return
	}
	if n >= csrWorkerBase && n < csrWorkerBase+NumWorkers && t.running&(1<<(n-csrWorkerBase)) != 0 {
		t.raise(FaultIllegal, "write to WORKER%d_BASE while worker %d runs", n-csrWorkerBase, n-csrWorkerBase)
		return
	}
	c.CSR[n] = v
}
