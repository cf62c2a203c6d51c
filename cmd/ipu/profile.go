package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ipustack/ipustack/internal/safefile"
	"github.com/ipustack/ipustack/profile"
	"github.com/ipustack/ipustack/profile/report"
)

func newProfileCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "question, render and compare run profiles (ipu run --profile FILE)",
		Long: `profile reads the profile files that ipu run --profile writes: what every tile
did in every cycle, why, and how the exchange phases and memory were laid out.
See docs/PROFILE.md.`,
	}
	cmd.AddCommand(newProfileQueryCmd(), newProfileRenderCmd(), newProfileDiffCmd(), newProfileSyntheticCmd())
	return cmd
}

func newProfileQueryCmd() *cobra.Command {
	var (
		q                   profile.Query
		kinds, kernels, ops []string
		phases              []int
		tiles               string
		asJSON              bool
	)
	cmd := &cobra.Command{
		Use:   "query FILE",
		Short: "group a profile's steps and report cycles per group",
		Long: `query selects steps with the filters (all must match), groups them and prints,
per group: steps, tiles, timeline cycles (cycles in which at least one tile runs
a step of the group), work cycles (summed over tiles), average active tiles
(work / timeline) and the group's cycles per tile: mean, p50, p95 and max.
Cycles of a tile covered by no step count as kind idle. Steps without a kernel,
operation or phase are grouped under their kind in parentheses.`,
		Example: `  ipu profile query run.prof
  ipu profile query run.prof --group-by kernel --kind compute
  ipu profile query run.prof --group-by tile --sort-by max --limit 10 --json
  ipu profile query run.prof --group-by operation --tiles 0:64 --phase 2`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(profile.GroupBys, q.GroupBy) {
				return fmt.Errorf("--group-by %q: want one of %s", q.GroupBy, strings.Join(profile.GroupBys, ", "))
			}
			if !slices.Contains(profile.SortBys, q.SortBy) {
				return fmt.Errorf("--sort-by %q: want one of %s", q.SortBy, strings.Join(profile.SortBys, ", "))
			}
			if q.Limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (all groups) or more", q.Limit)
			}
			for _, ph := range phases {
				if ph < 0 {
					return fmt.Errorf("--phase %d: exchange phase ids are 0 or more", ph)
				}
			}
			p, err := profile.ReadFile(args[0])
			if err != nil {
				return err
			}
			for _, k := range kinds {
				kind, err := profile.ParseKind(k)
				if err != nil {
					return fmt.Errorf("--kind: %w", err)
				}
				q.Kinds = append(q.Kinds, kind)
			}
			q.Kernels, q.Operations, q.Phases = kernels, ops, phases
			if tiles != "" {
				if q.TileLo, q.TileHi, err = parseTileRange(tiles); err != nil {
					return err
				}
			}
			r, err := p.Run(q)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			if asJSON {
				err = r.WriteJSON(w)
			} else {
				err = r.WriteText(w)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.GroupBy, "group-by", "kind", "group by "+strings.Join(profile.GroupBys, "|"))
	f.StringVar(&q.SortBy, "sort-by", "work", "sort groups by "+strings.Join(profile.SortBys, "|")+" (numbers descending)")
	f.StringSliceVar(&kinds, "kind", nil, "only steps of these kinds: idle,compute,exchange,sync,host")
	f.StringSliceVar(&kernels, "kernel", nil, "only steps running these kernels")
	f.StringSliceVar(&ops, "operation", nil, "only steps of these graph operations")
	f.IntSliceVar(&phases, "phase", nil, "only steps of these exchange phases (ids)")
	f.StringVar(&tiles, "tiles", "", "only these tiles: N, LO:HI (HI excluded), LO: or :HI")
	f.IntVar(&q.Limit, "limit", 0, "print at most this many groups (0: all)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// parseTileRange parses N, LO:HI, LO: or :HI into a half-open range (hi 0
// meaning all).
func parseTileRange(s string) (lo, hi int, err error) {
	bad := fmt.Errorf("--tiles %q: want N, LO:HI, LO: or :HI", s)
	a, b, colon := strings.Cut(s, ":")
	if !colon {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, 0, bad
		}
		return n, n + 1, nil
	}
	if a != "" {
		if lo, err = strconv.Atoi(a); err != nil || lo < 0 {
			return 0, 0, bad
		}
	}
	if b != "" {
		if hi, err = strconv.Atoi(b); err != nil || hi <= lo {
			return 0, 0, bad
		}
	}
	return lo, hi, nil
}

func newProfileRenderCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "render FILE -o REPORT.html",
		Short: "write an interactive, self-contained HTML report of a profile",
		Long: `render writes one HTML file that works offline (no network requests; script,
style and data are inside it): a zoomable tile-by-cycle timeline of every tile
with an overview strip, a summary by kind -> kernel -> operation, heatmaps of
busy cycles and memory use per tile, the exchange phases and the plan summary,
with search, filters, tooltips and a details panel.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("render: -o REPORT.html is required")
			}
			if err := refuseOverwrite(out, args[0]); err != nil {
				return err
			}
			if err := checkOutput(out); err != nil {
				return err
			}
			p, err := profile.ReadFile(args[0])
			if err != nil {
				return err
			}
			return writeAtomic(out, func(f io.Writer) error {
				w := bufio.NewWriter(f)
				if err := report.Render(w, p); err != nil {
					return fmt.Errorf("render %s: %w", args[0], err)
				}
				if err := w.Flush(); err != nil {
					return fmt.Errorf("write %s: %w", out, safefile.Cause(err))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to write")
	return cmd
}

func newProfileDiffCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "compare two profiles per kind, kernel and exchange phase (B - A)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := profile.ReadFile(args[0])
			if err != nil {
				return err
			}
			b, err := profile.ReadFile(args[1])
			if err != nil {
				return err
			}
			d, err := profile.Diff(a, b)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(cmd.OutOrStdout())
			if asJSON {
				err = d.WriteJSON(w)
			} else {
				err = d.WriteText(w)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func newProfileSyntheticCmd() *cobra.Command {
	var (
		out   string
		tiles int
		seed  uint64
	)
	cmd := &cobra.Command{
		Use:   "synthetic -o FILE",
		Short: "write a synthetic profile shaped like the SigLIP MLP run (for trying the tools)",
		Long: `synthetic writes a deterministic profile made by profile.Synthetic, shaped like the
SigLIP so400m MLP run (four exchange phases, GEMM, reduce and GELU compute, syncs,
host steps; about 155k cycles). It is marked synthetic. It exists until the
compiler writes real profiles; see docs/PROFILE.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("synthetic: -o FILE is required")
			}
			if tiles < 1 || tiles > profile.MaxTiles {
				return fmt.Errorf("--tiles %d: want 1..%d", tiles, profile.MaxTiles)
			}
			data, err := profile.Synthetic(tiles, seed).Marshal()
			if err != nil {
				return err
			}
			return writeFileAtomic(out, data)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the profile file to write")
	cmd.Flags().IntVar(&tiles, "tiles", 1472, "tiles")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the pseudo-random variation")
	return cmd
}
