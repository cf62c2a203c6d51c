package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"text/tabwriter"
	"time"

	"github.com/ipustack/ipustack/compiler/exchange"
	"github.com/spf13/cobra"
)

// maxPasses bounds --passes: each pass schedules every phase once more, so
// an absurd count would run for days rather than fail.
const maxPasses = 1 << 16

func newExchangeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "exchange",
		Short: "exchange scheduler tools",
	}
	cmd.AddCommand(newExchangeBenchCmd())
	return cmd
}

func newExchangeBenchCmd() *cobra.Command {
	var (
		paired   string
		passes   int
		improve  int
		validate bool
	)
	cmd := &cobra.Command{
		Use:   "bench SNAPSHOT...",
		Short: "schedule exchange snapshots and print horizon, bound and time per phase",
		Long: fmt.Sprintf(`bench reads exchange snapshots (JSON, optionally gzip-compressed; written by
ipu build --export-exchange DIR or exchange.WriteSnapshotFile), schedules every
phase and prints per phase: transfers, destinations, endpoint lower bound,
horizon, gap (horizon over bound, %%), whether the horizon meets the target
exchange.TargetHorizon(bound) = bound + bound/20 + 200 events (the allowance
covers the fabric latency no order of sends can hide: at most 165 events for
one transfer over every pair of tiles), the paired sends used, and the
milliseconds Build took for the phase alone. The last line is the time
BuildAll takes for all phases together (phases in parallel, GOMAXPROCS
workers). It exits 1 when a phase misses the target.`),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if passes < 0 || passes > maxPasses {
				return fmt.Errorf("exchange bench: --passes %d: want 0 (the default) or 1..%d", passes, maxPasses)
			}
			opt := exchange.Options{Passes: passes, Improve: improve,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			switch paired {
			case "auto":
				opt.Paired = exchange.PairedAuto
			case "off":
				opt.Paired = exchange.PairedOff
			default:
				return fmt.Errorf("--paired %q: want auto or off", paired)
			}
			type entry struct {
				file  string
				phase exchange.Phase
			}
			var all []entry
			var phases []exchange.Phase
			for _, f := range args {
				s, err := exchange.ReadSnapshotFile(f)
				if err != nil {
					return err
				}
				for _, p := range s.Phases {
					all = append(all, entry{f, p})
					phases = append(phases, p)
				}
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "snapshot\tphase\ttransfers\tdestinations\tbound\thorizon\tgap %\ttarget\tpaired sends\tordinary bound/horizon\tms\t")
			missed := 0
			for _, e := range all {
				t0 := time.Now()
				s, err := exchange.Build(e.phase, opt)
				ms := time.Since(t0).Seconds() * 1000
				if err != nil {
					return fmt.Errorf("%s: %w", e.file, err)
				}
				if validate {
					if err := s.Validate(); err != nil {
						return fmt.Errorf("%s: phase %d: invalid schedule: %w", e.file, e.phase.ID, err)
					}
				}
				dests := 0
				for _, t := range e.phase.Transfers {
					dests += len(t.Dsts)
				}
				gap := 0.0
				if s.LowerBound > 0 {
					gap = 100 * float64(s.Horizon-s.LowerBound) / float64(s.LowerBound)
				}
				ok := "ok"
				if s.Horizon > exchange.TargetHorizon(s.LowerBound) {
					ok = "MISS"
					missed++
				}
				pd := "-"
				if s.PairedSends > 0 {
					pd = fmt.Sprint(s.PairedSends)
				}
				ord := "-" // the ordinary schedule, when Build compared
				if c := s.Compared; c != nil {
					ord = fmt.Sprintf("%d/%d", c.OrdinaryBound, c.OrdinaryHorizon)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t%s\t%s\t%s\t%.1f\t\n", e.file, e.phase.ID, len(e.phase.Transfers), dests,
					s.LowerBound, s.Horizon, gap, ok, pd, ord, ms)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			t0 := time.Now()
			if _, err := exchange.BuildAll(phases, opt); err != nil {
				return err
			}
			fmt.Fprintf(out, "all %d phases (BuildAll, GOMAXPROCS=%d): %.1f ms\n", len(phases), runtime.GOMAXPROCS(0), time.Since(t0).Seconds()*1000)
			if missed > 0 {
				fmt.Fprintf(out, "%d phase(s) miss horizon <= bound + bound/20 + 200\n", missed)
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&paired, "paired", "auto", "paired 64-bit transfers: auto (Build chooses per transfer) or off (only those a snapshot asks for)")
	cmd.Flags().IntVar(&passes, "passes", 0, "priority orders tried per phase (0: the default)")
	cmd.Flags().IntVar(&improve, "improve", 0, "re-placements of the critical tile's transfers (0: the default, negative: none)")
	cmd.Flags().BoolVar(&validate, "validate", true, "check every schedule with exchange.Validate")
	return cmd
}
