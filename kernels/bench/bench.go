// Package bench runs one kernel specialisation on an emulated IPU21 tile
// with seeded data, checks its output against a host computation and
// reports cycles, multiply-accumulates and the fraction of the tile's AMP
// peak. It is what `ipu kernel run` and the kernels' tests use, and where
// the planner's cost figures come from.
package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// Case is one prepared run: argument register values and a checker.
type Case struct {
	// Args are the supervisor $m registers set before the call, by number.
	Args map[int]uint32
	// Check compares the tile's memory after the call with the host
	// computation and returns the largest absolute error found; it fails
	// when any element is outside the kernel's documented tolerance.
	Check func(t *emu.Tile) (maxAbsErr float64, err error)
	// Tolerance is the documented absolute tolerance, for the report.
	Tolerance float64
}

// Setup writes a kernel's seeded inputs into a tile and prepares its Case.
// Memory for operands is taken from the data area [DataBase, target SRAM
// end), honouring the kernel's operand contract.
type Setup func(t *emu.Tile, p kernels.Params, rng *rand.Rand) (*Case, error)

var setups = map[string]Setup{}

// register installs the bench setup of a kernel (called from init).
func register(name string, s Setup) {
	if _, dup := setups[name]; dup {
		panic("BUG: bench setup for " + name + " registered twice")
	}
	setups[name] = s
}

// Report is the outcome of one run.
type Report struct {
	Kernel      string         `json:"kernel"`
	Params      map[string]int `json:"params"`
	Cycles      uint64         `json:"cycles"`
	Bundles     uint64         `json:"bundles"`
	MACs        int64          `json:"macs"`
	PeakPercent float64        `json:"ampPeakPercent"`
	MaxAbsError float64        `json:"maximumAbsoluteError"`
	Tolerance   float64        `json:"tolerance"`
	Pass        bool           `json:"pass"`
	CodeBytes   uint32         `json:"codeBytes"`
	Cached      bool           `json:"cached"`
	Seed        uint64         `json:"seed"`
	// Assumptions is the emulator's assumption set, spelled as
	// emu.AssumptionSet.String ("amp-state-retained", "conservative").
	Assumptions string `json:"assumptions"`
}

// JSON renders the report as one line of JSON.
func (r *Report) JSON() string {
	b, _ := json.Marshal(r)
	return string(b)
}

func (r *Report) String() string {
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	return fmt.Sprintf("kernel=%s params=%q cycles=%d macs=%d ampPeakPercent=%.2f maximumAbsoluteError=%g tolerance=%g numericalTest=%s assumptions=%s",
		r.Kernel, kernels.Params(r.Params).String(), r.Cycles, r.MACs, r.PeakPercent, r.MaxAbsError, r.Tolerance, verdict, r.Assumptions)
}

// DataBase is where bench setups start placing operands: region 1, so
// interleaved-only operands fit anywhere in the data area.
const DataBase = 0x80000

// harness is the supervisor program around the kernel call: the cycle
// count of a run is measured from the `call` to the `sync` after it.
const harness = `
	.supervisor
	.section .text._start, "ax"
	.globl _start
	.type _start, @function
_start:
	call $m10, KERNEL_ENTRY
	sync 3
	.size _start, .-_start
`

// callOverhead is the harness's share of the measured cycles: the `call`
// itself (the supervisor alone issues every cycle).
const callOverhead = 1

// Harness assembles the supervisor program that calls entry (`call $m10,
// entry`) and stops at the `sync 3` after it returns. Its entry symbol is
// HarnessEntry; link it first. `ipu tile run` uses it too, so a kernel's
// cycles mean the same everywhere.
func Harness(entry string) (*elf.Object, error) {
	obj, err := asm.Assemble("harness.S", []byte(harness), asm.Options{Defines: map[string]string{"KERNEL_ENTRY": entry}})
	if err != nil {
		return nil, fmt.Errorf("harness calling %q: %w", entry, err)
	}
	return obj, nil
}

// HarnessEntry is the harness's entry symbol.
const HarnessEntry = "_start"

// HarnessReturnOffset is the offset from the harness entry of the `sync 3`
// the kernel returns to: a tile stopped at that sync has returned.
const HarnessReturnOffset = 4

// CallCycles is the kernel's share of a harness run that stopped at the
// harness's sync in cycle res.Cycle-1: from the call to the return, less
// the call itself.
func CallCycles(res emu.Result) uint64 { return res.Cycle - 1 - callOverhead }

// prepared is a kernel loaded on a fresh tile with its inputs written.
type prepared struct {
	kernel *kernels.Kernel
	built  *assemble.Built
	tile   *emu.Tile
	c      *Case
	entry  uint32
	code   uint32
}

// loadKernel builds a kernel, links it with the harness and loads it on a
// fresh tile, without data.
func loadKernel(name string, given kernels.Params, cache assemble.Cache) (*prepared, error) {
	k, err := kernels.Lookup(name)
	if err != nil {
		return nil, err
	}
	built, err := assemble.Build(k, given, cache)
	if err != nil {
		return nil, err
	}
	stub, err := Harness(k.Entry)
	if err != nil {
		return nil, fmt.Errorf("BUG: %w", err)
	}
	img, err := elf.Link([]*elf.Object{stub, built.Object}, elf.LinkOptions{Entry: HarnessEntry})
	if err != nil {
		return nil, fmt.Errorf("link %s: %w", name, err)
	}
	tile := emu.NewTile(0)
	var code uint32
	for _, seg := range img.Segments {
		if err := tile.Write(seg.Addr, seg.Data); err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
		code += uint32(len(seg.Data))
	}
	return &prepared{kernel: k, built: built, tile: tile, entry: img.Entry, code: code}, nil
}

// prepare loads a kernel and writes its seeded inputs with its bench setup.
func prepare(name string, given kernels.Params, seed uint64, cache assemble.Cache) (*prepared, error) {
	return prepareAssuming(name, given, seed, cache, emu.DefaultAssumptions)
}

// prepareAssuming is prepare on a tile running with the assumption set.
func prepareAssuming(name string, given kernels.Params, seed uint64, cache assemble.Cache, set emu.AssumptionSet) (*prepared, error) {
	setup, ok := setups[name]
	if !ok {
		if _, err := kernels.Lookup(name); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("kernel %s has no bench setup", name)
	}
	p, err := loadKernel(name, given, cache)
	if err != nil {
		return nil, err
	}
	p.tile.SetAssumptions(set)
	rng := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	c, err := setup(p.tile, p.built.Params, rng)
	if err != nil {
		return nil, fmt.Errorf("set up %s (%s): %w", name, p.built.Params, err)
	}
	p.c = c
	for r, v := range c.Args {
		p.tile.Sup.M[r] = v
	}
	return p, nil
}

// execute runs the prepared call to the harness's closing sync.
func (p *prepared) execute() (emu.Result, error) {
	p.tile.Start(p.entry)
	res, err := p.tile.Run(1 << 34)
	if err != nil {
		return res, fmt.Errorf("run %s (%s): %w", p.kernel.Name, p.built.Params, err)
	}
	if res.Reason != emu.StopSync || res.Zone != int(ipu21.SyncInternal) {
		return res, fmt.Errorf("run %s (%s): the kernel did not return to the harness: %s", p.kernel.Name, p.built.Params, res)
	}
	return res, nil
}

// Run builds and runs one kernel specialisation with data from seed, on a
// tile with the default assumptions.
func Run(name string, given kernels.Params, seed uint64, cache assemble.Cache) (*Report, error) {
	return RunAssuming(name, given, seed, cache, emu.DefaultAssumptions)
}

// RunAssuming is Run on a tile running with the assumption set (e.g.
// emu.ConservativeAssumptions for `ipu kernel run --conservative`). A
// kernel that depends on an assumption left out fails its numerical check.
func RunAssuming(name string, given kernels.Params, seed uint64, cache assemble.Cache, set emu.AssumptionSet) (*Report, error) {
	p, err := prepareAssuming(name, given, seed, cache, set)
	if err != nil {
		return nil, err
	}
	res, err := p.execute()
	if err != nil {
		return nil, err
	}
	k, built, c := p.kernel, p.built, p.c
	// The sync issued in the last cycle; the kernel ran from cycle 0 to
	// there, less the harness's call.
	cycles := CallCycles(res)
	rep := &Report{Kernel: name, Params: built.Params, Cycles: cycles, Bundles: res.Bundles,
		Tolerance: c.Tolerance, CodeBytes: p.code, Cached: built.Cached, Seed: seed, Assumptions: set.String()}
	if k.MACs != nil {
		rep.MACs = k.MACs(built.Params)
		if cycles > 0 {
			rep.PeakPercent = 100 * float64(rep.MACs) / (float64(ipu21.IPU21().AMPMACsPerCycleF16) * float64(cycles))
		}
	}
	maxErr, cerr := c.Check(p.tile)
	rep.MaxAbsError = maxErr
	rep.Pass = cerr == nil
	if cerr != nil {
		return rep, fmt.Errorf("%s (%s): numerical check failed: %w", name, built.Params, cerr)
	}
	return rep, nil
}
