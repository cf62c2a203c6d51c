package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/internal/npy"
	"github.com/ipustack/ipustack/internal/safetensors"
	"github.com/x448/float16"
)

// Small MLP shapes for the user-data tests (seconds on the emulator).
const (
	udTokens = 20
	udDim    = 32
	udHidden = 48
)

// hfLayer is one layer's MLP in Hugging Face layout (out x in).
type hfLayer struct {
	fc1w, fc1b, fc2w, fc2b []float32 // [hidden][dim], [hidden], [dim][hidden], [dim]
}

func randVals(r *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((2*r.Float64() - 1) * scale)
	}
	return v
}

// writeCheckpoint writes layers under vision_model.encoder.layers.<i>.mlp.,
// even layers in F32 and odd ones in BF16, plus an unrelated tensor.
func writeCheckpoint(t *testing.T, path string, layers []hfLayer) {
	t.Helper()
	var es []safetensors.Entry
	for i, l := range layers {
		dt := "F32"
		if i%2 == 1 {
			dt = "BF16"
		}
		p := fmt.Sprintf("vision_model.encoder.layers.%d.mlp.", i)
		es = append(es,
			safetensors.Entry{Name: p + "fc1.weight", DType: dt, Shape: []int{udHidden, udDim}, Values: l.fc1w},
			safetensors.Entry{Name: p + "fc1.bias", DType: dt, Shape: []int{udHidden}, Values: l.fc1b},
			safetensors.Entry{Name: p + "fc2.weight", DType: dt, Shape: []int{udDim, udHidden}, Values: l.fc2w},
			safetensors.Entry{Name: p + "fc2.bias", DType: dt, Shape: []int{udDim}, Values: l.fc2b})
	}
	es = append(es, safetensors.Entry{Name: "vision_model.post_layernorm.weight", DType: "F32", Shape: []int{udDim}, Values: make([]float32, udDim)})
	b, err := safetensors.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeNpy(t *testing.T, path, dtype string, shape []int, v []float32) {
	t.Helper()
	var b bytes.Buffer
	if err := npy.Write(&b, dtype, shape, v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Independent host computation: float64 loops, every stored value rounded
// to f16 as the device holds it (inputs, weights and each layer's output),
// and the file's BF16 values taken as the file holds them.
func f16r(x float64) float64 { return float64(float16.Fromfloat32(float32(x)).Float32()) }

func bf16r(x float32) float32 { return math.Float32frombits(uint32(safetensors.BF16(x)) << 16) }

func hostMLP(x []float32, layers []hfLayer, bf16 func(i int) bool) []float64 {
	rows := len(x) / udDim
	cur := make([]float64, len(x))
	for i, v := range x {
		cur[i] = f16r(float64(v))
	}
	for li, l := range layers {
		w := func(v float32) float64 {
			if bf16(li) {
				v = bf16r(v)
			}
			return f16r(float64(v))
		}
		h := make([]float64, rows*udHidden)
		for r := 0; r < rows; r++ {
			for j := 0; j < udHidden; j++ {
				s := 0.0
				for k := 0; k < udDim; k++ {
					s += cur[r*udDim+k] * w(l.fc1w[j*udDim+k])
				}
				s = f16r(f16r(s) + w(l.fc1b[j]))
				g := 0.5 * s * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(s+0.044715*s*s*s)))
				h[r*udHidden+j] = f16r(g)
			}
		}
		next := make([]float64, rows*udDim)
		for r := 0; r < rows; r++ {
			for k := 0; k < udDim; k++ {
				s := 0.0
				for j := 0; j < udHidden; j++ {
					s += h[r*udHidden+j] * w(l.fc2w[k*udHidden+j])
				}
				next[r*udDim+k] = f16r(f16r(s) + w(l.fc2b[k]))
			}
		}
		cur = next
	}
	return cur
}

func readNpy(t *testing.T, path string) *npy.Array {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	a, err := npy.Read(f, fi.Size())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// compareHost checks the device's output against the float64 computation.
// The bound is the f16 accumulation the device does (Acc: F16): a few f16
// ulps of the sums' magnitude, far below the values' spread.
func compareHost(t *testing.T, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d values, want %d", len(got), len(want))
	}
	worst, spread := 0.0, 0.0
	for i := range got {
		worst = max(worst, math.Abs(float64(got[i])-want[i]))
		spread = max(spread, math.Abs(want[i]))
	}
	if spread < 0.05 {
		t.Fatalf("outputs too small to be a meaningful test: max |y| %g", spread)
	}
	if worst > 0.02*spread+0.01 {
		t.Fatalf("max |device - host| = %g (max |y| %g)", worst, spread)
	}
	t.Logf("max |device - host| = %g, max |y| = %g", worst, spread)
}

func makeLayers(n int) []hfLayer {
	r := rand.New(rand.NewPCG(13, 7))
	ls := make([]hfLayer, n)
	for i := range ls {
		ls[i] = hfLayer{
			fc1w: randVals(r, udHidden*udDim, 1/math.Sqrt(udDim)), fc1b: randVals(r, udHidden, 0.2),
			fc2w: randVals(r, udDim*udHidden, 1/math.Sqrt(udHidden)), fc2b: randVals(r, udDim, 0.2),
		}
	}
	return ls
}

var mlpArgs = []string{"--no-kernel-cache", "--workload", "mlp", "--biases", "--tokens", fmt.Sprint(udTokens),
	"--dim", fmt.Sprint(udDim), "--hidden", fmt.Sprint(udHidden), "--tiles", "4"}

func TestRunUserData(t *testing.T) {
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	dir := t.TempDir()
	layers := makeLayers(3)
	ck := filepath.Join(dir, "model.safetensors")
	writeCheckpoint(t, ck, layers)
	x := randVals(rand.New(rand.NewPCG(1, 2)), udTokens*udDim, 1)
	in := filepath.Join(dir, "features.npy")
	writeNpy(t, in, "<f4", []int{udTokens, udDim}, x)
	isBF16 := func(i int) bool { return i%2 == 1 }

	t.Run("one layer", func(t *testing.T) {
		// Layer 1 is stored in BF16.
		out := filepath.Join(dir, "y1.npy")
		args := append([]string{"run"}, mlpArgs...)
		args = append(args, "--weights", ck, "--weights-prefix", "vision_model.encoder.layers.1.mlp.", "--input", in, "--output", out)
		code, stdout, errs := ipu(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
		}
		m := metricsOf(t, strings.TrimSpace(stdout))
		if m["data"] != "user" || m["numericalTest"] != "PASS" {
			t.Fatalf("metrics %v", m)
		}
		a := readNpy(t, out)
		if a.DType != "<f4" || fmt.Sprint(a.Shape) != fmt.Sprint([]int{udTokens, udDim}) {
			t.Fatalf("output %s %v", a.DType, a.Shape)
		}
		compareHost(t, a.Data, hostMLP(x, layers[1:2], func(int) bool { return true }))
	})

	t.Run("two blocks f16 output batch input", func(t *testing.T) {
		out := filepath.Join(dir, "y2.npy")
		in3 := filepath.Join(dir, "features3.npy")
		writeNpy(t, in3, "<f2", []int{1, udTokens, udDim}, x)
		args := append([]string{"run"}, mlpArgs...)
		args = append(args, "--blocks", "2", "--weights", ck, "--weights-prefix", "vision_model.encoder.layers.",
			"--input", in3, "--output", out, "--output-dtype", "f16")
		code, stdout, errs := ipu(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
		}
		if m := metricsOf(t, strings.TrimSpace(stdout)); m["data"] != "user" || m["numericalTest"] != "PASS" {
			t.Fatalf("metrics %v", m)
		}
		a := readNpy(t, out)
		if a.DType != "<f2" || fmt.Sprint(a.Shape) != fmt.Sprint([]int{1, udTokens, udDim}) {
			t.Fatalf("output %s %v", a.DType, a.Shape)
		}
		compareHost(t, a.Data, hostMLP(x, layers[:2], isBF16))
	})

	t.Run("seeded", func(t *testing.T) {
		code, stdout, errs := ipu(t, append([]string{"run"}, mlpArgs...)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		if m := metricsOf(t, strings.TrimSpace(stdout)); m["data"] != "seeded" {
			t.Fatalf("metrics %v", m)
		}
	})

	t.Run("package is code", func(t *testing.T) {
		pkg := filepath.Join(dir, "mlp.ipuexe")
		args := append([]string{"build"}, mlpArgs...)
		if code, _, errs := ipu(t, append(args, "-o", pkg)...); code != 0 {
			t.Fatal(errs)
		}
		code, stdout, errs := ipu(t, "inspect", pkg)
		if code != 0 {
			t.Fatal(errs)
		}
		flat := strings.Join(strings.Fields(stdout), " ")
		for _, want := range []string{
			"host tensors",
			"input x f16 [20 32]",
			"weight block0.fc1.weight f16 [32 48] checkpoint fc1.weight [48 32]",
			"weight block0.fc2.bias f16 [32] checkpoint fc2.bias [32]",
			"output y f16 [20 32]",
		} {
			if !strings.Contains(flat, want) {
				t.Errorf("inspect lacks %q:\n%s", want, stdout)
			}
		}
		out := filepath.Join(dir, "y0.npy")
		code, stdout, errs = ipu(t, "run", pkg, "--weights", ck, "--weights-prefix", "vision_model.encoder.layers.0.mlp.", "--input", in, "--output", out)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, errs)
		}
		compareHost(t, readNpy(t, out).Data, hostMLP(x, layers[:1], func(int) bool { return false }))
		// The package is not touched by --output naming it.
		if code, _, errs := ipu(t, "run", pkg, "--output", pkg); code == 0 || !strings.Contains(errs, "would overwrite the input") {
			t.Fatalf("--output over the package: exit %d %s", code, errs)
		}
	})
}

// TestRunUserDataErrors: every bad-input case of the user-data flags,
// with its message; nothing is run or written.
func TestRunUserDataErrors(t *testing.T) {
	dir := t.TempDir()
	layers := makeLayers(1)
	ck := filepath.Join(dir, "model.safetensors")
	writeCheckpoint(t, ck, layers)
	good := filepath.Join(dir, "x.npy")
	writeNpy(t, good, "<f4", []int{udTokens, udDim}, make([]float32, udTokens*udDim))
	wrong := filepath.Join(dir, "wrong.npy")
	writeNpy(t, wrong, "<f4", []int{udTokens, udDim + 1}, make([]float32, udTokens*(udDim+1)))
	hard := filepath.Join(dir, "hard.npy")
	if err := os.Link(good, hard); err != nil {
		t.Fatal(err)
	}
	sym := filepath.Join(dir, "sym.npy")
	os.Symlink(ck, sym)
	ckb, _ := os.ReadFile(ck)
	trunc := filepath.Join(dir, "trunc.safetensors")
	os.WriteFile(trunc, ckb[:len(ckb)-10], 0o644)
	big := filepath.Join(dir, "big.safetensors")
	l := layers[0]
	fc1 := append([]float32(nil), l.fc1w...)
	fc1[0], fc1[1], fc1[2] = 1e6, 1e-9, -1e-9
	b, _ := safetensors.Marshal([]safetensors.Entry{
		{Name: "fc1.weight", DType: "F32", Shape: []int{udHidden, udDim}, Values: fc1},
		{Name: "fc1.bias", DType: "F32", Shape: []int{udHidden}, Values: l.fc1b},
		{Name: "fc2.weight", DType: "F32", Shape: []int{udDim, udHidden}, Values: l.fc2w},
		{Name: "fc2.bias", DType: "F32", Shape: []int{udDim}, Values: l.fc2b}})
	os.WriteFile(big, b, 0o644)
	shape := filepath.Join(dir, "shape.safetensors")
	b, _ = safetensors.Marshal([]safetensors.Entry{{Name: "fc1.weight", DType: "F32", Shape: []int{udDim, udHidden}, Values: l.fc1w}})
	os.WriteFile(shape, b, 0o644)
	ints := filepath.Join(dir, "ints.safetensors")
	hdr := fmt.Sprintf(`{"fc1.weight":{"dtype":"I32","shape":[%d,%d],"data_offsets":[0,%d]}}`, udHidden, udDim, 4*udHidden*udDim)
	b = append(append(binaryLen(len(hdr)), hdr...), make([]byte, 4*udHidden*udDim)...)
	os.WriteFile(ints, b, 0o644)
	out := filepath.Join(dir, "y.npy")
	P := "vision_model.encoder.layers.0.mlp."
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"missing tensor", []string{"--weights", ck, "--weights-prefix", "vision_model.encoder.layers.5.mlp."},
			`no tensor "vision_model.encoder.layers.5.mlp.fc1.weight" (F32/F16/BF16 [48 32], for block0.fc1.weight); the file has 5 tensors, none under "vision_model.encoder.layers.5.mlp."`},
		{"missing prefix hint", []string{"--weights", ck, "--weights-prefix", "vision_model.encoder.layers."},
			`no tensor "vision_model.encoder.layers.fc1.weight" (F32/F16/BF16 [48 32], for block0.fc1.weight); "vision_model.encoder.layers.0.mlp.fc1.weight" exists: one block reads one layer, e.g. --weights-prefix vision_model.encoder.layers.0.mlp.`},
		{"wrong shape", []string{"--weights", shape},
			`tensor "fc1.weight": shape [32 48], the workload needs [48 32] (out x in; workload block0.fc1.weight)`},
		{"wrong dtype", []string{"--weights", ints}, `tensor "fc1.weight": dtype I32, want F32, F16 or BF16`},
		{"truncated", []string{"--weights", trunc, "--weights-prefix", P}, "(truncated?)"},
		{"not a file", []string{"--weights", filepath.Join(dir, "nope.safetensors")}, "no such file"},
		{"strict", []string{"--weights", big, "--strict"}, `tensor "fc1.weight": 1 values overflow f16 (|x| > 65504) and 2 nonzero values flush to zero (--strict)`},
		{"input shape", []string{"--weights", ck, "--weights-prefix", P, "--input", wrong},
			"shape [20 33] (<f4), the workload needs [20 32] (tokens x dim) or [1 20 32] (batch x tokens x dim)"},
		{"input not npy", []string{"--input", ck}, "not a .npy file"},
		{"output is input", []string{"--input", good, "--output", good}, "would overwrite the input"},
		{"output hardlink of input", []string{"--input", good, "--output", hard}, "would overwrite the input"},
		{"output symlink to weights", []string{"--weights", ck, "--weights-prefix", P, "--output", sym}, "would overwrite the input"},
		{"output dtype", []string{"--output", out, "--output-dtype", "f64"}, `--output-dtype "f64": want f32 or f16`},
		{"prefix alone", []string{"--weights-prefix", P}, "given without --weights"},
		{"output dir missing", []string{"--output", filepath.Join(dir, "no", "y.npy")}, "does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{"run"}, mlpArgs...), c.args...)
			code, _, errs := ipu(t, args...)
			if code == 0 || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stderr %q, want %q", code, errs, c.want)
			}
			if strings.Contains(errs, "panic") {
				t.Fatal(errs)
			}
		})
	}
	// Without biases in the workload, a checkpoint bias is refused.
	args := []string{"run", "--no-kernel-cache", "--workload", "mlp", "--tokens", "20", "--dim", "32", "--hidden", "48", "--tiles", "4", "--weights", ck, "--weights-prefix", P}
	if code, _, errs := ipu(t, args...); code == 0 || !strings.Contains(errs, `has "vision_model.encoder.layers.0.mlp.fc1.bias" but the workload has no biases: build with --biases`) {
		t.Fatalf("bias: exit %d %s", code, errs)
	}
	// --weights on the gemm workload.
	if code, _, errs := ipu(t, "run", "--workload", "gemm", "--m", "16", "--k", "16", "--n", "16", "--tiles", "4", "--weights", ck); code == 0 || !strings.Contains(errs, "--weights reads the MLP's fc1/fc2 tensors and the encoder layer's") {
		t.Fatalf("gemm: exit %d %s", code, errs)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a refused run wrote its output")
	}
	if got, _ := os.ReadFile(good); len(got) == 0 {
		t.Fatal("input damaged")
	}
}

func binaryLen(n int) []byte {
	b := make([]byte, 8)
	for i := 0; i < 8; i++ {
		b[i] = byte(uint64(n) >> (8 * i))
	}
	return b
}

// TestRunUserDataWarning: values that overflow or flush are a warning
// naming the tensor and the counts (without --strict), and the run goes on.
func TestRunUserDataWarning(t *testing.T) {
	t.Setenv("IPUSTACK_DEVICE_LOCK", filepath.Join(t.TempDir(), "lock"))
	dir := t.TempDir()
	x := make([]float32, udTokens*udDim)
	for i := range x {
		x[i] = 0.5
	}
	x[0], x[1] = 1e-9, 1e5
	in := filepath.Join(dir, "x.npy")
	writeNpy(t, in, "<f4", []int{udTokens, udDim}, x)
	args := append(append([]string{"run"}, mlpArgs...), "--input", in)
	_, _, errs := ipu(t, args...)
	if !strings.Contains(errs, "values changed by rounding to the device's f16") || !strings.Contains(errs, "tensor=x overflow=1 flushed_to_zero=1") {
		t.Fatalf("no warning:\n%s", errs)
	}
}
