package c600model

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/ipustack/ipustack/device/c600"
	"github.com/ipustack/ipustack/device/emu"
	"github.com/ipustack/ipustack/ipuexe"
)

// Rules the model enforces; a RuleError names one.
const (
	RuleWindow     = "every access is a 4-aligned 32-bit access inside the configuration window"
	RuleIoctl      = "ioctls follow USER_ATTACH and are the card's requests"
	RuleBootloader = "the bootloader goes through the autoloader (its words, then DATA_PRESENT|GO with its KiB and load pointer, then GO to every tile)"
	RuleHEXOPT     = "EXCHANGE_WINDOW_BASE is written HEXOPT before every buffer attach"
	RuleTransport  = "the transport buffer is buffer 0, 0x2842000 bytes"
	RuleXB         = "tiles load with the exchange buffers set up (XB 0-7 request id 0, CCSR no-snoop and ECRC clear) and the session starts with them restored"
	RuleFrame      = "a frame header is {index, physical tile, 0x08000000 on the last frame only, 0}, its trailer 16 bytes of 0xFF"
	RuleFrames     = "a tile image takes at most 643 frames"
	RuleHandshake  = "GS1 hands over each batch, then the execute sentinel, then the final mark (the number of batches); GS2 starts the session and runs each call handshake"
	RuleAttach     = "the session attaches every host page, after BUFFER_DETACH_ALL, in the package's attach order and at its size"
	RuleCommand    = "a call's command word names a call and stays until the call's last handshake"
	RuleTDI        = "tile debug instructions run in a stopped context, on a loaded tile, and are the driver's words"
)

// RuleError is the model's refusal: the rule and what broke it.
type RuleError struct {
	Rule   string
	Detail string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("c600 model refused: %s (rule: %s)", e.Detail, e.Rule)
}

func refuse(rule, format string, a ...any) error {
	return &RuleError{Rule: rule, Detail: fmt.Sprintf(format, a...)}
}

// phase is where the card is in the protocol.
type phase uint8

const (
	phLoading      phase = iota // batches until the execute sentinel
	phExecuted                  // tiles started; the final mark is next
	phLoaded                    // at the initial synchronization
	phSessionStart              // GS1 = 1 seen: pages are attached next
	phSession                   // GS2 runs calls
)

// Options tune the model's chip.
type Options struct {
	// MaxCallCycles bounds a wait for the tiles (emu.HostLink.MaxCycles).
	MaxCallCycles uint64
	// Conservative runs the chip with emu.ConservativeAssumptions.
	Conservative bool
	// Bootloader is a bootloader ELF for the driver to check and send
	// ("" means StandInBootloader); the model never runs it.
	Bootloader string
}

// Card is the modelled C600. It implements c600.Card.
type Card struct {
	opts     Options
	pkg      *ipuexe.Package
	attached bool // USER_ATTACH seen
	closed   bool
	regs     map[uint32]uint32

	// autoloader
	autoData  []uint32
	bootImage []byte // the bootloader as streamed (step 1)
	bootTiles int    // tiles it was installed on (step 2)

	// buffers
	buffers  map[uint32][]byte
	hexopt   bool // HEXOPT written since the last attach
	detached bool // BUFFER_DETACH_ALL seen in this session start
	pages    []uint32

	// loader
	ph      phase
	batches int
	images  map[int][]byte
	ccsrXB  uint32 // CCSR before the load's exchange-buffer setup
	xbSetup bool

	// chip
	chip    *emu.Chip
	link    *emu.HostLink
	hs      *emu.HostSession
	callCmd uint32

	tdi map[int]*tdiState
}

// NewCard makes a card in its power-on state.
func NewCard(opts Options) *Card {
	c := &Card{opts: opts}
	c.reset()
	return c
}

func (c *Card) reset() {
	c.regs = map[uint32]uint32{}
	c.autoData, c.bootImage, c.bootTiles = nil, nil, 0
	c.buffers, c.pages, c.hexopt, c.detached = map[uint32][]byte{}, nil, false, false
	c.ph, c.batches, c.images, c.xbSetup = phLoading, 0, map[int][]byte{}, false
	c.chip, c.link, c.hs = nil, nil, nil
	c.tdi = map[int]*tdiState{}
}

// SetPackage gives the model the package about to be loaded: its host
// plan stands in for the tiles' own host-exchange code, which the
// emulator's host link performs rather than executes (docs/c600.md,
// assumption "host plan").
func (c *Card) SetPackage(pkg *ipuexe.Package) { c.pkg = pkg }

// Chip is the emulated chip (nil before the execute sentinel).
func (c *Card) Chip() *emu.Chip { return c.chip }

func (c *Card) check(off uint32, what string) error {
	if c.closed {
		return errors.New("c600 model: the card is closed")
	}
	if off%4 != 0 || uint64(off)+4 > c600.WindowSize {
		return refuse(RuleWindow, "%s at offset %#x: want a 4-aligned offset below %#x", what, off, c600.WindowSize)
	}
	return nil
}

// ReadRegister reads a register.
func (c *Card) ReadRegister(off uint32) (uint32, error) {
	if err := c.check(off, "read"); err != nil {
		return 0, err
	}
	if t, reg, ok := tdiReg(off); ok {
		return c.tdiRead(t, reg), nil
	}
	return c.regs[off], nil
}

// WriteRegister writes a register; the modelled ones act.
func (c *Card) WriteRegister(off, v uint32) error {
	if err := c.check(off, fmt.Sprintf("write of %#x", v)); err != nil {
		return err
	}
	if t, reg, ok := tdiReg(off); ok {
		return c.tdiWrite(t, reg, v)
	}
	switch off {
	case c600.RegAutoldData:
		c.autoData = append(c.autoData, v)
		return nil
	case c600.RegAutoldCSR:
		return c.autoloader(v)
	case c600.RegExchangeWindowBase:
		c.regs[off] = v
		c.hexopt = v&c600.ExchangeWindowHEXOPT != 0
		return nil
	case c600.RegHSPGS1:
		return c.gs1(v)
	case c600.RegHSPGS2:
		return c.gs2(v)
	}
	if off == c600.RegCCSR && c.ph == phLoading && c.bootTiles > 0 && !c.xbSetup {
		// The load's exchange-buffer setup: CCSR's value before it is
		// the one the session must start with.
		c.xbSetup, c.ccsrXB = true, c.regs[c600.RegCCSR]
	}
	c.regs[off] = v
	return nil
}

// autoloader models AUTOLD_CSR: CSR = 0 starts a stream of DATA words;
// DATA_PRESENT|GO|pointer writes them (TARGET names zone 32 and the KiB);
// GO|pointer with the tile count copies them to tiles 0..count-1. GO reads
// back clear: the model completes at once.
func (c *Card) autoloader(v uint32) error {
	c.regs[c600.RegAutoldCSR] = v &^ c600.AutoldGo
	if v&c600.AutoldGo == 0 {
		if v == 0 {
			c.autoData = nil
		}
		return nil
	}
	target := c.regs[c600.RegAutoldTarget]
	ptr := v & c600.AutoldPointerMask
	if v&c600.AutoldDataPresent != 0 {
		kib := int(target >> c600.AutoldKiBShift & 0x3FF)
		n := len(c.autoData)
		switch {
		case target&^(0x3FF<<c600.AutoldKiBShift) != c600.AutoldZone:
			return refuse(RuleBootloader, "AUTOLD_TARGET %#x: want zone 32 and the KiB only", target)
		case kib == 0 || kib*1024 > c600.BootloaderMax || n != kib*256:
			return refuse(RuleBootloader, "AUTOLD_TARGET names %d KiB, %d words were streamed into AUTOLD_DATA", kib, n)
		case n == 0 || ptr != uint32(n-1)&c600.AutoldPointerMask:
			return refuse(RuleBootloader, "load pointer %d, want the last word's index mod 64 (%d)", ptr, uint32(max(n, 1)-1)&c600.AutoldPointerMask)
		}
		c.bootImage = make([]byte, 4*n)
		for i, w := range c.autoData {
			binary.LittleEndian.PutUint32(c.bootImage[4*i:], w)
		}
		return nil
	}
	if c.bootImage == nil {
		return refuse(RuleBootloader, "AUTOLD_CSR GO to the tiles before the bootloader's words were written (DATA_PRESENT)")
	}
	kib := uint32(len(c.bootImage) / 1024)
	if want := c600.AutoldZone | 624<<c600.AutoldKiBShift | kib; target != want {
		return refuse(RuleBootloader, "AUTOLD_TARGET %#x for the tile copy, want %#x", target, want)
	}
	c.bootTiles = int(v>>c600.AutoldTileShift&0x7FF) + 1
	return nil
}

// Ioctl answers the scalar requests.
func (c *Card) Ioctl(req uint32, arg uint64) error {
	if c.closed {
		return errors.New("c600 model: the card is closed")
	}
	if req == c600.IoctlUserAttach {
		c.attached = true
		return nil
	}
	if !c.attached {
		return refuse(RuleIoctl, "ioctl %#x before USER_ATTACH", req)
	}
	switch req {
	case c600.IoctlSetIPUID, c600.IoctlStopMonitoring, c600.IoctlStartMonitoring, c600.IoctlAccumulateErrors:
	case c600.IoctlResetDevice:
		c.reset()
	case c600.IoctlBufferDetach:
		delete(c.buffers, uint32(arg))
	case c600.IoctlBufferDetachAll:
		clear(c.buffers)
		c.pages = nil
		switch c.ph {
		case phSessionStart:
			c.detached = true
		case phSession:
			// The session ends with its pages; the tiles keep waiting at
			// their host sync for the next session.
			c.ph, c.hs = phLoaded, nil
		}
	default:
		return refuse(RuleIoctl, "ioctl %#x is not a request the card answers", req)
	}
	return nil
}

// Mailbox answers the reset request with its own high 16 bits.
func (c *Card) Mailbox(req [5]uint32) ([5]uint32, error) {
	if !c.attached {
		return [5]uint32{}, refuse(RuleIoctl, "MAILBOX_WRITE_READ before USER_ATTACH")
	}
	if req[0] != c600.MailboxReset {
		return [5]uint32{}, refuse(RuleIoctl, "mailbox request %#08x: the model answers the reset request %#08x only", req[0], c600.MailboxReset)
	}
	return [5]uint32{req[0] &^ 0xFFFF}, nil
}

// SetSecondaryID accepts id 0.
func (c *Card) SetSecondaryID(id uint32) error {
	if !c.attached {
		return refuse(RuleIoctl, "SET_SECONDARY_IPU_ID before USER_ATTACH")
	}
	return nil
}

// HostMemory is ordinary memory: the model reads attached buffers
// directly.
func (c *Card) HostMemory(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("c600 model: host memory of %d bytes", size)
	}
	return make([]byte, size), nil
}

// FreeHostMemory does nothing.
func (c *Card) FreeHostMemory([]byte) error { return nil }

// AttachBuffer attaches mem as buffer index.
func (c *Card) AttachBuffer(index uint32, mem []byte) error {
	if !c.attached {
		return refuse(RuleIoctl, "BUFFER_ATTACH before USER_ATTACH")
	}
	if !c.hexopt {
		return refuse(RuleHEXOPT, "BUFFER_ATTACH %d without EXCHANGE_WINDOW_BASE = HEXOPT since the last attach", index)
	}
	c.hexopt = false
	switch c.ph {
	case phLoading:
		if index != 0 || len(mem) != c600.TransportBytes {
			return refuse(RuleTransport, "BUFFER_ATTACH %d of %#x bytes while loading", index, len(mem))
		}
	case phSessionStart:
		if !c.detached {
			return refuse(RuleAttach, "page %d attached before BUFFER_DETACH_ALL", index)
		}
		plan := c.pkg.Host.Pages
		k := len(c.pages)
		if k >= len(plan) {
			return refuse(RuleAttach, "page %d attached after the package's %d pages", index, len(plan))
		}
		if want := plan[k]; index != want.Index || uint64(len(mem)) != uint64(want.Size) {
			return refuse(RuleAttach, "attach %d is page %d (%d bytes); the package's attach order wants page %d (%d bytes) next",
				k, index, len(mem), want.Index, want.Size)
		}
		c.pages = append(c.pages, index)
	default:
		return refuse(RuleAttach, "BUFFER_ATTACH %d outside loading and the session start", index)
	}
	c.buffers[index] = mem
	return nil
}

// Close closes the card.
func (c *Card) Close() error {
	c.closed = true
	return nil
}

// gs1 models HSP_GS1: the loader's handshakes and the session start. A
// handshake completes before the write returns (the mark reads 0); a
// refused one leaves the mark set.
func (c *Card) gs1(v uint32) error {
	mark := v & c600.HSPMark
	c.regs[c600.RegHSPGS1] = v
	if mark == 0 {
		return nil
	}
	var err error
	switch c.ph {
	case phLoading:
		if mark != 1 {
			return refuse(RuleHandshake, "HSP_GS1 = %d while loading: a batch and the execute sentinel are GS1 = 1", mark)
		}
		if c.sentinel() {
			err = c.execute()
		} else {
			err = c.batch()
		}
	case phExecuted:
		err = c.finalMark(int(mark))
	case phLoaded:
		if mark != 1 {
			return refuse(RuleHandshake, "HSP_GS1 = %d after loading: the session starts with GS1 = 1", mark)
		}
		err = c.sessionStart()
	default:
		return refuse(RuleHandshake, "HSP_GS1 = %d during the host session", mark)
	}
	if err != nil {
		return err
	}
	c.regs[c600.RegHSPGS1] = v &^ c600.HSPMark
	return nil
}

// gs2 models HSP_GS2: the end of the session start, then one host-link
// handshake per write of 1.
func (c *Card) gs2(v uint32) error {
	mark := v & c600.HSPMark
	c.regs[c600.RegHSPGS2] = v
	if mark == 0 {
		return nil
	}
	var err error
	switch {
	case mark != 1:
		return refuse(RuleHandshake, "HSP_GS2 = %d: the host acknowledges with 1", mark)
	case c.ph == phSessionStart:
		err = c.sessionAttached()
	case c.ph == phSession:
		err = c.callHandshake()
	default:
		return refuse(RuleHandshake, "HSP_GS2 = 1 before the host session started (GS1 = 1 after the final mark)")
	}
	if err != nil {
		return err
	}
	c.regs[c600.RegHSPGS2] = v &^ c600.HSPMark
	return nil
}

func (c *Card) sessionStart() error {
	for i := range c600.XBCount {
		if got, want := c.regs[c600.XBAddress(i)], c600.XBControl(c600.XBOperational(i)); got != want {
			return refuse(RuleXB, "session start with XB %d (%#x) at %#x, want %#x", i, c600.XBAddress(i), got, want)
		}
	}
	if got := c.regs[c600.RegCCSR]; got != c.ccsrXB {
		return refuse(RuleXB, "session start with CCSR %#x, want it restored to %#x", got, c.ccsrXB)
	}
	c.ph, c.detached, c.pages = phSessionStart, false, nil
	return nil
}

func (c *Card) sessionAttached() error {
	if want := len(c.pkg.Host.Pages); len(c.pages) != want {
		return refuse(RuleAttach, "GS2 = 1 with %d of the package's %d pages attached", len(c.pages), want)
	}
	hs, err := emu.NewHostSession(c.link, c.pkg)
	if err != nil {
		return fmt.Errorf("c600 model: %w", err)
	}
	pages := map[uint32][]byte{}
	for _, i := range c.pages {
		pages[i] = c.buffers[i]
	}
	if err := hs.UsePages(pages); err != nil {
		return fmt.Errorf("c600 model: %w", err)
	}
	c.hs, c.ph = hs, phSession
	return nil
}

// callHandshake is one host-link handshake. At a call's first the command
// word is read from the command page; at the later ones it must not have
// changed (else a GS2 handshake of the call is missing).
func (c *Card) callHandshake() error {
	h := &c.pkg.Host
	pg := c.buffers[h.CommandPage]
	if pg == nil || uint64(h.CommandOffset)+4 > uint64(len(pg)) {
		return refuse(RuleCommand, "the command page %d is not attached", h.CommandPage)
	}
	w := binary.LittleEndian.Uint32(pg[h.CommandOffset:])
	if !c.hs.InCall() {
		if !slices.ContainsFunc(h.Calls, func(hc ipuexe.HostCall) bool { return hc.Command == w }) {
			return refuse(RuleCommand, "command word %#x (page %d offset %d) names no call of the package", w, h.CommandPage, h.CommandOffset)
		}
		c.callCmd = w
	} else if w != c.callCmd {
		return refuse(RuleCommand, "the command word changed from %#x to %#x before the call's last handshake: a GS2 handshake is missing", c.callCmd, w)
	}
	if err := c.hs.Handshake(context.Background()); err != nil {
		return fmt.Errorf("c600 model: %w", err)
	}
	return nil
}
