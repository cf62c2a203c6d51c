package driver

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/internal/npy"
	"github.com/ipustack/ipustack/internal/safetensors"
	"github.com/ipustack/ipustack/ipuexe"
)

func TestToDeviceCounts(t *testing.T) {
	v := []float32{1, 1e5, -1e6, 1e-9, 0, 0.1, 6e-8}
	r := toDevice(v)
	// 6e-8 is an f16 subnormal (the smallest is 5.96e-8): kept, not flushed.
	if r.Overflow != 2 || r.Flushed != 1 || r.NonFinite != 0 {
		t.Fatalf("%+v", r)
	}
	if v[0] != 1 || v[3] != 0 || v[6] == 0 {
		t.Fatalf("rounded %v", v)
	}
}

func TestCheckpointNames(t *testing.T) {
	r := Recipe{Workload: "mlp", Flags: graph.DefaultFlags()}
	r.Flags.MLP = graph.MLPConfig{Batch: 1, Tokens: 4, Dim: 8, Hidden: 16, Blocks: 2, Biases: true}
	ts, err := Tensors(r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range ts {
		got = append(got, tn.Role+":"+tn.Node+"="+tn.Checkpoint)
	}
	want := "input:x= weight:block0.fc1.weight=0.mlp.fc1.weight weight:block0.fc1.bias=0.mlp.fc1.bias " +
		"weight:block0.fc2.weight=0.mlp.fc2.weight weight:block0.fc2.bias=0.mlp.fc2.bias " +
		"weight:block1.fc1.weight=1.mlp.fc1.weight weight:block1.fc1.bias=1.mlp.fc1.bias " +
		"weight:block1.fc2.weight=1.mlp.fc2.weight weight:block1.fc2.bias=1.mlp.fc2.bias output:y="
	if strings.Join(got, " ") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
	if s := ts[1].CheckpointShape; s[0] != 16 || s[1] != 8 {
		t.Fatalf("fc1.weight checkpoint shape %v, want [16 8] (out x in)", s)
	}
}

func TestCheckTensorShapes(t *testing.T) {
	r := Recipe{Workload: "mlp", Flags: graph.DefaultFlags()}
	r.Flags.MLP = graph.MLPConfig{Batch: 1, Tokens: 4, Dim: 8, Hidden: 16, Blocks: 1}
	pkg := &ipuexe.Package{Inputs: []ipuexe.Binding{{Name: "x", TensorShape: []uint32{4, 8}}}}
	if err := CheckTensorShapes(pkg, r); err != nil {
		t.Fatal(err)
	}
	pkg.Inputs[0].TensorShape = []uint32{4, 9}
	if err := CheckTensorShapes(pkg, r); err == nil || !strings.Contains(err.Error(), `package binds "x" as [4 9], its recipe's workload has [4 8]`) {
		t.Fatalf("err = %v", err)
	}
	pkg.Inputs[0].TensorShape = nil // an old package: nothing recorded, nothing to check
	if err := CheckTensorShapes(pkg, r); err != nil {
		t.Fatal(err)
	}
}

func TestTranspose(t *testing.T) {
	got := transpose([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	want := []float32{1, 4, 2, 5, 3, 6}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%v", got)
		}
	}
}

// encoderRecipe is a small encoder-layer workload of the given layers.
func encoderRecipe(layers int) Recipe {
	f := graph.DefaultFlags()
	f.Encoder = graph.EncoderFlags(graph.MLPConfig{Batch: 1, Tokens: 5, Dim: 8, Hidden: 12, Blocks: 1}, 2, layers)
	return Recipe{Workload: "siglip-encoder-layer", Flags: f, Tiles: 4}
}

// writeEncoderCheckpoint writes every parameter of r's graph under prefix
// (layer i as prefix + "<i>." + its Hugging Face name, or, with drop, the
// names without the layer index for layer 0 only) with values exact in f16
// that say which tensor they are; it returns the values by node name.
func writeEncoderCheckpoint(t *testing.T, r Recipe, path, prefix string, drop bool) map[string][]float32 {
	t.Helper()
	g, err := graph.Preset(r.Workload, r.Flags)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]float32{}
	var es []safetensors.Entry
	for k, n := range g.Parameters() {
		v := make([]float32, n.Shape.Elements())
		for i := range v {
			v[i] = float32(k) + float32(i%64)/64 // exact in f16
		}
		name := prefix + n.Name
		if drop {
			_, rest, _ := strings.Cut(n.Name, ".")
			name = prefix + rest
		}
		es = append(es, safetensors.Entry{Name: name, DType: "F32", Shape: []int(n.Shape), Values: v})
		want[n.Name] = v
	}
	b, err := safetensors.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return want
}

// The encoder layer's parameters are read by their Hugging Face names and
// shapes (out x in, as the graph holds them: no transpose): layer i under
// prefix + "<i>.", or, for one layer, under a prefix that names the layer.
func TestLoadEncoderWeights(t *testing.T) {
	dir := t.TempDir()
	const prefix = "vision_model.encoder.layers."
	r := encoderRecipe(2)
	ts, err := Tensors(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range ts {
		if tn.Role == "weight" && (tn.Checkpoint != tn.Node || !slices.Equal(tn.CheckpointShape, tn.Shape)) {
			t.Errorf("%s: checkpoint %s %v, want its own name and shape", tn.Node, tn.Checkpoint, tn.CheckpointShape)
		}
	}
	for _, c := range []struct {
		name   string
		r      Recipe
		prefix string // the checkpoint's
		read   string // --weights-prefix
		drop   bool
	}{
		{"two layers", r, prefix, prefix, false},
		{"one layer by index", encoderRecipe(1), prefix, prefix, false},
		{"one layer named by the prefix", encoderRecipe(1), prefix + "7.", prefix + "7.", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".safetensors")
			want := writeEncoderCheckpoint(t, c.r, path, c.prefix, c.drop)
			got := map[string][]float32{}
			if err := LoadWeights(c.r, path, c.read, true, quiet, got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("read %d tensors, want %d", len(got), len(want))
			}
			for n, v := range want {
				if !slices.Equal(got[n], v) {
					t.Errorf("%s: values differ", n)
				}
			}
		})
	}
	// A missing layer names what was tried; a wrong shape names both.
	path := filepath.Join(dir, "one.safetensors")
	writeEncoderCheckpoint(t, encoderRecipe(1), path, prefix, false)
	err = LoadWeights(r, path, prefix, true, quiet, map[string][]float32{})
	if err == nil || !strings.Contains(err.Error(), `no tensor "vision_model.encoder.layers.1.layer_norm1.weight" (F32/F16/BF16 [8], for 1.layer_norm1.weight)`) {
		t.Errorf("missing layer: %v", err)
	}
	err = LoadWeights(encoderRecipe(1), path, prefix+"3.", true, quiet, map[string][]float32{})
	if err == nil || !strings.Contains(err.Error(), `no tensor "vision_model.encoder.layers.3.0.layer_norm1.weight" or "vision_model.encoder.layers.3.layer_norm1.weight"`) {
		t.Errorf("missing one layer: %v", err)
	}
	wide := encoderRecipe(1)
	wide.Flags.Encoder.Hidden = 16
	err = LoadWeights(wide, path, prefix, true, quiet, map[string][]float32{})
	if err == nil || !strings.Contains(err.Error(), `tensor "vision_model.encoder.layers.0.mlp.fc1.weight": shape [12 8], the workload needs [16 8]`) {
		t.Errorf("wrong shape: %v", err)
	}
}

// The encoder layer's input is [batch, tokens, dim]; one batch item may be
// given as [tokens, dim].
func TestLoadEncoderInput(t *testing.T) {
	dir := t.TempDir()
	r := encoderRecipe(1)
	for _, c := range []struct {
		shape []int
		want  string // "" for accepted
	}{
		{[]int{1, 5, 8}, ""},
		{[]int{5, 8}, ""},
		{[]int{5, 9}, "shape [5 9] (<f4), the workload needs [1 5 8] (batch x tokens x dim) or [5 8] (tokens x dim)"},
		{[]int{2, 5, 8}, "the workload needs [1 5 8]"},
	} {
		path := filepath.Join(dir, fmt.Sprint(c.shape)+".npy")
		n := 1
		for _, d := range c.shape {
			n *= d
		}
		writeTestNpy(t, path, c.shape, make([]float32, n))
		got := map[string][]float32{}
		shape, err := LoadInput(r, path, true, quiet, got)
		switch {
		case c.want == "" && (err != nil || !slices.Equal(shape, c.shape) || len(got["x"]) != 40):
			t.Errorf("%v: %v %v, %d values", c.shape, err, shape, len(got["x"]))
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: error %v, want %q", c.shape, err, c.want)
		}
	}
}

func writeTestNpy(t *testing.T, path string, shape []int, v []float32) {
	t.Helper()
	var b bytes.Buffer
	if err := npy.Write(&b, "<f4", shape, v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
