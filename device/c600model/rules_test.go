package c600model_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device/c600"
	"github.com/ipustack/ipustack/device/c600model"
	"github.com/ipustack/ipustack/device/config"
	"github.com/ipustack/ipustack/internal/diag"
	"github.com/ipustack/ipustack/runtime"
)

// tamper is the model behind a card that breaks one step of what the
// driver does: the driver runs unchanged and the model must refuse.
type tamper struct {
	*c600model.Card
	// write may change or drop (ok false) a register write; n counts the
	// writes to each offset so far.
	write func(n map[uint32]int, off, v uint32) (uint32, bool)
	// ioctl may drop a request.
	ioctl func(req uint32) bool
	// attach may change a buffer attach.
	attach func(index uint32, mem []byte) (uint32, []byte)
	// batch may edit the transport buffer before a GS1 handshake.
	batch     func(buf []byte)
	n         map[uint32]int
	transport []byte
}

func (t *tamper) WriteRegister(off, v uint32) error {
	t.n[off]++
	if off == c600.RegHSPGS1 && v == 1 && t.batch != nil && t.transport != nil {
		t.batch(t.transport)
	}
	if t.write != nil {
		var ok bool
		if v, ok = t.write(t.n, off, v); !ok {
			return nil
		}
	}
	return t.Card.WriteRegister(off, v)
}

func (t *tamper) Ioctl(req uint32, arg uint64) error {
	if t.ioctl != nil && !t.ioctl(req) {
		return nil
	}
	return t.Card.Ioctl(req, arg)
}

func (t *tamper) AttachBuffer(index uint32, mem []byte) error {
	if index == 0 && len(mem) == c600.TransportBytes {
		t.transport = mem
	}
	if t.attach != nil {
		index, mem = t.attach(index, mem)
	}
	return t.Card.AttachBuffer(index, mem)
}

// drive runs d's package through the driver over card: the runtime's
// steps, the cycle samples of tile 0 included. extra config writes are
// appended to the replayed configuration.
func drive(t *testing.T, d *diag.Diagnostic, card c600.Card, model *c600model.Card, extra ...config.Write) error {
	t.Helper()
	ctx := context.Background()
	dev := c600.New("tampered", c600.Options{BootloaderELF: c600model.StandInBootloader()}, func(string) (c600.Card, error) { return card, nil })
	defer dev.Close()
	writes, err := runtime.DefaultConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Open(ctx); err != nil {
		return err
	}
	if err := dev.Initialize(ctx); err != nil {
		return err
	}
	if err := dev.ReplayConfig(ctx, append(writes, extra...)); err != nil {
		return err
	}
	model.SetPackage(d.Package)
	if err := dev.Load(ctx, d.Package, nil); err != nil {
		return err
	}
	s, err := dev.StartSession(ctx)
	if err != nil {
		return err
	}
	if _, err := s.Call(ctx, "initialize", d.Weights, nil); err != nil {
		return err
	}
	out := map[string][]byte{}
	if _, err := s.Call(ctx, "run", d.Inputs, out); err != nil {
		return err
	}
	if diffs, err := d.Check(out["results"]); err != nil || len(diffs) > 0 {
		t.Fatalf("results: %v %s", err, diag.Report(diffs, 5))
	}
	if _, err := s.ProfileWords(0, []uint32{0x58004, 0x58008}); err != nil {
		return err
	}
	return s.Close()
}

func TestRulesThroughTheDriver(t *testing.T) {
	d, err := diag.Build(130)
	if err != nil {
		t.Fatal(err)
	}
	// Untampered, the protocol runs to the end.
	m := c600model.NewCard(c600model.Options{})
	if err := drive(t, d, &tamper{Card: m, n: map[uint32]int{}}, m); err != nil {
		t.Fatalf("untampered: %v", err)
	}
	drop := func(off uint32, nth int) func(map[uint32]int, uint32, uint32) (uint32, bool) {
		return func(n map[uint32]int, o, v uint32) (uint32, bool) { return v, o != off || n[o] != nth }
	}
	for _, c := range []struct {
		name   string
		rule   string
		want   string
		extra  []config.Write
		tamper tamper
	}{
		{name: "write outside the window", rule: c600model.RuleWindow, want: "write of 0x1 at offset 0x80000",
			extra: []config.Write{{Offset: c600.WindowSize, Value: 1}}},
		{name: "no USER_ATTACH", rule: c600model.RuleIoctl, want: "ioctl 0xc008ed0e before USER_ATTACH",
			tamper: tamper{ioctl: func(req uint32) bool { return req != c600.IoctlUserAttach }}},
		{name: "a bootloader word lost", rule: c600model.RuleBootloader, want: "1 KiB, 255 words were streamed",
			tamper: tamper{write: drop(c600.RegAutoldData, 7)}},
		{name: "attach without HEXOPT", rule: c600model.RuleHEXOPT, want: "BUFFER_ATTACH 0 without EXCHANGE_WINDOW_BASE = HEXOPT",
			tamper: tamper{write: drop(c600.RegExchangeWindowBase, 1)}},
		{name: "short transport buffer", rule: c600model.RuleTransport, want: "BUFFER_ATTACH 0 of 0x2841000 bytes",
			tamper: tamper{attach: func(i uint32, mem []byte) (uint32, []byte) {
				if i == 0 && len(mem) == c600.TransportBytes {
					return i, mem[:len(mem)-4096]
				}
				return i, mem
			}}},
		{name: "XB 0 left parked", rule: c600model.RuleXB, want: "batch 0 with XB 0 (0x5404) at 0x7fffffa, want 0x2",
			tamper: tamper{write: func(n map[uint32]int, o, v uint32) (uint32, bool) {
				return v, o != c600.XBAddress(0) || v != c600.XBControl(0)
			}}},
		{name: "bad frame header", rule: c600model.RuleFrame, want: "batch 0 slot 0 frame 0: header index 5",
			tamper: tamper{batch: func(buf []byte) { buf[c600.DescriptorBytes] = 5 }}},
		{name: "bad frame trailer", rule: c600model.RuleFrame, want: "batch 0 slot 0 frame 0: trailer",
			tamper: tamper{batch: func(buf []byte) { buf[c600.DescriptorBytes+c600.FrameBytes-1] = 0 }}},
		{name: "a load over 643 frames", rule: c600model.RuleFrames, want: "batch 0 slot 1: 644 frames, the bootloader accepts at most 643",
			tamper: tamper{batch: func(buf []byte) {
				if buf[0] != 0xFF {
					buf[12] = 644 & 0xFF
					buf[13] = 644 >> 8
				}
			}}},
		{name: "a batch without its GS1 handshake", rule: c600model.RuleHandshake, want: "final mark 3, but 2 batches were handed over",
			tamper: tamper{write: drop(c600.RegHSPGS1, 4)}}, // writes 1-2: replay's clears; 3, 4, 5: batches
		{name: "pages attached out of order", rule: c600model.RuleAttach, want: "attach 0 is page 1 (4096 bytes); the package's attach order wants page 0 (4096 bytes) next",
			tamper: tamper{attach: func(i uint32, mem []byte) (uint32, []byte) {
				if i == 0 && len(mem) == 4096 {
					return 1, mem
				}
				return i, mem
			}}},
		{name: "a call without its last GS2 handshake", rule: c600model.RuleCommand, want: "a GS2 handshake is missing",
			// write 1: replay's clear; 2: the session start; 3-4: the
			// command handshake and phase 0 of "initialize" (1 phase).
			tamper: tamper{write: drop(c600.RegHSPGS2, 4)}},
		{name: "debug instruction into a running context", rule: c600model.RuleTDI, want: "tile 0: instruction 0x43008070 into context 1, which is running",
			tamper: tamper{write: func(n map[uint32]int, o, v uint32) (uint32, bool) {
				if o == c600.TDIAddress(0, c600.TDIOwner) {
					v = 1
				}
				return v, true
			}}},
		// Not a rule of the model but the driver's own timeout: a context
		// that does not stop is named with the register, the value
		// expected and the value read.
		{name: "a context that does not stop", want: "tile 0 TDI context status (context 0 stopped) (0x30000): waited 2s for 0x2 under mask 0x2, read 0x1555",
			tamper: tamper{write: func(n map[uint32]int, o, v uint32) (uint32, bool) {
				return v, o != c600.TDIAddress(0, c600.TDIRunBreak) || v&1 == 0
			}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := c600model.NewCard(c600model.Options{})
			tc := c.tamper
			tc.Card, tc.n = m, map[uint32]int{}
			err := drive(t, d, &tc, m, c.extra...)
			t.Log(err)
			var re *c600model.RuleError
			if c.rule == "" {
				re = &c600model.RuleError{}
			}
			if err == nil || (c.rule != "" && (!errors.As(err, &re) || re.Rule != c.rule)) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v\nwant rule %q with %q", err, c.rule, c.want)
			}
		})
	}
}
