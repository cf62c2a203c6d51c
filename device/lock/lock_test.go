package lock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// childEnv switches the test binary into "lock holder" mode: it takes the
// lock at the path given in the variable, prints "locked", then holds it
// until its stdin is closed or it is killed. Running the test binary itself
// as the child keeps the test self-contained (no helper program to build).
const childEnv = "IPUSTACK_LOCK_TEST_HOLDER"

const childOwner = "lock-test-child --hold"

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		os.Exit(holdLock(path))
	}
	os.Exit(m.Run())
}

func holdLock(path string) int {
	l, err := Acquire(context.Background(), path, Options{Owner: childOwner, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	// Exit without Release: the kernel must drop the lock by itself.
	_ = l
	return 0
}

// startHolder runs a child process holding the lock at path. Closing the
// returned writer lets the child exit normally.
func startHolder(t *testing.T, path string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("holder child did not take the lock: %q, %v", line, err)
	}
	return cmd, stdin
}

// logBuffer collects slog text output from concurrent goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

type result struct {
	l   *Lock
	err error
}

func acquireAsync(path string, opts Options) <-chan result {
	ch := make(chan result, 1)
	go func() {
		l, err := Acquire(context.Background(), path, opts)
		ch <- result{l, err}
	}()
	return ch
}

// TestStaleHolderReleasedByKernel: a holder that dies without releasing
// (SIGKILL) must not block the next run; the waiter first reports the
// holder's description, then gets the device.
func TestStaleHolderReleasedByKernel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.lock")
	child, _ := startHolder(t, path)
	pid := child.Process.Pid

	var logs logBuffer
	ch := acquireAsync(path, Options{Wait: 20 * time.Second, Poll: 10 * time.Millisecond, Logger: logs.logger(), Owner: "second"})
	waitFor(t, "the waiting log record", func() bool { return strings.Contains(logs.String(), "waiting for hardware ownership") })
	out := logs.String()
	for _, want := range []string{
		"path=" + path,
		fmt.Sprintf("holderPid=%d", pid),
		fmt.Sprintf("holderCommand=%q", childOwner),
		"holderSince=",
		"wait=20s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("waiting record lacks %q:\n%s", want, out)
		}
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	var r result
	select {
	case r = <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("lock not acquired after the holder was killed")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.l.Release()
	if h := ReadHolder(path); h == nil || h.PID != os.Getpid() || h.Command != "second" {
		t.Errorf("lock file describes %v, want this process", h)
	}
	out = logs.String()
	if n := strings.Count(out, "waiting for hardware ownership"); n != 1 {
		t.Errorf("waiting logged %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, `msg="acquired hardware ownership" path=`+path) {
		t.Errorf("no acquired record:\n%s", out)
	}
}

// TestTimeoutNamesHolder: giving up says who holds the device, since when
// and how long we waited.
func TestTimeoutNamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.lock")
	child, stdin := startHolder(t, path)
	pid := child.Process.Pid

	start := time.Now()
	_, err := Acquire(context.Background(), path, Options{Wait: 300 * time.Millisecond, Poll: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if el := time.Since(start); el < 300*time.Millisecond || el > 5*time.Second {
		t.Errorf("Acquire returned after %v, want about 300ms", el)
	}
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("err = %v, want ErrBusy", err)
	}
	var be *BusyError
	if !errors.As(err, &be) || be.Holder == nil || be.Holder.PID != pid || be.Holder.Command != childOwner {
		t.Fatalf("BusyError holder = %+v, want pid %d", be, pid)
	}
	msg := err.Error()
	for _, want := range []string{
		"device lock " + path + " is held by",
		fmt.Sprintf("pid %d (%q)", pid, childOwner),
		" since " + be.Holder.Since.Format(time.RFC3339),
		"held for ",
		"gave up after waiting ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if be.Waited < 300*time.Millisecond || be.Cause != nil {
		t.Errorf("Waited = %v, Cause = %v", be.Waited, be.Cause)
	}
	t.Log(msg)

	// A holder that exits normally (without Release) frees the device too.
	stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatalf("holder child: %v", err)
	}
	l, err := Acquire(context.Background(), path, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
}

func TestNoWait(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.lock")
	quiet := slog.New(slog.DiscardHandler)
	first, err := Acquire(context.Background(), path, Options{Owner: "first", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()

	var logs logBuffer
	start := time.Now()
	_, err = Acquire(context.Background(), path, Options{Logger: logs.logger()})
	if time.Since(start) > time.Second {
		t.Errorf("Wait 0 took %v", time.Since(start))
	}
	var be *BusyError
	if !errors.As(err, &be) || be.Waited != 0 || be.Holder == nil || be.Holder.Command != "first" {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "not waiting (wait is 0)") {
		t.Errorf("error %q does not say it did not wait", err)
	}
	if logs.String() != "" {
		t.Errorf("Wait 0 logged:\n%s", logs.String())
	}
}

// TestWaitThenAcquire: a waiter gets the device as soon as the owner
// releases it, and logs "waiting" only once however many times it polls.
func TestWaitThenAcquire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.lock")
	first, err := Acquire(context.Background(), path, Options{Owner: "first", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	ch := acquireAsync(path, Options{Wait: -1, Poll: 5 * time.Millisecond, Logger: logs.logger(), Owner: "second"})
	waitFor(t, "the waiting log record", func() bool { return strings.Contains(logs.String(), "waiting for hardware ownership") })
	time.Sleep(100 * time.Millisecond) // let it poll many times
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.l.Release()
	out := logs.String()
	if strings.Count(out, "waiting for hardware ownership") != 1 || !strings.Contains(out, `holderCommand=first`) ||
		strings.Contains(out, "wait=") {
		t.Errorf("log:\n%s", out)
	}
	if !strings.Contains(out, "acquired hardware ownership") {
		t.Errorf("no acquired record:\n%s", out)
	}
}

func TestContextCancel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.lock")
	quiet := slog.New(slog.DiscardHandler)
	first, err := Acquire(context.Background(), path, Options{Owner: "first", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = Acquire(ctx, path, Options{Wait: -1, Poll: time.Hour, Logger: quiet})
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("cancellation took %v", el)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrBusy) {
		t.Fatalf("err = %v, want Canceled and ErrBusy", err)
	}
	if !strings.Contains(err.Error(), "stopped waiting after") || !strings.Contains(err.Error(), `("first")`) {
		t.Errorf("error %q", err)
	}

	// An already-cancelled context does not even try, and does not claim
	// the device is busy.
	_, err = Acquire(ctx, filepath.Join(t.TempDir(), "other.lock"), Options{Logger: quiet})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrBusy) {
		t.Errorf("pre-cancelled: err = %v", err)
	}
}

func TestOwnerFileAndRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "device.lock")
	quiet := slog.New(slog.DiscardHandler)
	// A longer description left by an earlier owner must not leave junk.
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 4096)), 0o666); err != nil {
		t.Fatal(err)
	}
	l, err := Acquire(context.Background(), path, Options{Owner: "ipu run model.ipuexe", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("lock file is not JSON: %v\n%s", err, data)
	}
	for _, k := range []string{"pid", "command", "since"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("lock file lacks %q: %s", k, data)
		}
	}
	h := ReadHolder(path)
	if h == nil || *h != l.Holder() || h.PID != os.Getpid() || h.Command != "ipu run model.ipuexe" ||
		time.Since(h.Since) > time.Minute {
		t.Errorf("ReadHolder = %+v, lock holder %+v", h, l.Holder())
	}
	if l.Path() != path {
		t.Errorf("Path() = %q", l.Path())
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
	var nilLock *Lock
	if err := nilLock.Release(); err != nil {
		t.Errorf("nil Release: %v", err)
	}
	// The file stays (waiters may have it open) but describes nobody.
	if _, err := os.Stat(path); err != nil {
		t.Errorf("lock file removed: %v", err)
	}
	if h := ReadHolder(path); h != nil {
		t.Errorf("released lock still describes %v", h)
	}
	l2, err := Acquire(context.Background(), path, Options{Logger: quiet})
	if err != nil {
		t.Fatalf("re-acquire after Release: %v", err)
	}
	if got := l2.Holder().Command; got != strings.Join(os.Args, " ") {
		t.Errorf("default owner %q", got)
	}
	l2.Release()
}

func TestResolvePath(t *testing.T) {
	t.Setenv(EnvPath, "")
	if got := ResolvePath(""); got != DefaultPath {
		t.Errorf("ResolvePath(\"\") = %q", got)
	}
	t.Setenv(EnvPath, "/x/env.lock")
	if got := ResolvePath(""); got != "/x/env.lock" {
		t.Errorf("with env: %q", got)
	}
	if got := ResolvePath("/y.lock"); got != "/y.lock" {
		t.Errorf("explicit: %q", got)
	}
}

func TestHolderString(t *testing.T) {
	var h *Holder
	if !strings.Contains(h.String(), "unknown") {
		t.Errorf("nil holder: %q", h.String())
	}
	h = &Holder{PID: 7, Command: "ipu run", Host: "box", Since: time.Date(2026, 9, 23, 9, 30, 2, 0, time.UTC)}
	if got, want := h.String(), `pid 7 ("ipu run") on box since 2026-09-23T09:30:02Z`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	// Garbage or foreign content reads as "no description".
	path := filepath.Join(t.TempDir(), "f")
	for _, s := range []string{"", "  \n", "not json", `{"pid":0}`} {
		os.WriteFile(path, []byte(s), 0o666)
		if h := ReadHolder(path); h != nil {
			t.Errorf("ReadHolder(%q) = %+v", s, h)
		}
	}
	if ReadHolder(filepath.Join(t.TempDir(), "missing")) != nil {
		t.Error("missing file has a holder")
	}
}
