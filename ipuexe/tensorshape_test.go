package ipuexe

import (
	"strings"
	"testing"

	"github.com/ipustack/ipustack/ipu21"
)

// TestTensorShape: the recorded host tensor shape round-trips, shows in the
// summary, is checked against the packed layout, and a package without it
// (as written before the field existed) still reads with it nil.
func TestTensorShape(t *testing.T) {
	p := fullPackage()
	p.Weights[0].TensorShape = []uint32{60, 30} // padded to the [64 32] layout
	p.Weights[0].Layout = nil
	got, err := Read(mustMarshal(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if d := diff(p, got); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
	if s := Summary(got); !strings.Contains(s, "w f16 [64 32] (tensor [60 30]): 4096 bytes") {
		t.Fatalf("summary:\n%s", s)
	}
	before := fullPackage()
	for _, bs := range [][]Binding{before.Inputs, before.Weights, before.Outputs} {
		for i := range bs {
			bs[i].TensorShape, bs[i].Layout = nil, nil
		}
	}
	old, err := Read(mustMarshal(t, before))
	if err != nil || old.Weights[0].TensorShape != nil {
		t.Fatalf("package without tensor shapes: %v %v", err, old.Weights[0].TensorShape)
	}
	p.Weights[0].TensorShape = []uint32{65, 32}
	if err := p.Validate(ipu21.IPU21()); err == nil || !strings.Contains(err.Error(), `weights[0] "w": tensor shape [65 32] does not fit the 4096-byte packed layout`) {
		t.Fatalf("validate: %v", err)
	}
}
