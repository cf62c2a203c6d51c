// Package emit generates each tile's supervisor program from its work list
// (compiler/tile) and buffer addresses (compiler/place), assembles and links
// it with the kernel specialisations it calls, schedules the exchange
// phases (compiler/exchange) and writes the application package.
//
// The emitted runtime serves host calls like internal/diag: it waits at the
// command handshake (sync 7), reads the command word at 0x50000 and runs
// "initialize" (0) or "run" (1). Each host phase is one `sync 7`, after
// which the tile copies the bytes the host wrote into its window to their
// buffer (copy_f16). "run" samples $SCOUNT_L into the runtime state at
// 0x58004 (start, after the inputs are in place) and 0x58008 (end, after
// the outputs are), which is what the runtime reads; every step between
// them is sampled into the tile's sample area (samples.go). Every exchange phase
// is: `sync 2` (no worker runs), load the tile's row address from the row
// table at 0x5800C + 4*phase, `sync 3`, branch to the row, which ends with
// `br $m10`. Tiles without a transfer in a phase branch to a shared
// one-instruction row at 0x54000, so every tile takes part in every sync.
// Rows live at [0x54000, 0x58000), 8-byte aligned, in a memory element
// that holds neither code nor data.
//
// A loop (tile.OpLoop, an MLP's blocks or row chunks) keeps its iteration
// index in a word of the runtime header (tile.LoopState + 4*level),
// because the kernels clobber the registers; a strided argument adds
// index * step to its base address before the call.
//
// Tiles with identical work lists and addresses get identical program
// text and share one linked image; only their rows and row tables differ.
package emit

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/ipustack/ipustack/compiler/place"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// Addresses are one tile's buffer addresses.
type Addresses map[string]uint32

// windowBuf names the host write window in a Ref.
const windowBuf = tile.ReservedPrefix + "window"

func (a Addresses) ref(r tile.Ref) (uint32, error) {
	if r.Buf == windowBuf {
		return tile.HostWindowBase + uint32(r.Off), nil
	}
	base, ok := a[r.Buf]
	if !ok {
		return 0, fmt.Errorf("no buffer %q", r.Buf)
	}
	return base + uint32(r.Off), nil
}

// PlaceAll places every tile's buffers (identical buffer lists share one
// placement).
func PlaceAll(pl *tile.Program) ([]Addresses, error) {
	out := make([]Addresses, len(pl.Programs))
	memo := map[string]Addresses{}
	for l := range pl.Programs {
		t := &pl.Programs[l]
		bufs := append(append([]tile.Buffer(nil), t.Buffers...), sampleBuffer(pl, t))
		key := buffersKey(bufs)
		if a, ok := memo[key]; ok {
			out[l] = a
			continue
		}
		a, err := place.Place(bufs)
		if err != nil {
			return nil, fmt.Errorf("tile %d (grid %d,%d): %w", l, t.Row, t.Col, err)
		}
		memo[key] = a
		out[l] = a
	}
	return out, nil
}

// buffersKey encodes everything place.Place reads of bufs, fields
// length-prefixed so that distinct lists give distinct keys: PlaceAll
// memoises placements by it (tiles of one grid position share a work
// list). It was fmt.Sprint(bufs), most of place_storage's time.
func buffersKey(bufs []tile.Buffer) string {
	b := make([]byte, 0, 64*len(bufs))
	u := func(v int) { b = binary.AppendVarint(b, int64(v)) }
	str := func(s string) { u(len(s)); b = append(b, s...) }
	u(len(bufs))
	for i := range bufs {
		f := &bufs[i]
		str(f.Name)
		u(f.Bytes)
		u(f.Align)
		u(int(f.Region))
		u(f.Live[0])
		u(f.Live[1])
		u(len(f.Apart))
		for _, a := range f.Apart {
			str(a)
		}
	}
	return string(b)
}

// Exchanges schedules every exchange phase.
func Exchanges(pl *tile.Program, addrs []Addresses, log *slog.Logger) ([]*exchange.Schedule, error) {
	return ExchangesWith(pl, addrs, exchange.Options{Logger: log})
}

// ExchangesWith is Exchanges with scheduler options (Paired is always
// PairedAuto): the build's finalist rerank costs its finalists with
// NoSplit, the first round only.
func ExchangesWith(pl *tile.Program, addrs []Addresses, opts exchange.Options) ([]*exchange.Schedule, error) {
	phases, err := Phases(pl, addrs)
	if err != nil {
		return nil, err
	}
	opts.Paired = exchange.PairedAuto
	var out []*exchange.Schedule
	for i, xp := range phases {
		// PairedAuto: a multicast whose destinations include both tiles of
		// partner pairs at one address (an input block multicast along a
		// grid row) can go as 64-bit items, half the receive events; the
		// scheduler keeps whichever schedule is shorter.
		s, err := exchange.Build(xp, opts)
		if err != nil {
			return nil, fmt.Errorf("exchange %q: %w", pl.Exchanges[i].Name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// Phases turns the plan's exchange phases into the scheduler's: physical
// tiles and placed addresses.
func Phases(pl *tile.Program, addrs []Addresses) ([]exchange.Phase, error) {
	if len(pl.Exchanges) > tile.MaxRowPhases {
		return nil, fmt.Errorf("emit: %d exchange phases, the row table holds %d", len(pl.Exchanges), tile.MaxRowPhases)
	}
	var out []exchange.Phase
	for _, ph := range pl.Exchanges {
		xp := exchange.Phase{ID: ph.ID}
		for _, t := range ph.Transfers {
			sa, err := addrs[t.Src].ref(t.SrcRef)
			if err != nil {
				return nil, fmt.Errorf("exchange %q: tile %d: %w", ph.Name, t.Src, err)
			}
			x := exchange.Transfer{Src: pl.Programs[t.Src].Physical, SrcAddr: sa, Words: t.Words}
			for _, d := range t.Dsts {
				da, err := addrs[d.Tile].ref(d.Ref)
				if err != nil {
					return nil, fmt.Errorf("exchange %q: tile %d: %w", ph.Name, d.Tile, err)
				}
				x.Dsts = append(x.Dsts, exchange.Dest{Tile: pl.Programs[d.Tile].Physical, Addr: da})
			}
			xp.Transfers = append(xp.Transfers, x)
		}
		out = append(out, xp)
	}
	return out, nil
}

// Specs lists the kernel specialisations the plan calls, sorted.
func Specs(pl *tile.Program) []Spec {
	seen := map[string]Spec{}
	var visit func(ops []tile.Op)
	visit = func(ops []tile.Op) {
		for _, op := range ops {
			switch op.Kind {
			case tile.OpKernel:
				s := Spec{op.Kernel, op.Params}
				seen[s.Key()] = s
			case tile.OpHostCopy:
				s := specFrom(kernels.Copy{N: op.Bytes})
				seen[s.Key()] = s
			case tile.OpLoop:
				visit(op.Body)
			}
		}
	}
	for l := range pl.Programs {
		for _, call := range pl.Programs[l].Calls {
			visit(call)
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Spec, len(keys))
	for i, k := range keys {
		out[i] = seen[k]
	}
	return out
}

// CompileKernels builds every specialisation (through cache) in parallel.
func CompileKernels(specs []Spec, cache assemble.Cache) (map[string]*Compiled, error) {
	res := make([]*Compiled, len(specs))
	errs := make([]error, len(specs))
	parallel(len(specs), func(i int) { res[i], errs[i] = compileKernel(specs[i], cache) })
	out := map[string]*Compiled{}
	for i, s := range specs {
		if errs[i] != nil {
			return nil, fmt.Errorf("kernel %s: %w", s.Key(), errs[i])
		}
		out[s.Key()] = res[i]
	}
	return out, nil
}

func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(n, runtime.GOMAXPROCS(0)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// Program is one distinct supervisor program text and the kernels it calls.
type Program struct {
	Text    string
	Kernels []string // Spec keys, sorted
}

// Programs generates every tile's supervisor program; identical texts are
// shared: tileProgram[l] indexes programs.
func Programs(pl *tile.Program, addrs []Addresses, ks map[string]*Compiled) (programs []Program, tileProgram []int, err error) {
	index := map[string]int{}
	tileProgram = make([]int, len(pl.Programs))
	for l := range pl.Programs {
		p, err := program(&pl.Programs[l], addrs[l], ks, ringSamples(pl, &pl.Programs[l]))
		if err != nil {
			return nil, nil, fmt.Errorf("tile %d: %w", l, err)
		}
		i, ok := index[p.Text]
		if !ok {
			i = len(programs)
			index[p.Text] = i
			programs = append(programs, p)
		}
		tileProgram[l] = i
	}
	return programs, tileProgram, nil
}

func program(t *tile.TileProgram, a Addresses, ks map[string]*Compiled, ring bool) (Program, error) {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, "\t"+format+"\n", args...) }
	// Samples (see samples.go): timed is set in the timed part of "run";
	// every sample stores at the cursor (the sample area's word 0) and
	// advances it by inc: 4 at a step's end, 0 for a scratch sample.
	timed := false
	sampleBase, hasSamples := a[SampleBuf]
	sample := func(val, cur, ptr string, inc int) {
		w("get %s, $SCOUNT_L", val)
		w("setzi %s, %#x", cur, sampleBase)
		w("ld32 %s, %s, $mzero, 0", ptr, cur)
		w("st32 %s, %s, $mzero, 0", val, ptr)
		w("add %s, %s, %d", ptr, ptr, inc)
		w("st32 %s, %s, $mzero, 0", ptr, cur)
	}
	used := map[string]bool{}
	label := 0
	kernelCall := func(s Spec, args []tile.Arg, depth int) error {
		c, ok := ks[s.Key()]
		if !ok {
			return fmt.Errorf("kernel %s not compiled", s.Key())
		}
		used[s.Key()] = true
		for _, arg := range args {
			v, err := a.ref(arg.Ref)
			if err != nil {
				return err
			}
			w("setzi %s, %#x", arg.Reg, v)
			// A strided ref inside loops: add index * step per level
			// (the indices live in memory; $m0 and $m1 are scratch).
			for d, st := range arg.Ref.Step {
				if st == 0 {
					continue
				}
				if d > depth {
					return fmt.Errorf("%s steps with loop level %d outside it", arg.Reg, d)
				}
				if st < 0 || st >= tile.LoopLimit {
					return fmt.Errorf("loop step %d of %s out of range", st, arg.Reg)
				}
				w("setzi $m1, %#x", tile.LoopState+4*d)
				w("ld32 $m0, $m1, $mzero, 0")
				w("setzi $m1, %#x", st)
				w("mul $m0, $m0, $m1")
				w("add %s, %s, $m0", arg.Reg, arg.Reg)
			}
		}
		w("call $m10, %s", c.Entry)
		return nil
	}
	b.WriteString("// ipustack tile runtime (generated)\n\t.section .text, \"ax\"\n\t.supervisor\n\t.globl _start\n_start:\nloop:\n")
	w("sync 7")
	w("setzi $m0, %#x", tile.HostWindowBase)
	w("ld32 $m1, $m0, $mzero, 0")
	w("brz $m1, call_initialize")
	w("bri call_run")
	// depth is the innermost enclosing loop level (-1: none); a loop must
	// be deeper than its enclosing one, and a ref may only step with the
	// loops that enclose it.
	var emitOps func(ops []tile.Op, depth int) error
	emitOps = func(ops []tile.Op, depth int) error {
		for _, op := range ops {
			// Steps of the timed part end with a sample: top-level ones,
			// and those in loops when the area holds every iteration's
			// (then a loop itself is not a step).
			sampled := timed && (depth < 0 || ring) && op.Kind != tile.OpSample &&
				!(op.Kind == tile.OpLoop && ring)
			switch op.Kind {
			case tile.OpHostSync:
				w("sync 7")
			case tile.OpHostCopy:
				if err := kernelCall(specFrom(kernels.Copy{N: op.Bytes}),
					[]tile.Arg{{Reg: "$m2", Ref: op.Dst}, {Reg: "$m3", Ref: tile.Ref{Buf: windowBuf}}}, depth); err != nil {
					return err
				}
			case tile.OpKernel:
				if err := kernelCall(Spec{op.Kernel, op.Params}, op.Args, depth); err != nil {
					return err
				}
			case tile.OpExchange:
				label++
				w("sync 2")
				w("setzi $m0, %#x", tile.RowTable)
				w("ld32 $m1, $m0, $mzero, %d", op.Phase)
				w("setzi $m10, .Lx%d", label)
				w("sync 3")
				// The end of the sync step ($m1 holds the row). Every
				// `sync 3` of every tile is followed by the same six
				// instructions, sampled or not (a scratch sample does not
				// advance the cursor), so the rows stay aligned.
				if hasSamples {
					inc := 0
					if sampled {
						inc = 4
					}
					sample("$m0", "$m2", "$m3", inc)
				}
				w("br $m1")
				fmt.Fprintf(&b, ".Lx%d:\n", label)
			case tile.OpSample:
				w("sync 2")
				w("get $m1, $SCOUNT_L")
				w("setzi $m0, %#x", ipu21.RuntimeStateBase)
				w("st32 $m1, $m0, $mzero, %d", 1+op.Sample)
				timed = op.Sample == 0 && depth < 0 && hasSamples && &ops[0] == &t.Calls[1][0]
			case tile.OpLoop:
				if op.Depth <= depth || op.Depth >= tile.MaxLoopDepth || op.Count < 1 || op.Count >= tile.LoopLimit {
					return fmt.Errorf("loop of %d iterations at level %d inside level %d", op.Count, op.Depth, depth)
				}
				label++
				top := label
				state := tile.LoopState + 4*op.Depth
				w("setzi $m1, %#x", state)
				w("st32 $mzero, $m1, $mzero, 0")
				fmt.Fprintf(&b, ".Ll%d:\n", top)
				if err := emitOps(op.Body, op.Depth); err != nil {
					return err
				}
				w("setzi $m1, %#x", state)
				w("ld32 $m0, $m1, $mzero, 0")
				w("add $m0, $m0, 1")
				w("st32 $m0, $m1, $mzero, 0")
				w("setzi $m1, %d", op.Count)
				w("cmpult $m1, $m0, $m1")
				w("brnz $m1, .Ll%d", top)
			}
			if sampled {
				sample("$m1", "$m0", "$m2", 4)
			}
		}
		return nil
	}
	for ci, name := range []string{"call_initialize", "call_run"} {
		b.WriteString(name + ":\n")
		if hasSamples {
			// The cursor starts at the first step's word.
			w("setzi $m0, %#x", sampleBase)
			w("setzi $m1, %#x", sampleBase+4)
			w("st32 $m1, $m0, $mzero, 0")
		}
		if err := emitOps(t.Calls[ci], -1); err != nil {
			return Program{}, err
		}
		w("bri loop")
	}
	p := Program{Text: b.String()}
	for k := range used {
		p.Kernels = append(p.Kernels, k)
	}
	sort.Strings(p.Kernels)
	return p, nil
}

// Link assembles and links every program with its kernels (in parallel).
func Link(programs []Program, ks map[string]*Compiled) ([]*elf.Image, error) {
	imgs := make([]*elf.Image, len(programs))
	errs := make([]error, len(programs))
	parallel(len(programs), func(i int) {
		p := programs[i]
		obj, err := asm.Assemble(fmt.Sprintf("runtime%d.S", i), []byte(p.Text), asm.Options{})
		if err != nil {
			errs[i] = fmt.Errorf("assembling program %d: %w", i, err)
			return
		}
		objs := []*elf.Object{obj}
		for _, k := range p.Kernels {
			objs = append(objs, ks[k].Object)
		}
		img, err := elf.Link(objs, elf.LinkOptions{Entry: "_start", Limit: tile.CodeLimit})
		if err != nil {
			errs[i] = fmt.Errorf("linking program %d: %w", i, err)
			return
		}
		imgs[i] = img
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return imgs, nil
}

// CodeBytes is the largest linked image.
func CodeBytes(imgs []*elf.Image) int {
	m := 0
	for _, img := range imgs {
		n := 0
		for _, s := range img.Segments {
			n = max(n, int(s.Addr+s.MemSize-tile.CodeBase))
		}
		m = max(m, n)
	}
	return m
}

// brM10 is assembled on first use, not at init: an encoding overlay
// (isa.Install) must be installed before anything assembles.
var brM10 = sync.OnceValue(func() []byte {
	obj, err := asm.Assemble("ret.S", []byte("\t.section .text, \"ax\"\n\t.supervisor\n\tbr $m10\n"), asm.Options{})
	if err != nil {
		panic("BUG: " + err.Error())
	}
	return obj.Sections[0].Data
})

// Package assembles the application package.
func Package(pl *tile.Program, addrs []Addresses, scheds []*exchange.Schedule, imgs []*elf.Image, tileProgram []int, version string) (*ipuexe.Package, error) {
	pkg := &ipuexe.Package{CompilerVersion: version, Target: "ipu21",
		MemoryBase: ipu21.SRAMBase, MemorySize: ipu21.SRAMEnd - ipu21.SRAMBase}
	// Code segments are shared between tiles of one program.
	codeSegs := make([][]ipuexe.Segment, len(imgs))
	for i, img := range imgs {
		for _, s := range img.Segments {
			fl := ipuexe.FlagRead
			if s.Flags&elf.FlagExec != 0 {
				fl |= ipuexe.FlagExec
			}
			if s.Flags&elf.FlagWrite != 0 {
				fl |= ipuexe.FlagWrite
			}
			codeSegs[i] = append(codeSegs[i], ipuexe.Segment{Address: s.Addr, MemSize: s.MemSize, Data: s.Data, Flags: fl})
		}
	}
	le := binary.LittleEndian
	pkg.Profile.Steps = []ipuexe.ProfileStep{{Name: "run.start", Kind: "sync"}}
	stepIndex := map[string]uint32{}
	for l := range pl.Programs {
		t := &pl.Programs[l]
		img := imgs[tileProgram[l]]
		rows := append([]byte(nil), brM10()...)
		for len(rows)%8 != 0 {
			rows = append(rows, 0)
		}
		table := make([]byte, 4*len(scheds))
		for p, s := range scheds {
			addr := uint32(tile.RowBase)
			if pr := s.Program(t.Physical); pr != nil {
				addr = tile.RowBase + uint32(len(rows))
				for _, wd := range pr.Words {
					rows = le.AppendUint32(rows, wd)
				}
				rows = append(rows, brM10()...)
				for len(rows)%8 != 0 {
					rows = append(rows, 0)
				}
			}
			le.PutUint32(table[4*p:], addr)
		}
		if tile.RowBase+len(rows) > tile.RowLimit {
			return nil, fmt.Errorf("emit: tile %d's exchange rows take %d bytes, more than [%#x,%#x)", l, len(rows), tile.RowBase, tile.RowLimit)
		}
		segs := append([]ipuexe.Segment(nil), codeSegs[tileProgram[l]]...)
		segs = append(segs, ipuexe.Segment{Address: tile.RowBase, MemSize: uint32(len(rows)), Data: rows, Flags: ipuexe.FlagRead | ipuexe.FlagExec})
		if len(table) > 0 {
			segs = append(segs, ipuexe.Segment{Address: tile.RowTable, MemSize: uint32(len(table)), Data: table, Flags: ipuexe.FlagRead | ipuexe.FlagWrite})
		}
		pkg.Tiles = append(pkg.Tiles, ipuexe.Tile{Physical: uint32(t.Physical), Entry: img.Entry, Segments: segs})
		if t.Active() {
			// Samples in execution order: run.start, the sample area's
			// words (samples.go), run.end (its step index set below: the
			// last, so the runtime's span stays run.start..run.end).
			smp := []ipuexe.ProfileSample{{Address: ipu21.ProfileStartCycle, Step: 0}}
			base, ok := addrs[l][SampleBuf]
			steps := TimedSteps(pl, t)
			for k, st := range steps[:max(0, len(steps)-1)] {
				if !ok {
					break
				}
				key := fmt.Sprintf("%d %s\x00%s", k+1, st.Name, st.Kind)
				i, seen := stepIndex[key]
				if !seen {
					i = uint32(len(pkg.Profile.Steps))
					stepIndex[key] = i
					pkg.Profile.Steps = append(pkg.Profile.Steps, ipuexe.ProfileStep{Name: fmt.Sprintf("%d %s", k+1, st.Name), Kind: st.Kind})
				}
				smp = append(smp, ipuexe.ProfileSample{Address: base + 4*uint32(1+k), Step: i})
			}
			smp = append(smp, ipuexe.ProfileSample{Address: ipu21.ProfileEndCycle})
			pkg.Profile.Tiles = append(pkg.Profile.Tiles, ipuexe.TileProfile{Tile: uint32(t.Physical), Samples: smp})
		}
	}
	end := uint32(len(pkg.Profile.Steps))
	pkg.Profile.Steps = append(pkg.Profile.Steps, ipuexe.ProfileStep{Name: "run.end", Kind: "sync"})
	for i := range pkg.Profile.Tiles {
		smp := pkg.Profile.Tiles[i].Samples
		smp[len(smp)-1].Step = end
	}

	binding := func(hb tile.HostBinding) (ipuexe.Binding, error) {
		b := ipuexe.Binding{Name: hb.Name, DType: ipuexe.F16, Shape: []uint32{uint32(hb.Bytes / 2)}}
		for _, s := range hb.Slices {
			a, err := addrs[s.Tile].ref(s.Ref)
			if err != nil {
				return b, fmt.Errorf("binding %q: tile %d: %w", hb.Name, s.Tile, err)
			}
			b.Slices = append(b.Slices, ipuexe.Slice{Tile: uint32(pl.Programs[s.Tile].Physical), Address: a,
				Offset: uint64(s.Offset), Length: uint32(s.Length)})
		}
		return b, nil
	}
	for _, list := range []struct {
		from []tile.HostBinding
		to   *[]ipuexe.Binding
	}{{pl.Inputs, &pkg.Inputs}, {pl.Weights, &pkg.Weights}, {pl.Outputs, &pkg.Outputs}} {
		for _, hb := range list.from {
			b, err := binding(hb)
			if err != nil {
				return nil, err
			}
			*list.to = append(*list.to, b)
		}
	}
	pkg.Host = ipuexe.HostExchange{
		Pages:    []ipuexe.HostPage{{Index: 0, Size: 4096}, {Index: 1, Size: uint32(pl.Tiles) * tile.SlotSize}},
		SlotSize: tile.SlotSize,
	}
	for _, c := range pl.Calls {
		hc := ipuexe.HostCall{Name: c.Name, Command: c.Command}
		for _, ph := range c.Phases {
			var hp ipuexe.HostPhase
			for _, tr := range ph {
				hp.Transfers = append(hp.Transfers, ipuexe.HostTransfer{Kind: tr.Kind, Binding: uint32(tr.Binding),
					Slice: uint32(tr.Slice), SliceOffset: uint32(tr.SliceOffset), Length: uint32(tr.Length),
					Page: 1, PageOffset: uint32(tr.Tile) * tile.SlotSize})
			}
			hc.Phases = append(hc.Phases, hp)
		}
		pkg.Host.Calls = append(pkg.Host.Calls, hc)
	}
	return pkg, nil
}
