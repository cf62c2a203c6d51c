package emu

import (
	"fmt"
	"strings"
)

// Assumption is one emulator rule that the public record does not settle:
// a timing or state rule ipustack had to choose. Every figure the emulator
// produces rests on these; docs/machine.md lists them (the table there is
// generated from Assumptions and checked by a test).
type Assumption struct {
	// Name is the stable identifier printed in metrics (assumptions=...).
	Name string
	// Rule is what the emulator does by default.
	Rule string
	// Evidence is what the rule rests on, and why it is not settled.
	Evidence string
	// Conservative is the alternative that needs the least of the
	// hardware: code correct under it is correct under both.
	Conservative string
	// Bit is the assumption's member of AssumptionSet when the emulator
	// can run with the conservative alternative (0: not switchable, the
	// rule always holds).
	Bit AssumptionSet
}

// Switchable reports whether the emulator can run with the conservative
// alternative (ipu run|kernel run|tile run --conservative).
func (a Assumption) Switchable() bool { return a.Bit != 0 }

// AssumptionSet is the set of switchable assumptions in force on a tile or
// chip: a bit per switchable assumption. A clear bit means the emulator
// follows that assumption's conservative alternative.
type AssumptionSet uint32

const (
	// AssumeAMPStateRetained: a worker's AMP accumulators ($AACC: the
	// partial sums being accumulated, cur, and the finished sums not yet
	// drained, done) survive its exit and the next run/runall, and a
	// $CWEI reload between runs. Cleared, the emulator zeroes both when a
	// worker exits.
	AssumeAMPStateRetained AssumptionSet = 1 << iota

	// DefaultAssumptions is what a new Tile or Chip runs with.
	DefaultAssumptions = AssumeAMPStateRetained
	// ConservativeAssumptions is the conservative set: every switchable
	// assumption replaced by its alternative.
	ConservativeAssumptions AssumptionSet = 0

	// allAssumptions is every switchable bit defined.
	allAssumptions = AssumeAMPStateRetained
)

// ConservativeName is how an AssumptionSet without any switchable
// assumption in force is spelled (metrics, package records).
const ConservativeName = "conservative"

var assumptions = []Assumption{
	{
		Name: "amp-state-retained",
		Rule: "A worker's AMP accumulators ($AACC: the row being accumulated, cur[16], and the finished row not yet drained, done[16]) " +
			"keep their values when the worker exits (exitz/exitnz), across the next run/runall of that context, and across $CWEI " +
			"reloads by the supervisor between runs; only $FP_CLR.ZAACC clears them. ipustack's fast GEMM (kernels/assemble/src/gemm.inc) " +
			"relies on it: a run ends without draining its last row, and the next run's first four AMP issues drain it.",
		Evidence: "Not settled. The hover text and docs/amp-and-pace.md define $AACC per context but say nothing about exit. The reference " +
			"stack's kernels (osmarks/ipu-stack device/*.S) and poplibs' ConvPartial/ReduceAdd codelets clear $AACC (ZAACC) at the start " +
			"of every worker run and feed partial sums through memory, so no public code depends on retention either way.",
		Conservative: "When a worker exits, its cur[16] and done[16] are zeroed (the AMP pipeline holds nothing across runs). Worker " +
			"$a/$m registers and $CWEI are not touched. Kernels correct under it drain every run and clear (or overwrite) the " +
			"accumulators at the start of each run; the compiler picks such a GEMM variant (gemm_f16_drain) when building --conservative.",
		Bit: AssumeAMPStateRetained,
	},
	{
		Name:         "worker-slot",
		Rule:         "Worker context w issues only in issue slot w (cycle mod 6 == w), one bundle per 6 cycles.",
		Evidence:     "IPU21.md: six slots round-robin, each context one bundle per 6 cycles; which slot a context gets is not public.",
		Conservative: "None needed for correctness; only the relative timing of workers against the supervisor depends on it.",
	},
	{
		Name: "worker-launch-latency",
		Rule: "A worker started by run/runall in cycle c first issues in the first cycle of its slot at or after c+1+25 " +
			"(ipu21.WorkerLaunchCycles = 25); its slot is taken from the supervisor from cycle c.",
		Evidence: "Fitted, not public: the reference's gemm_f16_amp.S (osmarks/ipu-stack ce7c7e9, 2026-08-17) at the six measured C600 " +
			"shapes of IPU21.md ran 0.944-0.978 of the hardware cycles with no latency (18-33 cycles per runall short); one launch latency " +
			"of 25 cycles puts all six within 0.988-1.008 (docs/machine.md, Calibration: `go run ./tools/calibrate`). The GEMM figures " +
			"fix only the sum of launch and sync latency per runall; the fit puts it all at the launch (a sync latency worsens the spread).",
		Conservative: "A larger latency, 36 cycles, puts every measured GEMM figure at or above the hardware's (1.005-1.024 with the " +
			"2026-08-17 kernel); only cycle counts change, never results.",
	},
	{
		Name:         "sync-local-immediate",
		Rule:         "sync 2 (LOCAL) resumes the supervisor in the first cycle after the last worker's exit (ipu21.LocalSyncCycles = 0); exitz/exitnz take no extra cycles.",
		Evidence:     "Saghetti0 docs/sync zones.md gives zone 2's meaning, not its latency. Fitted with worker-launch-latency on the measured GEMM figures: any sync latency (3-18 tried) widens the spread, so the fit gives 0.",
		Conservative: "An added rendezvous latency (higher cycle counts; not a correctness matter).",
	},
	{
		Name:         "no-intra-bundle-forwarding",
		Rule:         "Both instructions of a co-issued bundle read their registers as they were before the bundle; if both write one register the main instruction wins.",
		Evidence:     "The software pipelining of pace/AMP loops (poplibs, ipu-stack) is consistent with it; no public text states it.",
		Conservative: "None known; kernels should not read in the aux slot a register the main slot loads in the same bundle unless they mean the old value.",
	},
	{
		Name:         "memory-timing-free",
		Rule:         "Memory accesses cost no issue cycles beyond their bundle; bandwidth (8/16 B per cycle) and element clashes inside a tile are not modelled.",
		Evidence:     "Poplar's target figures (ipu-stack cost.rs) give bandwidths; the tile core does not model stalls.",
		Conservative: "Stalls on element conflicts (not implemented; the GEMM and pace kernels keep their streams in different elements).",
	},
	{
		Name:         "worker-registers-retained",
		Rule:         "A worker's $m and $a registers (other than $m13, $m14, $FP_CTL and repeat state, which run/runall set) keep their values between runs.",
		Evidence:     "Hover text for $FP_ICTL, $WSR and $REPEAT_COUNT speaks of retained worker state; not stated for every register.",
		Conservative: "Registers undefined at a worker's start (not implemented: the fast GEMM keeps pointers and two output pairs in registers between runs).",
	},
	{
		Name:         "mix-accumulators-own",
		Rule:         "f16v4mix keeps a*x + b*y ($TAS bits 15..0 = a, 31..16 = b) in four f32 accumulator lanes of its own per worker, each formed exactly and rounded once to f32, and returns the previous lanes rounded to f16 (nearest even); f16v4gacc reads the same lanes. ZAACC and the conservative exit clear them with the AMP accumulators; AMP instructions neither read nor write them.",
		Evidence:     "Hover text (f16v4mix: results in the accumulator state, destination = the previous state; f16v4gacc: read 4 accumulators as f16); poplibs NonLinearityGrad2D_gelu.S ($TAS = a | b<<16, a two-stage pipeline); the reference's docs/SOFTMAX_OPTIMIZATION.md citing IPU21 ISA 1.3.1 3.7.3.3.24 (FP32 intermediates, previous result read as four halves). Which of the $AACC registers the lanes are, and so how MIX interacts with AMP and the *acc rows (the same doc: f16v8acc \"overwrites accumulator lanes used by f16v4mix\"), is not public.",
		Conservative: "Lanes shared with other accumulator users: a kernel that mixes MIX with AMP or *acc instructions must clear (ZAACC) between them. The reference's softmax (attention_softmax_f16.S) does; the *acc rows are not emulated.",
	},
	{
		Name: "axpy-shares-mix-lanes",
		Rule: "f32v2axpy keeps $TAS*x + y (two f32 lanes; the product rounded to f32, then the sum) in lanes 0 and 1 of the worker's MIX lanes " +
			"(mix-accumulators-own) and writes its destination with those lanes' previous values as f32, unrounded; lanes 2 and 3 keep their " +
			"values. So an f16v4mix or f16v4gacc after f32v2axpy sees its results (rounded to f16) in lanes 0 and 1, and an f32v2axpy after " +
			"f16v4mix returns that mix's lanes 0 and 1 as f32. ZAACC and the conservative exit clear them with the MIX lanes.",
		Evidence: "Settled: the one-stage pipeline. Hover text: \"Results are stored within the accumulator state. Destination registers are " +
			"written with the previous accumulator state\"; poplibs ScaledAddaXPlusbY_mixed.S: \"the f32v2axpy instruction has an internal " +
			"pipeline stage (using the AACC register)\", a prime into $azeros and a flush `f32v2axpy $X, $azeros, $azeros`, as in " +
			"ScaledAdd2D_float.S, MultiUpdateOp.S and NonLinearityGrad2D_gelu.S; graphcore-research/tessellate-ipu's IPU-model stand-in " +
			"(intrinsics_utils.hpp) returns the previous result and keeps the new one. Not settled: that the state is the one f16v4mix " +
			"uses, and which lanes. For sharing: both rows' hover texts say \"the accumulator state\"; the $TAS hover text gives one scale " +
			"register to \"the various *axp(b)y ... instructions (f32v2axpy, f16v4mix for example)\"; poplibs names $AACC for both " +
			"(vectorInnerAdd_half.S: f16v4mix \"stores and loads values from the temporary accumulator ($AACC[0, 2])\") and clears once " +
			"(ZAACC) before code that uses either (MultiUpdateOp.S). Lanes 0 and 1 are ipustack's choice. Every public use primes after " +
			"entering, so none depends on the answer.",
		Conservative: "Independent of the rule: a kernel that switches between f32v2axpy and f16v4mix/f16v4gacc discards the first " +
			"destination after the switch (a prime into $azeros) or clears (ZAACC) between them, and never reads the state a previous run " +
			"left. ipustack's users (gelu_f16 PRECISE=1, softmax_f16, attention_merge_f16) prime and flush within each word.",
	},
	{
		Name: "delta-load-registers",
		Rule: "ldd16v2a32 takes its current delta from the upper half of the delta register and writes the next 32-bit pair of " +
			"deltas into the @ register; ld64a32 takes its delta from the lower half and leaves its delta register alone; ldb16b16 " +
			"is not emulated (faults \"not emulated\").",
		Evidence: "Hover text: data at base plus a 16-bit unsigned delta, the pointer advancing by 2 (4, 8); ldd16v2a32's delta is " +
			"\"located in the msbs\" and it loads \"a new pair of 16-bit deltas\" without naming the register (the other ldd16* forms " +
			"mark the written delta register with @); ldb16b16 does not say which of its deltas moves by 2 and which by the " +
			"mini-delta. No public kernel uses ld64a32 or ldd16v2a32; popsparse uses ldd16a32/ldd16a64/ldd16b16, which the text settles.",
		Conservative: "Kernels use ldd16v2a32 and ld64a32 only after checking them on hardware; the compiler emits neither.",
	},
}

// Assumptions returns the registry, in the order docs/machine.md lists it.
func Assumptions() []Assumption { return append([]Assumption(nil), assumptions...) }

// LookupAssumption returns the assumption called name.
func LookupAssumption(name string) (Assumption, bool) {
	for _, a := range assumptions {
		if a.Name == name {
			return a, true
		}
	}
	return Assumption{}, false
}

// Has reports whether every assumption in b is in force in s.
func (s AssumptionSet) Has(b AssumptionSet) bool { return s&b == b }

// String spells the set as metrics print it: the names of the switchable
// assumptions in force, comma-separated in registry order, or
// "conservative" when none is.
func (s AssumptionSet) String() string {
	var names []string
	for _, a := range assumptions {
		if a.Bit != 0 && s.Has(a.Bit) {
			names = append(names, a.Name)
		}
	}
	if s&^allAssumptions != 0 {
		names = append(names, fmt.Sprintf("unknown(%#x)", uint32(s&^allAssumptions)))
	}
	if len(names) == 0 {
		return ConservativeName
	}
	return strings.Join(names, ",")
}

// ParseAssumptions reads a set spelled as String spells it.
func ParseAssumptions(text string) (AssumptionSet, error) {
	if text == ConservativeName {
		return ConservativeAssumptions, nil
	}
	if text == "" {
		return 0, fmt.Errorf("empty assumption list (want names or %q)", ConservativeName)
	}
	var s AssumptionSet
	for _, name := range strings.Split(text, ",") {
		a, ok := LookupAssumption(name)
		switch {
		case !ok:
			return 0, fmt.Errorf("unknown assumption %q", name)
		case a.Bit == 0:
			return 0, fmt.Errorf("assumption %q is not switchable (it always holds)", name)
		}
		s |= a.Bit
	}
	return s, nil
}

// AssumptionsTable renders the registry as the Markdown table of
// docs/machine.md ("Named assumptions").
func AssumptionsTable() string {
	var b strings.Builder
	b.WriteString("| name | rule (default) | evidence | conservative alternative | switchable |\n")
	b.WriteString("|---|---|---|---|---|\n")
	esc := strings.NewReplacer("|", `\|`, "\n", " ")
	for _, a := range assumptions {
		sw := "no"
		if a.Switchable() {
			sw = "yes (`--conservative`)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", a.Name, esc.Replace(a.Rule), esc.Replace(a.Evidence), esc.Replace(a.Conservative), sw)
	}
	return b.String()
}

// SetAssumptions chooses the switchable assumptions the tile runs with
// (DefaultAssumptions for a new tile). Change it only while the tile is
// stopped.
func (t *Tile) SetAssumptions(s AssumptionSet) { t.assume = s }

// Assumptions returns the set the tile runs with.
func (t *Tile) Assumptions() AssumptionSet { return t.assume }

// SetAssumptions sets the assumptions of every tile of the chip.
func (c *Chip) SetAssumptions(s AssumptionSet) {
	for _, t := range c.tiles {
		t.SetAssumptions(s)
	}
}
