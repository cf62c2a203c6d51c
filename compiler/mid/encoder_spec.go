package mid

import (
	"fmt"

	"github.com/ipustack/ipustack/compiler/cost"
	"github.com/ipustack/ipustack/kernels"
)

// callCycles is the modelled cycles of one call of spec s in the tile
// runtime (cost.Call: the kernel and the call overhead), or why its
// parameters are out of the kernel's limits (kernels.Check, as a build
// would refuse them). memo caches the figures of one search.
func callCycles(memo map[kernels.Spec]int64, s kernels.Spec) (int64, error) {
	if v, ok := memo[s]; ok {
		return v, nil
	}
	if err := kernels.Check(s); err != nil {
		return 0, fmt.Errorf("%s %v: %w", s.Name(), s.Params(), err)
	}
	c := cost.Call(s)
	memo[s] = c
	return c, nil
}
