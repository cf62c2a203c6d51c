// Stand-in for poplar/AvailableVTypes.h (ipustack corpus check).
// IPU21's 624 KiB SRAM (0x4C000..0xE8000, 21-bit addresses) does not fit a
// 16-bit scaled 32-bit pointer (256 KiB), so the compact vertex field types
// are taken as unavailable: none of VECTOR_AVAIL_SCALED_PTR32,
// VECTOR_AVAIL_SCALED_PTR64, VECTORLIST_AVAIL_DELTAN, VECTOR_AVAIL_SHORT_SPAN
// is defined. (Assumption; define them with -D to check the other branch.)
#ifndef AVAILABLE_VTYPES_STANDIN_H
#define AVAILABLE_VTYPES_STANDIN_H
#endif
