package c600

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ipustack/ipustack/device"
)

// StartSession starts the host session: EXCHANGE_WINDOW_BASE = HEXOPT,
// GS1 = 1 and wait for GS2's mark 0; BUFFER_DETACH_ALL; every host page
// attached in the package's attach order (HEXOPT before each); then GS2 =
// 1 and wait for 0.
func (d *Device) StartSession(ctx context.Context) (device.Session, error) {
	if err := d.need("start session", device.StageLoaded); err != nil {
		return nil, err
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("c600 %s: host session: %w", d.node, fmt.Errorf(format, a...))
	}
	if err := d.c.WriteRegister(RegExchangeWindowBase, ExchangeWindowHEXOPT); err != nil {
		return nil, fail("%w", err)
	}
	if err := d.c.WriteRegister(RegHSPGS1, 1); err != nil {
		return nil, fail("writing HSP_GS1 = 1: %w", err)
	}
	if err := waitFor(d.c, "HSP_GS2 mark", RegHSPGS2, HSPMark, 0, handshakeTimeout); err != nil {
		return nil, fail("%w", err)
	}
	if err := d.c.Ioctl(IoctlBufferDetachAll, 0); err != nil {
		return nil, fail("BUFFER_DETACH_ALL: %w", err)
	}
	s := &session{d: d, pages: map[uint32][]byte{}}
	for _, pg := range d.plan.Pages {
		mem, err := d.c.HostMemory(int(pg.Size))
		if err != nil {
			s.release()
			return nil, fail("page %d: %w", pg.Index, err)
		}
		s.pages[pg.Index] = mem
		if err := d.attach(pg.Index, mem); err != nil {
			s.release()
			return nil, fail("page %d: %w", pg.Index, err)
		}
	}
	if err := d.handshake(RegHSPGS2, "HSP_GS2", 1); err != nil {
		s.release()
		return nil, fail("after attaching the pages: %w", err)
	}
	d.session, d.st = s, device.StageSession
	return s, ctx.Err()
}

// session is the host side of the package's calls over the attached pages.
type session struct {
	d      *Device
	pages  map[uint32][]byte
	closed bool
}

// Call runs call name: check the tensors, write the command word, then for
// the command handshake and each phase: stage the phase's inputs and
// poison its outputs (0xA5) in the pages, wait for GS2's mark 0, GS2 = 1,
// wait for 0, and collect the phase's outputs. A card does not report
// device cycles: CallStats.Cycles is 0 (the run's cycles come from the
// cycle samples), and the packet counts are those of the plan
// (ipuexe.PlannedCall.Traffic).
func (s *session) Call(ctx context.Context, name string, in, out map[string][]byte) (device.CallStats, error) {
	var st device.CallStats
	d := s.d
	if s.closed || d.st != device.StageSession {
		return st, fmt.Errorf("c600 %s: call on a closed session", d.node)
	}
	fail := func(err error) error { return fmt.Errorf("c600 %s: %w", d.node, err) }
	c, err := d.plan.Call(name)
	if err != nil {
		return st, fail(err)
	}
	if err := c.CheckCallTensors(in, out); err != nil {
		return st, fail(err)
	}
	start := time.Now()
	d.plan.WriteCommand(s.pages, c)
	n := len(c.Phases)
	for k := 0; k <= n; k++ {
		if err := ctx.Err(); err != nil {
			return st, fail(fmt.Errorf("call %q: %w", name, err))
		}
		if k < n {
			c.StagePhase(k, s.pages, in)
			c.PoisonOutputs(k, s.pages)
		}
		what := fmt.Sprintf("call %q handshake %d of %d", name, k+1, n+1)
		if err := waitFor(d.c, "HSP_GS2 mark", RegHSPGS2, HSPMark, 0, handshakeTimeout); err != nil {
			return st, fail(fmt.Errorf("%s: %w", what, err))
		}
		if err := d.handshake(RegHSPGS2, "HSP_GS2", 1); err != nil {
			return st, fail(fmt.Errorf("%s: %w", what, err))
		}
		if k < n {
			c.CollectPhase(k, s.pages, out)
		}
	}
	st.Phases, st.Handshakes = n, n+1
	st.PacketsIn, st.BytesIn, st.PacketsOut, st.BytesOut = c.Traffic(len(d.plan.Tiles))
	st.Wall = time.Since(start)
	return st, nil
}

// ProfileWords reads words of tile memory through the tile debug
// interface.
func (s *session) ProfileWords(tile int, addrs []uint32) ([]uint32, error) {
	if s.closed || s.d.st != device.StageSession {
		return nil, fmt.Errorf("c600 %s: profile read on a closed session", s.d.node)
	}
	w, err := s.d.ReadTileWords(tile, addrs)
	if err != nil {
		return nil, fmt.Errorf("c600 %s: %w", s.d.node, err)
	}
	return w, nil
}

func (s *session) StartupMark() int { return s.d.mark }

// release detaches every buffer and frees the pages.
func (s *session) release() error {
	err := s.d.c.Ioctl(IoctlBufferDetachAll, 0)
	for _, m := range s.pages {
		err = errors.Join(err, s.d.c.FreeHostMemory(m))
	}
	s.pages = nil
	return err
}

// Close detaches and frees the pages; the application stays loaded.
func (s *session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.release()
	if s.d.st == device.StageSession {
		s.d.st = device.StageLoaded
	}
	s.d.session = nil
	if err != nil {
		return fmt.Errorf("c600 %s: closing the host session: %w", s.d.node, err)
	}
	return nil
}
