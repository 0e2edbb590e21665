// The exact search (exact_search.h, canonical_search.h) under its limits:
// threads and node budgets change no answer, nor does running again; a
// search stopped at its node limit and run again with a larger one goes on
// where it stopped; a search whose undo logs pass their cap goes on as a
// dive, and gives up rather than answer wrongly when it must backtrack past
// what it kept; an interruption stops it at the poll that says stop.
#include "core/search/exact_search.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/search/canonical_search.h"
#include "core/search/unit_problem.h"
#include "tests/common/check.h"
#include "tests/search/exact_search_support.h"

namespace {

using namespace cadence_memplan;
using namespace cadence_memplan::search_test;

// Threads do not change the answer under a node budget; nor does running again.
void TestThreadsAndNodes() {
  std::mt19937_64 rng(99);
  for (int c = 0; c < 8; ++c) {
    const PackingProblem p = CutRectangleProblem(rng, 40, 30, 45, 1);
    const Size capacity = 200;
    const std::vector<Offset> incumbent = FirstFitPacking(p, capacity);
    memplan_test::SetContext("threads " + std::to_string(c));
    SearchLimits limits = Nodes(3000);
    limits.threads = 1;
    const PackingResult alone = MinimizeBufsize(p, capacity, incumbent, limits);
    limits.threads = 3;
    const PackingResult together = MinimizeBufsize(p, capacity, incumbent, limits);
    const PackingResult again = MinimizeBufsize(p, capacity, incumbent, limits);
    CHECK(together.offsets == alone.offsets);
    CHECK(again.offsets == alone.offsets);
    CHECK_EQ(together.nodes, alone.nodes);
    CHECK_EQ(together.lower_bound, alone.lower_bound);
    CHECK(alone.nodes <= 3000 + 3 * 3000);  // One decision may overrun what was left.
  }
}

// A search stopped at its node limit and run again with a larger one goes
// on where it stopped (canonical_search.h): run in steps of a few nodes, it
// gives the answer, the node count and the packing of one run, at
// capacities that fit, that do not, and that the limit leaves open.
void TestResumedSearch() {
  std::mt19937_64 rng(77);
  int answered = 0, open = 0;
  for (int c = 0; c < 24; ++c) {
    const Size units = Pick(rng, 8, 40);
    const PackingProblem p =
        CutRectangleProblem(rng, units, Pick(rng, 4, 30), static_cast<int>(Pick(rng, 10, 50)), 1);
    const detail::UnitProblem unit_problem(p);
    const detail::Unit capacity = units + Pick(rng, -2, 3);
    const std::string preorder = std::vector<std::string>{"TWA", "WAT", "TAW"}[c % 3];
    memplan_test::SetContext("resumed search " + std::to_string(c));
    const int64_t limit = 3000;
    const auto never = [] { return false; };
    detail::CanonicalSearch one(unit_problem, capacity, preorder);
    const detail::Outcome whole = one.Run(limit, never);
    detail::CanonicalSearch steps(unit_problem, capacity, preorder);
    detail::Outcome stepped = detail::Outcome::kAborted;
    for (int64_t to = 7; to <= limit && stepped == detail::Outcome::kAborted; to += 7) {
      stepped = steps.Run(to, never);
    }
    if (stepped == detail::Outcome::kAborted) stepped = steps.Run(limit, never);
    CHECK(whole == stepped);
    CHECK_EQ(one.nodes(), steps.nodes());
    if (whole == detail::Outcome::kFound) {
      CHECK(one.solution() == steps.solution());
      CHECK_EQ(PackingProblemWith(p, capacity, SolutionOffsets(p, unit_problem, steps.solution())),
               std::string());
    }
    answered += whole != detail::Outcome::kAborted;
    open += whole == detail::Outcome::kAborted;
  }
  memplan_test::SetContext("resumed search");
  CHECK(answered > 5);  // Not vacuous.
}

// Past its undo cap a search drops its oldest undo entries and goes on as a
// dive (canonical_search.h). With a cap of a few bytes it keeps almost
// nothing: it must still pack what packs without backtracking (a cut
// rectangle with room to spare: the first dive fits), and elsewhere either
// answer as the uncapped search does or give up; never claim that nothing
// fits when it could not search the whole tree.
void TestDivePastUndoCap() {
  std::mt19937_64 rng(31);
  int dives = 0, gave_up = 0, same = 0;
  for (int c = 0; c < 60; ++c) {
    // Every third a cut rectangle with room to spare, else one at its
    // bound, where searches backtrack.
    const bool roomy = c % 3 == 0;
    PackingProblem p;
    detail::Unit capacity = 0;
    if (roomy) {
      const Size units = Pick(rng, 8, 40);
      p = CutRectangleProblem(rng, units, Pick(rng, 4, 30), static_cast<int>(Pick(rng, 10, 50)), 1);
      capacity = 4 * units;
    } else {
      const Size units = Pick(rng, 16, 64);
      p = CutRectangleProblem(rng, units, Pick(rng, 10, 40), static_cast<int>(Pick(rng, 30, 80)),
                              1);
    }
    const detail::UnitProblem unit_problem(p);
    if (!roomy) capacity = unit_problem.lower_bound;
    memplan_test::SetContext("dive past the undo cap " + std::to_string(c));
    const auto never = [] { return false; };
    const int64_t limit = 20000;
    detail::CanonicalSearch full(unit_problem, capacity, "TWA");
    const detail::Outcome answer = full.Run(limit, never);
    detail::CanonicalSearch dive(unit_problem, capacity, "TWA", /*max_undo_bytes=*/16);
    const detail::Outcome outcome = dive.Run(limit, never);
    if (roomy) {
      // One dive packs it: the capped search answers, as the uncapped one.
      CHECK(answer == detail::Outcome::kFound);
      CHECK(outcome == detail::Outcome::kFound);
      CHECK(dive.solution() == full.solution());
      ++dives;
    }
    if (outcome == detail::Outcome::kFound) {
      CHECK_EQ(PackingProblemWith(p, capacity, SolutionOffsets(p, unit_problem, dive.solution())),
               std::string());
    }
    if (dive.gave_up()) {
      ++gave_up;
      CHECK(dive.Run(2 * limit, never) == detail::Outcome::kAborted);  // For good.
    } else {
      CHECK(outcome == answer);
      same += outcome != detail::Outcome::kAborted;
    }
  }
  memplan_test::SetContext("dive past the undo cap");
  CHECK(dives >= 10);
  CHECK(gave_up >= 5);  // Not vacuous: some needed backtracking.
  CHECK(same >= dives);
}

// An interruption stops the search at the poll that says stop, and throws.
void TestInterrupted() {
  memplan_test::SetContext("interrupted");
  std::mt19937_64 rng(5);
  // A hard problem: many small tensors in a tight capacity.
  PackingProblem p;
  for (int i = 0; i < 300; ++i) {
    const Time start = Pick(rng, 0, 100);
    p.tensors.push_back({{start, start + Pick(rng, 0, 30)}, Pick(rng, 1, 1000)});
  }
  const std::vector<Offset> incumbent = FirstFitPacking(p, 1 << 30);
  SearchLimits limits;
  int polls = 0;
  limits.interrupt = Interrupt([&](Phase, int64_t) { return ++polls >= 3; });
  limits.threads = 2;
  bool thrown = false;
  try {
    MinimizeBufsize(p, 1 << 30, incumbent, limits);
  } catch (const Interrupted&) {
    thrown = true;
  }
  // No poll after the one that said stop; proved optimal before the third
  // poll is fine too.
  CHECK(thrown ? polls == 3 : polls < 3);
}

}  // namespace

int main() {
  TestThreadsAndNodes();
  TestResumedSearch();
  TestDivePastUndoCap();
  TestInterrupted();
  return memplan_test::Finish();
}
