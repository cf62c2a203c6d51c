package ipuexe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"

	"capnproto.org/go/capnp/v3"

	"github.com/ipustack/ipustack/ipuexe/schema"
)

// Marshal encodes p as a package file.
//
// The bytes depend only on p: the message is built in one pass in field
// order into a single Cap'n Proto segment, and identical segment data is
// stored once, numbered in order of first use. Marshal does not validate
// (the compiler calls Validate first); that way tools and tests can write
// any package, including ones Read will refuse.
func (p *Package) Marshal() ([]byte, error) {
	blobs, refs := collectBlobs(p)
	// Build the message straight into the output buffer, after room for
	// the header and the stream framing, and sized so the arena never
	// grows: growing copies everything built so far, and a whole-chip
	// package is hundreds of MiB. The estimate is an upper bound; if it
	// were ever short, build again in a growable arena: the layout, and so
	// the bytes, are the same.
	const pre = HeaderSize + 8
	buf := make([]byte, pre, pre+sizeEstimate(p, blobs))
	msg, _ := capnp.NewSingleSegmentMessage(buf[pre:pre])
	if err := build(msg, p, blobs, refs); err == nil {
		seg, err := msg.Segment(0)
		if err != nil {
			return nil, fmt.Errorf("ipuexe: marshal: %w", err)
		}
		if data := seg.Data(); len(data) > 0 && &data[0] == &buf[:pre+1][pre] {
			out := buf[:pre+len(data)]
			putFraming(out[HeaderSize:], len(data))
			putHeader(out, out[HeaderSize:])
			return out, nil
		}
		return frame(msg)
	}
	msg, _, err := capnp.NewMessage(capnp.SingleSegment(nil))
	if err != nil {
		return nil, fmt.Errorf("ipuexe: marshal: %w", err)
	}
	if err := build(msg, p, blobs, refs); err != nil {
		return nil, fmt.Errorf("ipuexe: marshal: %w", err)
	}
	return frame(msg)
}

// putFraming writes the stream framing of a one-segment message of n
// bytes: segment count - 1, then the segment's size in words.
func putFraming(b []byte, n int) {
	binary.LittleEndian.PutUint32(b[0:], 0)
	binary.LittleEndian.PutUint32(b[4:], uint32(n/8))
}

// frame copies a message built elsewhere into a file: header, stream
// framing, segments.
func frame(msg *capnp.Message) ([]byte, error) {
	var out []byte
	if msg.NumSegments() == 1 {
		seg, err := msg.Segment(0)
		if err != nil {
			return nil, fmt.Errorf("ipuexe: marshal: %w", err)
		}
		data := seg.Data()
		out = make([]byte, HeaderSize+8+len(data))
		putFraming(out[HeaderSize:], len(data))
		copy(out[HeaderSize+8:], data)
	} else {
		m, err := msg.Marshal()
		if err != nil {
			return nil, fmt.Errorf("ipuexe: marshal: %w", err)
		}
		out = make([]byte, HeaderSize+len(m))
		copy(out[HeaderSize:], m)
	}
	putHeader(out, out[HeaderSize:])
	return out, nil
}

// putHeader fills the fixed header of file from its content.
func putHeader(file, content []byte) { envelopeFormat.PutHeader(file, content) }

// collectBlobs lists the distinct non-empty segment data in order of first
// use and returns, per tile and segment, its blob number (index + 1, 0 for
// no data). The runtime's code is the same on every tile, so this keeps a
// whole-chip package from storing it 1472 times.
func collectBlobs(p *Package) (blobs [][]byte, refs [][]uint32) {
	seed := maphash.MakeSeed() // only for lookup; never reaches the output
	byHash := map[uint64][]uint32{}
	// A package from Read (or a compiler that shares one slice) uses the
	// same slice for equal data: recognise it without hashing. Besides
	// saving time, this keeps Marshal linear for a hostile file whose
	// segments all point at one large blob.
	type sliceID struct {
		ptr *byte
		n   int
	}
	bySlice := map[sliceID]uint32{}
	refs = make([][]uint32, len(p.Tiles))
	for ti, t := range p.Tiles {
		refs[ti] = make([]uint32, len(t.Segments))
		for si, s := range t.Segments {
			if len(s.Data) == 0 {
				continue
			}
			id := sliceID{&s.Data[0], len(s.Data)}
			ref := bySlice[id]
			if ref == 0 {
				h := maphash.Bytes(seed, s.Data)
				for _, b := range byHash[h] {
					if bytes.Equal(blobs[b-1], s.Data) {
						ref = b
						break
					}
				}
				if ref == 0 {
					blobs = append(blobs, s.Data)
					ref = uint32(len(blobs))
					byHash[h] = append(byHash[h], ref)
				}
				bySlice[id] = ref
			}
			refs[ti][si] = ref
		}
	}
	return blobs, refs
}

// sizeEstimate is estimateSize; a test replaces it to exercise the
// fallback.
var sizeEstimate = estimateSize

// estimateSize is an upper bound of the message size: every struct is
// counted at 64 bytes (the largest in the schema is 32), every list, text
// and data at its length plus a word of padding and a word of tag.
func estimateSize(p *Package, blobs [][]byte) int {
	const st = 64
	n := 1024 + st*2
	text := func(s string) { n += len(s) + 16 }
	symbols := func(ss []Symbol) {
		n += 16
		for _, s := range ss {
			n += st
			text(s.Name)
		}
	}
	text(p.CompilerVersion)
	text(p.Recipe)
	text(p.Target)
	n += 16 + 8*len(blobs)
	for _, b := range blobs {
		n += len(b) + 16
	}
	n += 16
	for _, t := range p.Tiles {
		n += st + 16 + st*len(t.Segments)
		symbols(t.Symbols)
	}
	for _, bs := range [][]Binding{p.Inputs, p.Outputs, p.Weights} {
		n += 16
		for _, b := range bs {
			n += st + 4*len(b.Shape) + 4*len(b.TensorShape) + 48 + st*len(b.Slices) + st*len(b.Layout)
			text(b.Name)
			text(string(b.DType))
		}
	}
	n += st + 16 + st*len(p.Host.Pages) + 16
	for _, c := range p.Host.Calls {
		n += st + 16
		text(c.Name)
		for _, ph := range c.Phases {
			n += st + 16 + st*len(ph.Transfers)
		}
	}
	n += 16 + st*len(p.Config)
	n += st + 16 + 16
	for _, s := range p.Profile.Steps {
		n += st
		text(s.Name)
		text(s.Kind)
	}
	for _, t := range p.Profile.Tiles {
		n += st + 16 + st*len(t.Samples)
	}
	symbols(p.Symbols)
	r := &p.Run
	n += 3*st + 64
	text(r.Workload)
	text(r.Assumptions)
	for _, g := range r.Plan.Gemms {
		n += 2 * st
		text(g.Name)
		text(g.Kernel)
	}
	for _, f := range r.Plan.Finalists {
		n += st + 16 + st*len(f.Grids)
	}
	for _, ph := range r.Phases {
		n += st + 16 + st*len(ph.Windows)
		text(ph.Name)
		text(ph.Schedule)
	}
	for _, m := range r.MemoryMaps {
		n += st + 16
		for _, mr := range m.Ranges {
			n += st
			text(mr.Kind)
			text(mr.Name)
		}
	}
	for _, d := range r.StepDetails {
		n += st
		text(d.Kernel)
		text(d.Operation)
		text(d.Value)
		text(d.Reason)
	}
	return n
}

// builder carries the first error of a build, so the many setters below
// read as a straight list instead of an if-ladder each.
type builder struct{ err error }

func (b *builder) check(err error) {
	if err != nil && b.err == nil {
		b.err = err
	}
}

// count converts a Go length to a capnp list length, which is an int32.
func (b *builder) count(n int, what string) int32 {
	if n > 1<<29-1 {
		b.check(fmt.Errorf("%s: %d elements is more than a list can hold", what, n))
		return 0
	}
	return int32(n)
}

func build(msg *capnp.Message, p *Package, blobs [][]byte, refs [][]uint32) error {
	seg, err := msg.Segment(0)
	if err != nil {
		return err
	}
	root, err := schema.NewRootPackage(seg)
	if err != nil {
		return err
	}
	var b builder
	root.SetFormatVersion(FormatVersion)
	b.check(root.SetCompilerVersion(p.CompilerVersion))
	b.check(root.SetRecipe(p.Recipe))
	b.check(root.SetTarget(p.Target))
	root.SetMemoryBase(p.MemoryBase)
	root.SetMemorySize(p.MemorySize)

	tiles, err := root.NewTiles(b.count(len(p.Tiles), "tiles"))
	b.check(err)
	for i, t := range p.Tiles {
		if b.err != nil {
			break
		}
		ct := tiles.At(i)
		ct.SetPhysical(t.Physical)
		ct.SetEntry(t.Entry)
		ct.SetMemoryMap(t.MemoryMap)
		segs, err := ct.NewSegments(b.count(len(t.Segments), "segments"))
		b.check(err)
		for j, s := range t.Segments {
			if b.err != nil {
				break
			}
			cs := segs.At(j)
			cs.SetAddress(s.Address)
			cs.SetMemorySize(s.MemSize)
			cs.SetFlags(uint8(s.Flags))
			cs.SetBlob(refs[i][j])
		}
		if len(t.Symbols) > 0 {
			syms, err := ct.NewSymbols(b.count(len(t.Symbols), "symbols"))
			b.check(err)
			b.symbols(syms, t.Symbols)
		}
	}

	// Blobs follow the tiles so that the small per-tile records sit
	// together at the front of the message.
	bl, err := capnp.NewDataList(seg, b.count(len(blobs), "blobs"))
	b.check(err)
	for i, d := range blobs {
		if b.err != nil {
			break
		}
		b.check(bl.Set(i, d))
	}
	b.check(root.SetBlobs(bl))

	b.bindings(root.NewInputs, p.Inputs)
	b.bindings(root.NewOutputs, p.Outputs)
	b.bindings(root.NewWeights, p.Weights)

	host, err := root.NewHost()
	b.check(err)
	b.host(host, &p.Host)

	cfg, err := root.NewConfig(b.count(len(p.Config), "config"))
	b.check(err)
	for i, w := range p.Config {
		if b.err != nil {
			break
		}
		cw := cfg.At(i)
		cw.SetOffset(w.Offset)
		cw.SetValue(w.Value)
	}

	prof, err := root.NewProfile()
	b.check(err)
	b.profile(prof, &p.Profile)

	syms, err := root.NewSymbols(b.count(len(p.Symbols), "symbols"))
	b.check(err)
	b.symbols(syms, p.Symbols)

	run, err := root.NewRun()
	b.check(err)
	b.run(run, &p.Run)
	return b.err
}

func (b *builder) run(cr schema.RunInfo, r *RunInfo) {
	if b.err != nil {
		return
	}
	b.check(cr.SetWorkload(r.Workload))
	b.check(cr.SetAssumptions(r.Assumptions))
	cr.SetFlops(r.Flops)
	plan, err := cr.NewPlan()
	b.check(err)
	if b.err != nil {
		return
	}
	plan.SetPredictedCycles(r.Plan.PredictedCycles)
	gemms, err := plan.NewGemms(b.count(len(r.Plan.Gemms), "plan gemms"))
	b.check(err)
	for i, g := range r.Plan.Gemms {
		if b.err != nil {
			return
		}
		cg := gemms.At(i)
		b.check(cg.SetName(g.Name))
		cg.SetM(g.M)
		cg.SetK(g.K)
		cg.SetN(g.N)
		grid, err := cg.NewGrid()
		b.check(err)
		setGrid(grid, g.Grid)
		cg.SetTiles(g.Tiles)
		b.check(cg.SetKernel(g.Kernel))
	}
	fins, err := plan.NewFinalists(b.count(len(r.Plan.Finalists), "plan finalists"))
	b.check(err)
	for i, f := range r.Plan.Finalists {
		if b.err != nil {
			return
		}
		cf := fins.At(i)
		cf.SetRank(f.Rank)
		cf.SetMidCycles(f.MidCycles)
		cf.SetLowCycles(f.LowCycles)
		cf.SetChosen(f.Chosen)
		grids, err := cf.NewGrids(b.count(len(f.Grids), "finalist grids"))
		b.check(err)
		for j, g := range f.Grids {
			if b.err != nil {
				return
			}
			setGrid(grids.At(j), g)
		}
	}
	phases, err := cr.NewPhases(b.count(len(r.Phases), "phases"))
	b.check(err)
	for i, ph := range r.Phases {
		if b.err != nil {
			return
		}
		cp := phases.At(i)
		cp.SetId(ph.ID)
		b.check(cp.SetName(ph.Name))
		cp.SetHorizon(ph.Horizon)
		cp.SetBound(ph.Bound)
		b.check(cp.SetSchedule(ph.Schedule))
		ws, err := cp.NewWindows(b.count(len(ph.Windows), "phase windows"))
		b.check(err)
		for j, w := range ph.Windows {
			if b.err != nil {
				return
			}
			cw := ws.At(j)
			cw.SetTile(w.Tile)
			cw.SetSendStart(w.SendStart)
			cw.SetSendEnd(w.SendEnd)
			cw.SetRecvStart(w.RecvStart)
			cw.SetRecvEnd(w.RecvEnd)
			cw.SetSendBytes(w.SendBytes)
			cw.SetRecvBytes(w.RecvBytes)
		}
	}
	maps, err := cr.NewMemoryMaps(b.count(len(r.MemoryMaps), "memory maps"))
	b.check(err)
	for i, m := range r.MemoryMaps {
		if b.err != nil {
			return
		}
		rs, err := maps.At(i).NewRanges(b.count(len(m.Ranges), "memory ranges"))
		b.check(err)
		for j, mr := range m.Ranges {
			if b.err != nil {
				return
			}
			c := rs.At(j)
			b.check(c.SetKind(mr.Kind))
			c.SetAddress(mr.Address)
			c.SetSize(mr.Size)
			b.check(c.SetName(mr.Name))
		}
	}
	ds, err := cr.NewStepDetails(b.count(len(r.StepDetails), "step details"))
	b.check(err)
	for i, d := range r.StepDetails {
		if b.err != nil {
			return
		}
		c := ds.At(i)
		b.check(c.SetKernel(d.Kernel))
		c.SetPhase(d.Phase)
		b.check(c.SetOperation(d.Operation))
		b.check(c.SetValue(d.Value))
		b.check(c.SetReason(d.Reason))
	}
}

func setGrid(c schema.PlanGrid, g PlanGrid) {
	c.SetRows(g.Rows)
	c.SetCols(g.Cols)
	c.SetInner(g.Inner)
}

func (b *builder) symbols(l schema.Symbol_List, ss []Symbol) {
	for i, s := range ss {
		if b.err != nil {
			return
		}
		cs := l.At(i)
		b.check(cs.SetName(s.Name))
		cs.SetAddress(s.Address)
		cs.SetSize(s.Size)
	}
}

func (b *builder) bindings(newList func(int32) (schema.Binding_List, error), bs []Binding) {
	if b.err != nil {
		return
	}
	l, err := newList(b.count(len(bs), "bindings"))
	b.check(err)
	for i, bd := range bs {
		if b.err != nil {
			return
		}
		cb := l.At(i)
		b.check(cb.SetName(bd.Name))
		b.check(cb.SetDtype(string(bd.DType)))
		shape, err := cb.NewShape(b.count(len(bd.Shape), "shape"))
		b.check(err)
		for j, d := range bd.Shape {
			if b.err != nil {
				return
			}
			shape.Set(j, d)
		}
		if len(bd.TensorShape) > 0 {
			ts, err := cb.NewTensorShape(b.count(len(bd.TensorShape), "tensor shape"))
			b.check(err)
			for j, d := range bd.TensorShape {
				if b.err != nil {
					return
				}
				ts.Set(j, d)
			}
		}
		if len(bd.Layout) > 0 {
			ll, err := cb.NewLayout(b.count(len(bd.Layout), "layout"))
			b.check(err)
			for j, blk := range bd.Layout {
				if b.err != nil {
					return
				}
				c := ll.At(j)
				c.SetOffset(blk.Offset)
				c.SetRowLo(blk.RowLo)
				c.SetRowHi(blk.RowHi)
				c.SetColLo(blk.ColLo)
				c.SetColHi(blk.ColHi)
				c.SetRowEnd(blk.RowEnd)
				c.SetColEnd(blk.ColEnd)
				c.SetOrder(schema.ElementOrder(blk.Order))
			}
		}
		sl, err := cb.NewSlices(b.count(len(bd.Slices), "slices"))
		b.check(err)
		for j, s := range bd.Slices {
			if b.err != nil {
				return
			}
			cs := sl.At(j)
			cs.SetTile(s.Tile)
			cs.SetAddress(s.Address)
			cs.SetOffset(s.Offset)
			cs.SetLength(s.Length)
		}
	}
}

func (b *builder) host(ch schema.HostExchange, h *HostExchange) {
	if b.err != nil {
		return
	}
	ch.SetCommandPage(h.CommandPage)
	ch.SetCommandOffset(h.CommandOffset)
	ch.SetSlotSize(h.SlotSize)
	pages, err := ch.NewPages(b.count(len(h.Pages), "pages"))
	b.check(err)
	for i, pg := range h.Pages {
		if b.err != nil {
			return
		}
		cp := pages.At(i)
		cp.SetIndex(pg.Index)
		cp.SetSize(pg.Size)
	}
	calls, err := ch.NewCalls(b.count(len(h.Calls), "calls"))
	b.check(err)
	for i, c := range h.Calls {
		if b.err != nil {
			return
		}
		cc := calls.At(i)
		b.check(cc.SetName(c.Name))
		cc.SetCommand(c.Command)
		phases, err := cc.NewPhases(b.count(len(c.Phases), "phases"))
		b.check(err)
		for j, ph := range c.Phases {
			if b.err != nil {
				return
			}
			trs, err := phases.At(j).NewTransfers(b.count(len(ph.Transfers), "transfers"))
			b.check(err)
			for k, tr := range ph.Transfers {
				if b.err != nil {
					return
				}
				ct := trs.At(k)
				ct.SetKind(schema.BindingKind(tr.Kind))
				ct.SetBinding(tr.Binding)
				ct.SetSlice(tr.Slice)
				ct.SetSliceOffset(tr.SliceOffset)
				ct.SetLength(tr.Length)
				ct.SetPage(tr.Page)
				ct.SetPageOffset(tr.PageOffset)
			}
		}
	}
}

func (b *builder) profile(cp schema.Profile, pr *Profile) {
	if b.err != nil {
		return
	}
	steps, err := cp.NewSteps(b.count(len(pr.Steps), "steps"))
	b.check(err)
	for i, s := range pr.Steps {
		if b.err != nil {
			return
		}
		cs := steps.At(i)
		b.check(cs.SetName(s.Name))
		b.check(cs.SetKind(s.Kind))
	}
	tiles, err := cp.NewTiles(b.count(len(pr.Tiles), "profile tiles"))
	b.check(err)
	for i, t := range pr.Tiles {
		if b.err != nil {
			return
		}
		ct := tiles.At(i)
		ct.SetTile(t.Tile)
		ss, err := ct.NewSamples(b.count(len(t.Samples), "samples"))
		b.check(err)
		for j, s := range t.Samples {
			if b.err != nil {
				return
			}
			cs := ss.At(j)
			cs.SetAddress(s.Address)
			cs.SetStep(s.Step)
			cs.SetDetail(s.Detail)
		}
	}
}
