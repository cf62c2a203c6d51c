package main

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ipustack/ipustack/compiler/driver"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels/assemble"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultWorkload is what `ipu run` builds with no arguments.
const defaultWorkload = "siglip-mlp-f16"

// workloadFlags are the workload and shape flags shared by build and run.
type workloadFlags struct {
	workload string
	target   string
	tiles    int
	flags    graph.Flags
	// heads and layers are the encoder's own shape flags (the others
	// are the MLP's, shared).
	heads, layers int
	noCache       bool
	// conservative: build for (and, in run, run under) the emulator's
	// conservative assumption set.
	conservative bool
}

func (w *workloadFlags) register(fs *pflag.FlagSet) {
	w.flags = graph.DefaultFlags()
	fs.StringVar(&w.workload, "workload", defaultWorkload, "workload preset: gemm, mlp, siglip-mlp-f16, siglip-encoder-layer (alias encoder; graphed, not planned yet)")
	fs.StringVar(&w.target, "target", "ipu21", "target chip")
	fs.IntVar(&w.tiles, "tiles", ipu21.Tiles, "number of tiles (1..1472)")
	fs.IntVar(&w.flags.Gemm.M, "m", graph.DefaultGemm.M, "gemm: rows of x")
	fs.IntVar(&w.flags.Gemm.K, "k", graph.DefaultGemm.K, "gemm: inner dimension")
	fs.IntVar(&w.flags.Gemm.N, "n", graph.DefaultGemm.N, "gemm: columns of w")
	fs.IntVar(&w.flags.MLP.Batch, "batch", graph.DefaultMLP.Batch, "mlp, encoder: batch")
	fs.IntVar(&w.flags.MLP.Tokens, "tokens", graph.DefaultMLP.Tokens, "mlp, encoder: tokens per batch item")
	fs.IntVar(&w.flags.MLP.Dim, "dim", graph.DefaultMLP.Dim, "mlp, encoder: model dimension")
	fs.IntVar(&w.flags.MLP.Hidden, "hidden", graph.DefaultMLP.Hidden, "mlp, encoder: hidden dimension")
	fs.IntVar(&w.heads, "heads", graph.DefaultEncoder.Heads, "encoder: attention heads (dividing --dim)")
	fs.IntVar(&w.layers, "layers", graph.DefaultEncoder.Layers, "encoder: layers (each layer's output is the next one's input)")
	fs.IntVar(&w.flags.MLP.Blocks, "blocks", graph.DefaultMLP.Blocks, "mlp: blocks (each block's output is the next one's input)")
	fs.BoolVar(&w.flags.MLP.Biases, "biases", false, "mlp: with biases (b1 after the first, b2 after the second GEMM of each block)")
	fs.Uint64Var(&w.flags.Seed, "seed", 0, "data seed of inputs and weights")
	fs.BoolVar(&w.noCache, "no-kernel-cache", false, "assemble kernels without the on-disk cache")
	fs.BoolVar(&w.conservative, "conservative", false, "build kernels correct under the emulator's conservative assumptions (docs/machine.md); run: also run the emulator with them")
}

// recipe validates the flags into a build recipe.
func (w *workloadFlags) recipe() (driver.Recipe, error) {
	if _, err := ipu21.Lookup(w.target); err != nil {
		return driver.Recipe{}, err
	}
	c, _ := graph.CanonicalPreset(w.workload)
	f := w.flags
	if c == "siglip-encoder-layer" {
		f.Encoder = graph.EncoderFlags(f.MLP, w.heads, w.layers)
	}
	r := driver.Recipe{Workload: w.workload, Flags: f, Tiles: w.tiles}
	if w.conservative {
		r.Assumptions = emu.ConservativeName
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	switch c {
	case "gemm":
		return r, f.Gemm.Validate()
	case "siglip-encoder-layer":
		return r, f.Encoder.Validate()
	}
	return r, f.MLP.Validate()
}

func (w *workloadFlags) cache() assemble.Cache {
	if w.noCache {
		return assemble.Cache{}
	}
	return assemble.DefaultCache()
}

func newBuildCmd() *cobra.Command {
	var (
		wf       workloadFlags
		out      string
		exportXD string
	)
	cmd := &cobra.Command{
		Use:   "build --workload NAME [shape flags] [--tiles N] -o FILE.ipuexe",
		Short: "compile a workload into an application package",
		Long: `build compiles a workload preset into an application package for N tiles and
writes it: the costed planner (compiler/mid) proposes finalists, each is lowered
to per-tile work lists (compiler/low) and reranked on its scheduled exchanges.
Each stage is logged with its busy time.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("build: -o FILE.ipuexe is required")
			}
			// Check the output before the compile, not after it.
			if err := checkOutput(out); err != nil {
				return fmt.Errorf("build: %w", err)
			}
			r, err := wf.recipe()
			if err != nil {
				return fmt.Errorf("build: %w", err)
			}
			start := time.Now()
			res, err := driver.Compile(cmd.Context(), driver.Config{Recipe: r, Cache: wf.cache(), CompilerVersion: Version, ExportExchange: exportXD})
			if err != nil {
				return fmt.Errorf("build: %w", err)
			}
			slog.Info("writing application package", "tiles", len(res.Package.Tiles), "path", out)
			data, err := res.Package.Marshal()
			if err != nil {
				return fmt.Errorf("build: %w", err)
			}
			if err := writeFileAtomic(out, data); err != nil {
				return fmt.Errorf("build: %w", err)
			}
			slog.Info("application package written", "bytes", len(data), "build_ms", time.Since(start).Milliseconds())
			return nil
		},
	}
	wf.register(cmd.Flags())
	cmd.Flags().StringVarP(&out, "output", "o", "", "package file to write")
	cmd.Flags().StringVar(&exportXD, "export-exchange", "", "also write each exchange phase's transfers as a JSON snapshot into this directory (see ipu exchange bench)")
	return cmd
}
