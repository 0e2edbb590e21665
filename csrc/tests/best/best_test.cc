// PlanBest on random requests, held to best_oracle.h: a valid plan never worse
// than upstream's placers, the same when run twice, failures only where they
// fail, claims of optimality that brute force confirms on tiny requests; and
// bad input refused as Plan() refuses it, and the budget.
#include <chrono>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/best/best.h"
#include "core/common/validator.h"
#include "core/placement/planner.h"
#include "tests/best/best_oracle.h"
#include "tests/common/check.h"

namespace {

using namespace cadence_memplan;
using namespace cadence_memplan::reference;

int64_t Pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Small hierarchies with alignments that are not powers of two, ties, zero
// sizes, empty lifetimes, blocklists, already-placed tensors (a valid state)
// and incoming offsets.
PlanRequest RandomRequest(std::mt19937_64& rng) {
  PlanRequest r;
  const int memory_count = static_cast<int>(Pick(rng, 1, 3));
  for (int m = 0; m < memory_count; ++m) {
    r.memories.push_back({Pick(rng, 64, 1500), std::vector<Size>{1, 16, 37}[Pick(rng, 0, 2)]});
  }
  const int count = static_cast<int>(Pick(rng, 0, 60));
  const Time span = Pick(rng, 1, 30);
  for (int i = 0; i < count; ++i) {
    const Time start = Pick(rng, 0, span);
    const Lifetime lifetime = Pick(rng, 0, 15) == 0 ? Lifetime{start + 1, start}
                                                    : Lifetime{start, start + Pick(rng, 0, 8)};
    r.tensors.push_back(
        {lifetime, Pick(rng, 0, 4) == 0 ? 16 * Pick(rng, 0, 3) : Pick(rng, 1, 200)});
  }
  if (Pick(rng, 0, 3) == 0) {
    for (int i = 0; i < count; ++i) r.blocked.push_back(Pick(rng, 0, 4) == 0 ? MaskOf(1) : 0);
  }
  if (Pick(rng, 0, 2) == 0) {  // One placed tensor per memory, aligned, at its start.
    for (int m = 1; m <= memory_count; ++m) {
      const Size size = std::min<Size>(Pick(rng, 1, 64), r.memories[m - 1].size);
      r.placed.push_back({{{Pick(rng, 0, span), span}, size}, {static_cast<MemId>(m), 0}});
    }
  }
  if (Pick(rng, 0, 3) == 0) {
    for (int i = 0; i < count; ++i)
      r.incoming_offsets.push_back(Pick(rng, 0, 2) == 0 ? 32 : kNoOffset);
  }
  return r;
}

struct Stats {
  int64_t cases = 0, planned = 0, better = 0, failed = 0, proved = 0, brute_forced = 0;
};

void CheckRandomCase(uint64_t seed, Stats& stats) {
  std::mt19937_64 rng(seed);
  PlanRequest r = RandomRequest(rng);
  // Now and then an arbitrary state: placed tensors that overlap or sit unaligned.
  if (Pick(rng, 0, 9) == 0 && !r.placed.empty()) r.placed.push_back(r.placed.back());
  memplan_test::SetContext("seed " + std::to_string(seed));
  ++stats.cases;
  const BestCheck check = CheckBest(r, 40, 300, int64_t{1} << 20);
  if (!CHECK(check.problem.empty())) std::cerr << "    " << check.problem << "\n";
  stats.planned += check.outcome == BestOutcome::kPlanned;
  stats.failed += check.outcome == BestOutcome::kFailed;
  stats.better += check.better;
  stats.proved += check.proved;
  stats.brute_forced += check.brute_forced && check.proved;
}

// Tiny requests, one or two memories, where brute force can check every
// claim of optimality and every lower bound (best_oracle.h).
PlanRequest TinyRequest(std::mt19937_64& rng) {
  PlanRequest r;
  const int memory_count = static_cast<int>(Pick(rng, 1, 2));
  for (int m = 0; m < memory_count; ++m) {
    r.memories.push_back({Pick(rng, 8, 30), Pick(rng, 1, 3)});
  }
  const int count = static_cast<int>(Pick(rng, 1, 5));
  for (int i = 0; i < count; ++i) {
    const Time start = Pick(rng, 0, 4);
    r.tensors.push_back(
        {{start, start + Pick(rng, 0, 3)}, Pick(rng, 0, 6) == 0 ? 0 : Pick(rng, 1, 8)});
  }
  if (Pick(rng, 0, 3) == 0) {  // An obstacle at any offset, unaligned too.
    const Size size = Pick(rng, 1, 4);
    r.placed.push_back(
        {{{Pick(rng, 0, 4), 4}, size}, {1, Pick(rng, 0, r.memories[0].size - size)}});
  }
  return r;
}

void CheckTinyCase(uint64_t seed, Stats& stats) {
  std::mt19937_64 rng(seed);
  const PlanRequest r = TinyRequest(rng);
  memplan_test::SetContext("tiny seed " + std::to_string(seed));
  ++stats.cases;
  const BestCheck check = CheckBest(r, 10, 100000, int64_t{1} << 22);
  if (!CHECK(check.problem.empty())) std::cerr << "    " << check.problem << "\n";
  stats.planned += check.outcome == BestOutcome::kPlanned;
  stats.proved += check.proved;
  stats.brute_forced += check.brute_forced && check.proved;
}

void TestBadInput() {
  memplan_test::SetContext("bad input");
  PlanRequest r;
  r.memories = {{0, 1}};
  bool refused = false;
  try {
    PlanBest(r);
  } catch (const InvalidInput& e) {
    refused = e.what() == CheckRequest(r);
  }
  CHECK(refused);
  r.memories = {{64, 16}};
  r.tensors = {{{0, 3}, 48}, {{1, 2}, 32}};  // 80 bytes alive at once in 64.
  bool failed = false;
  try {
    PlanBest(r);
  } catch (const PlanningFailure&) {
    failed = true;
  }
  CHECK(failed);
}

// The budget stops the search, but never before upstream's two placers ran.
void TestBudget() {
  memplan_test::SetContext("budget");
  std::mt19937_64 rng(7);
  PlanRequest r;
  r.memories = {{20000, 16}};
  for (int i = 0; i < 300; ++i)
    r.tensors.push_back({{Pick(rng, 0, 50), Pick(rng, 50, 90)}, Pick(rng, 1, 40)});
  BestOptions none;
  none.budget_ms = 0;
  const BestResult cut = PlanBest(r, none);
  CHECK(cut.budget_exhausted);
  CHECK_EQ(cut.candidates, int64_t{2});
  CHECK_EQ(Validate(r.tensors, cut.plan.placements, r.memories), std::string());
}

// The portfolio runs in threads on large requests; the plan must be the one
// a single thread finds.
void TestThreadsGiveTheSamePlan() {
  memplan_test::SetContext("threads");
  std::mt19937_64 rng(11);
  PlanRequest r;
  r.memories = {{6000, 16}, {1 << 20, 64}};
  for (int i = 0; i < 3000; ++i) {
    const Time start = Pick(rng, 0, 2000);
    r.tensors.push_back({{start, start + Pick(rng, 0, 40)}, Pick(rng, 1, 300)});
  }
  BestOptions options;
  options.budget_ms = 1e12;
  options.improvement_rounds = 5;
  options.max_nodes = 20000;  // The exact search's work, the same under any threads.
  options.threads = 1;
  const BestResult alone = PlanBest(r, options);
  options.threads = 4;
  const BestResult together = PlanBest(r, options);
  CHECK_EQ(together.order, alone.order);
  CHECK_EQ(together.strategy, alone.strategy);
  CHECK_EQ(together.candidates, alone.candidates);
  CHECK_EQ(together.search_nodes, alone.search_nodes);
  bool same = true;
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    same &= together.plan.placements[i].mem_id == alone.plan.placements[i].mem_id &&
            together.plan.placements[i].offset == alone.plan.placements[i].offset;
  }
  CHECK(same);
}

}  // namespace

int main() {
  const auto begin = std::chrono::steady_clock::now();
  TestBadInput();
  TestBudget();
  TestThreadsGiveTheSamePlan();
  Stats stats;
  for (uint64_t seed = 1; seed <= 1500; ++seed) CheckRandomCase(seed, stats);
  Stats tiny;
  for (uint64_t seed = 1; seed <= 1500; ++seed) CheckTinyCase(seed, tiny);
  memplan_test::SetContext("");
  // The comparisons must not be vacuous.
  CHECK(stats.planned > stats.cases / 2);
  CHECK(stats.better > stats.cases / 20);
  CHECK(tiny.brute_forced > tiny.cases / 2);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::cout << "best_test: " << stats.cases << " random requests (" << stats.planned << " planned, "
            << stats.better << " better than both upstream placers, " << stats.failed
            << " failed as both did, " << stats.proved << " proved optimal), and " << tiny.cases
            << " tiny ones (" << tiny.proved << " proved optimal, " << tiny.brute_forced
            << " of them checked by brute force) in " << seconds << " s\n";
  return memplan_test::Finish();
}
