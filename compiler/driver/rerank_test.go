package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/compiler/emit"
	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipuexe"
)

// compileLogged compiles with a JSON logger and returns the result and
// every log line as a map.
func compileLogged(t *testing.T, cfg Config) (*Result, []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	cfg.CompilerVersion = "test"
	cfg.Verify = true
	res, err := Compile(context.Background(), cfg)
	if err != nil {
		t.Fatalf("compile %+v: %v", cfg.Recipe, err)
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	return res, lines
}

func num(t *testing.T, m map[string]any, k string) int {
	t.Helper()
	v, ok := m[k].(float64)
	if !ok {
		t.Fatalf("line %v: no numeric %q", m, k)
	}
	return int(v)
}

// TestFinalistRerank: a small MLP logs its finalists in rank order (by
// mid_cycles), the chosen one has the fewest low_cycles (a finalist left
// unscheduled has a bound no better than the choice), the final line
// repeats its cycles, the package records the choice (so that it runs
// from its recipe alone), and the emulated cycles are within 10 % of
// final_cycles.
func TestFinalistRerank(t *testing.T) {
	for _, r := range []Recipe{
		mlpRecipe(77, 72, 200, 64),
		mlpRecipe(64, 128, 512, 64),
		mlpRecipeFull(50, 64, 96, 2, 16, true),
		mlpRecipe(96, 128, 256, 32),
	} {
		t.Run(r.Flags.MLP.Name()+"-t"+itoa(r.Tiles), func(t *testing.T) {
			res, lines := compileLogged(t, Config{Recipe: r})
			var fins []map[string]any
			var final map[string]any
			reused := 0
			for _, l := range lines {
				switch l["msg"] {
				case "reused exchange optimization after validating rows":
					reused++
					if num(t, l, "horizon") > num(t, l, "target") {
						t.Errorf("phase over its target horizon: %v", l)
					}
				case "costed planning finalist":
					fins = append(fins, l)
				case "costed final placed program":
					final = l
				case "costed planning finalist dropped":
					t.Errorf("dropped finalist: %v", l)
				}
			}
			if len(fins) < 2 || final == nil {
				t.Fatalf("%d finalist lines, final line %v", len(fins), final)
			}
			if reused != len(res.Plan.Exchanges) {
				t.Errorf("%d reused-schedule lines for %d exchange phases", reused, len(res.Plan.Exchanges))
			}
			best, bestRank := 0, 0
			for i, f := range fins {
				if num(t, f, "rank") != i+1 {
					t.Fatalf("finalist %d: %v", i, f)
				}
				if i > 0 && num(t, f, "mid_cycles") < num(t, fins[i-1], "mid_cycles") {
					t.Fatalf("finalists not ordered by mid_cycles: %v after %v", f, fins[i-1])
				}
				if f["low_cycles_is_bound"] == true {
					continue
				}
				if num(t, f, "low_cycles_bound") > num(t, f, "low_cycles") {
					t.Fatalf("finalist's bound above its costed cycles: %v", f)
				}
				if low := num(t, f, "low_cycles"); bestRank == 0 || low < best {
					best, bestRank = low, i+1
				}
			}
			for _, f := range fins {
				if f["low_cycles_is_bound"] == true && num(t, f, "low_cycles") < best {
					t.Fatalf("unscheduled finalist's bound %v beats the choice %d", f, best)
				}
			}
			// The final line repeats the choice's ranked cycles; its final
			// cycles are those after the second scheduling round of the
			// phases that missed their target, never more.
			if num(t, final, "rank") != bestRank || num(t, final, "ranked_cycles") != best || num(t, final, "final_cycles") > best {
				t.Fatalf("final %v, want rank %d with %d cycles", final, bestRank, best)
			}
			if c := res.Recipe.Plan; c == nil || !c.Equal(res.Plan.Choice()) {
				t.Fatalf("recorded plan %v, chosen %v", c, res.Plan.Choice())
			}
			rr, err := RecipeOf(res.Package)
			if err != nil {
				t.Fatal(err)
			}
			m, err := Run(context.Background(), res.Package, rr, nil, nil, RunOptions{Logger: quiet,
				DeviceOptions: device.Options{NoLock: true}})
			if err != nil {
				t.Fatal(err)
			}
			if m.NumericalTest != "PASS" {
				t.Fatal(m.Line())
			}
			pred := num(t, final, "final_cycles")
			dev := (float64(m.Cycles) - float64(pred)) / float64(m.Cycles)
			t.Logf("plan %v (rank %d): %d finalists, final_cycles=%d final_exchange=%d emulated=%d (%+.1f%%)",
				res.Plan.Choice(), bestRank, len(fins), pred, num(t, final, "final_exchange"), m.Cycles, 100*dev)
			if dev > 0.10 || dev < -0.10 {
				t.Fatalf("final_cycles=%d is %+.1f%% off the emulated %d", pred, 100*dev, m.Cycles)
			}
		})
	}
}

// TestRerankDeterministic: the reranked package is byte-identical for
// GOMAXPROCS 1 and 2 (the phases of a finalist are scheduled
// concurrently).
func TestRerankDeterministic(t *testing.T) {
	r := mlpRecipeFull(50, 64, 96, 2, 16, true)
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	var pkgs [2][]byte
	var choices [2]string
	for i := range pkgs {
		runtime.GOMAXPROCS(i + 1)
		res, _ := compileLogged(t, Config{Recipe: r})
		b, err := res.Package.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		pkgs[i], choices[i] = b, res.Plan.Choice().String()
	}
	if !bytes.Equal(pkgs[0], pkgs[1]) {
		t.Fatalf("GOMAXPROCS 1 and 2 packages differ (%s, %d bytes vs %s, %d bytes)", choices[0], len(pkgs[0]), choices[1], len(pkgs[1]))
	}
}

// TestFinalistBoundsHold schedules every finalist (no pruning) of small
// workloads: each one's costed cycles with its phases at their lower
// bounds (what rerank prunes with) never exceed its costed cycles, and
// rerank chooses the finalist with the fewest costed cycles of all.
func TestFinalistBoundsHold(t *testing.T) {
	for _, r := range []Recipe{
		mlpRecipe(77, 72, 200, 64),
		mlpRecipe(64, 128, 512, 64),
		mlpRecipeFull(50, 64, 96, 2, 16, true),
		gemmRecipe(100, 200, 300, 64),
	} {
		t.Run(r.Workload+"-"+itoa(r.Tiles), func(t *testing.T) {
			_, plans, err := candidatePlans(r, low.DefaultFinalists, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			best, bestRank := 0, 0
			for i, pl := range plans {
				addrs, err := emit.PlaceAll(&pl.Program)
				if err != nil {
					t.Fatal(err)
				}
				scheds, _, _, err := schedule(pl, addrs, quiet.Handler(), true, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, bound := pl.Costed(horizons(scheds)), pl.Costed(pl.PhaseLowerBounds())
				if bound.Total > got.Total {
					t.Errorf("rank %d %v: bound %d above costed %d", i+1, pl.Choice(), bound.Total, got.Total)
				}
				if bestRank == 0 || got.Total < best {
					best, bestRank = got.Total, i+1
				}
			}
			res, lines := compileLogged(t, Config{Recipe: r})
			for _, l := range lines {
				if l["msg"] == "costed final placed program" {
					if num(t, l, "rank") != bestRank || num(t, l, "ranked_cycles") != best {
						t.Fatalf("rerank chose %v, want rank %d with %d cycles", l, bestRank, best)
					}
					t.Logf("%v: rank %d of %d, %d cycles", res.Plan.Choice(), bestRank, len(plans), best)
					return
				}
			}
			t.Fatal("no final line")
		})
	}
}

// BenchmarkConstructLow is the construct_low stage of the default SigLIP
// build: the planner's finalists, lowered and optimised.
func BenchmarkConstructLow(b *testing.B) {
	r := Recipe{Workload: "siglip-mlp-f16", Flags: graph.DefaultFlags(), Tiles: 1472}
	for i := 0; i < b.N; i++ {
		if _, _, err := candidatePlans(r, low.DefaultFinalists, nil, true); err != nil {
			b.Fatal(err)
		}
	}
}

// A package built before the fixed-grid plan family was removed may record a fixed-grid
// plan: its recipe still reads, and compiling it again fails with a clear
// error, not a panic.
func TestRecordedV0Plan(t *testing.T) {
	pkg := &ipuexe.Package{Recipe: `{"workload":"mlp","flags":{"MLP":{"Batch":1,"Tokens":20,"Dim":32,"Hidden":48,"Blocks":1}},"tiles":4,` +
		`"plan":{"r":2,"c":2,"q":1},"finalists":[{"rank":1,"mid_cycles":5768,"low_cycles":5768,"plan":{"r":2,"c":2,"q":1},"chosen":true}]}`}
	r, err := RecipeOf(pkg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(context.Background(), Config{Recipe: r, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "recorded plan 2x2 q=1 stream=false colmajor=false is a plan of the removed fixed-grid family, no longer supported; rebuild the package") {
		t.Fatalf("got %v", err)
	}
}

// FuzzRecordedPlan: a package's recipe may record any plan (it is read
// back from a file): the recorded choice gives that plan or a clear error,
// never a panic.
func FuzzRecordedPlan(f *testing.F) {
	f.Add(0, 1, 1, 1, 1, 1, 1, 2, 0)
	f.Add(0, 2, 2, 1, 2, 1, 2, 2, 0)
	f.Add(3, 1, 1, 1, 1, 1, 1, 2, 0)
	f.Add(0, 1, 1, 1, 1, 1, 1, 2, 2)
	f.Add(-5, -1, 0, 1<<20, 3, 3, 3, 1, -1)
	f.Fuzz(func(t *testing.T, q, r1, c1, k1, r2, c2, k2, gemms, loop int) {
		ch := &low.Choice{Q: q, Loop: loop}
		grids := []low.GemmGrid{{Rows: r1, Cols: c1, Inner: k1}, {Rows: r2, Cols: c2, Inner: k2}}
		for i := 0; i < min(gemms, 4); i++ {
			ch.Mid = append(ch.Mid, grids[i%2])
		}
		rec := mlpRecipeFull(20, 32, 48, 2, 4, false)
		rec.Plan = ch
		_, plans, err := candidatePlans(rec, 1, nil, true)
		if err == nil && (len(plans) != 1 || !plans[0].Choice().Equal(*ch)) {
			t.Fatalf("recorded %v, got %d plans", ch, len(plans))
		}
	})
}
