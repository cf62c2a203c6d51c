package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"sort"
	"strings"
)

// MaxHeader bounds the JSON header (Hugging Face's own reader allows 100 MB).
const MaxHeader = 100 << 20

// DType sizes, by the format's names.
var dtypeSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// Tensor is one header entry.
type Tensor struct {
	Name  string
	DType string
	Shape []int
	// Begin and End are absolute byte offsets in the file.
	Begin, End int64
}

// Elements is the product of the shape (1 for a scalar).
func (t *Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// File is an opened checkpoint.
type File struct {
	Name     string // for error messages
	Metadata map[string]string
	tensors  map[string]*Tensor
	r        io.ReaderAt
	closer   io.Closer
}

// Open opens and checks the header of the checkpoint path.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	sf, err := New(f, fi.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	sf.closer = f
	return sf, nil
}

// Close closes the underlying file (if Open opened it).
func (f *File) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// New reads the header of a checkpoint of size bytes from r; name is used in
// errors.
func New(r io.ReaderAt, size int64, name string) (*File, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s: not a valid safetensors file: "+format, append([]any{name}, a...)...)
	}
	if size < 8 {
		return nil, fail("%d bytes, shorter than the 8-byte header length", size)
	}
	var lb [8]byte
	if _, err := r.ReadAt(lb[:], 0); err != nil {
		return nil, fail("reading the header length: %v", err)
	}
	n := binary.LittleEndian.Uint64(lb[:])
	switch {
	case n > MaxHeader:
		return nil, fail("header length %d is over the %d-byte limit", n, MaxHeader)
	case n > uint64(size-8):
		return nil, fail("header length %d runs past the end of the file (%d bytes): truncated?", n, size)
	case n < 2:
		return nil, fail("header length %d is too short for a JSON object", n)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fail("reading the %d-byte header: %v", n, err)
	}
	if hdr[0] != '{' {
		return nil, fail("header does not start with '{'")
	}
	// Trailing spaces pad the header to alignment; allowed by the format.
	hdr = bytes.TrimRight(hdr, " ")
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if err := dec.Decode(&raw); err != nil {
		return nil, fail("header JSON: %v", err)
	}
	if dec.More() {
		return nil, fail("header JSON: data after the object")
	}
	dataStart := int64(8 + n)
	dataLen := size - dataStart
	f := &File{Name: name, tensors: map[string]*Tensor{}, r: r}
	names := make([]string, 0, len(raw))
	for k := range raw {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := raw[k]
		if k == "__metadata__" {
			if err := json.Unmarshal(v, &f.Metadata); err != nil {
				return nil, fail("__metadata__ is not a map of strings: %v", err)
			}
			continue
		}
		var e struct {
			DType   *string  `json:"dtype"`
			Shape   *[]int64 `json:"shape"`
			Offsets *[]int64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, fail("tensor %q: %v", k, err)
		}
		if e.DType == nil || e.Shape == nil || e.Offsets == nil {
			return nil, fail("tensor %q: needs dtype, shape and data_offsets", k)
		}
		es, ok := dtypeSize[*e.DType]
		if !ok {
			return nil, fail("tensor %q: unknown dtype %q", k, *e.DType)
		}
		if len(*e.Offsets) != 2 {
			return nil, fail("tensor %q: data_offsets has %d entries, want 2", k, len(*e.Offsets))
		}
		b, end := (*e.Offsets)[0], (*e.Offsets)[1]
		if b < 0 || end < b || end > dataLen {
			return nil, fail("tensor %q: data_offsets [%d, %d] outside the %d data bytes (truncated?)", k, b, end, dataLen)
		}
		t := &Tensor{Name: k, DType: *e.DType, Begin: dataStart + b, End: dataStart + end}
		bytesNeeded := uint64(es)
		for _, d := range *e.Shape {
			if d < 0 || d > math.MaxInt32 {
				return nil, fail("tensor %q: dimension %d out of range", k, d)
			}
			hi, lo := bits.Mul64(bytesNeeded, uint64(d))
			if hi != 0 || lo > uint64(dataLen) {
				return nil, fail("tensor %q: shape %v of %s needs more bytes than the file holds", k, *e.Shape, t.DType)
			}
			bytesNeeded = lo
			t.Shape = append(t.Shape, int(d))
		}
		if uint64(end-b) != bytesNeeded {
			return nil, fail("tensor %q: %s %v needs %d bytes, data_offsets give %d", k, t.DType, t.Shape, bytesNeeded, end-b)
		}
		f.tensors[k] = t
	}
	// Non-overlapping: sort by begin and check neighbours.
	ts := f.Tensors()
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Begin != ts[j].Begin {
			return ts[i].Begin < ts[j].Begin
		}
		return ts[i].Name < ts[j].Name
	})
	for i := 1; i < len(ts); i++ {
		if ts[i].Begin < ts[i-1].End {
			return nil, fail("tensors %q [%d, %d) and %q [%d, %d) overlap", ts[i-1].Name, ts[i-1].Begin-dataStart, ts[i-1].End-dataStart,
				ts[i].Name, ts[i].Begin-dataStart, ts[i].End-dataStart)
		}
	}
	return f, nil
}

// Tensors returns the tensors sorted by name.
func (f *File) Tensors() []*Tensor {
	out := make([]*Tensor, 0, len(f.tensors))
	for _, t := range f.tensors {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Tensor looks a tensor up by name (nil if absent).
func (f *File) Tensor(name string) *Tensor { return f.tensors[name] }

// ErrNotFloat is wrapped when a tensor's dtype is not F32, F16 or BF16.
var ErrNotFloat = errors.New("not a floating-point tensor")

// Float32s reads t (F32, F16 or BF16) as float32 values. F16 and BF16
// widen exactly.
func (f *File) Float32s(t *Tensor) ([]float32, error) {
	n := t.End - t.Begin
	raw := make([]byte, n) // bounded by the file size, checked in New
	if _, err := f.r.ReadAt(raw, t.Begin); err != nil {
		return nil, fmt.Errorf("%s: tensor %q: reading %d bytes at %d: %v", f.Name, t.Name, n, t.Begin, err)
	}
	switch t.DType {
	case "F32":
		out := make([]float32, n/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out, nil
	case "F16":
		out := make([]float32, n/2)
		for i := range out {
			out[i] = f16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
		}
		return out, nil
	case "BF16":
		out := make([]float32, n/2)
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: tensor %q: dtype %s: %w (want F32, F16 or BF16)", f.Name, t.Name, t.DType, ErrNotFloat)
}

// Names lists up to max tensor names with the given prefix, for hints.
func (f *File) Names(prefix string, max int) []string {
	var out []string
	for _, t := range f.Tensors() {
		if strings.HasPrefix(t.Name, prefix) {
			if len(out) == max {
				out = append(out, "...")
				break
			}
			out = append(out, t.Name)
		}
	}
	return out
}
