// The exact search (exact_search.h) against brute force (packing_oracle.h),
// which shares none of its code or theory: every offset of every tensor, on
// tiny problems with any alignment, zero sizes, empty lifetimes and
// unaligned obstacles. FitInCapacity must answer exactly when a packing
// exists, and MinimizeBufsize must reach the optimum, prove it, and never
// claim a bound above it. On each problem a top repack from a poor packing
// stays valid and squeaky dives pack it; alignment 3 is checked by hand.
#include "core/search/exact_search.h"

#include <chrono>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/search/top_repack.h"
#include "tests/common/check.h"
#include "tests/search/exact_search_support.h"
#include "tests/search/packing_oracle.h"

namespace {

using namespace cadence_memplan;
using namespace cadence_memplan::search_test;

// The smallest bufsize of any packing within `capacity`, or -1.
Size BruteForceOptimum(const PackingProblem& p, Size capacity) {
  std::vector<std::pair<Tensor, Offset>> obstacles;
  for (const Obstacle& o : p.obstacles) obstacles.push_back({o.tensor, o.offset});
  return *reference::BruteForcePacking(p.tensors, obstacles, p.alignment, capacity)
              .Optimum(std::numeric_limits<int64_t>::max());
}

PackingProblem TinyProblem(std::mt19937_64& rng) {
  PackingProblem p;
  p.alignment = std::vector<Size>{1, 1, 2, 3, 4, 5}[Pick(rng, 0, 5)];
  const int count = static_cast<int>(Pick(rng, 0, 6));
  for (int i = 0; i < count; ++i) {
    const Time start = Pick(rng, 0, 5);
    const Lifetime lifetime = Pick(rng, 0, 9) == 0 ? Lifetime{start + 1, start}
                                                   : Lifetime{start, start + Pick(rng, 0, 3)};
    p.tensors.push_back({lifetime, Pick(rng, 0, 5) == 0 ? 0 : Pick(rng, 1, 9)});
  }
  // Sizes with a common factor: the search's grain (unit_problem.h).
  if (Pick(rng, 0, 2) == 0) {
    const Size factor = Pick(rng, 2, 3);
    for (Tensor& t : p.tensors) t.size *= factor;
  }
  const int obstacles = static_cast<int>(Pick(rng, 0, 3) == 0 ? Pick(rng, 1, 2) : 0);
  for (int k = 0; k < obstacles; ++k) {
    const Time start = Pick(rng, 0, 5);
    p.obstacles.push_back({{{start, start + Pick(rng, 0, 3)}, Pick(rng, 1, 6)}, Pick(rng, 0, 10)});
  }
  return p;
}

struct Stats {
  int64_t problems = 0, fits = 0, does_not_fit = 0, improved = 0, repacked = 0, dives = 0;
};

// The highest aligned end of the tensors (not the obstacles) at `offsets`.
Size TensorsTop(const PackingProblem& p, const std::vector<Offset>& offsets) {
  Size top = 0;
  for (size_t t = 0; t < p.tensors.size(); ++t) {
    if (p.tensors[t].size > 0 && !p.tensors[t].lifetime.empty()) {
      top = std::max(top, AlignUp(offsets[t] + p.tensors[t].size, p.alignment));
    }
  }
  return top;
}

// TopRepack from `incumbent` toward every target below its top: the
// packing stays valid and no higher, and a target it says it reached is.
void CheckTopRepack(const PackingProblem& p, Size capacity, const std::vector<Offset>& incumbent,
                    Stats& stats) {
  const Size top = TensorsTop(p, incumbent);
  for (Size target = 1; target < top; ++target) {
    TopRepack repack(p, incumbent);
    const bool reached = repack.RepackTo(target, 1 << 16, 8, Nodes(1 << 20));
    CHECK_EQ(PackingProblemWith(p, capacity, repack.offsets()), std::string());
    CHECK(TensorsTop(p, repack.offsets()) <= top);
    if (reached) {
      ++stats.repacked;
      CHECK(TensorsTop(p, repack.offsets()) <= target);
    }
  }
}

void CheckAgainstBruteForce(uint64_t seed, Stats& stats) {
  std::mt19937_64 rng(seed);
  const PackingProblem p = TinyProblem(rng);
  const Size capacity = Pick(rng, 1, 30);
  memplan_test::SetContext("brute force, seed " + std::to_string(seed));
  ++stats.problems;
  const Size optimum = BruteForceOptimum(p, capacity);
  // Every capacity up to this one: FitInCapacity answers exactly.
  for (Size c = 1; c <= capacity; ++c) {
    const bool exists = optimum >= 0 && BruteForceOptimum(p, c) >= 0;
    const FitResult fit = FitInCapacity(p, c, Nodes(1 << 20));
    if (!CHECK(fit.fit != Fit::kUnknown)) return;
    if (!CHECK_EQ(fit.fit == Fit::kFits, exists)) {
      std::cerr << "    capacity " << c << "\n";
      return;
    }
    if (fit.fit == Fit::kFits) {
      ++stats.fits;
      CHECK_EQ(PackingProblemWith(p, c, fit.offsets), std::string());
    } else {
      ++stats.does_not_fit;
    }
  }
  const std::vector<Offset> incumbent = FirstFitPacking(p, capacity, /*from_top=*/true);
  if (incumbent.empty()) return;
  CheckTopRepack(p, capacity, incumbent, stats);
  stats.dives += static_cast<int64_t>(CheckSqueakyDives(p, 4).size());
  const PackingResult result = MinimizeBufsize(p, capacity, incumbent, Nodes(1 << 20));
  CHECK_EQ(PackingProblemWith(p, capacity, result.offsets), std::string());
  CHECK_EQ(result.bufsize, BufsizeOf(p, result.offsets));
  CHECK_EQ(result.bufsize, optimum);
  CHECK(result.proved_optimal());
  CHECK(result.lower_bound <= optimum);
  stats.improved += result.bufsize < BufsizeOf(p, incumbent);
}

// Alignment 3 (not a power of two): sizes 4 and 2 take 2 and 1 units; the
// unaligned obstacle [7, 8) forbids units 2 for the 2-byte tensor... by bytes.
void TestAlignmentByHand() {
  memplan_test::SetContext("alignment 3");
  PackingProblem p;
  p.alignment = 3;
  p.tensors = {{{0, 1}, 4}, {{0, 1}, 2}};
  p.obstacles = {{{{1, 1}, 1}, 7}};
  // 4 bytes at 0 (aligned end 6), 2 bytes at 6 would be [6, 8): meets 7.
  // So: 2 bytes at 0, 4 bytes at 3 ([3, 7), aligned end 9), bufsize 9.
  const std::vector<Offset> incumbent = {0, 9};
  const PackingResult result = MinimizeBufsize(p, 12, incumbent, Nodes(1000));
  CHECK_EQ(result.bufsize, Size{9});
  CHECK(result.proved_optimal());
  CHECK_EQ(PackingProblemWith(p, 12, result.offsets), std::string());
  CHECK(FitInCapacity(p, 8, Nodes(1000)).fit == Fit::kDoesNotFit);
  CHECK(FitInCapacity(p, 9, Nodes(1000)).fit == Fit::kFits);
}

}  // namespace

int main() {
  const auto begin = std::chrono::steady_clock::now();
  TestAlignmentByHand();
  Stats stats;
  for (uint64_t seed = 1; seed <= 600; ++seed) CheckAgainstBruteForce(seed, stats);
  memplan_test::SetContext("");
  // The comparison must not be vacuous.
  CHECK(stats.fits > 1000);
  CHECK(stats.does_not_fit > 1000);
  CHECK(stats.improved > 20);
  CHECK(stats.repacked > 20);
  CHECK(stats.dives > 1000);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::cout << "exact_search_brute_force_test: " << stats.problems
            << " tiny problems against brute force (" << stats.fits << " capacities that fit, "
            << stats.does_not_fit << " that do not, " << stats.improved
            << " improved on a first fit from the top, " << stats.repacked
            << " targets a top repack reached, " << stats.dives << " squeaky dives) in " << seconds
            << " s\n";
  return memplan_test::Finish();
}
