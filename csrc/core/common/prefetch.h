// Prefetching for the placers' random reads.
//
// The placers visit tensors in an order fixed before they start (by size), so
// each visit reads the indexes at a random point in time: a cache miss per
// bucket head and per run of entries once a graph outgrows the cache. The
// order is known, though, so a visit can ask for the next visits' lines while
// it works (Planner::Run).
#pragma once

#include <cstddef>

namespace cadence_memplan {

constexpr int kCacheLineBytes = 64;

// A hint that the line holding `address` will soon be read (kForWrite:
// written); never faults. The access is a template argument because the
// builtin takes only a constant.
template <bool kForWrite>
inline void Prefetch(const void* address) {
#if defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(address, kForWrite ? 1 : 0, 3);
#else
  (void)address;
#endif
}

inline void PrefetchLine(const void* address) { Prefetch<false>(address); }
inline void PrefetchLineForWrite(const void* address) { Prefetch<true>(address); }

// The same for every line of [first, first + bytes), up to `max_lines` lines.
inline void PrefetchLines(const void* first, size_t bytes, size_t max_lines) {
  // By offsets, so that no pointer past the end is ever formed.
  for (size_t offset = 0, k = 0; k < max_lines && offset < bytes; ++k, offset += kCacheLineBytes) {
    PrefetchLine(static_cast<const char*>(first) + offset);
  }
}

}  // namespace cadence_memplan
