// Package report renders a run profile as one self-contained, offline HTML
// page: a zoomable tile-by-cycle timeline of every tile drawn on canvas
// with an overview strip, a summary by kind -> kernel -> operation, tile
// heatmaps of busy cycles and memory use, the exchange phases, the plan
// summary, search, filters, tooltips and a details panel.
//
// The page's script and style are embedded in the binary (assets/) and
// inlined into the page together with the profile's data; a Content
// Security Policy forbids every network fetch, so the page works from a
// file with no network.
package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/ipustack/ipustack/profile"
)

//go:embed assets/report.html
var pageTemplate string

//go:embed assets/report.css
var pageCSS string

//go:embed assets/report.js
var pageJS string

// Render writes the HTML report of p to w.
func Render(w io.Writer, p *profile.Profile) error {
	data, err := json.Marshal(newData(p))
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	// json.Marshal escapes <, > and & so the data cannot close its script
	// element; escaping / as well keeps any URL-like text in names from
	// reading as a link to fetch.
	js := strings.ReplaceAll(string(data), "/", `\/`)
	title := "ipustack profile: " + p.Workload
	if p.Synthetic {
		title += " (synthetic)"
	}
	page := strings.NewReplacer(
		"{{TITLE}}", html.EscapeString(title),
		"{{CSS}}", pageCSS,
		"{{DATA}}", js,
		"{{JS}}", pageJS,
	).Replace(pageTemplate)
	_, err = io.WriteString(w, page)
	return err
}

// data is what the page's script reads: the steps in columns (by tile,
// then start), strings in a table, phases with their windows flattened.
type data struct {
	Meta      meta     `json:"meta"`
	Strings   []string `json:"strings"`
	Kinds     []string `json:"kinds"`
	SegKinds  []string `json:"segKinds"`
	TileStart []int    `json:"tileStart"` // steps of tile t: [TileStart[t], TileStart[t+1])
	Steps     stepCols `json:"steps"`
	Phases    []phase  `json:"phases"`
	Memory    memCols  `json:"memory"`
	Plan      plan     `json:"plan"`
}

type meta struct {
	Workload  string `json:"workload"`
	Target    string `json:"target"`
	Tiles     int    `json:"tiles"`
	Cycles    uint64 `json:"cycles"`
	ClockHz   uint64 `json:"clockHz"`
	Samples   uint64 `json:"samples"`
	Synthetic bool   `json:"synthetic"`
}

type stepCols struct {
	Start  []uint64 `json:"start"`
	End    []uint64 `json:"end"`
	Kind   []int    `json:"kind"`
	Phase  []int    `json:"phase"`
	Kernel []int    `json:"kernel"`
	Op     []int    `json:"op"`
	Value  []int    `json:"value"`
	Reason []int    `json:"reason"`
}

type phase struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Start    uint64 `json:"start"`
	Horizon  uint64 `json:"horizon"`
	Bound    uint64 `json:"bound"`
	Schedule string `json:"schedule"`
	// Windows flattened: tile, sendStart, sendEnd, recvStart, recvEnd,
	// sendBytes, recvBytes, tile, ...
	Windows []uint64 `json:"windows"`
}

type memCols struct {
	TileStart []int    `json:"tileStart"`
	Kind      []int    `json:"kind"`
	Address   []uint32 `json:"address"`
	Size      []uint32 `json:"size"`
	Name      []int    `json:"name"`
}

type plan struct {
	PredictedCycles uint64     `json:"predictedCycles"`
	Gemms           []gemm     `json:"gemms"`
	Finalists       []finalist `json:"finalists"`
}

type gemm struct {
	Name   string `json:"name"`
	Shape  string `json:"shape"`
	Grid   string `json:"grid"`
	Tiles  int    `json:"tiles"`
	Kernel string `json:"kernel"`
}

type finalist struct {
	Rank      int      `json:"rank"`
	MidCycles uint64   `json:"midCycles"`
	LowCycles uint64   `json:"lowCycles"`
	Grids     []string `json:"grids"`
	Chosen    bool     `json:"chosen"`
}

func newData(p *profile.Profile) *data {
	d := &data{
		Meta: meta{Workload: p.Workload, Target: p.Target, Tiles: p.Tiles(), Cycles: p.Cycles,
			ClockHz: p.ClockHz, Samples: p.Samples, Synthetic: p.Synthetic},
		Strings:  []string{""},
		Phases:   []phase{},
		Plan:     plan{PredictedCycles: p.Plan.PredictedCycles, Gemms: []gemm{}, Finalists: []finalist{}},
		SegKinds: []string{},
	}
	for _, k := range profile.Kinds() {
		d.Kinds = append(d.Kinds, k.String())
	}
	for _, k := range profile.SegmentKinds() {
		d.SegKinds = append(d.SegKinds, k.String())
	}
	ids := map[string]int{"": 0}
	str := func(s string) int {
		if i, ok := ids[s]; ok {
			return i
		}
		ids[s] = len(d.Strings)
		d.Strings = append(d.Strings, s)
		return ids[s]
	}
	n := p.NumSteps()
	c := &d.Steps
	c.Start, c.End = make([]uint64, 0, n), make([]uint64, 0, n)
	c.Kind, c.Phase = make([]int, 0, n), make([]int, 0, n)
	c.Kernel, c.Op = make([]int, 0, n), make([]int, 0, n)
	c.Value, c.Reason = make([]int, 0, n), make([]int, 0, n)
	d.TileStart = make([]int, 0, p.Tiles()+1)
	for _, steps := range p.Steps {
		d.TileStart = append(d.TileStart, len(c.Start))
		for _, s := range steps {
			c.Start = append(c.Start, s.Start)
			c.End = append(c.End, s.End)
			c.Kind = append(c.Kind, int(s.Kind))
			c.Phase = append(c.Phase, s.Phase)
			c.Kernel = append(c.Kernel, str(s.Kernel))
			c.Op = append(c.Op, str(s.Operation))
			c.Value = append(c.Value, str(s.Provenance.Value))
			c.Reason = append(c.Reason, str(s.Provenance.Reason))
		}
	}
	d.TileStart = append(d.TileStart, len(c.Start))
	m := &d.Memory
	for t := range p.Tiles() {
		m.TileStart = append(m.TileStart, len(m.Kind))
		if t >= len(p.Memory) {
			continue
		}
		for _, s := range p.Memory[t] {
			m.Kind = append(m.Kind, int(s.Kind))
			m.Address = append(m.Address, s.Address)
			m.Size = append(m.Size, s.Size)
			m.Name = append(m.Name, str(s.Name))
		}
	}
	m.TileStart = append(m.TileStart, len(m.Kind))
	for _, ph := range p.Phases {
		q := phase{ID: ph.ID, Name: ph.Name, Start: ph.Start, Horizon: ph.Horizon, Bound: ph.Bound,
			Schedule: ph.Schedule, Windows: make([]uint64, 0, 7*len(ph.Windows))}
		for _, w := range ph.Windows {
			q.Windows = append(q.Windows, uint64(w.Tile), uint64(w.SendStart), uint64(w.SendEnd),
				uint64(w.RecvStart), uint64(w.RecvEnd), uint64(w.SendBytes), uint64(w.RecvBytes))
		}
		d.Phases = append(d.Phases, q)
	}
	for _, g := range p.Plan.Gemms {
		d.Plan.Gemms = append(d.Plan.Gemms, gemm{Name: g.Name, Shape: fmt.Sprintf("%dx%dx%d", g.M, g.K, g.N),
			Grid: g.Grid.String(), Tiles: g.Tiles, Kernel: g.Kernel})
	}
	for _, f := range p.Plan.Finalists {
		q := finalist{Rank: f.Rank, MidCycles: f.MidCycles, LowCycles: f.LowCycles, Chosen: f.Chosen, Grids: []string{}}
		for _, g := range f.Grids {
			q.Grids = append(q.Grids, g.String())
		}
		d.Plan.Finalists = append(d.Plan.Finalists, q)
	}
	return d
}
