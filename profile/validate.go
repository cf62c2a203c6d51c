package profile

import (
	"errors"
	"fmt"
	"github.com/ipustack/ipustack/internal/envelope"
	"strings"
)

// MaxTiles bounds the tiles of a profile (an IPU21 has 1472).
const MaxTiles = 1 << 16

// maxProblems is how many problems Validate lists before it stops.
const maxProblems = 20

// Validate checks every rule a profile must meet and returns an error
// wrapping ErrInvalid that lists the first problems found (each naming
// the tile, step, phase or segment), or nil.
func (p *Profile) Validate() error {
	v := validator{}
	v.check(p)
	if len(v.problems) == 0 {
		return nil
	}
	msg := strings.Join(v.problems, "; ")
	if v.more > 0 {
		msg += fmt.Sprintf("; and %d more", v.more)
	}
	return fmt.Errorf("%w: %s", ErrInvalid, msg)
}

type validator struct {
	problems []string
	more     int
}

func (v *validator) add(format string, args ...any) {
	if len(v.problems) >= maxProblems {
		v.more++
		return
	}
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

func (v *validator) check(p *Profile) {
	tiles := len(p.Steps)
	if tiles == 0 {
		v.add("no tiles")
	}
	if tiles > MaxTiles {
		v.add("%d tiles, at most %d", tiles, MaxTiles)
		return
	}
	if len(p.Memory) != tiles {
		v.add("memory maps for %d tiles, steps for %d", len(p.Memory), tiles)
	}
	phases := map[int]*Phase{}
	for i := range p.Phases {
		ph := &p.Phases[i]
		if ph.ID < 0 {
			v.add("phase %d: negative id", ph.ID)
		}
		if phases[ph.ID] != nil {
			v.add("phase %d: id used twice", ph.ID)
		}
		phases[ph.ID] = ph
		if ph.Horizon < ph.Bound {
			v.add("phase %d: horizon %d below its lower bound %d", ph.ID, ph.Horizon, ph.Bound)
		}
		if ph.Start > p.Cycles || p.Cycles-ph.Start < ph.Horizon {
			v.add("phase %d: [%d,+%d) ends after the profile's %d cycles", ph.ID, ph.Start, ph.Horizon, p.Cycles)
		}
		last := -1
		for _, w := range ph.Windows {
			if w.Tile < 0 || w.Tile >= tiles {
				v.add("phase %d: window of tile %d out of range [0,%d)", ph.ID, w.Tile, tiles)
				continue
			}
			if w.Tile <= last {
				v.add("phase %d: windows not in increasing tile order at tile %d", ph.ID, w.Tile)
			}
			last = w.Tile
			if w.SendStart > w.SendEnd || uint64(w.SendEnd) > ph.Horizon {
				v.add("phase %d tile %d: send window [%d,%d) not within [0,%d)", ph.ID, w.Tile, w.SendStart, w.SendEnd, ph.Horizon)
			}
			if w.RecvStart > w.RecvEnd || uint64(w.RecvEnd) > ph.Horizon {
				v.add("phase %d tile %d: receive window [%d,%d) not within [0,%d)", ph.ID, w.Tile, w.RecvStart, w.RecvEnd, ph.Horizon)
			}
		}
	}
	for t, ss := range p.Steps {
		var prev uint64
		for i, s := range ss {
			where := func() string { return fmt.Sprintf("tile %d step %d [%d,%d)", t, i, s.Start, s.End) }
			if s.Kind >= numKinds {
				v.add("%s: unknown kind %d", where(), s.Kind)
			}
			if s.End < s.Start {
				v.add("%s: ends before it starts", where())
			}
			if s.End > p.Cycles {
				v.add("%s: ends after the profile's %d cycles", where(), p.Cycles)
			}
			if i > 0 && s.Start < prev {
				v.add("%s: overlaps or precedes the previous step (ends at %d)", where(), prev)
			}
			prev = max(prev, s.End)
			switch {
			case s.Phase == NoPhase:
			case s.Phase < 0:
				v.add("%s: phase %d", where(), s.Phase)
			case phases[s.Phase] == nil:
				v.add("%s: unknown phase %d", where(), s.Phase)
			case s.Kind != Exchange:
				v.add("%s: a %v step names phase %d; only exchange steps belong to a phase", where(), s.Kind, s.Phase)
			}
		}
	}
	for t, segs := range p.Memory {
		var prev uint64
		for i, s := range segs {
			if s.Kind >= numSegmentKinds {
				v.add("tile %d segment %d at %#x: unknown kind %d", t, i, s.Address, s.Kind)
			}
			if i > 0 && uint64(s.Address) < prev {
				v.add("tile %d segment %d at %#x: overlaps the previous segment (ends at %#x)", t, i, s.Address, prev)
			}
			prev = uint64(s.Address) + uint64(s.Size)
		}
	}
	for _, f := range p.Plan.Finalists {
		if len(f.Grids) != len(p.Plan.Gemms) {
			v.add("plan finalist rank %d: %d grids for %d GEMMs", f.Rank, len(f.Grids), len(p.Plan.Gemms))
		}
	}
}

// Errors Read returns, for errors.Is. Every returned error also says what
// exactly was wrong.
var (
	ErrMagic     = errors.New("profile: not an ipustack profile")
	ErrVersion   = errors.New("profile: unsupported format version")
	ErrTruncated = errors.New("profile: truncated profile")
	ErrChecksum  = errors.New("profile: checksum mismatch")
	ErrCorrupt   = errors.New("profile: corrupt profile")
	ErrInvalid   = errors.New("profile: invalid profile")
)

// envelopeFormat is the profile file's header (internal/envelope).
var envelopeFormat = &envelope.Format{Magic: Magic, Version: FormatVersion,
	ErrMagic: ErrMagic, ErrTruncated: ErrTruncated, ErrVersion: ErrVersion, ErrCorrupt: ErrCorrupt, ErrChecksum: ErrChecksum}
