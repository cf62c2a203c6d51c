// Package learn derives instruction encodings from an external assembler
// (the user's SDK popc or llvm-mc): it writes a probe source holding every
// row of the isa table with operand values that set each bit of each
// operand field alone and all together, assembles it with the given
// command, reads the words back from the ELF object, and derives each
// row's fixed bits and the instruction bit of every operand bit. The result
// is an isa.Overlay (ipu isa learn; docs/isa.md "Encodings learned from an
// SDK").
package learn
