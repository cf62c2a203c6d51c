// Package envelope owns the file envelope ipustack's binary formats share
// (application packages, profiles): a 56-byte header — an 8-byte magic, a
// little-endian u32 format version, a u32 that must be zero, a u64 content
// length and the SHA-256 of the content — followed by the content. It
// writes headers, checks them with messages that say what is wrong, and
// names the other ipustack file kinds when a file is given to the wrong
// command.
package envelope

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// HeaderSize is the size of the header before the content.
const HeaderSize = 56

// Format describes one file format: its magic, the version this build
// reads and writes, and the errors its checks wrap (so callers keep their
// own errors.Is targets).
type Format struct {
	Magic   string // exactly 8 bytes
	Version uint32
	// Errors wrapped by Open, one per failure class.
	ErrMagic, ErrTruncated, ErrVersion, ErrCorrupt, ErrChecksum error
}

// PutHeader fills file[:HeaderSize] for the content (file[HeaderSize:]
// need not be the content: callers that build in place pass it).
func (f *Format) PutHeader(file, content []byte) {
	if len(f.Magic) != 8 {
		panic("BUG: envelope magic must be 8 bytes: " + f.Magic)
	}
	copy(file[0:8], f.Magic)
	binary.LittleEndian.PutUint32(file[8:], f.Version)
	binary.LittleEndian.PutUint32(file[12:], 0)
	binary.LittleEndian.PutUint64(file[16:], uint64(len(content)))
	sum := sha256.Sum256(content)
	copy(file[24:HeaderSize], sum[:])
}

// Seal returns the header followed by content.
func (f *Format) Seal(content []byte) []byte {
	out := make([]byte, HeaderSize+len(content))
	copy(out[HeaderSize:], content)
	f.PutHeader(out, out[HeaderSize:])
	return out
}

// Open checks the header and checksum of data and returns the content.
func (f *Format) Open(data []byte) ([]byte, error) {
	if len(data) < len(f.Magic) || !bytes.Equal(data[:len(f.Magic)], []byte(f.Magic)) {
		n := min(len(data), len(f.Magic))
		return nil, fmt.Errorf("%w: magic %q, want %q%s", f.ErrMagic, data[:n], f.Magic, f.otherKind(data))
	}
	if len(data) < HeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", f.ErrTruncated, len(data), HeaderSize)
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != f.Version {
		return nil, fmt.Errorf("%w: format version %d, this reader supports %d", f.ErrVersion, v, f.Version)
	}
	if r := binary.LittleEndian.Uint32(data[12:]); r != 0 {
		return nil, fmt.Errorf("%w: header reserved word is %#x, want 0", f.ErrCorrupt, r)
	}
	n := binary.LittleEndian.Uint64(data[16:])
	have := uint64(len(data) - HeaderSize)
	switch {
	case n > have:
		return nil, fmt.Errorf("%w: header says %d content bytes, file has %d", f.ErrTruncated, n, have)
	case n < have:
		return nil, fmt.Errorf("%w: %d bytes after the %d content bytes", f.ErrCorrupt, have-n, n)
	}
	content := data[HeaderSize:]
	if sum := sha256.Sum256(content); !bytes.Equal(sum[:], data[24:HeaderSize]) {
		return nil, fmt.Errorf("%w: content SHA-256 is %x, header says %x", f.ErrChecksum, sum, data[24:HeaderSize])
	}
	return content, nil
}

// kinds are the file kinds ipustack writes, by magic prefix, with the
// command that reads them.
var kinds = []struct{ prefix, what string }{
	{"\x7fELF", "an ELF file; see ipu objdump"},
	{"IPUEXE", "an application package (.ipuexe); see ipu inspect"},
	{"IPUPROF", "a profile; see ipu profile query"},
}

// otherKind names the file kind of data when it is another ipustack kind.
func (f *Format) otherKind(data []byte) string {
	for _, k := range kinds {
		if bytes.HasPrefix(data, []byte(k.prefix)) && !bytes.HasPrefix([]byte(f.Magic), []byte(k.prefix)) {
			return ": it is " + k.what
		}
	}
	return ""
}
