package report

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/ipustack/ipustack/compiler/driver"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/launch"
	"github.com/ipustack/ipustack/profile"
)

// TestRealRunWindows: a small run's profile has, in every exchange phase
// it ran, a window for every tile the phase's transfers name (sender or
// receiver), sends only on senders and receives only on receivers, with
// the received bytes those of every destination and the sent bytes the
// phase's transferred bytes (each transfer once, more only for split
// multicasts).
func TestRealRunWindows(t *testing.T) {
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	r := driver.Recipe{Workload: "mlp", Flags: graph.Flags{MLP: graph.MLPConfig{Batch: 1, Tokens: 50, Dim: 64, Hidden: 96, Blocks: 1}}, Tiles: 16}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	res, err := driver.Compile(context.Background(), driver.Config{Recipe: r, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "run.prof")
	if _, err := launch.Run(context.Background(), res.Package, res.Graph, launch.Options{Logger: quiet, Profile: file}); err != nil {
		t.Fatal(err)
	}
	p, err := profile.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Phases) == 0 {
		t.Fatal("the profile has no exchange phases")
	}
	for _, ph := range p.Phases {
		sends, recvs := map[int]bool{}, map[int]bool{}
		wantSent, wantRecv := 0, 0
		found := false
		for _, e := range res.Plan.Exchanges {
			if e.ID != ph.ID {
				continue
			}
			found = true
			for _, tr := range e.Transfers {
				sends[tr.Src] = true
				wantSent += 4 * tr.Words
				wantRecv += 4 * tr.Words * len(tr.Dsts)
				for _, d := range tr.Dsts {
					recvs[d.Tile] = true
				}
			}
		}
		if !found {
			t.Fatalf("phase %d is not in the plan", ph.ID)
		}
		sent, recv := 0, 0
		got := map[int]bool{}
		for _, w := range ph.Windows {
			got[w.Tile] = true
			if w.Sends() != sends[w.Tile] || w.Receives() != recvs[w.Tile] {
				t.Errorf("phase %d tile %d: window %+v; the tile sends %v, receives %v", ph.ID, w.Tile, w, sends[w.Tile], recvs[w.Tile])
			}
			if w.Sends() != (w.SendBytes > 0) || w.Receives() != (w.RecvBytes > 0) {
				t.Errorf("phase %d tile %d: window %+v: bytes without a window or a window without bytes", ph.ID, w.Tile, w)
			}
			sent += int(w.SendBytes)
			recv += int(w.RecvBytes)
		}
		for tile := range p.Steps {
			if (sends[tile] || recvs[tile]) && !got[tile] {
				t.Errorf("phase %d (%s): tile %d takes part but has no window", ph.ID, ph.Name, tile)
			}
		}
		if recv != wantRecv || sent < wantSent || (ph.Schedule != "paired" && sent != wantSent) {
			t.Errorf("phase %d (%s): windows send %d and receive %d bytes; the transfers move %d bytes to %d destination bytes", ph.ID, ph.Name, sent, recv, wantSent, wantRecv)
		}
		t.Logf("phase %d (%s, %s): %d windows, %d bytes sent, %d received, horizon %d", ph.ID, ph.Name, ph.Schedule, len(ph.Windows), sent, recv, ph.Horizon)
	}
}
