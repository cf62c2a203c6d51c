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
// Whole-chip concerns are in chip.go (Chip: tiles run in parallel between
// syncs, global and host syncs, deadlock reports), exchange.go (the
// supervisor's exchange instructions record timed sends and receive
// controls) and fabric.go (the exchange fabric resolves them into incoming
// writes and checks them). A Tile alone stops with a StopSync result naming
// the zone; a tile of a Chip also stops at the end of each exchange segment
// (StopExchange). The rules are in docs/machine.md, "The chip: syncs and
// exchange".
//
// Every rule the emulator adds to the public record (issue model, intra
// bundle register semantics, AMP pipeline, approximations) is written down
// in docs/machine-tile.md.
package emu
