package ipu21

// Worker launch and local-sync latencies of the IPU21 tile, calibrated on
// the reference stack's kernels measured on a real C600 (docs/machine.md,
// "Calibration"; the emulator's named assumptions worker-launch-latency and
// sync-local-latency). The emulator (device/emu) and the kernel cycle
// models (compiler/cost) both read them here, so they cannot disagree.
const (
	// WorkerLaunchCycles: a worker started by run/runall in cycle c may
	// first issue in cycle c+1+WorkerLaunchCycles (then in the first cycle
	// of its own slot). Its slot is taken from the supervisor from the
	// start.
	WorkerLaunchCycles = 25
	// LocalSyncCycles: `sync 2` waiting for workers resumes the supervisor
	// LocalSyncCycles cycles after the cycle following the last worker's
	// exit.
	LocalSyncCycles = 0
)
