package emu

import "github.com/ipustack/ipustack/ipu21"

// Calibrated tile latencies (ipu21/latency.go; docs/machine.md,
// "Calibration"). Kept in this file so the scheduling code only calls
// these two functions.

var launchLatency, syncLatency uint64 = ipu21.WorkerLaunchCycles, ipu21.LocalSyncCycles

// workerFirstIssue is the first cycle worker w may issue in after a
// run/runall issued in cycle c.
func workerFirstIssue(c uint64, w int) uint64 {
	return nextSlot(c+1+launchLatency, w)
}

// localSyncResume is the first cycle the supervisor may issue in after a
// `sync 2` whose last worker exited in cycle lastExit.
func localSyncResume(lastExit uint64) uint64 {
	return lastExit + 1 + syncLatency
}
