package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/device/lock"
)

// TestEmulatorRunsDoNotWaitForTheLock: with the hardware lock held by
// another owner, emulator runs proceed at once (--lock-wait 0 would fail
// on a held lock): emulator runs never serialize on it.
func TestEmulatorRunsDoNotWaitForTheLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	t.Setenv(lock.EnvPath, path)
	held, err := lock.Acquire(context.Background(), path, lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	code, out, errs := ipu(t, "diagnose", "--log-level", "warn", "--tiles", "4", "--lock-wait", "0s")
	if code != 0 || !strings.HasPrefix(out, "PASS tiles=4 ") {
		t.Fatalf("emulator run with the hardware lock held: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestC600WithoutCard: on a machine without the card, --device c600 is
// one clear error line naming the missing node and a non-zero exit.
func TestC600WithoutCard(t *testing.T) {
	t.Setenv(lock.EnvPath, filepath.Join(t.TempDir(), "lock"))
	node := filepath.Join(t.TempDir(), "ipu7")
	code, out, errs := ipu(t, "diagnose", "--log-level", "warn", "--tiles", "1", "--device", "c600:"+node)
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code == 0 || out != "" || len(lines) != 1 || !strings.Contains(errs, "no "+node+": there is no IPU card") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

func TestBootloaderFlagNeedsC600(t *testing.T) {
	t.Setenv(lock.EnvPath, filepath.Join(t.TempDir(), "lock"))
	code, _, errs := ipu(t, "diagnose", "--log-level", "warn", "--tiles", "1", "--bootloader", "boot.elf")
	if code == 0 || !strings.Contains(errs, `--bootloader applies to --device c600 and c600-model only, not "emu"`) {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

// TestC600ModelDiagnose: the driver over the card model passes the
// diagnostic with the emulator's cycles and host traffic.
func TestC600ModelDiagnose(t *testing.T) {
	summary := func(dev string) string {
		code, out, errs := ipu(t, "diagnose", "--log-level", "warn", "--tiles", "70", "--device", dev)
		if code != 0 || !strings.HasPrefix(out, "PASS tiles=70 ") {
			t.Fatalf("%s: exit %d\n%s\n%s", dev, code, out, errs)
		}
		f := strings.Fields(out)
		return strings.Join(f[:6], " ") // PASS tiles= exchangeCycles= runCycles= hostPacketsIn= hostPacketsOut=
	}
	if e, m := summary("emu"), summary("c600-model"); e != m {
		t.Fatalf("emu: %s\nc600-model: %s", e, m)
	}
}

// TestC600ModelRun: a small GEMM built and run on the card model through
// the driver gives the emulator's metrics line, the device name aside.
func TestC600ModelRun(t *testing.T) {
	line := func(dev string) string {
		code, out, errs := ipu(t, "run", "--log-level", "warn", "--workload", "gemm", "--m", "64", "--k", "64", "--n", "64", "--tiles", "4", "--device", dev)
		if code != 0 || !strings.Contains(out, "numericalTest=PASS") {
			t.Fatalf("%s: exit %d\n%s\n%s", dev, code, out, errs)
		}
		return strings.Replace(strings.TrimSpace(out), "device="+dev, "device=DEV", 1)
	}
	if e, m := line("emu"), line("c600-model"); e != m || !strings.Contains(e, "cycles=") {
		t.Fatalf("emu:        %s\nc600-model: %s", e, m)
	}
}
