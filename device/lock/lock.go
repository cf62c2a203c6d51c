// Package lock gives one process at a time ownership of a device.
//
// A device is guarded by a lock file (DefaultPath unless overridden). The
// owner holds an exclusive flock(2) lock on it through
// github.com/gofrs/flock and writes a small JSON description of itself
// (pid, command, host, start time) into the file, so that a second process
// can say who it is waiting for instead of hanging silently.
//
// Stale holders need no special handling: flock locks belong to the open
// file, and the kernel drops them when the holder exits or is killed, so a
// crashed run never blocks the next one. The description it leaves behind is
// merely overwritten by the next owner. (This is why the package uses flock
// rather than "create the file exclusively" locking, which would need pid
// liveness checks and could be fooled by pid reuse.)
//
// Locking is advisory and per host: it coordinates ipustack processes that
// agree on the path, on one machine. It relies on flock(2) semantics
// (Linux, BSDs, macOS); on systems where gofrs/flock falls back to fcntl
// locks the description file must stay open while the lock is held, which
// Lock also does.
package lock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/gofrs/flock"
)

// DefaultPath is the historic machine-wide lock file; device.Open now
// locks each hardware device at PathFor(node), in the same directory.
const DefaultPath = "/tmp/ipustack-device.lock"

// EnvPath names an environment variable that, when set, replaces
// DefaultPath. It lets tests and parallel CI jobs use private lock files
// without threading a flag through every command.
const EnvPath = "IPUSTACK_DEVICE_LOCK"

// EnvDir names an environment variable that, when set, replaces the
// directory of DefaultPath for the per-device locks of PathFor, so tests
// keep their lock files in a private directory.
const EnvDir = "IPUSTACK_DEVICE_LOCK_DIR"

// DefaultPoll is how often a waiting Acquire retries. flock has no
// portable blocking-with-timeout call, and a run lasts seconds, so a tenth
// of a second costs nothing noticeable.
const DefaultPoll = 100 * time.Millisecond

// Options control Acquire.
type Options struct {
	// Wait is how long to wait for a busy device: 0 fails at once, a
	// negative value waits until ctx is done.
	Wait time.Duration
	// Poll is the retry interval while waiting; 0 means DefaultPoll.
	Poll time.Duration
	// Logger receives the "waiting for" / "acquired hardware ownership"
	// records; nil means slog.Default().
	Logger *slog.Logger
	// Owner describes this process in the lock file, typically the command
	// line; "" means os.Args joined by spaces.
	Owner string
}

// Holder is the description an owner writes into the lock file.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Host    string    `json:"host,omitempty"`
	Since   time.Time `json:"since"`
}

// String renders a holder for messages, e.g.
// `pid 4242 ("ipu run model.ipuexe") on host1 since 2026-09-23T09:30:02Z`.
func (h *Holder) String() string {
	if h == nil {
		// The file is empty or not ours: the holder has just taken the
		// lock and not written yet, has released it, or is not ipustack.
		return "an unknown process (no owner description in the lock file)"
	}
	s := fmt.Sprintf("pid %d (%q)", h.PID, h.Command)
	if h.Host != "" {
		s += " on " + h.Host
	}
	return s + " since " + h.Since.Format(time.RFC3339)
}

// ReadHolder returns the description in the lock file at path, or nil when
// there is none (missing, empty or unparsable file). It does not say
// whether the lock is currently held: only a lock attempt can.
func ReadHolder(path string) *Holder {
	data, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var h Holder
	if json.Unmarshal(data, &h) != nil || h.PID == 0 {
		return nil
	}
	return &h
}

// ErrBusy is matched (errors.Is) by the error Acquire returns when another
// process kept the device for the whole wait.
var ErrBusy = errors.New("device is owned by another process")

// BusyError is the error of an Acquire that gave up: on timeout, on
// context cancellation (then it also matches ctx.Err()) or at once when
// Options.Wait is 0.
type BusyError struct {
	Path   string
	Holder *Holder       // nil when the file carries no description
	Waited time.Duration // how long Acquire waited
	Cause  error         // nil on timeout, else the context's error
}

func (e *BusyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "device lock %s is held by %s", e.Path, e.Holder)
	if e.Holder != nil {
		fmt.Fprintf(&b, ", held for %s", roundDuration(time.Since(e.Holder.Since)))
	}
	switch {
	case e.Cause != nil:
		fmt.Fprintf(&b, "; stopped waiting after %s: %v", roundDuration(e.Waited), e.Cause)
	case e.Waited == 0:
		b.WriteString("; not waiting (wait is 0)")
	default:
		fmt.Fprintf(&b, "; gave up after waiting %s", roundDuration(e.Waited))
	}
	return b.String()
}

// roundDuration keeps messages readable: milliseconds below a second,
// whole seconds above. Clamped at 0 because the holder's clock (another
// host on a shared filesystem) may run ahead of ours.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < time.Second:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// Is makes errors.Is(err, ErrBusy) true for every BusyError.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Unwrap exposes the context error, if any.
func (e *BusyError) Unwrap() error { return e.Cause }

// Lock is held device ownership. Release it when done with the device.
type Lock struct {
	path   string
	fl     *flock.Flock
	desc   *os.File // kept open until Release, see the package comment
	holder Holder
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.path }

// Holder returns the description this lock wrote into the file.
func (l *Lock) Holder() Holder { return l.holder }

// PathFor is the lock file of the device at node (a device node such as
// "/dev/ipu0", or a backend name): the node's path with every character
// that is not a letter or digit turned into '-', under the directory of
// DefaultPath (or $IPUSTACK_DEVICE_LOCK_DIR), e.g. /tmp/ipustack-device-dev-ipu0.lock. Each device gets
// its own lock, so runs on different cards never wait for each other.
func PathFor(node string) string {
	var b strings.Builder
	for _, r := range strings.Trim(node, "/") {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	dir := os.Getenv(EnvDir)
	if dir == "" {
		dir = filepath.Dir(DefaultPath)
	}
	return filepath.Join(dir, "ipustack-device-"+b.String()+".lock")
}

// ResolvePath returns the lock file Acquire uses for path: path itself
// when set, else $IPUSTACK_DEVICE_LOCK, else DefaultPath.
func ResolvePath(path string) string {
	if path != "" {
		return path
	}
	if p := os.Getenv(EnvPath); p != "" {
		return p
	}
	return DefaultPath
}

// Acquire takes ownership of the device guarded by the lock file at path
// (see ResolvePath for ""). If another process owns it, Acquire logs
// "waiting for hardware ownership" once with the owner's description and
// retries until it succeeds, opts.Wait elapses or ctx is done; it then
// returns a *BusyError naming the owner.
func Acquire(ctx context.Context, path string, opts Options) (*Lock, error) {
	path = ResolvePath(path)
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	poll := opts.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	// 0o666 (less umask) so that users sharing the machine can all open
	// the file; a 0600 file created by one user would make the device
	// unusable for everybody else even after that user's run ended.
	fl := flock.New(path, flock.SetPermissions(0o666))

	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("device lock %s: %w", path, err)
	}
	start := time.Now()
	var deadline <-chan time.Time
	if opts.Wait > 0 {
		t := time.NewTimer(opts.Wait)
		defer t.Stop()
		deadline = t.C
	}
	var tick <-chan time.Time // nil until we start waiting
	for {
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("device lock %s: %w", path, err)
		}
		if ok {
			return finish(ctx, path, fl, opts, log)
		}
		if opts.Wait == 0 {
			return nil, &BusyError{Path: path, Holder: ReadHolder(path)}
		}
		if tick == nil {
			logWaiting(ctx, log, path, opts.Wait)
			t := time.NewTicker(poll)
			defer t.Stop()
			tick = t.C
		}
		select {
		case <-ctx.Done():
			return nil, &BusyError{Path: path, Holder: ReadHolder(path), Waited: time.Since(start), Cause: ctx.Err()}
		case <-deadline:
			// One last try: the holder may have let go just now, and
			// failing in that case would be a needless error.
			if ok, err := fl.TryLock(); err == nil && ok {
				return finish(ctx, path, fl, opts, log)
			}
			// Re-read the holder: it may have changed while we waited.
			return nil, &BusyError{Path: path, Holder: ReadHolder(path), Waited: time.Since(start)}
		case <-tick:
		}
	}
}

// logWaiting says once, at the start of a wait, whom we are waiting for.
func logWaiting(ctx context.Context, log *slog.Logger, path string, wait time.Duration) {
	attrs := []any{"path", path}
	if h := ReadHolder(path); h != nil {
		attrs = append(attrs, "holderPid", h.PID, "holderCommand", h.Command,
			"holderSince", h.Since.Format(time.RFC3339))
		if h.Host != "" {
			attrs = append(attrs, "holderHost", h.Host)
		}
	} else {
		attrs = append(attrs, "holder", "unknown")
	}
	if wait > 0 {
		attrs = append(attrs, "wait", wait)
	}
	log.InfoContext(ctx, "waiting for hardware ownership", attrs...)
}

// finish records this process as the owner in the (locked) file.
func finish(ctx context.Context, path string, fl *flock.Flock, opts Options, log *slog.Logger) (*Lock, error) {
	l := &Lock{path: path, fl: fl, holder: Holder{
		PID:     os.Getpid(),
		Command: opts.Owner,
		Since:   time.Now().UTC().Truncate(time.Millisecond),
	}}
	if l.holder.Command == "" {
		l.holder.Command = strings.Join(os.Args, " ")
	}
	l.holder.Host, _ = os.Hostname()
	if err := l.writeHolder(); err != nil {
		// Ownership is what matters and we have it; a missing description
		// only makes a waiter's message vaguer. Typical cause: the file
		// belongs to another user and is not writable by us.
		log.WarnContext(ctx, "cannot record owner in device lock file", "path", path, "err", err)
	}
	log.InfoContext(ctx, "acquired hardware ownership", "path", path)
	return l, nil
}

func (l *Lock) writeHolder() error {
	data, err := json.Marshal(l.holder)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	l.desc = f
	// Truncate then write at 0: the previous owner's text may be longer.
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(append(data, '\n'), 0)
	return err
}

// Release gives up ownership. It is safe to call more than once and on a
// nil Lock.
//
// Release empties the owner description but does not delete the file:
// another process may be waiting on it, and if we unlinked it, that waiter
// could lock the old (now nameless) file while a third process creates and
// locks a new one at the same path, leaving two owners of one device.
func (l *Lock) Release() error {
	if l == nil || l.fl == nil {
		return nil
	}
	// Clear the description while still holding the lock, so it never
	// erases a description written by the next owner.
	var errs []error
	if l.desc != nil {
		errs = append(errs, l.desc.Truncate(0))
	}
	errs = append(errs, l.fl.Unlock())
	if l.desc != nil {
		errs = append(errs, l.desc.Close())
		l.desc = nil
	}
	l.fl = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("releasing device lock %s: %w", l.path, err)
	}
	return nil
}
