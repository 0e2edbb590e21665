// Squeaky dives (squeaky_dives.h) on cut rectangles (cut_rectangles.h):
// every dive a valid packing, the same sequence each time, and later dives
// lower than the first (they learn). The brute-force test runs them on tiny
// problems too.
#include "core/search/squeaky_dives.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/search/unit_problem.h"
#include "tests/common/check.h"
#include "tests/search/cut_rectangles.h"
#include "tests/search/exact_search_support.h"

namespace {

using namespace cadence_memplan;
using namespace cadence_memplan::search_test;

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
    const std::vector<detail::Unit> tops = CheckSqueakyDives(p, 64);
    CHECK(tops == CheckSqueakyDives(p, 64));  // Deterministic.
    if (!CHECK(!tops.empty())) continue;
    lower += *std::min_element(tops.begin(), tops.end()) < tops.front();
  }
  memplan_test::SetContext("squeaky dives");
  CHECK(lower >= 6);
}

}  // namespace

int main() {
  TestSqueakyDivesLearn();
  return memplan_test::Finish();
}
