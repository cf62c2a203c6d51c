package device_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device"
	"github.com/ipustack/ipustack/device/config"
	"github.com/ipustack/ipustack/device/emudev"
	"github.com/ipustack/ipustack/device/lock"
	"github.com/ipustack/ipustack/ipuexe"
)

// fake is a backend that records Close.
type fake struct{ closed int }

func (f *fake) Info() device.Info                                           { return device.Info{Name: "fake"} }
func (f *fake) Open(context.Context) error                                  { return nil }
func (f *fake) Initialize(context.Context) error                            { return nil }
func (f *fake) ReplayConfig(context.Context, []config.Write) error          { return nil }
func (f *fake) Load(context.Context, *ipuexe.Package, func(int, int)) error { return nil }
func (f *fake) StartSession(context.Context) (device.Session, error)        { return nil, errors.New("no") }
func (f *fake) Close() error                                                { f.closed++; return nil }

var lastFake *fake

func init() {
	device.Register("fake", func(device.Options) (device.Device, error) { lastFake = &fake{}; return lastFake, nil })
	device.Register("broken", func(device.Options) (device.Device, error) { return nil, errors.New("no such card") })
}

func TestRegistry(t *testing.T) {
	if got := device.Names(); !slices.Contains(got, "emu") || !slices.Contains(got, "fake") {
		t.Fatalf("names %v", got)
	}
	_, err := device.Open(context.Background(), "ipu0", device.Options{NoLock: true})
	if !errors.Is(err, device.ErrUnknown) || !strings.Contains(err.Error(), `unknown device "ipu0"`) ||
		!strings.Contains(err.Error(), "hardware backends are not built; use --device emu") {
		t.Fatalf("unknown device: %v", err)
	}
	d, err := device.Open(context.Background(), "", device.Options{NoLock: true})
	if err != nil {
		t.Fatal(err)
	}
	if d.Info().Name != emudev.Name || d.Info().Tiles != 1472 {
		t.Fatalf("default device %+v", d.Info())
	}
	d.Close()
}

func TestOpenTakesLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	ctx := context.Background()
	d, err := device.Open(ctx, "fake", device.Options{LockPath: path})
	if err != nil {
		t.Fatal(err)
	}
	// A second owner is refused while the first holds the device.
	if _, err := device.Open(ctx, "fake", device.Options{LockPath: path}); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("second open: %v", err)
	}
	f := lastFake
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil || f.closed != 2 {
		t.Fatalf("second close: %v, backend closed %d times", err, f.closed)
	}
	d2, err := device.Open(ctx, "fake", device.Options{LockPath: path})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	d2.Close()
	// A backend that fails to open releases the lock at once.
	if _, err := device.Open(ctx, "broken", device.Options{LockPath: path}); err == nil || !strings.Contains(err.Error(), "no such card") {
		t.Fatalf("broken backend: %v", err)
	}
	d3, err := device.Open(ctx, "fake", device.Options{LockPath: path})
	if err != nil {
		t.Fatalf("open after a failed open: %v", err)
	}
	d3.Close()
}

func TestEmuOrder(t *testing.T) {
	ctx := context.Background()
	d := emudev.New(emudev.Options{})
	if err := d.Load(ctx, &ipuexe.Package{}, nil); err == nil || !strings.Contains(err.Error(), "the device is new") {
		t.Fatalf("load before open: %v", err)
	}
	if _, err := d.StartSession(ctx); err == nil {
		t.Fatal("session before load")
	}
	if err := d.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.ReplayConfig(ctx, []config.Write{{Offset: 2}}); err == nil {
		t.Fatal("misaligned config write accepted")
	}
	if err := d.Load(ctx, nil, nil); err == nil {
		t.Fatal("nil package accepted")
	}
	if err := d.Load(ctx, &ipuexe.Package{Target: "ipu21"}, nil); err == nil {
		t.Fatal("invalid package accepted")
	}
	if _, err := device.Open(ctx, "emu", device.Options{NoLock: true, Backend: 42}); err == nil {
		t.Fatal("wrong backend options accepted")
	}
}

// TestEmulatedRunsTakeNoLock: emulator runs do not serialize on the
// hardware lock. With the lock file held by another owner, two emulated
// devices still open at once, without waiting (LockWait 0 would fail at
// once on a held lock).
func TestEmulatedRunsTakeNoLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	t.Setenv(lock.EnvPath, path)
	ctx := context.Background()
	held, err := lock.Acquire(ctx, path, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	a, err := device.Open(ctx, "emu", device.Options{})
	if err != nil {
		t.Fatalf("first emulated device with the hardware lock held: %v", err)
	}
	b, err := device.Open(ctx, "emu", device.Options{LockPath: path})
	if err != nil {
		t.Fatalf("second emulated device while the first is open: %v", err)
	}
	a.Close()
	b.Close()
	// A hardware backend does wait for that lock.
	if _, err := device.Open(ctx, "fake", device.Options{}); !errors.Is(err, lock.ErrBusy) {
		t.Fatalf("hardware backend with its lock held: %v", err)
	}
	if _, err := device.Open(ctx, "emu:/dev/ipu0", device.Options{}); err == nil || !strings.Contains(err.Error(), "no device node") {
		t.Fatalf("emulated backend with a node: %v", err)
	}
}

// TestHardwareLockPerNode: each device node has its own lock.
func TestHardwareLockPerNode(t *testing.T) {
	t.Setenv(lock.EnvPath, "")
	t.Setenv(lock.EnvDir, "")
	if got := lock.PathFor("/dev/ipu0"); got != "/tmp/ipustack-device-dev-ipu0.lock" {
		t.Fatalf("default lock path of /dev/ipu0: %s", got)
	}
	dir := t.TempDir()
	t.Setenv(lock.EnvDir, dir) // the lock files this test creates stay in its own directory
	ctx := context.Background()
	a, b := filepath.Join(dir, "ipu0"), filepath.Join(dir, "ipu1")
	if lock.PathFor(a) == lock.PathFor(b) || filepath.Dir(lock.PathFor(a)) != dir {
		t.Fatalf("lock paths %s %s", lock.PathFor(a), lock.PathFor(b))
	}
	d0, err := device.Open(ctx, "fake:"+a, device.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d0.Close()
	d1, err := device.Open(ctx, "fake:"+b, device.Options{})
	if err != nil {
		t.Fatalf("a second card while the first is owned: %v", err)
	}
	defer d1.Close()
	if _, err := device.Open(ctx, "fake:"+a, device.Options{}); !errors.Is(err, lock.ErrBusy) || !strings.Contains(err.Error(), lock.PathFor(a)) {
		t.Fatalf("the same card twice: %v", err)
	}
	if _, err := device.Open(ctx, "fake:", device.Options{}); err == nil || !strings.Contains(err.Error(), "empty device node") {
		t.Fatalf("empty node: %v", err)
	}
}
