// Stand-in for poplar/TileConstants.hpp (ipustack corpus check; public facts only).
#ifndef TILE_CONSTANTS_STANDIN_HPP
#define TILE_CONSTANTS_STANDIN_HPP
#include "arch/gc_tile_defines.h"
#endif
// Codelets write `.section NAME, FUNCTION_IS_WORKER`: the SDK's value is not
// public; it stands where the flags string goes, so this stand-in gives the
// code-section flags.
#ifndef FUNCTION_IS_WORKER
#define FUNCTION_IS_WORKER "ax"
#endif
