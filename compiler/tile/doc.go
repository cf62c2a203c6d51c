// Package tile is the per-tile program IR: what every tile of a package
// computes, and the host's side of it, before any address is chosen.
//
// It owns:
//
//   - the work lists (TileProgram): each tile's named buffers (Buffer:
//     size, alignment, region, element rules, lifetime) and its two calls,
//     "initialize" and "run", as typed ops (Op: host handshakes and copies,
//     kernel calls, exchange phases, cycle samples, runtime loops) whose
//     operands are offsets into the tile's buffers (Ref, with a step per
//     enclosing loop);
//   - the device exchange phases (XPhase: transfers between tiles'
//     buffers);
//   - the host bindings (HostBinding: every slice on its tile, with the
//     rectangle of the tensor's matrix it holds and its element order) and
//     the host calls (HostCall: the transfers of each host phase through
//     the tiles' slots);
//   - the tile runtime's memory map (memmap.go): the code area, the host
//     window and its slot size, the exchange rows and their row table, the
//     loop indices and the data regions.
//
// Program is the whole package's per-tile part and Program.Verify checks
// every invariant the passes (compiler/tile/passes), compiler/place and
// compiler/emit rely on. The lowering (compiler/low) builds a Program; the
// passes rewrite it; place and emit read it. None of those three imports
// the planner (compiler/mid) or the lowering: this package depends only on
// the chip's facts (ipu21), the kernels' contracts (kernels) and the
// package format's types (ipuexe).
package tile
