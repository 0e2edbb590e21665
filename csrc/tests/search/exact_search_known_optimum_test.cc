// The exact search (exact_search.h) on packings whose optimum is known by
// construction: a rectangle of capacity x time cut into tensors, by
// guillotine cuts, and by pinwheels (cut_rectangles.h), which decomposition
// cannot take apart. The optimum is the rectangle's height: the search must
// return a valid packing, never claim a bound above it, and prove it within
// its node budget. On larger ones, the descent spends its budget below its
// best plan: it does not stall.
#include "core/search/exact_search.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tests/common/check.h"
#include "tests/search/cut_rectangles.h"
#include "tests/search/exact_search_support.h"

namespace {

using namespace cadence_memplan;
using namespace cadence_memplan::search_test;

void TestKnownOptimum() {
  std::mt19937_64 rng(2023);
  int proved = 0;
  const int cases = 30;
  for (int c = 0; c < cases; ++c) {
    const Size a = std::vector<Size>{1, 3, 16}[c % 3];
    const Size units = Pick(rng, 8, 64);
    const PackingProblem p =
        CutRectangleProblem(rng, units, Pick(rng, 4, 40), static_cast<int>(Pick(rng, 5, 60)), a);
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

}  // namespace

int main() {
  TestKnownOptimum();
  TestCutRectangleSets();
  TestDescentDoesNotStall();
  return memplan_test::Finish();
}
