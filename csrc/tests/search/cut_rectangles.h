// Instances with a known optimum: a rectangle of `height` bytes x `span`
// time steps cut into buffers, by guillotine cuts (each cut splits one piece
// in two, across its size or across its lifetime) or by pinwheels (each
// splits a piece into a centre ringed by four blades, which no straight cut
// crosses, so decomposition cannot take it apart). The pieces tile the
// rectangle, so at every time step exactly `height` bytes are alive: the
// peak-live bound is `height`, and the rectangle itself is a packing at that
// bound, so the optimum is `height` (with alignment 1).
//
// Deterministic from the seed: the same arguments give the same instance on
// every platform (std::mt19937_64 is specified; the cuts draw integers
// through our own mapping, not std::uniform_int_distribution, whose results
// the standard leaves to the library).
//
// Used by exact_search_known_optimum_test (small ones of both kinds: the
// search must prove the optimum, or at least never claim a bound above it),
// by squeaky_dives_test, and by bench/exact_search_driver (the guillotine
// "cut rectangles" set of docs/quality.md).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/common/types.h"

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

inline int64_t Length(const CutPiece& p) { return p.lifetime.end - p.lifetime.start + 1; }

// The index of a piece that `eligible` accepts, drawn with probability
// proportional to its area; pieces.size() when it accepts none (and then
// nothing is drawn).
template <typename Eligible>
size_t PickByArea(std::mt19937_64& rng, const std::vector<CutPiece>& pieces, Eligible eligible) {
  double total = 0;
  for (const CutPiece& p : pieces) {
    if (eligible(p)) total += static_cast<double>(p.size) * Length(p);
  }
  if (total == 0) return pieces.size();
  double pick = static_cast<double>(rng() >> 11) / 9007199254740992.0 * total;
  size_t k = pieces.size();
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!eligible(pieces[i])) continue;
    k = i;
    pick -= static_cast<double>(pieces[i].size) * Length(pieces[i]);
    if (pick < 0) break;
  }
  return k;
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
  int stuck = 0;
  while (static_cast<int>(out.size()) < pieces && stuck < 1000) {
    const size_t k = PickByArea(rng, out, [](const CutPiece&) { return true; });
    const CutPiece p = out[k];
    const bool can_size = p.size >= 4, can_time = Length(p) >= 4;
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
      const int64_t n = Length(p);
      const cadence_memplan::Time cut = p.lifetime.start + PortablePick(rng, n / 4, n - n / 4) - 1;
      out[k] = {p.low, p.size, {p.lifetime.start, cut}};
      out.push_back({p.low, p.size, {cut + 1, p.lifetime.end}});
    }
  }
  return out;
}

// Pinwheels: each step takes a piece with probability proportional to its
// area among those at least 3 bytes x 3 steps, and splits it into five: a
// blade along each side, p steps and q bytes thick (p drawn in [1, (length
// - 1) / 2], q in [1, (size - 1) / 2]), and the centre. So a set has
// 1 + 4m pieces: `pieces` is rounded down to that, or fewer when nothing
// can be split any more.
inline std::vector<CutPiece> PinwheelRectangle(uint64_t seed, int pieces,
                                               cadence_memplan::Size height,
                                               cadence_memplan::Time span) {
  std::mt19937_64 rng(seed);
  std::vector<CutPiece> out = {{0, height, {0, span - 1}}};
  while (static_cast<int>(out.size()) + 4 <= pieces) {
    const size_t k =
        PickByArea(rng, out, [](const CutPiece& p) { return p.size >= 3 && Length(p) >= 3; });
    if (k == out.size()) break;
    const CutPiece w = out[k];
    const cadence_memplan::Time t0 = w.lifetime.start, t1 = w.lifetime.end;  // Inclusive.
    const int64_t p = PortablePick(rng, 1, (Length(w) - 1) / 2);
    const int64_t q = PortablePick(rng, 1, (w.size - 1) / 2);
    const cadence_memplan::Offset m0 = w.low, m1 = w.low + w.size;
    out[k] = {m0, q, {t0, t1 - p}};                                // Bottom.
    out.push_back({m0, w.size - q, {t1 - p + 1, t1}});             // Right.
    out.push_back({m1 - q, q, {t0 + p, t1}});                      // Top.
    out.push_back({m0 + q, w.size - q, {t0, t0 + p - 1}});         // Left.
    out.push_back({m0 + q, w.size - 2 * q, {t0 + p, t1 - p}});     // Centre.
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
