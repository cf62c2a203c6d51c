package ipu21

// Tile numbering and exchange-fabric geometry.
//
// A physical tile id is row*PhysicalColumns + column: row in [0, 23),
// column in [0, 64). Exchange hardware (INCOMING_MUX selectors, route
// delays, pairing) speaks physical ids. Logical ids are the SDK's order,
// in which the compiler numbers its tiles; the mapping walks the chip in
// column blocks so that consecutive logical tiles sit close together.
//
// The route-delay formula below is the closed form ipu-stack recovered from
// the SDK's IPU21 fabric model (crates/ipu-target/src/topology.rs
// time_to_mux). We restate it in our own terms; it is checked against the
// oracle in reference/IPU21.md (ttm(0 -> 53) = -23, delay field 0x86).

// Exact range of TimeToMux over all 1472 x 1472 ordered pairs of physical
// tiles (a tile to itself gives -29..-28, inside the range); the tests check
// both bounds are met and never exceeded. IPU21.md gives "about -78..112".
const (
	MinTimeToMux = -78
	MaxTimeToMux = 112
)

// Exchange schedule constants relating sender and receiver programs.
const (
	// SendDelayBase: in a point-to-point transfer the sender waits
	// SendDelayBase - ttm events after the sync before its send, and the
	// receiver opens its source window at event SendDelayBase + 1, whatever
	// the pair. Source: ipu-stack exchange.rs point_to_point (sender delay
	// 111 - time_to_mux, receiver delayxpic 112); IPU21.md oracle 0x86.
	SendDelayBase = 111

	// PayloadLatency is the fixed part of the gap between a receiver's
	// source-window start and its first payload write; the rest is 2 cycles
	// per physical row of the receiver. Source: ipu-stack exchange.rs
	// (receiver rows: delay_pic(51 - count + 2*row) after count XPIC
	// events, i.e. 52 + 2*row events after the window opens); IPU21.md.
	PayloadLatency = 52
)

// ValidPhysical reports whether p is a physical tile id of the chip.
func ValidPhysical(p int) bool { return p >= 0 && p < Tiles }

// ValidLogical reports whether l is a logical tile id of the chip.
func ValidLogical(l int) bool { return l >= 0 && l < Tiles }

// LogicalToPhysical maps the SDK's logical tile l to its physical id, or
// returns -1 when l is out of range.
//
// Logical tiles come in pairs (lane = l&1). Pairs fill 32 column blocks of
// 23 rows each; odd blocks run bottom-up, so the walk snakes and block
// boundaries stay adjacent. Block b occupies columns (b/2)*4 + (b&1) and that
// column + 2 (the second lane), so each group of four columns holds two
// blocks interleaved. Logical 0,1,2,3 -> physical 0,2,64,66. Source:
// ipu-stack ipu21/c600.rs logical_to_physical.
func LogicalToPhysical(l int) int {
	if !ValidLogical(l) {
		return -1
	}
	pair, lane := l/2, l&1
	block, row := pair/PhysicalRows, pair%PhysicalRows
	if block&1 == 1 {
		row = PhysicalRows - 1 - row
	}
	column := (block/2)*4 + block&1 + 2*lane
	return row*PhysicalColumns + column
}

// PhysicalToLogical is the inverse of LogicalToPhysical; it returns -1 when
// p is out of range.
func PhysicalToLogical(p int) int {
	if !ValidPhysical(p) {
		return -1
	}
	row, column := p/PhysicalColumns, p%PhysicalColumns
	lane := column >> 1 & 1
	// Clearing the lane bit leaves (block/2)*4 + (block&1).
	base := column &^ 2
	block := (base>>2)*2 + base&1
	if block&1 == 1 {
		row = PhysicalRows - 1 - row
	}
	return (block*PhysicalRows+row)*2 + lane
}

// Row returns the physical row of physical tile p, or -1 out of range.
func Row(p int) int {
	if !ValidPhysical(p) {
		return -1
	}
	return p / PhysicalColumns
}

// Column returns the physical column of physical tile p, or -1 out of range.
func Column(p int) int {
	if !ValidPhysical(p) {
		return -1
	}
	return p % PhysicalColumns
}

// Partner returns the tile that shares p's double-width (64-bit) outgoing
// path: while one of the two sends a paired transfer, the other cannot send.
// It is also the source INCOMING_MUXPAIR selects for a 64-bit receive.
// Returns -1 out of range. Source: ipu-stack topology.rs (physical ^ 2).
func Partner(p int) int {
	if !ValidPhysical(p) {
		return -1
	}
	return p ^ 2
}

// fold maps a 4-column group index q (0..15) to its distance from the
// nearer chip edge as the fabric sees it: groups 8..15 are mirrored, so
// group 15 folds to 0 and group 8 to 7.
func fold(q int) int {
	if q > 7 {
		return 15 - q
	}
	return q
}

// displacement is the signed distance, in fabric steps, from the point
// where source s enters the exchange spine to destination d's mux. Its sign
// picks the send direction; its size adds to the route delay.
func displacement(s, d int) int {
	qs, qd := s>>2&15, d>>2&15
	// The source joins the spine at its folded group, one step further
	// when its column parity differs from its chip half.
	entry := fold(qs) + (qs>>3 ^ s&1)
	steps := 6 * (fold(qd) - entry)
	// Offset of the destination's mux inside its group: it depends on
	// whether the destination's column parity agrees with its chip half,
	// and on which member of its pair it is.
	agree := qd>>3 == d&1
	second := d&2 != 0
	switch {
	case agree && !second:
		return steps + 1
	case agree && second:
		return steps + 2
	case second:
		return steps + 4
	default:
		return steps + 5
	}
}

// TimeToMux returns the route delay ttm, in cycles, from physical tile src
// to physical tile dst: a word sent at event Ts is selectable by dst from
// event Ts + ttm + 1 (see ReceiveWindowStart). Negative values are normal;
// they mean the receiver's window opens before the sender's send event
// counted from the same sync.
//
// With group(x) = column(x)/4 and half(x) = group(x)/8, the delay is the
// following sum minus 34 (source: ipu-stack topology.rs time_to_mux, the
// recovered SDK fabric model):
//   - a crossing term 8*half(src) + 3 - group(dst),
//   - the source's edge distance 4*fold(group(src)) minus the
//     destination's 4*fold(group(dst)),
//   - a turn term, group(src)%8 + 1 when both tiles are in the same half of
//     the chip (column bit 5) and 16 - group(src)%8 otherwise,
//   - 2*(row(src) - row(dst)): two cycles per row of difference, negative
//     when the source's row number is the smaller,
//   - the magnitude of the spine displacement (see displacement).
//
// src and dst must be valid physical ids; for other values the result is
// meaningless (but the function does not panic).
func TimeToMux(src, dst int) int {
	qs, qd := src>>2&15, dst>>2&15
	halfS := qs >> 3
	crossing := 8*halfS + 3 - qd
	edges := 4*fold(qs) - 4*fold(qd)
	var turn int
	if (src^dst)&0x20 == 0 {
		turn = qs&7 + 1
	} else {
		turn = 16 - qs&7
	}
	rows := 2 * (src>>6 - dst>>6)
	disp := displacement(src, dst)
	if disp < 0 {
		disp = -disp
	}
	return crossing + edges + turn + rows + disp - 34
}

// PairedTimeToMux is the route delay of a 64-bit paired transfer to the
// receiving pair of dst: both members must have the word, so the later of
// the two routes counts. Source: ipu-stack topology.rs paired_time_to_mux.
func PairedTimeToMux(src, dst int) int {
	return max(TimeToMux(src, dst), TimeToMux(src, dst^2))
}

// Send direction bits (the direction field of a send's control operand).
// A send to one receiver goes one way along the spine; a multicast drives
// both. SendPaired is or-ed in for a 64-bit paired send. Source: ipu-stack
// topology.rs direction, exchange.rs (multicast uses 3, paired adds 4).
const (
	SendEast   = 1 // displacement positive
	SendWest   = 2 // displacement zero or negative
	SendBoth   = SendEast | SendWest
	SendPaired = 4
)

// SendDirection returns the direction bits for a send from src whose only
// receiver is dst: SendEast or SendWest. (The names only tell the two
// directions apart; which physical side they are is not published.)
func SendDirection(src, dst int) int {
	if displacement(src, dst) < 1 {
		return SendWest
	}
	return SendEast
}

// SendDelayField is the delay a sender waits after the sync before a
// point-to-point send to dst, chosen so that every receiver's source
// window opens at the same event, SendDelayBase + 1. It is the value of
// the sender's delay instruction field: 0 -> 53 gives 111 - (-23) = 134
// (0x86).
func SendDelayField(src, dst int) int {
	return SendDelayBase - TimeToMux(src, dst)
}

// ReceiveWindowStart returns the event T_x at which receiver dst must select
// src on its incoming mux to catch a send issued at event ts (both counted
// from the same sync): T_x = ts + ttm(src, dst) + 1.
func ReceiveWindowStart(ts, src, dst int) int {
	return ts + TimeToMux(src, dst) + 1
}

// FirstPayloadWrite returns the event at which receiver dst writes the first
// payload word of a transfer whose source window opened at tx: the word
// takes PayloadLatency cycles plus 2 per physical row to reach the
// receiver's memory. For an out-of-range dst it returns -1.
func FirstPayloadWrite(tx, dst int) int {
	row := Row(dst)
	if row < 0 {
		return -1
	}
	return tx + PayloadLatency + 2*row
}
