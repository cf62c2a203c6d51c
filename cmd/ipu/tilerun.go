package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels/bench"
	"github.com/spf13/cobra"
	"github.com/x448/float16"
)

func newTileCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tile",
		Short: "run code on one emulated tile",
	}
	cmd.AddCommand(newTileRunCmd())
	return cmd
}

// tileRunFlags are the flags of `ipu tile run`.
type tileRunFlags struct {
	entry     string
	defines   []string
	regs      []string
	fills     []string
	loads     []string
	dumps     []string
	maxCycles uint64
	asJSON    bool
	conserv   bool
}

// tileReport is the one line (or JSON object) `ipu tile run` prints.
type tileReport struct {
	Cycles      uint64 `json:"cycles"`
	Bundles     uint64 `json:"bundles"`
	Stop        string `json:"stop"`
	Assumptions string `json:"assumptions"`
	Fault       string `json:"fault,omitempty"`
	FaultTile   *int   `json:"faultTile,omitempty"`
	FaultCtx    string `json:"faultContext,omitempty"`
	FaultPC     string `json:"faultPC,omitempty"`
	FaultInst   string `json:"faultInstruction,omitempty"`
}

func (r *tileReport) line() string {
	s := fmt.Sprintf("cycles=%d bundles=%d stop=%s assumptions=%s", r.Cycles, r.Bundles, r.Stop, r.Assumptions)
	if r.FaultTile != nil {
		s += fmt.Sprintf(" faultTile=%d faultContext=%q faultPC=%s faultInstruction=%q fault=%q", *r.FaultTile, r.FaultCtx, r.FaultPC, r.FaultInst, r.Fault)
	}
	return s
}

func newTileRunCmd() *cobra.Command {
	var f tileRunFlags
	cmd := &cobra.Command{
		Use:   "run OBJ.o|SRC.S... --entry SYM [--define NAME=VALUE]... [--reg NAME=VALUE]... [--fill ADDR:LEN[:SEED]]... [--load FILE@ADDR]... [--dump ADDR:LEN@FILE]... [--max-cycles N] [--json] [--conservative]",
		Short: "link objects with a harness that calls SYM and run it on one emulated tile",
		Long: `tile run links the objects (.o, or .S sources assembled with the --define
macros) with the harness kernels use (its supervisor issues call $m10, SYM and
stops at the sync 3 after the return), loads the image on one emulated IPU21
tile and runs it. Before the call, --reg sets supervisor registers (m0..m15,
e.g. --reg m2=0x80000), --fill writes LEN bytes of seeded f16 values in
[-1, 1) at ADDR (the same SEED gives the same bytes; default seed 1), --load
copies a file's bytes to ADDR. After the run --dump writes LEN bytes from ADDR
to FILE. It prints one line: cycles= (from the call to its return, as ipu
kernel run counts them; for any other stop, the cycles run), bundles=, stop=
(return, fault, limit, idle or sync), assumptions= and, after a fault, its
tile, context, PC and instruction; --json prints the same as one object.
--conservative runs the emulator with the conservative assumption set
(docs/machine.md). It exits 1 unless SYM returned.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := tileRun(args, &f)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if f.asJSON {
				b, _ := json.Marshal(rep)
				fmt.Fprintln(w, string(b))
			} else {
				fmt.Fprintln(w, rep.line())
			}
			if rep.Stop != "return" {
				return exitError{1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.entry, "entry", "", "supervisor function the harness calls (required)")
	fl.StringArrayVarP(&f.defines, "define", "D", nil, "preprocessor definition NAME or NAME=VALUE for .S sources (repeatable)")
	fl.StringArrayVar(&f.regs, "reg", nil, "supervisor register before the call, NAME=VALUE, e.g. m2=0x80000 (repeatable)")
	fl.StringArrayVar(&f.fills, "fill", nil, "write seeded f16 values: ADDR:LEN[:SEED] (repeatable)")
	fl.StringArrayVar(&f.loads, "load", nil, "copy a file into SRAM: FILE@ADDR (repeatable)")
	fl.StringArrayVar(&f.dumps, "dump", nil, "write SRAM to a file after the run: ADDR:LEN@FILE (repeatable)")
	fl.Uint64Var(&f.maxCycles, "max-cycles", 1<<32, "stop after this many cycles")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as one JSON object")
	fl.BoolVar(&f.conserv, "conservative", false, "run the emulator with the conservative assumption set (docs/machine.md)")
	return cmd
}

// span is a byte range of SRAM a flag names.
type span struct {
	flag       string
	addr, size uint32
}

func parseU32(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 0, 32)
	return uint32(v), err
}

// parseSpan reads ADDR:LEN (numbers in Go syntax: 0x80000, 256) and checks
// that the range is non-empty and inside SRAM.
func parseSpan(flag, addrText, lenText string) (span, error) {
	a, err := parseU32(addrText)
	if err != nil {
		return span{}, fmt.Errorf("%s: address %q is not a number", flag, addrText)
	}
	n, err := parseU32(lenText)
	if err != nil || n == 0 {
		return span{}, fmt.Errorf("%s: length %q is not a positive number", flag, lenText)
	}
	if !ipu21.InSRAM(a, n) {
		return span{}, fmt.Errorf("%s: [0x%x, 0x%x) is outside tile SRAM [0x%x, 0x%x)", flag, a, uint64(a)+uint64(n), ipu21.SRAMBase, ipu21.SRAMEnd)
	}
	return span{flag: flag, addr: a, size: n}, nil
}

func (s span) overlaps(o span) bool {
	return uint64(s.addr) < uint64(o.addr)+uint64(o.size) && uint64(o.addr) < uint64(s.addr)+uint64(s.size)
}

// tileObjects reads .o files and assembles .S sources.
func tileObjects(paths []string, defines []string) ([]*elf.Object, error) {
	defs, err := parseDefines(defines)
	if err != nil {
		return nil, err
	}
	var objs []*elf.Object
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".s":
			obj, err := asm.Assemble(path, data, asm.Options{Defines: defs})
			if err != nil {
				return nil, err
			}
			objs = append(objs, obj)
		case ".o":
			obj, err := elf.Parse(path, data)
			if err != nil {
				return nil, err
			}
			objs = append(objs, obj)
		default:
			return nil, fmt.Errorf("%s: want a Colossus object (.o) or an assembly source (.S)", path)
		}
	}
	return objs, nil
}

// definesEntry reports whether an object defines a global function symbol.
func definesEntry(objs []*elf.Object, name string) bool {
	for _, o := range objs {
		for _, s := range o.Symbols {
			if s.Name == name && s.Section != elf.Undefined && s.Bind != elf.Local {
				return true
			}
		}
	}
	return false
}

func globalNames(objs []*elf.Object) []string {
	seen := map[string]bool{}
	for _, o := range objs {
		for _, s := range o.Symbols {
			if s.Name != "" && s.Section >= 0 && s.Bind != elf.Local {
				seen[s.Name] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// fillF16 is --fill's data: n/2 f16 values uniform in [-1, 1) (small
// magnitude, so that sums of a few thousand stay far from overflow),
// deterministic for a seed; an odd trailing byte is zero.
func fillF16(n uint32, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	b := make([]byte, n)
	for i := 0; i+1 < int(n); i += 2 {
		binary.LittleEndian.PutUint16(b[i:], float16.Fromfloat32(float32(2*rng.Float64()-1)).Bits())
	}
	return b
}

func tileRun(paths []string, f *tileRunFlags) (*tileReport, error) {
	if f.entry == "" {
		return nil, errors.New("tile run: --entry SYM is required")
	}
	// Flags first: a malformed one is reported before any work.
	regs := map[int]uint32{}
	for _, kv := range f.regs {
		name, val, ok := strings.Cut(kv, "=")
		name = strings.TrimPrefix(name, "$")
		r, err := strconv.Atoi(strings.TrimPrefix(name, "m"))
		if !ok || !strings.HasPrefix(name, "m") || err != nil || r < 0 || r > 15 {
			return nil, fmt.Errorf("--reg %q: want mN=VALUE with N in 0..15 (a supervisor register)", kv)
		}
		if r == 10 || r == 15 {
			return nil, fmt.Errorf("--reg %q: $m%d is the harness's return address or $mzero", kv, r)
		}
		v, err := parseU32(val)
		if err != nil {
			return nil, fmt.Errorf("--reg %q: value %q is not a 32-bit number", kv, val)
		}
		regs[r] = v
	}
	type fill struct {
		span
		seed uint64
	}
	var fills []fill
	var writes []span
	for _, fv := range f.fills {
		parts := strings.Split(fv, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("--fill %q: want ADDR:LEN[:SEED]", fv)
		}
		s, err := parseSpan("--fill "+fv, parts[0], parts[1])
		if err != nil {
			return nil, err
		}
		seed := uint64(1)
		if len(parts) == 3 {
			if seed, err = strconv.ParseUint(parts[2], 0, 64); err != nil {
				return nil, fmt.Errorf("--fill %q: seed %q is not a number", fv, parts[2])
			}
		}
		fills = append(fills, fill{s, seed})
		writes = append(writes, s)
	}
	type load struct {
		span
		data []byte
	}
	var loads []load
	for _, lv := range f.loads {
		file, addrText, ok := strings.Cut(lv, "@")
		if !ok || file == "" {
			return nil, fmt.Errorf("--load %q: want FILE@ADDR", lv)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--load %q: %w", lv, err)
		}
		s, err := parseSpan("--load "+lv, addrText, strconv.Itoa(len(data)))
		if err != nil {
			if len(data) == 0 {
				return nil, fmt.Errorf("--load %q: %s is empty", lv, file)
			}
			return nil, err
		}
		loads = append(loads, load{s, data})
		writes = append(writes, s)
	}
	type dump struct {
		span
		file string
	}
	var dumps []dump
	for _, dv := range f.dumps {
		rng, file, ok := strings.Cut(dv, "@")
		addrText, lenText, ok2 := strings.Cut(rng, ":")
		if !ok || !ok2 || file == "" {
			return nil, fmt.Errorf("--dump %q: want ADDR:LEN@FILE", dv)
		}
		s, err := parseSpan("--dump "+dv, addrText, lenText)
		if err != nil {
			return nil, err
		}
		// Nothing the user gave is overwritten.
		inputs := append([]string(nil), paths...)
		for _, l := range f.loads {
			fname, _, _ := strings.Cut(l, "@")
			inputs = append(inputs, fname)
		}
		for _, d := range dumps {
			inputs = append(inputs, d.file)
		}
		if err := refuseOverwrite(file, inputs...); err != nil {
			return nil, fmt.Errorf("--dump %q: %w", dv, err)
		}
		if err := checkOutput(file); err != nil {
			return nil, fmt.Errorf("--dump %q: %w", dv, err)
		}
		dumps = append(dumps, dump{s, file})
	}

	objs, err := tileObjects(paths, f.defines)
	if err != nil {
		return nil, err
	}
	if !definesEntry(objs, f.entry) {
		return nil, fmt.Errorf("--entry %s: no object defines a global symbol %q (globals: %s)", f.entry, f.entry, strings.Join(globalNames(objs), ", "))
	}
	stub, err := bench.Harness(f.entry)
	if err != nil {
		return nil, fmt.Errorf("--entry %s: %w", f.entry, err)
	}
	img, err := elf.Link(append([]*elf.Object{stub}, objs...), elf.LinkOptions{Entry: bench.HarnessEntry})
	if err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	tile := emu.NewTile(0)
	var code []span
	for _, seg := range img.Segments {
		code = append(code, span{addr: seg.Addr, size: uint32(len(seg.Data))})
		if err := tile.Write(seg.Addr, seg.Data); err != nil {
			return nil, fmt.Errorf("load image: %w", err)
		}
	}
	for i, w := range writes {
		for _, c := range code {
			if c.size > 0 && w.overlaps(c) {
				return nil, fmt.Errorf("%s: [0x%x, 0x%x) overlaps the linked image at [0x%x, 0x%x)", w.flag, w.addr, w.addr+w.size, c.addr, c.addr+c.size)
			}
		}
		for _, o := range writes[:i] {
			if w.overlaps(o) {
				return nil, fmt.Errorf("%s: [0x%x, 0x%x) overlaps %s", w.flag, w.addr, w.addr+w.size, o.flag)
			}
		}
	}
	for _, fl := range fills {
		if err := tile.Write(fl.addr, fillF16(fl.size, fl.seed)); err != nil {
			return nil, fmt.Errorf("%s: %w", fl.flag, err)
		}
	}
	for _, l := range loads {
		if err := tile.Write(l.addr, l.data); err != nil {
			return nil, fmt.Errorf("%s: %w", l.flag, err)
		}
	}
	for r, v := range regs {
		tile.Sup.M[r] = v
	}
	set := assumptionsFlag(f.conserv)
	tile.SetAssumptions(set)
	tile.Start(img.Entry)
	res, runErr := tile.Run(f.maxCycles)
	rep := &tileReport{Bundles: res.Bundles, Assumptions: set.String(), Cycles: res.Cycle}
	var fault *emu.Fault
	switch {
	case errors.As(runErr, &fault):
		rep.Stop = "fault"
		rep.Fault = fault.Error()
		rep.FaultTile = &fault.Tile
		rep.FaultCtx, rep.FaultPC, rep.FaultInst = fault.Context, fmt.Sprintf("0x%05x", fault.PC), fault.Disasm
	case runErr != nil:
		return nil, fmt.Errorf("run: %w", runErr)
	case res.Reason == emu.StopSync && res.Zone == int(ipu21.SyncInternal) && tile.Sup.PC == img.Entry+bench.HarnessReturnOffset+4:
		rep.Stop = "return"
		rep.Cycles = bench.CallCycles(res)
	case res.Reason == emu.StopSync:
		rep.Stop = "sync"
	case res.Reason == emu.StopLimit:
		rep.Stop = "limit"
	default:
		rep.Stop = "idle"
	}
	for _, d := range dumps {
		buf := make([]byte, d.size)
		if err := tile.Read(d.addr, buf); err != nil {
			return nil, fmt.Errorf("%s: %w", d.flag, err)
		}
		if err := writeFileAtomic(d.file, buf); err != nil {
			return nil, fmt.Errorf("%s: %w", d.flag, err)
		}
	}
	return rep, nil
}
