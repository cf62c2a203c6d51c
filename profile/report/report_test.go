package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/profile"
)

func render(t testing.TB, p *profile.Profile) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestOffline checks the page can fetch nothing: no URLs, no external
// script, style, image or frame, and a Content Security Policy that
// forbids every fetch.
func TestOffline(t *testing.T) {
	p := profile.Synthetic(1472, 1)
	// A name that looks like a URL must not become one.
	p.Steps[0][0].Provenance.Reason = "see https://example.com/x.js"
	page := render(t, p)
	for _, bad := range []string{"http://", "https://", "//cdn", "<link", "@import", "url(", "<iframe", "<img"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if regexp.MustCompile(`(?i)<script[^>]*\bsrc=`).MatchString(page) {
		t.Error("page loads an external script")
	}
	if !strings.Contains(page, `content="default-src 'none';`) {
		t.Error("page has no Content Security Policy forbidding fetches")
	}
}

// TestData checks the embedded data is valid JSON that holds the profile.
func TestData(t *testing.T) {
	p := profile.Synthetic(64, 1)
	page := render(t, p)
	const open = `<script id="profile-data" type="application/json">`
	i := strings.Index(page, open)
	j := strings.Index(page[i:], "</script>")
	if i < 0 || j < 0 {
		t.Fatal("no data block")
	}
	raw := page[i+len(open) : i+j]
	var d data
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatal(err)
	}
	if d.Meta.Tiles != 64 || len(d.TileStart) != 65 || len(d.Steps.Start) != p.NumSteps() || len(d.Phases) != 4 {
		t.Fatalf("meta %+v tileStart %d steps %d phases %d", d.Meta, len(d.TileStart), len(d.Steps.Start), len(d.Phases))
	}
	for _, col := range [][]int{d.Steps.Kernel, d.Steps.Op, d.Steps.Value, d.Steps.Reason, d.Memory.Name} {
		for _, s := range col {
			if s < 0 || s >= len(d.Strings) {
				t.Fatalf("string index %d of %d", s, len(d.Strings))
			}
		}
	}
	if !d.Meta.Synthetic || !strings.Contains(page, "(synthetic)</title>") {
		t.Error("synthetic profile not marked")
	}
}

// TestEdgeProfiles renders profiles with nothing in them.
func TestEdgeProfiles(t *testing.T) {
	b := profile.NewBuilder(`<script>alert("x")</script>`, "ipu21", 1, 0)
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	page := render(t, p)
	if strings.Contains(page, `<script>alert`) {
		t.Error("workload name not escaped")
	}
	render(t, profile.Synthetic(1, 1))
}

func BenchmarkRender(b *testing.B) {
	p := profile.Synthetic(1472, 1)
	for b.Loop() {
		if err := Render(&bytes.Buffer{}, p); err != nil {
			b.Fatal(err)
		}
	}
}
