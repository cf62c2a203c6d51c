// Package assemble turns kernel specialisations into ELF objects: it holds
// the kernels' IPU21 assembly sources (src/*.S and src/*.inc, embedded),
// assembles a kernels.Kernel with given parameters (each an -D definition)
// and keeps the results in a content-addressed on-disk cache
// (kernel.o/kernel.json pairs keyed by the sources, the parameters and
// AssemblerVersion).
//
// It is the assembler side of the kernels: the registry, the ABI records,
// the parameters and the typed specs stay in package kernels, which the
// planner and the cost model import without importing asm or elf. Only
// the stages that need objects (compiler/emit, kernels/bench, the ipu
// command) import this package.
package assemble
