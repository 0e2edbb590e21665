// What the exact search's tests share (exact_search_*_test.cc,
// squeaky_dives_test.cc): the checker of a packing, which shares no code
// with the search (PackingProblemWith, BufsizeOf), incumbents to start it
// from (FirstFitPacking), cut rectangles drawn from a generator
// (CutRectangleProblem), and the check of a run of squeaky dives
// (CheckSqueakyDives).
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/search/exact_search.h"
#include "core/search/squeaky_dives.h"
#include "core/search/unit_problem.h"
#include "tests/common/check.h"
#include "tests/search/packing_oracle.h"

namespace cadence_memplan::search_test {

inline int64_t Pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

inline bool Conflict(const Tensor& a, Offset x, const Tensor& b, Offset y) {
  return reference::BruteForcePacking::Meet(a, x, b, y);
}

// "" when `offsets` pack the problem within `capacity`, else why not.
inline std::string PackingProblemWith(const PackingProblem& p, Size capacity,
                                      const std::vector<Offset>& offsets) {
  if (offsets.size() != p.tensors.size()) return "wrong number of offsets";
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const Tensor& t = p.tensors[i];
    if (offsets[i] < 0 || offsets[i] % p.alignment != 0) return "unaligned offset";
    if (AlignUp(offsets[i] + t.size, p.alignment) > capacity) return "beyond the capacity";
    for (size_t j = 0; j < i; ++j) {
      if (Conflict(t, offsets[i], p.tensors[j], offsets[j])) return "tensors overlap";
    }
    for (const Obstacle& o : p.obstacles) {
      if (Conflict(t, offsets[i], o.tensor, o.offset)) return "overlaps an obstacle";
    }
  }
  return "";
}

inline Size BufsizeOf(const PackingProblem& p, const std::vector<Offset>& offsets) {
  Size bufsize = 0;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    bufsize = std::max(bufsize, AlignUp(offsets[i] + p.tensors[i].size, p.alignment));
  }
  for (const Obstacle& o : p.obstacles) {
    bufsize = std::max(bufsize, AlignUp(o.offset + o.tensor.size, p.alignment));
  }
  return bufsize;
}

// First fit in input order, from the bottom or (a poor packing on purpose)
// from the top of the capacity: a valid incumbent, or empty.
inline std::vector<Offset> FirstFitPacking(const PackingProblem& p, Size capacity,
                                           bool from_top = false) {
  std::vector<Offset> offsets(p.tensors.size(), 0);
  const Offset top = capacity / p.alignment * p.alignment;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const Tensor& t = p.tensors[i];
    bool found = false;
    for (Offset k = 0; k * p.alignment <= top && !found; ++k) {
      const Offset x = from_top ? top - k * p.alignment : k * p.alignment;
      if (AlignUp(x + t.size, p.alignment) > capacity) continue;
      bool free = true;
      for (size_t j = 0; j < i && free; ++j) free = !Conflict(t, x, p.tensors[j], offsets[j]);
      for (const Obstacle& o : p.obstacles) free = free && !Conflict(t, x, o.tensor, o.offset);
      if (free) {
        offsets[i] = x;
        found = true;
      }
    }
    if (!found) return {};
  }
  return offsets;
}

inline SearchLimits Nodes(int64_t nodes) {
  SearchLimits limits;
  limits.max_nodes = nodes;
  return limits;
}

// The byte offsets of a search's solution (lone tensors at 0).
inline std::vector<Offset> SolutionOffsets(const PackingProblem& p,
                                           const detail::UnitProblem& units,
                                           const std::vector<detail::Unit>& solution) {
  std::vector<Offset> offsets(p.tensors.size(), 0);
  for (size_t i = 0; i < units.items.size(); ++i) {
    offsets[units.items[i].tensor] = solution[i] * p.alignment;
  }
  return offsets;
}

// Squeaky dives (squeaky_dives.h), each pushed against the lowest top so
// far: every dive packs the problem (obstacles honoured) and reports its
// top. Returns the tops of the dives made, in order.
inline std::vector<detail::Unit> CheckSqueakyDives(const PackingProblem& p, int count) {
  const detail::UnitProblem units(p);
  detail::SqueakyDives dives(units);
  std::vector<detail::Unit> tops;
  Size everything = 0;
  for (const Tensor& t : p.tensors) everything += AlignUp(t.size, p.alignment);
  for (const Obstacle& o : p.obstacles) {
    everything += AlignUp(o.offset + o.tensor.size, p.alignment);
  }
  detail::Unit reference = detail::kNoLimit;
  for (int k = 0; k < count; ++k) {
    const int64_t before = dives.nodes();
    if (!CHECK(dives.Dive(1 << 20, reference, [] { return false; }))) break;
    // A node per item and at most one per split into independent parts: a
    // dive never backtracks.
    CHECK(dives.nodes() - before <= 2 * static_cast<int64_t>(units.items.size()) + 1);
    const std::vector<Offset> offsets = SolutionOffsets(p, units, dives.packing());
    CHECK_EQ(PackingProblemWith(p, everything, offsets), std::string());
    detail::Unit top = 0;
    for (size_t i = 0; i < units.items.size(); ++i) {
      top = std::max(top, dives.packing()[i] + units.items[i].units);
    }
    CHECK_EQ(dives.top(), top);
    tops.push_back(top);
    reference = std::min(reference, top);
  }
  return tops;
}

// A capacity x time rectangle (in units of the alignment) cut into tensors
// by random guillotine cuts, each tensor up to alignment - 1 bytes short of
// its units: the rectangle is a packing, and nothing packs lower.
inline PackingProblem CutRectangleProblem(std::mt19937_64& rng, Size units, Time span, int pieces,
                                          Size a) {
  struct Box {
    Offset low;
    Size height;
    Time start, end;  // Inclusive.
  };
  std::vector<Box> boxes = {{0, units, 0, span - 1}};
  while (static_cast<int>(boxes.size()) < pieces) {
    const size_t k = static_cast<size_t>(Pick(rng, 0, static_cast<int64_t>(boxes.size()) - 1));
    const Box box = boxes[k];
    if (Pick(rng, 0, 1) == 0 && box.height > 1) {
      const Size cut = Pick(rng, 1, box.height - 1);
      boxes[k] = {box.low, cut, box.start, box.end};
      boxes.push_back({box.low + cut, box.height - cut, box.start, box.end});
    } else if (box.end > box.start) {
      const Time cut = Pick(rng, box.start, box.end - 1);
      boxes[k] = {box.low, box.height, box.start, cut};
      boxes.push_back({box.low, box.height, cut + 1, box.end});
    }
  }
  PackingProblem p;
  p.alignment = a;
  for (const Box& box : boxes) {
    p.tensors.push_back({{box.start, box.end}, box.height * a - Pick(rng, 0, a - 1)});
  }
  return p;
}

}  // namespace cadence_memplan::search_test
