package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
	"github.com/ipustack/ipustack/kernels"
	"github.com/ipustack/ipustack/kernels/assemble"
	"github.com/ipustack/ipustack/kernels/bench"
	"github.com/x448/float16"
)

const sumSrc = "testdata/tilerun/sum.S"

// A hand-written kernel: the dumped sum is the host's f32 sum of the same
// seeded values, bit for bit, and the run is deterministic.
func TestTileRunHandKernel(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.bin")
	args := []string{"tile", "run", sumSrc, "--entry", "sum", "-D", "N=100", "--reg", "m2=0x80000",
		"--fill", "0x80000:200:9", "--dump", "0x80000:204@" + out}
	code, stdout, stderr := ipu(t, args...)
	if code != 0 || !strings.Contains(stdout, "stop=return") || !strings.Contains(stdout, "assumptions=amp-state-retained") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := fillF16(200, 9)
	var sum float32
	for i := 0; i < 200; i += 2 {
		h := float16.Frombits(binary.LittleEndian.Uint16(want[i:]))
		if math.Abs(float64(h.Float32())) >= 1 {
			t.Fatalf("fill value %v is not small", h)
		}
		sum += h.Float32()
	}
	if string(data[:200]) != string(want) {
		t.Fatal("dumped input differs from the fill")
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(data[200:])); got != sum {
		t.Fatalf("kernel sum %v, host %v", got, sum)
	}
	// Same inputs, same line.
	os.Remove(out)
	if _, again, _ := ipu(t, args...); again != stdout {
		t.Fatalf("not deterministic:\n%s%s", stdout, again)
	}
	// --json: the same figures as one object.
	code, js, _ := ipu(t, "tile", "run", sumSrc, "--entry", "sum", "-D", "N=100", "--reg", "m2=0x80000", "--json", "--conservative")
	var rep tileReport
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil || rep.Stop != "return" || rep.Assumptions != "conservative" ||
		!strings.Contains(stdout, "cycles="+fmt.Sprint(rep.Cycles)+" ") {
		t.Fatalf("json %q (exit %d), line %q", js, code, stdout)
	}
}

// One of ours: gemm_f16_drain from kernels/assemble/src, assembled by tile run with
// -D, takes exactly the cycles `ipu kernel run` reports for it.
func TestTileRunOurKernel(t *testing.T) {
	const k, c, r = 32, 16, 12
	// Panels as the bench places them: left, out, right in region 1.
	left, outp, right := uint32(0x80000), uint32(0x88000), uint32(0x90000)
	code, stdout, stderr := ipu(t, "tile", "run", "../../kernels/assemble/src/gemm_f16_drain.S", "--entry", "gemm_f16_drain",
		"-D", "K=32", "-D", "C=16", "-D", "R=12",
		"--reg", "m2="+hex(outp), "--reg", "m3="+hex(left), "--reg", "m4="+hex(right),
		"--fill", hex(left)+":768:1", "--fill", hex(right)+":1024:2")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	rep, err := bench.Run("gemm_f16_drain", kernels.Params{"k": k, "c": c, "r": r}, 1, assemble.Cache{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "cycles=" + fmt.Sprint(rep.Cycles) + " "; !strings.HasPrefix(stdout, want) {
		t.Fatalf("tile run says %q, kernel run %d cycles", stdout, rep.Cycles)
	}
}

func hex(v uint32) string { return fmt.Sprintf("%#x", v) }

// A fault is reported with tile, context, PC and instruction, and exits 1.
func TestTileRunFault(t *testing.T) {
	code, stdout, _ := ipu(t, "tile", "run", "testdata/tilerun/cwei.S", "--entry", "bad")
	for _, part := range []string{"stop=fault", "faultTile=0", `faultContext="supervisor"`, "faultPC=0x", `faultInstruction="ld128putcs 0"`, "rewrites $CWEI"} {
		if !strings.Contains(stdout, part) {
			t.Errorf("output lacks %q:\n%s", part, stdout)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

func TestTileRunErrors(t *testing.T) {
	dir := t.TempDir()
	junk := writeFile(t, dir, "junk.o", "not an ELF object")
	txt := writeFile(t, dir, "k.txt", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{sumSrc}, "--entry SYM is required"},
		{[]string{sumSrc, "--entry", "nosuch"}, `no object defines a global symbol "nosuch" (globals: sum)`},
		{[]string{junk, "--entry", "sum"}, "junk.o"},
		{[]string{txt, "--entry", "sum"}, "want a Colossus object (.o) or an assembly source (.S)"},
		{[]string{filepath.Join(dir, "missing.S"), "--entry", "sum"}, "missing.S"},
		{[]string{sumSrc, "--entry", "sum", "--reg", "a2=1"}, `--reg "a2=1": want mN=VALUE`},
		{[]string{sumSrc, "--entry", "sum", "--reg", "m2=zz"}, `value "zz" is not a 32-bit number`},
		{[]string{sumSrc, "--entry", "sum", "--reg", "m10=0"}, "return address"},
		{[]string{sumSrc, "--entry", "sum", "--fill", "0x80000"}, "want ADDR:LEN[:SEED]"},
		{[]string{sumSrc, "--entry", "sum", "--fill", "0x40000:16"}, "[0x40000, 0x40010) is outside tile SRAM"},
		{[]string{sumSrc, "--entry", "sum", "--fill", "0xE7FF0:32"}, "outside tile SRAM"},
		{[]string{sumSrc, "--entry", "sum", "--fill", "0x4C010:16"}, "overlaps the linked image"},
		{[]string{sumSrc, "--entry", "sum", "--fill", "0x80000:64", "--fill", "0x80020:64"}, "overlaps --fill 0x80000:64"},
		{[]string{sumSrc, "--entry", "sum", "--load", "nofile"}, "want FILE@ADDR"},
		{[]string{sumSrc, "--entry", "sum", "--dump", "0x80000:16"}, "want ADDR:LEN@FILE"},
		{[]string{sumSrc, "--entry", "sum", "--dump", "0x80000:16@" + sumSrc}, "--dump"},
	} {
		code, stdout, stderr := ipu(t, append([]string{"tile", "run"}, tc.args...)...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want an error containing %q", tc.args, code, stderr, stdout, tc.want)
		}
	}
	// The source the dump refused to overwrite is intact.
	if b, err := os.ReadFile(sumSrc); err != nil || !strings.Contains(string(b), "sum_worker") {
		t.Fatal("sum.S was touched")
	}
}

// FuzzTileSpan: parseSpan never panics and only accepts ranges in SRAM.
func FuzzTileSpan(f *testing.F) {
	f.Add("0x80000", "256")
	f.Add("0xE7FF0", "0x10")
	f.Add("-1", "0")
	f.Fuzz(func(t *testing.T, a, n string) {
		s, err := parseSpan("--fill", a, n)
		if err != nil {
			return
		}
		if s.size == 0 || uint64(s.addr) < ipu21.SRAMBase || uint64(s.addr)+uint64(s.size) > ipu21.SRAMEnd {
			t.Fatalf("accepted %q:%q as [0x%x, +0x%x)", a, n, s.addr, s.size)
		}
	})
}
