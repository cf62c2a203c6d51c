package kernels

import (
	"reflect"
	"testing"
)

// TestSpecs checks that every spec names a registered kernel, that its
// parameters resolve, and that SpecOf recovers it from name and params,
// also from the resolved (defaults filled) set.
func TestSpecs(t *testing.T) {
	specs := []Spec{
		Gemm{K: 64, C: 32, R: 20}, Gemm{K: 64, C: 32, R: 20, Conservative: true},
		Copy{N: 64}, ReduceAdd{N: 16, Parts: 3}, Gelu{N: 16}, Gelu{N: 16, Precise: true},
		AddBias{Rows: 8, R: 4, First: 1}, UnpackOut{R: 5, C: 24},
	}
	for _, s := range specs {
		k, err := Lookup(s.Name())
		if err != nil {
			t.Fatal(err)
		}
		p, err := k.Resolve(s.Params())
		if err != nil {
			t.Fatalf("%T: %v", s, err)
		}
		for _, q := range []Params{s.Params(), p} {
			got, ok := SpecOf(s.Name(), q)
			if !ok || !reflect.DeepEqual(got, s) {
				t.Errorf("SpecOf(%s, %s) = %#v, %v; want %#v", s.Name(), q, got, ok, s)
			}
		}
	}
	if _, ok := SpecOf(UnpackOutF16, Params{"r": 5, "c": 24, "stride": 28}); ok {
		t.Error("SpecOf accepted an unpack row stride")
	}
	if _, ok := SpecOf(CopyF16, Params{"n": 8, "x": 1}); ok {
		t.Error("SpecOf accepted an unknown parameter")
	}
}
