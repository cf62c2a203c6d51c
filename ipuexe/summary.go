package ipuexe

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// Summary describes p in a few lines of text for `ipu inspect`: tiles and
// bytes by segment kind, bindings, host calls, configuration writes,
// profile samples and symbols. It works on any decoded package, valid or
// not, and its output depends only on p, so it can be compared against a
// golden file.
func Summary(p *Package) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package: target %s, compiler %q, format %d\n", p.Target, p.CompilerVersion, FormatVersion)
	if p.Recipe != "" {
		fmt.Fprintf(&b, "recipe: %s\n", p.Recipe)
	}
	fmt.Fprintf(&b, "tile memory: %s (%d bytes)\n", span(p.MemoryBase, uint64(p.MemorySize)), p.MemorySize)

	// Tiles and segment bytes.
	type flagStats struct{ segments, loaded, zero uint64 }
	byFlags := map[Flags]*flagStats{}
	var code, data, zero, nsegs uint64
	var maxFoot uint64
	maxTile := uint32(0)
	ids := make([]uint32, 0, len(p.Tiles))
	for _, t := range p.Tiles {
		ids = append(ids, t.Physical)
		var foot uint64
		for _, s := range t.Segments {
			nsegs++
			loaded := uint64(len(s.Data))
			z := uint64(0)
			if uint64(s.MemSize) > loaded {
				z = uint64(s.MemSize) - loaded
			}
			if s.Flags&FlagExec != 0 {
				code += loaded
			} else {
				data += loaded
			}
			zero += z
			fs := byFlags[s.Flags]
			if fs == nil {
				fs = &flagStats{}
				byFlags[s.Flags] = fs
			}
			fs.segments++
			fs.loaded += loaded
			fs.zero += z
			foot += uint64(s.MemSize)
		}
		if foot > maxFoot {
			maxFoot, maxTile = foot, t.Physical
		}
	}
	slices.Sort(ids)
	fmt.Fprintf(&b, "tiles: %d%s, %d segments\n", len(p.Tiles), idRange(ids), nsegs)
	if len(p.Tiles) > 0 {
		fmt.Fprintf(&b, "largest tile: tile %d, %d bytes of segments\n", maxTile, maxFoot)
	}
	fmt.Fprintf(&b, "bytes: code %d, data %d, zero-fill %d\n", code, data, zero)
	if len(byFlags) > 0 {
		flags := make([]Flags, 0, len(byFlags))
		for f := range byFlags {
			flags = append(flags, f)
		}
		slices.Sort(flags)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  flags\tsegments\tloaded\tzero-fill\t")
		for _, f := range flags {
			fs := byFlags[f]
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t\n", f, fs.segments, fs.loaded, fs.zero)
		}
		tw.Flush()
	}

	for _, k := range []BindingKind{KindInput, KindOutput, KindWeight} {
		bs := p.bindings(k)
		fmt.Fprintf(&b, "%s: %d\n", k, len(bs))
		for _, bd := range bs {
			size := "?"
			if n, ok := bd.Bytes(); ok {
				size = fmt.Sprint(n)
			}
			tiles := map[uint32]bool{}
			for _, s := range bd.Slices {
				tiles[s.Tile] = true
			}
			ts := ""
			if len(bd.TensorShape) > 0 {
				ts = fmt.Sprintf(" (tensor %v)", bd.TensorShape)
			}
			lay := ""
			if len(bd.Layout) > 0 {
				orders := map[Order]int{}
				for _, blk := range bd.Layout {
					orders[blk.Order]++
				}
				var os []string
				for o := RowMajor; o < numOrders+1; o++ {
					if n := orders[o]; n > 0 {
						os = append(os, fmt.Sprintf("%d %s", n, o))
					}
				}
				lay = ", layout " + strings.Join(os, " ")
			}
			fmt.Fprintf(&b, "  %s %s %v%s: %s bytes, %d slices on %d tiles%s\n",
				bd.Name, bd.DType, bd.Shape, ts, size, len(bd.Slices), len(tiles), lay)
		}
	}

	h := &p.Host
	fmt.Fprintf(&b, "host: %d pages, slot %d bytes, command word page %d offset %#x\n",
		len(h.Pages), h.SlotSize, h.CommandPage, h.CommandOffset)
	for _, c := range h.Calls {
		var in, out, n uint64
		for _, ph := range c.Phases {
			for _, tr := range ph.Transfers {
				n++
				if tr.Kind == KindOutput {
					out += uint64(tr.Length)
				} else {
					in += uint64(tr.Length)
				}
			}
		}
		fmt.Fprintf(&b, "  call %q command %d: %d phases, %d transfers, %d bytes to device, %d bytes to host\n",
			c.Name, c.Command, len(c.Phases), n, in, out)
	}

	fmt.Fprintf(&b, "config writes: %d\n", len(p.Config))
	var samples int
	for _, t := range p.Profile.Tiles {
		samples += len(t.Samples)
	}
	fmt.Fprintf(&b, "profile: %d steps, %d tiles, %d samples\n", len(p.Profile.Steps), len(p.Profile.Tiles), samples)
	var tileSyms int
	for _, t := range p.Tiles {
		tileSyms += len(t.Symbols)
	}
	fmt.Fprintf(&b, "symbols: %d shared, %d per-tile\n", len(p.Symbols), tileSyms)
	if r := &p.Run; r.Workload != "" {
		fmt.Fprintf(&b, "run: workload %s, assumptions %s, %d flops, predicted %d cycles\n", r.Workload, r.Assumptions, r.Flops, r.Plan.PredictedCycles)
		for _, g := range r.Plan.Gemms {
			fmt.Fprintf(&b, "  gemm %s %dx%dx%d on %dx%dx%d (%d tiles, %s)\n", g.Name, g.M, g.K, g.N, g.Grid.Rows, g.Grid.Cols, g.Grid.Inner, g.Tiles, g.Kernel)
		}
		for _, ph := range r.Phases {
			fmt.Fprintf(&b, "  exchange phase %d %q: horizon %d, bound %d, %s, %d tiles\n", ph.ID, ph.Name, ph.Horizon, ph.Bound, ph.Schedule, len(ph.Windows))
		}
		fmt.Fprintf(&b, "  %d finalists, %d memory maps, %d step details\n", len(r.Plan.Finalists), len(r.MemoryMaps), len(r.StepDetails))
	}
	return b.String()
}

// idRange gives a sorted id list as " (physical 0..1471)" or, when it is
// not contiguous, " (physical 0..1471, not contiguous)".
func idRange(ids []uint32) string {
	if len(ids) == 0 {
		return ""
	}
	lo, hi := ids[0], ids[len(ids)-1]
	if uint64(hi-lo)+1 == uint64(len(ids)) {
		return fmt.Sprintf(" (physical %d..%d)", lo, hi)
	}
	return fmt.Sprintf(" (physical %d..%d, not contiguous)", lo, hi)
}
