// Command calibrate runs the reference stack's (osmarks/ipu-stack) kernels
// on the emulator at the shapes measured on a real C600 and prints, per
// figure, the measured cycles, the emulated cycles and their ratio.
//
//	go run ./tools/calibrate [-I DIR]... DIR
//
// DIR holds the reference's kernel sources (device/*.S of the revision the
// user wants to check; ipustack commits none of them). -I adds include
// directories (the SDK's arch/gc_tile_defines.h). The measured figures and
// shapes are facts from ../shared/reference/IPU21.md ("Hardware measurements
// of the reference stack's own kernels"); the table is in figures.go.
//
// Each figure is one call of a kernel entry on a fresh emulated tile: the
// source is assembled with the figure's -D values (the ones the reference
// planner passes for that shape), linked with a harness whose supervisor
// does `call $m10, ENTRY; sync 3`, the supervisor registers of the
// reference's calling convention are set, the operands are filled with
// seeded small f16 values, and the cycles from the call to the return are
// counted (the convention of kernels/bench and `ipu tile run`).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/x448/float16"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels/bench"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type includes []string

func (i *includes) String() string     { return strings.Join(*i, ",") }
func (i *includes) Set(v string) error { *i = append(*i, v); return nil }

func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var inc includes
	flags.Var(&inc, "I", "include directory for #include (repeatable)")
	only := flags.String("only", "", "run only the figures whose name contains this")
	flags.Usage = func() {
		fmt.Fprintln(stderr, "usage: calibrate [-I DIR]... [-only NAME] DIR")
		flags.PrintDefaults()
	}
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() != 1 {
		flags.Usage()
		return 2
	}
	dir := flags.Arg(0)
	rows, err := calibrate(dir, inc, *only, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "calibrate: %v\n", err)
		return 1
	}
	printTable(stdout, rows)
	return 0
}

// row is one figure's outcome.
type row struct {
	fig      figure
	emulated uint64
}

func (r row) ratio() float64 { return float64(r.emulated) / float64(r.fig.measured) }

// calibrate runs every figure (matching only) whose source is in dir. A
// figure whose source is absent is skipped with a note on notes, so a
// directory holding only some of the kernels still calibrates those; no
// figure at all is an error naming what is missing.
func calibrate(dir string, inc []string, only string, notes io.Writer) ([]row, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("reference directory: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("reference directory %s is not a directory", dir)
	}
	var out []row
	var missing []error
	absent := map[string]bool{}
	objs := map[string]*elf.Object{}
	for _, f := range figures {
		if only != "" && !strings.Contains(f.name, only) {
			continue
		}
		path := filepath.Join(dir, f.source)
		if absent[path] {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			e := fmt.Errorf("%s: %w (fetch device/%s of osmarks/ipu-stack into %s)", path, err, f.source, dir)
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("figure %s: %w", f.name, e)
			}
			absent[path] = true
			missing = append(missing, e)
			fmt.Fprintf(notes, "calibrate: skipped the figures of %s: not in %s\n", f.source, dir)
			continue
		}
		key := f.source + "\x00" + definesKey(f.defines)
		obj := objs[key]
		if obj == nil {
			src, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("figure %s: %w", f.name, err)
			}
			obj, err = asm.Assemble(path, src, asm.Options{Defines: f.defines, IncludeDirs: inc})
			if err != nil {
				return nil, fmt.Errorf("figure %s: assemble %s: %w", f.name, path, err)
			}
			objs[key] = obj
		}
		c, _, err := runCall(obj, f)
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", f.name, err)
		}
		out = append(out, row{fig: f, emulated: c})
	}
	if len(out) == 0 {
		if len(missing) > 0 {
			return nil, fmt.Errorf("no figure to run: %w", errors.Join(missing...))
		}
		return nil, errors.New("no figure matches -only " + only)
	}
	return out, nil
}

func definesKey(d map[string]string) string {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k+"="+d[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

// runCall runs one figure's call and returns its cycles, call to return,
// and the tile after it.
func runCall(obj *elf.Object, f figure) (uint64, *emu.Tile, error) {
	stub, err := bench.Harness(f.entry)
	if err != nil {
		return 0, nil, err
	}
	img, err := elf.Link([]*elf.Object{stub, obj}, elf.LinkOptions{Entry: bench.HarnessEntry})
	if err != nil {
		return 0, nil, fmt.Errorf("link entry %s: %w", f.entry, err)
	}
	t := emu.NewTile(0)
	for _, seg := range img.Segments {
		if err := t.Write(seg.Addr, seg.Data); err != nil {
			return 0, nil, fmt.Errorf("load: %w", err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, fl := range f.fills {
		buf := make([]byte, fl.bytes&^1)
		for i := 0; i+1 < len(buf); i += 2 {
			h := float16.Fromfloat32(float32(rng.Float64()*0.5 - 0.25)).Bits()
			buf[i], buf[i+1] = byte(h), byte(h>>8)
		}
		if err := t.Write(fl.addr, buf); err != nil {
			return 0, nil, fmt.Errorf("fill 0x%x:%d: %w", fl.addr, fl.bytes, err)
		}
	}
	for r, v := range f.regs {
		t.Sup.M[r] = v
	}
	t.Start(img.Entry)
	res, err := t.Run(1 << 32)
	if err != nil {
		return 0, nil, fmt.Errorf("run: %w", err)
	}
	if res.Reason != emu.StopSync || res.Zone != int(ipu21.SyncInternal) {
		return 0, nil, fmt.Errorf("entry %s did not return to the harness: %s", f.entry, res)
	}
	return bench.CallCycles(res), t, nil
}

// printTable prints one line per figure, one summary line per measurement
// set (in figure order), and the overall summary last.
func printTable(w io.Writer, rows []row) {
	fmt.Fprintf(w, "%-28s %10s %10s %7s\n", "figure", "measured", "emulated", "ratio")
	worst := 0.0
	var sets []string
	setWorst := map[string]float64{}
	setCount := map[string]int{}
	for _, r := range rows {
		fmt.Fprintf(w, "%-28s %10d %10d %7.4f\n", r.fig.name, r.fig.measured, r.emulated, r.ratio())
		d := math.Abs(r.ratio() - 1)
		worst = math.Max(worst, d)
		if setCount[r.fig.set] == 0 {
			sets = append(sets, r.fig.set)
		}
		setCount[r.fig.set]++
		setWorst[r.fig.set] = math.Max(setWorst[r.fig.set], d)
	}
	for _, s := range sets {
		fmt.Fprintf(w, "set %s: figures=%d worstDeviation=%.2f%%\n", s, setCount[s], 100*setWorst[s])
	}
	fmt.Fprintf(w, "figures=%d worstDeviation=%.2f%%\n", len(rows), 100*worst)
}
