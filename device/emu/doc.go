// Package emu is ipustack's cycle-level emulator of the Graphcore IPU21.
//
// This file set owns the ONE-TILE core: a Tile's 624 KiB of SRAM, its
// supervisor and six worker contexts (PC, $m and $a register files, CSRs,
// repeat state, AMP weight state), the barrel scheduler that gives each
// context one bundle per six cycles, and the execution of encoded machine
// words. Instructions are decoded once through package isa (the single
// instruction table shared with the assembler and disassembler) into a
// predecoded slice over executable region 0, and executed through a handler
// table indexed by isa row index. A row without a handler is a clear fault,
// so the table in isa may grow ahead of the emulator.
//
// Whole-chip concerns (exchange, syncs other than the tile-local zone, host
// link) are not owned here: a Tile stops with a StopSync result naming the
// zone, and the chip device built on top resumes it.
//
// Every rule the emulator adds to the public record (issue model, intra
// bundle register semantics, AMP pipeline, approximations) is written down
// in docs/machine-tile.md.
package emu
