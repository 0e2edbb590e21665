// Instances with a known optimum: a rectangle of `height` bytes x `span`
// time steps cut into buffers by guillotine cuts (each cut splits one piece
// in two, across its size or across its lifetime). The pieces tile the
// rectangle, so at every time step exactly `height` bytes are alive: the
// peak-live bound is `height`, and the rectangle itself is a packing at that
// bound, so the optimum is `height` (with alignment 1).
//
// Deterministic from the seed: the same arguments give the same instance on
// every platform (std::mt19937_64 is specified; the cuts draw integers
// through our own mapping, not std::uniform_int_distribution, whose results
// the standard leaves to the library).
//
// Used by exact_search_test (small ones: the search must prove the optimum,
// or at least never claim a bound above it) and by bench/exact_search_driver
// (the "cut rectangles" set of docs/quality.md).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "types.h"

namespace memplan_test {

struct CutPiece {
  cadence_memplan::Offset low = 0;  // Where the rectangle puts it.
  cadence_memplan::Size size = 0;
  cadence_memplan::Lifetime lifetime;  // Inclusive.
};

// An integer in [lo, hi], the same on every platform.
inline int64_t PortablePick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  const auto range = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(rng() % range);
}

// `pieces` pieces (fewer only if nothing can be cut any more). Each cut
// takes a piece with probability proportional to its area and cuts it
// between a quarter and three quarters of the way along a side, across its
// size or its lifetime with even odds (the other when one side cannot be
// cut), so pieces stay of comparable shape and none is a sliver.
inline std::vector<CutPiece> CutRectangle(uint64_t seed, int pieces, cadence_memplan::Size height,
                                          cadence_memplan::Time span) {
  std::mt19937_64 rng(seed);
  std::vector<CutPiece> out = {{0, height, {0, span - 1}}};
  const auto length = [](const CutPiece& p) { return p.lifetime.end - p.lifetime.start + 1; };
  int stuck = 0;
  while (static_cast<int>(out.size()) < pieces && stuck < 1000) {
    double total = 0;
    for (const CutPiece& p : out) total += static_cast<double>(p.size) * length(p);
    double pick = static_cast<double>(rng() >> 11) / 9007199254740992.0 * total;
    size_t k = 0;
    for (; k + 1 < out.size(); ++k) {
      pick -= static_cast<double>(out[k].size) * length(out[k]);
      if (pick < 0) break;
    }
    const CutPiece p = out[k];
    const bool can_size = p.size >= 4, can_time = length(p) >= 4;
    if (!can_size && !can_time) {
      ++stuck;
      continue;
    }
    const bool across_size = can_size && (!can_time || PortablePick(rng, 0, 1) == 0);
    if (across_size) {
      const int64_t cut = PortablePick(rng, p.size / 4, p.size - p.size / 4);
      out[k] = {p.low, cut, p.lifetime};
      out.push_back({p.low + cut, p.size - cut, p.lifetime});
    } else {
      const int64_t n = length(p);
      const cadence_memplan::Time cut = p.lifetime.start + PortablePick(rng, n / 4, n - n / 4) - 1;
      out[k] = {p.low, p.size, {p.lifetime.start, cut}};
      out.push_back({p.low, p.size, {cut + 1, p.lifetime.end}});
    }
  }
  return out;
}

inline std::vector<cadence_memplan::Tensor> Tensors(const std::vector<CutPiece>& pieces) {
  std::vector<cadence_memplan::Tensor> tensors;
  tensors.reserve(pieces.size());
  for (const CutPiece& p : pieces) tensors.push_back({p.lifetime, p.size});
  return tensors;
}

// The public set of docs/quality.md: 12 rectangles of 1 MiB x 1024 steps,
// 56 to 745 buffers, seeds 1..12.
struct CutRectangleSpec {
  uint64_t seed;
  int pieces;
};
inline const std::vector<CutRectangleSpec>& CutRectangleSet() {
  static const std::vector<CutRectangleSpec> set = {{1, 56},  {2, 80},   {3, 110},  {4, 150},
                                                    {5, 190}, {6, 240},  {7, 300},  {8, 370},
                                                    {9, 450}, {10, 540}, {11, 640}, {12, 745}};
  return set;
}
inline constexpr cadence_memplan::Size kCutRectangleHeight = 1 << 20;
inline constexpr cadence_memplan::Time kCutRectangleSpan = 1024;

}  // namespace memplan_test
