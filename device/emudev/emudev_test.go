package emudev_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ipustack/ipustack/device/emudev"
	"github.com/ipustack/ipustack/internal/diag"
)

func TestLoadBatchesAndSession(t *testing.T) {
	ctx := context.Background()
	d, err := diag.Build(130)
	if err != nil {
		t.Fatal(err)
	}
	dev := emudev.New(emudev.Options{})
	if err := dev.Open(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dev.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	var done []int
	if err := dev.Load(ctx, d.Package, func(n, total int) {
		if total != 130 {
			t.Errorf("total %d", total)
		}
		done = append(done, n)
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(done, []int{64, 128, 130}) || dev.StartupMark() != 3 {
		t.Fatalf("batches %v, mark %d", done, dev.StartupMark())
	}
	s, err := dev.StartSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, "initialize", d.Weights, nil); err != nil {
		t.Fatal(err)
	}
	// Two runs in one session: the tiles' loop serves calls again and again.
	for i := 0; i < 2; i++ {
		out := map[string][]byte{}
		st, err := s.Call(ctx, "run", d.Inputs, out)
		if err != nil {
			t.Fatal(err)
		}
		if diffs, err := d.Check(out["results"]); err != nil || len(diffs) > 0 {
			t.Fatalf("run %d: %v %s", i, err, diag.Report(diffs, 10))
		}
		if st.PacketsOut != 130*5 || st.PacketsIn != 130*2 {
			t.Fatalf("packets %+v", st)
		}
	}
	w, err := s.ProfileWords(0, []uint32{0x58004, 0x58008})
	if err != nil || w[1] <= w[0] {
		t.Fatalf("profile words %v %v", w, err)
	}
	if _, err := s.ProfileWords(9999, []uint32{0x58004}); err == nil {
		t.Fatal("profile read of a tile not on the chip")
	}
	s.Close()
	if _, err := s.Call(ctx, "run", d.Inputs, nil); err == nil {
		t.Fatal("call on a closed session")
	}
	dev.Close()
}
