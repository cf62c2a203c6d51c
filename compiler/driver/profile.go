package driver

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/ipustack/ipustack/compiler/emit"
	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/place"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/profile"
	"github.com/ipustack/ipustack/runtime"
)

// Profile builds the run profile of a package built from pl from the
// samples a run read (docs/PROFILE.md): per active tile one step per
// sample of its "run" call (emit.TimedSteps), cycles from the earliest
// tile's run.start; the exchange phases run in that span with their
// start (the earliest tile's row start), the scheduler's horizon and lower
// bound (the schedules are rebuilt from the plan, as the build made them)
// and per tile its send and receive windows (phaseWindows); per tile the
// memory map (compiler/place); and
// the plan summary (GEMMs, grid, predicted cycles; no finalists: the v0
// planner keeps none).
func Profile(pkg *ipuexe.Package, pl *low.Plan, res *runtime.Result, workload string) (*profile.Profile, error) {
	if len(res.Samples) == 0 {
		return nil, fmt.Errorf("profile: the run read no samples (the package has no profile plan)")
	}
	if len(pkg.Tiles) != len(pl.Programs) {
		return nil, fmt.Errorf("profile: package has %d tiles, the plan %d", len(pkg.Tiles), len(pl.Programs))
	}
	tg := ipu21.IPU21()
	b := profile.NewBuilder(workload, pkg.Target, len(pl.Programs), uint64(tg.ClockHz))
	logical := map[int]int{}
	for l := range pl.Programs {
		logical[pl.Programs[l].Physical] = l
	}
	// The time origin: the earliest run.start.
	var origin uint32
	first := true
	for _, tp := range pkg.Profile.Tiles {
		w := res.Samples[int(tp.Tile)]
		if len(w) == 0 {
			continue
		}
		if first || int32(w[0]-origin) < 0 {
			origin, first = w[0], false
		}
	}
	phaseStart := map[int]uint64{}
	var end uint64
	for _, tp := range pkg.Profile.Tiles {
		w := res.Samples[int(tp.Tile)]
		l, ok := logical[int(tp.Tile)]
		if !ok || len(w) == 0 {
			continue
		}
		t := &pl.Programs[l]
		steps := emit.TimedSteps(pl, t)
		if len(steps) != len(w)-1 {
			return nil, fmt.Errorf("profile: tile %d has %d samples for %d steps", tp.Tile, len(w), len(steps)+1)
		}
		prov := provenance(pl, t, steps)
		at := uint64(w[0] - origin)
		for k, st := range steps {
			e := uint64(w[k+1] - origin)
			if e < at {
				return nil, fmt.Errorf("profile: tile %d step %d (%s) ends at %d before it starts at %d", tp.Tile, k, st.Name, e, at)
			}
			s := profile.Step{Start: at, End: e, Kernel: st.Kernel, Phase: profile.NoPhase,
				Operation: prov[k].op, Provenance: profile.Provenance{Value: prov[k].value, Reason: prov[k].reason}}
			switch st.Kind {
			case "exchange":
				s.Kind, s.Phase = profile.Exchange, st.Phase
				if ps, ok := phaseStart[st.Phase]; !ok || at < ps {
					phaseStart[st.Phase] = at
				}
			case "sync":
				s.Kind = profile.Sync
			case "host":
				s.Kind = profile.Host
			default:
				s.Kind = profile.Compute
			}
			b.AddStep(l, s)
			at = e
		}
		end = max(end, at)
	}
	b.SetCycles(end)
	b.SetSamples(uint64(res.SampleWords))

	// Exchange phases: horizon and bound from the schedules.
	addrs, err := emit.PlaceAll(pl)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	scheds, err := emit.Exchanges(pl, addrs, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	for i, s := range scheds {
		ph := profile.Phase{ID: pl.Exchanges[i].ID, Name: pl.Exchanges[i].Name, Horizon: uint64(s.Horizon), Bound: uint64(s.LowerBound)}
		switch {
		case s.PairedSends > 0:
			ph.Schedule = "paired"
		default:
			ph.Schedule = "full-duplex"
		}
		// Phases not run in the profiled span (the initialize call's
		// weights broadcast; phases inside loops sampled as one step) are
		// left out: they have no start in it.
		st, ok := phaseStart[ph.ID]
		if !ok {
			continue
		}
		ph.Start = st
		if st+ph.Horizon > end { // cannot happen: the row ran within the span
			ph.Horizon, ph.Bound = end-st, min(ph.Bound, end-st)
		}
		ph.Windows = phaseWindows(s, logical, ph.Horizon)
		b.AddExchangePhase(ph)
	}

	for l := range pl.Programs {
		b.SetMemoryMap(l, memoryMap(pkg, pl, l, addrs[l]))
	}
	sum := planSummary(pl)
	if r, err := RecipeOf(pkg); err == nil {
		// A package without a recipe (not built by ipu build) simply has
		// no finalists to show.
		sum.Finalists = finalistsSummary(r.Finalists, len(sum.Gemms))
	}
	b.SetPlan(sum)
	return b.Build()
}

// phaseWindows is one window per logical tile with traffic in schedule s:
// the span of its sends (first send's first event to the last send's last)
// with the bytes they carry, and the span of its receive windows (the
// events its incoming mux is set to a sender) with the bytes received,
// cycles from the phase start (exchange.Schedule.Windows). A paired
// send's borrowed partner lane is not a send of the partner: it carries
// no bytes of the partner's and is left out. Windows are clipped to the
// horizon (they never exceed it).
func phaseWindows(s *exchange.Schedule, logical map[int]int, horizon uint64) []profile.Window {
	byTile := map[int]*profile.Window{}
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
			w = &profile.Window{Tile: l}
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
	out := make([]profile.Window, len(tiles))
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
func memoryMap(pkg *ipuexe.Package, pl *low.Plan, l int, a emit.Addresses) []profile.Segment {
	var segs []profile.Segment
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
		segs = append(segs, profile.Segment{Kind: profile.Code, Address: place.CodeBase, Size: codeEnd - place.CodeBase, Name: "runtime and kernels"})
	}
	segs = append(segs, profile.Segment{Kind: profile.Activations, Address: ipu21.HostApertureBase,
		Size: ipu21.HostWriteEnd - ipu21.HostApertureBase, Name: "host write window"})
	if rows > 0 {
		segs = append(segs, profile.Segment{Kind: profile.ExchangeRows, Address: place.RowBase, Size: rows, Name: "exchange rows"})
	}
	segs = append(segs, profile.Segment{Kind: profile.Code, Address: ipu21.RuntimeStateBase,
		Size: ipu21.RuntimeStateEnd - ipu21.RuntimeStateBase, Name: "runtime state (samples, row table, loops, worker areas)"})
	t := &pl.Programs[l]
	bufs := append([]low.Buffer(nil), t.Buffers...)
	bufs = append(bufs, low.Buffer{Name: emit.SampleBuf, Bytes: 4 * emit.SampleWords(pl, t)})
	var data []profile.Segment
	for _, bf := range bufs {
		addr, ok := a[bf.Name]
		if !ok {
			continue
		}
		s := profile.Segment{Address: addr, Size: uint32(bf.Bytes), Name: bf.Name}
		mid := pl.Mid != nil && len(bf.Name) > 1
		switch {
		case bf.Name == "w" || bf.Name == "ws" || bf.Name == "wst" || bf.Name == "bias", mid && bf.Name[0] == 'W':
			s.Kind = profile.Weights
		case bf.Name == "red", mid && bf.Name[0] == 'R':
			s.Kind = profile.Partials
		case bf.Name == emit.SampleBuf:
			s.Kind, s.Name = profile.Code, "profile samples"
		default:
			s.Kind = profile.Activations
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
				m.Kind = profile.Activations
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
				segs = append(segs, profile.Segment{Kind: profile.Free, Address: at, Size: s.Address - at, Name: "free"})
			}
			at = max(at, s.Address+s.Size)
		}
		if at < r[1] {
			segs = append(segs, profile.Segment{Kind: profile.Free, Address: at, Size: r[1] - at, Name: "free"})
		}
	}
	return append(segs, data...)
}

// planSummary is the plan's GEMMs, grid and predicted cycles.
func planSummary(pl *low.Plan) profile.Plan {
	p, g := pl.Problem, &pl.Grid
	sum := profile.Plan{PredictedCycles: uint64(max(0, pl.Estimate.Total))}
	if pl.Mid != nil {
		for _, gp := range pl.Mid.Gemms {
			sum.Gemms = append(sum.Gemms, profile.Gemm{Name: gp.Node.Name, M: gp.M, K: gp.K, N: gp.N,
				Grid:  profile.Grid{Rows: gp.Rows.Count, Cols: gp.Cols.Count, Inner: gp.Inner.Count},
				Tiles: gp.ActiveTiles(), Kernel: gp.Kernel})
		}
		return sum
	}
	if p.Kind != low.KindMLP {
		sum.Gemms = append(sum.Gemms, profile.Gemm{Name: p.Output, M: p.M, K: p.K, N: p.N,
			Grid: profile.Grid{Rows: g.R, Cols: g.C, Inner: 1}, Tiles: g.R * g.C, Kernel: kernels.GemmF16For(pl.Conservative)})
		return sum
	}
	for b, blk := range p.Blocks {
		name := strings.TrimSuffix(blk.W1, ".weight")
		if name == blk.W1 {
			name = fmt.Sprintf("block%d.fc1", b)
		}
		fc2 := strings.TrimSuffix(name, "fc1") + "fc2"
		sum.Gemms = append(sum.Gemms,
			profile.Gemm{Name: name, M: p.M, K: p.K, N: p.N, Grid: profile.Grid{Rows: g.R, Cols: g.C, Inner: 1}, Tiles: g.R * g.C, Kernel: kernels.GemmF16For(pl.Conservative)},
			profile.Gemm{Name: fc2, M: p.M, K: p.N, N: p.K, Grid: profile.Grid{Rows: g.R, Cols: 1, Inner: g.C}, Tiles: g.R * g.C, Kernel: kernels.GemmF16For(pl.Conservative)})
	}
	return sum
}

// finalistsSummary turns the rerank's finalists into the profile's: a mid
// plan's GEMMs have their own grids; every GEMM of a v0 plan runs on the
// plan's R x C grid (an MLP's second GEMM as R row blocks with a C-way
// K split).
func finalistsSummary(fins []Finalist, gemms int) []profile.Finalist {
	out := make([]profile.Finalist, 0, len(fins))
	for _, f := range fins {
		grids := make([]profile.Grid, gemms)
		for i := range grids {
			switch {
			case f.Plan.Mid != nil && i < len(f.Plan.Mid):
				m := f.Plan.Mid[i]
				grids[i] = profile.Grid{Rows: m.Rows, Cols: m.Cols, Inner: m.Inner}
			case f.Plan.Mid != nil:
			case gemms > 1 && i%2 == 1:
				grids[i] = profile.Grid{Rows: f.Plan.R, Cols: 1, Inner: f.Plan.C}
			default:
				grids[i] = profile.Grid{Rows: f.Plan.R, Cols: f.Plan.C, Inner: 1}
			}
		}
		out = append(out, profile.Finalist{Rank: f.Rank, MidCycles: uint64(max(0, f.MidCycles)),
			LowCycles: uint64(max(0, f.LowCycles)), Grids: grids, Chosen: f.Chosen})
	}
	return out
}
