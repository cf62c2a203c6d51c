// Package runtime runs an application package on a device: the run half of
// the pipeline in DESIGN.md. Run goes through the steps of the reference
// runtime, each a log event named as in the reference log:
//
//	read package -> device lock -> open -> initialize -> config replay
//	-> load (batches of 64 tiles, startup mark) -> initial sync
//	-> host exchange session -> call "initialize" (weights) -> call "run"
//	(inputs in, outputs out) -> cycle samples
//
// It works over any device.Device; importing this package links the
// emulator backend ("emu"), the default.
package runtime

import (
	"context"
	_ "embed" // the default device configuration
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/config"
	_ "github.com/ipustack/ipustack/device/emudev" // the default backend
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe"
)

// defaultConfig is the C600 capture the reference stack replays (a copy of
// device/config/testdata/c600-init.ipucfg: 2003 writes).
//
//go:embed c600-init.ipucfg
var defaultConfig []byte

// DefaultConfig returns the embedded C600 configuration.
func DefaultConfig() ([]config.Write, error) {
	return config.Parse("c600-init.ipucfg (embedded)", defaultConfig)
}

// Options configure Run.
type Options struct {
	// Device is the backend name (default device.DefaultName, "emu").
	Device string
	// DeviceOptions are passed to device.Open (lock path and wait,
	// backend options). Its Logger defaults to Logger.
	DeviceOptions device.Options
	// ConfigFile is an IPUCFG1 file to replay. Without it the package's
	// own configuration is replayed, or, when the package has none, the
	// embedded C600 capture.
	ConfigFile string
	// Inputs and Weights are the host tensors by binding name: weights go
	// to call "initialize", inputs to call "run".
	Inputs  map[string][]byte
	Weights map[string][]byte
	// Logger receives the run's events (default slog.Default()).
	Logger *slog.Logger
}

// Result is what a run produced.
type Result struct {
	// Outputs are the output tensors by binding name, from call "run".
	Outputs map[string][]byte
	// Cycles is the longest tile span between its first and last cycle
	// sample of the run; MinimumTileCycles the shortest. Zero when the
	// package takes no samples.
	Cycles            uint64
	MinimumTileCycles uint64
	// CycleTile is the physical tile with the longest span.
	CycleTile int
	// Tiles is the package's tile count; SampledTiles those with samples.
	Tiles        int
	SampledTiles int
	// Samples holds, per physical tile of the package's profile plan, the
	// words read at its samples' addresses, in the plan's sample order
	// (ipuexe.TileProfile.Samples); nil when the package has no plan.
	Samples map[int][]uint32
	// SampleWords is the number of sample words read.
	SampleWords  int
	StartupMark  int
	ConfigWrites int
	Initialize   device.CallStats // zero when the package has no "initialize"
	Run          device.CallStats
	Wall         time.Duration
}

// ReadPackage reads and validates a package file, logging the reference's
// "reading application package" events.
func ReadPackage(ctx context.Context, path string, log *slog.Logger) (*ipuexe.Package, error) {
	if log == nil {
		log = slog.Default()
	}
	log.InfoContext(ctx, "reading application package", "path", path)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	pkg, err := ipuexe.Read(data)
	if err != nil {
		return nil, fmt.Errorf("runtime: %s: %w", path, err)
	}
	log.InfoContext(ctx, "application package read", "tiles", len(pkg.Tiles), "compiler", pkg.CompilerVersion)
	return pkg, nil
}

// Run runs pkg on a device: see the package comment for the steps. The
// device is closed (and its lock released) before Run returns.
func Run(ctx context.Context, pkg *ipuexe.Package, opts Options) (res *Result, err error) {
	start := time.Now()
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if pkg == nil {
		return nil, errors.New("runtime: no package")
	}
	writes, err := configWrites(pkg, opts.ConfigFile)
	if err != nil {
		return nil, err
	}
	dopts := opts.DeviceOptions
	if dopts.Logger == nil {
		dopts.Logger = log
	}
	dev, err := device.Open(ctx, opts.Device, dopts)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	defer func() {
		if cerr := dev.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("runtime: closing the device: %w", cerr)
		}
	}()
	info := dev.Info()
	log.InfoContext(ctx, "opening IPU device", "path", info.Path)
	if err := dev.Open(ctx); err != nil {
		return nil, fmt.Errorf("runtime: opening the device: %w", err)
	}
	log.InfoContext(ctx, "IPU device attached", "path", info.Path)
	log.InfoContext(ctx, "initializing IPU device")
	if err := dev.Initialize(ctx); err != nil {
		return nil, fmt.Errorf("runtime: initializing the device: %w", err)
	}
	log.InfoContext(ctx, "IPU device initialized")
	log.InfoContext(ctx, "replaying device configuration", "register_writes", len(writes))
	if err := dev.ReplayConfig(ctx, writes); err != nil {
		return nil, fmt.Errorf("runtime: replaying the configuration: %w", err)
	}
	mark := (len(pkg.Tiles) + ipu21.LoaderBatchTiles - 1) / ipu21.LoaderBatchTiles
	log.InfoContext(ctx, "loading application", "tile_count", len(pkg.Tiles), "final_mark", mark)
	if err := dev.Load(ctx, pkg, nil); err != nil {
		return nil, fmt.Errorf("runtime: loading the application: %w", err)
	}
	log.InfoContext(ctx, "application loaded and initial synchronization completed", "tile_count", len(pkg.Tiles))

	log.InfoContext(ctx, "starting host exchange session", "startup_mark", mark)
	log.InfoContext(ctx, "attaching host exchange pages", "pages", len(pkg.Host.Pages))
	s, err := dev.StartSession(ctx)
	if err != nil {
		return nil, fmt.Errorf("runtime: starting the host exchange session: %w", err)
	}
	defer s.Close()
	log.InfoContext(ctx, "host exchange session started")

	res = &Result{Outputs: map[string][]byte{}, Tiles: len(pkg.Tiles), StartupMark: s.StartupMark(), ConfigWrites: len(writes)}
	call := func(name string, in, out map[string][]byte) (device.CallStats, error) {
		var hc *ipuexe.HostCall
		for i := range pkg.Host.Calls {
			if pkg.Host.Calls[i].Name == name {
				hc = &pkg.Host.Calls[i]
			}
		}
		log.InfoContext(ctx, "invoking host exchange call", "call", name, "command", hc.Command, "phases", len(hc.Phases))
		st, err := s.Call(ctx, name, in, out)
		if err != nil {
			return st, fmt.Errorf("runtime: call %q: %w", name, err)
		}
		log.InfoContext(ctx, "host exchange call completed", "call", name, "cycles", st.Cycles,
			"packets_in", st.PacketsIn, "bytes_in", st.BytesIn, "packets_out", st.PacketsOut, "bytes_out", st.BytesOut,
			"elapsed_ms", st.Wall.Milliseconds())
		return st, nil
	}
	if hasCall(pkg, "initialize") {
		if res.Initialize, err = call("initialize", opts.Weights, nil); err != nil {
			return nil, err
		}
	}
	if !hasCall(pkg, "run") {
		return nil, errors.New(`runtime: the package has no "run" call`)
	}
	if res.Run, err = call("run", opts.Inputs, res.Outputs); err != nil {
		return nil, err
	}
	if err := cycles(pkg, s, res); err != nil {
		return nil, err
	}
	res.Wall = time.Since(start)
	log.InfoContext(ctx, "collected cycle samples", "tiles", res.SampledTiles, "cycles", res.Cycles,
		"minimumTileCycles", res.MinimumTileCycles, "tile", res.CycleTile)
	return res, nil
}

func hasCall(pkg *ipuexe.Package, name string) bool {
	return slices.ContainsFunc(pkg.Host.Calls, func(c ipuexe.HostCall) bool { return c.Name == name })
}

// configWrites picks the configuration to replay: the file, else the
// package's, else the embedded C600 capture.
func configWrites(pkg *ipuexe.Package, file string) ([]config.Write, error) {
	switch {
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("runtime: configuration: %w", err)
		}
		ws, err := config.Parse(file, data)
		if err != nil {
			return nil, fmt.Errorf("runtime: configuration: %w", err)
		}
		return ws, nil
	case len(pkg.Config) > 0:
		ws := make([]config.Write, len(pkg.Config))
		for i, w := range pkg.Config {
			ws[i] = config.Write{Offset: w.Offset, Value: w.Value}
		}
		return ws, nil
	}
	ws, err := DefaultConfig()
	if err != nil {
		return nil, fmt.Errorf("runtime: embedded configuration: %w", err)
	}
	return ws, nil
}

// cycles reads every tile's samples after "run". A tile's span is its
// last step's sample minus its first step's (steps ordered by index; the
// counter is 32 bits, so the difference is taken modulo 2^32). A package
// without a profile plan is read at the runtime state's profile words
// (ipu21.ProfileStartCycle, ProfileEndCycle) of every tile.
func cycles(pkg *ipuexe.Package, s device.Session, res *Result) error {
	type plan struct {
		tile        int
		addrs       []uint32
		first, last int // indices in addrs of the span's ends
		keep        bool
	}
	var plans []plan
	if len(pkg.Profile.Tiles) == 0 {
		for _, t := range pkg.Tiles {
			plans = append(plans, plan{int(t.Physical), []uint32{ipu21.ProfileStartCycle, ipu21.ProfileEndCycle}, 0, 1, false})
		}
	}
	for _, tp := range pkg.Profile.Tiles {
		if len(tp.Samples) < 2 {
			continue
		}
		// Read every sample; the span is between the first and the last
		// step's (by step index).
		first, last := 0, 0
		for i, sm := range tp.Samples {
			if sm.Step < tp.Samples[first].Step {
				first = i
			}
			if sm.Step >= tp.Samples[last].Step {
				last = i
			}
		}
		addrs := make([]uint32, len(tp.Samples))
		for i, sm := range tp.Samples {
			addrs[i] = sm.Address
		}
		plans = append(plans, plan{int(tp.Tile), addrs, first, last, true})
	}
	first := true
	for _, p := range plans {
		w, err := s.ProfileWords(p.tile, p.addrs)
		if err != nil {
			return fmt.Errorf("runtime: cycle samples: %w", err)
		}
		if p.keep {
			if res.Samples == nil {
				res.Samples = map[int][]uint32{}
			}
			res.Samples[p.tile] = w
			res.SampleWords += len(w)
		}
		span := uint64(w[p.last] - w[p.first])
		res.SampledTiles++
		if first || span > res.Cycles {
			res.Cycles, res.CycleTile = span, p.tile
		}
		if first || span < res.MinimumTileCycles {
			res.MinimumTileCycles = span
		}
		first = false
	}
	return nil
}
