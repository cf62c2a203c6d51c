package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
	"github.com/ipustack/ipustack/kernels/bench"
	"github.com/spf13/cobra"
)

func newKernelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kernel",
		Short: "list, build and run tile kernels on an emulated tile",
	}
	cmd.AddCommand(newKernelRunCmd(), newKernelListCmd())
	return cmd
}

// assumptionsFlag is the emulator assumption set --conservative selects.
func assumptionsFlag(conservative bool) emu.AssumptionSet {
	if conservative {
		return emu.ConservativeAssumptions
	}
	return emu.DefaultAssumptions
}

func newKernelListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "list the kernels and their parameters",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			for _, name := range kernels.Names() {
				k, _ := kernels.Lookup(name)
				var ps []string
				for _, p := range k.Params {
					ps = append(ps, fmt.Sprintf("%s=%d", p.Name, p.Default))
				}
				fmt.Fprintf(w, "%-20s %-40s %s\n", name, strings.Join(ps, " "), k.Doc)
			}
			return nil
		},
	}
}

func newKernelRunCmd() *cobra.Command {
	var (
		params  []string
		asJSON  bool
		seed    uint64
		noCache bool
		conserv bool
	)
	cmd := &cobra.Command{
		Use:   "run NAME [--param k=240]... [--json]",
		Short: "run one kernel specialisation on an emulated tile and check it against the host",
		Long: `run builds the kernel with the given parameters (through the content-addressed
cache in $XDG_CACHE_HOME/ipustack/kernels), loads it on one emulated IPU21 tile with
seeded data, runs it, checks the result against a host computation and prints
cycles, multiply-accumulates and the fraction of the tile's AMP peak (64 f16 MAC
per cycle). It exits 1 when the numerical check fails. --conservative runs the
emulator with the conservative assumptions (docs/machine.md, "Named
assumptions"): a kernel that depends on a default assumption fails there.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := kernels.Params{}
			for _, kv := range params {
				name, val, ok := strings.Cut(kv, "=")
				v, err := strconv.Atoi(val)
				if !ok || err != nil || name == "" {
					return fmt.Errorf("--param %q: want NAME=INTEGER", kv)
				}
				p[name] = v
			}
			cache := assemble.DefaultCache()
			if noCache {
				cache = assemble.Cache{}
			}
			rep, err := bench.RunAssuming(args[0], p, seed, cache, assumptionsFlag(conserv))
			if rep != nil {
				if asJSON {
					fmt.Fprintln(cmd.OutOrStdout(), rep.JSON())
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), rep.String())
				}
			}
			return err
		},
	}
	cmd.Flags().StringArrayVar(&params, "param", nil, "kernel parameter NAME=VALUE (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as one JSON object")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the generated inputs")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "assemble without reading or writing the kernel cache")
	cmd.Flags().BoolVar(&conserv, "conservative", false, "run the emulator with the conservative assumption set (docs/machine.md)")
	return cmd
}
