package device

import (
	"strings"
	"testing"
)

func TestStageNeed(t *testing.T) {
	for _, c := range []struct {
		s    Stage
		want []Stage
		err  string
	}{
		{StageOpen, []Stage{StageOpen}, ""},
		{StageLoaded, []Stage{StageOpen, StageInitialized, StageLoaded}, ""},
		{StageNew, []Stage{StageInitialized}, "load: the device is new"},
		{StageSession, []Stage{StageLoaded}, "load: the device is in a session"},
		{Stage(99), []Stage{StageLoaded}, "load: the device is stage 99"},
	} {
		err := c.s.Need("load", c.want...)
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("%v.Need(%v) = %v, want %q", c.s, c.want, err, c.err)
		}
	}
}

func TestBackendOptions(t *testing.T) {
	type opts struct{ N int }
	for _, c := range []struct {
		in   any
		want int
		err  string
	}{
		{nil, 0, ""},
		{opts{3}, 3, ""},
		{&opts{4}, 4, ""},
		{(*opts)(nil), 0, ""},
		{"x", 0, "emu backend options must be device.opts, not string"},
	} {
		o, err := BackendOptions[opts]("emu", c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%v: err %v, want %q", c.in, err, c.err)
		case c.err == "" && (err != nil || o.N != c.want):
			t.Errorf("%v: %v, %v; want N=%d", c.in, o, err, c.want)
		}
	}
}
