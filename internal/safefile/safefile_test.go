package safefile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestNewAndReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.bin")
	for _, s := range []string{"first", "second, longer"} {
		if err := WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if string(got) != s {
			t.Fatalf("got %q want %q", got, s)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left temporary files behind: %v", ents)
	}
}

func TestFailedWriteKeepsPrevious(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.bin")
	os.WriteFile(p, []byte("old"), 0o644)
	err := Write(p, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return errors.New("generator broke")
	})
	if err == nil || !strings.Contains(err.Error(), "generator broke") || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Fatalf("previous file changed: %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("left temporary files behind: %v", ents)
	}
}

func TestSymlinkWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.bin")
	os.WriteFile(real, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.bin")
	if err := os.Symlink("real.bin", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", fi.Mode(), err)
	}
	if got, _ := os.ReadFile(real); string(got) != "new" {
		t.Fatalf("target holds %q", got)
	}
	// A dangling link creates its target.
	dl := filepath.Join(dir, "dangling")
	os.Symlink(filepath.Join(dir, "made.bin"), dl)
	if err := WriteFile(dl, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "made.bin")); string(got) != "x" {
		t.Fatalf("dangling target holds %q", got)
	}
}

// TestFullDevice writes to a private char device 1,7 (what /dev/full is):
// the node must stay a device and the ENOSPC must be reported.
func TestFullDevice(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "full")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(mkdev(1, 7))); err != nil {
		t.Skipf("mknod of a private char device 1,7 not permitted here (%v); this case needs root or CAP_MKNOD", err)
	}
	err := WriteFile(p, bytes.Repeat([]byte("x"), 100), 0o644)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v, want no space left on device naming %s", err, p)
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("device node replaced: %v %v", fi.Mode(), err)
	}
}

func mkdev(major, minor uint32) uint64 {
	return uint64(major&0xfff)<<8 | uint64(minor&0xff) | uint64(minor&^0xff)<<12 | uint64(major&^0xfff)<<32
}

func TestFIFOWrittenDirectly(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []byte)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	if err := WriteFile(p, []byte("through the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "through the pipe" {
		t.Fatalf("read %q", b)
	}
	if fi, _ := os.Lstat(p); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced: %v", fi.Mode())
	}
}

// TestReadOnlyDirectory: a directory the writer may not create files in
// gives a clear error and leaves the previous file. Root ignores directory
// modes, so as root the check runs in a child process as uid 65534.
func TestReadOnlyDirectory(t *testing.T) {
	if dir := os.Getenv("SAFEFILE_RO_DIR"); dir != "" {
		checkReadOnly(t, dir)
		return
	}
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o755)
	p := filepath.Join(ro, "out.bin")
	os.WriteFile(p, []byte("old"), 0o644)
	os.Chmod(ro, 0o555)
	defer os.Chmod(ro, 0o755)
	if os.Geteuid() != 0 {
		checkReadOnly(t, ro)
		return
	}
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	// The test binary lives in a 0700 build directory; run a copy.
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "safefile.test")
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestReadOnlyDirectory$", "-test.v")
	cmd.Env = append(os.Environ(), "SAFEFILE_RO_DIR="+ro)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as uid 65534: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestReadOnlyDirectory") {
		t.Fatalf("child did not run the check:\n%s", out)
	}
}

func checkReadOnly(t *testing.T, ro string) {
	p := filepath.Join(ro, "out.bin")
	err := WriteFile(p, []byte("new"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), ro) {
		t.Fatalf("err = %v, want permission denied naming %s", err, ro)
	}
	t.Logf("error: %v", err)
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Fatalf("previous file changed: %q", got)
	}
}

func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(dir, nil, 0o644); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("directory: %v", err)
	}
	if err := Check(filepath.Join(dir, "no", "such")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing dir: %v", err)
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, nil, 0o644)
	if err := Check(filepath.Join(f, "x")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("file parent: %v", err)
	}
}
