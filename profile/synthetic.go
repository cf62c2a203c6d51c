package profile

import (
	"fmt"
	"math/rand/v2"

	"github.com/ipustack/ipustack/kernels"
)

// SRAM map used by the synthetic memory maps (IPU21: 624 KiB per tile).
const (
	synthSRAMBase    = 0x4C000
	synthRegion1Base = 0x80000
	synthSRAMEnd     = 0xE8000
	synthClockHz     = 1_500_000_000
	synthSyncCycles  = 150
)

// Synthetic returns a deterministic profile of the given number of tiles
// (1472 for a whole IPU21) shaped like the SigLIP so400m MLP run as the
// planner lays it out today (block0.fc1 on a 16x30x3 grid with a GELU
// epilogue, block0.fc2 on 18x9x9): host input, four exchange phases (each
// GEMM's operand distribution and its K-split reduce-scatter), GEMM
// compute on ~1440 tiles, reduce and GELU, global syncs and host output,
// about 155k cycles in all, with per-tile memory maps and a plan summary.
// The same tiles and seed give the same profile. It stands in for real
// profiles in tests and demonstrations until the compiler writes them;
// the profile's Synthetic flag is set.
func Synthetic(tiles int, seed uint64) *Profile {
	tiles = max(1, min(tiles, MaxTiles))
	s := &synth{
		b:     NewBuilder("siglip-mlp-f16-b1-t729-d1152-h4304-n1", "ipu21", tiles, synthClockHz),
		rng:   rand.New(rand.NewPCG(seed, 0x5ec1a9)),
		tiles: tiles,
		at:    make([]uint64, tiles),
	}
	s.run()
	p, err := s.b.Build()
	if err != nil {
		panic("profile: Synthetic made an invalid profile: " + err.Error()) // a bug in this file
	}
	p.Synthetic = true
	return p
}

type synth struct {
	b     *Builder
	rng   *rand.Rand
	tiles int
	at    []uint64 // per tile: end of its last step
	phase int
}

// scaled is n of 1472 tiles scaled to s.tiles (at least 1).
func (s *synth) scaled(n int) int { return max(1, min(s.tiles, n*s.tiles/1472)) }

// jitter returns c scaled by a factor in [1-f, 1].
func (s *synth) jitter(c uint64, f float64) uint64 {
	return uint64(float64(c) * (1 - f*s.rng.Float64()))
}

func (s *synth) step(t int, c uint64, kind Kind, kernel, op, value, reason string) {
	start := s.at[t]
	s.b.AddStep(t, Step{Start: start, End: start + c, Kind: kind, Kernel: kernel, Operation: op,
		Phase: NoPhase, Provenance: Provenance{Value: value, Reason: reason}})
	s.at[t] = start + c
}

// sync adds a global sync: every tile is idle from where it is until the
// latest tile arrives, then all spend the sync's cost in it. It returns
// the release.
func (s *synth) sync(before string) uint64 {
	var last uint64
	for _, a := range s.at {
		last = max(last, a)
	}
	rel := last + synthSyncCycles
	for t := range s.at {
		s.b.AddStep(t, Step{Start: last, End: rel, Kind: Sync, Phase: NoPhase,
			Provenance: Provenance{Value: "sync before " + before, Reason: "global sync: every tile waits for the latest"}})
		s.at[t] = rel
	}
	return rel
}

// exchange adds a phase starting at the current release: tiles with a
// window run the exchange program for the whole horizon.
func (s *synth) exchange(name, op string, start, horizon, bound uint64, windows []Window) {
	id := s.phase
	s.phase++
	s.b.AddExchangePhase(Phase{ID: id, Name: name, Start: start, Horizon: horizon, Bound: bound,
		Schedule: "full-duplex", Windows: windows})
	for _, w := range windows {
		what := "receives"
		switch {
		case w.Sends() && w.Receives():
			what = "sends and receives"
		case w.Sends():
			what = "sends"
		}
		s.b.AddStep(w.Tile, Step{Start: start, End: start + horizon, Kind: Exchange, Operation: op, Phase: id,
			Provenance: Provenance{Value: name, Reason: fmt.Sprintf("exchange phase %d: tile %s %d/%d bytes", id, what, w.SendBytes, w.RecvBytes)}})
		s.at[w.Tile] = start + horizon
	}
}

// window places a send of sb bytes and a receive of rb bytes (4 bytes per
// cycle each way) in a phase of the given horizon, at a pseudo-random
// offset that keeps both inside it.
func (s *synth) window(t int, horizon uint64, sb, rb uint32) Window {
	w := Window{Tile: t, SendBytes: sb, RecvBytes: rb}
	place := func(bytes uint32) (uint32, uint32) {
		if bytes == 0 {
			return 0, 0
		}
		n := uint64(bytes+3) / 4
		n = min(n, horizon-32)
		slack := horizon - 32 - n
		off := 16 + uint64(s.rng.Float64()*float64(slack))
		return uint32(off), uint32(off + n)
	}
	w.SendStart, w.SendEnd = place(sb)
	w.RecvStart, w.RecvEnd = place(rb)
	return w
}

type synthGemm struct {
	name             string
	m, k, n          int
	grid             Grid
	rowBlock, colBlk int
	kBlk             int
	cycles           uint64 // modelled cycles of a full block
}

func (s *synth) run() {
	fc1 := synthGemm{"block0.fc1", 729, 1152, 4304, Grid{16, 30, 3}, 46, 144, 384, 53124}
	fc2 := synthGemm{"block0.fc2", 729, 4304, 1152, Grid{18, 9, 9}, 41, 128, 480, 53143}
	a1, a2 := s.scaled(fc1.grid.Tiles()), s.scaled(fc2.grid.Tiles())
	inTiles := s.scaled(48)

	// Host input: the input rows reach the tiles that distribute them.
	for t := range inTiles {
		s.step(t, s.jitter(2600, 0.05), Host, "", "input", fmt.Sprintf("input[%d rows]", 729/inTiles), "host writes the input")
	}
	r := s.sync("block0.fc1.in")

	// Phase 0: fc1 operands (input row blocks, multicast to the grid).
	const h0, b0 = 9640, 8832
	var w []Window
	for t := range max(a1, inTiles) {
		var sb, rb uint32
		if t < inTiles {
			sb = 35328
		}
		if t < a1 {
			rb = 35328
		}
		w = append(w, s.window(t, h0, sb, rb))
	}
	s.exchange("block0.fc1.in", "block0.fc1", r, h0, b0, w)
	s.gemm(fc1, a1)
	r = s.sync("block0.fc1.reduce")

	// Phase 1: fc1 reduce-scatter of K-split partials.
	const h1, b1 = 3016, 2208
	w = w[:0]
	for t := range a1 {
		w = append(w, s.window(t, h1, 8832, 8832))
	}
	s.exchange("block0.fc1.reduce", "block0.fc1", r, h1, b1, w)
	for t := range a1 {
		i, j, q := t/(fc1.grid.Cols*fc1.grid.Inner), (t/fc1.grid.Inner)%fc1.grid.Cols, t%fc1.grid.Inner
		rows := fmt.Sprintf("[%d,%d)", i*fc1.rowBlock, min((i+1)*fc1.rowBlock, fc1.m))
		cols := fmt.Sprintf("[%d,%d)", j*fc1.colBlk+q*48, j*fc1.colBlk+(q+1)*48)
		s.step(t, s.jitter(8000, 0.03), Compute, kernels.ReduceAddF16, "block0.fc1", "block0.fc1"+rows+cols,
			fmt.Sprintf("sum of %d K-split partials (reduce-scatter, slice %d)", fc1.grid.Inner, q))
		s.step(t, s.jitter(3490, 0.03), Compute, kernels.GeluF16, "block0.gelu", "block0.gelu"+rows+cols,
			"fused GELU epilogue of block0.fc1")
	}
	r = s.sync("block0.fc2.in")

	// Phase 2: fc2 operands (GELU output slices gathered into row blocks).
	const h2, b2 = 10648, 9840
	w = w[:0]
	for t := range max(a1, a2) {
		var sb, rb uint32
		if t < a1 {
			sb = 4416
		}
		if t < a2 {
			rb = uint32(s.jitter(39360, 0.02))
			if t == 0 {
				rb = 39360
			}
		}
		w = append(w, s.window(t, h2, sb, rb))
	}
	s.exchange("block0.fc2.in", "block0.fc2", r, h2, b2, w)
	s.gemm(fc2, a2)
	r = s.sync("block0.fc2.reduce")

	// Phase 3: fc2 reduce-scatter; the ninth part of each block owns no
	// column slice (128 columns are 8 groups of 16).
	const h3, b3 = 3432, 2624
	w = w[:0]
	for t := range a2 {
		var rb uint32
		if t%fc2.grid.Inner != fc2.grid.Inner-1 {
			rb = 10496
		}
		w = append(w, s.window(t, h3, 10496, rb))
	}
	s.exchange("block0.fc2.reduce", "block0.fc2", r, h3, b3, w)
	var owners []int
	for t := range a2 {
		q := t % fc2.grid.Inner
		if q == fc2.grid.Inner-1 {
			continue
		}
		owners = append(owners, t)
		i, j := t/(fc2.grid.Cols*fc2.grid.Inner), (t/fc2.grid.Inner)%fc2.grid.Cols
		rows := fmt.Sprintf("[%d,%d)", i*fc2.rowBlock, min((i+1)*fc2.rowBlock, fc2.m))
		cols := fmt.Sprintf("[%d,%d)", j*fc2.colBlk+q*16, j*fc2.colBlk+(q+1)*16)
		s.step(t, s.jitter(4200, 0.03), Compute, kernels.ReduceAddF16, "block0.fc2", "block0.fc2"+rows+cols,
			fmt.Sprintf("sum of %d K-split partials (reduce-scatter, slice %d)", fc2.grid.Inner, q))
		s.step(t, s.jitter(1297, 0.03), Compute, kernels.UnpackOutF16, "block0.fc2", "output"+rows+cols,
			"unpack the output slice to row-major for the host")
	}
	s.sync("output")
	for _, t := range owners {
		s.step(t, s.jitter(900, 0.05), Host, "", "output", fmt.Sprintf("output slice of tile %d", t), "host reads the output")
	}
	s.sync("end")

	s.memory(fc1, fc2, a1, a2)
	s.plan(fc1, fc2, a1, a2)
}

// gemm adds the compute steps of one GEMM on its first n tiles: a padding
// clear on the last row of blocks (whose rows do not fill the block), then
// the block's kernel run, shorter for the short last row of blocks.
func (s *synth) gemm(g synthGemm, n int) {
	per := g.grid.Cols * g.grid.Inner
	lastRows := g.m - (g.grid.Rows-1)*g.rowBlock
	for t := range n {
		i, j, p := t/per, (t/g.grid.Inner)%g.grid.Cols, t%g.grid.Inner
		rows := g.rowBlock
		if i == g.grid.Rows-1 {
			rows = lastRows
			s.step(t, s.jitter(180, 0.1), Compute, "clear_f16", g.name,
				fmt.Sprintf("%s.part%d[%d,%d)[%d,%d)", g.name, p, i*g.rowBlock+rows, (i+1)*g.rowBlock, j*g.colBlk, (j+1)*g.colBlk),
				"padding clear: rows past the matrix in the last row block")
		}
		c := g.cycles * uint64(rows) / uint64(g.rowBlock)
		if t > 0 {
			c = s.jitter(c, 0.012)
		}
		s.step(t, c, Compute, kernels.GemmF16, g.name,
			fmt.Sprintf("%s.part%d[%d,%d)[%d,%d)", g.name, p, i*g.rowBlock, i*g.rowBlock+rows, j*g.colBlk, (j+1)*g.colBlk),
			fmt.Sprintf("GEMM block (i=%d j=%d) K-split part %d of %d, k=[%d,%d)", i, j, p, g.grid.Inner, p*g.kBlk, (p+1)*g.kBlk))
	}
}

// memory lays out every tile's SRAM: code and exchange rows at the start
// of region 0, activations after them, weights and partials in region 1,
// the rest free.
func (s *synth) memory(fc1, fc2 synthGemm, a1, a2 int) {
	for t := range s.tiles {
		var segs []Segment
		lay := func(base, end uint32, parts []Segment) {
			a := base
			for _, p := range parts {
				if p.Size == 0 {
					continue
				}
				p.Address = a
				segs = append(segs, p)
				a += (p.Size + 7) &^ 7
			}
			if a < end {
				segs = append(segs, Segment{Kind: Free, Address: a, Size: end - a, Name: "free"})
			}
		}
		var r0, r1 []Segment
		r0 = append(r0,
			Segment{Kind: Code, Size: 11904, Name: "runtime+kernels"},
			Segment{Kind: ExchangeRows, Size: 6960, Name: "exchange table"})
		if t < a1 {
			r0 = append(r0, Segment{Kind: Activations, Size: 35328, Name: "block0.fc1.in block"})
			r1 = append(r1, Segment{Kind: Weights, Size: uint32(fc1.kBlk * fc1.colBlk * 2), Name: "block0.fc1.weight block"})
			r1 = append(r1, Segment{Kind: Partials, Size: uint32(fc1.rowBlock * fc1.colBlk * 4), Name: "block0.fc1 partial"})
			r0 = append(r0, Segment{Kind: Activations, Size: uint32(fc1.rowBlock * 48 * 2), Name: "block0.gelu slice"})
		}
		if t < a2 {
			r0 = append(r0, Segment{Kind: Activations, Size: 39360, Name: "block0.fc2.in block"})
			r1 = append(r1, Segment{Kind: Weights, Size: uint32(fc2.kBlk * fc2.colBlk * 2), Name: "block0.fc2.weight block"})
			r1 = append(r1, Segment{Kind: Partials, Size: uint32(fc2.rowBlock * fc2.colBlk * 4), Name: "block0.fc2 partial"})
			r0 = append(r0, Segment{Kind: Activations, Size: uint32(fc2.rowBlock * 16 * 2), Name: "output slice"})
		}
		lay(synthSRAMBase, synthRegion1Base, r0)
		lay(synthRegion1Base, synthSRAMEnd, r1)
		s.b.SetMemoryMap(t, segs)
	}
}

// plan records the planner's summary: the chosen grids and eight
// finalists, as the planner's beam keeps them.
func (s *synth) plan(fc1, fc2 synthGemm, a1, a2 int) {
	alt := [][2]Grid{
		{fc1.grid, fc2.grid},
		{{16, 30, 3}, {18, 8, 10}},
		{{24, 20, 3}, {18, 9, 9}},
		{{16, 45, 2}, {18, 9, 9}},
		{{12, 40, 3}, {27, 6, 9}},
		{{16, 30, 3}, {27, 6, 9}},
		{{24, 30, 2}, {18, 8, 10}},
		{{8, 60, 3}, {18, 9, 9}},
	}
	pl := Plan{PredictedCycles: 149990, Gemms: []Gemm{
		{Name: fc1.name, M: fc1.m, K: fc1.k, N: fc1.n, Grid: fc1.grid, Tiles: a1, Kernel: kernels.GemmF16},
		{Name: fc2.name, M: fc2.m, K: fc2.k, N: fc2.n, Grid: fc2.grid, Tiles: a2, Kernel: kernels.GemmF16},
	}}
	for r, g := range alt {
		mid := uint64(149990 + 173*r*r + 61*r)
		low := mid + 3900 + uint64(s.rng.IntN(9000))
		if r == 0 {
			low = mid + 3100
		}
		pl.Finalists = append(pl.Finalists, Finalist{Rank: r, MidCycles: mid, LowCycles: low, Grids: []Grid{g[0], g[1]}, Chosen: r == 0})
	}
	s.b.SetPlan(pl)
}
