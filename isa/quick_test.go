package isa

import "testing"

func TestQuick(t *testing.T) {
	w, err := ByMnemonic("setzi")[0].Encode([]int64{1, 5}, false)
	if err != nil || w[0] != 0x19100005 {
		t.Fatalf("%x %v", w, err)
	}
	d, err := Decode(w)
	if err != nil || Format(d) != "setzi $m1, 5" {
		t.Fatalf("%v %v", Format(d), err)
	}
}
