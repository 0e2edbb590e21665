// OccupancyTree against brute force: after any sequence of insertions, the
// holes it reports for a lifetime must be those of the union of the segments
// inserted with an overlapping lifetime (inclusive ends), computed here byte
// by byte over a small offset range.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/placement/interval_index.h"
#include "core/placement/occupancy_tree.h"
#include "tests/common/check.h"

namespace {

using namespace cadence_memplan;

constexpr Offset kBytes = 96;  // Offsets stay below this, so a byte map is exact.

struct Stored {
  Lifetime lifetime;
  Segment segment;
};

bool BruteOverlap(const Lifetime& a, const Lifetime& b) {
  return a.start <= a.end && b.start <= b.end && a.start <= b.end && b.start <= a.end;
}

// taken[b]: byte b is inside a segment stored with a lifetime overlapping `query`.
std::vector<bool> TakenBytes(const std::vector<Stored>& stored, const Lifetime& query) {
  std::vector<bool> taken(kBytes, false);
  for (const Stored& s : stored) {
    if (!BruteOverlap(s.lifetime, query)) continue;
    for (Offset b = s.segment.begin; b < s.segment.end; ++b) taken[b] = true;
  }
  return taken;
}

// The positions of the axis's starts inside `lifetime`, counted one by one:
// the tree is given the layout's spans when segments are inserted and these
// when it is queried, so each holds the other.
AxisSpan BruteSpan(const TimeAxis& axis, const Lifetime& lifetime) {
  int64_t first = 0;
  while (first < axis.size() && axis[first] < lifetime.start) ++first;
  int64_t last = first - 1;
  while (last + 1 < axis.size() && axis[last + 1] <= lifetime.end) ++last;
  return {first, last};
}

// The holes below the top, as (begin, length), lowest first, and the top.
std::vector<std::pair<Offset, Size>> Holes(const std::vector<bool>& taken, Offset* top) {
  *top = 0;
  for (Offset b = 0; b < kBytes; ++b) {
    if (taken[b]) *top = b + 1;
  }
  std::vector<std::pair<Offset, Size>> holes;
  for (Offset b = 0; b < *top;) {
    if (taken[b]) {
      ++b;
      continue;
    }
    const Offset begin = b;
    while (!taken[b]) ++b;
    holes.push_back({begin, b - begin});
  }
  return holes;
}

// The tree holds the stored segments `shift` bytes higher, so that offsets
// near the top of the range are checked too (a shift of 2^60 leaves a hole
// [0, 2^60) below the lowest segment).
void CheckQuery(const OccupancyTree& tree, const TimeAxis& axis, const std::vector<Stored>& stored,
                const Lifetime& query, Offset shift, std::mt19937_64& rng) {
  Offset top = 0;
  const std::vector<bool> taken = TakenBytes(stored, query);
  auto holes = Holes(taken, &top);
  if (shift > 0 && top > 0) {
    for (auto& [begin, length] : holes) begin += shift;
    if (!holes.empty() && holes.front().first == shift) {  // Unshifted, it began at 0.
      holes.front() = {0, holes.front().second + shift};
    } else {
      holes.insert(holes.begin(), {0, shift});
    }
    top += shift;
  }
  const Size size = std::uniform_int_distribution<Size>(1, 20)(rng);

  Offset lowest = top;
  for (const auto& [begin, length] : holes) {
    if (length >= size) {
      lowest = begin;
      break;
    }
  }
  const AxisSpan span = BruteSpan(axis, query);
  CHECK_EQ(tree.LowestHole(span, size), lowest);

  SmallestHole smallest;
  smallest.top = top;
  Size best_length = 0;
  for (const auto& [begin, length] : holes) {
    if (length >= size && (smallest.begin == kNoOffset || length < best_length)) {
      smallest.begin = begin;
      best_length = length;
    }
  }
  const SmallestHole found = tree.FindSmallestHole(span, size);
  CHECK_EQ(found.begin, smallest.begin);
  if (smallest.begin == kNoOffset) CHECK_EQ(found.top, smallest.top);

  const Offset begin = std::uniform_int_distribution<Offset>(0, kBytes - 21)(rng);
  const Segment probe{begin, begin + size};
  bool meets = false;
  for (Offset b = probe.begin; b < probe.end; ++b) meets = meets || taken[b];
  CHECK_EQ(tree.Intersects(span, {probe.begin + shift, probe.end + shift}), meets);
}

// Segments begin and end at multiples of `grain`, as aligned placements do,
// so that best fit's early stop at a hole of the size rounded up to the
// grain is checked.
int64_t RunRandomCase(uint64_t seed, Offset shift, Offset grain) {
  std::mt19937_64 rng(seed);
  const auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int count = static_cast<int>(pick(0, seed % 10 == 0 ? 300 : 40));
  const Time span = pick(1, 60);
  std::vector<Lifetime> lifetimes;
  for (int i = 0; i < count; ++i) {
    const Time start = pick(0, span);
    lifetimes.push_back(pick(0, 9) == 0 ? Lifetime{start, start - 1}  // Empty.
                                        : Lifetime{start, start + pick(0, span / 2)});
  }
  const SlotLayout layout(lifetimes);
  OccupancyTree tree(layout.axis().size());
  std::vector<Stored> stored;
  int64_t queries = 0;
  for (int i = 0; i < count; ++i) {
    // Touching, overlapping, nested and empty segments.
    const Offset begin = pick(0, (kBytes - 25) / grain) * grain;
    const Segment segment{begin, begin + pick(0, 24 / grain) * grain};
    tree.Insert(layout.span(i), {segment.begin + shift, segment.end + shift});
    stored.push_back({lifetimes[i], segment});
    if (pick(0, 2) == 0) {
      const Lifetime& query = lifetimes[pick(0, count - 1)];
      if (!query.empty()) {
        CheckQuery(tree, layout.axis(), stored, query, shift, rng);
        ++queries;
      }
    }
  }
  for (const Lifetime& query : lifetimes) {
    if (query.empty()) continue;
    CheckQuery(tree, layout.axis(), stored, query, shift, rng);
    ++queries;
  }
  return queries;
}

}  // namespace

int main() {
  const auto begin = std::chrono::steady_clock::now();
  int64_t queries = 0;
  constexpr uint64_t kCases = 3000;
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    memplan_test::SetContext("random case seed " + std::to_string(seed));
    queries += RunRandomCase(seed, seed % 3 == 0 ? Offset{1} << 60 : 0,
                             seed % 2 == 0 ? Offset{1} << (seed / 2 % 4) : 1);
  }
  memplan_test::SetContext("");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::cout << "occupancy_tree_test: " << kCases << " random cases, " << queries
            << " queries checked against brute force in " << seconds << " s\n";
  return memplan_test::Finish();
}
