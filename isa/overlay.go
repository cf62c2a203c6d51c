package isa

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// An overlay replaces the encodings (Match and operand bit positions) of
// table rows, typically with encodings learned from the user's SDK
// assembler (ipu isa learn; docs/isa.md "Encodings learned from an SDK").
// Everything else about a row — its syntax, operand kinds, value rules
// (sign, shift, offset), pipe, context and semantics — stays ipustack's.
// Installing an overlay rewrites the rows in place and rebuilds the decode
// index, so every *Inst pointer and row index held elsewhere (the
// emulator's handlers, the exchange encoder's rows) stays valid and the
// assembler, objdump and emulator all follow.

// OverlaySchema and OverlayVersion identify the overlay file format.
const (
	OverlaySchema  = "ipustack-isa-overlay"
	OverlayVersion = 1
)

// Overlay is the JSON document of an overlay file.
type Overlay struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	// Assembler records the command template the encodings were learned
	// from (informative).
	Assembler string       `json:"assembler,omitempty"`
	Rows      []OverlayRow `json:"rows"`
}

// OverlayRow is one row's encoding.
type OverlayRow struct {
	ID    string `json:"id"` // Inst.ID(): mnemonic or mnemonic.variant
	Words int    `json:"words"`
	// Match holds the fixed bits of each word, as "0x%08x" strings. Word 0
	// is Inst.Match; an inline second word has no fixed bits in ipustack's
	// table, so it must be "0x00000000".
	Match    []string         `json:"match"`
	Operands []OverlayOperand `json:"operands"`
}

// OverlayOperand gives, for each bit of an operand's stored field value,
// most significant first, the instruction bit that holds it: 0..31 in word
// 0, 32..63 in word 1. Any permutation or split is expressible.
type OverlayOperand struct {
	Name string `json:"name"`
	Bits []int  `json:"bits"`
}

// rowEnc is one row's encoding in table form.
type rowEnc struct {
	match  uint32
	fields [][]Field
}

var (
	// used is set by the first Lookup (every encode and decode goes
	// through it); Install refuses to run after that.
	used atomic.Bool
	// defaultEnc is the table's own encodings, saved by build.
	defaultEnc []rowEnc
	// fingerprint identifies the installed overlay ("" for the default).
	fingerprint string
)

func snapshot(rs []*Inst) []rowEnc {
	out := make([]rowEnc, len(rs))
	for i, in := range rs {
		e := rowEnc{match: in.Match, fields: make([][]Field, len(in.Operands))}
		for j := range in.Operands {
			e.fields[j] = append([]Field(nil), in.Operands[j].Fields...)
		}
		out[i] = e
	}
	return out
}

// Positions lists the instruction bits holding the operand's stored value,
// most significant first (0..31 word 0, 32..63 word 1), as an overlay
// writes them.
func (o *Operand) Positions() []int { return positions(o.Fields) }

func positions(fs []Field) []int {
	var out []int
	for _, f := range fs {
		for b := int(f.Lo) + int(f.Width) - 1; b >= int(f.Lo); b-- {
			out = append(out, 32*int(f.Word)+b)
		}
	}
	return out
}

// fieldsOf turns bit positions (most significant first) back into fields,
// merging runs of descending adjacent bits of one word.
func fieldsOf(pos []int) []Field {
	var out []Field
	for _, p := range pos {
		w, b := uint8(p/32), uint8(p%32)
		if n := len(out); n > 0 && out[n-1].Word == w && out[n-1].Lo == b+1 {
			out[n-1].Lo = b
			out[n-1].Width++
			continue
		}
		out = append(out, Field{Word: w, Lo: b, Width: 1})
	}
	return out
}

func hexWord(w uint32) string { return fmt.Sprintf("0x%08x", w) }

// RowOverlay renders a row's installed encoding as an overlay row.
func RowOverlay(in *Inst) OverlayRow {
	r := OverlayRow{ID: in.ID(), Words: in.Words, Operands: []OverlayOperand{}}
	r.Match = append(r.Match, hexWord(in.Match))
	for w := 1; w < in.Words; w++ {
		r.Match = append(r.Match, hexWord(0))
	}
	for i := range in.Operands {
		o := &in.Operands[i]
		r.Operands = append(r.Operands, OverlayOperand{Name: o.Name, Bits: o.Positions()})
	}
	return r
}

// CurrentOverlay renders every row's installed encoding, in table order.
func CurrentOverlay() *Overlay {
	ov := &Overlay{Schema: OverlaySchema, Version: OverlayVersion}
	for _, in := range Table {
		ov.Rows = append(ov.Rows, RowOverlay(in))
	}
	return ov
}

// DefaultOverlay renders ipustack's own encodings of every row, whatever
// is installed.
func DefaultOverlay() *Overlay {
	ov := &Overlay{Schema: OverlaySchema, Version: OverlayVersion}
	for i, in := range Table {
		ov.Rows = append(ov.Rows, encRow(in, defaultEnc[i]))
	}
	return ov
}

func encRow(in *Inst, e rowEnc) OverlayRow {
	c := cloneRow(in, e)
	return RowOverlay(c)
}

func cloneRow(in *Inst, e rowEnc) *Inst {
	c := *in
	c.Match = e.match
	c.Operands = append([]Operand(nil), in.Operands...)
	for j := range c.Operands {
		c.Operands[j].Fields = append([]Field(nil), e.fields[j]...)
	}
	return &c
}

// Marshal renders the overlay as JSON, one row per line. The output is a
// function of the overlay alone (same overlay, same bytes).
func (ov *Overlay) Marshal() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	fmt.Fprintf(&b, "  \"schema\": %s,\n  \"version\": %d,\n", jsonString(ov.Schema), ov.Version)
	if ov.Assembler != "" {
		fmt.Fprintf(&b, "  \"assembler\": %s,\n", jsonString(ov.Assembler))
	}
	b.WriteString("  \"rows\": [")
	for i, r := range ov.Rows {
		if i > 0 {
			b.WriteString(",")
		}
		line, err := json.Marshal(r)
		if err != nil {
			panic("BUG: marshal overlay row: " + err.Error())
		}
		b.WriteString("\n    ")
		b.Write(line)
	}
	b.WriteString("\n  ]\n}\n")
	return b.Bytes()
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ParseOverlay decodes and validates an overlay file's contents against
// the table (see Validate). name is used in error messages.
func ParseOverlay(name string, data []byte) (*Overlay, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ov Overlay
	if err := dec.Decode(&ov); err != nil {
		return nil, fmt.Errorf("%s: %s", name, jsonError(data, err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s:%s: data after the overlay object", name, lineCol(data, dec.InputOffset()))
	}
	if _, err := validate(&ov); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &ov, nil
}

// LoadOverlayFile reads and validates an overlay file.
func LoadOverlayFile(path string) (*Overlay, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("isa overlay: %w", err)
	}
	return ParseOverlay(path, data)
}

func jsonError(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset is just past the offending byte.
		return fmt.Sprintf("%s: malformed JSON: %v", lineCol(data, max(se.Offset-1, 0)), se)
	case errors.As(err, &te):
		return fmt.Sprintf("%s: field %q: JSON %s where the schema wants %s", lineCol(data, te.Offset), te.Field, te.Value, te.Type)
	case errors.Is(err, io.EOF):
		return "empty file: want an overlay JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of file"
	}
	return "malformed overlay: " + err.Error()
}

func lineCol(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col := 1, 1
	for _, c := range data[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%d:%d", line, col)
}

// Validate checks an overlay against the table without installing it:
// the schema and version; every row ID known and listed once; per row the
// word count, match words and, per operand in table order, its name and
// exactly one distinct in-range bit per stored bit, not the co-issue bit
// of a row that may co-issue; fixed bits clear of operand bits. Then, on
// the whole table with the overlay applied: rows from the public record
// (Source not ipustack) keep their public encoding; operands a relocation
// patches keep the relocation's bits; refinements still refine; and no
// word matches two rows. Errors name the row (its position in the file and
// its ID) and what is wrong.
func Validate(ov *Overlay) error {
	_, err := validate(ov)
	return err
}

func validate(ov *Overlay) ([]rowEnc, error) {
	if ov.Schema != OverlaySchema {
		return nil, fmt.Errorf("schema %q: want %q", ov.Schema, OverlaySchema)
	}
	if ov.Version != OverlayVersion {
		return nil, fmt.Errorf("version %d: this ipustack reads version %d", ov.Version, OverlayVersion)
	}
	encs := make([]rowEnc, len(defaultEnc))
	copy(encs, defaultEnc)
	where := map[string]string{} // row ID -> "row N (id)"
	var errs []error
	fail := func(err error) bool {
		errs = append(errs, err)
		return len(errs) >= 20
	}
	for i, r := range ov.Rows {
		at := fmt.Sprintf("row %d (%s)", i+1, r.ID)
		in := byID[r.ID]
		if in == nil {
			if fail(fmt.Errorf("%s: unknown row: the table has no instruction with this ID", at)) {
				break
			}
			continue
		}
		if prev, dup := where[r.ID]; dup {
			if fail(fmt.Errorf("%s: listed twice (first at %s)", at, prev)) {
				break
			}
			continue
		}
		where[r.ID] = at
		e, err := rowEncoding(in, r)
		if err != nil {
			if fail(fmt.Errorf("%s: %w", at, err)) {
				break
			}
			continue
		}
		encs[in.index] = e
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	name := func(in *Inst) string {
		if w, ok := where[in.ID()]; ok {
			return w
		}
		return in.ID() + " (not in the overlay: ipustack's encoding)"
	}
	clone := make([]*Inst, len(Table))
	cloneByID := map[string]*Inst{}
	for i, in := range Table {
		clone[i] = cloneRow(in, encs[i])
		if err := derive(clone[i]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name(in), err))
		}
		cloneByID[in.ID()] = clone[i]
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for i, c := range clone {
		in := Table[i]
		if in.Source != SrcOurs {
			d := cloneRow(in, defaultEnc[i])
			_ = derive(d)
			if msg := differ(d, c); msg != "" {
				errs = append(errs, fmt.Errorf("%s: disagrees with its public encoding (%s): %s", name(in), in.Source, msg))
			}
		}
		for j := range c.Operands {
			o := &c.Operands[j]
			if o.Reloc == RelocNone {
				continue
			}
			want := relocFields(o.Reloc, o.Fields[0].Word)
			if fmt.Sprint(positions(want)) != fmt.Sprint(o.Positions()) {
				errs = append(errs, fmt.Errorf("%s: operand %s is patched by %s at bits %v; the overlay puts it at %v (the linker could not patch it)",
					name(in), o.Name, o.Reloc, positions(want), o.Positions()))
			}
		}
	}
	if _, err := index(clone, func(id string) *Inst { return cloneByID[id] }); err != nil {
		errs = append(errs, err)
	}
	for i, a := range clone {
		for _, b := range clone[i+1:] {
			if a.Refines == b.ID() || b.Refines == a.ID() {
				continue
			}
			if (a.Match^b.Match)&a.mask&b.mask == 0 {
				w := a.Match | b.Match&^a.mask
				errs = append(errs, fmt.Errorf("%s and %s overlap: word 0x%08x matches both (0x%08x/0x%08x and 0x%08x/0x%08x)",
					name(Table[a.index]), name(Table[b.index]), w, a.Match, a.mask, b.Match, b.mask))
			}
		}
	}
	if len(errs) > 0 {
		if len(errs) > 20 {
			errs = append(errs[:20], fmt.Errorf("... and %d more", len(errs)-20))
		}
		return nil, errors.Join(errs...)
	}
	return encs, nil
}

// rowEncoding checks one overlay row against its table row.
func rowEncoding(in *Inst, r OverlayRow) (rowEnc, error) {
	if r.Words != in.Words {
		return rowEnc{}, fmt.Errorf("words %d: the row has %d", r.Words, in.Words)
	}
	if len(r.Match) != in.Words {
		return rowEnc{}, fmt.Errorf("match has %d words, want %d", len(r.Match), in.Words)
	}
	var match [2]uint32
	for w, s := range r.Match {
		if !strings.HasPrefix(s, "0x") {
			return rowEnc{}, fmt.Errorf("match word %d %q: want a hexadecimal word such as \"0x%08x\"", w, s, in.Match)
		}
		v, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			return rowEnc{}, fmt.Errorf("match word %d %q: not a 32-bit hexadecimal word", w, s)
		}
		match[w] = uint32(v)
	}
	if match[1] != 0 {
		return rowEnc{}, fmt.Errorf("match word 1 is 0x%08x: ipustack's table has no fixed bits in an inline word", match[1])
	}
	if len(r.Operands) != len(in.Operands) {
		var names []string
		for _, o := range in.Operands {
			names = append(names, o.Name)
		}
		return rowEnc{}, fmt.Errorf("%d operands, the row has %d (%s)", len(r.Operands), len(in.Operands), strings.Join(names, ", "))
	}
	e := rowEnc{match: match[0], fields: make([][]Field, len(in.Operands))}
	var taken [2]uint32
	for j, o := range r.Operands {
		want := &in.Operands[j]
		if o.Name != want.Name {
			return rowEnc{}, fmt.Errorf("operand %d is %q, the row's is %q", j+1, o.Name, want.Name)
		}
		if len(o.Bits) != want.Width() {
			return rowEnc{}, fmt.Errorf("operand %s has %d bits, the row's field is %d bits wide", o.Name, len(o.Bits), want.Width())
		}
		for _, p := range o.Bits {
			if p < 0 || p >= 32*in.Words {
				return rowEnc{}, fmt.Errorf("operand %s bit position %d is outside the row's %d word(s) (0..%d)", o.Name, p, in.Words, 32*in.Words-1)
			}
			w, bit := p/32, uint32(1)<<(p%32)
			if taken[w]&bit != 0 {
				return rowEnc{}, fmt.Errorf("operand %s bit position %d is used twice", o.Name, p)
			}
			if p == 31 && in.CoIssue {
				return rowEnc{}, fmt.Errorf("operand %s uses bit 31, the co-issue flag of a row that may be bundled", o.Name)
			}
			taken[w] |= bit
		}
		e.fields[j] = fieldsOf(o.Bits)
	}
	if match[0]&taken[0] != 0 {
		return rowEnc{}, fmt.Errorf("match 0x%08x sets operand bits 0x%08x", match[0], match[0]&taken[0])
	}
	if in.CoIssue && match[0]&CoIssueBit != 0 {
		return rowEnc{}, fmt.Errorf("match 0x%08x sets bit 31, the co-issue flag of a row that may be bundled", match[0])
	}
	return e, nil
}

// differ describes how two encodings of a row differ ("" when equal).
func differ(want, got *Inst) string {
	var parts []string
	if want.Match != got.Match || want.mask != got.mask {
		parts = append(parts, fmt.Sprintf("fixed bits 0x%08x/0x%08x, public 0x%08x/0x%08x", got.Match, got.mask, want.Match, want.mask))
	}
	for j := range want.Operands {
		a, b := want.Operands[j].Positions(), got.Operands[j].Positions()
		if fmt.Sprint(a) != fmt.Sprint(b) {
			parts = append(parts, fmt.Sprintf("operand %s at bits %v, public %v", want.Operands[j].Name, b, a))
		}
	}
	return strings.Join(parts, "; ")
}

// relocFields is where a relocation patches, as fields of the word holding
// the operand.
func relocFields(t Reloc, word uint8) []Field {
	ri, ok := relocs[t]
	if !ok {
		return nil
	}
	fs := ri.Fields
	if fs == nil && ri.Size <= 4 {
		fs = []Field{{Lo: 0, Width: uint8(8 * ri.Size)}}
	}
	out := make([]Field, len(fs))
	for i, f := range fs {
		f.Word = word
		out[i] = f
	}
	return out
}

// Install validates ov and replaces the table's encodings with it (rows
// the overlay does not list keep ipustack's). It must run before anything
// encodes or decodes: afterwards it is an error, because the emulator and
// callers may hold words decoded under the old encodings.
func Install(ov *Overlay) error {
	if used.Load() {
		return errors.New("isa: an encoding overlay must be installed before anything assembles or decodes")
	}
	encs, err := validate(ov)
	if err != nil {
		return err
	}
	apply(encs)
	return nil
}

// InstallFile loads, validates and installs an overlay file.
func InstallFile(path string) error {
	ov, err := LoadOverlayFile(path)
	if err != nil {
		return err
	}
	if err := Install(ov); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Swap installs ov (nil: ipustack's own encodings) even after the table
// was used, and returns a function that restores the encodings it
// replaced. It is for tests, which must not run it while anything else
// encodes or decodes.
func Swap(ov *Overlay) (restore func(), err error) {
	prev := snapshot(Table)
	encs := defaultEnc
	if ov != nil {
		if encs, err = validate(ov); err != nil {
			return nil, err
		}
	}
	apply(encs)
	return func() { apply(prev) }, nil
}

// apply rewrites the rows' encodings in place and rebuilds the index.
// encs has passed validate (or is a snapshot of a valid table).
func apply(encs []rowEnc) {
	for i, in := range Table {
		in.Match = encs[i].match
		for j := range in.Operands {
			in.Operands[j].Fields = append([]Field(nil), encs[i].fields[j]...)
		}
		if err := derive(in); err != nil {
			panic("BUG: validated overlay: " + err.Error())
		}
	}
	b, err := index(Table, func(id string) *Inst { return byID[id] })
	if err != nil {
		panic("BUG: validated overlay: " + err.Error())
	}
	decodeBuckets = b
	fingerprint = ""
	cur := CurrentOverlay().Marshal()
	if !bytes.Equal(cur, DefaultOverlay().Marshal()) {
		sum := sha256.Sum256(cur)
		fingerprint = hex.EncodeToString(sum[:])
	}
}

// Fingerprint identifies the installed encodings: "" for ipustack's own,
// else a SHA-256 of every row's encoding. Caches of assembled code key on
// it.
func Fingerprint() string { return fingerprint }
