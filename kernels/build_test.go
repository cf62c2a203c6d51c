package kernels

import (
	"bytes"

	"github.com/ipustack/ipustack/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildCache(t *testing.T) {
	k, err := Lookup("fill_zero")
	if err != nil {
		t.Fatal(err)
	}
	cache := Cache{Dir: t.TempDir()}
	p := Params{"bytes": 64}
	first, err := k.Build(p, cache)
	if err != nil {
		t.Fatal(err)
	}
	if first.Cached {
		t.Fatal("first build claims to come from the cache")
	}
	entry := filepath.Join(cache.Dir, first.Key)
	for _, f := range []string{"kernel.o", "kernel.json"} {
		if _, err := os.Stat(filepath.Join(entry, f)); err != nil {
			t.Fatalf("cache entry lacks %s: %v", f, err)
		}
	}
	second, err := k.Build(p, cache)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Cached || second.Key != first.Key || !equalObjects(first.Object, second.Object) {
		t.Fatalf("second build: cached=%v key %s vs %s", second.Cached, second.Key, first.Key)
	}
	other, err := k.Build(Params{"bytes": 72}, cache)
	if err != nil {
		t.Fatal(err)
	}
	if other.Key == first.Key {
		t.Fatal("different parameters share a cache key")
	}

	corruptions := []struct {
		name string
		file string
		data []byte
	}{
		{"truncated object", "kernel.o", []byte("\x7fELF")},
		{"flipped object byte", "kernel.o", nil},
		{"garbage metadata", "kernel.json", []byte("{not json")},
		{"metadata for another kernel", "kernel.json", []byte(`{"kernel":"x","params":{"bytes":64},"assemblerVersion":"` + AssemblerVersion + `","objectSha256":""}`)},
	}
	for _, c := range corruptions {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(entry, c.file)
			data := c.data
			if data == nil {
				orig, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				data = append([]byte(nil), orig...)
				data[len(data)/2] ^= 0xFF
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := k.Build(p, cache)
			if err != nil {
				t.Fatal(err)
			}
			if b.Cached || !equalObjects(b.Object, first.Object) {
				t.Fatalf("corrupted entry used: cached=%v", b.Cached)
			}
			again, err := k.Build(p, cache)
			if err != nil || !again.Cached {
				t.Fatalf("entry not repaired: cached=%v err=%v", again != nil && again.Cached, err)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	k, err := Lookup("fill_zero")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		p    Params
		want string
	}{
		{Params{"bytes": 12}, "multiple of 8"},
		{Params{"bytez": 8}, `no parameter "bytez"`},
		{Params{"bytes": -8}, "positive"},
	}
	for _, c := range cases {
		if _, err := k.Resolve(c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.p, err, c.want)
		}
	}
	p, err := k.Resolve(nil)
	if err != nil || p["bytes"] != 4096 {
		t.Errorf("defaults: %v %v", p, err)
	}
	if _, err := Lookup("nosuch"); err == nil || !strings.Contains(err.Error(), "fill_zero") {
		t.Errorf("unknown kernel error %v should list the known ones", err)
	}
}

// equalObjects reports whether two objects marshal to the same bytes.
func equalObjects(a, b *elf.Object) bool {
	x, err1 := a.Marshal()
	y, err2 := b.Marshal()
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
