package safetensors

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func mustMarshal(t testing.TB, es []Entry) []byte {
	b, err := Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func open(b []byte) (*File, error) { return New(bytes.NewReader(b), int64(len(b)), "ck.safetensors") }

func TestRoundTrip(t *testing.T) {
	b := mustMarshal(t, []Entry{
		{Name: "a.weight", DType: "F32", Shape: []int{2, 3}, Values: []float32{1, 2, 3, 4, 5, -6.5}},
		{Name: "a.bias", DType: "BF16", Shape: []int{3}, Values: []float32{1, -2, 0.5}},
		{Name: "b", DType: "F16", Shape: []int{2}, Values: []float32{0.25, 65504}},
	})
	f, err := open(b)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]float32{"a.weight": {1, 2, 3, 4, 5, -6.5}, "a.bias": {1, -2, 0.5}, "b": {0.25, 65504}} {
		tn := f.Tensor(name)
		got, err := f.Float32s(tn)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %v", name, got)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s[%d] = %v want %v", name, i, got[i], want[i])
			}
		}
	}
	if s := f.Tensor("a.weight").Shape; len(s) != 2 || s[0] != 2 || s[1] != 3 {
		t.Fatalf("shape %v", s)
	}
}

func TestBF16Rounding(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{{1, 0x3f80}, {-2, 0xc000}, {1.00390625, 0x3f80}, {1.01171875, 0x3f82}} {
		if got := BF16(c.in); got != c.want {
			t.Errorf("BF16(%v) = %#x want %#x", c.in, got, c.want)
		}
	}
}

func withHeader(h string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	b = append(b, h...)
	return append(b, make([]byte, data)...)
}

func TestBad(t *testing.T) {
	good := mustMarshal(t, []Entry{{Name: "w", DType: "F32", Shape: []int{4}, Values: make([]float32, 4)}})
	huge := binary.LittleEndian.AppendUint64(nil, 1<<62)
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "0 bytes, shorter than the 8-byte header length"},
		{"huge header", append(huge, "{}"...), "over the 104857600-byte limit"},
		{"header past end", binary.LittleEndian.AppendUint64(nil, 100), "runs past the end of the file"},
		{"truncated data", good[:len(good)-1], `tensor "w": data_offsets [0, 16] outside the 15 data bytes (truncated?)`},
		{"not json", withHeader("{nope", 0), "header JSON"},
		{"not object", withHeader("[1,2]", 0), "does not start with '{'"},
		{"trailing", withHeader(`{} {}`, 0), "data after the object"},
		{"no dtype", withHeader(`{"w":{"shape":[1],"data_offsets":[0,4]}}`, 4), `tensor "w": needs dtype, shape and data_offsets`},
		{"bad dtype", withHeader(`{"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}}`, 4), `unknown dtype "F17"`},
		{"three offsets", withHeader(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, 8), "data_offsets has 3 entries"},
		{"reversed", withHeader(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}`, 4), "outside the 4 data bytes"},
		{"negative dim", withHeader(`{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "dimension -1 out of range"},
		{"lying shape", withHeader(`{"w":{"dtype":"F32","shape":[1000000,1000000,1000000],"data_offsets":[0,4]}}`, 4), "needs more bytes than the file holds"},
		{"size mismatch", withHeader(`{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 8), "F32 [2] needs 8 bytes, data_offsets give 4"},
		{"overlap", withHeader(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), `tensors "a" [0, 8) and "b" [4, 8) overlap`},
		{"bad metadata", withHeader(`{"__metadata__":{"a":1}}`, 0), "__metadata__ is not a map of strings"},
		{"entry not object", withHeader(`{"w":5}`, 0), `tensor "w"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := open(c.file)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "ck.safetensors") {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestNotFloat(t *testing.T) {
	f, err := open(withHeader(`{"w":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}}`, 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Float32s(f.Tensor("w")); err == nil || !strings.Contains(err.Error(), `tensor "w": dtype I32: not a floating-point tensor`) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzNew(f *testing.F) {
	f.Add(mustMarshal(f, []Entry{{Name: "w", DType: "F32", Shape: []int{2}, Values: []float32{1, 2}},
		{Name: "b", DType: "BF16", Shape: []int{1}, Values: []float32{3}}}))
	f.Add(withHeader(`{"__metadata__":{"format":"pt"},"w":{"dtype":"F16","shape":[2,1],"data_offsets":[0,4]}}`, 4))
	f.Add(withHeader(`{}`, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := open(b)
		if err != nil {
			return
		}
		for _, tn := range sf.Tensors() {
			if tn.Begin < 8 || tn.End > int64(len(b)) || tn.End < tn.Begin {
				t.Fatalf("accepted out-of-range tensor %+v", tn)
			}
			v, err := sf.Float32s(tn)
			if err == nil && int64(len(v)) != tn.Elements() {
				t.Fatalf("%q: %d values, shape %v", tn.Name, len(v), tn.Shape)
			}
		}
	})
}
