// Package driver is the compiler driver: a table of stages from a workload
// graph to an application package, each a span logged with its busy time
// ("stage=... busy_ms=..."). The package it writes describes itself
// (describe.go: host layouts, plan summary, exchange schedules, memory
// maps), so that running it (package launch) needs nothing of the
// compiler.
package driver

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/compiler/emit"
	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/mid"
	"github.com/ipustack/ipustack/compiler/place"
	"github.com/ipustack/ipustack/compiler/tile"
	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels/assemble"
)

// Recipe is what a package was built from. It is stored in the package
// (ipuexe.Package.Recipe, as JSON; see RecipeOf) so that
// `ipu run FILE` can regenerate the inputs, the host layouts and the
// reference without the command line of the build.
type Recipe struct {
	Workload string      `json:"workload"`
	Flags    graph.Flags `json:"flags"`
	Tiles    int         `json:"tiles"`
	// Plan is the compiler/mid plan the compiler chose (the finalist
	// rerank schedules exchanges, which Prepare does not): Compile
	// records it in the package's recipe, and Prepare and Compile then
	// plan exactly it. Nil lets the compiler choose.
	Plan *low.Choice `json:"plan,omitempty"`
	// Finalists are the rerank's lines (rank, estimate, costed cycles),
	// kept for the profile's plan summary.
	Finalists []Finalist `json:"finalists,omitempty"`
	// Assumptions are the emulator assumptions the package is built to be
	// correct under: "" for the default set (its GEMMs keep AMP state
	// between worker runs, amp-state-retained), ipuexe.AssumptionsConservative for
	// the conservative set (--conservative: gemm_f16_drain).
	Assumptions string `json:"assumptions,omitempty"`
}

// Conservative reports whether the recipe is built for the conservative
// assumption set.
func (r Recipe) Conservative() bool { return r.Assumptions == ipuexe.AssumptionsConservative }

// Finalist is one reranked candidate as the profile shows it.
type Finalist struct {
	Rank      int        `json:"rank"`
	MidCycles int        `json:"mid_cycles"`
	LowCycles int        `json:"low_cycles"`
	IsBound   bool       `json:"low_cycles_is_bound,omitempty"` // not scheduled: LowCycles is a lower bound
	Plan      low.Choice `json:"plan"`
	Chosen    bool       `json:"chosen,omitempty"`
}

// Config configures Compile.
type Config struct {
	Recipe
	// Cache is the kernel cache (zero: no caching).
	Cache assemble.Cache
	// Logger receives the stage spans (default slog.Default()).
	Logger *slog.Logger
	// CompilerVersion is recorded in the package.
	CompilerVersion string
	// Finalists is how many of the planner's best-estimated plans are
	// lowered, placed, have their exchange phases scheduled and are
	// reranked by their costed cycles (0: low.DefaultFinalists).
	Finalists int
	// ExportExchange, when set, is a directory that receives each exchange
	// phase's transfers as a JSON snapshot (exchange.ExportPhases), for
	// `ipu exchange bench`.
	ExportExchange string
	// Verify checks every candidate plan's per-tile program
	// (tile.Program.Verify) before the low passes and after each one, as
	// the tests do (a few Verify runs per finalist). Every build verifies
	// the chosen plan once, before emitting it (some 20 ms on 1472 tiles).
	Verify bool
}

// Result is a compiled workload.
type Result struct {
	Recipe  Recipe
	Name    string // full workload name
	Graph   *graph.Graph
	Plan    *low.Plan
	Package *ipuexe.Package
	Stages  []Stage
}

// Stage is one stage's busy time.
type Stage struct {
	Name string
	Busy time.Duration
}

// Validate checks a recipe's tiles and workload flags.
func (r Recipe) Validate() error {
	var errs []error
	if r.Tiles < 1 || r.Tiles > ipu21.Tiles {
		errs = append(errs, fmt.Errorf("--tiles must be 1..%d (the C600 has %d tiles), got %d", ipu21.Tiles, ipu21.Tiles, r.Tiles))
	}
	if r.Assumptions != "" && !r.Conservative() {
		errs = append(errs, fmt.Errorf("assumptions %q: want empty (default) or %q", r.Assumptions, ipuexe.AssumptionsConservative))
	}
	if _, ok := graph.CanonicalPreset(r.Workload); !ok {
		errs = append(errs, fmt.Errorf("unknown workload %q (known: %s)", r.Workload, strings.Join(graph.Presets(), ", ")))
	}
	return errors.Join(errs...)
}

// Prepare builds the graph and the plan of a recipe (cheap: no code):
// the recipe's recorded plan, or else the best-estimated candidate.
func Prepare(r Recipe, log *slog.Logger) (*graph.Graph, *low.Plan, error) {
	g, plans, err := candidatePlans(r, 1, nil, false)
	if err != nil {
		return nil, nil, err
	}
	if log != nil {
		logPlan(log, plans[0])
	}
	return g, plans[0], nil
}

// candidatePlans builds the graph of a recipe and its candidate plans:
// the compiler/mid planner's finalists (at most n), lowered, optimised by
// the low passes and ordered by estimate. A recipe that records its plan
// gets exactly that one. mid lines (each GEMM's candidate count and time,
// each finalist, a finalist that does not lower) go to log when it is not
// nil. With verify, every plan's per-tile program is verified before the
// passes and after each one (low.OptimizeVerified).
func candidatePlans(r Recipe, n int, log *slog.Logger, verify bool) (*graph.Graph, []*low.Plan, error) {
	optimize := func(pl *low.Plan) error {
		if !verify {
			low.Optimize(pl)
			return nil
		}
		if _, err := low.OptimizeVerified(pl); err != nil {
			return fmt.Errorf("plan %v: %w", pl.Choice(), err)
		}
		return nil
	}
	g, p, opts, err := problem(r)
	if err != nil {
		return nil, nil, err
	}
	if c := r.Plan; c != nil {
		if err := c.Check(); err != nil {
			return nil, nil, err
		}
		grids := make([]mid.Grid, len(c.Mid))
		for i, gg := range c.Mid {
			grids[i] = mid.Grid{Rows: gg.Rows, Cols: gg.Cols, Inner: gg.Inner, Streamed: gg.Streamed}
		}
		mp, err := mid.Rebuild(g, ipu21.IPU21(), r.Tiles, grids, c.Q, c.Loop)
		if err != nil {
			return nil, nil, fmt.Errorf("the recorded plan %v: %w", c, err)
		}
		pl, err := low.FromMid(p, mp, opts)
		if err != nil {
			return nil, nil, fmt.Errorf("the recorded plan %v: %w", c, err)
		}
		// As every searched plan: the recorded plan is the one Compile
		// chose, passes included.
		if err := optimize(pl); err != nil {
			return nil, nil, err
		}
		return g, []*low.Plan{pl}, nil
	}
	plans, err := midPlans(g, p, opts, n, log)
	if err != nil {
		name, _ := graph.WorkloadName(r.Workload, r.Flags)
		return nil, nil, fmt.Errorf("compiler: %s on %d tiles: %w", name, r.Tiles, err)
	}
	// The low passes, on every plan alike (Prepare must regenerate the
	// plan Compile chose, passes included).
	errs := make([]error, len(plans))
	parallelDo(len(plans), func(i int) { errs[i] = optimize(plans[i]) })
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	slices.SortStableFunc(plans, func(a, b *low.Plan) int { return a.Estimate.Total - b.Estimate.Total })
	return g, plans, nil
}

// encoderPlanned plans the encoder layer (mid.SearchEncoder), logs the
// plan (a "mid encoder plan" line and one "mid encoder operator" line per
// operator) and returns why it goes no further: its lowering to tile
// programs is not built yet (issue 14), or why it does not plan.
func encoderPlanned(g *graph.Graph, opts low.Options, log *slog.Logger) error {
	res, err := mid.SearchEncoder(g, ipu21.IPU21(), mid.Options{Tiles: opts.Tiles, Conservative: opts.Conservative})
	if err != nil {
		if _, ok := errors.AsType[*mid.UnsupportedError](err); ok {
			return fmt.Errorf("not supported yet: %w", err)
		}
		return fmt.Errorf("does not fit: %w", err)
	}
	mp := res.Finalists[0]
	e := mp.Encoder
	attention := "materialized"
	if e.Attention != nil && e.Attention.Flash {
		attention = "flash"
	}
	log.Info("mid encoder plan", "predicted_cycles", mp.Cycles, "efficiency_percent", fmt.Sprintf("%.2f", 100*mp.Efficiency()),
		"attention", attention, "projections", e.Projections, "mlp_row_chunks", e.MLPChunks, "peak_bytes", mp.PeakBytes)
	for _, op := range e.Ops {
		log.Info("mid encoder operator", "op", op.Name, "cycles", op.Cycles, "stages", op.Count)
	}
	return fmt.Errorf("planned (%d cycles predicted, %.2f %% of peak, %s attention), but the lowering of the encoder layer to tile programs is not built yet",
		mp.Cycles, 100*mp.Efficiency(), attention)
}

// midPlans runs the compiler/mid planner and lowers its finalists. It
// fails when the planner does not take the graph (mid.Search checks it is
// a chain of GEMMs with fused biases and GELUs), finds no plan that fits,
// or none of its finalists lowers (the lowering's memory and code checks
// are exact, the planner's are estimates).
func midPlans(g *graph.Graph, p *low.Problem, opts low.Options, n int, log *slog.Logger) ([]*low.Plan, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The runtime's exchange rows, less the initialize call's weights
	// phase, bound a plan's phases: an unrolled chain of many blocks
	// is pruned early (its runtime loop is planned instead).
	maxPhases := 0
	if opts.MaxPhases > 0 {
		maxPhases = opts.MaxPhases - 1
	}
	if mid.IsEncoderLayer(g) {
		return nil, encoderPlanned(g, opts, log)
	}
	res, err := mid.Search(g, ipu21.IPU21(), mid.Options{Tiles: opts.Tiles, Finalists: n, Conservative: opts.Conservative, MaxPhases: maxPhases})
	if err != nil {
		if _, ok := errors.AsType[*mid.UnsupportedError](err); ok {
			return nil, fmt.Errorf("not supported yet (the planner, compiler/mid, takes a chain of GEMMs x[m][k] x w[k][n], each with an optional bias [n] and tanh GELU fused after it): %w", err)
		}
		return nil, fmt.Errorf("does not fit: %w", err)
	}
	for _, st := range res.Stats {
		log.Info("construct_mid gemm candidates", "gemm", st.Name, "candidates", st.Candidates, "evaluated", st.Tried,
			"elapsed_ms", float64(st.Elapsed.Microseconds())/1000)
	}
	plans := make([]*low.Plan, len(res.Finalists))
	errs := make([]error, len(res.Finalists))
	parallelDo(len(plans), func(i int) { plans[i], errs[i] = low.FromMid(p, res.Finalists[i], opts) })
	var out []*low.Plan
	var first error
	for i, mp := range res.Finalists {
		ch := "mid"
		for _, gp := range mp.Body() {
			ch += " " + gp.Grid().String()
		}
		if mp.Chunks > 1 {
			ch += fmt.Sprintf(" q=%d", mp.Chunks)
		}
		if mp.Period > 0 {
			ch += fmt.Sprintf(" loop=%d", mp.Repeat())
		}
		if errs[i] != nil {
			log.Info("mid finalist not lowered", "rank", i+1, "mid_cycles", mp.Cycles, "plan", ch, "err", errs[i])
			if first == nil {
				first = fmt.Errorf("finalist %d of %d (%s): %w", i+1, len(res.Finalists), ch, errs[i])
			}
			continue
		}
		log.Info("mid finalist lowered", "rank", i+1, "mid_cycles", mp.Cycles, "estimated_cycles", plans[i].Estimate.Total,
			"plan", ch, "peak_bytes", mp.PeakBytes)
		out = append(out, plans[i])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("does not fit: no finalist of the planner lowers: %w", first)
	}
	return out, nil
}

// problem builds the graph of a recipe, names its input and output
// (low.Problem) and returns the lowering options (the recipe's tiles and
// assumptions, the memory check, the runtime's exchange rows).
func problem(r Recipe) (*graph.Graph, *low.Problem, low.Options, error) {
	var opts low.Options
	if err := r.Validate(); err != nil {
		return nil, nil, opts, err
	}
	g, err := graph.Preset(r.Workload, r.Flags)
	if err != nil {
		return nil, nil, opts, err
	}
	p, err := low.NewProblem(g)
	if err != nil {
		return nil, nil, opts, err
	}
	opts.Tiles, opts.Fits, opts.MaxPhases = r.Tiles, place.Fits, tile.MaxRowPhases
	opts.Conservative = r.Conservative()
	return g, p, opts, nil
}

// logPlan logs the "mid plan" line of a plan: each GEMM's grid and block,
// the row chunks, the blocks looped and the estimate.
func logPlan(log *slog.Logger, pl *low.Plan) {
	p := pl.Problem
	attrs := []any{"m", p.M, "k", p.K, "n", p.N, "plan", pl.Choice().String()}
	for _, g := range pl.Mid.Body() {
		attrs = append(attrs, g.Node.Name, fmt.Sprintf("rows=%d cols=%d k=%d tiles=%d block r=%d c=%d k=%d",
			g.Rows.Count, g.Cols.Count, g.Inner.Count, g.ActiveTiles(), g.Rows.Block, g.Cols.Block, g.Inner.Block))
	}
	attrs = append(attrs, "row_chunks", max(pl.Mid.Chunks, 1), "block_loop", pl.Choice().Loop, "active_tiles", pl.Mid.ActiveTiles, "mid_cycles", pl.Mid.Cycles,
		"estimated_cycles", pl.Estimate.Total, "gemm_cycles", pl.Estimate.Gemm, "exchange_cycles", pl.Estimate.Exchange,
		"reduce_cycles", pl.Estimate.Reduce, "copy_cycles", pl.Estimate.Copy, "elementwise_cycles", pl.Estimate.Elementwise)
	log.Info("mid plan", attrs...)
}

// Compile runs the stages.
func Compile(ctx context.Context, cfg Config) (*Result, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	res := &Result{Recipe: cfg.Recipe}
	var (
		fins     []*finalist
		addrs    []emit.Addresses
		scheds   []*exchange.Schedule
		specs    []emit.Spec
		ks       map[string]*emit.Compiled
		programs []emit.Program
		tileProg []int
		imgs     []*elf.Image
	)
	stages := []struct {
		name string
		run  func() error
	}{
		{"construct_low", func() error {
			n := cfg.Finalists
			if n <= 0 {
				n = low.DefaultFinalists
			}
			g, plans, err := candidatePlans(cfg.Recipe, n, log, cfg.Verify)
			if err != nil {
				return err
			}
			res.Graph = g
			fins = make([]*finalist, len(plans))
			for i, pl := range plans {
				fins[i] = &finalist{rank: i + 1, plan: pl}
			}
			res.Name, err = graph.WorkloadName(cfg.Workload, cfg.Flags)
			return err
		}},
		{"place_storage", func() error {
			parallelDo(len(fins), func(i int) {
				f := fins[i]
				t := time.Now()
				f.addrs, f.err = emit.PlaceAll(&f.plan.Program)
				f.elapsed += time.Since(t)
			})
			return nil
		}},
		{"lower_exchanges", func() error {
			f, err := rerank(fins, log)
			if err != nil {
				return err
			}
			res.Plan, addrs, scheds = f.plan, f.addrs, f.scheds
			choice := res.Plan.Choice()
			if err := res.Plan.Verify(); err != nil {
				return fmt.Errorf("the chosen plan %v: %w", choice, err)
			}
			if err := validateReused(scheds, log); err != nil {
				return err
			}
			res.Recipe.Plan = &choice
			res.Recipe.Finalists = finalistSummaries(fins, f)
			if cfg.ExportExchange == "" {
				return nil
			}
			phases := make([]exchange.Phase, len(scheds))
			for i, s := range scheds {
				phases[i] = s.Phase
			}
			name, err := graph.WorkloadName(cfg.Workload, cfg.Flags)
			if err != nil {
				return err
			}
			paths, err := exchange.ExportPhases(cfg.ExportExchange, name, phases)
			if err != nil {
				return fmt.Errorf("export exchange snapshots: %w", err)
			}
			log.Info("exported exchange snapshots", "dir", cfg.ExportExchange, "phases", len(paths))
			return nil
		}},
		{"compile_kernels", func() error {
			specs = emit.Specs(&res.Plan.Program)
			var err error
			ks, err = emit.CompileKernels(specs, cfg.Cache)
			if err != nil {
				return err
			}
			cached := 0
			for _, s := range specs {
				if ks[s.Key()].Cached {
					cached++
				}
				log.Debug("kernel", "name", s.Kernel, "params", s.Params.String(), "symbol", ks[s.Key()].Entry)
			}
			log.Info("compiled kernels", "specialisations", len(specs), "cached", cached)
			return nil
		}},
		{"emit_tile_code", func() error {
			var err error
			programs, tileProg, err = emit.Programs(&res.Plan.Program, addrs, ks)
			return err
		}},
		{"link_runtime", func() error {
			var err error
			imgs, err = emit.Link(programs, ks)
			if err == nil {
				log.Info("linked tile programs", "programs", len(programs), "max_code_bytes", emit.CodeBytes(imgs))
			}
			return err
		}},
		{"build_tile_images", func() error {
			var err error
			res.Package, err = emit.Package(&res.Plan.Program, addrs, scheds, imgs, tileProg, cfg.CompilerVersion)
			if err != nil {
				return err
			}
			rj, err := json.Marshal(res.Recipe)
			if err != nil {
				return err
			}
			res.Package.Recipe = string(rj)
			recordTensorShapes(res.Package, res.Graph)
			if err := describe(res.Package, res.Plan, addrs, scheds, res.Recipe, res.Graph, res.Name); err != nil {
				return err
			}
			return res.Package.Validate(ipu21.IPU21())
		}},
	}
	t0 := time.Now()
	for _, st := range stages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := time.Now()
		err := st.run()
		busy := time.Since(s)
		res.Stages = append(res.Stages, Stage{st.name, busy})
		log.Info("stage closed", "stage", st.name, "busy_ms", float64(busy.Microseconds())/1000)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.name, err)
		}
	}
	log.Info("package built", "workload", res.Name, "tiles", cfg.Tiles, "busy_ms", time.Since(t0).Milliseconds())
	return res, nil
}

// RecipeOf reads the recipe a package was built from.
func RecipeOf(pkg *ipuexe.Package) (Recipe, error) {
	var r Recipe
	if pkg.Recipe == "" {
		return r, errors.New("the package has no ipustack recipe (was it built by `ipu build`?)")
	}
	if err := json.Unmarshal([]byte(pkg.Recipe), &r); err != nil {
		return r, fmt.Errorf("package recipe is not valid JSON (%v): the package is damaged or was not written by ipu build", err)
	}
	return r, nil
}

// finalist is one reranked plan: its plan, placement, provisional
// exchange schedules and costed estimate.
type finalist struct {
	rank   int // 1-based, by estimate
	plan   *low.Plan
	addrs  []emit.Addresses
	scheds []*exchange.Schedule // nil where the horizon came from the cache (fill)
	hz     []int                // the scheduled horizons by phase
	logs   []*recorder          // the scheduler's lines by phase, replayed for the chosen one
	// scheduled: low is from schedules (scheds are dropped once the
	// finalist loses).
	scheduled bool
	low       cost.Estimate
	elapsed   time.Duration
	err       error
}

// rerank costs the finalists in rank order and returns the one with the
// fewest costed cycles (ties: the better estimate). A finalist is costed
// by scheduling its exchange phases (concurrently; the scheduler is
// deterministic, so nothing depends on GOMAXPROCS) and charging each
// phase's horizon instead of its modelled cycles (low.Plan.Costed). The
// rerank schedules with the scheduler's first round only (NoSplit: no
// second round of split and chunked multicasts for phases that miss their
// target), which is what takes time on large multicast phases and changes
// a horizon by a few percent at most; the chosen finalist's phases that
// missed their target are then scheduled again with every round, and the
// final line reports those schedules, the package's. A finalist whose
// costed cycles, with every phase at its endpoint lower bound
// (low.Plan.PhaseLowerBounds), cannot beat the best so far is not
// scheduled: its line reports that bound (low_cycles_is_bound=true). The
// choice is the same as scheduling every finalist (first round), at a
// fraction of the build time. One "costed planning finalist" line per
// finalist, in rank order; then the chosen finalist's scheduler lines are
// replayed into log, followed by its low pass reports, its plan line and
// "costed final placed program". Losing finalists' schedules are dropped as
// soon as they lose, which bounds the memory of large reranks.
func rerank(fins []*finalist, log *slog.Logger) (*finalist, error) {
	var best *finalist
	cache := &phaseCache{}
	for _, f := range fins {
		attrs := []any{"rank", f.rank, "mid_cycles", f.plan.Estimate.Total}
		if f.err != nil {
			log.Warn("costed planning finalist dropped", append(attrs, "plan", f.plan.Choice().String(), "err", f.err)...)
			continue
		}
		bound := f.plan.Costed(f.plan.PhaseLowerBounds())
		if best != nil && bound.Total >= best.low.Total {
			log.Info("costed planning finalist", append(attrs, "low_cycles", bound.Total, "elapsed_ms", f.elapsed.Milliseconds(),
				"low_cycles_is_bound", true, "plan", f.plan.Choice().String(), "mid_exchange", f.plan.Estimate.Exchange,
				"low_exchange", bound.Exchange)...)
			continue
		}
		t := time.Now()
		f.scheds, f.hz, f.logs, f.err = schedule(f.plan, f.addrs, log.Handler(), true, cache)
		f.elapsed += time.Since(t)
		if f.err != nil {
			log.Warn("costed planning finalist dropped", append(attrs, "plan", f.plan.Choice().String(), "err", f.err)...)
			continue
		}
		f.scheduled = true
		f.low = f.plan.Costed(f.hz)
		log.Info("costed planning finalist", append(attrs, "low_cycles", f.low.Total, "elapsed_ms", f.elapsed.Milliseconds(),
			"low_cycles_is_bound", false, "plan", f.plan.Choice().String(), "mid_exchange", f.plan.Estimate.Exchange,
			"low_exchange", f.low.Exchange, "low_cycles_bound", bound.Total)...)
		if best == nil || f.low.Total < best.low.Total {
			if best != nil {
				best.scheds, best.hz, best.logs = nil, nil, nil
			}
			best = f
		} else {
			f.scheds, f.hz, f.logs = nil, nil, nil
		}
	}
	if best == nil {
		return nil, fins[0].err
	}
	if err := fill(best, log.Handler()); err != nil {
		return nil, err
	}
	if err := finish(best, log.Handler()); err != nil {
		return nil, err
	}
	for _, r := range best.logs {
		r.replay(log.Handler())
	}
	for _, r := range best.plan.Passes {
		r.Log(log)
	}
	logPlan(log, best.plan)
	final := best.plan.Costed(horizons(best.scheds))
	log.Info("costed final placed program", "rank", best.rank, "final_cycles", final.Total, "final_exchange", final.Exchange,
		"estimated_cycles", best.plan.Estimate.Total, "ranked_cycles", best.low.Total)
	return best, nil
}

// validateReused validates the chosen finalist's schedules: the rerank
// scheduled it at its final addresses, so its schedules are reused as
// they are; they are validated once more, independently of how they were
// built, before they become the package's exchange rows. The phases are
// validated concurrently (Validate only reads its schedule); the first
// failure in phase order is reported and the lines are logged in phase
// order, as validating one phase after another would.
func validateReused(scheds []*exchange.Schedule, log *slog.Logger) error {
	errs := make([]error, len(scheds))
	parallelDo(len(scheds), func(i int) { errs[i] = scheds[i].Validate() })
	for i, s := range scheds {
		if err := errs[i]; err != nil {
			return fmt.Errorf("exchange phase %d: the reused schedule fails validation: %w", s.Phase.ID, err)
		}
		log.Info("reused exchange optimization after validating rows", "phase", s.Phase.ID, "relocated", false,
			"horizon", s.Horizon, "endpoint_lower_bound", s.LowerBound, "target", exchange.TargetHorizon(s.LowerBound))
	}
	return nil
}

// finish schedules again, with every round, the chosen finalist's phases
// whose first-round schedule missed its target. Every round includes the
// first, so the result is never longer.
func finish(f *finalist, h slog.Handler) error {
	var idx []int
	for i, s := range f.scheds {
		if s.Horizon > exchange.TargetHorizon(s.LowerBound) {
			idx = append(idx, i)
		}
	}
	return reschedule(f, idx, false, h, nil)
}

// finalistSummaries records each finalist's estimate and costed cycles
// (the lower bound when the rerank did not schedule it).
func finalistSummaries(fins []*finalist, chosen *finalist) []Finalist {
	var out []Finalist
	for _, f := range fins {
		if f.err != nil {
			continue
		}
		s := Finalist{Rank: f.rank, MidCycles: f.plan.Estimate.Total, Plan: f.plan.Choice(), Chosen: f == chosen}
		if f.scheduled {
			s.LowCycles = f.low.Total
		} else {
			s.LowCycles, s.IsBound = f.plan.Costed(f.plan.PhaseLowerBounds()).Total, true
		}
		out = append(out, s)
	}
	return out
}

// schedule schedules a plan's exchange phases as emit.Exchanges does
// (quick: with NoSplit, the scheduler's first round only), each phase
// concurrently (the phases are scheduled independently), with each phase's
// log lines recorded for replay in phase order. A phase found in cache (the
// same phase, transfers and addresses alike, scheduled for an earlier
// finalist: finalists often share a GEMM's grid and its placement) is not
// scheduled again: its horizon comes from the cache and its schedule is
// nil (fill builds it, if the finalist is chosen). cache may be nil.
func schedule(pl *low.Plan, addrs []emit.Addresses, h slog.Handler, quick bool, cache *phaseCache) ([]*exchange.Schedule, []int, []*recorder, error) {
	phases, err := emit.Phases(&pl.Program, addrs)
	if err != nil {
		return nil, nil, nil, err
	}
	n := len(phases)
	scheds := make([]*exchange.Schedule, n)
	hz := make([]int, n)
	logs := make([]*recorder, n)
	errs := make([]error, n)
	parallelDo(n, func(i int) {
		key := phaseKey(phases[i], quick)
		if v, ok := cache.get(key); ok {
			hz[i] = v
			return
		}
		logs[i] = newRecorder(h)
		s, err := exchange.Build(phases[i], exchange.Options{Logger: slog.New(logs[i]), NoSplit: quick, Paired: exchange.PairedAuto})
		if err != nil {
			errs[i] = fmt.Errorf("exchange %q: %w", pl.Exchanges[i].Name, err)
			return
		}
		scheds[i], hz[i] = s, s.Horizon
		cache.put(key, s.Horizon)
	})
	if err := errors.Join(errs...); err != nil {
		return nil, nil, nil, err
	}
	return scheds, hz, logs, nil
}

// phaseCache holds the horizons of the phases the rerank scheduled, by
// phaseKey (horizons only: the schedules of large phases are big, and
// only the chosen finalist's are needed).
type phaseCache struct {
	mu sync.Mutex
	m  map[[32]byte]int
}

func (c *phaseCache) get(k [32]byte) (int, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *phaseCache) put(k [32]byte, horizon int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[[32]byte]int{}
	}
	c.m[k] = horizon
}

// phaseKey is a digest of everything the scheduler's horizon depends on:
// the phase's transfers, tiles and addresses (not its id, which only
// labels the schedule and its log lines) and the rounds it may use.
func phaseKey(p exchange.Phase, quick bool) [32]byte {
	b := make([]byte, 0, 64+16*len(p.Transfers))
	u := func(v int) { b = binary.LittleEndian.AppendUint64(b, uint64(v)) }
	if quick {
		u(1)
	} else {
		u(0)
	}
	for _, t := range p.Transfers {
		u(t.Src)
		u(int(t.SrcAddr))
		u(t.Words)
		if t.Paired {
			u(1)
		} else {
			u(0)
		}
		u(len(t.Dsts))
		for _, d := range t.Dsts {
			u(d.Tile)
			u(int(d.Addr))
		}
	}
	return sha256.Sum256(b)
}

// fill schedules the chosen finalist's phases whose horizon came from the
// cache (the scheduler is deterministic: the same phase gives the same
// schedule, which fill checks).
func fill(f *finalist, h slog.Handler) error {
	var idx []int
	for i, s := range f.scheds {
		if s == nil {
			idx = append(idx, i)
		}
	}
	return reschedule(f, idx, true, h, func(i int, s *exchange.Schedule) error {
		if s.Horizon != f.hz[i] {
			return fmt.Errorf("BUG: exchange %q: horizon %d, the cache said %d", f.plan.Exchanges[i].Name, s.Horizon, f.hz[i])
		}
		return nil
	})
}

// reschedule schedules phases idx of finalist f (quick: the first round
// only), concurrently, replacing their schedules and log lines; check, if
// not nil, vets each new schedule first.
func reschedule(f *finalist, idx []int, quick bool, h slog.Handler, check func(int, *exchange.Schedule) error) error {
	if len(idx) == 0 {
		return nil
	}
	phases, err := emit.Phases(&f.plan.Program, f.addrs)
	if err != nil {
		return err
	}
	errs := make([]error, len(idx))
	parallelDo(len(idx), func(k int) {
		i := idx[k]
		rec := newRecorder(h)
		s, err := exchange.Build(phases[i], exchange.Options{Logger: slog.New(rec), NoSplit: quick, Paired: exchange.PairedAuto})
		if err == nil && check != nil {
			err = check(i, s)
		}
		if err != nil {
			errs[k] = fmt.Errorf("exchange %q: %w", f.plan.Exchanges[i].Name, err)
			return
		}
		f.scheds[i], f.logs[i] = s, rec
	})
	return errors.Join(errs...)
}

// horizons are the schedules' horizons by phase.
func horizons(scheds []*exchange.Schedule) []int {
	h := make([]int, len(scheds))
	for i, s := range scheds {
		h[i] = s.Horizon
	}
	return h
}

// parallelDo runs fn(0..n-1) concurrently and waits.
func parallelDo(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}

// recorder is a slog handler that keeps records (with the attributes of
// WithAttrs; groups are flattened) to be replayed later into another
// handler, so that concurrent finalists do not interleave their lines and
// only the chosen one's appear.
type recorder struct {
	base  slog.Handler
	mu    *sync.Mutex
	recs  *[]slog.Record
	attrs []slog.Attr
}

func newRecorder(base slog.Handler) *recorder {
	return &recorder{base: base, mu: new(sync.Mutex), recs: new([]slog.Record)}
}

func (h *recorder) Enabled(ctx context.Context, l slog.Level) bool { return h.base.Enabled(ctx, l) }

func (h *recorder) Handle(_ context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(h.attrs...)
	h.mu.Lock()
	*h.recs = append(*h.recs, r)
	h.mu.Unlock()
	return nil
}

func (h *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), as...)
	return &c
}

func (h *recorder) WithGroup(string) slog.Handler { return h }

func (h *recorder) replay(to slog.Handler) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range *h.recs {
		if to.Enabled(context.Background(), r.Level) {
			_ = to.Handle(context.Background(), r)
		}
	}
}
