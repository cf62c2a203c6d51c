// Package device is the seam between the runtime and whatever runs a
// package: the chip emulator today (backend "emu", package
// device/emudev), real IPU hardware later.
//
// A run goes through a Device in a fixed order, which the runtime follows
// and every backend may rely on:
//
//	dev, _ := device.Open(ctx, "emu", opts)   // take the device lock, make the backend
//	dev.Open(ctx)                              // attach to the device
//	dev.Initialize(ctx)                        // reset it
//	dev.ReplayConfig(ctx, writes)              // IPUCFG1 register writes
//	dev.Load(ctx, pkg, progress)               // tile images, startup mark, initial sync
//	s, _ := dev.StartSession(ctx)              // host exchange pages
//	s.Call(ctx, "initialize", weights, nil)    // host calls, in the package's terms
//	s.Call(ctx, "run", inputs, outputs)
//	s.ProfileWords(tile, addrs)                // cycle samples
//	s.Close(); dev.Close()                     // Close also releases the lock
//
// Backends register themselves with Register (an init function in their
// package); a program links the backends it wants by importing them.
package device

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ipustack/ipustack/device/config"
	"github.com/ipustack/ipustack/device/lock"
	"github.com/ipustack/ipustack/ipuexe"
)

// DefaultName is the backend Open uses when no name is given.
const DefaultName = "emu"

// Info describes a device.
type Info struct {
	Name    string  // registry name ("emu")
	Path    string  // what the logs call the device ("emulator:ipu21")
	Target  string  // ipu21.Lookup name of the chip
	Tiles   int     // tiles the chip has
	ClockHz float64 // tile clock
}

// Device is one chip, owned by this process from device.Open to Close.
// Methods are called in the order of the package comment; calling one out
// of order is an error, not a panic.
type Device interface {
	Info() Info
	// Open attaches to the device.
	Open(ctx context.Context) error
	// Initialize resets the device to a state where configuration and
	// loading can start.
	Initialize(ctx context.Context) error
	// ReplayConfig writes the configuration registers in order.
	ReplayConfig(ctx context.Context, writes []config.Write) error
	// Load writes every tile image (in batches of ipu21.LoaderBatchTiles
	// tiles, then the startup mark: the number of batches), starts every
	// tile at its entry point and returns once the application's runtime
	// code has completed its initial synchronization (every tile waits at
	// its first host sync). progress, when not nil, is called after each
	// batch with the tiles loaded so far.
	Load(ctx context.Context, pkg *ipuexe.Package, progress func(done, total int)) error
	// StartSession attaches the host-exchange pages of the loaded package.
	StartSession(ctx context.Context) (Session, error)
	// Close releases the device and its lock. It is safe to call twice.
	Close() error
}

// Session runs the loaded package's host-exchange calls.
type Session interface {
	// Call runs the package's call name. in holds input and weight
	// tensors by binding name (the bytes of the whole tensor); out
	// receives output tensors by binding name (allocated or resized as
	// needed; pass nil to discard outputs).
	Call(ctx context.Context, name string, in, out map[string][]byte) (CallStats, error)
	// ProfileWords reads 32-bit words of one tile's memory (cycle
	// samples), tile by physical id.
	ProfileWords(tile int, addrs []uint32) ([]uint32, error)
	// StartupMark is the loader's final mark the session started from.
	StartupMark() int
	Close() error
}

// CallStats reports one host call.
type CallStats struct {
	Phases     int    // phases of the call
	Handshakes int    // host syncs released (the command handshake + one per phase)
	PacketsIn  int    // host -> tile packets, the command words included
	BytesIn    uint64 // host -> tile bytes
	PacketsOut int    // tile -> host packets
	BytesOut   uint64 // tile -> host bytes
	Cycles     uint64 // device cycles the call took, host syncs included
	Wall       time.Duration
}

// Options configure Open.
type Options struct {
	// Node is the device node of a hardware backend, the part of the name
	// after the colon in "c600:/dev/ipu1" (Open fills it in; "" means the
	// backend's default node).
	Node string
	// LockPath is the ownership lock file of a hardware device. "" means
	// $IPUSTACK_DEVICE_LOCK when set, else the file lock.PathFor derives
	// from the device node, so that each card has its own lock. Emulated
	// backends take no lock.
	LockPath string
	// LockWait is how long to wait for another owner (0: fail at once; a
	// negative value waits until ctx is done, as lock.Options.Wait).
	LockWait time.Duration
	// NoLock skips ownership, for tests that make many emulated devices.
	NoLock bool
	// Logger receives the device's log events (default slog.Default()).
	Logger *slog.Logger
	// Backend holds backend-specific options (e.g. emudev.Options).
	Backend any
}

// Opener makes a backend's Device. The device lock is already held.
type Opener func(opts Options) (Device, error)

// backend is one registry entry.
type backend struct {
	open Opener
	// node is the default device node; "" for an emulated backend, which
	// owns no hardware and so takes no lock.
	node     string
	emulated bool
}

var (
	mu       sync.Mutex
	backends = map[string]backend{}
)

// Register makes a hardware backend available to Open under name; its
// default device node is name itself. Use RegisterHardware to give another
// default node, RegisterEmulated for a backend that owns no hardware. It
// panics on a duplicate name: that is a programming error found at init
// time.
func Register(name string, open Opener) { RegisterHardware(name, name, open) }

// RegisterHardware registers a backend that drives a device node
// (defaultNode unless the name carries one, "c600:/dev/ipu1"). Open locks
// the node: two runs on one card wait for each other, runs on different
// cards do not.
func RegisterHardware(name, defaultNode string, open Opener) {
	register(name, backend{open: open, node: defaultNode})
}

// RegisterEmulated registers a backend that owns no hardware (an
// emulator): Open takes no lock for it, so emulated runs never wait for
// each other or for a hardware run.
func RegisterEmulated(name string, open Opener) {
	register(name, backend{open: open, emulated: true})
}

func register(name string, b backend) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := backends[name]; dup {
		panic("device: backend " + name + " registered twice")
	}
	backends[name] = b
}

// Names lists the registered backends.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	ns := make([]string, 0, len(backends))
	for n := range backends {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// ErrUnknown is wrapped by Open's error for a name no backend has.
var ErrUnknown = errors.New("unknown device")

// Open takes ownership of the device and makes backend name's Device (""
// means DefaultName; "NAME:NODE" names a device node of a hardware
// backend, as in "c600:/dev/ipu1"); the device still needs its Open
// method. A hardware device is locked per device node (see
// Options.LockPath) unless opts.NoLock; an emulated one is never locked.
// The lock is released by Device.Close, or at once when making the backend
// fails.
func Open(ctx context.Context, name string, opts Options) (Device, error) {
	if name == "" {
		name = DefaultName
	}
	if b, node, ok := strings.Cut(name, ":"); ok {
		if node == "" {
			return nil, fmt.Errorf("device %q: empty device node after the colon", name)
		}
		name, opts.Node = b, node
	}
	mu.Lock()
	be, found := backends[name]
	mu.Unlock()
	open := be.open
	if !found {
		known := Names()
		hint := "hardware backends are not built; use --device emu"
		if !slices.Contains(known, "emu") {
			hint = "no backend is linked in (import github.com/ipustack/ipustack/device/emudev)"
		}
		return nil, fmt.Errorf("%w %q (known: %s); %s", ErrUnknown, name, strings.Join(known, ", "), hint)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if be.emulated && opts.Node != "" {
		return nil, fmt.Errorf("device %s:%s: the %s backend is emulated and has no device node", name, opts.Node, name)
	}
	if !be.emulated && opts.Node == "" {
		opts.Node = be.node
	}
	var lk *lock.Lock
	if !opts.NoLock && !be.emulated {
		path := opts.LockPath
		if path == "" {
			path = lock.PathFor(opts.Node)
			if p := os.Getenv(lock.EnvPath); p != "" {
				path = p
			}
		}
		log.InfoContext(ctx, "waiting for hardware ownership", "path", path)
		var err error
		lk, err = lock.Acquire(ctx, path, lock.Options{Wait: opts.LockWait, Logger: log})
		if err != nil {
			return nil, err
		}
	}
	dev, err := open(opts)
	if err != nil {
		if lk != nil {
			lk.Release()
		}
		return nil, fmt.Errorf("device %s: %w", name, err)
	}
	return &locked{Device: dev, lock: lk}, nil
}

// locked releases the ownership lock when the device closes.
type locked struct {
	Device
	lock *lock.Lock
	once sync.Once
}

func (l *locked) Close() error {
	err := l.Device.Close()
	l.once.Do(func() {
		if l.lock != nil {
			err = errors.Join(err, l.lock.Release())
		}
	})
	return err
}
