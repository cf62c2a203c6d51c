package report

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/ipustack/ipustack/compiler/driver"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/launch"
	"github.com/ipustack/ipustack/profile"
)

// rowPaint says per drawn row whether it has a pixel other than the idle
// background.
const rowPaint = `(() => {
  const c = document.getElementById('timeline');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const w = c.width, rows = Number(c.dataset.rowsDrawn), rowPx = c.height / rows;
  const out = [];
  for (let r = 0; r < rows; r++) {
    const y = Math.floor(r * rowPx);
    let p = false;
    for (let x = 0; x < w && !p; x++) {
      const i = (y * w + x) * 4;
      p = d[i] !== 0xec || d[i+1] !== 0xee || d[i+2] !== 0xf2;
    }
    out.push(p);
  }
  return out;
})()`

// TestBrowserReportFullChipRun renders the default run's profile (the
// SigLIP MLP on all 1472 tiles, 14 of them idle): all 1472 tile rows are
// drawn, the idle tiles' rows in the idle colour only and every other row
// painted. The compile and run take about 15 s: skipped with -short.
func TestBrowserReportFullChipRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the full-chip run with -short")
	}
	if findBrowser() == "" && !inCI() {
		t.Skip("skipping the browser test: no Chromium or Chrome binary found")
	}
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	r := driver.Recipe{Workload: "siglip-mlp-f16", Flags: graph.DefaultFlags(), Tiles: ipu21.Tiles}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	res, err := driver.Compile(context.Background(), driver.Config{Recipe: r, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.ArtifactDir()
	file := filepath.Join(dir, "full.prof")
	m, err := launch.Run(context.Background(), res.Package, res.Graph, launch.Options{Logger: quiet, Profile: file})
	if err != nil {
		t.Fatal(err)
	}
	if m.NumericalTest != "PASS" {
		t.Fatalf("metrics %s", m.Line())
	}
	p, err := profile.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	idle := 0
	for _, ss := range p.Steps {
		if len(ss) == 0 {
			idle++
		}
	}
	if p.Synthetic || p.Tiles() != 1472 || idle == 0 {
		t.Fatalf("profile: synthetic %v, %d tiles, %d idle; want a real 1472-tile run with idle tiles", p.Synthetic, p.Tiles(), idle)
	}
	page := renderFile(t, dir, "full.html", p)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible(chromedp.CSS(`body[data-ready="true"]`))); err != nil {
		t.Fatal(err)
	}
	rows, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#timeline`), "data-rows-drawn"))
	if err != nil {
		t.Fatal(err)
	}
	idleRows, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#timeline`), "data-idle-rows"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](rowPaint))
	if err != nil {
		t.Fatal(err)
	}
	var painted []bool
	if err := json.Unmarshal(raw, &painted); err != nil {
		t.Fatal(err)
	}
	if rows.Value != "1472" || len(painted) != 1472 {
		t.Fatalf("timeline drew %q tile rows (%d measured); want 1472", rows.Value, len(painted))
	}
	if idleRows.Value != strconv.Itoa(idle) {
		t.Errorf("timeline counts %q idle rows, the profile has %d idle tiles", idleRows.Value, idle)
	}
	for tile, ss := range p.Steps {
		if painted[tile] != (len(ss) > 0) {
			t.Errorf("tile %d (%d steps): row painted %v", tile, len(ss), painted[tile])
		}
	}
	t.Logf("full-chip run: %d tiles (%d idle), %d steps, %d phases", p.Tiles(), idle, p.NumSteps(), len(p.Phases))
}
