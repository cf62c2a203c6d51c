package driver

import (
	"context"

	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipuexe"
	"github.com/ipustack/ipustack/launch"
)

// The driver's tests run what they build through the run side (package
// launch; a test-only import: the compiler itself imports nothing under
// device/ nor runtime).

type (
	RunOptions = launch.Options
	Metrics    = launch.Metrics
)

// Run runs a package built from r with launch.Run, from the package alone:
// pl is not used (the package records its layouts), g is regenerated from
// the recipe when nil.
func Run(ctx context.Context, pkg *ipuexe.Package, r Recipe, g *graph.Graph, _ *low.Plan, opts RunOptions) (*Metrics, error) {
	if g == nil {
		var err error
		if g, err = graph.Preset(r.Workload, r.Flags); err != nil {
			return nil, err
		}
	}
	return launch.Run(ctx, pkg, g, opts)
}
