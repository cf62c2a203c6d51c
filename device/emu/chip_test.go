package emu

import (
	"errors"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
)

// Chip tests: the oracle of reference/IPU21.md, hand-made rows for each
// exchange instruction, faults and deadlocks. Randomized phases are in
// fabric_test.go.

const (
	endPC = 0x4C400 // `sync 7`: where test programs end (br $m10 lands here)
)

type written struct {
	dst   int
	cycle uint64
	addr  uint32
	n     uint32
	size  int
	src   int
}

func newChip(t testing.TB, ids ...int) *Chip {
	t.Helper()
	c, err := NewChip(ids...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// loadRaw loads raw words at supBase of tile id, sets $m10 to the end
// stub (`sync 7`) and starts the supervisor.
func loadRaw(t testing.TB, c *Chip, id int, words ...uint32) {
	t.Helper()
	tl := c.Tile(id)
	if err := tl.WriteWords(supBase, words); err != nil {
		t.Fatal(err)
	}
	if err := tl.WriteWords(endPC, encode(t, []in{I("sync", 7)})); err != nil {
		t.Fatal(err)
	}
	tl.Sup.M[10] = endPC
	if err := c.Start(id, supBase); err != nil {
		t.Fatal(err)
	}
}

func loadProg(t testing.TB, c *Chip, id int, prog ...in) {
	t.Helper()
	loadRaw(t, c, id, encode(t, prog)...)
}

func runToHost(t testing.TB, c *Chip) ChipResult {
	t.Helper()
	res, err := c.Run(1 << 30)
	if err != nil {
		t.Fatalf("chip run: %v", err)
	}
	if res.Reason != ChipHost || res.Zone != 7 {
		t.Fatalf("chip stopped with %v zone %d, want host zone 7", res.Reason, res.Zone)
	}
	return res
}

func readWords(t testing.TB, tl *Tile, addr uint32, n int) []uint32 {
	t.Helper()
	out := make([]uint32, n)
	for i := range out {
		w, err := tl.ReadWord(addr + uint32(4*i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = w
	}
	return out
}

// TestOracle: reference/IPU21.md — physical tile 0 sends 3 words to
// physical tile 53 (logical 1286) with the published rows.
func TestOracle(t *testing.T) {
	if ipu21.PhysicalToLogical(53) != 1286 || ipu21.TimeToMux(0, 53) != -23 {
		t.Fatal("topology disagrees with the oracle")
	}
	c := newChip(t, 0, 53)
	var got []written
	c.OnWrite = func(dst int, cy uint64, addr uint32, n uint32, size int, src int) {
		got = append(got, written{dst, cy, addr, n, size, src})
	}
	const src, dst = 0x80000, 0x90000
	data := []uint32{0x11111111, 0x22222222, 0x33333333}
	if err := c.Tile(0).WriteWords(src, data); err != nil {
		t.Fatal(err)
	}
	// The oracle's address fields are zero: the sender reads from
	// OUTGOING_BASE and the receiver writes at INCOMING_BASE.
	c.Tile(0).Sup.CSR[csrOutgoingBase] = src
	c.Tile(53).Sup.CSR[csrIncomingBase] = dst
	loadRaw(t, c, 0, 0x41800003, 0x40a00086, 0x78400001, 0x43a00000)
	loadRaw(t, c, 53, 0x41800003, 0x641c0000, 0x64008640, 0x61800000, 0x40a00007, 0x43a00000)
	runToHost(t, c)

	// Both tiles issue `sync 3` in cycle 0 and arrive in cycle 1; all
	// resume at 1 + 600. The sender's delay is 135 events, so its send
	// issues at timeline 135; the window opens at 135 + ttm + 1 = 113 and
	// the first word lands at 113 + 52 + 2*row(53) = 165.
	const resume = 1 + ipu21.GlobalSyncCycles
	ts := 135
	tx := ipu21.ReceiveWindowStart(ts, 0, 53)
	first := ipu21.FirstPayloadWrite(tx, 53)
	if tx != 113 || first != 165 {
		t.Fatalf("timing rules give T_x %d, first write %d; want 113, 165", tx, first)
	}
	want := []written{{53, resume + uint64(first), dst, 3, 4, 0}}
	if len(got) != 1 || got[0] != want[0] {
		t.Fatalf("writes %+v, want %+v", got, want)
	}
	if w := readWords(t, c.Tile(53), dst, 4); w[0] != data[0] || w[1] != data[1] || w[2] != data[2] || w[3] != 0 {
		t.Fatalf("receiver memory %x, want %x then 0", w, data)
	}
	if v := c.Tile(53).Sup.CSR[csrIncomingDelta]; v != dst+12 {
		t.Errorf("INCOMING_DELTA 0x%x, want 0x%x", v, dst+12)
	}
	if s := c.Stats(); s.Words != 3 || s.Syncs != 1 {
		t.Errorf("stats %+v", s)
	}
}

// sctlTo returns the send control for a point-to-point send.
func sctlTo(s, d int) int64 { return int64(ipu21.SendDirection(s, d)) }

// p2p returns the sender and receiver programs of an ordinary transfer of
// n words (1 <= n <= 64 + 4096) from s (address src) to d (address dst),
// with the ipu-stack point-to-point shapes: the sender waits
// 111 - ttm, the receiver opens its window at event 112.
func p2p(s, d int, n int, src, dst uint32) (sender, receiver []in) {
	ttm := ipu21.TimeToMux(s, d)
	sender = []in{I("sync", 3), I("delay", int64(ipu21.SendDelayBase-ttm))}
	first := min(n, 64)
	sender = append(sender, I("send", int64(first), int64(src), sctlTo(s, d)))
	if n > 64 {
		sender = append(sender, I("sendoff", int64(n-64), 0, sctlTo(s, d)))
	}
	sender = append(sender, I("delay", 200), I("br", 10))
	L := int64(ipu21.PayloadLatency + 2*ipu21.Row(d))
	receiver = []in{I("sync", 3), I("delayxpic", ipu21.SendDelayBase+1, 0, int64(s))}
	nn := int64(n)
	switch {
	case nn < L:
		receiver = append(receiver, I("delayxpic", nn, 0, ipu21.MuxNeutral), I("delaypic", L-nn, 0, int64(dst>>2)))
	case nn == L:
		receiver = append(receiver, I("delaypic", L-1, 0, int64(dst>>2)), I("delayxpic", 1, 0, ipu21.MuxNeutral))
	default:
		receiver = append(receiver, I("delaypic", L, 0, int64(dst>>2)))
		rest := nn - L
		if rest > 4096 {
			receiver = append(receiver, I("delay", rest-4096))
			rest = 4096
		}
		receiver = append(receiver, I("delayxpic", rest, 0, ipu21.MuxNeutral))
	}
	receiver = append(receiver, I("delay", L+8), I("br", 10))
	return sender, receiver
}

func fill(t testing.TB, tl *Tile, addr uint32, n int, seed uint32) []uint32 {
	t.Helper()
	w := make([]uint32, n)
	for i := range w {
		w[i] = seed*0x9E3779B9 + uint32(i)*0x01000193 + 1
	}
	if err := tl.WriteWords(addr, w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestPointToPoint(t *testing.T) {
	for _, tc := range []struct{ s, d, n int }{
		{0, 53, 1}, {0, 53, 51}, {0, 53, 52}, {0, 53, 53}, {1471, 0, 64}, {0, 1471, 65},
		{700, 64*22 + 5, 96}, {700, 64*22 + 5, 97}, {130, 131, 4160}, {5, 1, 300},
	} {
		c := newChip(t, tc.s, tc.d)
		data := fill(t, c.Tile(tc.s), 0x80000, tc.n, uint32(tc.n))
		sp, rp := p2p(tc.s, tc.d, tc.n, 0x80000, 0xA0000)
		loadProg(t, c, tc.s, sp...)
		loadProg(t, c, tc.d, rp...)
		runToHost(t, c)
		got := readWords(t, c.Tile(tc.d), 0xA0000, tc.n+1)
		for i, w := range data {
			if got[i] != w {
				t.Fatalf("%d -> %d, %d words: word %d = %x, want %x", tc.s, tc.d, tc.n, i, got[i], w)
			}
		}
		if got[tc.n] != 0 {
			t.Fatalf("%d -> %d: word past the end written", tc.s, tc.d)
		}
	}
}

// TestSendpicpMessages: one receiver takes four back-to-back 52-word
// messages from four senders, changing source and pointer together with
// directionless sendpicp (the SDK receiver row shape of ipu-stack's
// EXCHANGE_INSTRUCTION_REFERENCE), and sends a message of its own with
// sendpic controls meanwhile (full duplex).
func TestSendpicpMessages(t *testing.T) {
	const rcv = 0 // row 0: L = 52
	senders := []int{4, 8, 12, 16}
	other := 20 // receives the receiver's own message
	c := newChip(t, append([]int{rcv, other}, senders...)...)
	L := int64(ipu21.PayloadLatency)
	// Every message's window opens at base + 52*k.
	const base = 200
	var data [][]uint32
	for k, s := range senders {
		data = append(data, fill(t, c.Tile(s), 0x80000, 52, uint32(k+1)))
		ts := int64(base+52*k) - int64(ipu21.TimeToMux(s, rcv)) - 1
		loadProg(t, c, s, I("sync", 3), I("delay", ts), I("send", 52, 0x80000, sctlTo(s, rcv)), I("delay", 400), I("br", 10))
	}
	// Receiver: XPIC s0 at base (delayxpic); then sendpicp at timeline
	// base+51+52(k-1) applies XPIC s(k) and the pointer of message k-1 at
	// base+52k, and sends 52 words of its own to the other tile.
	dir := sctlTo(rcv, other)
	mine := fill(t, c.Tile(rcv), 0x80000, 4*52, 99)
	prog := []in{I("sync", 3), I("delayxpic", base, 0, int64(senders[0])), I("delay", 1), I("delay", 50)}
	for k := 1; k <= 4; k++ {
		x := int64(ipu21.MuxNeutral)
		if k < 4 {
			x = int64(senders[k])
		}
		prog = append(prog, I("sendpicp", 52, int64(0x80000+4*52*(k-1)), dir, 0, x, int64((0xA0000+0x1000*(k-1))>>2)))
	}
	prog = append(prog, I("delay", L+8), I("br", 10))
	loadProg(t, c, rcv, prog...) // sendpicp starts at word 4: 8-byte aligned
	// The other tile receives the 208 words sent by the sendpicps.
	tx := int64(base+51) + int64(ipu21.TimeToMux(rcv, other)) + 1
	Lo := int64(ipu21.PayloadLatency + 2*ipu21.Row(other))
	loadProg(t, c, other, I("sync", 3), I("delayxpic", tx, 0, rcv), I("delaypic", Lo, 0, 0xB0000>>2),
		I("delayxpic", 208-Lo, 0, ipu21.MuxNeutral), I("delay", Lo+8), I("br", 10))
	runToHost(t, c)
	for k := range senders {
		got := readWords(t, c.Tile(rcv), uint32(0xA0000+0x1000*k), 53)
		for i := 0; i < 52; i++ {
			if got[i] != data[k][i] {
				t.Fatalf("message %d word %d = %x, want %x", k, i, got[i], data[k][i])
			}
		}
		if got[52] != 0 {
			t.Fatalf("message %d: word 52 written", k)
		}
	}
	if got := readWords(t, c.Tile(other), 0xB0000, 209); !equalWords(got[:208], mine) || got[208] != 0 {
		t.Fatalf("full-duplex message wrong: %x", got[:8])
	}
}

func equalWords(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func faultOfChip(t *testing.T, c *Chip) *Fault {
	t.Helper()
	_, err := c.Run(1 << 24)
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("run: %v, want a fault", err)
	}
	for _, want := range []string{"tile ", "pc 0x", "cycle "} {
		if !strings.Contains(f.Error(), want) {
			t.Errorf("fault %q lacks %q", f.Error(), want)
		}
	}
	if f.Disasm == "" || f.Disasm == "?" {
		t.Errorf("fault %q has no disassembly", f.Error())
	}
	return f
}

// oracleChip loads the oracle rows on tiles 0 -> 53 (words at 0x80000 ->
// 0x90000) with optional replacements of words, and extra tiles.
func oracleChip(t *testing.T, sender, receiver []uint32, extra ...int) *Chip {
	t.Helper()
	c := newChip(t, append([]int{0, 53}, extra...)...)
	fill(t, c.Tile(0), 0x80000, 3, 7)
	c.Tile(0).Sup.CSR[csrOutgoingBase] = 0x80000
	c.Tile(53).Sup.CSR[csrIncomingBase] = 0x90000
	if sender == nil {
		sender = []uint32{0x41800003, 0x40a00086, 0x78400001, 0x43a00000}
	}
	if receiver == nil {
		receiver = []uint32{0x41800003, 0x641c0000, 0x64008640, 0x61800000, 0x40a00007, 0x43a00000}
	}
	loadRaw(t, c, 0, sender...)
	loadRaw(t, c, 53, receiver...)
	return c
}

const resume = 1 + ipu21.GlobalSyncCycles // first cycle after the initial sync

func wantFault(t *testing.T, f *Fault, kind FaultKind, tile int, pc uint32, cycle uint64, disasm, reason string) {
	t.Helper()
	if f.Kind != kind || f.Tile != tile || f.PC != pc || f.Cycle != cycle || !strings.Contains(f.Disasm, disasm) || !strings.Contains(f.Reason, reason) {
		t.Fatalf("fault %v\n  (kind %v tile %d pc 0x%x cycle %d %q)\nwant kind %v tile %d pc 0x%x cycle %d %q, reason with %q",
			f, f.Kind, f.Tile, f.PC, f.Cycle, f.Disasm, kind, tile, pc, cycle, disasm, reason)
	}
}

func TestExchangeFaults(t *testing.T) {
	w := func(prog ...in) []uint32 { return encode(t, prog) }
	t.Run("no sender", func(t *testing.T) {
		c := oracleChip(t, []uint32{0x41800003, 0x40a00086, 0x43a00000}, nil)
		f := faultOfChip(t, c)
		wantFault(t, f, FaultNoSender, 53, supBase+4, resume+113, "delayxpic 112, 0, 0x0", "sends no word")
	})
	t.Run("wrong sender", func(t *testing.T) {
		// The receiver selects tile 4, which is silent; tile 0's words
		// arrive instead.
		rcv := []uint32{0x41800003, 0x641c0004, 0x64008640, 0x61800000, 0x40a00007, 0x43a00000}
		c := oracleChip(t, nil, rcv, 4)
		loadProg(t, c, 4, I("sync", 3), I("delay", 300), I("br", 10))
		f := faultOfChip(t, c)
		wantFault(t, f, FaultWrongSender, 53, supBase+4, resume+113, "delayxpic 112, 0, 0x4", "comes from tile 0")
	})
	t.Run("wrong direction", func(t *testing.T) {
		c := oracleChip(t, []uint32{0x41800003, 0x40a00086, 0x78400002, 0x43a00000}, nil)
		f := faultOfChip(t, c)
		wantFault(t, f, FaultWrongSender, 53, supBase+4, resume+113, "delayxpic", "away from this tile")
	})
	t.Run("window pauses", func(t *testing.T) {
		// The sender sends 1 word, pauses a cycle, sends 2 more; the
		// receiver's 4-cycle window sees a gap.
		snd := w(I("sync", 3), I("delay", 135), I("send", 1, 0, 1), I("delay", 1), I("sendoff", 2, 4, 1), I("br", 10))
		rcv := w(I("sync", 3), I("delayxpic", 113, 0, 0), I("delayxpic", 4, 0, 0x640), I("delaypic", 48, 0, 0), I("delay", 10), I("br", 10))
		c := oracleChip(t, snd, rcv)
		f := faultOfChip(t, c)
		wantFault(t, f, FaultNoSender, 53, supBase+4, resume+114, "delayxpic 112", "pauses in cycle")
	})
	t.Run("fetch clashes with incoming write", func(t *testing.T) {
		// The pointer lands in element 0, where the code is; the
		// supervisor fetches `delay 1` while the words land.
		// INCOMING_BASE 0: the PIC value is the word address.
		rcv := w(I("sync", 3), I("delayxpic", 113, 0, 0), I("delayxpic", 3, 0, 0x640),
			I("delaypic", 49, 0, 0x4C800>>2), I("delay", 1), I("delay", 1), I("delay", 8), I("br", 10))
		c := oracleChip(t, nil, rcv)
		c.Tile(53).Sup.CSR[csrIncomingBase] = 0
		f := faultOfChip(t, c)
		wantFault(t, f, FaultClash, 53, supBase+16, resume+165, "delay 0", "instruction fetch")
	})
	t.Run("send read clashes with incoming write", func(t *testing.T) {
		// Tile 53 receives into 0x80100 while it sends from 0x80000
		// (element 13 both) in the same cycles.
		rcv := w(I("sync", 3), I("delayxpic", 113, 0, 0), I("delayxpic", 3, 0, 0x640),
			I("delaypic", 1, 0, 0x80100>>2), I("delay", 47), I("send", 3, 0x80000, 1), I("delay", 10), I("br", 10))
		c := oracleChip(t, nil, rcv)
		c.Tile(53).Sup.CSR[csrIncomingBase] = 0
		f := faultOfChip(t, c)
		wantFault(t, f, FaultClash, 53, supBase+20, resume+165, "send 2, 0x20000, 1", "element 13")
	})
	t.Run("fetch clashes with send read", func(t *testing.T) {
		c := oracleChip(t, nil, nil)
		c.Tile(0).Sup.CSR[csrOutgoingBase] = 0x4D000 // element 0 holds the code
		f := faultOfChip(t, c)
		wantFault(t, f, FaultClash, 0, supBase+12, resume+138, "br $m10", "send at pc 0x4c008")
	})
	t.Run("write outside SRAM", func(t *testing.T) {
		c := oracleChip(t, nil, nil)
		c.Tile(53).Sup.CSR[csrIncomingBase] = 0xE7FFC // the second word falls off the end
		f := faultOfChip(t, c)
		wantFault(t, f, FaultIncoming, 53, supBase+12, resume+166, "delaypic 48", "0xe8000")
	})
	t.Run("write after the segment", func(t *testing.T) {
		rcv := []uint32{0x41800003, 0x641c0000, 0x64008640, 0x61800000, 0x40a00000, 0x43a00000}
		c := oracleChip(t, nil, rcv)
		f := faultOfChip(t, c)
		wantFault(t, f, FaultIncoming, 53, supBase+12, resume+166, "delaypic 48", "after this tile's exchange segment ended")
	})
	t.Run("paired item into 32-bit format", func(t *testing.T) {
		// Tile 0 sends 64 paired items to the pair 64/66; 66 never sets
		// the 64-bit format.
		c := newChip(t, 0, 64, 66)
		fill(t, c.Tile(0), 0x80000, 128, 1)
		ptm := int64(ipu21.PairedTimeToMux(0, 64)) - 1
		ts := int64(10)
		a := ts + ptm + 1
		if a < 1 {
			ts, a = ts-a+1, 1
		}
		loadProg(t, c, 0, I("sync", 3), I("delay", ts), I("send", 64, 0x80000/2, int64(ipu21.SendDirection(0, 64))|4), I("delay", 300), I("br", 10))
		L := int64(ipu21.PayloadLatency + 2*ipu21.Row(64))
		loadProg(t, c, 64, I("sync", 3), I("delayxpic", a, 1, 0), I("delaypic", L-1, 1, 1), I("delaypic", 2, 0, 0xA0000>>2),
			I("delayxpic", 64-L-1+1, 1, 0x640), I("delay", 200), I("br", 10))
		loadProg(t, c, 66, I("sync", 3), I("delaypic", a+L+1, 0, 0xA0000>>2), I("delay", 300), I("br", 10))
		f := faultOfChip(t, c)
		wantFault(t, f, FaultExchange, 66, supBase+4, uint64(resume+a+L+1), "delaypic", "INCOMING_FORMAT is 0")
	})
	t.Run("paired send borrows a busy lane", func(t *testing.T) {
		c := newChip(t, 0, 2, 64, 66)
		loadProg(t, c, 0, I("sync", 3), I("delay", 100), I("send", 64, 0x80000/2, 5), I("delay", 300), I("br", 10))
		loadProg(t, c, 2, I("sync", 3), I("delay", 120), I("send", 4, 0x80000, 1), I("delay", 300), I("br", 10))
		loadProg(t, c, 64, I("sync", 3), I("delay", 400), I("br", 10))
		loadProg(t, c, 66, I("sync", 3), I("delay", 400), I("br", 10))
		f := faultOfChip(t, c)
		wantFault(t, f, FaultExchange, 0, supBase+8, resume+121, "send 63", "partner tile 2")
	})
	t.Run("bad XPIC value", func(t *testing.T) {
		c := newChip(t, 0)
		loadProg(t, c, 0, I("sync", 3), I("delayxpic", 5, 0, 0x700), I("br", 10))
		f := faultOfChip(t, c)
		wantFault(t, f, FaultExchange, 0, supBase+4, resume, "delayxpic 4, 0, 0x700", "not a physical tile")
	})
}

// TestRecvSync: sync 0 waits for INCOMING_DCOUNT to reach zero; the
// receiver's row has no trailing delay.
func TestRecvSync(t *testing.T) {
	rcv := []uint32{0x41800003, 0x641c0000, 0x64008640, 0x61800000, 0x41800000, 0x43a00000}
	c := oracleChip(t, nil, rcv)
	c.Tile(53).Sup.CSR[csrIncomingDCount] = 3
	var last uint64
	c.OnWrite = func(dst int, cy uint64, addr uint32, n uint32, size int, src int) { last = cy + uint64(n) }
	runToHost(t, c)
	if got := readWords(t, c.Tile(53), 0x90000, 3); got[2] == 0 || c.Tile(53).Sup.CSR[csrIncomingDCount] != 0 {
		t.Fatalf("receive with sync 0: %x, dcount %d", got, c.Tile(53).Sup.CSR[csrIncomingDCount])
	}
	if last != resume+168 {
		t.Fatalf("last write ends at %d", last)
	}
}

func TestDeadlock(t *testing.T) {
	check := func(t *testing.T, c *Chip, culprit int, want ...string) {
		t.Helper()
		c.DeadlockCycles, c.Slice = 5000, 1000
		_, err := c.Run(1 << 30)
		var d *DeadlockError
		if !errors.As(err, &d) {
			t.Fatalf("run: %v, want a deadlock", err)
		}
		if len(d.Culprits) != 1 || d.Culprits[0].Tile != culprit {
			t.Fatalf("culprits %v, want tile %d:\n%v", d.Culprits, culprit, err)
		}
		for _, s := range want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("report lacks %q:\n%v", s, err)
			}
		}
	}
	t.Run("tile never syncs", func(t *testing.T) {
		c := newChip(t, 0, 2, 64)
		loadProg(t, c, 0, I("sync", 3), I("br", 10))
		loadProg(t, c, 64, I("sync", 3), I("br", 10))
		loadProg(t, c, 2, I("sync", 3), I("setzi", 1, 5), I("bri", supBase+8))
		check(t, c, 2, "tile 2: still running", `"bri 0x4c008"`, "tile 0: waiting at sync 7", "pc 0x4c400")
	})
	t.Run("sync zone mismatch", func(t *testing.T) {
		c := newChip(t, 0, 2, 64)
		loadProg(t, c, 0, I("sync", 3), I("br", 10))
		loadProg(t, c, 64, I("sync", 3), I("br", 10))
		loadProg(t, c, 2, I("sync", 3), I("sync", 1))
		check(t, c, 2, "different sync zones", `tile 2: waiting at sync 1`, `"sync 1"`)
	})
	t.Run("sync 0 never satisfied", func(t *testing.T) {
		c := newChip(t, 0, 2)
		loadProg(t, c, 0, I("sync", 3), I("br", 10))
		loadProg(t, c, 2, I("sync", 3), I("sync", 0))
		c.Tile(2).Sup.CSR[csrIncomingDCount] = 5
		check(t, c, 2, "INCOMING_DCOUNT 5")
	})
}

// TestHostPhases: a host sync hands the chip to the Host hook, which
// writes the data the next exchange sends; the final host sync returns.
func TestHostPhases(t *testing.T) {
	c := newChip(t, 0, 53)
	sp, rp := p2p(0, 53, 100, 0x80000, 0xA0000)
	loadProg(t, c, 0, append([]in{I("sync", 5)}, sp...)...)
	loadProg(t, c, 53, append([]in{I("sync", 5)}, rp...)...)
	var zones []int
	var data []uint32
	c.Host = func(c *Chip, zone int) (bool, error) {
		zones = append(zones, zone)
		if zone == 5 {
			data = fill(t, c.Tile(0), 0x80000, 100, 42)
			return true, nil
		}
		return false, nil
	}
	res := runToHost(t, c)
	if len(zones) != 2 || zones[0] != 5 || zones[1] != 7 {
		t.Fatalf("host saw zones %v", zones)
	}
	if got := readWords(t, c.Tile(53), 0xA0000, 100); !equalWords(got, data) {
		t.Fatal("data written by the host did not arrive")
	}
	if res.Stats.Syncs != 2 {
		t.Fatalf("syncs %d, want 2 (host zone 5, internal)", res.Stats.Syncs)
	}
	// Resume after the final host phase: the supervisors run on into
	// zeroed memory and fault there.
	if _, err := c.Run(1000); err == nil || !strings.Contains(err.Error(), "unknown word") {
		t.Fatalf("run after the end: %v", err)
	}
}

// TestRunInSlices: a run cut into many small budgets gives the same
// memory and cycles as one run.
func TestRunInSlices(t *testing.T) {
	var digests []uint64
	for _, step := range []uint64{1 << 30, 37, 5} {
		rc := buildRandom(t, 7)
		for i := 0; ; i++ {
			res, err := rc.c.Run(step)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason == ChipHost {
				break
			}
			if res.Reason != ChipLimit || i > 1<<20 {
				t.Fatalf("stopped with %v", res.Reason)
			}
		}
		rc.check(t)
		digests = append(digests, chipDigest(rc.c))
	}
	if digests[1] != digests[0] || digests[2] != digests[0] {
		t.Fatalf("digests differ: %x", digests)
	}
}

// TestFullChip: all 1472 tiles sync; physical tile 0 sends the oracle's
// 3 words to tile 53 while the rest wait.
func TestFullChip(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 1472 tiles")
	}
	c := newChip(t)
	if len(c.Tiles()) != ipu21.Tiles {
		t.Fatalf("%d tiles", len(c.Tiles()))
	}
	fill(t, c.Tile(0), 0x80000, 3, 1)
	c.Tile(0).Sup.CSR[csrOutgoingBase] = 0x80000
	c.Tile(53).Sup.CSR[csrIncomingBase] = 0x90000
	loadRaw(t, c, 0, 0x41800003, 0x40a00086, 0x78400001, 0x43a00000)
	loadRaw(t, c, 53, 0x41800003, 0x641c0000, 0x64008640, 0x61800000, 0x40a00007, 0x43a00000)
	for _, tl := range c.Tiles() {
		if tl.ID != 0 && tl.ID != 53 {
			loadProg(t, c, tl.ID, I("sync", 3), I("br", 10))
		}
	}
	res := runToHost(t, c)
	if res.Stats.Words != 3 || res.Stats.Syncs != 1 {
		t.Fatalf("stats %+v", res.Stats)
	}
	if got := readWords(t, c.Tile(53), 0x90000, 3); got[0] == 0 || got[2] == 0 {
		t.Fatalf("words did not arrive: %x", got)
	}
}

// TestIpuStackRows runs ipu-stack's point-to-point rows as its
// exchange.rs point_to_point builds them (fields = events - 1; PIC value 0
// with INCOMING_BASE = the destination), including the 52-word shape
// (pointer one event early) and, for n > 52 below row 0, a window that
// stays open 2*row cycles after the stream.
func TestIpuStackRows(t *testing.T) {
	for _, tc := range []struct{ s, d, n int }{
		{0, 53, 1}, {0, 53, 51}, {0, 53, 52}, {0, 53, 53}, {0, 64*22 + 5, 52}, {0, 64*22 + 5, 100},
		{64*22 + 5, 7, 300}, {700, 64*11 + 40, 1000}, {1471, 64*10 + 1, 64}, {1471, 64*10 + 1, 65},
	} {
		c := newChip(t, tc.s, tc.d)
		data := fill(t, c.Tile(tc.s), 0x80000, tc.n, uint32(tc.n))
		c.Tile(tc.s).Sup.CSR[csrOutgoingBase] = 0x80000
		c.Tile(tc.d).Sup.CSR[csrIncomingBase] = 0xA0000
		ev := func(field int) int64 { return int64(field + 1) }
		ttm := ipu21.TimeToMux(tc.s, tc.d)
		dir := sctlTo(tc.s, tc.d)
		sd := 111 - ttm
		snd := []in{I("sync", 3), I("delay", ev(sd)), I("send", int64(min(tc.n, 64)), 0, dir)}
		if tc.n > 64 {
			snd = append(snd, I("sendoff", int64(tc.n-64), 0, dir))
		}
		if tr := 4 - sd - tc.n; tr >= 0 {
			snd = append(snd, I("delay", ev(tr)))
		}
		phase := 2 * ipu21.Row(tc.d)
		rcv := []in{I("sync", 3), I("delayxpic", ev(112), 0, int64(tc.s))}
		switch {
		case tc.n <= 51:
			rcv = append(rcv, I("delayxpic", ev(tc.n-1), 0, 0x640), I("delaypic", ev(51-tc.n+phase), 0, 0), I("delay", ev(tc.n+4)))
		case tc.n == 52:
			rcv = append(rcv, I("delaypic", ev(50+phase), 0, 0), I("delayxpic", ev(0), 0, 0x640), I("delay", ev(56)))
		default:
			rcv = append(rcv, I("delaypic", ev(51+phase), 0, 0), I("delayxpic", ev(tc.n-53), 0, 0x640), I("delay", ev(56)))
		}
		loadProg(t, c, tc.s, append(snd, I("br", 10))...)
		loadProg(t, c, tc.d, append(rcv, I("br", 10))...)
		runToHost(t, c)
		if got := readWords(t, c.Tile(tc.d), 0xA0000, tc.n+1); !equalWords(got[:tc.n], data) || got[tc.n] != 0 {
			t.Fatalf("%d -> %d, %d words: wrong data", tc.s, tc.d, tc.n)
		}
	}
}

// TestIpuStackPairedRows: ipu-stack's SDK-matched paired multicast rows
// (exchange.rs paired_multicast64_matches_near_reverse_and_far_sdk_rows:
// logical 0 -> logical 2, 3 = physical 0 -> 64, 66, 64 items).
func TestIpuStackPairedRows(t *testing.T) {
	if ipu21.LogicalToPhysical(2) != 64 || ipu21.LogicalToPhysical(3) != 66 || ipu21.PairedTimeToMux(0, 64) != -30 {
		t.Fatal("topology")
	}
	c := newChip(t, 0, 64, 66)
	data := fill(t, c.Tile(0), 0x50000, 128, 3)
	ev := func(field int) int64 { return int64(field + 1) }
	loadProg(t, c, 0, I("sync", 3), I("delay", ev(30)), I("send", 64, 0x50000/2, 5), I("br", 10))
	ptr := int64(0x60000 >> 2)
	loadProg(t, c, 64, I("sync", 3), I("delayxpic", ev(0), 1, 0), I("delaypic", ev(52), 1, 1), I("delaypic", ev(1), 0, ptr),
		I("delayxpic", ev(8), 1, 0x640), I("delaypic", ev(52), 1, 0), I("delay", ev(6)), I("br", 10))
	loadProg(t, c, 66, I("sync", 3), I("delaypic", ev(53), 1, 1), I("delaypic", ev(1), 0, ptr),
		I("delaypic", ev(61), 1, 0), I("delay", ev(6)), I("br", 10))
	var writes []written
	c.OnWrite = func(dst int, cy uint64, addr uint32, n uint32, size int, src int) {
		writes = append(writes, written{dst, cy, addr, n, size, src})
	}
	runToHost(t, c)
	for _, d := range []int{64, 66} {
		if got := readWords(t, c.Tile(d), 0x60000, 129); !equalWords(got[:128], data) || got[128] != 0 {
			t.Fatalf("tile %d: wrong data", d)
		}
	}
	// Items sampled from cycle 1 after the sync; row 1: written from
	// 1 + 52 + 2 + 1 = 56.
	want := []written{{64, resume + 56, 0x60000, 64, 8, 0}, {66, resume + 56, 0x60000, 64, 8, 0}}
	if len(writes) != 2 || writes[0] != want[0] || writes[1] != want[1] {
		t.Fatalf("writes %+v, want %+v", writes, want)
	}
}
