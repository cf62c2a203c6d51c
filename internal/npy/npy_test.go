package npy

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

func enc(t testing.TB, dtype string, shape []int, data []float32) []byte {
	var b bytes.Buffer
	if err := Write(&b, dtype, shape, data); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func read(b []byte) (*Array, error) { return Read(bytes.NewReader(b), int64(len(b))) }

// TestHeaderBytes pins the header to what numpy.save writes for a (2, 3)
// float32 array (format 1.0, dict padded with spaces to 64 bytes, '\n').
func TestHeaderBytes(t *testing.T) {
	b := enc(t, "<f4", []int{2, 3}, make([]float32, 6))
	want := "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
		strings.Repeat(" ", 128-10-len("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")-1) + "\n"
	if string(b[:128]) != want || len(b) != 128+24 {
		t.Fatalf("header %q", b[:min(len(b), 128)])
	}
	b = enc(t, "<f2", []int{5}, make([]float32, 5))
	if !strings.Contains(string(b), "'shape': (5,), }") {
		t.Fatalf("1-d header %q", b)
	}
}

func TestRoundTrip(t *testing.T) {
	data := []float32{1, -2, 0.5, 65504, 3.25, -0}
	for _, dt := range []string{"<f4", "<f2"} {
		for _, shape := range [][]int{{6}, {2, 3}, {1, 2, 3}} {
			a, err := read(enc(t, dt, shape, data))
			if err != nil {
				t.Fatal(err)
			}
			if a.DType != dt || len(a.Shape) != len(shape) || len(a.Data) != 6 {
				t.Fatalf("%s %v: %+v", dt, shape, a)
			}
			for i := range data {
				if a.Data[i] != data[i] {
					t.Fatalf("%s: [%d] = %v", dt, i, a.Data[i])
				}
			}
			// Unknown size (a stream) reads the same.
			if _, err := Read(bytes.NewReader(enc(t, dt, shape, data)), -1); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// v2 and v3 headers: u32 header length.
func hv(major byte, h string, data int) []byte {
	b := []byte(Magic)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h)))
	}
	b = append(b, h...)
	return append(b, make([]byte, data)...)
}

func TestVersions(t *testing.T) {
	for _, v := range []byte{1, 2, 3} {
		a, err := read(hv(v, "{'shape': (2,), 'descr': '<f4', 'fortran_order': False}\n", 8))
		if err != nil || len(a.Data) != 2 {
			t.Fatalf("version %d: %v", v, err)
		}
	}
	// Scalar shape ().
	if a, err := read(hv(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }", 2)); err != nil || len(a.Data) != 1 {
		t.Fatalf("scalar: %v", err)
	}
}

func TestBad(t *testing.T) {
	ok := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }"
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "not a .npy file"},
		{"magic", []byte("PK\x03\x04zipfile"), `no "\x93NUMPY" magic`},
		{"version", hv(4, ok, 8), "format version 4.0 not supported"},
		{"header past end", hv(1, ok, 0)[:20], "runs past the end"},
		{"truncated data", hv(1, ok, 7), "needs 8 data bytes, the file has 7"},
		{"extra data", hv(1, ok, 9), "needs 8 data bytes, the file has 9"},
		{"fortran", hv(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8), "fortran_order True: only C-order"},
		{"f8", hv(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 8), `dtype "<f8" not supported`},
		{"big endian", hv(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 4), "only little-endian"},
		{"structured", hv(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4), "descr: want a quoted string"},
		{"no shape", hv(1, "{'descr': '<f4', 'fortran_order': False}", 0), `no "shape" key`},
		{"unknown key", hv(1, "{'descr': '<f4', 'x': 1}", 0), `unknown key "x"`},
		{"dup key", hv(1, "{'descr': '<f4', 'descr': '<f4'}", 0), `key "descr" twice`},
		{"negative dim", hv(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", 0), "shape: want a dimension"},
		{"huge dim", hv(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999,), }", 0), "dimension 99999999999 out of range"},
		{"lying shape", hv(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2000000000, 2000000000, 2000000000), }", 0), "too large"},
		{"not dict", hv(1, "[1]", 0), "not a dict"},
		{"junk after", hv(1, ok+"x", 8), "data after the dict"},
		{"unterminated", hv(1, "{'descr", 0), "unterminated string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := read(c.file)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	// A stream that lies about its size fails at its end.
	if _, err := Read(bytes.NewReader(hv(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 1000), }", 8)), -1); err == nil ||
		!strings.Contains(err.Error(), "the file ends after") {
		t.Fatalf("stream: %v", err)
	}
	if err := Write(&bytes.Buffer{}, "<f4", []int{3}, []float32{1}); err == nil {
		t.Fatal("Write accepted a wrong count")
	}
}

func FuzzRead(f *testing.F) {
	f.Add(enc(f, "<f4", []int{2, 3}, make([]float32, 6)))
	f.Add(enc(f, "<f2", []int{1, 2, 2}, make([]float32, 4)))
	f.Add(hv(3, "{'shape': (2,), 'descr': '<f4', 'fortran_order': False}\n", 8))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := read(b)
		if err != nil {
			return
		}
		n := 1
		for _, d := range a.Shape {
			n *= d
		}
		if n != len(a.Data) {
			t.Fatalf("shape %v, %d values", a.Shape, len(a.Data))
		}
		// What was read writes back and reads the same.
		a2, err := read(enc(t, a.DType, a.Shape, a.Data))
		if err != nil || len(a2.Data) != len(a.Data) {
			t.Fatalf("re-read: %v", err)
		}
	})
}
