package driver

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ipustack/ipustack/compiler/emit"
	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/place"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
)

// describe records into pkg what a run needs besides the images and the
// host plan (ipuexe.RunInfo), so that the run side (package launch) never
// re-plans, re-places or re-schedules: the metrics' workload name,
// assumption set and flops; the plan summary (GEMMs, grids, predicted
// cycles, the rerank's finalists); every exchange phase as scheduled into
// the package's rows (horizon, lower bound, per-tile send and receive
// windows: phaseWindows); each tile's memory map (memoryMap); what each
// sampled step is (kernel, phase, provenance: provenance); and each host
// binding's layout (layoutOf).
func describe(pkg *ipuexe.Package, pl *low.Plan, addrs []emit.Addresses, scheds []*exchange.Schedule, r Recipe, g *graph.Graph, workload string) error {
	if len(pkg.Tiles) != len(pl.Programs) || len(scheds) != len(pl.Exchanges) {
		return fmt.Errorf("BUG: describe: %d tiles and %d schedules for a plan of %d tiles and %d phases",
			len(pkg.Tiles), len(scheds), len(pl.Programs), len(pl.Exchanges))
	}
	pkg.Run = ipuexe.RunInfo{} // describing twice gives the same package
	run := &pkg.Run
	run.Workload = workload
	run.Assumptions = ipuexe.AssumptionsDefault
	if r.Conservative() {
		run.Assumptions = ipuexe.AssumptionsConservative
	}
	run.Flops = uint64(max(0, g.GemmFlops()))
	run.Plan = planSummary(pl)
	run.Plan.Finalists = finalistsSummary(r.Finalists, len(run.Plan.Gemms))

	for i, s := range scheds {
		ph := ipuexe.ExchangePhase{ID: uint32(pl.Exchanges[i].ID), Name: pl.Exchanges[i].Name,
			Horizon: uint64(s.Horizon), Bound: uint64(s.LowerBound), Schedule: "full-duplex"}
		if s.PairedSends > 0 {
			ph.Schedule = "paired"
		}
		ph.Windows = phaseWindows(s, pl, ph.Horizon)
		run.Phases = append(run.Phases, ph)
	}

	maps := map[string]uint32{}
	for l := range pl.Programs {
		m := ipuexe.MemoryMap{Ranges: memoryMap(pkg, pl, l, addrs[l])}
		key := fmt.Sprint(m.Ranges)
		idx, ok := maps[key]
		if !ok {
			run.MemoryMaps = append(run.MemoryMaps, m)
			idx = uint32(len(run.MemoryMaps))
			maps[key] = idx
		}
		pkg.Tiles[l].MemoryMap = idx
	}

	logical := map[uint32]int{}
	for l := range pl.Programs {
		logical[uint32(pl.Programs[l].Physical)] = l
	}
	details := map[ipuexe.StepDetail]uint32{}
	for i := range pkg.Profile.Tiles {
		tp := &pkg.Profile.Tiles[i]
		l, ok := logical[tp.Tile]
		if !ok {
			return fmt.Errorf("BUG: describe: profiled tile %d is not in the plan", tp.Tile)
		}
		t := &pl.Programs[l]
		steps := emit.TimedSteps(pl, t)
		if len(tp.Samples) != len(steps)+1 {
			return fmt.Errorf("BUG: describe: tile %d has %d samples for %d steps", tp.Tile, len(tp.Samples), len(steps))
		}
		prov := provenance(pl, t, steps)
		for k, st := range steps {
			d := ipuexe.StepDetail{Kernel: st.Kernel, Phase: int32(st.Phase), Operation: prov[k].op, Value: prov[k].value, Reason: prov[k].reason}
			idx, ok := details[d]
			if !ok {
				run.StepDetails = append(run.StepDetails, d)
				idx = uint32(len(run.StepDetails))
				details[d] = idx
			}
			tp.Samples[k+1].Detail = idx
		}
	}

	for _, list := range []struct {
		from []low.HostBinding
		to   []ipuexe.Binding
	}{{pl.Inputs, pkg.Inputs}, {pl.Weights, pkg.Weights}, {pl.Outputs, pkg.Outputs}} {
		for i := range list.from {
			var err error
			if list.to[i].Layout, err = layoutOf(pl, &list.from[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// phaseWindows is one window per tile with traffic in schedule s, in
// logical tile order: the span of its sends (first send's first event to
// the last send's last) with the bytes they carry, and the span of its
// receive windows (the events its incoming mux is set to a sender) with
// the bytes received, cycles from the phase start
// (exchange.Schedule.Windows). A paired send's borrowed partner lane is
// not a send of the partner: it carries no bytes of the partner's and is
// left out. Windows are clipped to the horizon (they never exceed it).
func phaseWindows(s *exchange.Schedule, pl *low.Plan, horizon uint64) []ipuexe.PhaseWindow {
	logical := map[int]int{}
	for l := range pl.Programs {
		logical[pl.Programs[l].Physical] = l
	}
	byTile := map[int]*ipuexe.PhaseWindow{}
	var tiles []int
	clip := func(c int) uint32 { return uint32(min(uint64(max(0, c)), horizon)) }
	for _, u := range s.Windows() {
		if u.Kind == exchange.UsePartnerLane {
			continue
		}
		l, ok := logical[u.Tile]
		if !ok {
			continue
		}
		w := byTile[l]
		if w == nil {
			w = &ipuexe.PhaseWindow{Tile: uint32(u.Tile)}
			byTile[l] = w
			tiles = append(tiles, l)
		}
		a, e := clip(u.Start), clip(u.End)
		switch u.Kind {
		case exchange.UseSend:
			if w.SendBytes == 0 && w.SendEnd == 0 {
				w.SendStart = a
			}
			w.SendStart, w.SendEnd = min(w.SendStart, a), max(w.SendEnd, e)
			w.SendBytes += uint32(u.Bytes)
		case exchange.UseReceive:
			if w.RecvBytes == 0 && w.RecvEnd == 0 {
				w.RecvStart = a
			}
			w.RecvStart, w.RecvEnd = min(w.RecvStart, a), max(w.RecvEnd, e)
			w.RecvBytes += uint32(u.Bytes)
		}
	}
	sort.Ints(tiles)
	out := make([]ipuexe.PhaseWindow, len(tiles))
	for i, l := range tiles {
		out[i] = *byTile[l]
	}
	return out
}

type stepProv struct{ op, value, reason string }

// provenance names the graph operation, value and reason of each step of
// an MLP tile (the op sequence of low's chunkOps and streamOps); other
// problems get the output node as operation.
func provenance(pl *low.Plan, t *low.TileProgram, steps []emit.TimedStep) []stepProv {
	out := make([]stepProv, len(steps))
	p, g := pl.Problem, &pl.Grid
	if pl.Mid != nil {
		// Plans lowered from compiler/mid carry their provenance.
		for k, st := range steps {
			switch op := st.Op; {
			case op == nil:
			case op.Kind == low.OpSample:
				out[k] = stepProv{reason: "end of run: sync 2 (the last workers done), then the run.end sample"}
			case op.Kind == low.OpExchange:
				name := ""
				if op.Phase >= 0 && op.Phase < len(pl.Exchanges) {
					name = pl.Exchanges[op.Phase].Name
				}
				out[k] = stepProv{op.Node, op.Node, "exchange phase " + name + ": " + op.Why}
			default:
				out[k] = stepProv{op.Node, op.Node, op.Why}
			}
		}
		return out
	}
	if p.Kind != low.KindMLP {
		for k, st := range steps {
			if st.Kind == "compute" || st.Kind == "exchange" {
				out[k] = stepProv{op: p.Output, value: p.Output, reason: st.Name}
			}
		}
		return out
	}
	node := func(b int, suffix string) string {
		if b < len(p.Blocks) {
			return strings.TrimSuffix(p.Blocks[b].W1, "fc1.weight") + suffix
		}
		return fmt.Sprintf("block%d.%s", b, suffix)
	}
	q := max(1, g.Q)
	chunks := 0 // chunk starts seen
	where := fmt.Sprintf("tile (%d,%d)", t.Row, t.Col)
	for k, st := range steps {
		op := st.Op
		blk := max(0, chunks-1) / q
		chunk := max(0, chunks-1) % q
		at := fmt.Sprintf("%s chunk %d", where, chunk)
		switch {
		case op == nil:
		case op.Kind == low.OpSample:
			out[k] = stepProv{reason: "end of run: sync 2 (the last workers done), then the run.end sample"}
		case op.Kind == low.OpLoop:
			out[k] = stepProv{op: "", value: "", reason: fmt.Sprintf("runtime loop of %d iterations (blocks or row chunks), sampled as one step", op.Count)}
		case op.Kind == low.OpExchange:
			name := ""
			if op.Phase >= 0 && op.Phase < len(pl.Exchanges) {
				name = pl.Exchanges[op.Phase].Name
			}
			switch name {
			case "gather rows":
				out[k] = stepProv{node(blk, "fc1"), node(blk, "fc1") + " input rows", "gather of the row chunk's input panel across the grid row"}
			case "reduce-scatter":
				out[k] = stepProv{node(blk, "fc2"), node(blk, "fc2") + " partials", "reduce-scatter of K-split partials"}
			case "streamed weights":
				b := chunks / q
				out[k] = stepProv{node(b, "fc1"), node(b, "fc1.weight"), "streamed weights of the block"}
			default:
				out[k] = stepProv{"", name, "exchange phase " + name}
			}
		case op.Kind == low.OpKernel:
			dst, src := argBuf(op, "$m2"), argBuf(op, "$m3")
			switch op.Kernel {
			case "copy_f16":
				switch {
				case src == "xy" && (dst == "xg" || (dst == "a" && g.C <= 1)):
					chunks++
					blk, chunk = (chunks-1)/q, (chunks-1)%q
					out[k] = stepProv{node(blk, "fc1"), node(blk, "fc1") + " input rows", fmt.Sprintf("%s chunk %d: stage the block input", where, chunk)}
				case src == "xy":
					out[k] = stepProv{node(blk, "fc1"), node(blk, "fc1") + " input rows", at + ": own piece of the gathered panel"}
				case dst == "red":
					out[k] = stepProv{node(blk, "fc2"), node(blk, "fc2") + " partials", at + ": own partial into the reduction buffer"}
				case dst == "xy":
					out[k] = stepProv{node(blk, "fc2"), node(blk, "fc2"), at + ": block output"}
				case dst == "w" || dst == "wst":
					b := chunks / q
					out[k] = stepProv{node(b, "fc1"), node(b, "fc1.weight"), "stage streamed weight shares"}
				default:
					out[k] = stepProv{"", dst, at + ": copy"}
				}
			case kernels.GemmF16, kernels.GemmF16Drain:
				if dst == "c" {
					out[k] = stepProv{node(blk, "fc1"), node(blk, "fc1"), fmt.Sprintf("%s: GEMM block (i=%d j=%d)", at, t.Row, t.Col)}
				} else {
					r := fmt.Sprintf("%s: GEMM block (i=%d j=%d)", at, t.Row, t.Col)
					if g.C > 1 {
						r += fmt.Sprintf(" K-split part %d of %d", t.Col+1, g.C)
					}
					out[k] = stepProv{node(blk, "fc2"), node(blk, "fc2"), r}
				}
			case "add_bias_f16":
				if dst == "c" {
					out[k] = stepProv{node(blk, "fc1.add"), node(blk, "fc1.add"), at + ": bias"}
				} else {
					out[k] = stepProv{node(blk, "fc2.add"), node(blk, "fc2.add"), at + ": bias"}
				}
			case "gelu_f16":
				out[k] = stepProv{node(blk, "gelu"), node(blk, "gelu"), at + ": activation"}
			case "reduce_add_f16":
				out[k] = stepProv{node(blk, "fc2"), node(blk, "fc2"), at + ": sum of the K-split partials"}
			default:
				out[k] = stepProv{"", "", at + ": " + op.Kernel}
			}
		}
	}
	return out
}

func argBuf(op *low.Op, reg string) string {
	for _, a := range op.Args {
		if a.Reg == reg {
			return a.Ref.Buf
		}
	}
	return ""
}

// memoryMap is tile l's memory map: code, host window, exchange rows,
// runtime state, the placed buffers by kind and the free ranges of the
// data regions.
func memoryMap(pkg *ipuexe.Package, pl *low.Plan, l int, a emit.Addresses) []ipuexe.MemoryRange {
	var segs []ipuexe.MemoryRange
	var codeEnd uint32
	var rows uint32
	for _, s := range pkg.Tiles[l].Segments {
		switch {
		case s.Address >= place.CodeBase && s.Address < place.CodeLimit:
			codeEnd = max(codeEnd, s.Address+s.MemSize)
		case s.Address == place.RowBase:
			rows = s.MemSize
		}
	}
	if codeEnd > place.CodeBase {
		segs = append(segs, ipuexe.MemoryRange{Kind: "code", Address: place.CodeBase, Size: codeEnd - place.CodeBase, Name: "runtime and kernels"})
	}
	segs = append(segs, ipuexe.MemoryRange{Kind: "activations", Address: ipu21.HostApertureBase,
		Size: ipu21.HostWriteEnd - ipu21.HostApertureBase, Name: "host write window"})
	if rows > 0 {
		segs = append(segs, ipuexe.MemoryRange{Kind: "exchange-rows", Address: place.RowBase, Size: rows, Name: "exchange rows"})
	}
	segs = append(segs, ipuexe.MemoryRange{Kind: "code", Address: ipu21.RuntimeStateBase,
		Size: ipu21.RuntimeStateEnd - ipu21.RuntimeStateBase, Name: "runtime state (samples, row table, loops, worker areas)"})
	t := &pl.Programs[l]
	bufs := append([]low.Buffer(nil), t.Buffers...)
	bufs = append(bufs, low.Buffer{Name: emit.SampleBuf, Bytes: 4 * emit.SampleWords(pl, t)})
	var data []ipuexe.MemoryRange
	for _, bf := range bufs {
		addr, ok := a[bf.Name]
		if !ok {
			continue
		}
		s := ipuexe.MemoryRange{Address: addr, Size: uint32(bf.Bytes), Name: bf.Name}
		mid := pl.Mid != nil && len(bf.Name) > 1
		switch {
		case bf.Name == "w" || bf.Name == "ws" || bf.Name == "wst" || bf.Name == "bias", mid && bf.Name[0] == 'W':
			s.Kind = "weights"
		case bf.Name == "red", mid && bf.Name[0] == 'R':
			s.Kind = "partials"
		case bf.Name == emit.SampleBuf:
			s.Kind, s.Name = "code", "profile samples"
		default:
			s.Kind = "activations"
		}
		data = append(data, s)
	}
	sort.SliceStable(data, func(i, j int) bool { return data[i].Address < data[j].Address })
	// Buffers live at different times may share memory (low.Buffer.Live):
	// the map shows each shared range once, named after all its users.
	merged := data[:0]
	for _, s := range data {
		if n := len(merged); n > 0 && s.Address < merged[n-1].Address+merged[n-1].Size {
			m := &merged[n-1]
			m.Name += "/" + s.Name
			if m.Kind != s.Kind {
				m.Kind = "activations"
			}
			m.Size = max(m.Size, s.Address+s.Size-m.Address)
			continue
		}
		merged = append(merged, s)
	}
	data = merged
	// Free ranges of the data regions.
	for _, r := range [][2]uint32{{place.DataBase, place.Region0End}, {ipu21.Region1Base, place.Region1End}} {
		at := r[0]
		for _, s := range data {
			if s.Address+s.Size <= r[0] || s.Address >= r[1] {
				continue
			}
			if s.Address > at {
				segs = append(segs, ipuexe.MemoryRange{Kind: "free", Address: at, Size: s.Address - at, Name: "free"})
			}
			at = max(at, s.Address+s.Size)
		}
		if at < r[1] {
			segs = append(segs, ipuexe.MemoryRange{Kind: "free", Address: at, Size: r[1] - at, Name: "free"})
		}
	}
	return append(segs, data...)
}

// planSummary is the plan's GEMMs, grid and predicted cycles.
func planSummary(pl *low.Plan) ipuexe.PlanSummary {
	p, g := pl.Problem, &pl.Grid
	sum := ipuexe.PlanSummary{PredictedCycles: uint64(max(0, pl.Estimate.Total))}
	if pl.Mid != nil {
		for _, gp := range pl.Mid.Gemms {
			sum.Gemms = append(sum.Gemms, planGemm(gp.Node.Name, gp.M, gp.K, gp.N,
				planGrid(gp.Rows.Count, gp.Cols.Count, gp.Inner.Count),
				gp.ActiveTiles(), gp.Kernel))
		}
		return sum
	}
	if p.Kind != low.KindMLP {
		sum.Gemms = append(sum.Gemms, planGemm(p.Output, p.M, p.K, p.N,
			planGrid(g.R, g.C, 1), g.R*g.C, kernels.GemmF16For(pl.Conservative)))
		return sum
	}
	for b, blk := range p.Blocks {
		name := strings.TrimSuffix(blk.W1, ".weight")
		if name == blk.W1 {
			name = fmt.Sprintf("block%d.fc1", b)
		}
		fc2 := strings.TrimSuffix(name, "fc1") + "fc2"
		sum.Gemms = append(sum.Gemms,
			planGemm(name, p.M, p.K, p.N, planGrid(g.R, g.C, 1), g.R*g.C, kernels.GemmF16For(pl.Conservative)),
			planGemm(fc2, p.M, p.N, p.K, planGrid(g.R, 1, g.C), g.R*g.C, kernels.GemmF16For(pl.Conservative)))
	}
	return sum
}

// finalistsSummary turns the rerank's finalists into the profile's: a mid
// plan's GEMMs have their own grids; every GEMM of a v0 plan runs on the
// plan's R x C grid (an MLP's second GEMM as R row blocks with a C-way
// K split).
func finalistsSummary(fins []Finalist, gemms int) []ipuexe.PlanFinalist {
	out := make([]ipuexe.PlanFinalist, 0, len(fins))
	for _, f := range fins {
		grids := make([]ipuexe.PlanGrid, gemms)
		for i := range grids {
			switch {
			case f.Plan.Mid != nil && i < len(f.Plan.Mid):
				m := f.Plan.Mid[i]
				grids[i] = planGrid(m.Rows, m.Cols, m.Inner)
			case f.Plan.Mid != nil:
			case gemms > 1 && i%2 == 1:
				grids[i] = planGrid(f.Plan.R, 1, f.Plan.C)
			default:
				grids[i] = planGrid(f.Plan.R, f.Plan.C, 1)
			}
		}
		out = append(out, ipuexe.PlanFinalist{Rank: uint32(max(0, f.Rank)), MidCycles: uint64(max(0, f.MidCycles)),
			LowCycles: uint64(max(0, f.LowCycles)), Grids: grids, Chosen: f.Chosen})
	}
	return out
}

func planGrid(rows, cols, inner int) ipuexe.PlanGrid {
	return ipuexe.PlanGrid{Rows: uint32(rows), Cols: uint32(cols), Inner: uint32(inner)}
}

func planGemm(name string, m, k, n int, g ipuexe.PlanGrid, tiles int, kernel string) ipuexe.PlanGemm {
	return ipuexe.PlanGemm{Name: name, M: uint32(m), K: uint32(k), N: uint32(n), Grid: g, Tiles: uint32(tiles), Kernel: kernel}
}
