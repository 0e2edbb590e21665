// The exact search (exact_search.h) against oracles that share none of its
// code or theory:
//   * brute force (packing_oracle.h): every offset of every tensor, on tiny
//     problems with any alignment, zero sizes, empty
//     lifetimes and unaligned obstacles; FitInCapacity must answer exactly
//     when a packing exists, and MinimizeBufsize must reach the optimum, prove
//     it, and never claim a bound above it;
//   * packings known by construction: a rectangle of capacity x time cut into
//     tensors (guillotine cuts, and pinwheels, which decomposition cannot
//     take apart), whose optimum is the capacity; a top repack stays valid;
//   * squeaky dives: every dive a valid packing, the same sequence each
//     time, and later dives lower than the first (they learn);
//   * determinism under threads, node budgets, and interruption;
//   * a search run in steps (resumed) visits what one run visits; a search
//     whose undo logs pass their cap goes on as a dive, and gives up rather
//     than answer wrongly when it must backtrack past what it kept.
#include "core/search/exact_search.h"

#include <chrono>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/placement/planner.h"
#include "core/search/canonical_search.h"
#include "core/search/squeaky_dives.h"
#include "core/search/top_repack.h"
#include "core/search/unit_problem.h"
#include "tests/common/check.h"
#include "tests/search/cut_rectangles.h"
#include "tests/search/packing_oracle.h"

namespace {

using namespace cadence_memplan;

int64_t Pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

bool Conflict(const Tensor& a, Offset x, const Tensor& b, Offset y) {
  return reference::BruteForcePacking::Meet(a, x, b, y);
}

// "" when `offsets` pack the problem within `capacity`, else why not.
std::string PackingProblemWith(const PackingProblem& p, Size capacity,
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

Size BufsizeOf(const PackingProblem& p, const std::vector<Offset>& offsets) {
  Size bufsize = 0;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    bufsize = std::max(bufsize, AlignUp(offsets[i] + p.tensors[i].size, p.alignment));
  }
  for (const Obstacle& o : p.obstacles) {
    bufsize = std::max(bufsize, AlignUp(o.offset + o.tensor.size, p.alignment));
  }
  return bufsize;
}

// The smallest bufsize of any packing within `capacity`, or -1.
Size BruteForceOptimum(const PackingProblem& p, Size capacity) {
  std::vector<std::pair<Tensor, Offset>> obstacles;
  for (const Obstacle& o : p.obstacles) obstacles.push_back({o.tensor, o.offset});
  return *reference::BruteForcePacking(p.tensors, obstacles, p.alignment, capacity)
              .Optimum(std::numeric_limits<int64_t>::max());
}

// First fit in input order, from the bottom or (a poor packing on purpose)
// from the top of the capacity: a valid incumbent, or empty.
std::vector<Offset> FirstFitPacking(const PackingProblem& p, Size capacity, bool from_top = false) {
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

SearchLimits Nodes(int64_t nodes) {
  SearchLimits limits;
  limits.max_nodes = nodes;
  return limits;
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

// The byte offsets of a search's solution (lone tensors at 0).
std::vector<Offset> SolutionOffsets(const PackingProblem& p, const detail::UnitProblem& units,
                                    const std::vector<detail::Unit>& solution) {
  std::vector<Offset> offsets(p.tensors.size(), 0);
  for (size_t i = 0; i < units.items.size(); ++i) {
    offsets[units.items[i].tensor] = solution[i] * p.alignment;
  }
  return offsets;
}

// Squeaky dives (squeaky_dives.h), each pushed against the lowest top so
// far: every dive packs the problem (obstacles honoured) and reports its
// top. Returns the tops, in order.
std::vector<detail::Unit> CheckSqueakyDives(const PackingProblem& p, int count, Stats& stats) {
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
    ++stats.dives;
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
  CheckSqueakyDives(p, 4, stats);
  const PackingResult result = MinimizeBufsize(p, capacity, incumbent, Nodes(1 << 20));
  CHECK_EQ(PackingProblemWith(p, capacity, result.offsets), std::string());
  CHECK_EQ(result.bufsize, BufsizeOf(p, result.offsets));
  CHECK_EQ(result.bufsize, optimum);
  CHECK(result.proved_optimal());
  CHECK(result.lower_bound <= optimum);
  stats.improved += result.bufsize < BufsizeOf(p, incumbent);
}

// A capacity x time rectangle (in units of the alignment) cut into tensors
// by random guillotine cuts, each tensor up to alignment - 1 bytes short of
// its units: the rectangle is a packing, and nothing packs lower.
PackingProblem CutRectangle(std::mt19937_64& rng, Size units, Time span, int pieces, Size a) {
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

void TestKnownOptimum() {
  std::mt19937_64 rng(2023);
  int proved = 0;
  const int cases = 30;
  for (int c = 0; c < cases; ++c) {
    const Size a = std::vector<Size>{1, 3, 16}[c % 3];
    const Size units = Pick(rng, 8, 64);
    const PackingProblem p =
        CutRectangle(rng, units, Pick(rng, 4, 40), static_cast<int>(Pick(rng, 5, 60)), a);
    memplan_test::SetContext("cut rectangle " + std::to_string(c));
    const Size capacity = 4 * units * a;
    const std::vector<Offset> incumbent = FirstFitPacking(p, capacity);
    if (!CHECK(!incumbent.empty())) continue;
    const PackingResult result = MinimizeBufsize(p, capacity, incumbent, Nodes(1 << 22));
    CHECK_EQ(PackingProblemWith(p, capacity, result.offsets), std::string());
    CHECK_EQ(result.lower_bound, units * a);
    CHECK(result.bufsize >= units * a);
    proved += result.proved_optimal();
  }
  memplan_test::SetContext("cut rectangles");
  CHECK_EQ(proved, cases);  // Each within its node budget: deterministic.
}

// Pieces of a `height` x `span` rectangle (cut_rectangles.h) as a problem:
// checks that they tile it (they pack within it and fill it), then that the
// search from a first fit never claims a bound above `height` and returns a
// valid packing. True when it proved `height` optimal within its node budget
// (deterministic).
bool ProvesRectangle(const std::vector<memplan_test::CutPiece>& pieces, Size height, Time span) {
  PackingProblem p;
  p.tensors = memplan_test::Tensors(pieces);
  std::vector<Offset> rectangle;
  int64_t area = 0;
  for (const memplan_test::CutPiece& piece : pieces) {
    rectangle.push_back(piece.low);
    area += piece.size * (piece.lifetime.end - piece.lifetime.start + 1);
  }
  CHECK_EQ(PackingProblemWith(p, height, rectangle), std::string());
  CHECK_EQ(area, height * span);
  const Size capacity = 4 * height;
  const std::vector<Offset> incumbent = FirstFitPacking(p, capacity);
  if (!CHECK(!incumbent.empty())) return false;
  const PackingResult result = MinimizeBufsize(p, capacity, incumbent, Nodes(1 << 22));
  CHECK_EQ(PackingProblemWith(p, capacity, result.offsets), std::string());
  CHECK_EQ(result.lower_bound, height);
  CHECK(result.bufsize >= height);
  return result.proved_optimal();
}

// Both generators of cut_rectangles.h, small: guillotine cuts, and pinwheels,
// which no straight cut crosses, so that the search must find the tiling
// without decomposing it.
void TestCutRectangleSets() {
  int proved = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    memplan_test::SetContext("cut rectangle set " + std::to_string(seed));
    proved += ProvesRectangle(
        memplan_test::CutRectangle(seed, 6 + 3 * static_cast<int>(seed), 4096, 64), 4096, 64);
    memplan_test::SetContext("pinwheel rectangle " + std::to_string(seed));
    const int pieces = 5 + 4 * static_cast<int>(seed % 4 + 1);
    const auto pinwheels = memplan_test::PinwheelRectangle(seed, pieces, 4096, 64);
    CHECK_EQ(static_cast<int>(pinwheels.size()), pieces);
    proved += ProvesRectangle(pinwheels, 4096, 64);
  }
  memplan_test::SetContext("cut rectangle sets");
  CHECK_EQ(proved, 16);
}

// Threads do not change the answer under a node budget; nor does running again.
void TestThreadsAndNodes() {
  std::mt19937_64 rng(99);
  for (int c = 0; c < 8; ++c) {
    const PackingProblem p = CutRectangle(rng, 40, 30, 45, 1);
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
        CutRectangle(rng, units, Pick(rng, 4, 30), static_cast<int>(Pick(rng, 10, 50)), 1);
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
      p = CutRectangle(rng, units, Pick(rng, 4, 30), static_cast<int>(Pick(rng, 10, 50)), 1);
      capacity = 4 * units;
    } else {
      const Size units = Pick(rng, 16, 64);
      p = CutRectangle(rng, units, Pick(rng, 10, 40), static_cast<int>(Pick(rng, 30, 80)), 1);
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

// First fit in the caller's order, over the only offsets it needs (0 and
// the tops of the tensors placed before, alignment 1, no obstacles):
// cheap on byte-sized problems.
std::vector<Offset> FirstFitOnTops(const PackingProblem& p) {
  std::vector<Offset> offsets(p.tensors.size(), 0);
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    Offset best = -1;
    for (size_t c = 0; c <= i; ++c) {
      const Offset x = c == i ? 0 : offsets[c] + p.tensors[c].size;
      if (best >= 0 && x >= best) continue;
      bool free = true;
      for (size_t j = 0; j < i && free; ++j)
        free = !Conflict(p.tensors[i], x, p.tensors[j], offsets[j]);
      if (free) best = x;
    }
    offsets[i] = best;
  }
  return offsets;
}

// No stall: while the bound goes unanswered, the descent spends its nodes
// one unit below its best plan (exact_search.cc), to the end of its budget.
// So a packing one byte below the plan it returns, which a search from
// scratch finds in x nodes, was not left while more than 10 x of the
// budget remained. (The former schedule gave the rest of each budget to a
// probe at the bound: such packings were left tens of thousands of nodes
// before the end.)
void TestDescentDoesNotStall() {
  const int64_t budget = 60000;
  int open = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const auto pieces = memplan_test::CutRectangle(seed, 200, 1 << 20, 1024);
    PackingProblem p;
    p.tensors = memplan_test::Tensors(pieces);
    memplan_test::SetContext("descent does not stall " + std::to_string(seed));
    const std::vector<Offset> incumbent = FirstFitOnTops(p);
    const Size capacity = BufsizeOf(p, incumbent);
    const PackingResult result = MinimizeBufsize(p, capacity, incumbent, Nodes(budget));
    CHECK_EQ(PackingProblemWith(p, capacity, result.offsets), std::string());
    if (result.proved_optimal()) continue;
    ++open;
    const FitResult below = FitInCapacity(p, result.bufsize - 1, Nodes(budget / 10));
    const int64_t left = result.nodes - result.improvements.back().nodes;
    if (below.fit == Fit::kFits) CHECK(left <= 10 * below.nodes);
  }
  memplan_test::SetContext("descent does not stall");
  CHECK(open >= 2);  // Not vacuous.
}

// Squeaky dives learn: on cut rectangles, whose first dive wastes space,
// later dives come lower than the first (with no push, every dive would be
// the first), and a second run gives the same tops.
void TestSqueakyDivesLearn() {
  int lower = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    memplan_test::SetContext("squeaky dives " + std::to_string(seed));
    PackingProblem p;
    p.tensors = memplan_test::Tensors(
        seed % 2 == 0 ? memplan_test::CutRectangle(seed, 120, 1 << 20, 1024)
                      : memplan_test::PinwheelRectangle(seed, 121, 1 << 20, 1024));
    Stats stats;
    const std::vector<detail::Unit> tops = CheckSqueakyDives(p, 64, stats);
    CHECK(tops == CheckSqueakyDives(p, 64, stats));  // Deterministic.
    if (!CHECK(!tops.empty())) continue;
    lower += *std::min_element(tops.begin(), tops.end()) < tops.front();
  }
  memplan_test::SetContext("squeaky dives");
  CHECK(lower >= 6);
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
  TestKnownOptimum();
  TestCutRectangleSets();
  TestThreadsAndNodes();
  TestResumedSearch();
  TestDivePastUndoCap();
  TestDescentDoesNotStall();
  TestSqueakyDivesLearn();
  TestInterrupted();
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
  std::cout << "exact_search_test: " << stats.problems << " tiny problems against brute force ("
            << stats.fits << " capacities that fit, " << stats.does_not_fit << " that do not, "
            << stats.improved << " improved on a first fit from the top, " << stats.repacked
            << " targets a top repack reached, " << stats.dives << " squeaky dives) in " << seconds
            << " s\n";
  return memplan_test::Finish();
}
