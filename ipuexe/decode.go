package ipuexe

import (
	"errors"
	"fmt"
	"github.com/ipustack/ipustack/internal/envelope"

	"capnproto.org/go/capnp/v3"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/ipuexe/schema"
)

// Errors Read and Decode return, for errors.Is. Every returned error also
// says what exactly was wrong.
var (
	ErrMagic     = errors.New("ipuexe: not an ipuexe package")
	ErrVersion   = errors.New("ipuexe: unsupported format version")
	ErrTruncated = errors.New("ipuexe: truncated package")
	ErrChecksum  = errors.New("ipuexe: checksum mismatch")
	ErrCorrupt   = errors.New("ipuexe: corrupt package")
	ErrTarget    = errors.New("ipuexe: unknown target")
	ErrInvalid   = errors.New("ipuexe: invalid package")
)

// Read decodes a package file and validates it against the target it
// names. It returns a package only if the file is intact and the package
// is valid: what Read returns can be loaded.
//
// The returned package refers into data (segment bytes are not copied,
// which is what lets a whole-chip package load in a fraction of a
// second); data must not change while the package is in use.
func Read(data []byte) (*Package, error) {
	p, err := Decode(data)
	if err != nil {
		return nil, err
	}
	t, err := ipu21.Lookup(p.Target)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrTarget, p.Target, err)
	}
	if err := p.Validate(t); err != nil {
		return nil, err
	}
	return p, nil
}

// Decode checks a package file's header and checksum and decodes it,
// without validating the content. It is for tools that show a package
// (ipu inspect) and must also show one that Validate refuses. Like Read,
// it returns segment data that refers into data.
func Decode(data []byte) (*Package, error) {
	content, err := envelopeFormat.Open(data)
	if err != nil {
		return nil, err
	}
	p, err := decodeContent(content)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return p, nil
}

// decodeContent decodes the Cap'n Proto message. The checksum already
// vouches for the bytes, but a file can be written by anything, so every
// step still fails cleanly on nonsense.
func decodeContent(content []byte) (*Package, error) {
	msg, err := capnp.Unmarshal(content)
	if err != nil {
		return nil, err
	}
	// Bytes past the message would be covered by the checksum but never
	// looked at by any reader: refuse them.
	if s, err := msg.TotalSize(); err != nil {
		return nil, err
	} else if s != uint64(len(content)) {
		return nil, fmt.Errorf("stream framing covers %d bytes, content is %d", s, len(content))
	}
	// Cap'n Proto stops a reader after it has traversed its limit of bytes
	// (64 MiB by default). A package reads each object once, so twice its
	// size is plenty; the limit still protects against messages whose
	// pointers make the reader visit the same bytes over and over.
	msg.ResetReadLimit(2*uint64(len(content)) + 1<<20)
	d := decoder{}
	p := d.pkg(msg)
	if d.err != nil {
		return nil, d.err
	}
	return p, nil
}

// decoder keeps the first error, with the path of the field it came from.
type decoder struct{ err error }

func (d *decoder) fail(path string, err error) {
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("%s: %w", path, err)
	}
}

func (d *decoder) text(path string, get func() (string, error)) string {
	s, err := get()
	d.fail(path, err)
	return s
}

func (d *decoder) pkg(msg *capnp.Message) *Package {
	root, err := schema.ReadRootPackage(msg)
	if err != nil {
		d.fail("root", err)
		return nil
	}
	if v := root.FormatVersion(); v != FormatVersion {
		d.fail("formatVersion", fmt.Errorf("%d disagrees with the header's %d", v, FormatVersion))
		return nil
	}
	p := &Package{
		CompilerVersion: d.text("compilerVersion", root.CompilerVersion),
		Recipe:          d.text("recipe", root.Recipe),
		Target:          d.text("target", root.Target),
		MemoryBase:      root.MemoryBase(),
		MemorySize:      root.MemorySize(),
	}

	bl, err := root.Blobs()
	d.fail("blobs", err)
	blobs := make([][]byte, bl.Len())
	for i := range blobs {
		b, err := bl.At(i)
		d.fail(fmt.Sprintf("blobs[%d]", i), err)
		if len(b) > 0 {
			// Cap the slice so an append by a user cannot write into the
			// next object of the file.
			blobs[i] = b[:len(b):len(b)]
		}
	}

	tl, err := root.Tiles()
	d.fail("tiles", err)
	if n := tl.Len(); n > 0 {
		p.Tiles = make([]Tile, n)
	}
	for i := range p.Tiles {
		if d.err != nil {
			return nil
		}
		ct := tl.At(i)
		t := &p.Tiles[i]
		t.Physical = ct.Physical()
		t.Entry = ct.Entry()
		t.MemoryMap = ct.MemoryMap()
		path := fmt.Sprintf("tiles[%d] (tile %d)", i, t.Physical)
		sl, err := ct.Segments()
		d.fail(path+".segments", err)
		if n := sl.Len(); n > 0 {
			t.Segments = make([]Segment, n)
		}
		for j := range t.Segments {
			cs := sl.At(j)
			s := &t.Segments[j]
			s.Address = cs.Address()
			s.MemSize = cs.MemorySize()
			s.Flags = Flags(cs.Flags())
			if ref := cs.Blob(); ref != 0 {
				if uint64(ref) > uint64(len(blobs)) {
					d.fail(fmt.Sprintf("%s segment %d at %#x", path, j, s.Address),
						fmt.Errorf("blob %d of %d", ref, len(blobs)))
					return nil
				}
				s.Data = blobs[ref-1]
			}
		}
		syms, err := ct.Symbols()
		d.fail(path+".symbols", err)
		t.Symbols = d.symbols(path+".symbols", syms)
	}

	p.Inputs = d.bindings("inputs", root.Inputs)
	p.Outputs = d.bindings("outputs", root.Outputs)
	p.Weights = d.bindings("weights", root.Weights)

	host, err := root.Host()
	d.fail("host", err)
	d.host(host, &p.Host)

	cl, err := root.Config()
	d.fail("config", err)
	if n := cl.Len(); n > 0 {
		p.Config = make([]ConfigWrite, n)
		for i := range p.Config {
			cw := cl.At(i)
			p.Config[i] = ConfigWrite{Offset: cw.Offset(), Value: cw.Value()}
		}
	}

	prof, err := root.Profile()
	d.fail("profile", err)
	d.profile(prof, &p.Profile)

	syms, err := root.Symbols()
	d.fail("symbols", err)
	p.Symbols = d.symbols("symbols", syms)

	if root.HasRun() {
		run, err := root.Run()
		d.fail("run", err)
		d.run(run, &p.Run)
	}
	if d.err != nil {
		return nil
	}
	return p
}

func (d *decoder) run(cr schema.RunInfo, r *RunInfo) {
	if d.err != nil {
		return
	}
	r.Workload = d.text("run.workload", cr.Workload)
	r.Assumptions = d.text("run.assumptions", cr.Assumptions)
	r.Flops = cr.Flops()
	if cr.HasPlan() {
		plan, err := cr.Plan()
		d.fail("run.plan", err)
		r.Plan.PredictedCycles = plan.PredictedCycles()
		gl, err := plan.Gemms()
		d.fail("run.plan.gemms", err)
		if n := gl.Len(); n > 0 {
			r.Plan.Gemms = make([]PlanGemm, n)
			for i := range r.Plan.Gemms {
				cg := gl.At(i)
				path := fmt.Sprintf("run.plan.gemms[%d]", i)
				grid, err := cg.Grid()
				d.fail(path+".grid", err)
				r.Plan.Gemms[i] = PlanGemm{Name: d.text(path+".name", cg.Name), M: cg.M(), K: cg.K(), N: cg.N(),
					Grid: getGrid(grid), Tiles: cg.Tiles(), Kernel: d.text(path+".kernel", cg.Kernel)}
			}
		}
		fl, err := plan.Finalists()
		d.fail("run.plan.finalists", err)
		if n := fl.Len(); n > 0 {
			r.Plan.Finalists = make([]PlanFinalist, n)
			for i := range r.Plan.Finalists {
				cf := fl.At(i)
				f := &r.Plan.Finalists[i]
				*f = PlanFinalist{Rank: cf.Rank(), MidCycles: cf.MidCycles(), LowCycles: cf.LowCycles(), Chosen: cf.Chosen()}
				grids, err := cf.Grids()
				d.fail(fmt.Sprintf("run.plan.finalists[%d].grids", i), err)
				if n := grids.Len(); n > 0 {
					f.Grids = make([]PlanGrid, n)
					for j := range f.Grids {
						f.Grids[j] = getGrid(grids.At(j))
					}
				}
			}
		}
	}
	pl, err := cr.Phases()
	d.fail("run.phases", err)
	if n := pl.Len(); n > 0 {
		r.Phases = make([]ExchangePhase, n)
		for i := range r.Phases {
			if d.err != nil {
				return
			}
			cp := pl.At(i)
			path := fmt.Sprintf("run.phases[%d]", i)
			ph := &r.Phases[i]
			*ph = ExchangePhase{ID: cp.Id(), Name: d.text(path+".name", cp.Name), Horizon: cp.Horizon(), Bound: cp.Bound(),
				Schedule: d.text(path+".schedule", cp.Schedule)}
			wl, err := cp.Windows()
			d.fail(path+".windows", err)
			if n := wl.Len(); n > 0 {
				ph.Windows = make([]PhaseWindow, n)
				for j := range ph.Windows {
					cw := wl.At(j)
					ph.Windows[j] = PhaseWindow{Tile: cw.Tile(), SendStart: cw.SendStart(), SendEnd: cw.SendEnd(),
						RecvStart: cw.RecvStart(), RecvEnd: cw.RecvEnd(), SendBytes: cw.SendBytes(), RecvBytes: cw.RecvBytes()}
				}
			}
		}
	}
	ml, err := cr.MemoryMaps()
	d.fail("run.memoryMaps", err)
	if n := ml.Len(); n > 0 {
		r.MemoryMaps = make([]MemoryMap, n)
		for i := range r.MemoryMaps {
			if d.err != nil {
				return
			}
			path := fmt.Sprintf("run.memoryMaps[%d]", i)
			rl, err := ml.At(i).Ranges()
			d.fail(path, err)
			if n := rl.Len(); n > 0 {
				rs := make([]MemoryRange, n)
				for j := range rs {
					c := rl.At(j)
					rp := fmt.Sprintf("%s.ranges[%d]", path, j)
					rs[j] = MemoryRange{Kind: d.text(rp+".kind", c.Kind), Address: c.Address(), Size: c.Size(), Name: d.text(rp+".name", c.Name)}
				}
				r.MemoryMaps[i].Ranges = rs
			}
		}
	}
	dl, err := cr.StepDetails()
	d.fail("run.stepDetails", err)
	if n := dl.Len(); n > 0 {
		r.StepDetails = make([]StepDetail, n)
		for i := range r.StepDetails {
			if d.err != nil {
				return
			}
			c := dl.At(i)
			path := fmt.Sprintf("run.stepDetails[%d]", i)
			r.StepDetails[i] = StepDetail{Kernel: d.text(path+".kernel", c.Kernel), Phase: c.Phase(),
				Operation: d.text(path+".operation", c.Operation), Value: d.text(path+".value", c.Value),
				Reason: d.text(path+".reason", c.Reason)}
		}
	}
}

func getGrid(c schema.PlanGrid) PlanGrid {
	return PlanGrid{Rows: c.Rows(), Cols: c.Cols(), Inner: c.Inner()}
}

func (d *decoder) symbols(path string, l schema.Symbol_List) []Symbol {
	if l.Len() == 0 {
		return nil
	}
	out := make([]Symbol, l.Len())
	for i := range out {
		cs := l.At(i)
		out[i] = Symbol{
			Name:    d.text(fmt.Sprintf("%s[%d].name", path, i), cs.Name),
			Address: cs.Address(),
			Size:    cs.Size(),
		}
	}
	return out
}

func (d *decoder) bindings(path string, get func() (schema.Binding_List, error)) []Binding {
	l, err := get()
	d.fail(path, err)
	if l.Len() == 0 || d.err != nil {
		return nil
	}
	out := make([]Binding, l.Len())
	for i := range out {
		if d.err != nil {
			return nil
		}
		cb := l.At(i)
		b := &out[i]
		bp := fmt.Sprintf("%s[%d]", path, i)
		b.Name = d.text(bp+".name", cb.Name)
		b.DType = DType(d.text(bp+".dtype", cb.Dtype))
		shape, err := cb.Shape()
		d.fail(bp+".shape", err)
		if n := shape.Len(); n > 0 {
			b.Shape = make([]uint32, n)
			for j := range b.Shape {
				b.Shape[j] = shape.At(j)
			}
		}
		ts, err := cb.TensorShape()
		d.fail(bp+".tensorShape", err)
		if n := ts.Len(); n > 0 {
			b.TensorShape = make([]uint32, n)
			for j := range b.TensorShape {
				b.TensorShape[j] = ts.At(j)
			}
		}
		ll, err := cb.Layout()
		d.fail(bp+".layout", err)
		if n := ll.Len(); n > 0 {
			b.Layout = make([]Block, n)
			for j := range b.Layout {
				c := ll.At(j)
				ord := c.Order()
				if ord > 255 {
					ord = 255 // unknown either way; Validate reports it
				}
				b.Layout[j] = Block{Offset: c.Offset(), RowLo: c.RowLo(), RowHi: c.RowHi(), ColLo: c.ColLo(), ColHi: c.ColHi(),
					RowEnd: c.RowEnd(), ColEnd: c.ColEnd(), Order: Order(ord)}
			}
		}
		sl, err := cb.Slices()
		d.fail(bp+".slices", err)
		if n := sl.Len(); n > 0 {
			b.Slices = make([]Slice, n)
			for j := range b.Slices {
				cs := sl.At(j)
				b.Slices[j] = Slice{Tile: cs.Tile(), Address: cs.Address(), Offset: cs.Offset(), Length: cs.Length()}
			}
		}
	}
	return out
}

func (d *decoder) host(ch schema.HostExchange, h *HostExchange) {
	if d.err != nil {
		return
	}
	h.CommandPage = ch.CommandPage()
	h.CommandOffset = ch.CommandOffset()
	h.SlotSize = ch.SlotSize()
	pl, err := ch.Pages()
	d.fail("host.pages", err)
	if n := pl.Len(); n > 0 {
		h.Pages = make([]HostPage, n)
		for i := range h.Pages {
			cp := pl.At(i)
			h.Pages[i] = HostPage{Index: cp.Index(), Size: cp.Size()}
		}
	}
	cl, err := ch.Calls()
	d.fail("host.calls", err)
	if cl.Len() == 0 {
		return
	}
	h.Calls = make([]HostCall, cl.Len())
	for i := range h.Calls {
		if d.err != nil {
			return
		}
		cc := cl.At(i)
		c := &h.Calls[i]
		path := fmt.Sprintf("host.calls[%d]", i)
		c.Name = d.text(path+".name", cc.Name)
		c.Command = cc.Command()
		phl, err := cc.Phases()
		d.fail(path+".phases", err)
		if phl.Len() == 0 {
			continue
		}
		c.Phases = make([]HostPhase, phl.Len())
		for j := range c.Phases {
			tl, err := phl.At(j).Transfers()
			d.fail(fmt.Sprintf("%s.phases[%d]", path, j), err)
			if tl.Len() == 0 {
				continue
			}
			trs := make([]HostTransfer, tl.Len())
			for k := range trs {
				ct := tl.At(k)
				kind := ct.Kind()
				if kind > 255 {
					kind = 255 // unknown either way; Validate reports it
				}
				trs[k] = HostTransfer{
					Kind:        BindingKind(kind),
					Binding:     ct.Binding(),
					Slice:       ct.Slice(),
					SliceOffset: ct.SliceOffset(),
					Length:      ct.Length(),
					Page:        ct.Page(),
					PageOffset:  ct.PageOffset(),
				}
			}
			c.Phases[j].Transfers = trs
		}
	}
}

func (d *decoder) profile(cp schema.Profile, pr *Profile) {
	if d.err != nil {
		return
	}
	sl, err := cp.Steps()
	d.fail("profile.steps", err)
	if n := sl.Len(); n > 0 {
		pr.Steps = make([]ProfileStep, n)
		for i := range pr.Steps {
			cs := sl.At(i)
			path := fmt.Sprintf("profile.steps[%d]", i)
			pr.Steps[i] = ProfileStep{
				Name: d.text(path+".name", cs.Name),
				Kind: d.text(path+".kind", cs.Kind),
			}
		}
	}
	tl, err := cp.Tiles()
	d.fail("profile.tiles", err)
	if tl.Len() == 0 {
		return
	}
	pr.Tiles = make([]TileProfile, tl.Len())
	for i := range pr.Tiles {
		ct := tl.At(i)
		t := &pr.Tiles[i]
		t.Tile = ct.Tile()
		ss, err := ct.Samples()
		d.fail(fmt.Sprintf("profile.tiles[%d]", i), err)
		if n := ss.Len(); n > 0 {
			t.Samples = make([]ProfileSample, n)
			for j := range t.Samples {
				cs := ss.At(j)
				t.Samples[j] = ProfileSample{Address: cs.Address(), Step: cs.Step(), Detail: cs.Detail()}
			}
		}
	}
}

// envelopeFormat is the package file's header (internal/envelope).
var envelopeFormat = &envelope.Format{Magic: Magic, Version: FormatVersion,
	ErrMagic: ErrMagic, ErrTruncated: ErrTruncated, ErrVersion: ErrVersion, ErrCorrupt: ErrCorrupt, ErrChecksum: ErrChecksum}
