package driver

import (
	"fmt"
	"sort"

	"github.com/ipustack/ipustack/compiler/emit"
	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
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
		steps := emit.TimedSteps(&pl.Program, t)
		if len(tp.Samples) != len(steps)+1 {
			return fmt.Errorf("BUG: describe: tile %d has %d samples for %d steps", tp.Tile, len(tp.Samples), len(steps))
		}
		prov := provenance(pl, steps)
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
		from []tile.HostBinding
		to   []ipuexe.Binding
	}{{pl.Inputs, pkg.Inputs}, {pl.Weights, pkg.Weights}, {pl.Outputs, pkg.Outputs}} {
		for i := range list.from {
			list.to[i].Layout = layoutOf(&list.from[i])
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
// a tile (the provenance the lowering gives every op: tile.Op.Node, Why;
// in a looped plan's body, the node of the step's own block,
// low.Plan.BlockNode).
func provenance(pl *low.Plan, steps []emit.TimedStep) []stepProv {
	out := make([]stepProv, len(steps))
	for k, st := range steps {
		switch op := st.Op; {
		case op == nil:
		case op.Kind == tile.OpSample:
			out[k] = stepProv{reason: "end of run: sync 2 (the last workers done), then the run.end sample"}
		case op.Kind == tile.OpExchange:
			name := ""
			if op.Phase >= 0 && op.Phase < len(pl.Exchanges) {
				name = pl.Exchanges[op.Phase].Name
			}
			node := pl.BlockNode(op.Node, st.Iter)
			out[k] = stepProv{node, node, "exchange phase " + name + ": " + op.Why}
		default:
			node := pl.BlockNode(op.Node, st.Iter)
			out[k] = stepProv{node, node, op.Why}
		}
	}
	return out
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
		case s.Address >= tile.CodeBase && s.Address < tile.CodeLimit:
			codeEnd = max(codeEnd, s.Address+s.MemSize)
		case s.Address == tile.RowBase:
			rows = s.MemSize
		}
	}
	if codeEnd > tile.CodeBase {
		segs = append(segs, ipuexe.MemoryRange{Kind: "code", Address: tile.CodeBase, Size: codeEnd - tile.CodeBase, Name: "runtime and kernels"})
	}
	segs = append(segs, ipuexe.MemoryRange{Kind: "activations", Address: ipu21.HostApertureBase,
		Size: ipu21.HostWriteEnd - ipu21.HostApertureBase, Name: "host write window"})
	if rows > 0 {
		segs = append(segs, ipuexe.MemoryRange{Kind: "exchange-rows", Address: tile.RowBase, Size: rows, Name: "exchange rows"})
	}
	segs = append(segs, ipuexe.MemoryRange{Kind: "code", Address: ipu21.RuntimeStateBase,
		Size: ipu21.RuntimeStateEnd - ipu21.RuntimeStateBase, Name: "runtime state (samples, row table, loops, worker areas)"})
	t := &pl.Programs[l]
	bufs := append([]tile.Buffer(nil), t.Buffers...)
	bufs = append(bufs, tile.Buffer{Name: emit.SampleBuf, Bytes: 4 * emit.SampleWords(&pl.Program, t)})
	var data []ipuexe.MemoryRange
	for _, bf := range bufs {
		addr, ok := a[bf.Name]
		if !ok {
			continue
		}
		s := ipuexe.MemoryRange{Address: addr, Size: uint32(bf.Bytes), Name: bf.Name}
		// The lowering's buffer names (compiler/low frommid.go): W<o> a
		// GEMM's weights, R<o> the parts of a K-split GEMM's reduction.
		switch {
		case len(bf.Name) > 1 && bf.Name[0] == 'W':
			s.Kind = "weights"
		case len(bf.Name) > 1 && bf.Name[0] == 'R':
			s.Kind = "partials"
		case bf.Name == emit.SampleBuf:
			s.Kind, s.Name = "code", "profile samples"
		default:
			s.Kind = "activations"
		}
		data = append(data, s)
	}
	sort.SliceStable(data, func(i, j int) bool { return data[i].Address < data[j].Address })
	// Buffers live at different times may share memory (tile.Buffer.Live):
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
	for _, r := range [][2]uint32{{tile.DataBase, tile.Region0End}, {ipu21.Region1Base, tile.Region1End}} {
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

// planSummary is the plan's GEMMs, grids and predicted cycles.
func planSummary(pl *low.Plan) ipuexe.PlanSummary {
	sum := ipuexe.PlanSummary{PredictedCycles: uint64(max(0, pl.Estimate.Total))}
	for _, gp := range pl.Mid.Gemms {
		sum.Gemms = append(sum.Gemms, planGemm(gp.Node.Name, gp.M, gp.K, gp.N,
			planGrid(gp.Rows.Count, gp.Cols.Count, gp.Inner.Count),
			gp.ActiveTiles(), gp.Kernel))
	}
	return sum
}

// finalistsSummary turns the rerank's finalists into the profile's: each
// GEMM's grid (a looped plan's finalists list one block's grids: the
// GEMMs of the other blocks get none).
func finalistsSummary(fins []Finalist, gemms int) []ipuexe.PlanFinalist {
	out := make([]ipuexe.PlanFinalist, 0, len(fins))
	for _, f := range fins {
		grids := make([]ipuexe.PlanGrid, gemms)
		for i := range grids {
			if i < len(f.Plan.Mid) {
				m := f.Plan.Mid[i]
				grids[i] = planGrid(m.Rows, m.Cols, m.Inner)
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
