package launch

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ipustack/ipustack/"

// deps lists the packages pattern depends on (go list -deps, tests not
// included), each with its direct imports.
func deps(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}|{{join .Imports ","}}`, pattern).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -deps %s: %v\n%s", pattern, err, ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pattern, err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, _ := strings.Cut(line, "|")
		if imps != "" {
			m[pkg] = strings.Split(imps, ",")
		} else {
			m[pkg] = nil
		}
	}
	return m
}

// forbidden reports each import edge of the dependency graph that reaches
// a package for which bad is true, as "A imports B".
func forbidden(m map[string][]string, bad func(string) bool) []string {
	var out []string
	for pkg, imps := range m {
		for _, imp := range imps {
			if bad(imp) {
				out = append(out, strings.TrimPrefix(pkg, module)+" imports "+strings.TrimPrefix(imp, module))
			}
		}
	}
	slices.Sort(out)
	return out
}

// The design's one dependency rule, both ways: the compiler knows no
// device (nothing under compiler/ depends on device/... or runtime), and
// running a package asks nothing of the compiler (launch does not depend
// on compiler/...). Within the compiler, the per-tile IR and what reads it
// (place, emit, the passes) do not depend on the planner.
func TestImportRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	comp := deps(t, module+"compiler/...")
	if len(comp) == 0 || comp[module+"compiler/driver"] == nil {
		t.Fatalf("go list found no compiler/driver among %d packages", len(comp))
	}
	if bad := forbidden(comp, func(p string) bool {
		return strings.HasPrefix(p, module+"device/") || p == module+"device" || p == module+"runtime" || strings.HasPrefix(p, module+"runtime/") || p == module+"launch"
	}); len(bad) > 0 {
		t.Errorf("compiler/... must not depend on device/, runtime or launch:\n%s", strings.Join(bad, "\n"))
	}
	// The per-tile IR (compiler/tile), its passes, placement and emission
	// know nothing of the planner or the lowering that builds the IR.
	for _, pkg := range []string{"compiler/tile", "compiler/tile/passes", "compiler/place", "compiler/emit"} {
		if bad := forbidden(deps(t, module+pkg), func(p string) bool {
			return p == module+"compiler/low" || p == module+"compiler/mid" || p == module+"compiler/cost" || p == module+"compiler/driver"
		}); len(bad) > 0 {
			t.Errorf("%s must not depend on compiler/low, mid, cost or driver:\n%s", pkg, strings.Join(bad, "\n"))
		}
	}
	run := deps(t, module+"launch")
	if bad := forbidden(run, func(p string) bool { return strings.HasPrefix(p, module+"compiler/") }); len(bad) > 0 {
		t.Errorf("launch must not depend on compiler/...:\n%s", strings.Join(bad, "\n"))
	}
}

// The planner side of the compiler — the planner, the cost model and the
// lowering — names kernels by their ABI records and typed specs (package
// kernels) and never needs an object: it does not depend on the assembler,
// the ELF code or kernels/assemble (issue 16 item 2).
func TestPlannerDeps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	for _, pkg := range []string{"compiler/mid", "compiler/cost", "compiler/low", "kernels"} {
		m := deps(t, module+pkg)
		if bad := forbidden(m, func(p string) bool {
			return p == module+"asm" || p == module+"elf" || p == module+"kernels/assemble"
		}); len(bad) > 0 {
			t.Errorf("%s must not depend on asm, elf or kernels/assemble:\n%s", pkg, strings.Join(bad, "\n"))
		}
	}
}
