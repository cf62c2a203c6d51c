package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/internal/diag"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/runtime"
	"github.com/spf13/cobra"
)

// diagnoseTamper, when set (tests only), may change the diagnostic after
// it is built, e.g. to make the expected results wrong and check that the
// command reports the difference.
var diagnoseTamper func(d *diag.Diagnostic)

// maxDiagnoseLines caps the differences printed; the rest are counted.
const maxDiagnoseLines = 20

func newDiagnoseCmd() *cobra.Command {
	var (
		tiles    int
		dev      string
		lockWait time.Duration
		bootPath string
	)
	cmd := &cobra.Command{
		Use:   "diagnose [--tiles N] [--device emu]",
		Short: "run the chip diagnostic: every tile, worker, exchange path and the host link",
		Long: `diagnose builds a diagnostic application with ipustack's own assembler, linker
and exchange generator, runs it through the runtime on a device and checks every
result word. On each tile the supervisor and all six workers run and leave
signatures; every tile sends its id to the next tile of a ring (logical
l -> l+1) and multicasts it to tiles l+7 and l+31; the host uploads weights and
inputs through the host link, and reads every tile's results back.
It prints PASS, or each differing word (tile, address, expected, got; at most 20
lines, then a count) and exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dev == "" {
				return fmt.Errorf("diagnose: --device \"\": want a device backend (known: %s)", strings.Join(device.Names(), ", "))
			}
			if lockWait < 0 {
				return fmt.Errorf("diagnose: --lock-wait %v: want a duration >= 0", lockWait)
			}
			dopts, err := deviceOptions(dev, lockWait, bootPath)
			if err != nil {
				return fmt.Errorf("diagnose: %w", err)
			}
			out := cmd.OutOrStdout()
			start := time.Now()
			d, err := diag.Build(tiles)
			if err != nil {
				return err
			}
			if diagnoseTamper != nil {
				diagnoseTamper(d)
			}
			// Through the package format, as any application goes.
			data, err := d.Package.Marshal()
			if err != nil {
				return fmt.Errorf("diagnose: %w", err)
			}
			pkg, err := ipuexe.Read(data)
			if err != nil {
				return fmt.Errorf("diagnose: %w", err)
			}
			built := time.Since(start)
			res, err := runtime.Run(cmd.Context(), pkg, runtime.Options{
				Device:        dev,
				DeviceOptions: dopts,
				Inputs:        d.Inputs,
				Weights:       d.Weights,
			})
			if err != nil {
				return err
			}
			diffs, err := d.Check(res.Outputs["results"])
			if err != nil {
				return err
			}
			summary := fmt.Sprintf("tiles=%d exchangeCycles=%d runCycles=%d hostPacketsIn=%d hostPacketsOut=%d build=%s total=%s",
				tiles, d.RowHorizon, res.Cycles, res.Initialize.PacketsIn+res.Run.PacketsIn,
				res.Run.PacketsOut, built.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			if len(diffs) > 0 {
				fmt.Fprint(out, diag.Report(diffs, maxDiagnoseLines))
				fmt.Fprintf(out, "FAIL %d differences %s\n", len(diffs), summary)
				return exitError{1}
			}
			fmt.Fprintf(out, "PASS %s\n", summary)
			return nil
		},
	}
	cmd.Flags().IntVar(&tiles, "tiles", ipu21.Tiles, "number of tiles (logical 0..N-1)")
	cmd.Flags().StringVar(&dev, "device", device.DefaultName, "device backend")
	cmd.Flags().DurationVar(&lockWait, "lock-wait", 0, "how long to wait for the device lock")
	cmd.Flags().StringVar(&bootPath, "bootloader", "", "the SDK's tile bootloader ELF (bin/ipu/tile_bootloader_cc_ipu21.elf), for --device c600 and c600-model (the model has a stand-in of its own)")
	return cmd
}
