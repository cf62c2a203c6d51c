package profile

import (
	"fmt"
	"github.com/ipustack/ipustack/internal/envelope"
	"github.com/ipustack/ipustack/internal/safefile"
	"math"
	"os"

	"capnproto.org/go/capnp/v3"

	"github.com/ipustack/ipustack/profile/schema"
)

// File layout: a 56-byte header, then one unpacked Cap'n Proto message
// (stream framing included) whose root is schema.Profile.
//
//	offset size
//	0      8    Magic "IPUPROF\x00"
//	8      4    FormatVersion, little endian
//	12     4    reserved, 0
//	16     8    content length in bytes (everything after the header)
//	24     32   SHA-256 of the content
const (
	Magic         = "IPUPROF\x00"
	FormatVersion = 1
	HeaderSize    = envelope.HeaderSize
)

// Marshal encodes p as a profile file. The bytes depend only on p.
// Marshal does not validate; Read does.
func (p *Profile) Marshal() ([]byte, error) {
	msg, seg, err := capnp.NewMessage(capnp.SingleSegment(nil))
	if err != nil {
		return nil, fmt.Errorf("profile: marshal: %w", err)
	}
	if err := encode(seg, p); err != nil {
		return nil, fmt.Errorf("profile: marshal: %w", err)
	}
	m, err := msg.Marshal()
	if err != nil {
		return nil, fmt.Errorf("profile: marshal: %w", err)
	}
	return envelopeFormat.Seal(m), nil
}

// WriteFile marshals p into the file name.
func (p *Profile) WriteFile(name string) error {
	data, err := p.Marshal()
	if err != nil {
		return err
	}
	return safefile.WriteFile(name, data, 0o644)
}

// ReadFile reads and validates the profile file name.
func ReadFile(name string) (*Profile, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	p, err := Read(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// stringTable interns strings for the message: index 0 is "".
type stringTable struct {
	index map[string]uint32
	list  []string
}

func (st *stringTable) id(s string) uint32 {
	if i, ok := st.index[s]; ok {
		return i
	}
	i := uint32(len(st.list))
	st.index[s] = i
	st.list = append(st.list, s)
	return i
}

func encode(seg *capnp.Segment, p *Profile) error {
	if len(p.Steps) > math.MaxInt32 || len(p.Phases) > math.MaxInt32 {
		return fmt.Errorf("too many tiles or phases")
	}
	root, err := schema.NewRootProfile(seg)
	if err != nil {
		return err
	}
	root.SetFormatVersion(FormatVersion)
	if err := root.SetWorkload(p.Workload); err != nil {
		return err
	}
	if err := root.SetTarget(p.Target); err != nil {
		return err
	}
	root.SetClockHz(p.ClockHz)
	root.SetCycles(p.Cycles)
	root.SetSamples(p.Samples)
	root.SetSynthetic(p.Synthetic)

	st := &stringTable{index: map[string]uint32{"": 0}, list: []string{""}}
	tl, err := root.NewTiles(int32(len(p.Steps)))
	if err != nil {
		return err
	}
	for t, steps := range p.Steps {
		ct := tl.At(t)
		sl, err := ct.NewSteps(int32(len(steps)))
		if err != nil {
			return err
		}
		for i, s := range steps {
			cs := sl.At(i)
			cs.SetStart(s.Start)
			cs.SetEnd(s.End)
			cs.SetKind(schema.Kind(s.Kind))
			cs.SetPhase(int32(max(min(s.Phase, math.MaxInt32), math.MinInt32)))
			cs.SetKernel(st.id(s.Kernel))
			cs.SetOperation(st.id(s.Operation))
			cs.SetValue(st.id(s.Provenance.Value))
			cs.SetReason(st.id(s.Provenance.Reason))
		}
		var mem []Segment
		if t < len(p.Memory) {
			mem = p.Memory[t]
		}
		ml, err := ct.NewMemory(int32(len(mem)))
		if err != nil {
			return err
		}
		for i, s := range mem {
			cm := ml.At(i)
			cm.SetKind(schema.SegmentKind(s.Kind))
			cm.SetAddress(s.Address)
			cm.SetSize(s.Size)
			cm.SetName(st.id(s.Name))
		}
	}

	pl, err := root.NewPhases(int32(len(p.Phases)))
	if err != nil {
		return err
	}
	for i, ph := range p.Phases {
		cp := pl.At(i)
		cp.SetId(uint32(ph.ID))
		if err := cp.SetName(ph.Name); err != nil {
			return err
		}
		cp.SetStart(ph.Start)
		cp.SetHorizon(ph.Horizon)
		cp.SetBound(ph.Bound)
		if err := cp.SetSchedule(ph.Schedule); err != nil {
			return err
		}
		wl, err := cp.NewWindows(int32(len(ph.Windows)))
		if err != nil {
			return err
		}
		for j, w := range ph.Windows {
			cw := wl.At(j)
			cw.SetTile(uint32(w.Tile))
			cw.SetSendStart(w.SendStart)
			cw.SetSendEnd(w.SendEnd)
			cw.SetRecvStart(w.RecvStart)
			cw.SetRecvEnd(w.RecvEnd)
			cw.SetSendBytes(w.SendBytes)
			cw.SetRecvBytes(w.RecvBytes)
		}
	}

	cpl, err := root.NewPlan()
	if err != nil {
		return err
	}
	cpl.SetPredictedCycles(p.Plan.PredictedCycles)
	gl, err := cpl.NewGemms(int32(len(p.Plan.Gemms)))
	if err != nil {
		return err
	}
	for i, g := range p.Plan.Gemms {
		cg := gl.At(i)
		if err := cg.SetName(g.Name); err != nil {
			return err
		}
		cg.SetM(uint32(g.M))
		cg.SetK(uint32(g.K))
		cg.SetN(uint32(g.N))
		grid, err := cg.NewGrid()
		if err != nil {
			return err
		}
		setGrid(grid, g.Grid)
		cg.SetTiles(uint32(g.Tiles))
		if err := cg.SetKernel(g.Kernel); err != nil {
			return err
		}
	}
	fl, err := cpl.NewFinalists(int32(len(p.Plan.Finalists)))
	if err != nil {
		return err
	}
	for i, f := range p.Plan.Finalists {
		cf := fl.At(i)
		cf.SetRank(uint32(f.Rank))
		cf.SetMidCycles(f.MidCycles)
		cf.SetLowCycles(f.LowCycles)
		cf.SetChosen(f.Chosen)
		grl, err := cf.NewGrids(int32(len(f.Grids)))
		if err != nil {
			return err
		}
		for j, g := range f.Grids {
			setGrid(grl.At(j), g)
		}
	}

	sl, err := root.NewStrings(int32(len(st.list)))
	if err != nil {
		return err
	}
	for i, s := range st.list {
		if err := sl.Set(i, s); err != nil {
			return err
		}
	}
	return nil
}

func setGrid(c schema.Grid, g Grid) {
	c.SetRows(uint32(g.Rows))
	c.SetCols(uint32(g.Cols))
	c.SetInner(uint32(g.Inner))
}

// Read checks a profile file's header and checksum, decodes it and
// validates it. Any error wraps one of the Err values.
func Read(data []byte) (*Profile, error) {
	p, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Decode checks the header and checksum and decodes the profile without
// validating it.
func Decode(data []byte) (*Profile, error) {
	content, err := envelopeFormat.Open(data)
	if err != nil {
		return nil, err
	}
	p, err := decode(content)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return p, nil
}

// decoder keeps the first error, with the path of the field it came from.
type decoder struct {
	err     error
	strings []string
}

func (d *decoder) fail(path string, err error) {
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("%s: %w", path, err)
	}
}

func (d *decoder) str(path string, i uint32) string {
	if uint64(i) >= uint64(len(d.strings)) {
		d.fail(path, fmt.Errorf("string %d of %d", i, len(d.strings)))
		return ""
	}
	return d.strings[i]
}

func (d *decoder) text(path string, get func() (string, error)) string {
	s, err := get()
	d.fail(path, err)
	return s
}

func decode(content []byte) (*Profile, error) {
	msg, err := capnp.Unmarshal(content)
	if err != nil {
		return nil, err
	}
	if s, err := msg.TotalSize(); err != nil {
		return nil, err
	} else if s != uint64(len(content)) {
		return nil, fmt.Errorf("stream framing covers %d bytes, content is %d", s, len(content))
	}
	// Every object is read once; twice the size bounds a message whose
	// pointers make the reader visit the same bytes over and over.
	msg.ResetReadLimit(2*uint64(len(content)) + 1<<20)
	root, err := schema.ReadRootProfile(msg)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	if v := root.FormatVersion(); v != FormatVersion {
		return nil, fmt.Errorf("formatVersion %d disagrees with the header's %d", v, FormatVersion)
	}
	d := &decoder{}
	p := &Profile{
		Workload:  d.text("workload", root.Workload),
		Target:    d.text("target", root.Target),
		ClockHz:   root.ClockHz(),
		Cycles:    root.Cycles(),
		Samples:   root.Samples(),
		Synthetic: root.Synthetic(),
	}
	sl, err := root.Strings()
	d.fail("strings", err)
	d.strings = make([]string, sl.Len())
	for i := range d.strings {
		s, err := sl.At(i)
		d.fail(fmt.Sprintf("strings[%d]", i), err)
		d.strings[i] = s
	}
	if len(d.strings) == 0 {
		d.strings = []string{""}
	}

	tl, err := root.Tiles()
	d.fail("tiles", err)
	if tl.Len() > MaxTiles {
		return nil, fmt.Errorf("tiles: %d, at most %d", tl.Len(), MaxTiles)
	}
	p.Steps = make([][]Step, tl.Len())
	p.Memory = make([][]Segment, tl.Len())
	for t := range p.Steps {
		if d.err != nil {
			return nil, d.err
		}
		ct := tl.At(t)
		path := fmt.Sprintf("tiles[%d]", t)
		ss, err := ct.Steps()
		d.fail(path+".steps", err)
		if n := ss.Len(); n > 0 {
			p.Steps[t] = make([]Step, n)
		}
		for i := range p.Steps[t] {
			cs := ss.At(i)
			sp := fmt.Sprintf("%s.steps[%d]", path, i)
			p.Steps[t][i] = Step{
				Start:     cs.Start(),
				End:       cs.End(),
				Kind:      Kind(min(uint16(cs.Kind()), 255)),
				Phase:     int(cs.Phase()),
				Kernel:    d.str(sp+".kernel", cs.Kernel()),
				Operation: d.str(sp+".operation", cs.Operation()),
				Provenance: Provenance{
					Value:  d.str(sp+".value", cs.Value()),
					Reason: d.str(sp+".reason", cs.Reason()),
				},
			}
		}
		ms, err := ct.Memory()
		d.fail(path+".memory", err)
		if n := ms.Len(); n > 0 {
			p.Memory[t] = make([]Segment, n)
		}
		for i := range p.Memory[t] {
			cm := ms.At(i)
			p.Memory[t][i] = Segment{
				Kind:    SegmentKind(min(uint16(cm.Kind()), 255)),
				Address: cm.Address(),
				Size:    cm.Size(),
				Name:    d.str(fmt.Sprintf("%s.memory[%d].name", path, i), cm.Name()),
			}
		}
	}

	pl, err := root.Phases()
	d.fail("phases", err)
	if n := pl.Len(); n > 0 {
		p.Phases = make([]Phase, n)
	}
	for i := range p.Phases {
		if d.err != nil {
			return nil, d.err
		}
		cp := pl.At(i)
		path := fmt.Sprintf("phases[%d]", i)
		ph := &p.Phases[i]
		ph.ID = int(cp.Id())
		ph.Name = d.text(path+".name", cp.Name)
		ph.Start = cp.Start()
		ph.Horizon = cp.Horizon()
		ph.Bound = cp.Bound()
		ph.Schedule = d.text(path+".schedule", cp.Schedule)
		wl, err := cp.Windows()
		d.fail(path+".windows", err)
		if n := wl.Len(); n > 0 {
			ph.Windows = make([]Window, n)
		}
		for j := range ph.Windows {
			cw := wl.At(j)
			ph.Windows[j] = Window{
				Tile:      int(cw.Tile()),
				SendStart: cw.SendStart(), SendEnd: cw.SendEnd(),
				RecvStart: cw.RecvStart(), RecvEnd: cw.RecvEnd(),
				SendBytes: cw.SendBytes(), RecvBytes: cw.RecvBytes(),
			}
		}
	}

	cpl, err := root.Plan()
	d.fail("plan", err)
	p.Plan.PredictedCycles = cpl.PredictedCycles()
	gl, err := cpl.Gemms()
	d.fail("plan.gemms", err)
	for i := 0; i < gl.Len() && d.err == nil; i++ {
		cg := gl.At(i)
		grid, err := cg.Grid()
		d.fail(fmt.Sprintf("plan.gemms[%d].grid", i), err)
		p.Plan.Gemms = append(p.Plan.Gemms, Gemm{
			Name:   d.text(fmt.Sprintf("plan.gemms[%d].name", i), cg.Name),
			M:      int(cg.M()),
			K:      int(cg.K()),
			N:      int(cg.N()),
			Grid:   getGrid(grid),
			Tiles:  int(cg.Tiles()),
			Kernel: d.text(fmt.Sprintf("plan.gemms[%d].kernel", i), cg.Kernel),
		})
	}
	fl, err := cpl.Finalists()
	d.fail("plan.finalists", err)
	for i := 0; i < fl.Len() && d.err == nil; i++ {
		cf := fl.At(i)
		f := Finalist{
			Rank:      int(cf.Rank()),
			MidCycles: cf.MidCycles(),
			LowCycles: cf.LowCycles(),
			Chosen:    cf.Chosen(),
		}
		grl, err := cf.Grids()
		d.fail(fmt.Sprintf("plan.finalists[%d].grids", i), err)
		for j := 0; j < grl.Len(); j++ {
			f.Grids = append(f.Grids, getGrid(grl.At(j)))
		}
		p.Plan.Finalists = append(p.Plan.Finalists, f)
	}
	if d.err != nil {
		return nil, d.err
	}
	return p, nil
}

func getGrid(c schema.Grid) Grid {
	return Grid{Rows: int(c.Rows()), Cols: int(c.Cols()), Inner: int(c.Inner())}
}
