package emu

import (
	"errors"
	"testing"

	"github.com/ipustack/ipustack/isa"
)

// in is one instruction for a test program: a row ID and operand values in
// the row's order. co marks the first instruction of a co-issued bundle.
type in struct {
	id string
	v  []int64
	co bool
}

func I(id string, v ...int64) in  { return in{id: id, v: v} }
func Co(id string, v ...int64) in { return in{id: id, v: v, co: true} }

const (
	supBase    = 0x4C000 // supervisor code
	workerBase = 0x4E000 // worker code
	dataBase   = 0x60000 // ordinary data (region 0)
	ilvBase    = 0x90000 // interleaved data (region 1)
	mzero      = 15
)

func encode(t testing.TB, prog []in) []uint32 {
	t.Helper()
	var words []uint32
	for _, p := range prog {
		row := isa.ByID(p.id)
		if row == nil {
			t.Fatalf("no isa row %q", p.id)
		}
		w, err := row.Encode(p.v, p.co)
		if err != nil {
			t.Fatalf("encode %s %v: %v", p.id, p.v, err)
		}
		words = append(words, w...)
	}
	return words
}

func load(t testing.TB, tl *Tile, addr uint32, prog ...in) {
	t.Helper()
	if err := tl.WriteWords(addr, encode(t, prog)); err != nil {
		t.Fatal(err)
	}
}

// runSup loads a supervisor program and runs it to its end (the program
// ends with `sync 3`, which stops the tile with StopSync).
func runSup(t testing.TB, prog ...in) *Tile {
	t.Helper()
	tl := NewTile(0)
	load(t, tl, supBase, prog...)
	tl.Start(supBase)
	res, err := tl.Run(1 << 20)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Reason != StopSync || res.Zone != 3 {
		t.Fatalf("run stopped with %v, want sync zone 3", res)
	}
	return tl
}

// runWorker loads worker code and runs it in worker w to its exit.
func runWorker(t testing.TB, tl *Tile, w int, prog ...in) Result {
	t.Helper()
	load(t, tl, workerBase, prog...)
	if err := tl.StartWorker(w, workerBase, dataBase); err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(1 << 24)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	// Idle, or the supervisor parked at a chip-level sync.
	if res.Reason != StopIdle && res.Reason != StopSync {
		t.Fatalf("run stopped with %v, want idle", res)
	}
	return res
}

// faultOf runs tl and returns the fault it must stop with.
func faultOf(t testing.TB, tl *Tile) *Fault {
	t.Helper()
	res, err := tl.Run(1 << 20)
	var f *Fault
	if !errors.As(err, &f) || res.Reason != StopFault {
		t.Fatalf("want a fault, got %v, %v", res, err)
	}
	return f
}

// setM loads a full 32-bit value into $m r (setzi + or.iz).
func setM(r int64, v uint32) []in {
	return []in{I("setzi", r, int64(v&0xFFFFF)), I("or.iz", r, r, int64(v&0xFFF00000))}
}

// seedPRNG writes v to the upper-space $PRNG_SEED (uput 0x07) through $a13,
// which it leaves zero.
func seedPRNG(v uint32) []in {
	return []in{I("setzi.a", 13, int64(v&0xFFFFF)), I("or.aiz", 13, 13, int64(v&0xFFF00000)), I("uput", 0x07, 13), I("setzi.a", 13, 0)}
}

func cat(parts ...[]in) []in {
	var out []in
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// setA loads an f32 constant into $a r (setzi.a + or.aiz).
func setA(r int64, f float32) []in {
	v := fb(f)
	return []in{I("setzi.a", r, int64(v&0xFFFFF)), I("or.aiz", r, r, int64(v&0xFFF00000))}
}
