package isa

import (
	"sort"
	"strings"
)

// CSRSpace is a control/status register address space. The IPU21 has three
// that instructions name:
//
//   - the supervisor's lower space, read by get and written by put when the
//     supervisor executes them;
//   - a worker's lower space, read by get and written by put when a worker
//     executes them (the same encodings: the executing context selects the
//     space, so $SSR and $WSR are both number 1);
//   - a worker's upper space, read by uget and written by uput ($FP_CLR ...).
//     Its numbers are the 8-bit field value (as in the LLVM Colossus fork);
//     graphcore-ipu-research writes them as 0x100 + field.
//
// The weight registers $CWEI_n_m are not in any of these: they are written
// only by ld64putcs/ld128putcs, whose operand is the slot number.
type CSRSpace uint8

const (
	// CSRLower is the lower space of whichever context executes the
	// instruction (get, put). Names resolve per context; see CSRByNameIn.
	CSRLower CSRSpace = iota
	// CSRSupervisor is the supervisor's lower space.
	CSRSupervisor
	// CSRWorker is a worker's lower space.
	CSRWorker
	// CSRUpper is a worker's upper space (uget, uput).
	CSRUpper
)

func (s CSRSpace) String() string {
	switch s {
	case CSRSupervisor:
		return "supervisor"
	case CSRWorker:
		return "worker"
	case CSRUpper:
		return "worker-upper"
	}
	return "lower"
}

// csrTables maps names (lower case, without '$') to numbers per space.
// Sources: the LLVM Colossus fork's generated CSR list (name, contexts,
// ipu21 number), graphcore-ipu-research docs/csr.md (exchange and debug
// registers), reference/IPU21.md. docs/isa.md lists them.
var csrTables = map[CSRSpace]map[string]int64{
	CSRSupervisor: {
		"pc": 0x00, "ssr": 0x01, "cr": 0x02, "tile_id": 0x03,
		"fp_ictl": 0x20,
		// $WORKERn_BASE, n = 0..5, one per worker context (0-based, as in
		// graphcore-ipu-research and ipu21.CSRWorker0Base).
		"worker0_base": 0x21, "worker1_base": 0x22, "worker2_base": 0x23,
		"worker3_base": 0x24, "worker4_base": 0x25, "worker5_base": 0x26,
		"fp_infmt": 0x31, "fp_iscl": 0x33,
		"cccsload": 0x50,
		"scount_l": 0x60, "scount_u": 0x61,
		"dbg_data": 0x70, "dbg_brk_id": 0x71, "ctxt_sts": 0x72,
		"incoming_mux": 0xA0, "incoming_muxpair": 0xA1, "incoming_delta": 0xA2,
		"incoming_format": 0xA3, "incoming_base": 0xA4, "incomings_sinit": 0xA5,
		"incoming_dcount": 0xA6, "outgoing_base": 0xA7, "outgoing_delta": 0xA8,
		"exchange_ctl": 0xA9, "ans_dcount": 0xAA, "exchange_adj": 0xAB,
	},
	CSRWorker: {
		"pc": 0x00, "wsr": 0x01, "vertex_base": 0x02, "worker_base": 0x03,
		"repeat_count": 0x04, "repeat_first": 0x05, "repeat_end": 0x06,
		"count_l": 0x60, "count_u": 0x61,
		"dbg_data": 0x70, "dbg_brk_id": 0x71,
	},
	CSRUpper: {
		"fp_sts": 0x00, "fp_clr": 0x01, "fp_ctl": 0x02,
		"prng_0_0": 0x03, "prng_0_1": 0x04, "prng_1_0": 0x05, "prng_1_1": 0x06,
		// $PRNG_SEED and $TAS are upper-space registers, written with uput
		// (graphcore-ipu-research research/ipu1/ipu1_consts.c:
		// CSR_W_PRNG_SEED__INDEX 0x107, CSR_W_TAS__INDEX 0x108, upper space
		// base 0x100; poplibs and ipu-stack write them with uput).
		"prng_seed": 0x07, "tas": 0x08,
		"fp_nfmt": 0x09, "fp_scl": 0x0A,
	},
}

var csrNames = func() map[CSRSpace]map[int64]string {
	out := map[CSRSpace]map[int64]string{}
	for sp, t := range csrTables {
		m := make(map[int64]string, len(t))
		names := make([]string, 0, len(t))
		for n := range t {
			names = append(names, n)
		}
		sort.Strings(names) // deterministic when two names share a number
		for _, n := range names {
			if _, dup := m[t[n]]; !dup {
				m[t[n]] = strings.ToUpper(n)
			}
		}
		out[sp] = m
	}
	return out
}()

// CSRByNameIn returns the number of a CSR name (without '$', any case) in a
// space. For CSRLower, ctx picks the space (Supervisor or Worker); with ctx
// 0 (unknown) a name found in either lower space is accepted, supervisor
// first.
func CSRByNameIn(space CSRSpace, ctx Context, name string) (int64, bool) {
	name = strings.ToLower(name)
	for _, sp := range lowerSpaces(space, ctx) {
		if v, ok := csrTables[sp][name]; ok {
			return v, true
		}
	}
	return 0, false
}

// CSRNameIn returns the canonical (upper-case) name of a CSR number in a
// space. For CSRLower with ctx 0 it names only numbers whose name is the
// same in both lower spaces (so the text assembles alike in either).
func CSRNameIn(space CSRSpace, ctx Context, n int64) (string, bool) {
	if space == CSRLower && ctx != Supervisor && ctx != Worker {
		s, ok1 := csrNames[CSRSupervisor][n]
		w, ok2 := csrNames[CSRWorker][n]
		if ok1 && ok2 && s == w {
			return s, true
		}
		return "", false
	}
	for _, sp := range lowerSpaces(space, ctx) {
		if s, ok := csrNames[sp][n]; ok {
			return s, true
		}
	}
	return "", false
}

func lowerSpaces(space CSRSpace, ctx Context) []CSRSpace {
	if space != CSRLower {
		return []CSRSpace{space}
	}
	switch ctx {
	case Supervisor:
		return []CSRSpace{CSRSupervisor}
	case Worker:
		return []CSRSpace{CSRWorker}
	}
	return []CSRSpace{CSRSupervisor, CSRWorker}
}

// CSRByName returns the number of a CSR name given without '$' (any case),
// looked up in the supervisor space, then the worker lower space, then the
// worker upper space. Prefer CSRByNameIn, which knows the space.
func CSRByName(name string) (int64, bool) {
	name = strings.ToLower(name)
	for _, sp := range []CSRSpace{CSRSupervisor, CSRWorker, CSRUpper} {
		if v, ok := csrTables[sp][name]; ok {
			return v, true
		}
	}
	return 0, false
}

// CSRName returns the canonical (upper-case) supervisor-space name of a CSR
// number. Prefer CSRNameIn, which knows the space.
func CSRName(n int64) (string, bool) {
	s, ok := csrNames[CSRSupervisor][n]
	return s, ok
}

// CSRNames lists the names of a space (upper case, sorted), for docs and
// tests.
func CSRNames(space CSRSpace) []string {
	var out []string
	for n := range csrTables[space] {
		out = append(out, strings.ToUpper(n))
	}
	sort.Strings(out)
	return out
}
