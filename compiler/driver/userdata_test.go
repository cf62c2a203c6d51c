package driver

import (
	"strings"
	"testing"

	"github.com/ipustack/ipustack/graph"
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
