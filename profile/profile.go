// Package profile is the run profile of an ipustack application: what every
// tile did in every cycle of a run and why.
//
// A Profile holds, per tile, the steps of its program ([start, end) cycles,
// kind, kernel, graph operation and provenance), per exchange phase the
// scheduled send and receive windows of every tile with the phase's
// horizon and lower bound, per tile the memory map by segment kind, and
// the planner's summary (GEMM grids, finalists). The compiler and the run
// fill one through a Builder; Marshal and Read store it as a file (a
// header followed by a Cap'n Proto message, schema in profile/schema).
//
// Query groups the steps (by kind, kernel, operation, phase or tile) and
// reports cycles per group; Diff compares two profiles per kernel and per
// phase; package profile/report renders a profile as an interactive HTML
// page. Synthetic makes a deterministic profile shaped like the SigLIP MLP
// run for tests and demonstrations until the compiler writes real ones.
package profile

import (
	"fmt"
	"sort"
)

// Kind is what a tile is doing during a step.
type Kind uint8

// Step kinds. Cycles of a tile covered by no step are idle.
const (
	Idle Kind = iota
	Compute
	Exchange
	Sync
	Host
	numKinds
)

var kindNames = [numKinds]string{"idle", "compute", "exchange", "sync", "host"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind is the inverse of Kind.String.
func ParseKind(s string) (Kind, error) {
	for k, n := range kindNames {
		if n == s {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown step kind %q: want idle, compute, exchange, sync or host", s)
}

// Kinds lists every step kind in order.
func Kinds() []Kind { return []Kind{Idle, Compute, Exchange, Sync, Host} }

// NoPhase is Step.Phase of a step that belongs to no exchange phase.
const NoPhase = -1

// Provenance says why a step exists: the value it produces or moves and
// the reason the compiler created the work ("GEMM block (i=0 j=3) K-split
// part 1 of 3", "reduce-scatter of K-split partials", "padding clear").
// The graph operation is Step.Operation.
type Provenance struct {
	Value  string
	Reason string
}

// Step is one step of one tile's program: [Start, End) in cycles from the
// start of the profiled span.
type Step struct {
	Start, End uint64
	Kind       Kind
	Kernel     string // kernel run by a compute step; "" otherwise
	Operation  string // graph operation the work serves ("block0.fc1"); "" if none
	Phase      int    // exchange phase id of an exchange step; NoPhase otherwise
	Provenance Provenance
}

// Cycles is End - Start.
func (s Step) Cycles() uint64 { return s.End - s.Start }

// Window is one tile's traffic in an exchange phase: it sends in
// [SendStart, SendEnd) and receives in [RecvStart, RecvEnd), cycles from
// the phase's start. An empty window (start == end) means no traffic that
// way.
type Window struct {
	Tile                 int
	SendStart, SendEnd   uint32
	RecvStart, RecvEnd   uint32
	SendBytes, RecvBytes uint32
}

// Sends reports whether the tile sends in the phase.
func (w Window) Sends() bool { return w.SendEnd > w.SendStart }

// Receives reports whether the tile receives in the phase.
func (w Window) Receives() bool { return w.RecvEnd > w.RecvStart }

// Phase is one compiled exchange phase.
type Phase struct {
	ID       int
	Name     string // "block0.fc1.in"
	Start    uint64 // cycle the phase's schedule starts
	Horizon  uint64 // scheduled length in cycles
	Bound    uint64 // endpoint lower bound in cycles
	Schedule string // "full-duplex", "paired", ...
	Windows  []Window
}

// SegmentKind classifies a tile memory segment.
type SegmentKind uint8

// Segment kinds.
const (
	Code SegmentKind = iota
	ExchangeRows
	Weights
	Activations
	Partials
	Free
	numSegmentKinds
)

var segmentKindNames = [numSegmentKinds]string{"code", "exchange-rows", "weights", "activations", "partials", "free"}

func (k SegmentKind) String() string {
	if k < numSegmentKinds {
		return segmentKindNames[k]
	}
	return fmt.Sprintf("segment-kind(%d)", uint8(k))
}

// SegmentKinds lists every segment kind in order.
func SegmentKinds() []SegmentKind {
	return []SegmentKind{Code, ExchangeRows, Weights, Activations, Partials, Free}
}

// Segment is one range of a tile's SRAM.
type Segment struct {
	Kind    SegmentKind
	Address uint32
	Size    uint32
	Name    string // "runtime", "block0.fc1.weight[0,384)[144,288)", ...
}

// Grid is a GEMM's tile grid: Rows x Cols output blocks, each K-split in
// Inner parts.
type Grid struct{ Rows, Cols, Inner int }

func (g Grid) String() string { return fmt.Sprintf("%dx%dx%d", g.Rows, g.Cols, g.Inner) }

// Tiles is Rows * Cols * Inner.
func (g Grid) Tiles() int { return g.Rows * g.Cols * g.Inner }

// Gemm is one GEMM of the chosen plan.
type Gemm struct {
	Name    string
	M, K, N int
	Grid    Grid
	Tiles   int
	Kernel  string
}

// Finalist is one whole-graph plan the planner kept: its mid-level estimate
// and its placed, scheduled (low-level) cycles; Grids has one grid per
// Plan.Gemms entry.
type Finalist struct {
	Rank      int
	MidCycles uint64
	LowCycles uint64
	Grids     []Grid
	Chosen    bool
}

// Plan is the planner's summary.
type Plan struct {
	PredictedCycles uint64
	Gemms           []Gemm
	Finalists       []Finalist
}

// Profile is a run profile. Steps and Memory have one entry per tile
// (logical tile ids 0..Tiles()-1); each tile's steps are ordered by start
// and do not overlap, its segments ordered by address and not overlapping.
type Profile struct {
	Workload  string
	Target    string
	ClockHz   uint64
	Cycles    uint64 // length of the profiled span; every step ends by then
	Samples   uint64 // cycle samples the run read
	Synthetic bool   // made by Synthetic, not by a run
	Steps     [][]Step
	Memory    [][]Segment
	Phases    []Phase
	Plan      Plan
}

// Tiles is the number of tiles.
func (p *Profile) Tiles() int { return len(p.Steps) }

// NumSteps is the number of steps over all tiles.
func (p *Profile) NumSteps() int {
	n := 0
	for _, s := range p.Steps {
		n += len(s)
	}
	return n
}

// Phase returns the phase with the given id.
func (p *Profile) Phase(id int) (*Phase, bool) {
	for i := range p.Phases {
		if p.Phases[i].ID == id {
			return &p.Phases[i], true
		}
	}
	return nil, false
}

// Builder assembles a Profile. The compiler and the run call its methods
// in any order; Build sorts what needs sorting and validates the result.
// Strings are interned, so steps that name the same kernel share it.
type Builder struct {
	p       Profile
	strings map[string]string
	err     error
}

// NewBuilder starts a profile of the given number of tiles.
func NewBuilder(workload, target string, tiles int, clockHz uint64) *Builder {
	b := &Builder{strings: map[string]string{}}
	b.p.Workload = workload
	b.p.Target = target
	b.p.ClockHz = clockHz
	if tiles < 0 || tiles > MaxTiles {
		b.err = fmt.Errorf("profile: %d tiles, want 0..%d", tiles, MaxTiles)
		tiles = 0
	}
	b.p.Steps = make([][]Step, tiles)
	b.p.Memory = make([][]Segment, tiles)
	return b
}

func (b *Builder) intern(s string) string {
	if t, ok := b.strings[s]; ok {
		return t
	}
	b.strings[s] = s
	return s
}

func (b *Builder) tile(t int, what string) bool {
	if t < 0 || t >= len(b.p.Steps) {
		if b.err == nil {
			b.err = fmt.Errorf("profile: %s: tile %d out of range [0,%d)", what, t, len(b.p.Steps))
		}
		return false
	}
	return true
}

// AddStep appends a step of tile t. Steps of a tile may come in any order;
// Build sorts them by start. A step with Kind other than Exchange should
// have Phase NoPhase.
func (b *Builder) AddStep(t int, s Step) {
	if !b.tile(t, "AddStep") {
		return
	}
	s.Kernel = b.intern(s.Kernel)
	s.Operation = b.intern(s.Operation)
	s.Provenance.Value = b.intern(s.Provenance.Value)
	s.Provenance.Reason = b.intern(s.Provenance.Reason)
	b.p.Steps[t] = append(b.p.Steps[t], s)
}

// AddExchangePhase records an exchange phase with the windows of the tiles
// that have traffic in it.
func (b *Builder) AddExchangePhase(ph Phase) {
	ph.Windows = append([]Window(nil), ph.Windows...)
	b.p.Phases = append(b.p.Phases, ph)
}

// SetMemoryMap sets tile t's memory map.
func (b *Builder) SetMemoryMap(t int, segs []Segment) {
	if !b.tile(t, "SetMemoryMap") {
		return
	}
	m := make([]Segment, len(segs))
	for i, s := range segs {
		s.Name = b.intern(s.Name)
		m[i] = s
	}
	b.p.Memory[t] = m
}

// SetPlan sets the planner's summary.
func (b *Builder) SetPlan(pl Plan) { b.p.Plan = pl }

// SetCycles sets the length of the profiled span. Without it Build uses the
// latest step end.
func (b *Builder) SetCycles(c uint64) { b.p.Cycles = c }

// SetSamples sets the number of cycle samples the run read. Without it
// Build counts one per step.
func (b *Builder) SetSamples(n uint64) { b.p.Samples = n }

// Build sorts steps, windows, segments and phases, fills Cycles and Samples
// if unset and validates the profile. The Builder must not be used after.
func (b *Builder) Build() (*Profile, error) {
	if b.err != nil {
		return nil, b.err
	}
	p := &b.p
	var end uint64
	for _, ss := range p.Steps {
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Start < ss[j].Start })
		for _, s := range ss {
			end = max(end, s.End)
		}
	}
	if p.Cycles == 0 {
		p.Cycles = end
	}
	if p.Samples == 0 {
		p.Samples = uint64(p.NumSteps())
	}
	for _, m := range p.Memory {
		sort.SliceStable(m, func(i, j int) bool { return m[i].Address < m[j].Address })
	}
	sort.SliceStable(p.Phases, func(i, j int) bool { return p.Phases[i].ID < p.Phases[j].ID })
	for _, ph := range p.Phases {
		w := ph.Windows
		sort.SliceStable(w, func(i, j int) bool { return w[i].Tile < w[j].Tile })
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}
