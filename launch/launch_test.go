package launch

import (
	"context"
	"strings"
	"testing"

	"github.com/ipustack/ipustack/graph"
	"github.com/ipustack/ipustack/ipuexe"
)

// A package that does not describe itself (written before RunInfo, or by
// another tool) is refused with a clear error before anything runs, and so
// is one whose output has no layout.
func TestRunRefusesUndescribedPackage(t *testing.T) {
	g, err := graph.Preset("gemm", graph.Flags{Gemm: graph.GemmConfig{M: 16, K: 16, N: 16}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), &ipuexe.Package{}, g, Options{})
	if err == nil || !strings.Contains(err.Error(), "the package does not describe itself") {
		t.Fatalf("got %v", err)
	}
	pkg := &ipuexe.Package{Run: ipuexe.RunInfo{Workload: "gemm-f16-m16-k16-n16"},
		Outputs: []ipuexe.Binding{{Name: "y", DType: ipuexe.F16, Shape: []uint32{256}, TensorShape: []uint32{16, 16}}}}
	_, err = Run(context.Background(), pkg, g, Options{})
	if err == nil || !strings.Contains(err.Error(), `host binding "y": no layout`) {
		t.Fatalf("got %v", err)
	}
}
