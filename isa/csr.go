package isa

import (
	"sort"
	"strings"
)

// csrs maps control/status register names to numbers. Sources per entry are
// in docs/isa.md.
var csrs = map[string]int64{
	"incoming_mux":     0xA0,
	"incoming_muxpair": 0xA1,
	"incoming_format":  0xA3,
	"incoming_base":    0xA4,
	"incoming_dcount":  0xA6,
	"outgoing_base":    0xA7,
	"worker1_base":     0x21,
	"worker2_base":     0x22,
	"worker3_base":     0x23,
	"worker4_base":     0x24,
	"worker5_base":     0x25,
	"worker6_base":     0x26,
	"cccsload":         0x50,
}

var csrByNumber = func() map[int64]string {
	m := make(map[int64]string, len(csrs))
	names := make([]string, 0, len(csrs))
	for n := range csrs {
		names = append(names, n)
	}
	sort.Strings(names) // deterministic choice when two names share a number
	for _, n := range names {
		if _, dup := m[csrs[n]]; !dup {
			m[csrs[n]] = strings.ToUpper(n)
		}
	}
	return m
}()

// CSRByName returns the number of a CSR name given without '$' (any case).
func CSRByName(name string) (int64, bool) {
	v, ok := csrs[strings.ToLower(name)]
	return v, ok
}

// CSRName returns the canonical (upper-case) name of a CSR number.
func CSRName(n int64) (string, bool) {
	s, ok := csrByNumber[n]
	return s, ok
}
