// Package diag builds the chip diagnostic that `ipu diagnose` runs: an
// application package, made with ipustack's own assembler, linker and
// exchange generator, that exercises every part of the run path on every
// tile, together with the results it must produce.
//
// On each of N tiles (logical 0..N-1, placed with ipu21.LogicalToPhysical)
// the package's runtime code serves two host calls in a loop, like a
// compiled application:
//
//   - "initialize" (command 0), one phase: the host uploads the tile's
//     slice of weight "w" (WeightBytes) into the tile's host window; the
//     supervisor copies it to WeightAddr.
//   - "run" (command 1), two phases. Phase 0: the host uploads input "x"
//     (InputBytes) into the window; the supervisor copies it to InputAddr,
//     samples its cycle counter, starts all six workers (each stores a
//     signature naming the tile and its context), waits for them, stores
//     its own signature, then after a chip-wide sync runs its exchange
//     row: the tile sends its logical id to tile l+1 (a ring) and
//     multicasts it to tiles l+7 and l+31 (mod N). It then writes x and w,
//     each word XORed with l, into its results and samples the counter
//     again. Phase 1: the host reads the results back (output "results").
//
// Expected holds every results word; Check compares.
package diag

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/internal/xprog"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// Tile memory map of the diagnostic. Code is in memory element 0, the id
// word that is sent in element 4 and the results (which receive the
// exchange words) in element 5, so an exchange never makes a fetch, a
// send and an incoming write meet in one element.
const (
	RowAddr     = 0x4E000 // the tile's exchange row (then `br $m10`)
	IDAddr      = 0x5C000 // word 0: the logical tile id
	ResultsAddr = 0x60000
	WeightAddr  = 0x64000
	InputAddr   = 0x68000

	InputBytes   = 32
	WeightBytes  = 1056 // not a multiple of a 1024-byte packet on purpose
	HeaderBytes  = 96
	ResultsBytes = HeaderBytes + WeightBytes

	// Result word indexes.
	WordRecv       = 0  // 0..2: ids received from l-1, l-7, l-31
	WordSupervisor = 3  // 0x5EE00000 | l
	WordWorkers    = 4  // 4..9: worker w: 0x0A000000 | l<<4 | w
	WordInput      = 16 // 16..23: x ^ l
	WordWeight     = 24 // w ^ l
)

// Offsets are the exchange distances: slot k of the received ids holds
// the id of tile l - Offsets[k].
var Offsets = [3]int{1, 7, 31}

const source = `
#define APERTURE 0x50000
	.section .text, "ax"
	.supervisor
	.globl _start
_start:
loop:
	sync 7                          // command handshake
	setzi $m0, APERTURE
	ld32 $m1, $m0, $mzero, 0
	brz $m1, do_init
	// run, phase 0: the input has landed in the window
	sync 7
	setzi $m4, APERTURE
	setzi $m5, INPUT
	setzi $m6, INPUT_WORDS-1
	call $m11, copy
	get $m2, $SCOUNT_L
	setzi $m3, STATE
	st32 $m2, $m3, $mzero, 1        // profile start
	setzi $m4, worker
	setzi $m5, RESULTS+4*4
	runall $m4, $m5, 1
	sync 2
	setzi $m0, IDW
	ld32 $m7, $m0, $mzero, 0
	or $m1, $m7, 0x5EE00000
	setzi $m0, RESULTS
	st32 $m1, $m0, $mzero, 3
	sync 3
	call $m10, ROW
	setzi $m4, INPUT
	setzi $m5, RESULTS+16*4
	setzi $m6, INPUT_WORDS-1
	call $m11, xorcopy
	setzi $m4, WEIGHT
	setzi $m5, RESULTS+24*4
	setzi $m6, WEIGHT_WORDS-1
	call $m11, xorcopy
	get $m2, $SCOUNT_L
	setzi $m3, STATE
	st32 $m2, $m3, $mzero, 2        // profile end
	sync 7                          // run, phase 1: the host reads the results
	bri loop
do_init:
	sync 7                          // initialize, phase 0: the weights have landed
	setzi $m4, APERTURE
	setzi $m5, WEIGHT
	setzi $m6, WEIGHT_WORDS-1
	call $m11, copy
	bri loop

// copy / xorcopy: $m6+1 words from $m4 to $m5 (xorcopy: each XORed with $m7)
copy:
	setzi $m7, 0
xorcopy:
1:	ld32 $m8, $m4, $mzero, 0
	xor $m8, $m8, $m7
	st32 $m8, $m5, $mzero, 0
	add $m4, $m4, 4
	add $m5, $m5, 4
	brnzdec $m6, 1b
	br $m11

	.worker
worker:
	get $m0, $WSR
	and $m0, $m0, 7
	setzi $m1, IDW
	ld32 $m1, $m1, $mzero, 0
	shl $m1, $m1, 4
	or $m0, $m0, $m1
	or $m0, $m0, 0x0A000000
	get $m2, $VERTEX_BASE
	st32 $m0, $m2, $mzero, 0
	exitz $mzero
`

// Diagnostic is a built diagnostic package and what it must produce.
type Diagnostic struct {
	N        int
	Physical []int // logical -> physical
	Package  *ipuexe.Package
	Inputs   map[string][]byte
	Weights  map[string][]byte
	Expected []byte // output "results", N x ResultsBytes
	// RowHorizon is the exchange phase's length in cycles.
	RowHorizon int64
}

func mix(a, b uint32) uint32 {
	h := a*0x9E3779B1 ^ b*0x85EBCA77
	h ^= h >> 15
	h *= 0xC2B2AE3D
	return h ^ h>>13
}

// Build makes the diagnostic for n tiles (1..1472; logical 0..n-1).
func Build(n int) (*Diagnostic, error) {
	if n < 1 || n > ipu21.Tiles {
		return nil, fmt.Errorf("diagnose: tile count %d: want 1..%d", n, ipu21.Tiles)
	}
	defs := map[string]string{
		"INPUT": fmt.Sprint(InputAddr), "WEIGHT": fmt.Sprint(WeightAddr), "RESULTS": fmt.Sprint(ResultsAddr),
		"IDW": fmt.Sprint(IDAddr), "ROW": fmt.Sprint(RowAddr), "STATE": fmt.Sprint(ipu21.RuntimeStateBase),
		"INPUT_WORDS": fmt.Sprint(InputBytes / 4), "WEIGHT_WORDS": fmt.Sprint(WeightBytes / 4),
	}
	obj, err := asm.Assemble("diagnose.S", []byte(source), asm.Options{Defines: defs})
	if err != nil {
		return nil, fmt.Errorf("diagnose: assembling the tile program: %w", err)
	}
	img, err := elf.Link([]*elf.Object{obj}, elf.LinkOptions{})
	if err != nil {
		return nil, fmt.Errorf("diagnose: linking the tile program: %w", err)
	}
	var code []ipuexe.Segment
	for _, s := range img.Segments {
		if uint64(s.Addr)+uint64(s.MemSize) > RowAddr {
			return nil, fmt.Errorf("diagnose: the tile program reaches %#x, past the row at %#x", uint64(s.Addr)+uint64(s.MemSize), RowAddr)
		}
		fl := ipuexe.FlagRead
		if s.Flags&elf.FlagExec != 0 {
			fl |= ipuexe.FlagExec
		}
		if s.Flags&elf.FlagWrite != 0 {
			fl |= ipuexe.FlagWrite
		}
		code = append(code, ipuexe.Segment{Address: s.Addr, MemSize: s.MemSize, Data: s.Data, Flags: fl})
	}

	d := &Diagnostic{N: n, Physical: make([]int, n), Inputs: map[string][]byte{}, Weights: map[string][]byte{}}
	for l := range d.Physical {
		d.Physical[l] = ipu21.LogicalToPhysical(l)
	}
	phys := func(l int) int { return d.Physical[((l%n)+n)%n] }

	// Which offsets are distinct tiles for this n (small n folds them).
	var used [len(Offsets)]bool
	seen := map[int]bool{0: true}
	for k, o := range Offsets {
		if !seen[o%n] {
			used[k], seen[o%n] = true, true
		}
	}
	var xs []xprog.Transfer
	for l := 0; l < n; l++ {
		if used[0] {
			xs = append(xs, xprog.Transfer{Src: phys(l), Addr: IDAddr, Words: 1,
				Dests: []xprog.Dest{{Tile: phys(l + Offsets[0]), Addr: ResultsAddr}}})
		}
		mc := xprog.Transfer{Src: phys(l), Addr: IDAddr, Words: 1}
		for k := 1; k < len(Offsets); k++ {
			if used[k] {
				mc.Dests = append(mc.Dests, xprog.Dest{Tile: phys(l + Offsets[k]), Addr: ResultsAddr + 4*uint32(k)})
			}
		}
		if len(mc.Dests) > 0 {
			xs = append(xs, mc)
		}
	}
	prog, err := xprog.Generate(xs, xprog.Options{Tiles: d.Physical})
	if err != nil {
		return nil, fmt.Errorf("diagnose: exchange: %w", err)
	}
	d.RowHorizon = prog.Horizon
	ret, err := xprog.Inst{ID: "br", Values: []int64{10}}.Encode()
	if err != nil {
		return nil, err
	}

	pkg := &ipuexe.Package{CompilerVersion: "ipustack-diagnose", Target: "ipu21",
		MemoryBase: ipu21.SRAMBase, MemorySize: ipu21.SRAMEnd - ipu21.SRAMBase}
	x := ipuexe.Binding{Name: "x", DType: ipuexe.U32, Shape: []uint32{uint32(n), InputBytes / 4}}
	w := ipuexe.Binding{Name: "w", DType: ipuexe.U32, Shape: []uint32{uint32(n), WeightBytes / 4}}
	r := ipuexe.Binding{Name: "results", DType: ipuexe.U32, Shape: []uint32{uint32(n), ResultsBytes / 4}}
	var initPh, inPh, outPh ipuexe.HostPhase
	xb := make([]byte, n*InputBytes)
	wb := make([]byte, n*WeightBytes)
	d.Expected = make([]byte, n*ResultsBytes)
	le := binary.LittleEndian
	for l := 0; l < n; l++ {
		p := uint32(phys(l))
		words, err := prog.Words(int(p))
		if err != nil {
			return nil, err
		}
		row := make([]byte, 0, 4*len(words)+4)
		for _, v := range append(words, ret...) {
			row = le.AppendUint32(row, v)
		}
		if RowAddr+len(row) > ipu21.HostApertureBase {
			return nil, fmt.Errorf("diagnose: tile %d's exchange row is %d bytes, too long for [%#x,%#x)", p, len(row), RowAddr, ipu21.HostApertureBase)
		}
		id := le.AppendUint32(nil, uint32(l))
		segs := append([]ipuexe.Segment(nil), code...)
		segs = append(segs,
			ipuexe.Segment{Address: RowAddr, MemSize: uint32(len(row)), Data: row, Flags: ipuexe.FlagRead | ipuexe.FlagExec},
			ipuexe.Segment{Address: IDAddr, MemSize: 16, Data: id, Flags: ipuexe.FlagRead | ipuexe.FlagWrite},
			ipuexe.Segment{Address: ResultsAddr, MemSize: ResultsBytes, Flags: ipuexe.FlagRead | ipuexe.FlagWrite})
		pkg.Tiles = append(pkg.Tiles, ipuexe.Tile{Physical: p, Entry: img.Entry, Segments: segs})
		pkg.Profile.Tiles = append(pkg.Profile.Tiles, ipuexe.TileProfile{Tile: p, Samples: []ipuexe.ProfileSample{
			{Address: ipu21.ProfileStartCycle, Step: 0}, {Address: ipu21.ProfileEndCycle, Step: 1}}})

		k := uint32(l)
		page := k * 4096
		x.Slices = append(x.Slices, ipuexe.Slice{Tile: p, Address: InputAddr, Offset: uint64(l * InputBytes), Length: InputBytes})
		w.Slices = append(w.Slices, ipuexe.Slice{Tile: p, Address: WeightAddr, Offset: uint64(l * WeightBytes), Length: WeightBytes})
		r.Slices = append(r.Slices, ipuexe.Slice{Tile: p, Address: ResultsAddr, Offset: uint64(l * ResultsBytes), Length: ResultsBytes})
		initPh.Transfers = append(initPh.Transfers, ipuexe.HostTransfer{Kind: ipuexe.KindWeight, Slice: k, Length: WeightBytes, Page: 1, PageOffset: page})
		inPh.Transfers = append(inPh.Transfers, ipuexe.HostTransfer{Kind: ipuexe.KindInput, Slice: k, Length: InputBytes, Page: 1, PageOffset: page})
		outPh.Transfers = append(outPh.Transfers, ipuexe.HostTransfer{Kind: ipuexe.KindOutput, Slice: k, Length: ResultsBytes, Page: 1, PageOffset: page})

		// Data and what the tile must make of it.
		res := d.Expected[l*ResultsBytes : (l+1)*ResultsBytes]
		put := func(i int, v uint32) { le.PutUint32(res[4*i:], v) }
		for s, o := range Offsets {
			if used[s] {
				put(WordRecv+s, uint32(((l-o)%n+n)%n))
			}
		}
		put(WordSupervisor, 0x5EE00000|k)
		for wk := 0; wk < ipu21.WorkerContexts; wk++ {
			put(WordWorkers+wk, 0x0A000000|k<<4|uint32(wk))
		}
		for i := 0; i < InputBytes/4; i++ {
			v := mix(k, uint32(i))
			le.PutUint32(xb[l*InputBytes+4*i:], v)
			put(WordInput+i, v^k)
		}
		for i := 0; i < WeightBytes/4; i++ {
			v := mix(k, uint32(1000+i))
			le.PutUint32(wb[l*WeightBytes+4*i:], v)
			put(WordWeight+i, v^k)
		}
	}
	pkg.Inputs = []ipuexe.Binding{x}
	pkg.Weights = []ipuexe.Binding{w}
	pkg.Outputs = []ipuexe.Binding{r}
	pkg.Host = ipuexe.HostExchange{
		Pages:    []ipuexe.HostPage{{Index: 0, Size: 4096}, {Index: 1, Size: uint32(n) * 4096}},
		SlotSize: 4096,
		Calls: []ipuexe.HostCall{
			{Name: "initialize", Command: 0, Phases: []ipuexe.HostPhase{initPh}},
			{Name: "run", Command: 1, Phases: []ipuexe.HostPhase{inPh, outPh}},
		},
	}
	pkg.Profile.Steps = []ipuexe.ProfileStep{{Name: "run.start", Kind: "compute"}, {Name: "run.end", Kind: "compute"}}
	d.Package = pkg
	d.Inputs["x"] = xb
	d.Weights["w"] = wb
	return d, nil
}

// Diff is one results word that differs.
type Diff struct {
	Tile     int    // logical
	Physical int    // physical id
	Word     int    // index in the tile's results
	Address  uint32 // tile address of the word
	Want     uint32
	Got      uint32
}

func (f Diff) String() string {
	return fmt.Sprintf("tile %d (physical %d) %s at %#x: expected %#08x, got %#08x",
		f.Tile, f.Physical, WordName(f.Word), f.Address, f.Want, f.Got)
}

// WordName says what results word i holds.
func WordName(i int) string {
	switch {
	case i < WordRecv+len(Offsets):
		return fmt.Sprintf("exchange word from tile l-%d", Offsets[i-WordRecv])
	case i == WordSupervisor:
		return "supervisor signature"
	case i < WordWorkers+ipu21.WorkerContexts:
		return fmt.Sprintf("worker %d signature", i-WordWorkers)
	case i < WordInput:
		return fmt.Sprintf("results word %d (must stay zero)", i)
	case i < WordWeight:
		return fmt.Sprintf("input word %d", i-WordInput)
	}
	return fmt.Sprintf("weight word %d", i-WordWeight)
}

// Check compares the "results" output with Expected and returns every
// differing word (all of them; callers cap what they print).
func (d *Diagnostic) Check(got []byte) ([]Diff, error) {
	if len(got) != len(d.Expected) {
		return nil, fmt.Errorf("diagnose: results have %d bytes, want %d", len(got), len(d.Expected))
	}
	var diffs []Diff
	le := binary.LittleEndian
	for i := 0; i+4 <= len(got); i += 4 {
		g, w := le.Uint32(got[i:]), le.Uint32(d.Expected[i:])
		if g != w {
			l, word := i/ResultsBytes, (i%ResultsBytes)/4
			diffs = append(diffs, Diff{Tile: l, Physical: d.Physical[l], Word: word,
				Address: ResultsAddr + uint32(4*word), Want: w, Got: g})
		}
	}
	return diffs, nil
}

// Report renders diffs: at most max lines, then a count of the rest.
func Report(diffs []Diff, max int) string {
	var b strings.Builder
	for i, f := range diffs {
		if i == max {
			fmt.Fprintf(&b, "... and %d more differences (%d in all)\n", len(diffs)-max, len(diffs))
			break
		}
		b.WriteString(f.String())
		b.WriteString("\n")
	}
	return b.String()
}
