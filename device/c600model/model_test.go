package c600model_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/c600model"
	"github.com/ipustack/ipustack/internal/diag"
	"github.com/ipustack/ipustack/runtime"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func run(t *testing.T, dev string, d *diag.Diagnostic) *runtime.Result {
	t.Helper()
	res, err := runtime.Run(context.Background(), d.Package, runtime.Options{Device: dev, Inputs: d.Inputs, Weights: d.Weights,
		Logger: quiet, DeviceOptions: device.Options{NoLock: true}})
	if err != nil {
		t.Fatalf("%s: %v", dev, err)
	}
	return res
}

// TestDifferential runs one package through the driver over the model and
// on the emulator backend directly: outputs, cycle samples and host
// traffic must be identical.
func TestDifferential(t *testing.T) {
	for _, tiles := range []int{130, 64} {
		d, err := diag.Build(tiles)
		if err != nil {
			t.Fatal(err)
		}
		emu, model := run(t, "emu", d), run(t, c600model.Name, d)
		if diffs, err := d.Check(model.Outputs["results"]); err != nil || len(diffs) > 0 {
			t.Fatalf("%d tiles: model results: %v %s", tiles, err, diag.Report(diffs, 10))
		}
		if !maps.EqualFunc(emu.Outputs, model.Outputs, slices.Equal) {
			t.Fatalf("%d tiles: outputs differ", tiles)
		}
		if emu.Cycles == 0 || emu.Cycles != model.Cycles || emu.MinimumTileCycles != model.MinimumTileCycles || emu.CycleTile != model.CycleTile {
			t.Fatalf("%d tiles: cycles emu %d/%d tile %d, model %d/%d tile %d", tiles, emu.Cycles, emu.MinimumTileCycles, emu.CycleTile,
				model.Cycles, model.MinimumTileCycles, model.CycleTile)
		}
		if !maps.EqualFunc(emu.Samples, model.Samples, slices.Equal) || emu.SampleWords == 0 {
			t.Fatalf("%d tiles: cycle samples differ (%d words)", tiles, emu.SampleWords)
		}
		for _, p := range [][2]struct {
			name string
			st   device.CallStats
		}{{{"emu initialize", emu.Initialize}, {"model initialize", model.Initialize}}, {{"emu run", emu.Run}, {"model run", model.Run}}} {
			a, b := p[0].st, p[1].st
			if a.Phases != b.Phases || a.Handshakes != b.Handshakes || a.PacketsIn != b.PacketsIn || a.BytesIn != b.BytesIn ||
				a.PacketsOut != b.PacketsOut || a.BytesOut != b.BytesOut {
				t.Fatalf("%d tiles: %s %+v, %s %+v", tiles, p[0].name, a, p[1].name, b)
			}
		}
		if emu.StartupMark != model.StartupMark || model.StartupMark != (tiles+63)/64 {
			t.Fatalf("%d tiles: startup marks %d and %d", tiles, emu.StartupMark, model.StartupMark)
		}
	}
}

// TestTwoSessions: a session closed and a new one started on the loaded
// application runs its calls again.
func TestTwoSessions(t *testing.T) {
	ctx := context.Background()
	d, err := diag.Build(8)
	if err != nil {
		t.Fatal(err)
	}
	dev := c600model.New(c600model.Options{})
	defer dev.Close()
	writes, err := runtime.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dev.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dev.ReplayConfig(ctx, writes); err != nil {
		t.Fatal(err)
	}
	if err := dev.Load(ctx, d.Package, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		s, err := dev.StartSession(ctx)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if i == 0 {
			if _, err := s.Call(ctx, "initialize", d.Weights, nil); err != nil {
				t.Fatal(err)
			}
		}
		out := map[string][]byte{}
		if _, err := s.Call(ctx, "run", d.Inputs, out); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if diffs, err := d.Check(out["results"]); err != nil || len(diffs) > 0 {
			t.Fatalf("session %d: %v %s", i, err, diag.Report(diffs, 5))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if dev.Card() == nil || dev.Card().Chip() == nil || dev.Info().Name != c600model.Name {
		t.Fatal("the model's card and chip")
	}
}
