package profile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Group-by keys of a Query.
const (
	ByKind      = "kind"
	ByKernel    = "kernel"
	ByOperation = "operation"
	ByPhase     = "phase"
	ByTile      = "tile"
)

// GroupBys lists the valid Query.GroupBy values.
var GroupBys = []string{ByKind, ByKernel, ByOperation, ByPhase, ByTile}

// SortBys lists the valid Query.SortBy values. Numbers sort descending,
// names ascending.
var SortBys = []string{"work", "timeline", "steps", "tiles", "active", "mean", "p50", "p95", "max", "name"}

// Query selects steps and groups them. Zero values select everything:
// idle time (the cycles of a tile covered by no step, up to the profile's
// end) counts as steps of kind idle.
type Query struct {
	GroupBy string // one of GroupBys; "" is kind
	SortBy  string // one of SortBys; "" is work
	// Filters: a step is selected when it matches every non-empty one.
	Kinds      []Kind
	Kernels    []string // exact kernel names
	Operations []string // exact operation names
	Phases     []int    // exchange phase ids
	TileLo     int      // first tile
	TileHi     int      // one past the last tile; 0 means all
	Limit      int      // at most this many groups; 0 means all
}

// Group is the statistics of one group of steps.
type Group struct {
	Key   string `json:"key"`
	Steps int    `json:"steps"`
	Tiles int    `json:"tiles"` // tiles with at least one step in the group
	// TimelineCycles is the cycles in which at least one tile runs a step
	// of the group; WorkCycles sums the steps' cycles over all tiles.
	TimelineCycles uint64 `json:"timelineCycles"`
	WorkCycles     uint64 `json:"workCycles"`
	// AverageActiveTiles is WorkCycles / TimelineCycles.
	AverageActiveTiles float64 `json:"averageActiveTiles"`
	// Per tile (among Tiles): the group's cycles on one tile.
	MeanPerTile float64 `json:"meanPerTile"`
	P50PerTile  uint64  `json:"p50PerTile"`
	P95PerTile  uint64  `json:"p95PerTile"`
	MaxPerTile  uint64  `json:"maxPerTile"`
}

// Result is the answer to a Query.
type Result struct {
	Workload  string  `json:"workload"`
	Tiles     int     `json:"tiles"`
	Cycles    uint64  `json:"cycles"`
	Synthetic bool    `json:"synthetic,omitempty"`
	GroupBy   string  `json:"groupBy"`
	SortBy    string  `json:"sortBy"`
	Groups    []Group `json:"groups"`
	Omitted   int     `json:"omitted"` // groups past Limit
	Total     Group   `json:"total"`   // every selected step
}

// span is one selected step, reduced to what grouping needs.
type span struct {
	tile       int
	start, end uint64
}

// TileTimeline calls f with every step of tile t in order, including the
// idle gaps (steps of kind Idle with no kernel or operation) up to p.Cycles.
func (p *Profile) TileTimeline(t int, f func(Step)) {
	var at uint64
	for _, s := range p.Steps[t] {
		if s.Start > at {
			f(Step{Start: at, End: s.Start, Kind: Idle, Phase: NoPhase})
		}
		f(s)
		at = max(at, s.End)
	}
	if p.Cycles > at {
		f(Step{Start: at, End: p.Cycles, Kind: Idle, Phase: NoPhase})
	}
}

// Match reports whether step s of tile t passes q's filters.
func (q *Query) Match(t int, s Step) bool {
	if t < q.TileLo || (q.TileHi > 0 && t >= q.TileHi) {
		return false
	}
	if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, s.Kind) {
		return false
	}
	if len(q.Kernels) > 0 && !slices.Contains(q.Kernels, s.Kernel) {
		return false
	}
	if len(q.Operations) > 0 && !slices.Contains(q.Operations, s.Operation) {
		return false
	}
	if len(q.Phases) > 0 && !slices.Contains(q.Phases, s.Phase) {
		return false
	}
	return true
}

// KeyOf is the group key of step s of tile t under groupBy. Steps without
// a kernel (or operation, or phase) are grouped under their kind in
// parentheses, "(sync)".
func (p *Profile) KeyOf(groupBy string, t int, s Step) string {
	switch groupBy {
	case ByKernel:
		if s.Kernel != "" {
			return s.Kernel
		}
	case ByOperation:
		if s.Operation != "" {
			return s.Operation
		}
	case ByPhase:
		if s.Phase != NoPhase {
			if ph, ok := p.Phase(s.Phase); ok && ph.Name != "" {
				return fmt.Sprintf("%d %s", s.Phase, ph.Name)
			}
			return strconv.Itoa(s.Phase)
		}
	case ByTile:
		return strconv.Itoa(t)
	default:
		return s.Kind.String()
	}
	return "(" + s.Kind.String() + ")"
}

// Run answers q on p.
func (p *Profile) Run(q Query) (*Result, error) {
	if q.GroupBy == "" {
		q.GroupBy = ByKind
	}
	if q.SortBy == "" {
		q.SortBy = "work"
	}
	if !slices.Contains(GroupBys, q.GroupBy) {
		return nil, fmt.Errorf("group by %q: want one of %s", q.GroupBy, strings.Join(GroupBys, ", "))
	}
	if !slices.Contains(SortBys, q.SortBy) {
		return nil, fmt.Errorf("sort by %q: want one of %s", q.SortBy, strings.Join(SortBys, ", "))
	}
	if q.TileLo < 0 || q.TileHi < 0 || (q.TileHi > 0 && q.TileHi <= q.TileLo) {
		return nil, fmt.Errorf("tile range [%d,%d) is empty or negative", q.TileLo, q.TileHi)
	}
	if q.Limit < 0 {
		return nil, fmt.Errorf("limit %d is negative", q.Limit)
	}
	if err := p.checkFilters(q); err != nil {
		return nil, err
	}
	groups := map[string][]span{}
	var all []span
	for t := range p.Steps {
		if t < q.TileLo || (q.TileHi > 0 && t >= q.TileHi) {
			continue
		}
		p.TileTimeline(t, func(s Step) {
			if !q.Match(t, s) || s.End == s.Start {
				return
			}
			k := p.KeyOf(q.GroupBy, t, s)
			sp := span{t, s.Start, s.End}
			groups[k] = append(groups[k], sp)
			all = append(all, sp)
		})
	}
	r := &Result{Workload: p.Workload, Tiles: p.Tiles(), Cycles: p.Cycles, Synthetic: p.Synthetic,
		GroupBy: q.GroupBy, SortBy: q.SortBy, Groups: []Group{}}
	for k, spans := range groups {
		r.Groups = append(r.Groups, stats(k, spans))
	}
	r.Total = stats("total", all)
	less := sortFunc(q.SortBy, q.GroupBy)
	slices.SortFunc(r.Groups, less)
	if q.Limit > 0 && len(r.Groups) > q.Limit {
		r.Omitted = len(r.Groups) - q.Limit
		r.Groups = r.Groups[:q.Limit]
	}
	return r, nil
}

// checkFilters rejects filters that cannot match anything in p because
// they name a tile, exchange phase, kernel or operation the profile does not
// have: most likely a typo, which would otherwise print an empty table as
// if it were an answer.
func (p *Profile) checkFilters(q Query) error {
	if n := p.Tiles(); q.TileLo > 0 && q.TileLo >= n {
		if n == 0 {
			return fmt.Errorf("tiles from %d: the profile has no tiles", q.TileLo)
		}
		return fmt.Errorf("tiles from %d: the profile has %d tiles (0..%d)", q.TileLo, n, n-1)
	}
	if len(q.Phases) > 0 {
		ids := map[int]bool{}
		for _, ph := range p.Phases {
			ids[ph.ID] = true
		}
		for _, steps := range p.Steps {
			for _, s := range steps {
				if s.Phase != NoPhase {
					ids[s.Phase] = true
				}
			}
		}
		for _, id := range q.Phases {
			if !ids[id] {
				return fmt.Errorf("phase %d: the profile has no such exchange phase (phases: %s)", id, joinSorted(ids, strconv.Itoa))
			}
		}
	}
	check := func(what string, want []string, name func(Step) string) error {
		if len(want) == 0 {
			return nil
		}
		have := map[string]bool{}
		for _, steps := range p.Steps {
			for _, s := range steps {
				if n := name(s); n != "" {
					have[n] = true
				}
			}
		}
		for _, w := range want {
			if !have[w] {
				return fmt.Errorf("%s %q: no step of the profile has it (%ss: %s)", what, w, what, joinSorted(have, func(s string) string { return s }))
			}
		}
		return nil
	}
	if err := check("kernel", q.Kernels, func(s Step) string { return s.Kernel }); err != nil {
		return err
	}
	return check("operation", q.Operations, func(s Step) string { return s.Operation })
}

// joinSorted lists a set's members in order, or "none".
func joinSorted[K cmp.Ordered](set map[K]bool, str func(K) string) string {
	keys := make([]K, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return "none"
	}
	slices.Sort(keys)
	const maxListed = 20
	var b strings.Builder
	for i, k := range keys {
		if i == maxListed {
			fmt.Fprintf(&b, ", ... %d more", len(keys)-maxListed)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(str(k))
	}
	return b.String()
}

// sortFunc orders groups by the named column, ties by key.
func sortFunc(by, groupBy string) func(a, b Group) int {
	byKey := func(a, b Group) int {
		if groupBy == ByTile || groupBy == ByPhase {
			// Numeric keys sort as numbers, "(idle)" and such after.
			ai, aerr := strconv.Atoi(strings.Fields(a.Key + " x")[0])
			bi, berr := strconv.Atoi(strings.Fields(b.Key + " x")[0])
			switch {
			case aerr == nil && berr == nil:
				return cmp.Compare(ai, bi)
			case aerr == nil:
				return -1
			case berr == nil:
				return 1
			}
		}
		return strings.Compare(a.Key, b.Key)
	}
	num := func(f func(Group) float64) func(a, b Group) int {
		return func(a, b Group) int {
			if c := cmp.Compare(f(b), f(a)); c != 0 {
				return c
			}
			return byKey(a, b)
		}
	}
	switch by {
	case "name":
		return byKey
	case "timeline":
		return num(func(g Group) float64 { return float64(g.TimelineCycles) })
	case "steps":
		return num(func(g Group) float64 { return float64(g.Steps) })
	case "tiles":
		return num(func(g Group) float64 { return float64(g.Tiles) })
	case "active":
		return num(func(g Group) float64 { return g.AverageActiveTiles })
	case "mean":
		return num(func(g Group) float64 { return g.MeanPerTile })
	case "p50":
		return num(func(g Group) float64 { return float64(g.P50PerTile) })
	case "p95":
		return num(func(g Group) float64 { return float64(g.P95PerTile) })
	case "max":
		return num(func(g Group) float64 { return float64(g.MaxPerTile) })
	}
	return num(func(g Group) float64 { return float64(g.WorkCycles) })
}

// stats computes a group's statistics from its steps.
func stats(key string, spans []span) Group {
	g := Group{Key: key, Steps: len(spans)}
	perTile := map[int]uint64{}
	type iv struct{ lo, hi uint64 }
	ivs := make([]iv, 0, len(spans))
	for _, s := range spans {
		c := s.end - s.start
		g.WorkCycles += c
		perTile[s.tile] += c
		ivs = append(ivs, iv{s.start, s.end})
	}
	slices.SortFunc(ivs, func(a, b iv) int { return cmp.Compare(a.lo, b.lo) })
	var cur iv
	for i, v := range ivs {
		if i == 0 || v.lo > cur.hi {
			g.TimelineCycles += cur.hi - cur.lo
			cur = v
			continue
		}
		cur.hi = max(cur.hi, v.hi)
	}
	g.TimelineCycles += cur.hi - cur.lo
	if g.TimelineCycles > 0 {
		g.AverageActiveTiles = float64(g.WorkCycles) / float64(g.TimelineCycles)
	}
	g.Tiles = len(perTile)
	if g.Tiles > 0 {
		vals := make([]uint64, 0, len(perTile))
		for _, v := range perTile {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		g.MeanPerTile = float64(g.WorkCycles) / float64(g.Tiles)
		g.P50PerTile = percentile(vals, 50)
		g.P95PerTile = percentile(vals, 95)
		g.MaxPerTile = vals[len(vals)-1]
	}
	return g
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []uint64, pct int) uint64 {
	i := (pct*len(sorted) + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

// WriteText writes r as a table.
func (r *Result) WriteText(w io.Writer) error {
	syn := ""
	if r.Synthetic {
		syn = " (synthetic)"
	}
	fmt.Fprintf(w, "profile %s%s: tiles=%d cycles=%d; group by %s, sort by %s\n", r.Workload, syn, r.Tiles, r.Cycles, r.GroupBy, r.SortBy)
	tw, done := newTable(w)
	width := max(len("total"), len(r.GroupBy), len(fmt.Sprintf("(%d more)", r.Omitted)))
	for _, g := range r.Groups {
		width = max(width, len(g.Key))
	}
	fmt.Fprintf(tw, "%-*s\tsteps\ttiles\ttimeline\twork\tactive tiles\tmean/tile\tp50/tile\tp95/tile\tmax/tile\t\n", width, strings.ToUpper(r.GroupBy[:1])+r.GroupBy[1:])
	row := func(g Group) {
		// Keys read left-aligned: pad them to the column's width.
		fmt.Fprintf(tw, "%-*s\t%d\t%d\t%d\t%d\t%.1f\t%.0f\t%d\t%d\t%d\t\n", width, g.Key, g.Steps, g.Tiles, g.TimelineCycles, g.WorkCycles,
			g.AverageActiveTiles, g.MeanPerTile, g.P50PerTile, g.P95PerTile, g.MaxPerTile)
	}
	for _, g := range r.Groups {
		row(g)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(tw, "%-*s\t\t\t\t\t\t\t\t\t\t\n", width, fmt.Sprintf("(%d more)", r.Omitted))
	}
	row(r.Total)
	return done()
}

// WriteJSON writes r as one indented JSON object.
func (r *Result) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// newTable is a tabwriter whose output, at done, reaches w with the spaces
// tabwriter pads the last column with removed.
func newTable(w io.Writer) (*tabwriter.Writer, func() error) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	return tw, func() error {
		if err := tw.Flush(); err != nil {
			return err
		}
		lines := strings.Split(buf.String(), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " ")
		}
		_, err := io.WriteString(w, strings.Join(lines, "\n"))
		return err
	}
}
