// Package config reads and writes IPUCFG1 device configuration files.
//
// An IPUCFG1 file is the list of register writes the runtime replays into
// a device after opening it and before loading tile images (the "config
// replay" step of `ipu run`). The format, from the reference stack
// (reference/IPU21.md, "Host exchange and runtime"), is little-endian:
//
//	bytes 0..7   magic "IPUCFG1\x00"
//	bytes 8..11  u32 count
//	then count x (u32 offset, u32 value)
//
// Offsets are byte offsets of 32-bit registers in the device's register
// space, so they must be multiples of 4. Parse is strict: anything that is
// not exactly a header plus count entries is rejected with an error that
// names the file, says what is wrong and at which byte, because replaying a
// half-read or foreign file into hardware is worse than refusing to run.
//
// The package only knows the register groups the reference capture lets us
// name (the per-tile debug block and its DBG_RBRK register); everything else
// is reported as a "chip" register by offset, without guessing a name.
package config

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic is the 8-byte signature at the start of every IPUCFG1 file.
const Magic = "IPUCFG1\x00"

const (
	// HeaderSize is the size of the magic plus the u32 write count.
	HeaderSize = len(Magic) + 4
	// EntrySize is the size of one (offset, value) pair.
	EntrySize = 8
)

// Write is one register write: store Value at byte Offset of the device's
// register space.
type Write struct {
	Offset uint32
	Value  uint32
}

// Sentinel errors, so callers can tell the kinds of damage apart with
// errors.Is; the *ParseError that wraps them carries the details.
var (
	ErrShort      = errors.New("shorter than the IPUCFG1 header")
	ErrMagic      = errors.New("bad magic")
	ErrTruncated  = errors.New("truncated")
	ErrTrailing   = errors.New("trailing bytes")
	ErrMisaligned = errors.New("misaligned register offset")
)

// ParseError reports why a file is not a valid IPUCFG1 file.
type ParseError struct {
	Name string // file name as given to Parse
	Pos  int    // byte position in the file where the problem is
	Err  error  // one of the Err* sentinels
	Msg  string // the specifics: what was found, what was expected
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s: byte %d: %v: %s", e.Name, e.Pos, e.Err, e.Msg)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Parse decodes an IPUCFG1 file. name is used only in error messages.
func Parse(name string, data []byte) ([]Write, error) {
	if name == "" {
		name = "IPUCFG1 data"
	}
	fail := func(pos int, err error, format string, args ...any) ([]Write, error) {
		return nil, &ParseError{Name: name, Pos: pos, Err: err, Msg: fmt.Sprintf(format, args...)}
	}
	if len(data) < HeaderSize {
		// Still show the magic if we have it: a 3-byte file and an ELF
		// file call for different fixes.
		return fail(len(data), ErrShort, "file is %d bytes, the header alone is %d (magic %q + u32 count); found %q",
			len(data), HeaderSize, Magic, data)
	}
	if string(data[:len(Magic)]) != Magic {
		return fail(0, ErrMagic, "found %q, want %q (not an IPUCFG1 device configuration file)",
			data[:len(Magic)], Magic)
	}
	count := binary.LittleEndian.Uint32(data[len(Magic):])
	// uint64 so a hostile count cannot overflow int on 32-bit hosts.
	need := uint64(count) * EntrySize
	have := uint64(len(data) - HeaderSize)
	if need > have {
		return fail(len(data), ErrTruncated, "header declares %d writes, needing %d bytes after the %d-byte header, but only %d are present (%d entries)",
			count, need, HeaderSize, have, have/EntrySize)
	}
	if need < have {
		end := HeaderSize + int(need)
		return fail(end, ErrTrailing, "%d bytes after the %d declared writes end (file is %d bytes, expected %d)",
			have-need, count, len(data), end)
	}
	ws := make([]Write, count)
	for i := range ws {
		p := HeaderSize + i*EntrySize
		w := Write{
			Offset: binary.LittleEndian.Uint32(data[p:]),
			Value:  binary.LittleEndian.Uint32(data[p+4:]),
		}
		if w.Offset%4 != 0 {
			return fail(p, ErrMisaligned, "write %d: offset %#08x is not a multiple of 4 (registers are 32-bit)", i, w.Offset)
		}
		ws[i] = w
	}
	return ws, nil
}

// Marshal encodes writes as an IPUCFG1 file. It does not validate offsets,
// so tests can build damaged files; Parse is where validity is enforced.
func Marshal(ws []Write) []byte {
	b := make([]byte, HeaderSize, HeaderSize+len(ws)*EntrySize)
	copy(b, Magic)
	binary.LittleEndian.PutUint32(b[len(Magic):], uint32(len(ws)))
	for _, w := range ws {
		b = binary.LittleEndian.AppendUint32(b, w.Offset)
		b = binary.LittleEndian.AppendUint32(b, w.Value)
	}
	return b
}
