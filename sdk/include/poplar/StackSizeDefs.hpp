// Stand-in for poplar/StackSizeDefs.hpp (ipustack corpus check).
// Codelets write `DEF_STACK_USAGE size symbol` and `DEF_STACK_SIZE_OWN size
// symbol` (gas macro calls, whitespace-separated). This stand-in records
// each pair in a .stack_sizes section; the real SDK's layout is not public.
#ifndef STACK_SIZE_DEFS_STANDIN_HPP
#define STACK_SIZE_DEFS_STANDIN_HPP
#ifdef __ASSEMBLER__
.macro DEF_STACK_USAGE size:req, sym:req
  .pushsection .stack_sizes, "", @progbits
  .long \sym
  .long \size
  .popsection
.endm
.macro DEF_STACK_SIZE_OWN size:req, sym:req
  .pushsection .stack_sizes, "", @progbits
  .long \sym
  .long \size
  .popsection
.endm
#endif
#endif
// Also here (CommonPoplibsMacros.h.S uses it after including only this
// header); see TileConstants.hpp.
#ifndef FUNCTION_IS_WORKER
#define FUNCTION_IS_WORKER "ax"
#endif
