package assemble

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ipustack/ipustack/asm"
	"github.com/ipustack/ipustack/elf"
	"github.com/ipustack/ipustack/isa"
	"github.com/ipustack/ipustack/kernels"
)

//go:embed src/*.S src/*.inc
var sources embed.FS

// SourceText returns the embedded source of a kernel file (a name under
// src/, e.g. "gemm_f16.S" or "common.inc").
func SourceText(file string) ([]byte, error) {
	return sources.ReadFile("src/" + file)
}

// AssemblerVersion is part of every cache key: bump it when the assembler
// or the instruction table changes what a source assembles to.
const AssemblerVersion = "ipustack-asm-1"

// Built is one assembled kernel specialisation.
type Built struct {
	Kernel *kernels.Kernel
	Params kernels.Params // resolved: every parameter, defaults filled
	Key    string         // sha256 of sources, parameters and assembler version
	Object *elf.Object
	// Cached is true when the object came from the cache.
	Cached bool
}

// Meta is kernel.json beside a cached kernel.o.
type Meta struct {
	Kernel           string         `json:"kernel"`
	Params           map[string]int `json:"params"`
	AssemblerVersion string         `json:"assemblerVersion"`
	ObjectSHA256     string         `json:"objectSha256"`
}

// Cache is a directory of kernel.o/kernel.json pairs keyed by content. The
// zero value (empty Dir) disables caching.
type Cache struct {
	Dir string
}

// DefaultCache is $XDG_CACHE_HOME/ipustack/kernels (or the OS user cache
// directory when XDG_CACHE_HOME is unset).
func DefaultCache() Cache {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		var err error
		if base, err = os.UserCacheDir(); err != nil {
			return Cache{}
		}
	}
	return Cache{Dir: filepath.Join(base, "ipustack", "kernels")}
}

// Key is the cache key of k with resolved parameters p: a hash of
// everything the object depends on — every embedded source and include (a
// kernel may include any of them), the parameters, the assembler version
// and any encoding overlay.
func Key(k *kernels.Kernel, p kernels.Params) (string, error) {
	return key(sources, k, p)
}

// key hashes fsys's src/* files (in name order) with the kernel's name and
// source, the parameters and the assembler version. Its byte stream is the
// cache's on-disk contract: changing it orphans every cached entry
// (TestKeyStable pins it).
func key(fsys fs.FS, k *kernels.Kernel, p kernels.Params) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", AssemblerVersion, k.Name, k.Source)
	// Under an encoding overlay (isa.Install) the same source assembles to
	// other words; ipustack's own encodings keep the keys they always had.
	if fp := isa.Fingerprint(); fp != "" {
		fmt.Fprintf(h, "isa-overlay\x00%s\x00", fp)
	}
	names, err := fs.Glob(fsys, "src/*")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := fs.ReadFile(fsys, n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(data))
		h.Write(data)
	}
	fmt.Fprintf(h, "params\x00%s", p.String())
	return hex.EncodeToString(h.Sum(nil)), nil
}

// defines are the -D definitions a specialisation is assembled with:
// each parameter upper-cased (k=240 -> K=240).
func defines(p kernels.Params) map[string]string {
	d := make(map[string]string, len(p))
	for name, v := range p {
		d[strings.ToUpper(name)] = strconv.Itoa(v)
	}
	return d
}

// Build assembles a specialisation of k, using the cache when it holds a
// valid entry. A corrupted or mismatching entry is logged, rebuilt and
// replaced.
func Build(k *kernels.Kernel, given kernels.Params, cache Cache) (*Built, error) {
	p, err := k.Resolve(given)
	if err != nil {
		return nil, err
	}
	key, err := Key(k, p)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	b := &Built{Kernel: k, Params: p, Key: key}
	if cache.Dir != "" {
		obj, err := cache.load(key, k, p)
		if err == nil {
			b.Object, b.Cached = obj, true
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("kernel cache entry is invalid; rebuilding", "kernel", k.Name, "key", key, "err", err)
		}
	}
	src, err := sources.ReadFile("src/" + k.Source)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", k.Name, err)
	}
	obj, err := asm.Assemble("kernels/assemble/src/"+k.Source, src, asm.Options{
		Defines: defines(p),
		ReadFile: func(name string) ([]byte, error) {
			return sources.ReadFile(path.Join("src", path.Base(name)))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("kernel %s (%s): %w", k.Name, p, err)
	}
	b.Object = obj
	if cache.Dir != "" {
		if err := cache.store(key, k, p, obj); err != nil {
			slog.Warn("cannot write kernel cache", "dir", cache.Dir, "err", err)
		}
	}
	return b, nil
}

// BuildSpec builds the specialisation a typed spec calls.
func BuildSpec(s kernels.Spec, cache Cache) (*Built, error) {
	k, err := kernels.Lookup(s.Name())
	if err != nil {
		return nil, err
	}
	return Build(k, s.Params(), cache)
}

func (c Cache) entry(key string) string { return filepath.Join(c.Dir, key) }

func (c Cache) load(key string, k *kernels.Kernel, p kernels.Params) (*elf.Object, error) {
	dir := c.entry(key)
	metaBytes, err := os.ReadFile(filepath.Join(dir, "kernel.json"))
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "kernel.o"))
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(metaBytes, &m); err != nil {
		return nil, fmt.Errorf("kernel.json: %w", err)
	}
	sum := sha256.Sum256(data)
	if m.ObjectSHA256 != hex.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("kernel.o does not match the checksum in kernel.json")
	}
	if m.Kernel != k.Name || m.AssemblerVersion != AssemblerVersion || kernels.Params(m.Params).String() != p.String() {
		return nil, fmt.Errorf("kernel.json describes %s (%s, %s), want %s (%s, %s)",
			m.Kernel, kernels.Params(m.Params), m.AssemblerVersion, k.Name, p, AssemblerVersion)
	}
	return elf.Parse(filepath.Join(dir, "kernel.o"), data)
}

func (c Cache) store(key string, k *kernels.Kernel, p kernels.Params, obj *elf.Object) error {
	data, err := obj.Marshal()
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	meta, err := json.MarshalIndent(Meta{Kernel: k.Name, Params: p, AssemblerVersion: AssemblerVersion,
		ObjectSHA256: hex.EncodeToString(sum[:])}, "", "  ")
	if err != nil {
		return err
	}
	// Write into a private temporary directory and rename it into place,
	// so a concurrent reader never sees half an entry.
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(c.Dir, ".tmp-"+key[:12]+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "kernel.o"), data, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "kernel.json"), append(meta, '\n'), 0o644); err != nil {
		return err
	}
	dst := c.entry(key)
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}
