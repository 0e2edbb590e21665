// The scheduler against brute force over every legal order of small random
// problems, with a peak count of its own (step by step, no sweep); the
// exchange rules on the shapes they are for; bad input; determinism, budgets
// and interruption.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/common/errors.h"
#include "core/schedule/schedule.h"
#include "tests/common/check.h"

namespace {

using namespace cadence_memplan;
using namespace cadence_memplan::schedule;

int64_t Pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Bytes alive at each step, counted step by step from the definition.
Size NaivePeak(const ScheduleProblem& problem, const std::vector<UnitIndex>& order) {
  const int64_t n = problem.units;
  std::vector<int64_t> step(n);
  for (int64_t s = 0; s < n; ++s) step[order[s]] = s;
  Size peak = 0;
  for (int64_t t = 0; t < n; ++t) {
    Size alive = 0;
    for (const Buffer& buffer : problem.buffers) {
      const int64_t born = buffer.producer < 0 ? 0 : step[buffer.producer];
      int64_t dies = born;
      for (const UnitIndex user : buffer.users) dies = std::max(dies, step[user]);
      if (buffer.live_to_end) dies = n - 1;
      if (born <= t && t <= dies) alive += buffer.size;
    }
    peak = std::max(peak, alive);
  }
  return peak;
}

// Every legal order, depth first; `visit` sees each.
void EachOrder(const ScheduleProblem& problem,
               const std::function<void(const std::vector<UnitIndex>&)>& visit) {
  const int32_t n = problem.units;
  std::vector<std::vector<UnitIndex>> preds(n);
  for (const auto& [before, after] : problem.edges) preds[after].push_back(before);
  for (const Buffer& buffer : problem.buffers) {
    for (const UnitIndex user : buffer.users) {
      if (buffer.producer >= 0 && user != buffer.producer) preds[user].push_back(buffer.producer);
    }
  }
  std::vector<UnitIndex> order;
  std::vector<bool> done(n, false);
  std::function<void()> extend = [&] {
    if (static_cast<int32_t>(order.size()) == n) return visit(order);
    for (UnitIndex u = 0; u < n; ++u) {
      if (done[u]) continue;
      bool ready = true;
      for (const UnitIndex q : preds[u]) ready = ready && done[q];
      if (!ready) continue;
      done[u] = true;
      order.push_back(u);
      extend();
      order.pop_back();
      done[u] = false;
    }
  };
  extend();
}

ScheduleProblem RandomProblem(std::mt19937_64& rng, int32_t n) {
  ScheduleProblem problem;
  problem.units = n;
  for (int32_t after = 1; after < n; ++after) {
    for (int32_t before = 0; before < after; ++before) {
      if (Pick(rng, 0, 9) == 0) problem.edges.push_back({before, after});
    }
  }
  const int64_t buffers = Pick(rng, 0, n + 3);
  for (int64_t b = 0; b < buffers; ++b) {
    Buffer buffer;
    buffer.producer = static_cast<UnitIndex>(Pick(rng, -1, n - 1));
    // Sizes that tie often, and some zero-size buffers (edges only).
    buffer.size = Pick(rng, 0, 4) == 0 ? 0 : Pick(rng, 1, 6) * 16;
    const int64_t users = n == 0 ? 0 : Pick(rng, 0, 3);
    for (int64_t k = 0; k < users; ++k) {
      buffer.users.push_back(
          static_cast<UnitIndex>(Pick(rng, std::max<int64_t>(0, buffer.producer), n - 1)));
    }
    buffer.live_to_end = Pick(rng, 0, 7) == 0;
    problem.buffers.push_back(buffer);
  }
  return problem;
}

ScheduleOptions Budget(int64_t work) {
  ScheduleOptions options;
  options.work_budget = work;
  return options;
}

void CheckAgainstBruteForce() {
  std::mt19937_64 rng(20261203);
  int64_t improved = 0, compared = 0;
  for (int trial = 0; trial < 700; ++trial) {
    const int32_t n = static_cast<int32_t>(Pick(rng, 0, 8));
    const ScheduleProblem problem = RandomProblem(rng, n);
    memplan_test::SetContext("brute force, trial " + std::to_string(trial));
    Size best = -1;
    EachOrder(problem, [&](const std::vector<UnitIndex>& order) {
      const Size peak = NaivePeak(problem, order);
      best = best < 0 ? peak : std::min(best, peak);
    });
    std::vector<UnitIndex> given(n);
    std::iota(given.begin(), given.end(), 0);
    const ScheduleResult result = Schedule(problem, Budget(int64_t{1} << 40));
    CHECK_EQ(CheckOrder(problem, result.order), std::string());
    CHECK_EQ(result.peak_live, NaivePeak(problem, result.order));
    CHECK_EQ(PeakLiveOf(problem, result.order), NaivePeak(problem, result.order));
    CHECK_EQ(result.given_peak_live, NaivePeak(problem, given));
    CHECK(result.lower_bound <= best);
    // With all the work it wants, the search is exact and says so.
    CHECK_EQ(result.peak_live, best);
    CHECK(result.proved_optimal);
    if (result.peak_live == result.given_peak_live) {
      CHECK_EQ(result.strategy, std::string("given"));
      CHECK(result.order == given);
    }
    improved += result.peak_live < result.given_peak_live;
    ++compared;
    // A tiny budget still returns a legal order, never worse than the given one.
    const ScheduleResult quick = Schedule(problem, Budget(Pick(rng, 0, 6)));
    CHECK_EQ(CheckOrder(problem, quick.order), std::string());
    CHECK(quick.peak_live <= quick.given_peak_live);
    CHECK_EQ(quick.peak_live, NaivePeak(problem, quick.order));
  }
  // The random problems exercise the search, not only the given order.
  CHECK(improved > compared / 10);
}

// A decoder's shape: each layer updates its cache (a big buffer read by the
// layer's attention and by a write-back), and the given order puts every
// write-back at the end, as exir does. Running each write-back (which
// allocates nothing) as soon as it can keeps one updated cache alive, not all.
void CheckWriteBacksMoveUp() {
  memplan_test::SetContext("write-backs");
  constexpr int32_t kLayers = 6;
  ScheduleProblem problem;
  // Units: per layer an update (2i) and an attention (2i + 1), then the
  // write-backs (2 * kLayers + i).
  problem.units = 3 * kLayers;
  for (int32_t layer = 0; layer < kLayers; ++layer) {
    const UnitIndex update = 2 * layer, attention = update + 1, write_back = 2 * kLayers + layer;
    problem.buffers.push_back({update, 1000, {attention, write_back}, false});  // the new cache
    Buffer activation{attention, 10, {}, layer + 1 == kLayers};
    if (layer + 1 < kLayers) activation.users.push_back(attention + 1);  // the next update
    problem.buffers.push_back(activation);
  }
  const ScheduleResult result = Schedule(problem, Budget(1 << 20));
  CHECK_EQ(CheckOrder(problem, result.order), std::string());
  CHECK(result.given_peak_live >= kLayers * 1000);
  CHECK_EQ(result.peak_live, Size{1000 + 10});
  CHECK(result.proved_optimal);
  CHECK_EQ(result.peak_live, result.lower_bound);
}

// Weights' transposes: units that read no buffer and make one a later unit
// reads. Given first (all alive at once), they belong just before their reader.
void CheckSourcesMoveDown() {
  memplan_test::SetContext("deferred sources");
  constexpr int32_t kLayers = 5;
  ScheduleProblem problem;
  problem.units = 2 * kLayers;
  for (int32_t layer = 0; layer < kLayers; ++layer) {
    const UnitIndex transpose = layer, linear = kLayers + layer;
    problem.buffers.push_back({transpose, 500, {linear}, false});
    if (layer + 1 < kLayers) problem.buffers.push_back({linear, 20, {linear + 1}, false});
  }
  problem.buffers.back().live_to_end = true;
  const ScheduleResult result = Schedule(problem, Budget(1 << 20));
  CHECK_EQ(CheckOrder(problem, result.order), std::string());
  CHECK_EQ(result.given_peak_live, Size{kLayers * 500 + 20});
  CHECK(result.peak_live <= 500 + 20 + 20);
  CHECK(result.proved_optimal);
}

// An input nobody reads is alive at the first step, whichever unit runs
// there. Here the source (unit 2) belongs first: there it carries the unread
// input with its own 8 bytes (24), where deferring it would put the unread
// input beside unit 0's 16 bytes (32). Found by hypothesis.
void CheckSourceTakesTheUnreadInput() {
  memplan_test::SetContext("source before an unread input");
  ScheduleProblem problem;
  problem.units = 4;
  problem.edges = {{0, 1}, {0, 3}, {1, 3}, {2, 3}};
  problem.buffers = {
      {kBeforeProgram, 16, {}, false},  // an input nobody reads
      {0, 16, {}, false},               // read by nobody: alive at unit 0's step
      {2, 8, {3}, false},               // the source's output
  };
  const ScheduleResult result = Schedule(problem, Budget(1 << 20));
  CHECK_EQ(result.given_peak_live, Size{32});
  CHECK_EQ(result.peak_live, Size{24});
  CHECK(result.order == std::vector<UnitIndex>({2, 0, 1, 3}));
  CHECK(result.proved_optimal);
}

// Two heavy branches that share an input and join: whichever runs first
// leaves its output alive during the other's heavy step. No single unit's
// bound sees it (each branch may run after the other); the pair's cut does,
// and proves the given order optimal without a search.
void CheckPairBoundProves() {
  memplan_test::SetContext("pair bound");
  ScheduleProblem problem;
  problem.units = 6;
  problem.buffers = {
      {0, 256, {2, 4}, false},    // the shared input
      {1, 65536, {2}, false},     // a weight's transpose
      {2, 1024, {5}, false},      // branch A's output
      {3, 65536, {4}, false},     // another weight
      {4, 1024, {5}, false},      // branch B's output
      {5, 16, {}, true},          // the join, a graph output
  };
  const Size optimum = 256 + 1024 + 65536 + 1024;
  Size best = -1;
  EachOrder(problem, [&](const std::vector<UnitIndex>& order) {
    const Size peak = NaivePeak(problem, order);
    best = best < 0 ? peak : std::min(best, peak);
  });
  CHECK_EQ(best, optimum);
  CHECK_EQ(ScheduleLowerBound(problem), optimum);
  const ScheduleResult result = Schedule(problem, Budget(1 << 20));
  CHECK_EQ(result.peak_live, optimum);
  CHECK(result.proved_optimal);
  CHECK_EQ(result.work, int64_t{0});  // Proved by the bound alone.
}

void CheckBadInput() {
  memplan_test::SetContext("bad input");
  const auto error_of = [](const ScheduleProblem& problem) {
    try {
      Schedule(problem, Budget(10));
    } catch (const InvalidInput& invalid) {
      CHECK_EQ(CheckProblem(problem), std::string(invalid.what()));
      return std::string(invalid.what());
    }
    return std::string();
  };
  ScheduleProblem problem;
  problem.units = 3;
  problem.edges = {{2, 1}};
  CHECK(error_of(problem).find("edge 0 is (2, 1)") != std::string::npos);
  problem.edges = {{0, 3}};
  CHECK(!error_of(problem).empty());
  problem.edges.clear();
  problem.buffers = {{1, 8, {0}, false}};
  CHECK(error_of(problem).find("read by unit 0 before its producer, unit 1") != std::string::npos);
  problem.buffers = {{0, -1, {}, false}};
  CHECK(error_of(problem).find("size -1") != std::string::npos);
  problem.buffers = {{3, 1, {}, false}};
  CHECK(error_of(problem).find("producer 3") != std::string::npos);
  problem.buffers = {{0, kMaxByteValue, {}, false}, {1, 1, {}, false}};
  CHECK(error_of(problem).find("add up") != std::string::npos);
  problem.buffers.clear();
  problem.units = -1;
  CHECK(!error_of(problem).empty());

  ScheduleProblem chain;
  chain.units = 3;
  chain.edges = {{0, 1}};
  chain.buffers = {{1, 4, {2}, false}};
  CHECK_EQ(CheckOrder(chain, {0, 1, 2}), std::string());
  CHECK(CheckOrder(chain, {1, 0, 2}).find("edge 0") != std::string::npos);
  CHECK(CheckOrder(chain, {0, 2, 1}).find("reads buffer 0") != std::string::npos);
  CHECK(CheckOrder(chain, {0, 0, 1}).find("twice") != std::string::npos);
  CHECK(CheckOrder(chain, {0, 1}).find("2 units") != std::string::npos);
}

void CheckBudgetsAndInterrupts() {
  memplan_test::SetContext("budgets");
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const ScheduleProblem problem = RandomProblem(rng, static_cast<int32_t>(Pick(rng, 20, 60)));
    const ScheduleResult first = Schedule(problem, Budget(5000));
    const ScheduleResult second = Schedule(problem, Budget(5000));
    CHECK(first.order == second.order);
    CHECK_EQ(first.work, second.work);
    CHECK(first.work <= 5000 + 1);
    CHECK_EQ(CheckOrder(problem, first.order), std::string());
    CHECK(first.peak_live <= first.given_peak_live);
    CHECK(first.lower_bound <= first.peak_live);
  }
  // Interrupted: the check runs on the first poll; nothing is returned.
  std::mt19937_64 big_rng(11);
  ScheduleProblem problem = RandomProblem(big_rng, 200);
  ScheduleOptions options = Budget(int64_t{1} << 40);
  options.interrupt = Interrupt([](Phase, int64_t) { return true; });
  bool interrupted = false;
  try {
    const ScheduleResult result = Schedule(problem, options);
    interrupted = result.proved_optimal && result.work == 0;  // Nothing to search.
  } catch (const Interrupted&) {
    interrupted = true;
  }
  CHECK(interrupted);
  // A deadline already past cuts the search short, with a legal order.
  options.interrupt = Interrupt();
  options.deadline = std::chrono::steady_clock::now();
  const ScheduleResult cut = Schedule(problem, options);
  CHECK_EQ(CheckOrder(problem, cut.order), std::string());
  CHECK(cut.cut_short || cut.proved_optimal);
}

}  // namespace

int main() {
  CheckAgainstBruteForce();
  CheckWriteBacksMoveUp();
  CheckSourcesMoveDown();
  CheckSourceTakesTheUnreadInput();
  CheckPairBoundProves();
  CheckBadInput();
  CheckBudgetsAndInterrupts();
  return memplan_test::Finish();
}
