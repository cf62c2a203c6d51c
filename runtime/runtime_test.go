package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/internal/diag"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/runtime"
)

func opts(t *testing.T, log *bytes.Buffer, d *diag.Diagnostic) runtime.Options {
	return runtime.Options{
		DeviceOptions: device.Options{LockPath: filepath.Join(t.TempDir(), "lock")},
		Inputs:        d.Inputs,
		Weights:       d.Weights,
		Logger:        slog.New(slog.NewTextHandler(log, nil)),
	}
}

func TestRunDiagnostic(t *testing.T) {
	d, err := diag.Build(64)
	if err != nil {
		t.Fatal(err)
	}
	// Through the file format, as a package on disk would go.
	data, err := d.Package.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := ipuexe.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := runtime.Run(context.Background(), pkg, opts(t, &log, d))
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	diffs, err := d.Check(res.Outputs["results"])
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("%d differences:\n%s", len(diffs), diag.Report(diffs, 20))
	}
	if res.Cycles == 0 || res.MinimumTileCycles == 0 || res.Cycles < res.MinimumTileCycles || res.SampledTiles != 64 {
		t.Fatalf("cycles %d min %d sampled %d", res.Cycles, res.MinimumTileCycles, res.SampledTiles)
	}
	if res.StartupMark != 1 || res.ConfigWrites != 2003 {
		t.Fatalf("startup mark %d, config writes %d", res.StartupMark, res.ConfigWrites)
	}
	if res.Run.Phases != 2 || res.Run.Handshakes != 3 || res.Initialize.Phases != 1 {
		t.Fatalf("call stats: initialize %+v run %+v", res.Initialize, res.Run)
	}
	for _, want := range []string{
		"opening IPU device",
		"initializing IPU device", "register_writes=2003", "tile_count=64 final_mark=1", "starting host exchange session",
		"application loaded and initial synchronization completed", "startup_mark=1",
		"attaching host exchange pages\" pages=2", `call=initialize command=0 phases=1`, `call=run command=1 phases=2`,
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	// The emulator owns no hardware: it takes no lock.
	if strings.Contains(log.String(), "hardware ownership") {
		t.Errorf("an emulator run took the hardware lock:\n%s", log.String())
	}
}

func TestRunFaultNamesTile(t *testing.T) {
	d, err := diag.Build(8)
	if err != nil {
		t.Fatal(err)
	}
	// Break tile 5's exchange row: a trap where its first instruction was.
	bad := d.Package.Tiles[5]
	segs := append([]ipuexe.Segment(nil), bad.Segments...)
	for i, s := range segs {
		if s.Address == diag.RowAddr {
			row := append([]byte(nil), s.Data...)
			copy(row, []byte{0x03, 0x10, 0x80, 0x41}) // trap 3
			segs[i].Data = row
		}
	}
	d.Package.Tiles[5].Segments = segs
	var log bytes.Buffer
	_, err = runtime.Run(context.Background(), d.Package, opts(t, &log, d))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if !strings.Contains(msg, `call "run"`) || !strings.Contains(msg, "tile "+itoa(int(bad.Physical))) || !strings.Contains(msg, "trap") {
		t.Fatalf("error does not name the call, tile and trap: %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestRunErrors(t *testing.T) {
	d, err := diag.Build(4)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	o := opts(t, &log, d)
	o.Device = "ipu0"
	if _, err := runtime.Run(context.Background(), d.Package, o); err == nil || !strings.Contains(err.Error(), "use --device emu") {
		t.Fatalf("unknown device: %v", err)
	}
	o = opts(t, &log, d)
	o.Inputs = nil
	if _, err := runtime.Run(context.Background(), d.Package, o); err == nil || !strings.Contains(err.Error(), `needs tensor "x"`) {
		t.Fatalf("missing input: %v", err)
	}
	o = opts(t, &log, d)
	o.ConfigFile = filepath.Join(t.TempDir(), "missing.ipucfg")
	if _, err := runtime.Run(context.Background(), d.Package, o); err == nil || !strings.Contains(err.Error(), "configuration") {
		t.Fatalf("missing config file: %v", err)
	}
	if _, err := runtime.Run(context.Background(), nil, o); err == nil {
		t.Fatal("nil package accepted")
	}
}
