package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProfileCommands(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.prof"), filepath.Join(dir, "b.prof")
	if code, _, errs := ipu(t, "profile", "synthetic", "-o", a, "--tiles", "128"); code != 0 {
		t.Fatalf("synthetic: %d %s", code, errs)
	}
	if code, _, errs := ipu(t, "profile", "synthetic", "-o", b, "--tiles", "128", "--seed", "2"); code != 0 {
		t.Fatalf("synthetic: %d %s", code, errs)
	}

	code, out, errs := ipu(t, "profile", "query", a)
	if code != 0 || !strings.Contains(out, "group by kind") || !strings.Contains(out, "compute") || !strings.Contains(out, "total") {
		t.Fatalf("query: %d\n%s%s", code, out, errs)
	}
	code, out, errs = ipu(t, "profile", "query", a, "--group-by", "operation", "--kind", "compute", "--kernel", "gemm_f16",
		"--tiles", "0:64", "--sort-by", "p95", "--limit", "1")
	if code != 0 || !strings.Contains(out, "block0.fc") || !strings.Contains(out, "(1 more)") {
		t.Fatalf("filtered query: %d\n%s%s", code, out, errs)
	}
	code, out, errs = ipu(t, "profile", "query", a, "--group-by", "phase", "--phase", "1,2", "--json")
	var r struct {
		GroupBy string `json:"groupBy"`
		Groups  []struct {
			Key string `json:"key"`
		} `json:"groups"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.GroupBy != "phase" || len(r.Groups) != 2 {
		t.Fatalf("json query: %d %+v\n%s%s", code, r, out, errs)
	}
	code, out, errs = ipu(t, "profile", "query", a, "--group-by", "tile", "--tiles", "5", "--operation", "block0.fc2")
	if code != 0 || !strings.Contains(out, "\n  5 ") {
		t.Fatalf("one-tile query: %d\n%s%s", code, out, errs)
	}

	code, out, errs = ipu(t, "profile", "diff", a, b)
	if code != 0 || !strings.Contains(out, "Kernel") || !strings.Contains(out, "gemm_f16") || !strings.Contains(out, "block0.fc2.reduce") {
		t.Fatalf("diff: %d\n%s%s", code, out, errs)
	}
	code, out, _ = ipu(t, "profile", "diff", a, b, "--json")
	if code != 0 || !json.Valid([]byte(out)) {
		t.Fatalf("diff --json: %d\n%s", code, out)
	}

	html := filepath.Join(dir, "r.html")
	if code, _, errs := ipu(t, "profile", "render", a, "-o", html); code != 0 {
		t.Fatalf("render: %d %s", code, errs)
	}
	page, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(page), "<canvas id=\"timeline\"") {
		t.Fatalf("render wrote %d bytes, %v", len(page), err)
	}
}

func TestProfileErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "g.prof")
	if code, _, errs := ipu(t, "profile", "synthetic", "-o", good, "--tiles", "8"); code != 0 {
		t.Fatal(errs)
	}
	junk := filepath.Join(dir, "junk.prof")
	if err := os.WriteFile(junk, []byte("not a profile at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"profile", "query", junk}, "not an ipustack profile"},
		{[]string{"profile", "query", filepath.Join(dir, "missing")}, "no such file"},
		{[]string{"profile", "query", good, "--group-by", "colour"}, "--group-by \"colour\""},
		{[]string{"profile", "query", good, "--sort-by", "x"}, "--sort-by \"x\""},
		{[]string{"profile", "query", good, "--kind", "nap"}, "unknown step kind"},
		{[]string{"profile", "query", good, "--tiles", "9:3"}, "--tiles \"9:3\""},
		{[]string{"profile", "query", good, "--tiles", "x"}, "--tiles \"x\""},
		{[]string{"profile", "render", good}, "-o REPORT.html is required"},
		{[]string{"profile", "render", junk, "-o", filepath.Join(dir, "x.html")}, "not an ipustack profile"},
		{[]string{"profile", "diff", good, junk}, "not an ipustack profile"},
		{[]string{"profile", "synthetic"}, "-o FILE is required"},
		{[]string{"profile", "synthetic", "-o", junk, "--tiles", "0"}, "--tiles 0"},
	}
	for _, c := range cases {
		code, _, errs := ipu(t, c.args...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("ipu %s: exit %d, stderr %q, want an error with %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}

func TestParseTileRange(t *testing.T) {
	for s, want := range map[string][2]int{"3": {3, 4}, "2:9": {2, 9}, "4:": {4, 0}, ":7": {0, 7}} {
		lo, hi, err := parseTileRange(s)
		if err != nil || lo != want[0] || hi != want[1] {
			t.Errorf("%q: %d %d %v, want %v", s, lo, hi, err, want)
		}
	}
	for _, s := range []string{"", "-1", "a:b", "5:5", "1:2:3"} {
		if _, _, err := parseTileRange(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}
