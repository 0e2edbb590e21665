// PlanBest on random requests, held to best_oracle.h: a valid plan never worse
// than upstream's placers, the same when run twice, failures only where they
// fail, claims of optimality that brute force confirms on tiny requests; and
// bad input refused as Plan() refuses it, and the budget.
#include <chrono>
#include <cmath>
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

// The budget stops the search, but never before upstream's two placers ran:
// the work budget without a clock, the wall-clock cap with one, said in
// cut_short; the work counted is the work allowed, and a negative budget is
// refused.
void TestBudget() {
  memplan_test::SetContext("budget");
  std::mt19937_64 rng(7);
  PlanRequest r;
  r.memories = {{20000, 16}};
  for (int i = 0; i < 300; ++i)
    r.tensors.push_back({{Pick(rng, 0, 50), Pick(rng, 50, 90)}, Pick(rng, 1, 40)});
  BestOptions none;
  none.work_budget = 0;
  const BestResult spent = PlanBest(r, none);
  CHECK(spent.budget_exhausted);
  CHECK(!spent.cut_short);
  CHECK_EQ(spent.candidates, int64_t{2});
  CHECK_EQ(spent.work, 2 * PlacementWork(r.tensors.size()));
  CHECK_EQ(Validate(r.tensors, spent.plan.placements, r.memories), std::string());
  BestOptions capped;
  capped.budget_ms = 0;
  const BestResult cut = PlanBest(r, capped);
  CHECK(cut.budget_exhausted);
  CHECK(cut.cut_short);
  CHECK_EQ(cut.candidates, int64_t{2});
  CHECK_EQ(Validate(r.tensors, cut.plan.placements, r.memories), std::string());
  // Enough work for the portfolio and a few rounds, no more.
  BestOptions few;
  few.work_budget = 15 * PlacementWork(r.tensors.size());
  const BestResult some = PlanBest(r, few);
  CHECK(some.work <= few.work_budget + PlacementWork(r.tensors.size()));
  CHECK(!some.cut_short);
  const auto refused = [&](const BestOptions& options) {
    try {
      PlanBest(r, options);
    } catch (const InvalidInput&) {
      return true;
    }
    return false;
  };
  for (const double bad : {-1.0, std::nan("")}) {
    BestOptions invalid;
    invalid.budget_ms = bad;
    CHECK(refused(invalid));
  }
  BestOptions negative;
  negative.work_budget = -1;
  CHECK(refused(negative));
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
  options.improvement_rounds = 5;
  options.work_budget = 200000;  // Counted work: the same under any threads.
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

// Polls of each phase of one PlanBest call on `r`, counted by a poll
// function that never stops it.
std::vector<int64_t> PollsPerPhase(const PlanRequest& r, const BestOptions& options) {
  std::vector<int64_t> polls(kPhaseCount, 0);
  PlanRequest counted = r;
  counted.interrupt = Interrupt([&](Phase phase, int64_t number) {
    polls[static_cast<size_t>(phase)] = number;
    return false;
  });
  PlanBest(counted, options);
  return polls;
}

// A stop at the 1st, 2nd or 7th poll of any phase ends PlanBest with
// Interrupted: no step swallows it (fit first's search once did, and the plan
// ran on to the end of its budget). The polls are counted in work, so on one
// thread the same request polls the same phases the same number of times
// (with more, how many nodes the calling thread's members ran varies); a
// stop on two threads is heard too.
void TestInterruptedInEveryPhase() {
  std::mt19937_64 rng(13);
  PlanRequest hierarchy;  // Spills: the squeaky wheel, memory 1 grown, searches.
  hierarchy.memories = {{3000, 16}, {1 << 20, 64}};
  PlanRequest one;  // One memory: the exact search minimises its bufsize.
  one.memories = {{1 << 20, 1}};
  for (int i = 0; i < 400; ++i) {
    const Time start = Pick(rng, 0, 300);
    const Tensor t{{start, start + Pick(rng, 0, 30)}, Pick(rng, 1, 400)};
    hierarchy.tensors.push_back(t);
    one.tensors.push_back(t);
  }
  BestOptions options;
  options.work_budget = 40000;
  std::vector<bool> reached(kPhaseCount, false);
  const std::vector<std::pair<const PlanRequest*, int>> runs = {
      {&hierarchy, 1}, {&one, 1}, {&one, 2}};
  for (const auto& [r, threads] : runs) {
    options.threads = threads;
    std::vector<int64_t> polls = PollsPerPhase(*r, options);
    if (options.threads == 1) {
      CHECK(polls == PollsPerPhase(*r, options));
    } else {
      polls = std::vector<int64_t>(kPhaseCount, 0);  // Only a search's first poll is sure.
      polls[static_cast<size_t>(Phase::kSearch)] = 1;
    }
    for (int k = 0; k < kPhaseCount; ++k) {
      const auto phase = static_cast<Phase>(k);
      for (int64_t number : {1, 2, 7}) {
        if (number > polls[k]) continue;
        reached[k] = true;
        memplan_test::SetContext(std::string("interrupted at poll ") + std::to_string(number) +
                                 " of " + PhaseName(phase));
        PlanRequest stopped = *r;
        int64_t after = 0;  // Polls that reached the function after the stop.
        bool stop = false;
        stopped.interrupt = Interrupt([&](Phase p, int64_t n) {
          if (stop) ++after;
          stop |= p == phase && n == number;
          return stop;
        });
        bool thrown = false;
        try {
          PlanBest(stopped, options);
        } catch (const Interrupted&) {
          thrown = true;
        }
        CHECK(thrown);
        CHECK_EQ(after, int64_t{0});
      }
    }
  }
  memplan_test::SetContext("interrupted in every phase");
  // Every phase of a plan is reached by one of the two requests.
  for (Phase phase : {Phase::kCheck, Phase::kIndex, Phase::kOrder, Phase::kPlace, Phase::kResult,
                      Phase::kValidate, Phase::kSearch, Phase::kImprove}) {
    CHECK(reached[static_cast<size_t>(phase)]);
  }
}

}  // namespace

int main() {
  const auto begin = std::chrono::steady_clock::now();
  TestBadInput();
  TestBudget();
  TestThreadsGiveTheSamePlan();
  TestInterruptedInEveryPhase();
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
