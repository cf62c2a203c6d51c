package cost

import "github.com/ipustack/ipustack/ipu21"

// issueModel replays the tile's issue rules (docs/machine.md, "Issue
// model") for a kernel whose shape is known: the supervisor's instruction
// stream between worker launches and, for each launch, the number of bundles
// each worker issues. It does not execute instructions; it only counts
// cycles, so it is cheap (a few operations per supervisor instruction).
//
// Rules replayed:
//   - cycle c belongs to slot c mod 6; worker w issues only in slot w, one
//     bundle per 6 cycles, from the first cycle of its slot at least
//     1+ipu21.WorkerLaunchCycles after its `runall`, and its last bundle
//     (exitz) is its exit cycle;
//   - the supervisor issues one instruction per cycle in any slot no running
//     worker holds;
//   - `sync 2` issued while workers run resumes the supervisor
//     ipu21.LocalSyncCycles after the cycle after the last worker's exit.
//
// Cycle numbering follows kernels/bench: the harness's `call` is cycle 0, so
// the kernel's first instruction issues in cycle 1 and the kernel's cycle
// count is the cycle in which its final `br $m10` issues.
type issueModel struct {
	next int                       // earliest cycle the supervisor may issue in
	exit [ipu21.WorkerContexts]int // exit cycle of each worker's current run (-1: idle)
}

func newIssueModel() *issueModel {
	m := &issueModel{next: 1}
	for w := range m.exit {
		m.exit[w] = -1
	}
	return m
}

const slots = ipu21.IssueSlots

// issue issues n supervisor instructions and returns the cycle of the last.
func (m *issueModel) issue(n int) int {
	c := m.next - 1
	for i := 0; i < n; i++ {
		c = m.free(m.next)
		m.next = c + 1
	}
	return c
}

// free returns the first cycle >= c whose slot no running worker holds. A
// worker's exit cycle is in its own slot, so slot s is next free at its
// first cycle >= c, or, if the worker still runs then, 6 cycles after its
// exit.
func (m *issueModel) free(c int) int {
	best := -1
	for s := 0; s < slots; s++ {
		f := c + ((s-c)%slots+slots)%slots
		if m.exit[s] >= f {
			f = m.exit[s] + slots
		}
		if best < 0 || f < best {
			best = f
		}
	}
	return best
}

// runall issues a runall; worker w then issues bundles[w] bundles.
func (m *issueModel) runall(bundles *[ipu21.WorkerContexts]int) {
	c := m.issue(1)
	for w := 0; w < slots; w++ {
		ready := c + 1 + ipu21.WorkerLaunchCycles
		start := ready + ((w-ready)%slots+slots)%slots
		m.exit[w] = start + slots*(bundles[w]-1)
	}
}

// sync2 issues `sync 2` and waits for every worker to exit.
func (m *issueModel) sync2() {
	c := m.issue(1)
	last := -1
	for _, e := range m.exit {
		last = max(last, e)
	}
	if last >= c {
		m.next = max(m.next, last+1+ipu21.LocalSyncCycles)
	}
}

// repeat runs body n times. The issue model's future depends only on its
// state relative to the supervisor's next cycle (next mod 6 and each
// worker's exit cycle relative to next), so as soon as that normalised
// state recurs the loop is periodic: the remaining whole periods are skipped
// by shifting the clock. This makes a loop of identical groups O(1) after at
// most a few iterations, and exact.
func (m *issueModel) repeat(n int, body func()) {
	type key struct {
		phase int
		rel   [ipu21.WorkerContexts]int
	}
	norm := func() key {
		k := key{phase: m.next % slots}
		for w, e := range m.exit {
			if e < m.next {
				k.rel[w] = -1 // idle, whenever it exited
			} else {
				k.rel[w] = e - m.next
			}
		}
		return k
	}
	var seenKey [8]key
	var seenIter [8]int
	var seenNext [8]int
	seen := 0
	for i := 0; i < n; i++ {
		k := norm()
		for s := 0; s < seen; s++ {
			if seenKey[s] == k {
				period := i - seenIter[s]
				shift := m.next - seenNext[s]
				skip := (n - i) / period
				if skip > 0 {
					m.next += skip * shift
					for w := range m.exit {
						if m.exit[w] >= 0 {
							m.exit[w] += skip * shift
						}
					}
					i += skip * period
				}
				seen = 0 // the tail runs without detection
				goto run
			}
		}
		if seen < len(seenKey) {
			seenKey[seen], seenIter[seen], seenNext[seen] = k, i, m.next
			seen++
		}
	run:
		if i >= n {
			break
		}
		body()
	}
}

// rowsPerWorker splits n items over the six workers as every kernel here
// does: worker w takes n/6 + (w < n%6).
func rowsPerWorker(n int) (q [ipu21.WorkerContexts]int) {
	for w := range q {
		q[w] = n / slots
		if w < n%slots {
			q[w]++
		}
	}
	return q
}

// singleRun is the cycle count of the common layout/elementwise kernel
// shape: five supervisor instructions ending in one runall, sync 2, br.
func singleRun(bundles [ipu21.WorkerContexts]int) int64 {
	m := newIssueModel()
	m.issue(4) // setzi, st32, st32, setzi
	m.runall(&bundles)
	m.sync2()
	return int64(m.issue(1)) // br $m10
}
