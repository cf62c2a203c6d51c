package npy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/x448/float16"
)

// Magic opens every .npy file.
const Magic = "\x93NUMPY"

// MaxHeader bounds the header dict.
const MaxHeader = 1 << 20

// Array is a decoded array: its dtype ("<f2" or "<f4"), shape and values
// widened to float32 (exact for both).
type Array struct {
	DType string
	Shape []int
	Data  []float32
}

// Read decodes an array from r; size is the bytes r holds (the data
// length must match the shape exactly), or -1 if unknown.
func Read(r io.Reader, size int64) (*Array, error) {
	br := bufio.NewReader(r)
	var pre [8]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil {
		return nil, fmt.Errorf("not a .npy file: %d-byte preamble: %v", 8, err)
	}
	if string(pre[:6]) != Magic {
		return nil, errors.New(`not a .npy file: no "\x93NUMPY" magic`)
	}
	major, minor := pre[6], pre[7]
	var hlen uint64
	hdrStart := int64(10)
	switch major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, fmt.Errorf(".npy: truncated header length: %v", err)
		}
		hlen = uint64(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, fmt.Errorf(".npy: truncated header length: %v", err)
		}
		hlen = uint64(binary.LittleEndian.Uint32(b[:]))
		hdrStart = 12
	default:
		return nil, fmt.Errorf(".npy: format version %d.%d not supported (1.0, 2.0, 3.0)", major, minor)
	}
	if minor != 0 {
		return nil, fmt.Errorf(".npy: format version %d.%d not supported (1.0, 2.0, 3.0)", major, minor)
	}
	if hlen > MaxHeader {
		return nil, fmt.Errorf(".npy: header length %d over the %d-byte limit", hlen, MaxHeader)
	}
	if size >= 0 && int64(hlen) > size-hdrStart {
		return nil, fmt.Errorf(".npy: header length %d runs past the end of the file (%d bytes)", hlen, size)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf(".npy: truncated header: %v", err)
	}
	a, err := parseHeader(string(hdr))
	if err != nil {
		return nil, fmt.Errorf(".npy header: %w", err)
	}
	es := uint64(4)
	if a.DType == "<f2" {
		es = 2
	}
	need := es
	for _, d := range a.Shape {
		hi, lo := bits.Mul64(need, uint64(d))
		if hi != 0 || lo > math.MaxInt64/2 {
			return nil, fmt.Errorf(".npy: shape %v is too large", a.Shape)
		}
		need = lo
	}
	if size >= 0 {
		if have := uint64(size - hdrStart - int64(hlen)); have != need {
			return nil, fmt.Errorf(".npy: %s %v needs %d data bytes, the file has %d (truncated or padded?)", a.DType, a.Shape, need, have)
		}
	}
	if need > 1<<34 {
		return nil, fmt.Errorf(".npy: shape %v is too large (%d bytes)", a.Shape, need)
	}
	// Read in bounded pieces so that an unknown-size stream that lies
	// about its shape fails at its end rather than at a huge allocation.
	raw := make([]byte, 0, min(need, 1<<20))
	buf := make([]byte, 1<<16)
	for uint64(len(raw)) < need {
		k := min(uint64(len(buf)), need-uint64(len(raw)))
		if _, err := io.ReadFull(br, buf[:k]); err != nil {
			return nil, fmt.Errorf(".npy: %s %v needs %d data bytes, the file ends after %d", a.DType, a.Shape, need, len(raw))
		}
		raw = append(raw, buf[:k]...)
	}
	if size < 0 {
		if _, err := br.ReadByte(); err == nil {
			return nil, fmt.Errorf(".npy: data past the %d bytes %s %v needs", need, a.DType, a.Shape)
		}
	}
	a.Data = make([]float32, need/es)
	for i := range a.Data {
		if es == 2 {
			a.Data[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		} else {
			a.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	return a, nil
}

// parseHeader parses the header dict: exactly the keys descr,
// fortran_order and shape, in any order, with Python literal values.
func parseHeader(h string) (*Array, error) {
	p := &parser{s: strings.TrimRight(h, " \n")}
	a := &Array{}
	seen := map[string]bool{}
	p.space()
	if !p.eat('{') {
		return nil, errors.New("not a dict")
	}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("key %q twice", key)
		}
		seen[key] = true
		p.space()
		if !p.eat(':') {
			return nil, fmt.Errorf("key %q: no ':'", key)
		}
		p.space()
		switch key {
		case "descr":
			d, err := p.str()
			if err != nil {
				return nil, fmt.Errorf("descr: %w", err)
			}
			switch d {
			case "<f2", "<f4":
				a.DType = d
			case "|f2", "=f2", ">f2", ">f4", "=f4":
				return nil, fmt.Errorf("dtype %q: only little-endian '<f2' (float16) and '<f4' (float32) are read; save with arr.astype('<f4')", d)
			default:
				return nil, fmt.Errorf("dtype %q not supported: only '<f2' (float16) and '<f4' (float32); convert with arr.astype(np.float32)", d)
			}
		case "fortran_order":
			switch {
			case p.word("False"):
			case p.word("True"):
				return nil, errors.New("fortran_order True: only C-order arrays are read; save np.ascontiguousarray(arr)")
			default:
				return nil, errors.New("fortran_order: want True or False")
			}
		case "shape":
			if !p.eat('(') {
				return nil, errors.New("shape: not a tuple")
			}
			a.Shape = []int{}
			for {
				p.space()
				if p.eat(')') {
					break
				}
				n, err := p.int()
				if err != nil {
					return nil, fmt.Errorf("shape: %w", err)
				}
				a.Shape = append(a.Shape, n)
				p.space()
				if p.eat(',') {
					continue
				}
				p.space()
				if !p.eat(')') {
					return nil, errors.New("shape: want ',' or ')'")
				}
				break
			}
		default:
			return nil, fmt.Errorf("unknown key %q", key)
		}
		p.space()
		if p.eat(',') {
			continue
		}
		p.space()
		if !p.eat('}') {
			return nil, errors.New("want ',' or '}' after a value")
		}
		break
	}
	p.space()
	if p.i != len(p.s) {
		return nil, errors.New("data after the dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return nil, fmt.Errorf("no %q key", k)
		}
	}
	return a, nil
}

type parser struct {
	s string
	i int
}

func (p *parser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) word(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

func (p *parser) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", errors.New("want a quoted string")
	}
	q := p.s[p.i]
	j := strings.IndexByte(p.s[p.i+1:], q)
	if j < 0 {
		return "", errors.New("unterminated string")
	}
	s := p.s[p.i+1 : p.i+1+j]
	p.i += j + 2
	return s, nil
}

func (p *parser) int() (int, error) {
	j := p.i
	for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
		j++
	}
	if j == p.i {
		return 0, errors.New("want a dimension")
	}
	// NumPy may write 3L on Python 2.
	n, err := strconv.ParseInt(p.s[p.i:j], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("dimension %s out of range", p.s[p.i:j])
	}
	p.i = j
	if p.i < len(p.s) && p.s[p.i] == 'L' {
		p.i++
	}
	return int(n), nil
}

// Write encodes data with shape as a version 1.0 .npy of dtype "<f4" or
// "<f2" (rounded to nearest even) to w.
func Write(w io.Writer, dtype string, shape []int, data []float32) error {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != len(data) {
		return fmt.Errorf("npy: shape %v holds %d values, got %d", shape, n, len(data))
	}
	if dtype != "<f4" && dtype != "<f2" {
		return fmt.Errorf("npy: cannot write dtype %q", dtype)
	}
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	tuple := strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dtype, tuple)
	total := 10 + len(h) + 1
	h += strings.Repeat(" ", (64-total%64)%64) + "\n"
	out := make([]byte, 0, 10+len(h)+4*len(data))
	out = append(out, Magic...)
	out = append(out, 1, 0)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(h)))
	out = append(out, h...)
	for _, v := range data {
		if dtype == "<f2" {
			out = binary.LittleEndian.AppendUint16(out, float16.Fromfloat32(v).Bits())
		} else {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	_, err := w.Write(out)
	return err
}
