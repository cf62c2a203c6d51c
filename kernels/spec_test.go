package kernels

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// specTable is a valid call of every registered kernel, some kernels in
// several forms.
var specTable = []Spec{
	Gemm{K: 64, C: 32, R: 20}, Gemm{K: 64, C: 32, R: 20, Conservative: true},
	Gemm{K: 64, C: 24, R: 20, F32Acc: true}, Gemm{K: 64, C: 24, R: 20, Conservative: true, F32Acc: true},
	Copy{N: 64}, ReduceAdd{N: 16, Parts: 3}, Gelu{N: 16}, Gelu{N: 16, Precise: true},
	AddBias{Rows: 8, R: 4, First: 1},
	UnpackOut{R: 5, C: 24}, UnpackOut{R: 5, C: 24, Stride: 28}, UnpackOut{R: 5, C: 24, F32: true}, UnpackOut{R: 5, C: 22, Stride: 32, F32: true},
	Fill{Bytes: 64}, PackLeft{R: 7, K: 40}, PackLeft{R: 7, K: 40, Stride: 44},
	Add{N: 64}, LayerNorm{Rows: 2, Width: 64}, LayerNorm{Rows: 2, Width: 64, Residual: true},
	LayerNorm{Rows: 2, Width: 64, Residual: true, Panels: true},
	Softmax{Rows: 4, Keys: 32, DK: 72}, Softmax{Rows: 4, Keys: 32, Valid: 30, DK: 1, Stats: true},
	Softmax{Rows: 4, Keys: 32, Valid: 30, DK: 1, Panels: true},
	AttentionMerge{Rows: 4, Values: 72}, AttentionMerge{Rows: 4, Values: 72, Mode: MergeFinal, Bacc32: true},
}

// TestSpecs checks that every registered kernel has a spec, that each
// spec's parameters resolve, and that SpecOf recovers it from name and
// params, also from the resolved (defaults filled) set.
func TestSpecs(t *testing.T) {
	var named []string
	for _, s := range specTable {
		if !slices.Contains(named, s.Name()) {
			named = append(named, s.Name())
		}
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
		if s.CodeBytes() <= 0 {
			t.Errorf("%#v: CodeBytes %d", s, s.CodeBytes())
		}
	}
	slices.Sort(named)
	if !slices.Equal(named, Names()) {
		t.Errorf("kernels with a spec in the table %v, registered %v", named, Names())
	}
	rejected := []struct {
		name string
		p    Params
	}{
		{CopyF16, Params{"n": 8, "x": 1}},                   // a parameter the kernel does not have
		{GeluF16, Params{"n": 8, "precise": 2}},             // not a flag
		{LayerNormF16, Params{"rows": 1, "residual": 3}},    // not a flag
		{SoftmaxF16, Params{"rows": 1, "panels": 2}},        // not a flag
		{GemmF16, Params{"k": 16, "c": 16, "r": 4, "n": 1}}, // unknown parameter
		{"no_such_kernel", Params{}},
	}
	for _, c := range rejected {
		if s, ok := SpecOf(c.name, c.p); ok {
			t.Errorf("SpecOf(%s, %s) accepted: %#v", c.name, c.p, s)
		}
	}
}

// TestAccessOf: the contract of a spec is the registry's operand records
// evaluated for its parameters, in record order, with the register that
// carries each operand.
func TestAccessOf(t *testing.T) {
	cases := []struct {
		s    Spec
		want []Access
	}{
		{Gemm{K: 32, C: 16, R: 4}, []Access{
			{Operand: "out", Reg: "$m2", Bytes: 4 * 16 * 2, Written: true},
			{Operand: "left", Reg: "$m3", Bytes: 4 * 32 * 2},
			{Operand: "right", Reg: "$m4", Bytes: 32 * 16 * 2},
		}},
		{AddBias{Rows: 8, R: 4, First: 1}, []Access{
			{Operand: "out", Reg: "$m2", Bytes: 8 * 32, Written: true, ReadFirst: true},
			{Operand: "in", Reg: "$m3", Bytes: 3 * 32},
		}},
		{UnpackOut{R: 2, C: 4}, []Access{
			{Operand: "out", Reg: "$m2", Bytes: 2 * 4 * 2, Written: true},
			{Operand: "in", Reg: "$m3", Bytes: 2 * 32},
		}},
		{UnpackOut{R: 2, C: 4, Stride: 8}, []Access{
			{Operand: "out", Reg: "$m2", Bytes: 2 * (8 + 4), Written: true, Gaps: true},
			{Operand: "in", Reg: "$m3", Bytes: 2 * 32},
		}},
		{Fill{Bytes: 64}, []Access{{Operand: "dst", Reg: "$m2", Bytes: 64, Written: true}}},
		{LayerNorm{Rows: 2, Width: 8}, []Access{
			{Operand: "out", Reg: "$m2", Bytes: 32, Written: true},
			{Operand: "x", Reg: "$m3", Bytes: 32},
			{Operand: "scale", Reg: "$m4", Bytes: 16},
			{Operand: "bias", Reg: "$m5", Bytes: 16},
			{Operand: "stats", Reg: "$m6", Bytes: 16, Written: true},
			{Operand: "r", Reg: "$m7", Bytes: 0},
			{Operand: "sum", Reg: "$m8", Bytes: 0, Written: true},
		}},
	}
	for _, c := range cases {
		got, err := AccessOf(c.s)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("AccessOf(%#v) = %+v, %v; want %+v", c.s, got, err, c.want)
		}
	}
	if _, err := AccessOf(Copy{N: 12}); err == nil {
		t.Error("AccessOf accepted parameters the kernel rejects")
	}
	// Every spec in the table has a contract for every operand.
	for _, s := range specTable {
		k, _ := Lookup(s.Name())
		acc, err := AccessOf(s)
		if err != nil || len(acc) != len(k.Operands) {
			t.Errorf("AccessOf(%#v): %d operands, %v; the record has %d", s, len(acc), err, len(k.Operands))
		}
	}
}

// Check accepts a spec the registry accepts and names the parameter of
// one it refuses.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want string // "" for accepted
	}{
		{Copy{N: 64}, ""},
		{Gemm{K: 240, C: 48, R: 232}, ""},
		{Copy{N: 0}, "n"},
		{Gemm{K: 240, C: 48, R: 0}, "r"},
		{Softmax{Rows: 8, Keys: 64, DK: 72}, ""},
		{Softmax{Rows: 8, Keys: 64}, "dk"},
		{Softmax{Rows: 300, Keys: 64, DK: 72}, "rows"},
	} {
		err := Check(c.spec)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%T %+v: %v", c.spec, c.spec, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%T %+v: error %v, want one naming %q", c.spec, c.spec, err, c.want)
		}
	}
}
