package cost

import (
	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/ipustack/ipustack/ipu21"
)

// ExchangeLatencyCycles is the fixed allowance of one exchange phase beyond
// its endpoint bound: the worst delay from the phase start to a receiver's
// first payload write. A sender waits up to SendDelayBase - ttm events, the
// receiver opens its window at SendDelayBase + 1 and writes its first word
// PayloadLatency + 2*row events later; the worst row is the last physical
// row. Source: target (exchange.rs facts in reference/IPU21.md).
const ExchangeLatencyCycles = ipu21.SendDelayBase + 1 + ipu21.PayloadLatency + 2*(ipu21.PhysicalRows-1)

// ExchangePhase is the modelled cycles of one exchange phase given the
// largest number of bytes any one tile sends (each multicast item counted
// once at its sender) and the largest number any one tile receives: the
// endpoint bound max(send, receive) / 4 bytes per cycle, plus the latency
// allowance, plus one global sync. A phase that moves nothing costs nothing
// (it is not emitted).
func ExchangePhase(t *ipu21.Target, maxSend, maxRecv int) int64 {
	b := max(maxSend, maxRecv)
	if b == 0 {
		return 0
	}
	bpc := t.Exchange.BytesPerCycle
	return int64((b+bpc-1)/bpc) + ExchangeLatencyCycles + int64(t.Exchange.GlobalSyncCycles)
}

// Pairs reports whether a transfer of words 32-bit words is long enough to
// go as paired 64-bit items (half the receive events on a partner pair
// that both receive it): an even count of at least 2 x
// exchange.MinPairedItems, the scheduler's own rule. The planner's and the
// lowering's exchange costs both ask this.
func Pairs(words int) bool { return words%2 == 0 && words >= 2*exchange.MinPairedItems }

// Align rounds n up to a multiple of a (a power of two or any positive
// integer).
func Align(n, a int) int {
	if a <= 1 {
		return n
	}
	return (n + a - 1) / a * a
}

// OperandBytes is the memory an operand of size bytes takes on a tile when
// its start must be aligned to align bytes: the size rounded up to the
// alignment (the next operand starts aligned too).
func OperandBytes(bytes, align int) int { return Align(bytes, align) }

// DataBudget is the per-tile memory available to planned data: all of SRAM
// less the host exchange aperture, the runtime state block and codeReserve
// bytes of region 0 for code (kernels, runtime, generated supervisor code).
func DataBudget(t *ipu21.Target, codeReserve int) int {
	m := t.Memory
	total := int(m.SRAMEnd - m.SRAMBase)
	total -= int(t.Host.ApertureEnd - t.Host.ApertureBase)
	total -= int(t.Runtime.StateEnd - t.Runtime.StateBase)
	return total - codeReserve
}

// InterleavedBudget is the size of region 1, the only place AMP right
// panels (weights) may live.
func InterleavedBudget(t *ipu21.Target) int {
	return int(t.Memory.SRAMEnd - t.Memory.Region1Base)
}
