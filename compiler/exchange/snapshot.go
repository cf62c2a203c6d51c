package exchange

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ipustack/ipustack/internal/safefile"
)

// Snapshots: a build's exchange phases as JSON, so that the scheduler can
// be measured and tuned without the compiler (`ipu build --export-exchange
// DIR`, `ipu exchange bench`). The format, version 1:
//
//	{"format": "ipustack-exchange-snapshot", "version": 1,
//	 "source": "what produced it (free text)",
//	 "phases": [
//	  {"id": 0, "transfers": [
//	    {"src": 5, "src_addr": 393216, "words": 288, "dsts": [[6, 524288], [7, 524288]]},
//	    {"src": 6, "src_addr": 393216, "words": 288, "paired": true, "dsts": [[64, 524288], [66, 524288]]}
//	  ]}]}
//
// Tiles are physical tile ids, addresses SRAM byte addresses (decimal), a
// destination is [tile, address]; "paired" (optional) is Transfer.Paired.
// A file whose name ends in .gz is gzip-compressed (ReadSnapshot also
// recognises gzip by its magic bytes). Readers reject unknown fields, other
// formats and versions; a new version will be a new number.

// SnapshotFormat and SnapshotVersion identify the format.
const (
	SnapshotFormat  = "ipustack-exchange-snapshot"
	SnapshotVersion = 1
)

// maxSnapshotBytes bounds what ReadSnapshot decompresses and decodes (a
// full-chip phase with 100k transfers is about 5 MB).
const maxSnapshotBytes = 1 << 30

// Snapshot is a set of exchange phases.
type Snapshot struct {
	Source string
	Phases []Phase
}

type wireSnapshot struct {
	Format  string      `json:"format"`
	Version int         `json:"version"`
	Source  string      `json:"source,omitempty"`
	Phases  []wirePhase `json:"phases"`
}

type wirePhase struct {
	ID        int            `json:"id"`
	Transfers []wireTransfer `json:"transfers"`
}

type wireTransfer struct {
	Src     int        `json:"src"`
	SrcAddr uint32     `json:"src_addr"`
	Words   int        `json:"words"`
	Paired  bool       `json:"paired,omitempty"`
	Dsts    [][]uint32 `json:"dsts"` // [tile, address]: a Go array would silently take [1] or [1, 2, 3]
}

// WriteSnapshot writes s as JSON, one transfer per line (diffable).
func WriteSnapshot(w io.Writer, s *Snapshot) error {
	bw := bufio.NewWriter(w)
	head, err := json.Marshal(struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
		Source  string `json:"source,omitempty"`
	}{SnapshotFormat, SnapshotVersion, s.Source})
	if err != nil {
		return err
	}
	bw.Write(head[:len(head)-1])
	bw.WriteString(",\n\"phases\": [")
	for pi, p := range s.Phases {
		if pi > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n{\"id\": %d, \"transfers\": [", p.ID)
		for ti, t := range p.Transfers {
			wt := wireTransfer{Src: t.Src, SrcAddr: t.SrcAddr, Words: t.Words, Paired: t.Paired, Dsts: make([][]uint32, len(t.Dsts))}
			for k, d := range t.Dsts {
				if d.Tile < 0 {
					return fmt.Errorf("phase %d transfer %d: negative destination tile %d", p.ID, ti, d.Tile)
				}
				wt.Dsts[k] = []uint32{uint32(d.Tile), d.Addr}
			}
			b, err := json.Marshal(wt)
			if err != nil {
				return err
			}
			if ti > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n ")
			bw.Write(b)
		}
		bw.WriteString("]}")
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// ReadSnapshot reads a snapshot (plain or gzip-compressed JSON) and checks
// it: the format and version, and every phase as Build would (tiles,
// alignment, SRAM ranges, overlapping destinations, paired rules), so a
// bad file fails here with the phase and transfer named.
func ReadSnapshot(r io.Reader) (*Snapshot, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("exchange snapshot: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	data, err := io.ReadAll(io.LimitReader(r, maxSnapshotBytes+1))
	if err != nil {
		return nil, fmt.Errorf("exchange snapshot: %w", err)
	}
	if len(data) > maxSnapshotBytes {
		return nil, fmt.Errorf("exchange snapshot: larger than %d bytes", maxSnapshotBytes)
	}
	return parseSnapshot(data)
}

func parseSnapshot(data []byte) (*Snapshot, error) {
	// The header first, so that another format or version is reported as
	// such rather than as an unknown field.
	var head struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("exchange snapshot: not JSON: %w", err)
	}
	if head.Format != SnapshotFormat {
		return nil, fmt.Errorf("exchange snapshot: format %q, want %q", head.Format, SnapshotFormat)
	}
	if head.Version != SnapshotVersion {
		return nil, fmt.Errorf("exchange snapshot: version %d, this ipustack reads version %d", head.Version, SnapshotVersion)
	}
	var ws wireSnapshot
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ws); err != nil {
		return nil, fmt.Errorf("exchange snapshot: %w", err)
	}
	s := &Snapshot{Source: ws.Source, Phases: make([]Phase, len(ws.Phases))}
	for pi, wp := range ws.Phases {
		p := Phase{ID: wp.ID, Transfers: make([]Transfer, len(wp.Transfers))}
		for ti, wt := range wp.Transfers {
			t := Transfer{Src: wt.Src, SrcAddr: wt.SrcAddr, Words: wt.Words, Paired: wt.Paired, Dsts: make([]Dest, len(wt.Dsts))}
			for k, d := range wt.Dsts {
				if len(d) != 2 {
					return nil, fmt.Errorf("exchange snapshot: phase %d (id %d) transfer %d: destination %d has %d numbers, want [tile, address]", pi, wp.ID, ti, k, len(d))
				}
				if d[0] > 1<<20 {
					return nil, fmt.Errorf("exchange snapshot: phase %d (id %d) transfer %d: destination tile %d out of range", pi, wp.ID, ti, d[0])
				}
				t.Dsts[k] = Dest{Tile: int(d[0]), Addr: d[1]}
			}
			p.Transfers[ti] = t
		}
		if err := checkPhase(&p); err != nil {
			return nil, fmt.Errorf("exchange snapshot: phase %d (id %d): %w", pi, wp.ID, err)
		}
		s.Phases[pi] = p
	}
	return s, nil
}

// ReadSnapshotFile reads a snapshot file; see ReadSnapshot.
func ReadSnapshotFile(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ReadSnapshot(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// WriteSnapshotFile writes a snapshot file, gzip-compressed when the name
// ends in .gz.
func WriteSnapshotFile(path string, s *Snapshot) error {
	return safefile.Write(path, 0o644, func(f io.Writer) error {
		if !strings.HasSuffix(path, ".gz") {
			return WriteSnapshot(f, s)
		}
		zw := gzip.NewWriter(f)
		if err := WriteSnapshot(zw, s); err != nil {
			return err
		}
		return zw.Close()
	})
}

// ExportPhases writes each phase to DIR/exchange-phase-NNN.json (NNN: its
// position in phases), creating DIR: what `ipu build --export-exchange DIR`
// writes. It returns the paths written.
func ExportPhases(dir, source string, phases []Phase) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for i, p := range phases {
		path := filepath.Join(dir, fmt.Sprintf("exchange-phase-%03d.json", i))
		if err := WriteSnapshotFile(path, &Snapshot{Source: source, Phases: []Phase{p}}); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
