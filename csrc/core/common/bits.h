// Bit tricks the compilers spell differently, in one place.
#pragma once

#include <cstdint>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

namespace cadence_memplan {

// The index of the lowest set bit of `bits`, which must not be 0.
inline int CountTrailingZeros(uint64_t bits) {
#if defined(_MSC_VER) && !defined(__clang__)
  unsigned long index = 0;
  _BitScanForward64(&index, bits);
  return static_cast<int>(index);
#else
  return __builtin_ctzll(bits);
#endif
}

}  // namespace cadence_memplan
