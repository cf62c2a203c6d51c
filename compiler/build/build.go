// Package build is the compiler driver: a table of stages from a workload
// graph to an application package, each a span logged with its busy time
// ("stage=... busy_ms=..."), and the run half that feeds the package with
// packed host tensors, checks its output against the host reference and
// computes the metrics line.
package build

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ipustack/ipustack/compiler/emit"
	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/compiler/place"
	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/target"
)

// Recipe is what a package was built from. It is stored in the package
// (ipuexe.Package.Recipe, as JSON; see RecipeOf) so that
// `ipu run FILE` can regenerate the inputs, the host layouts and the
// reference without the command line of the build.
type Recipe struct {
	Workload string      `json:"workload"`
	Flags    graph.Flags `json:"flags"`
	Tiles    int         `json:"tiles"`
}

// Config configures Compile.
type Config struct {
	Recipe
	// Cache is the kernel cache (zero: no caching).
	Cache kernels.Cache
	// Logger receives the stage spans (default slog.Default()).
	Logger *slog.Logger
	// CompilerVersion is recorded in the package.
	CompilerVersion string
	// Force overrides the planner's choices (tests: ForceR, ForceC,
	// ForceQ, ForceStream; Tiles and Fits are the recipe's and ignored
	// here). A package built with it cannot be run from its recipe alone:
	// pass the Result's graph and plan to Run.
	Force low.Options
	// ExportExchange, when set, is a directory that receives each exchange
	// phase's transfers as a JSON snapshot (exchange.ExportPhases), for
	// `ipu exchange bench`.
	ExportExchange string
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
	if r.Tiles < 1 || r.Tiles > target.Tiles {
		errs = append(errs, fmt.Errorf("--tiles must be 1..%d (the C600 has %d tiles), got %d", target.Tiles, target.Tiles, r.Tiles))
	}
	if _, ok := graph.CanonicalPreset(r.Workload); !ok {
		errs = append(errs, fmt.Errorf("unknown workload %q (known: %s)", r.Workload, strings.Join(graph.Presets(), ", ")))
	}
	return errors.Join(errs...)
}

// Prepare builds the graph and the v0 plan of a recipe (cheap: no code).
func Prepare(r Recipe, log *slog.Logger) (*graph.Graph, *low.Plan, error) {
	return prepare(r, log, low.Options{})
}

func prepare(r Recipe, log *slog.Logger, force low.Options) (*graph.Graph, *low.Plan, error) {
	if err := r.Validate(); err != nil {
		return nil, nil, err
	}
	g, err := graph.Preset(r.Workload, r.Flags)
	if err != nil {
		return nil, nil, err
	}
	p, err := low.Recognize(g)
	if err != nil {
		return nil, nil, err
	}
	opts := force
	opts.Tiles, opts.Fits = r.Tiles, place.Fits
	pl, err := low.Lower(p, opts)
	if err != nil {
		return nil, nil, err
	}
	if log != nil {
		gr := &pl.Grid
		attrs := []any{"kind", p.Kind, "m", p.M, "k", p.K, "n", p.N, "grid_rows", gr.R, "grid_cols", gr.C,
			"active_tiles", gr.R * gr.C, "rows_per_tile", gr.Rows(0), "cols_per_tile", gr.Cols(0)}
		if p.Kind == low.KindMLP {
			// The fit choices: row chunks per tile (each chunk's panel
			// gathered through the exchange), streamed or resident weights.
			attrs = append(attrs, "blocks", len(p.Blocks), "biases", p.Biases, "row_chunks", gr.Q,
				"chunk_rows", gr.ChunkRows(0), "streamed_weights", gr.Stream, "column_major_tiles", gr.ColMajor)
		}
		attrs = append(attrs, "estimated_cycles", pl.Estimate.Total, "gemm_cycles", pl.Estimate.Gemm, "exchange_cycles", pl.Estimate.Exchange,
			"reduce_cycles", pl.Estimate.Reduce, "copy_cycles", pl.Estimate.Copy, "elementwise_cycles", pl.Estimate.Elementwise)
		log.Info("v0 plan", attrs...)
	}
	return g, pl, nil
}

// Compile runs the stages.
func Compile(ctx context.Context, cfg Config) (*Result, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	res := &Result{Recipe: cfg.Recipe}
	var (
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
			var err error
			res.Graph, res.Plan, err = prepare(cfg.Recipe, log, cfg.Force)
			if err != nil {
				return err
			}
			res.Name, err = graph.WorkloadName(cfg.Workload, cfg.Flags)
			return err
		}},
		{"place_storage", func() error {
			var err error
			addrs, err = emit.PlaceAll(res.Plan)
			return err
		}},
		{"lower_exchanges", func() error {
			var err error
			scheds, err = emit.Exchanges(res.Plan, addrs, log)
			if err != nil || cfg.ExportExchange == "" {
				return err
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
			specs = emit.Specs(res.Plan)
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
			programs, tileProg, err = emit.Programs(res.Plan, addrs, ks)
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
			res.Package, err = emit.Package(res.Plan, addrs, scheds, imgs, tileProg, cfg.CompilerVersion)
			if err != nil {
				return err
			}
			rj, err := json.Marshal(cfg.Recipe)
			if err != nil {
				return err
			}
			res.Package.Recipe = string(rj)
			return res.Package.Validate(target.IPU21())
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
