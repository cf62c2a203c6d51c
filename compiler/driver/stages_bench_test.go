package driver

import (
	"fmt"
	"testing"

	"github.com/ipustack/ipustack/compiler/emit"
	"github.com/ipustack/ipustack/compiler/low"
	"github.com/ipustack/ipustack/graph"
)

// siglipFinalists are the SigLIP build's finalists on tiles tiles, as
// construct_low hands them to place_storage (planned once per benchmark:
// the stages below do not modify the plans).
func siglipFinalists(b *testing.B, tiles int) []*low.Plan {
	b.Helper()
	r := Recipe{Workload: "siglip-mlp-f16", Flags: graph.DefaultFlags(), Tiles: tiles}
	_, plans, err := candidatePlans(r, low.DefaultFinalists, nil, false)
	if err != nil {
		b.Fatal(err)
	}
	return plans
}

// BenchmarkPlaceStorage is the place_storage stage of the default SigLIP
// build: every finalist's buffers placed, finalists concurrently.
func BenchmarkPlaceStorage(b *testing.B) {
	plans := siglipFinalists(b, 1472)
	for b.Loop() {
		fins := make([]*finalist, len(plans))
		parallelDo(len(plans), func(i int) {
			fins[i] = &finalist{rank: i + 1, plan: plans[i]}
			fins[i].addrs, fins[i].err = emit.PlaceAll(&plans[i].Program)
		})
		for _, f := range fins {
			if f.err != nil {
				b.Fatal(f.err)
			}
		}
	}
}

// BenchmarkLowerExchanges is the lower_exchanges stage of the SigLIP
// build, by default (1472 tiles) and on 64 tiles (--tiles 64, whose
// multicast misses its target and goes through the scheduler's second
// round): the rerank (each finalist's phases scheduled, the chosen one's
// missed targets scheduled again with every round) and the final
// validation of the chosen schedules.
func BenchmarkLowerExchanges(b *testing.B) {
	for _, tiles := range []int{1472, 64} {
		b.Run(fmt.Sprintf("tiles=%d", tiles), func(b *testing.B) {
			plans := siglipFinalists(b, tiles)
			addrs := make([][]emit.Addresses, len(plans))
			for i, pl := range plans {
				var err error
				if addrs[i], err = emit.PlaceAll(&pl.Program); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				fins := make([]*finalist, len(plans))
				for i := range plans {
					fins[i] = &finalist{rank: i + 1, plan: plans[i], addrs: addrs[i]}
				}
				f, err := rerank(fins, quiet)
				if err != nil {
					b.Fatal(err)
				}
				if err := validateReused(f.scheds, quiet); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
