package ipu21

import (
	"math"
	"testing"
)

func TestIPU21Facts(t *testing.T) {
	c := IPU21()
	tests := []struct {
		name      string
		got, want any
	}{
		{"name", c.Name, "ipu21"},
		{"tiles", c.Tiles, 1472},
		{"grid", c.PhysicalRows * c.PhysicalColumns, c.Tiles},
		{"clock", c.ClockHz, 1.5e9},
		{"workers", c.WorkerContexts, 6},
		{"issue slots", c.IssueSlots, 6},
		{"f16 flop", c.FlopsPerCycleF16, 128},
		{"f32 flop", c.FlopsPerCycleF32, 32},
		{"f8 flop", c.FlopsPerCycleF8, 256},
		{"amp mac = f16 flop / 2", c.AMPMACsPerCycleF16 * 2, c.FlopsPerCycleF16},
		{"sram base", c.Memory.SRAMBase, uint32(0x4C000)},
		{"sram end", c.Memory.SRAMEnd, uint32(0xE8000)},
		{"sram size", c.Memory.SRAMEnd - c.Memory.SRAMBase, uint32(624 * 1024)},
		{"region 1", c.Memory.Region1Base, uint32(0x80000)},
		{"element", c.Memory.ElementBytes, uint32(16 * 1024)},
		{"interleaved element", c.Memory.InterleavedElementBytes, uint32(32 * 1024)},
		{"elements", c.Memory.Elements, 26},
		{"load", c.Memory.LoadBytesPerCycle, 8},
		{"interleaved load", c.Memory.InterleavedLoadBytesPerCycle, 16},
		{"entry", c.Memory.EntrySlot, uint32(0x4C010)},
		{"load limit", c.Memory.LoadLimit, uint32(0xE7BB0)},
		{"exchange B/cycle", c.Exchange.BytesPerCycle, 4},
		{"exchange word", c.Exchange.WordBytes, 4},
		{"sync", c.Exchange.GlobalSyncCycles, 600},
		{"launch", c.Exchange.KernelLaunchCycles, 11},
		{"neutral mux", c.Exchange.MuxNeutral, 0x640},
		{"host mux", c.Exchange.MuxHost, 0x600},
		{"aperture", [2]uint32{c.Host.ApertureBase, c.Host.ApertureEnd}, [2]uint32{0x50000, 0x58000}},
		{"host write end", c.Host.WriteEnd, uint32(0x54000)},
		{"host write align", c.Host.WriteAlign, uint32(32)},
		{"packet in", c.Host.PacketInBytes, 1024},
		{"packet out", c.Host.PacketOutBytes, 256},
		{"loader batch", c.Host.LoaderBatchTiles, 64},
		{"loader batches", c.Tiles / c.Host.LoaderBatchTiles, 23},
		{"state base", c.Runtime.StateBase, uint32(0x58000)},
		{"completion", c.Runtime.CompletionWord, uint32(0x58000)},
		{"profile start", c.Runtime.ProfileStartCycle, uint32(0x58004)},
		{"profile end", c.Runtime.ProfileEndCycle, uint32(0x58008)},
		{"state end", c.Runtime.StateEnd, c.Runtime.WorkerAreaBase + 6*c.Runtime.WorkerAreaBytes},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	// Each call gives an independent value.
	c.Tiles = 64
	if IPU21().Tiles != Tiles {
		t.Error("IPU21() returned shared state")
	}
}

func TestLookup(t *testing.T) {
	for _, name := range []string{"ipu21", "c600"} {
		if c, err := Lookup(name); err != nil || c.Name != "ipu21" {
			t.Errorf("Lookup(%q) = %v, %v", name, c, err)
		}
	}
	if _, err := Lookup("ipu2"); err == nil {
		t.Error("Lookup(ipu2) succeeded")
	}
}

func TestRates(t *testing.T) {
	c := IPU21()
	// Seed log: peakTflops 282.624; 282786 cycles = 188.524 µs.
	if got := c.PeakFlopsPerSecond(); math.Abs(got-282.624e12) > 1e6 {
		t.Errorf("peak = %g", got)
	}
	if got := c.Microseconds(282786); math.Abs(got-188.524) > 1e-3 {
		t.Errorf("microseconds = %g", got)
	}
}

func TestMemoryClassification(t *testing.T) {
	tests := []struct {
		addr        uint32
		region      int
		ok          bool
		element     int
		executable  bool
		interleaved bool
	}{
		{0, 0, false, -1, false, false},
		{0x4BFFF, 0, false, -1, false, false},
		{0x4C000, 0, true, 0, true, false},
		{0x4C010, 0, true, 0, true, false},
		{0x4FFFF, 0, true, 0, true, false},
		{0x50000, 0, true, 1, true, false},
		{0x58000, 0, true, 3, true, false},
		{0x7FFFF, 0, true, 12, true, false},
		{0x80000, 1, true, 13, false, true},
		{0x84000, 1, true, 13, false, true}, // second physical element of the pair
		{0x87FFF, 1, true, 13, false, true},
		{0x88000, 1, true, 14, false, true},
		{0xE0000, 1, true, 25, false, true},
		{0xE7FFF, 1, true, 25, false, true},
		{0xE8000, 0, false, -1, false, false},
		{0xFFFFFFFF, 0, false, -1, false, false},
	}
	for _, tt := range tests {
		region, ok := Region(tt.addr)
		if region != tt.region || ok != tt.ok {
			t.Errorf("Region(%#x) = %d, %v; want %d, %v", tt.addr, region, ok, tt.region, tt.ok)
		}
		if got := Element(tt.addr); got != tt.element {
			t.Errorf("Element(%#x) = %d, want %d", tt.addr, got, tt.element)
		}
		if got := Executable(tt.addr); got != tt.executable {
			t.Errorf("Executable(%#x) = %v", tt.addr, got)
		}
		if got := Interleaved(tt.addr); got != tt.interleaved {
			t.Errorf("Interleaved(%#x) = %v", tt.addr, got)
		}
	}
}

func TestInSRAM(t *testing.T) {
	tests := []struct {
		addr, size uint32
		want       bool
	}{
		{0x4C000, 624 * 1024, true},
		{0x4C000, 624*1024 + 1, false},
		{0x4BFFC, 4, false},
		{0x4C000, 0, true},
		{0xE8000, 0, true},
		{0xE8000, 4, false},
		{0xE7FFC, 4, true},
		{0xE7FFD, 4, false},
		{0x80000, 0xFFFFFFFF, false}, // would wrap in 32 bits
		{0xFFFFFFF0, 0x20, false},
	}
	for _, tt := range tests {
		if got := InSRAM(tt.addr, tt.size); got != tt.want {
			t.Errorf("InSRAM(%#x, %#x) = %v, want %v", tt.addr, tt.size, got, tt.want)
		}
	}
}

func TestElementBounds(t *testing.T) {
	next := uint32(SRAMBase)
	for e := range Elements {
		start, end, ok := ElementBounds(e)
		if !ok || start != next || end <= start {
			t.Fatalf("ElementBounds(%d) = %#x, %#x, %v (expected start %#x)", e, start, end, ok, next)
		}
		if Element(start) != e || Element(end-1) != e {
			t.Errorf("element %d: Element(start)=%d Element(end-1)=%d", e, Element(start), Element(end-1))
		}
		if Interleaved(start) != (e >= Region0Elements) {
			t.Errorf("element %d interleaving wrong", e)
		}
		next = end
	}
	if next != SRAMEnd {
		t.Errorf("elements end at %#x, want %#x", next, SRAMEnd)
	}
	for _, e := range []int{-1, Elements} {
		if _, _, ok := ElementBounds(e); ok {
			t.Errorf("ElementBounds(%d) ok", e)
		}
	}
}

func TestRuntimeLayout(t *testing.T) {
	if !Executable(EntrySlot) || EntrySlot%8 != 0 {
		t.Errorf("entry slot %#x not executable or not 8-byte aligned", EntrySlot)
	}
	if LoadLimit >= SRAMEnd || SRAMEnd-LoadLimit != 0x450 {
		t.Errorf("load limit %#x", LoadLimit)
	}
	if HostApertureBase < SRAMBase || HostWriteEnd > HostApertureEnd || HostApertureEnd > RuntimeStateBase {
		t.Error("aperture overlaps the runtime state or leaves SRAM")
	}
	// The whole runtime block lies in one element of region 0, after the
	// aperture.
	if Element(RuntimeStateBase) != Element(RuntimeStateEnd-1) || !Executable(RuntimeStateEnd-1) {
		t.Errorf("runtime state %#x..%#x crosses an element", RuntimeStateBase, RuntimeStateEnd)
	}
	prev := uint32(ProfileEndCycle + 4)
	for ctx := range WorkerContexts {
		a, ok := WorkerArea(ctx)
		if !ok || a%32 != 0 || a < prev {
			t.Errorf("WorkerArea(%d) = %#x, %v", ctx, a, ok)
		}
		prev = a + WorkerAreaBytes
	}
	if prev != RuntimeStateEnd {
		t.Errorf("worker areas end at %#x, want %#x", prev, RuntimeStateEnd)
	}
	for _, ctx := range []int{-1, WorkerContexts} {
		if _, ok := WorkerArea(ctx); ok {
			t.Errorf("WorkerArea(%d) ok", ctx)
		}
	}
}

func TestLogicalToPhysicalOracle(t *testing.T) {
	tests := []struct{ logical, physical int }{
		{0, 0}, {1, 2}, {2, 64}, {3, 66},
		{44, 22*64 + 0 + 0}, // last pair of block 0: row 22
		{46, 1409},          // first pair of block 1 (reversed): row 22, column 1 (ipu-stack fabric.rs test)
		{1286, 53},          // receiver of the IPU21.md exchange oracle
		{1471, 63},          // last pair of block 31 (odd, reversed): row 0, column 61+2
		{-1, -1}, {Tiles, -1},
	}
	for _, tt := range tests {
		if got := LogicalToPhysical(tt.logical); got != tt.physical {
			t.Errorf("LogicalToPhysical(%d) = %d, want %d", tt.logical, got, tt.physical)
		}
	}
	for _, p := range []int{-1, Tiles, 1 << 20} {
		if got := PhysicalToLogical(p); got != -1 {
			t.Errorf("PhysicalToLogical(%d) = %d, want -1", p, got)
		}
	}
}

func TestMappingIsBijection(t *testing.T) {
	seen := make([]bool, Tiles)
	for l := range Tiles {
		p := LogicalToPhysical(l)
		if !ValidPhysical(p) {
			t.Fatalf("LogicalToPhysical(%d) = %d out of range", l, p)
		}
		if seen[p] {
			t.Fatalf("physical %d hit twice", p)
		}
		seen[p] = true
		if back := PhysicalToLogical(p); back != l {
			t.Fatalf("PhysicalToLogical(%d) = %d, want %d", p, back, l)
		}
		// A logical pair is a physical pair.
		if l&1 == 0 && Partner(p) != LogicalToPhysical(l+1) {
			t.Errorf("logical %d,%d are not partners", l, l+1)
		}
	}
	for p := range Tiles {
		if LogicalToPhysical(PhysicalToLogical(p)) != p {
			t.Fatalf("round trip of physical %d fails", p)
		}
	}
}

func TestRowColumnPartner(t *testing.T) {
	tests := []struct{ p, row, column, partner int }{
		{0, 0, 0, 2},
		{3, 0, 3, 1},
		{53, 0, 53, 55},
		{64, 1, 0, 66},
		{1409, 22, 1, 1411},
		{1471, 22, 63, 1469},
		{-1, -1, -1, -1},
		{Tiles, -1, -1, -1},
	}
	for _, tt := range tests {
		if got := Row(tt.p); got != tt.row {
			t.Errorf("Row(%d) = %d, want %d", tt.p, got, tt.row)
		}
		if got := Column(tt.p); got != tt.column {
			t.Errorf("Column(%d) = %d, want %d", tt.p, got, tt.column)
		}
		if got := Partner(tt.p); got != tt.partner {
			t.Errorf("Partner(%d) = %d, want %d", tt.p, got, tt.partner)
		}
	}
	for p := range Tiles {
		q := Partner(p)
		if Partner(q) != p || Row(q) != Row(p) || !ValidPhysical(q) {
			t.Fatalf("Partner(%d) = %d is not a same-row involution", p, q)
		}
	}
}

func TestTimeToMuxOracle(t *testing.T) {
	tests := []struct{ src, dst, ttm, delay int }{
		// IPU21.md: ttm(0 -> 53) = -23, sender delay field 0x86.
		{0, 53, -23, 0x86},
	}
	for _, tt := range tests {
		if got := TimeToMux(tt.src, tt.dst); got != tt.ttm {
			t.Errorf("TimeToMux(%d, %d) = %d, want %d", tt.src, tt.dst, got, tt.ttm)
		}
		if got := SendDelayField(tt.src, tt.dst); got != tt.delay {
			t.Errorf("SendDelayField(%d, %d) = %#x, want %#x", tt.src, tt.dst, got, tt.delay)
		}
	}
	// The same oracle through the logical ids the reference used. Its send
	// word 0x78400001 carries direction bits 1.
	if got := SendDelayField(LogicalToPhysical(0), LogicalToPhysical(1286)); got != 0x86 {
		t.Errorf("delay field logical 0 -> 1286 = %#x, want 0x86", got)
	}
	if got := SendDirection(0, 53); got != 0x78400001&3 {
		t.Errorf("SendDirection(0, 53) = %d, want %d", got, 0x78400001&3)
	}
}

// Golden values of the recovered fabric model (ipu-stack topology.rs,
// evaluated once and cross-checked against our restatement over all
// 1472 x 1472 pairs): route delay, paired delay and send direction, for
// pairs in both directions across rows, halves, pair members and the two
// extremes of the range.
func TestTimeToMuxGolden(t *testing.T) {
	tests := []struct{ src, dst, ttm, paired, dir int }{
		{0, 53, -23, -22, SendEast},
		{53, 0, 7, 7, SendWest},
		{0, 1471, -72, -72, SendEast},
		{1471, 0, 31, 32, SendEast},
		{0, 2, -28, -28, SendEast},
		{2, 0, -29, -28, SendEast},
		{31, 32, -29, -28, SendWest},
		{32, 31, -12, -12, SendWest},
		{700, 1409, -37, -36, SendWest},
		{1409, 700, -5, -4, SendWest},
		{735, 736, -29, -28, SendWest},
		{5, 1286, -66, -65, SendWest},
		{1, 1412, MinTimeToMux, -77, SendEast},
		{1440, 0, MaxTimeToMux, MaxTimeToMux, SendWest},
	}
	for _, tt := range tests {
		if got := TimeToMux(tt.src, tt.dst); got != tt.ttm {
			t.Errorf("TimeToMux(%d, %d) = %d, want %d", tt.src, tt.dst, got, tt.ttm)
		}
		if got := PairedTimeToMux(tt.src, tt.dst); got != tt.paired {
			t.Errorf("PairedTimeToMux(%d, %d) = %d, want %d", tt.src, tt.dst, got, tt.paired)
		}
		if got := SendDirection(tt.src, tt.dst); got != tt.dir {
			t.Errorf("SendDirection(%d, %d) = %d, want %d", tt.src, tt.dst, got, tt.dir)
		}
	}
}

func TestTimeToMuxRange(t *testing.T) {
	lo, hi := math.MaxInt, math.MinInt
	for s := range Tiles {
		for d := range Tiles {
			v := TimeToMux(s, d)
			lo, hi = min(lo, v), max(hi, v)
			if v < MinTimeToMux || v > MaxTimeToMux {
				t.Fatalf("TimeToMux(%d, %d) = %d outside [%d, %d]", s, d, v, MinTimeToMux, MaxTimeToMux)
			}
			if p := PairedTimeToMux(s, d); p < v || p < TimeToMux(s, d^2) {
				t.Fatalf("PairedTimeToMux(%d, %d) = %d below a member's delay", s, d, p)
			}
		}
	}
	if lo != MinTimeToMux || hi != MaxTimeToMux {
		t.Errorf("range is %d..%d, documented %d..%d", lo, hi, MinTimeToMux, MaxTimeToMux)
	}
}

func TestScheduleTiming(t *testing.T) {
	// Sample pairs across the chip: corners, halves, rows, pair members.
	sample := []int{0, 1, 2, 3, 31, 32, 53, 63, 64, 700, 735, 736, 1409, 1471}
	dirs := map[int]bool{}
	for _, s := range sample {
		for _, d := range sample {
			if s == d {
				continue
			}
			// A point-to-point send delayed by SendDelayField is selectable
			// at event SendDelayBase+1 on every receiver.
			tx := ReceiveWindowStart(SendDelayField(s, d), s, d)
			if tx != SendDelayBase+1 {
				t.Errorf("%d -> %d: window starts at %d, want %d", s, d, tx, SendDelayBase+1)
			}
			if got, want := FirstPayloadWrite(tx, d), tx+52+2*Row(d); got != want {
				t.Errorf("FirstPayloadWrite(%d, %d) = %d, want %d", tx, d, got, want)
			}
			dir := SendDirection(s, d)
			if dir != SendEast && dir != SendWest {
				t.Errorf("SendDirection(%d, %d) = %d", s, d, dir)
			}
			dirs[dir] = true
		}
	}
	if len(dirs) != 2 {
		t.Errorf("sample used directions %v, want both", dirs)
	}
	if got := FirstPayloadWrite(100, 1409); got != 100+52+44 {
		t.Errorf("FirstPayloadWrite(100, 1409) = %d", got)
	}
	if got := FirstPayloadWrite(100, Tiles); got != -1 {
		t.Errorf("FirstPayloadWrite to invalid tile = %d", got)
	}
}

func TestSyncZoneString(t *testing.T) {
	tests := []struct {
		z    SyncZone
		want string
	}{
		{SyncRecv, "RECV"}, {SyncAns, "ANS"}, {SyncLocal, "LOCAL"}, {SyncInternal, "INTERNAL"},
		{SyncZone(7), "SyncZone(7)"},
	}
	for i, tt := range tests {
		if i < 4 && int(tt.z) != i {
			t.Errorf("%s has number %d, want %d", tt.want, tt.z, i)
		}
		if got := tt.z.String(); got != tt.want {
			t.Errorf("SyncZone(%d).String() = %q, want %q", uint8(tt.z), got, tt.want)
		}
	}
}

func TestCSRs(t *testing.T) {
	tests := []struct {
		c    CSR
		num  uint16
		name string
	}{
		{CSRIncomingMux, 0xA0, "INCOMING_MUX"},
		{CSRIncomingMuxPair, 0xA1, "INCOMING_MUXPAIR"},
		{CSRIncomingFormat, 0xA3, "INCOMING_FORMAT"},
		{CSRIncomingBase, 0xA4, "INCOMING_BASE"},
		{CSRIncomingDCount, 0xA6, "INCOMING_DCOUNT"},
		{CSROutgoingBase, 0xA7, "OUTGOING_BASE"},
		{CSRCCCSLoad, 0x50, "CCCSLOAD"},
		{CSRWorker0Base, 0x21, "WORKER0_BASE"},
		{CSRWorker5Base, 0x26, "WORKER5_BASE"},
		{CSR(0x1FF), 0x1FF, "CSR(0x1FF)"},
	}
	for _, tt := range tests {
		if uint16(tt.c) != tt.num || tt.c.String() != tt.name {
			t.Errorf("CSR %#x %q, want %#x %q", uint16(tt.c), tt.c.String(), tt.num, tt.name)
		}
	}
	for ctx := range WorkerContexts {
		if c, ok := WorkerBaseCSR(ctx); !ok || c != CSR(0x21+ctx) {
			t.Errorf("WorkerBaseCSR(%d) = %v, %v", ctx, c, ok)
		}
	}
	for _, ctx := range []int{-1, WorkerContexts} {
		if _, ok := WorkerBaseCSR(ctx); ok {
			t.Errorf("WorkerBaseCSR(%d) ok", ctx)
		}
	}
}
