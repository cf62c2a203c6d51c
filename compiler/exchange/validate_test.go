package exchange

import (
	"errors"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/isa"
)

// Hand-broken schedules: each must be rejected by Validate; where the
// emulator detects the same mistake, it must fault too (so Validate's
// rules and the emulator's agree).

func oracleSchedule(t *testing.T) *Schedule {
	p := Phase{Transfers: []Transfer{{Src: 0, SrcAddr: 0x80000, Words: 3, Dsts: []Dest{{53, 0x90000}}}}}
	return build(t, p, Options{})
}

// decodeAll splits a row into instructions.
func decodeAll(t *testing.T, words []uint32) []isa.Decoded {
	var out []isa.Decoded
	for i := 0; i < len(words); {
		d, err := isa.DecodeIn(isa.Supervisor, words[i:])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
		i += len(d.Words)
	}
	return out
}

func encodeAll(t *testing.T, ds []isa.Decoded) []uint32 {
	var w []uint32
	for _, d := range ds {
		ws, err := d.Inst.Encode(d.Values, false)
		if err != nil {
			t.Fatal(err)
		}
		w = append(w, ws...)
	}
	return w
}

// edit rewrites instruction k of tile's row.
func edit(t *testing.T, s *Schedule, tile, k int, f func(d *isa.Decoded)) {
	p := s.Program(tile)
	ds := decodeAll(t, p.Words)
	f(&ds[k])
	p.Words = encodeAll(t, ds)
}

func wantReject(t *testing.T, s *Schedule, frag string) {
	t.Helper()
	err := s.Validate()
	if err == nil {
		t.Fatalf("Validate accepted a broken schedule (want %q)", frag)
	}
	if !strings.Contains(err.Error(), frag) {
		t.Fatalf("Validate: %v; want an error containing %q", err, frag)
	}
	t.Logf("rejected: %v", err)
}

// wantFault runs s on the emulator and wants a fault of the given kind.
func wantFault(t *testing.T, s *Schedule, kind emu.FaultKind) {
	t.Helper()
	var ids []int
	for _, p := range s.Tiles {
		ids = append(ids, p.Tile)
	}
	c, err := emu.NewChip(ids...)
	if err != nil {
		t.Fatal(err)
	}
	err = loadAndRun(t, c, s)
	var f *emu.Fault
	if !errors.As(err, &f) {
		t.Fatalf("emulator: %v, want a fault", err)
	}
	if f.Kind != kind {
		t.Fatalf("emulator fault %v, want kind %v", f, kind)
	}
}

func TestValidateWindowStart(t *testing.T) {
	s := oracleSchedule(t)
	// Sender: delay 23 -> 24: the window opens one event before the word.
	edit(t, s, 0, 0, func(d *isa.Decoded) { d.Values[0]++ })
	s.Program(0).Events++
	wantReject(t, s, "first word arrives")
	wantFault(t, s, emu.FaultNoSender)
}

func TestValidateDirection(t *testing.T) {
	s := oracleSchedule(t)
	edit(t, s, 0, 1, func(d *isa.Decoded) { d.Values[2] ^= 3 })
	wantReject(t, s, "goes away")
	wantFault(t, s, emu.FaultWrongSender)
}

func TestValidateWindowLeftOpen(t *testing.T) {
	s := oracleSchedule(t)
	edit(t, s, 53, 1, func(d *isa.Decoded) { d.Values[2] = 0 })
	wantReject(t, s, "window on tile 0 open")
}

func TestValidatePointerNotSet(t *testing.T) {
	s := oracleSchedule(t)
	p := s.Program(53)
	ds := decodeAll(t, p.Words)
	ds[2] = isa.Decoded{Inst: isa.ByID("delay"), Values: []int64{ds[2].Values[0]}}
	p.Words = encodeAll(t, ds)
	wantReject(t, s, "before any PIC")
}

func TestValidateWrongAddress(t *testing.T) {
	s := oracleSchedule(t)
	edit(t, s, 53, 2, func(d *isa.Decoded) { d.Values[2] += 4 })
	wantReject(t, s, "no transfer's destination")
}

func TestValidateWriteAfterRowEnd(t *testing.T) {
	s := oracleSchedule(t)
	p := s.Program(53)
	ds := decodeAll(t, p.Words)
	ds[len(ds)-1].Values[0]--
	p.Words = encodeAll(t, ds)
	p.Events--
	wantReject(t, s, "lands after the row ends")
	s.Horizon-- // consistent numbers: the emulator must fault too
	wantFault(t, s, emu.FaultIncoming)
}

func TestValidateNumbers(t *testing.T) {
	s := oracleSchedule(t)
	s.Program(53).Events++
	wantReject(t, s, "Program.Events says")
	s = oracleSchedule(t)
	s.Horizon++
	wantReject(t, s, "horizon")
	s = oracleSchedule(t)
	s.LowerBound--
	wantReject(t, s, "LowerBound")
}

func TestValidateSendpicpAlignment(t *testing.T) {
	s := oracleSchedule(t)
	p := s.Program(53)
	// delayxpic 1 (event 1) becomes: delay... no, prepend nothing: put
	// the opening control into a misaligned one-event sendpicp.
	ds := decodeAll(t, p.Words)
	open := ds[0]
	ds[0] = isa.Decoded{Inst: isa.ByID("sendpicp"), Values: []int64{1, 0, 0, 1, open.Values[2], 0}}
	ds = append([]isa.Decoded{{Inst: isa.ByID("delay"), Values: []int64{1}}}, ds...)
	// One event more in front: shift the sender by one too.
	p.Words = encodeAll(t, ds)
	p.Events++
	s.Horizon++
	edit(t, s, 0, 0, func(d *isa.Decoded) { d.Values[0]++ })
	s.Program(0).Events++
	wantReject(t, s, "not 8-byte aligned")
	wantFault(t, s, emu.FaultIllegal)
}

func TestValidateGuard(t *testing.T) {
	// Find a schedule built without the guard that puts a control on a
	// send's first two events; with Guard 2 it must be rejected.
	for seed := uint64(1); seed < 200; seed++ {
		p := randomPhase(seed, false)
		s := build(t, p, Options{Guard: NoGuard})
		s.Guard = 2
		if err := s.Validate(); err != nil {
			if !strings.Contains(err.Error(), "within the first 2 events") {
				t.Fatalf("seed %d: %v", seed, err)
			}
			t.Logf("seed %d rejected: %v", seed, err)
			s2 := build(t, p, Options{})
			runChip(t, s2)
			return
		}
	}
	t.Fatal("no schedule with a control near a send start found")
}

// placed emits a phase with hand-chosen send timelines (no constraint
// checks: emitAll trusts the placement).
func placed(t *testing.T, p Phase, ts []int) *Schedule {
	t.Helper()
	pr := newProblem(&p, ordinaryParts(&p))
	progs, err := emitAll(pr, &placement{ts: ts})
	if err != nil {
		t.Fatal(err)
	}
	s := &Schedule{Phase: p, LowerBound: pr.lowerBound, Tiles: progs}
	for _, pg := range progs {
		s.Horizon = max(s.Horizon, pg.Events)
	}
	return s
}

func TestValidateClash(t *testing.T) {
	// Tile 64 receives 200 words into 0x80000 from tile 0 and sends 200
	// words from 0x80400 (the same memory element) to tile 130.
	p := Phase{Transfers: []Transfer{
		{Src: 0, SrcAddr: 0x90000, Words: 200, Dsts: []Dest{{64, 0x80000}}},
		{Src: 64, SrcAddr: 0x80400, Words: 200, Dsts: []Dest{{130, 0x90000}}},
	}}
	s := build(t, p, Options{})
	runChip(t, s)
	pr := newProblem(&p, ordinaryParts(&p))
	u0 := 100 + 1 + pr.xs[0].ttm[0]
	w0 := u0 + pr.xs[0].lat[0]
	// Tile 64 sends while its writes land.
	bad := placed(t, p, []int{100, w0 + 50})
	wantReject(t, bad, "memory-element clash")
	wantFault(t, bad, emu.FaultClash)
}

func TestValidateReadWriteOrder(t *testing.T) {
	// Tile 64 sends 0x80000.. to 130 and receives new data there from 0.
	p := Phase{Transfers: []Transfer{
		{Src: 0, SrcAddr: 0x90000, Words: 50, Dsts: []Dest{{64, 0x80000}}},
		{Src: 64, SrcAddr: 0x80000, Words: 50, Dsts: []Dest{{130, 0x90000}}},
	}}
	s := build(t, p, Options{})
	runChip(t, s)
	// The write first: tile 64 sends long after its data was overwritten.
	bad := placed(t, p, []int{100, 2000})
	wantReject(t, bad, "overwritten")
}

func TestValidateOverlappingWindows(t *testing.T) {
	// Two sources to one destination, windows overlapping.
	p := Phase{Transfers: []Transfer{
		{Src: 0, SrcAddr: 0x90000, Words: 100, Dsts: []Dest{{64, 0x80000}}},
		{Src: 130, SrcAddr: 0x90000, Words: 100, Dsts: []Dest{{64, 0x81000}}},
	}}
	pr := newProblem(&p, ordinaryParts(&p))
	// Second window opens 10 events after the first.
	ts1 := 200 + pr.xs[0].ttm[0] - pr.xs[1].ttm[0] + 10
	bad := placed(t, p, []int{200, ts1})
	wantReject(t, bad, "")
	// Two sends of one tile overlapping: one supervisor cannot express
	// them (its instructions are sequential), so emission refuses.
	p2 := Phase{Transfers: []Transfer{
		{Src: 0, SrcAddr: 0x90000, Words: 100, Dsts: []Dest{{64, 0x80000}}},
		{Src: 0, SrcAddr: 0x91000, Words: 100, Dsts: []Dest{{130, 0x80000}}},
	}}
	if _, err := emitAll(newProblem(&p2, ordinaryParts(&p2)), &placement{ts: []int{200, 250}}); err == nil {
		t.Fatal("rows emitted for overlapping sends of one tile")
	}
}

func TestValidateNotExchange(t *testing.T) {
	s := oracleSchedule(t)
	p := s.Program(0)
	p.Words = append(enc(t, "nop"), p.Words...)
	wantReject(t, s, "not an exchange row instruction")
}
