package kernels

import (
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	k, err := Lookup(FillZero)
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
	if _, err := Lookup("nosuch"); err == nil || !strings.Contains(err.Error(), FillZero) {
		t.Errorf("unknown kernel error %v should list the known ones", err)
	}
}
