package emu

import (
	"strings"
	"testing"
)

const countL = 0x60 // $COUNT_L / $SCOUNT_L

func TestWorkerIssuesEverySixCycles(t *testing.T) {
	tl := NewTile(0)
	runWorker(t, tl, 2, I("get", 1, countL), I("get", 2, countL), I("nop"), I("get", 3, countL), I("exitz", mzero))
	w := &tl.Workers[2]
	if w.M[2]-w.M[1] != 6 || w.M[3]-w.M[2] != 12 {
		t.Fatalf("COUNT_L reads %d, %d, %d: want steps of 6 cycles per bundle", w.M[1], w.M[2], w.M[3])
	}
	if w.M[1]%6 != 2 {
		t.Fatalf("worker 2 issued at cycle %d, not in slot 2", w.M[1])
	}
	// The worker started at cycle 0 issues from its first slot after its
	// launch latency (latency.go), then every 6 cycles: five bundles, the
	// last the exit. Cycle() is one past the last issue.
	first := workerFirstIssue(0, 2)
	if uint64(w.M[1]) != first || tl.Cycle() != first+24+1 {
		t.Fatalf("first issue at %d (want %d), tile cycle %d (want %d)", w.M[1], first, tl.Cycle(), first+25)
	}
}

func TestSixWorkersInterleave(t *testing.T) {
	tl := NewTile(0)
	load(t, tl, workerBase, I("get", 1, countL), I("get", 2, countL), I("exitz", mzero))
	for w := 0; w < NumWorkers; w++ {
		if err := tl.StartWorker(w, workerBase, dataBase); err != nil {
			t.Fatal(err)
		}
	}
	res, err := tl.Run(1000)
	if err != nil || res.Reason != StopIdle {
		t.Fatalf("%v %v", res, err)
	}
	// Started at cycle 0: worker w issues first in its slot's first cycle
	// after the launch latency, every worker every 6 cycles, so the tile
	// issues a bundle in every cycle of 12 consecutive ones.
	seen := map[uint32]int{}
	for w := 0; w < NumWorkers; w++ {
		c := &tl.Workers[w]
		first := uint32(workerFirstIssue(0, w))
		if c.M[1] != first || c.M[2] != first+6 {
			t.Errorf("worker %d read COUNT_L %d, %d; want %d, %d", w, c.M[1], c.M[2], first, first+6)
		}
		seen[c.M[1]]++
		seen[c.M[2]]++
	}
	for c, n := range seen {
		if n != 1 {
			t.Errorf("cycle %d issued %d bundles", c, n)
		}
	}
	if res.Bundles != 18 {
		t.Errorf("bundles %d, want 18", res.Bundles)
	}
}

func TestSupervisorIssueRules(t *testing.T) {
	t.Run("alone: owns every slot, issues every cycle", func(t *testing.T) {
		tl := runSup(t, I("get", 1, countL), I("get", 2, countL), I("sync", 3))
		if tl.Sup.M[1] != 0 || tl.Sup.M[2] != 1 {
			t.Fatalf("COUNT_L %d, %d; want 0, 1", tl.Sup.M[1], tl.Sup.M[2])
		}
	})
	t.Run("shares the tile with two workers: issues in the four free slots", func(t *testing.T) {
		tl := NewTile(0)
		at := func(i int) int64 { return int64(workerBase + 4*i) }
		load(t, tl, workerBase, I("setzi", 1, 20), I("brnzdec", 1, at(1)), I("exitz", mzero))
		var prog []in
		for i := 0; i < 6; i++ {
			prog = append(prog, I("get", int64(1+i), countL))
		}
		load(t, tl, supBase, append(prog, I("sync", 3))...)
		for _, w := range []int{0, 3} {
			if err := tl.StartWorker(w, workerBase, 0); err != nil {
				t.Fatal(err)
			}
		}
		tl.Start(supBase)
		if _, err := tl.Run(1 << 20); err != nil {
			t.Fatal(err)
		}
		// Slots 0 and 3 belong to the workers: the supervisor issues at
		// cycles 1, 2, 4, 5, 7, 8.
		got := []uint32{tl.Sup.M[1], tl.Sup.M[2], tl.Sup.M[3], tl.Sup.M[4], tl.Sup.M[5], tl.Sup.M[6]}
		want := []uint32{1, 2, 4, 5, 7, 8}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("supervisor issue cycles %v, want %v", got, want)
			}
		}
	})
	t.Run("waits for a slot without a running worker", func(t *testing.T) {
		const n = 10
		tl := NewTile(0)
		at := func(i int) int64 { return int64(workerBase + 4*i) }
		load(t, tl, workerBase, I("setzi", 1, n), I("brnzdec", 1, at(1)), I("exitz", mzero))
		load(t, tl, supBase, I("get", 1, countL), I("sync", 3))
		for w := 0; w < NumWorkers; w++ {
			if err := tl.StartWorker(w, workerBase, 0); err != nil {
				t.Fatal(err)
			}
		}
		tl.Start(supBase)
		if _, err := tl.Run(1 << 20); err != nil {
			t.Fatal(err)
		}
		// Each worker issues n+3 bundles; the worker whose slot comes
		// first after the launch latency exits first, 6(n+2) after its
		// first issue. The supervisor, blocked while all six slots are
		// owned, issues in that slot's next cycle, 6 later.
		earliest := workerFirstIssue(0, 0)
		for w := 1; w < NumWorkers; w++ {
			earliest = min(earliest, workerFirstIssue(0, w))
		}
		want := uint32(earliest + 6*(n+2) + 6)
		if tl.Sup.M[1] != want {
			t.Fatalf("supervisor issued at %d, want %d", tl.Sup.M[1], want)
		}
	})
}

func TestRunallSyncLocal(t *testing.T) {
	tl := NewTile(0)
	// Workers: spin a little (worker-dependent via $WSR), record $VERTEX_BASE
	// from $mvertex_base, exit.
	at := func(i int) int64 { return int64(workerBase + 4*i) }
	load(t, tl, workerBase,
		I("get", 1, 0x01), // $WSR: context id
		I("brnzdec", 1, at(1)),
		I("exitz", mzero))
	load(t, tl, supBase, cat(setM(1, workerBase), setM(2, dataBase), []in{
		I("runall", 1, 2, 4), // worker n: $VERTEX_BASE = dataBase + 16n
		I("sync", 2),
		I("get", 3, countL),
		I("sync", 3),
	})...)
	tl.Start(supBase)
	res, err := tl.Run(1 << 20)
	if err != nil || res.Reason != StopSync || res.Zone != 3 {
		t.Fatalf("%v %v", res, err)
	}
	if !strings.Contains(res.String(), "sync zone 3 needs the whole-chip device") {
		t.Errorf("result text %q", res)
	}
	var last uint64
	for w := 0; w < NumWorkers; w++ {
		c := &tl.Workers[w]
		if c.Exits != 1 || c.State != Idle {
			t.Errorf("worker %d: exits %d state %v", w, c.Exits, c.State)
		}
		if c.M[14] != dataBase+16*uint32(w) {
			t.Errorf("worker %d vertex base 0x%x, want 0x%x", w, c.M[14], dataBase+16*w)
		}
	}
	last = tl.lastExit
	if uint64(tl.Sup.M[3]) <= last {
		t.Errorf("supervisor passed sync 2 at %d before the last exit at %d", tl.Sup.M[3], last)
	}
	// Releasing the chip-level sync lets the supervisor go on, here into
	// zeroed memory, which must stop it with a fault at the next word.
	tl.ReleaseSync()
	if _, err := tl.Run(100); err == nil || tl.Fault().PC != tl.Sup.PC {
		t.Fatalf("after release: %v", err)
	}
}

func TestRunVertexAndWorkerBase(t *testing.T) {
	tl := NewTile(0)
	load(t, tl, workerBase, I("exitz", mzero))
	load(t, tl, supBase, cat(setM(1, workerBase), setM(2, 0x100), setM(4, 0x58040), []in{
		I("put", 0x21, 4), // WORKER0_BASE
		I("run", 1, 2, 0x4D000),
		I("sync", 2),
		I("sync", 3),
	})...)
	tl.Start(supBase)
	if _, err := tl.Run(1 << 20); err != nil {
		t.Fatal(err)
	}
	w := &tl.Workers[0]
	// docs/isa.md: $VERTEX_BASE = $vbase + vertex (the hover text's
	// $vbase + 4*zimm16 + TMEM_REGION0_BASE_ADDR).
	if w.M[14] != 0x100+0x4D000 || w.M[13] != 0x58040 || w.Exits != 1 {
		t.Fatalf("vertex 0x%x (want 0x4D100), worker base 0x%x, exits %d", w.M[14], w.M[13], w.Exits)
	}
}

func TestCycleLimitAndResume(t *testing.T) {
	tl := NewTile(0)
	at := func(i int) int64 { return int64(workerBase + 4*i) }
	load(t, tl, workerBase, I("setzi", 1, 99), I("brnzdec", 1, at(1)), I("exitz", mzero))
	tl.StartWorker(0, workerBase, 0)
	res, err := tl.Run(100)
	if err != nil || res.Reason != StopLimit || tl.Cycle() != 100 {
		t.Fatalf("%v %v cycle %d", res, err, tl.Cycle())
	}
	res, err = tl.Run(1 << 20)
	if err != nil || res.Reason != StopIdle {
		t.Fatalf("%v %v", res, err)
	}
	// 102 bundles from worker 0's first issue: last 6*101 later.
	if tl.Cycle() != workerFirstIssue(0, 0)+6*101+1 {
		t.Fatalf("cycle %d", tl.Cycle())
	}
}
