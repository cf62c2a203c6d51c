package main

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/ipustack/ipustack/compiler/driver"
	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/launch"
	"github.com/ipustack/ipustack/runtime"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newRunCmd() *cobra.Command {
	var (
		wf       workloadFlags
		asJSON   bool
		dev      string
		lockWait time.Duration
		profPath string
		ud       userDataFlags
		bootPath string
	)
	cmd := &cobra.Command{
		Use:   "run [FILE.ipuexe | --workload NAME [shape flags] [--tiles N]] [--weights FILE.safetensors [--weights-prefix P]] [--input FILE.npy] [--output FILE.npy] [--json] [--profile FILE]",
		Short: "run a package (or build and run a workload) on a device and check it",
		Long: `run runs an application package built by ipu build, or builds the workload
given by the flags (default: siglip-mlp-f16 on 1472 tiles) and runs it, on the
device (default: the emulator). It checks the output against the host reference
and prints one metrics line of key=value (--json: one JSON object). It exits 0
only when numericalTest=PASS. --profile FILE also writes the run profile
(per-tile steps from the cycle samples, exchange phases, memory maps, plan;
see docs/PROFILE.md and ipu profile) and adds profile= and samples= to the
metrics.

By default the input and weights are seeded random data (data=seeded in the
metrics). --weights reads the MLP's weights from a safetensors checkpoint by
their Hugging Face names under --weights-prefix, --input reads the input from
an .npy, and --output writes the device's result as .npy; the host reference
runs on the same data (data=user). These also apply to a package file: a
package is code and runs with any data of the shapes it binds (ipu inspect
lists them).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var (
				pkg *ipuexe.Package
				r   driver.Recipe
				g   *graph.Graph
			)
			start := time.Now()
			var ro launch.Options
			if len(args) == 1 {
				var changed []string
				cmd.Flags().Visit(func(f *pflag.Flag) {
					switch {
					case cmd.InheritedFlags().Lookup(f.Name) != nil: // global flags (--log-level ...)
					case slices.Contains([]string{"json", "device", "lock-wait", "no-kernel-cache", "profile", "conservative", "isa", "isa-permute", "bootloader"}, f.Name),
						slices.Contains(ud.names(), f.Name):
					default:
						changed = append(changed, "--"+f.Name)
					}
				})
				if len(changed) > 0 {
					return fmt.Errorf("run: %v apply when building; a package file carries its own workload", changed)
				}
				var err error
				if pkg, err = runtime.ReadPackage(ctx, args[0], nil); err != nil {
					return err
				}
				if r, err = driver.RecipeOf(pkg); err != nil {
					return fmt.Errorf("run: %s: %w", args[0], err)
				}
				if ud.output != "" {
					if err := refuseOverwriteFlag("--output", ud.output, args[0]); err != nil {
						return fmt.Errorf("run: %w", err)
					}
				}
				if err := ud.apply(r, &ro); err != nil {
					return fmt.Errorf("run: %w", err)
				}
				// The recipe names the workload graph: the seeded data and
				// the host reference. The package says everything else
				// (launch): nothing is planned or scheduled again.
				if g, err = graph.Preset(r.Workload, r.Flags); err != nil {
					return fmt.Errorf("run: %s: the recipe's workload: %w", args[0], err)
				}
			} else {
				var err error
				if r, err = wf.recipe(); err != nil {
					return fmt.Errorf("run: %w", err)
				}
				// User data is read before the build, so a bad file fails fast.
				if err := ud.apply(r, &ro); err != nil {
					return fmt.Errorf("run: %w", err)
				}
				res, err := driver.Compile(ctx, driver.Config{Recipe: r, Cache: wf.cache(), CompilerVersion: Version})
				if err != nil {
					return fmt.Errorf("run: %w", err)
				}
				// Through the package format, as any application goes.
				data, err := res.Package.Marshal()
				if err != nil {
					return fmt.Errorf("run: %w", err)
				}
				if pkg, err = ipuexe.Read(data); err != nil {
					return fmt.Errorf("run: %w", err)
				}
				g = res.Graph
				slog.Info("package built", "build_ms", time.Since(start).Milliseconds(), "bytes", len(data))
			}
			t0 := time.Now()
			dopts, err := deviceOptions(dev, lockWait, bootPath)
			if err != nil {
				return fmt.Errorf("run: %w", err)
			}
			ro.Device, ro.DeviceOptions, ro.Profile, ro.Conservative = dev, dopts, profPath, wf.conservative
			m, err := launch.Run(ctx, pkg, g, ro)
			if err != nil {
				return fmt.Errorf("run: %w", err)
			}
			slog.Info("run finished", "run_ms", time.Since(t0).Milliseconds(), "total_ms", time.Since(start).Milliseconds())
			if asJSON {
				fmt.Fprintln(cmd.OutOrStdout(), m.JSON())
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), m.Line())
			}
			if m.NumericalTest != "PASS" {
				return exitError{1}
			}
			return nil
		},
	}
	wf.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the metrics as one JSON object")
	cmd.Flags().StringVar(&dev, "device", device.DefaultName, "device backend")
	cmd.Flags().DurationVar(&lockWait, "lock-wait", 0, "how long to wait for the device lock")
	ud.register(cmd.Flags())
	cmd.Flags().StringVar(&bootPath, "bootloader", "", "the SDK's tile bootloader ELF (bin/ipu/tile_bootloader_cc_ipu21.elf), for --device c600 and c600-model (the model has a stand-in of its own)")
	cmd.Flags().StringVar(&profPath, "profile", "", "write the run profile to this file (adds profile= and samples= to the metrics)")
	return cmd
}
