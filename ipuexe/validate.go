package ipuexe

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/ipu21"
)

// MaxProblems caps how many problems Validate reports. A package broken in
// one systematic way is broken on every tile; 1472 copies of the same line
// hide the cause rather than show it.
const MaxProblems = 50

// problems accumulates validation errors up to MaxProblems.
type problems struct {
	errs    []error
	omitted int
}

func (ps *problems) add(format string, args ...any) {
	if len(ps.errs) >= MaxProblems {
		ps.omitted++
		return
	}
	ps.errs = append(ps.errs, fmt.Errorf(format, args...))
}

func (ps *problems) err() error {
	if len(ps.errs) == 0 {
		return nil
	}
	errs := ps.errs
	if ps.omitted > 0 {
		errs = append(errs[:len(errs):len(errs)], fmt.Errorf("... and %d more problems", ps.omitted))
	}
	n := len(ps.errs) + ps.omitted
	noun := "problems"
	if n == 1 {
		noun = "problem"
	}
	return fmt.Errorf("%w (%d %s):\n%w", ErrInvalid, n, noun, errors.Join(errs...))
}

// Validate checks that p can be loaded and run on target t. It reports
// every problem it finds (up to MaxProblems), each naming the field, the
// tile by physical id and, where there is one, the segment, binding, slice
// or call index and the address, so that a compiler bug can be traced
// from the message alone. The error wraps ErrInvalid.
func (p *Package) Validate(t *ipu21.Target) error {
	if t == nil {
		return fmt.Errorf("%w: no target to validate against", ErrInvalid)
	}
	v := validator{p: p, t: t, tiles: map[uint32]int{}}
	v.header()
	v.tileImages()
	for _, k := range []BindingKind{KindInput, KindOutput, KindWeight} {
		v.bindings(k)
	}
	v.host()
	v.config()
	v.profile()
	v.symbols("symbols", p.Symbols)
	v.run()
	return v.ps.err()
}

type validator struct {
	p     *Package
	t     *ipu21.Target
	ps    problems
	tiles map[uint32]int // physical id -> index in p.Tiles (first one)
}

func (v *validator) header() {
	p, t := v.p, v.t
	if lt, err := ipu21.Lookup(p.Target); err != nil || lt.Name != t.Name {
		v.ps.add("target: package is for %q, validating for %q", p.Target, t.Name)
	}
	m := t.Memory
	if p.MemoryBase != m.SRAMBase || p.MemorySize != m.SRAMEnd-m.SRAMBase {
		v.ps.add("memory: package tile memory is [%#x,+%#x), target %s has [%#x,+%#x)",
			p.MemoryBase, p.MemorySize, t.Name, m.SRAMBase, m.SRAMEnd-m.SRAMBase)
	}
}

// span formats a byte range for messages.
func span(addr uint32, size uint64) string {
	return fmt.Sprintf("[%#x,%#x)", addr, uint64(addr)+size)
}

func (v *validator) inSRAM(addr uint32, size uint64) bool {
	m := v.t.Memory
	return addr >= m.SRAMBase && uint64(addr)+size <= uint64(m.SRAMEnd)
}

func (v *validator) validTile(id uint32) bool {
	return uint64(id) < uint64(v.t.Tiles) && ipu21.ValidPhysical(int(id))
}

func (v *validator) tileImages() {
	m := v.t.Memory
	for i, tl := range v.p.Tiles {
		where := fmt.Sprintf("tiles[%d] (tile %d)", i, tl.Physical)
		if !v.validTile(tl.Physical) {
			v.ps.add("%s: invalid physical id %d (target %s has tiles 0..%d)", where, tl.Physical, v.t.Name, v.t.Tiles-1)
		}
		if j, dup := v.tiles[tl.Physical]; dup {
			v.ps.add("%s: duplicate tile, also tiles[%d]", where, j)
		} else {
			v.tiles[tl.Physical] = i
		}
		if uint64(tl.MemoryMap) > uint64(len(v.p.Run.MemoryMaps)) {
			v.ps.add("%s: memory map %d does not exist (run.memoryMaps has %d)", where, tl.MemoryMap, len(v.p.Run.MemoryMaps))
		}
		if len(tl.Segments) == 0 {
			v.ps.add("%s: no segments", where)
		}
		for j, s := range tl.Segments {
			sw := fmt.Sprintf("%s: segment %d %s %s", where, j, span(s.Address, uint64(s.MemSize)), s.Flags)
			switch {
			case s.Flags&^flagsKnown != 0:
				v.ps.add("%s: unknown flag bits %#x", sw, uint8(s.Flags&^flagsKnown))
			case s.Flags == 0:
				v.ps.add("%s: no access flags", sw)
			}
			if s.MemSize == 0 {
				v.ps.add("%s: empty segment", sw)
			}
			if uint64(len(s.Data)) > uint64(s.MemSize) {
				v.ps.add("%s: %d data bytes exceed the memory size %d", sw, len(s.Data), s.MemSize)
			}
			if !v.inSRAM(s.Address, s.End()-uint64(s.Address)) {
				v.ps.add("%s: outside SRAM %s", sw, span(m.SRAMBase, uint64(m.SRAMEnd-m.SRAMBase)))
			} else if uint64(s.Address)+uint64(len(s.Data)) > uint64(m.LoadLimit) {
				// The loader cannot place bytes past its limit; zero-fill
				// there is fine.
				v.ps.add("%s: initialised bytes end at %#x, past the loader limit %#x",
					sw, uint64(s.Address)+uint64(len(s.Data)), m.LoadLimit)
			}
			if s.Flags&FlagExec != 0 && (s.Address < m.SRAMBase || s.End() > uint64(m.Region1Base)) {
				v.ps.add("%s: executable outside region 0 %s", sw, span(m.SRAMBase, uint64(m.Region1Base-m.SRAMBase)))
			}
		}
		v.overlaps(where, tl.Segments)
		v.entry(where, tl)
		v.symbols(where+" symbols", tl.Symbols)
	}
}

// overlaps reports every pair of overlapping segments on one tile.
func (v *validator) overlaps(where string, segs []Segment) {
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(segs[a].Address, segs[b].Address), cmp.Compare(a, b))
	})
	// Compare each segment with the furthest-reaching one before it, so a
	// long segment covering several short ones is reported against each.
	reach := -1
	for _, i := range order {
		if reach >= 0 && segs[reach].End() > uint64(segs[i].Address) && segs[i].MemSize > 0 {
			a, b := segs[reach], segs[i]
			v.ps.add("%s: segment %d %s overlaps segment %d %s", where,
				i, span(b.Address, uint64(b.MemSize)), reach, span(a.Address, uint64(a.MemSize)))
		}
		if reach < 0 || segs[i].End() > segs[reach].End() {
			reach = i
		}
	}
}

func (v *validator) entry(where string, tl Tile) {
	for _, s := range tl.Segments {
		if s.Flags&FlagExec != 0 && tl.Entry >= s.Address && uint64(tl.Entry) < s.End() {
			if tl.Entry%4 != 0 {
				v.ps.add("%s: entry point %#x is not 4-byte aligned", where, tl.Entry)
			}
			return
		}
	}
	v.ps.add("%s: entry point %#x is not in an executable segment", where, tl.Entry)
}

func (v *validator) symbols(where string, syms []Symbol) {
	for i, s := range syms {
		if s.Name == "" {
			v.ps.add("%s[%d] at %#x: empty name", where, i, s.Address)
		}
		if !v.inSRAM(s.Address, uint64(s.Size)) {
			v.ps.add("%s[%d] %q %s: outside SRAM", where, i, s.Name, span(s.Address, uint64(s.Size)))
		}
	}
}

func (v *validator) bindings(k BindingKind) {
	names := map[string]int{}
	for i, b := range v.p.bindings(k) {
		where := fmt.Sprintf("%s[%d] %q", k, i, b.Name)
		if b.Name == "" {
			v.ps.add("%s: empty name", where)
		} else if j, dup := names[b.Name]; dup {
			v.ps.add("%s: duplicate name, also %s[%d]", where, k, j)
		} else {
			names[b.Name] = i
		}
		if !b.DType.Known() {
			v.ps.add("%s: unknown dtype %q", where, b.DType)
		}
		size, sizeOK := b.Bytes()
		if !sizeOK && b.DType.Known() {
			v.ps.add("%s: shape %v is too large", where, b.Shape)
		}
		if len(b.TensorShape) > 0 && sizeOK {
			// The tensor fits in its packed layout (which may pad it).
			t := Binding{DType: b.DType, Shape: b.TensorShape}
			if tb, ok := t.Bytes(); !ok || tb > size {
				v.ps.add("%s: tensor shape %v does not fit the %d-byte packed layout", where, b.TensorShape, size)
			}
		}
		for j, s := range b.Slices {
			sw := fmt.Sprintf("%s: slice %d (tile %d, address %#x, length %d)", where, j, s.Tile, s.Address, s.Length)
			if _, ok := v.tiles[s.Tile]; !ok {
				v.ps.add("%s: tile %d is not in the package", sw, s.Tile)
			}
			if s.Length == 0 {
				v.ps.add("%s: empty slice", sw)
			}
			if !v.inSRAM(s.Address, uint64(s.Length)) {
				v.ps.add("%s: %s is outside the tile's SRAM", sw, span(s.Address, uint64(s.Length)))
			}
		}
		if sizeOK {
			v.coverage(where, b, size)
			v.layout(where, b, size)
		}
	}
}

// coverage checks that a binding's slices cover its tensor bytes exactly
// once: the host writes each input byte to one place and reads each output
// byte from one place.
func (v *validator) coverage(where string, b Binding, size uint64) {
	order := make([]int, len(b.Slices))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(b.Slices[x].Offset, b.Slices[y].Offset), cmp.Compare(x, y))
	})
	next := uint64(0) // tensor bytes [0, next) are covered
	prev := -1
	for _, i := range order {
		s := b.Slices[i]
		end := s.Offset + uint64(s.Length)
		switch {
		case s.Offset > next:
			v.ps.add("%s: gap: tensor bytes [%d,%d) are in no slice (next is slice %d on tile %d at %#x)",
				where, next, s.Offset, i, s.Tile, s.Address)
		case s.Offset < next:
			v.ps.add("%s: slice %d (tile %d, address %#x) covers tensor bytes [%d,%d), overlapping slice %d",
				where, i, s.Tile, s.Address, s.Offset, end, prev)
		}
		if end > size || end < s.Offset {
			v.ps.add("%s: slice %d (tile %d, address %#x) ends at tensor byte %d, past the tensor's %d bytes",
				where, i, s.Tile, s.Address, end, size)
		}
		if end > next {
			next, prev = end, i
		}
	}
	if next < size {
		v.ps.add("%s: tensor bytes [%d,%d) are in no slice", where, next, size)
	}
}

func (v *validator) host() {
	h := &v.p.Host
	pages := map[uint32]HostPage{}
	for i, pg := range h.Pages {
		if _, dup := pages[pg.Index]; dup {
			v.ps.add("host.pages[%d]: duplicate page index %d", i, pg.Index)
			continue
		}
		if pg.Size == 0 {
			v.ps.add("host.pages[%d]: page %d is empty", i, pg.Index)
		}
		pages[pg.Index] = pg
	}
	if len(h.Calls) == 0 && len(h.Pages) == 0 {
		return // a package with no host exchange (e.g. a self-contained test)
	}
	if pg, ok := pages[h.CommandPage]; !ok {
		v.ps.add("host: command word is in page %d, which does not exist", h.CommandPage)
	} else if h.CommandOffset%4 != 0 || uint64(h.CommandOffset)+4 > uint64(pg.Size) {
		v.ps.add("host: command word at page %d offset %#x is misaligned or outside the page's %d bytes",
			h.CommandPage, h.CommandOffset, pg.Size)
	}
	if h.SlotSize == 0 {
		v.ps.add("host: slot size is 0")
	}
	names := map[string]int{}
	commands := map[uint32]int{}
	for i, c := range h.Calls {
		where := fmt.Sprintf("host.calls[%d] %q", i, c.Name)
		if c.Name == "" {
			v.ps.add("%s: empty name", where)
		} else if j, dup := names[c.Name]; dup {
			v.ps.add("%s: duplicate name, also host.calls[%d]", where, j)
		} else {
			names[c.Name] = i
		}
		if j, dup := commands[c.Command]; dup {
			v.ps.add("%s: command %d is also host.calls[%d]'s", where, c.Command, j)
		} else {
			commands[c.Command] = i
		}
		for j, ph := range c.Phases {
			v.phase(fmt.Sprintf("%s phase %d", where, j), ph, pages)
		}
	}
}

// phase checks one host phase: each transfer must name a real binding
// slice and page, stay in its slot, and no two transfers may share page
// bytes (nor the command word) or a slot.
func (v *validator) phase(where string, ph HostPhase, pages map[uint32]HostPage) {
	h := &v.p.Host
	type slotKey struct{ page, slot uint32 }
	slotOwner := map[slotKey]uint32{}
	perTile := map[uint32]uint64{}
	type used struct {
		start, end uint64
		k          int
	}
	byPage := map[uint32][]used{}
	for k, tr := range ph.Transfers {
		tw := fmt.Sprintf("%s transfer %d (%s[%d] slice %d)", where, k, tr.Kind, tr.Binding, tr.Slice)
		if tr.Kind > KindWeight {
			v.ps.add("%s: unknown binding kind %d", tw, tr.Kind)
			continue
		}
		bs := v.p.bindings(tr.Kind)
		if uint64(tr.Binding) >= uint64(len(bs)) {
			v.ps.add("%s: no such binding (%s has %d)", tw, tr.Kind, len(bs))
			continue
		}
		b := bs[tr.Binding]
		if uint64(tr.Slice) >= uint64(len(b.Slices)) {
			v.ps.add("%s: no such slice (%q has %d)", tw, b.Name, len(b.Slices))
			continue
		}
		s := b.Slices[tr.Slice]
		tw = fmt.Sprintf("%s transfer %d (%s[%d] %q slice %d, tile %d, address %#x)",
			where, k, tr.Kind, tr.Binding, b.Name, tr.Slice, s.Tile, uint64(s.Address)+uint64(tr.SliceOffset))
		if tr.Length == 0 {
			v.ps.add("%s: empty transfer", tw)
		}
		if uint64(tr.SliceOffset)+uint64(tr.Length) > uint64(s.Length) {
			v.ps.add("%s: bytes [%d,%d) of the slice, which has %d", tw,
				tr.SliceOffset, uint64(tr.SliceOffset)+uint64(tr.Length), s.Length)
		}
		pg, ok := pages[tr.Page]
		if !ok {
			v.ps.add("%s: page %d does not exist", tw, tr.Page)
			continue
		}
		start, end := uint64(tr.PageOffset), uint64(tr.PageOffset)+uint64(tr.Length)
		if end > uint64(pg.Size) {
			v.ps.add("%s: page %d bytes [%d,%d) exceed the page's %d", tw, tr.Page, start, end, pg.Size)
		}
		if tr.Page == h.CommandPage && start < uint64(h.CommandOffset)+4 && end > uint64(h.CommandOffset) {
			v.ps.add("%s: page %d bytes [%d,%d) cover the command word", tw, tr.Page, start, end)
		}
		byPage[tr.Page] = append(byPage[tr.Page], used{start, end, k})
		perTile[s.Tile] += uint64(tr.Length)
		if h.SlotSize == 0 || tr.Length == 0 {
			continue
		}
		first, last := start/uint64(h.SlotSize), (end-1)/uint64(h.SlotSize)
		if first != last {
			v.ps.add("%s: page %d bytes [%d,%d) cross a %d-byte slot boundary", tw, tr.Page, start, end, h.SlotSize)
		}
		key := slotKey{tr.Page, uint32(first)}
		if owner, taken := slotOwner[key]; taken && owner != s.Tile {
			v.ps.add("%s: page %d slot %d already belongs to tile %d in this phase", tw, tr.Page, first, owner)
		} else {
			slotOwner[key] = s.Tile
		}
	}
	if h.SlotSize != 0 {
		tiles := make([]uint32, 0, len(perTile))
		for t := range perTile {
			tiles = append(tiles, t)
		}
		slices.Sort(tiles) // map order is random; messages must not be
		for _, t := range tiles {
			if n := perTile[t]; n > uint64(h.SlotSize) {
				v.ps.add("%s: tile %d moves %d bytes, more than its %d-byte slot", where, t, n, h.SlotSize)
			}
		}
	}
	pageIDs := make([]uint32, 0, len(byPage))
	for pg := range byPage {
		pageIDs = append(pageIDs, pg)
	}
	slices.Sort(pageIDs)
	for _, pg := range pageIDs {
		us := byPage[pg]
		slices.SortFunc(us, func(a, b used) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.k, b.k)) })
		for i := 1; i < len(us); i++ {
			if us[i].start < us[i-1].end {
				v.ps.add("%s transfer %d: page %d bytes [%d,%d) overlap transfer %d's [%d,%d)",
					where, us[i].k, pg, us[i].start, us[i].end, us[i-1].k, us[i-1].start, us[i-1].end)
			}
		}
	}
}

func (v *validator) config() {
	for i, w := range v.p.Config {
		if w.Offset%4 != 0 {
			v.ps.add("config[%d]: offset %#x (value %#x) is not 4-byte aligned", i, w.Offset, w.Value)
		}
	}
}

func (v *validator) profile() {
	pr := &v.p.Profile
	for i, s := range pr.Steps {
		if s.Name == "" {
			v.ps.add("profile.steps[%d]: empty name", i)
		}
	}
	seen := map[uint32]int{}
	for i, tp := range pr.Tiles {
		where := fmt.Sprintf("profile.tiles[%d] (tile %d)", i, tp.Tile)
		if _, ok := v.tiles[tp.Tile]; !ok {
			v.ps.add("%s: tile %d is not in the package", where, tp.Tile)
		}
		if j, dup := seen[tp.Tile]; dup {
			v.ps.add("%s: duplicate tile, also profile.tiles[%d]", where, j)
		} else {
			seen[tp.Tile] = i
		}
		addrs := map[uint32]int{}
		for j, s := range tp.Samples {
			sw := fmt.Sprintf("%s: sample %d at %#x", where, j, s.Address)
			if uint64(s.Step) >= uint64(len(pr.Steps)) {
				v.ps.add("%s: step %d does not exist (%d steps)", sw, s.Step, len(pr.Steps))
			}
			if s.Address%4 != 0 || !v.inSRAM(s.Address, 4) {
				v.ps.add("%s: not an aligned word in SRAM", sw)
			}
			if uint64(s.Detail) > uint64(len(v.p.Run.StepDetails)) {
				v.ps.add("%s: step detail %d does not exist (run.stepDetails has %d)", sw, s.Detail, len(v.p.Run.StepDetails))
			}
			if k, dup := addrs[s.Address]; dup {
				v.ps.add("%s: same address as sample %d", sw, k)
			} else {
				addrs[s.Address] = j
			}
		}
	}
}

// MemoryKinds are the kinds a MemoryRange may have (profile.SegmentKind's
// names; a launch test checks they agree).
var MemoryKinds = []string{"code", "exchange-rows", "weights", "activations", "partials", "free"}

// layout checks a binding's layout blocks: a tensor shape to refer to,
// known orders, blocks inside the padded matrix and aligned as their order
// needs, real-element bounds inside the block and the matrix, and blocks
// that cover the packed bytes exactly. (That every real element is in
// some block is checked where the elements are: by the host packer.)
func (v *validator) layout(where string, b Binding, size uint64) {
	if len(b.Layout) == 0 {
		return
	}
	rows, cols, ok := b.Matrix()
	if !ok {
		v.ps.add("%s: a layout needs a tensor shape that fits, got %v", where, b.TensorShape)
		return
	}
	esz := uint64(b.DType.Size())
	padCols := (cols + 15) / 16 * 16
	type extent struct {
		off, end uint64
		i        int
	}
	ext := make([]extent, 0, len(b.Layout))
	for i, blk := range b.Layout {
		bw := fmt.Sprintf("%s: layout block %d (%s rows [%d,%d) cols [%d,%d) at byte %d)", where, i, blk.Order,
			blk.RowLo, blk.RowHi, blk.ColLo, blk.ColHi, blk.Offset)
		if blk.Order >= numOrders {
			v.ps.add("%s: unknown element order %d", bw, uint8(blk.Order))
			continue
		}
		if blk.RowHi < blk.RowLo || blk.ColHi < blk.ColLo {
			v.ps.add("%s: malformed extent", bw)
			continue
		}
		// Columns pad to 16 (row-major blocks may sit in padded columns
		// too). Rows past the matrix are padding rows (the last row
		// chunk of a plan in chunks), bounded by the packed bytes like any
		// block.
		if uint64(blk.ColHi) > padCols {
			v.ps.add("%s: reaches past the padded %d columns (real %d x %d)", bw, padCols, rows, cols)
		}
		if blk.Order != RowMajor && (blk.ColLo%16 != 0 || blk.ColHi%16 != 0) {
			v.ps.add("%s: columns not in whole 16-column groups", bw)
		}
		if blk.Order == AMPRight && (blk.RowLo%16 != 0 || blk.RowHi%16 != 0) {
			v.ps.add("%s: inner rows not in whole 16-row groups", bw)
		}
		// Real elements: rows [RowLo, RowEnd) x columns [ColLo, ColEnd),
		// inside the matrix unless empty (a block of padding only).
		if blk.RowEnd < blk.RowLo || blk.RowEnd > blk.RowHi || (blk.RowEnd > blk.RowLo && uint64(blk.RowEnd) > rows) ||
			blk.ColEnd < blk.ColLo || blk.ColEnd > blk.ColHi || (blk.ColEnd > blk.ColLo && uint64(blk.ColEnd) > cols) {
			v.ps.add("%s: real elements end at row %d col %d, outside the block or the %d x %d matrix", bw, blk.RowEnd, blk.ColEnd, rows, cols)
		}
		n := uint64(blk.Rows()) * uint64(blk.Cols()) * esz
		if blk.Offset%esz != 0 || blk.Offset > size || n > size-blk.Offset {
			v.ps.add("%s: bytes [%d,%d) misaligned or outside the binding's %d", bw, blk.Offset, blk.Offset+n, size)
			continue
		}
		ext = append(ext, extent{blk.Offset, blk.Offset + n, i})
	}
	slices.SortFunc(ext, func(a, b extent) int { return cmp.Or(cmp.Compare(a.off, b.off), cmp.Compare(a.i, b.i)) })
	next := uint64(0)
	for _, e := range ext {
		switch {
		case e.off > next:
			v.ps.add("%s: layout: bytes [%d,%d) are in no block", where, next, e.off)
		case e.off < next:
			v.ps.add("%s: layout block %d: bytes [%d,%d) overlap another block", where, e.i, e.off, e.end)
		}
		next = max(next, e.end)
	}
	if next < size && len(ext) == len(b.Layout) {
		v.ps.add("%s: layout: bytes [%d,%d) are in no block", where, next, size)
	}
}

// run checks the run information: known assumptions, finalists with one
// grid per GEMM, phases with distinct ids and windows of package tiles
// inside their horizon, memory ranges of known kinds in SRAM, step
// details naming phases that exist.
func (v *validator) run() {
	r := &v.p.Run
	switch r.Assumptions {
	case "", AssumptionsDefault, AssumptionsConservative:
	default:
		v.ps.add("run.assumptions: unknown assumption set %q (want %q or %q)", r.Assumptions, AssumptionsDefault, AssumptionsConservative)
	}
	for i, f := range r.Plan.Finalists {
		if len(f.Grids) != len(r.Plan.Gemms) {
			v.ps.add("run.plan.finalists[%d] (rank %d): %d grids for %d GEMMs", i, f.Rank, len(f.Grids), len(r.Plan.Gemms))
		}
	}
	ids := map[uint32]int{}
	for i, ph := range r.Phases {
		where := fmt.Sprintf("run.phases[%d] %q (id %d)", i, ph.Name, ph.ID)
		if j, dup := ids[ph.ID]; dup {
			v.ps.add("%s: duplicate id, also run.phases[%d]", where, j)
		} else {
			ids[ph.ID] = i
		}
		if ph.Bound > ph.Horizon {
			v.ps.add("%s: lower bound %d exceeds the horizon %d", where, ph.Bound, ph.Horizon)
		}
		seen := map[uint32]int{}
		for j, w := range ph.Windows {
			ww := fmt.Sprintf("%s window %d (tile %d)", where, j, w.Tile)
			if _, ok := v.tiles[w.Tile]; !ok {
				v.ps.add("%s: tile %d is not in the package", ww, w.Tile)
			}
			if k, dup := seen[w.Tile]; dup {
				v.ps.add("%s: duplicate tile, also window %d", ww, k)
			} else {
				seen[w.Tile] = j
			}
			if w.SendStart > w.SendEnd || w.RecvStart > w.RecvEnd || uint64(w.SendEnd) > ph.Horizon || uint64(w.RecvEnd) > ph.Horizon {
				v.ps.add("%s: send [%d,%d) or receive [%d,%d) is not inside the horizon %d", ww, w.SendStart, w.SendEnd, w.RecvStart, w.RecvEnd, ph.Horizon)
			}
		}
	}
	for i, m := range r.MemoryMaps {
		for j, mr := range m.Ranges {
			rw := fmt.Sprintf("run.memoryMaps[%d] range %d %q %s", i, j, mr.Name, span(mr.Address, uint64(mr.Size)))
			if !slices.Contains(MemoryKinds, mr.Kind) {
				v.ps.add("%s: unknown kind %q", rw, mr.Kind)
			}
			if !v.inSRAM(mr.Address, uint64(mr.Size)) {
				v.ps.add("%s: outside SRAM", rw)
			}
		}
	}
	for i, d := range r.StepDetails {
		if d.Phase < -1 {
			v.ps.add("run.stepDetails[%d]: phase %d (want an id or -1)", i, d.Phase)
		} else if _, ok := ids[uint32(d.Phase)]; d.Phase >= 0 && len(r.Phases) > 0 && !ok {
			v.ps.add("run.stepDetails[%d]: phase %d is not in run.phases", i, d.Phase)
		}
	}
}
