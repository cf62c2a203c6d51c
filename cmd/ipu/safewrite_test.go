package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutputsWrittenSafely: ipu's outputs go through internal/safefile. A
// private full device (char 1,7, what /dev/full is) stays a device node
// and the write error is reported; a symlink is written through; a failed
// build leaves the previous file.
func TestOutputsWrittenSafely(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "hello.S", helloSrc)

	full := filepath.Join(dir, "full")
	if err := syscall.Mknod(full, syscall.S_IFCHR|0o666, 1<<8|7); err != nil {
		t.Logf("mknod of a private char device 1,7 not permitted (%v): skipping the full-device case", err)
	} else {
		code, _, errs := ipu(t, "asm", src, "-o", full)
		if code == 0 || !strings.Contains(errs, "no space left on device") {
			t.Errorf("asm -o full device: exit %d, %q", code, errs)
		}
		if fi, err := os.Lstat(full); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
			t.Errorf("the device node was replaced: %v %v", fi.Mode(), err)
		}
	}

	real := filepath.Join(dir, "real.o")
	os.WriteFile(real, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.o")
	os.Symlink("real.o", link)
	if code, _, errs := ipu(t, "asm", src, "-o", link); code != 0 {
		t.Fatalf("asm -o symlink: %s", errs)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced by a file")
	}
	if b, _ := os.ReadFile(real); len(b) < 4 || string(b[1:4]) != "ELF" {
		t.Errorf("the link's target does not hold the object: %q", b[:min(len(b), 8)])
	}

	// A build that fails after -o was checked leaves the previous file.
	prev := filepath.Join(dir, "prev.ipuexe")
	os.WriteFile(prev, []byte("previous"), 0o644)
	if code, _, _ := ipu(t, "build", "--workload", "mlp", "--blocks", "1000", "--tokens", "8", "--dim", "1024", "--hidden", "1024", "--tiles", "4", "-o", prev); code == 0 {
		t.Fatal("an impossible build succeeded")
	}
	if b, _ := os.ReadFile(prev); string(b) != "previous" {
		t.Errorf("previous file changed: %q", b)
	}
}
