package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/x448/float16"
)

// Entry is one tensor to write: values rounded to DType (F32, F16, BF16).
type Entry struct {
	Name   string
	DType  string
	Shape  []int
	Values []float32
}

// Marshal encodes entries as a safetensors file (tensors in name order,
// header padded to 8 bytes). It is how tests and examples make checkpoints.
func Marshal(entries []Entry) ([]byte, error) {
	es := append([]Entry(nil), entries...)
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	hdr := map[string]any{}
	var data []byte
	for _, e := range es {
		n := 1
		for _, d := range e.Shape {
			n *= d
		}
		if n != len(e.Values) {
			return nil, fmt.Errorf("tensor %q: shape %v holds %d values, got %d", e.Name, e.Shape, n, len(e.Values))
		}
		begin := len(data)
		for _, v := range e.Values {
			switch e.DType {
			case "F32":
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
			case "F16":
				data = binary.LittleEndian.AppendUint16(data, float16.Fromfloat32(v).Bits())
			case "BF16":
				data = binary.LittleEndian.AppendUint16(data, BF16(v))
			default:
				return nil, fmt.Errorf("tensor %q: cannot write dtype %q", e.Name, e.DType)
			}
		}
		shape := e.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[e.Name] = map[string]any{"dtype": e.DType, "shape": shape, "data_offsets": []int{begin, len(data)}}
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		return nil, err
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(out, h...)
	return append(out, data...), nil
}

// BF16 rounds v to bfloat16 bits (round to nearest even; NaN stays NaN).
func BF16(v float32) uint16 {
	b := math.Float32bits(v)
	if v != v {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}
