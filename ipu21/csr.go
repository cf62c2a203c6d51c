package ipu21

import "fmt"

// SyncZone is the operand of the sync instruction: which set of parties the
// barrier spans. Source: Saghetti0/graphcore-ipu-research docs/sync zones.md
// (TileSyncZone); IPU21.md.
type SyncZone uint8

const (
	// SyncRecv waits until the incoming exchange down-count
	// (INCOMING_DCOUNT) reaches zero.
	SyncRecv SyncZone = 0
	// SyncAns is the ANS zone; its exact purpose is not published.
	SyncAns SyncZone = 1
	// SyncLocal is a barrier among the supervisor and the workers of one
	// tile.
	SyncLocal SyncZone = 2
	// SyncInternal is a barrier among all tiles of the chip; exchange
	// phases start from it.
	SyncInternal SyncZone = 3
)

func (z SyncZone) String() string {
	switch z {
	case SyncRecv:
		return "RECV"
	case SyncAns:
		return "ANS"
	case SyncLocal:
		return "LOCAL"
	case SyncInternal:
		return "INTERNAL"
	}
	return fmt.Sprintf("SyncZone(%d)", uint8(z))
}

// CSR is a control/status register number as used by get/put (lower space
// 0..255) and uget/uput (upper space 256..511).
type CSR uint16

// Supervisor CSRs used by exchange, worker start and AMP weight loading.
// Source: ipu-stack exchange.rs (IPU21_EXCHANGE_CONSTANTS) for the
// INCOMING/OUTGOING registers; Saghetti0/graphcore-ipu-research docs/csr.md
// for all of them.
const (
	// CSRWorker0Base..CSRWorker5Base hold each worker context's
	// $WORKER_BASE (set by run/runall).
	CSRWorker0Base CSR = 0x21
	CSRWorker1Base CSR = 0x22
	CSRWorker2Base CSR = 0x23
	CSRWorker3Base CSR = 0x24
	CSRWorker4Base CSR = 0x25
	CSRWorker5Base CSR = 0x26
	// CSRCCCSLoad is the port through which ld64putcs/ld128putcs load AMP
	// weight state.
	CSRCCCSLoad CSR = 0x50
	// CSRIncomingMux selects the physical source tile (or MuxNeutral /
	// MuxHost+link) whose words this tile receives.
	CSRIncomingMux CSR = 0xA0
	// CSRIncomingMuxPair selects the partner source of a 64-bit paired
	// receive.
	CSRIncomingMuxPair CSR = 0xA1
	// CSRIncomingFormat sets the incoming word format (2-bit field).
	CSRIncomingFormat CSR = 0xA3
	// CSRIncomingBase is the base of the receive write pointer.
	CSRIncomingBase CSR = 0xA4
	// CSRIncomingDCount counts incoming words down; SyncRecv waits for zero.
	CSRIncomingDCount CSR = 0xA6
	// CSROutgoingBase is the base address sends read from.
	CSROutgoingBase CSR = 0xA7
)

// WorkerBaseCSR returns the $WORKERn_BASE register of worker context ctx,
// or false when ctx is not in [0, WorkerContexts).
func WorkerBaseCSR(ctx int) (CSR, bool) {
	if ctx < 0 || ctx >= WorkerContexts {
		return 0, false
	}
	return CSRWorker0Base + CSR(ctx), true
}

var csrNames = map[CSR]string{
	CSRWorker0Base:     "WORKER0_BASE",
	CSRWorker1Base:     "WORKER1_BASE",
	CSRWorker2Base:     "WORKER2_BASE",
	CSRWorker3Base:     "WORKER3_BASE",
	CSRWorker4Base:     "WORKER4_BASE",
	CSRWorker5Base:     "WORKER5_BASE",
	CSRCCCSLoad:        "CCCSLOAD",
	CSRIncomingMux:     "INCOMING_MUX",
	CSRIncomingMuxPair: "INCOMING_MUXPAIR",
	CSRIncomingFormat:  "INCOMING_FORMAT",
	CSRIncomingBase:    "INCOMING_BASE",
	CSRIncomingDCount:  "INCOMING_DCOUNT",
	CSROutgoingBase:    "OUTGOING_BASE",
}

// String returns the register's architectural name without the '$', or
// the number in hex for registers this package does not name.
func (c CSR) String() string {
	if name, ok := csrNames[c]; ok {
		return name
	}
	return fmt.Sprintf("CSR(0x%X)", uint16(c))
}
