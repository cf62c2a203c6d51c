// Package passes holds the optimisation passes over a per-tile program
// (compiler/tile) and the table that orders them (Table, run by Optimize).
// Each pass rewrites the program in place and reports what it changed;
// none changes what the program computes.
//
// A pass never writes into a slice or map it did not allocate: it replaces
// Programs, Exchanges, op lists, buffer lists and parameter maps with new
// ones when it changes them, so a program copied by value (cp := *pl)
// before a pass keeps its original content.
//
// The passes only rely on the IR's data model and the kernel access
// contract (kernels.Operand): an op they cannot analyse (an unknown kernel,
// parameters that do not resolve, a ref that steps with a loop where none
// is expected) is kept as it is, never a panic. What they may assume of a
// valid program is what tile.Program.Verify checks; OptimizeVerified
// checks it before the first pass and after every one.
package passes
