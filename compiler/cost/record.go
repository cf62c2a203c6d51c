package cost

import (
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
)

// The supervisor's work around a kernel call and an exchange phase in the
// runtime compiler/emit generates, beyond what the kernel models and
// ExchangePhase count. A call is one setzi per argument (two to four),
// the call and the return: about five supervisor instructions, each
// taking the supervisor's issue slot once per 6 cycles (CallCycles). A
// phase is its sync 2 and sync 3 and the row-table set-up, about ten
// (PhaseCycles). These are the runtime's own figures, not Poplar's
// (ipu21.KernelLaunchCycles, popops' supervisor overhead, is not charged).
// The planner's beam, its costing of the finalists and the rerank all
// charge them (Call, Phase): one decision.
const (
	CallCycles  = 30
	PhaseCycles = 60
)

// Call is the modelled cycles of one call of a kernel spec in the tile
// runtime: the kernel (Cycles) and the supervisor's call overhead.
func Call(s kernels.Spec) int64 { return Cycles(s) + CallCycles }

// Phase is the modelled cycles of one exchange phase of the tile runtime
// (ExchangePhase and the supervisor's phase overhead); a phase that moves
// nothing costs nothing (it is not emitted).
func Phase(t *ipu21.Target, maxSend, maxRecv int) int64 {
	c := ExchangePhase(t, maxSend, maxRecv)
	if c == 0 {
		return 0
	}
	return c + PhaseCycles
}

// Estimate is a plan's cost record: the cycles of its run call's timed
// part, each compute stage charged for its busiest tile and split by the
// class of that tile's kernels, and its exchange phases. compiler/mid
// writes it (mid.Plan.Estimate) from the stages the beam costed; the
// lowering keeps it and the rerank replaces only Exchange with the
// scheduled phases (low.Plan.Costed).
type Estimate struct {
	Gemm, Elementwise, Reduce, Copy, Exchange, Total int
}

// Add charges c cycles of class k (kernels.Class) to the record.
func (e *Estimate) Add(k kernels.Class, c int) {
	switch k {
	case kernels.ClassGemm:
		e.Gemm += c
	case kernels.ClassReduce:
		e.Reduce += c
	case kernels.ClassCopy:
		e.Copy += c
	default:
		e.Elementwise += c
	}
	e.Total += c
}

// AddExchange charges c cycles of exchange to the record.
func (e *Estimate) AddExchange(c int) {
	e.Exchange += c
	e.Total += c
}
