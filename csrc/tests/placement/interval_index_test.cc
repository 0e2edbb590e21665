// IntervalIndex against a brute-force scan: after any sequence of insertions,
// FindOverlapping must report exactly the inserted, non-empty lifetimes that
// overlap the query (inclusive ends), each once. Queries are slots of the
// layout too; the ones that are never inserted stand for fresh lifetimes.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/common/branch_free.h"
#include "core/placement/interval_index.h"
#include "tests/common/check.h"

namespace {

using cadence_memplan::IntervalIndex;
using cadence_memplan::Lifetime;
using cadence_memplan::Segment;
using cadence_memplan::Slot;
using cadence_memplan::SlotLayout;
using cadence_memplan::Time;

// Written out here rather than using Lifetime::Overlaps, so the test shares no
// logic with the code under test.
bool BruteOverlap(const Lifetime& a, const Lifetime& b) {
  if (a.start > a.end || b.start > b.end) return false;
  return a.start <= b.end && b.start <= a.end;
}

std::vector<Slot> BruteForce(const std::vector<Lifetime>& lifetimes,
                             const std::vector<bool>& inserted, const Lifetime& query) {
  std::vector<Slot> result;
  for (Slot s = 0; s < static_cast<Slot>(lifetimes.size()); ++s) {
    if (inserted[s] && BruteOverlap(lifetimes[s], query)) result.push_back(s);
  }
  return result;
}

// What each test inserts beside a slot; a query must hand it back unchanged.
Segment StorageOf(Slot slot) { return {10 * slot, 10 * slot + slot % 7}; }

std::vector<Slot> Query(const IntervalIndex& index, Slot query) {
  std::vector<Slot> out;
  index.ForEachOverlapping(query, [&](Slot slot, const Segment& storage) {
    CHECK_EQ(storage.begin, StorageOf(slot).begin);
    CHECK_EQ(storage.end, StorageOf(slot).end);
    out.push_back(slot);
  });
  std::sort(out.begin(), out.end());  // Duplicates stay and make the comparison fail.
  return out;
}

// A lifetime drawn from [base, base + span], mixing the shapes that matter:
// empty, single point, ordinary, and copies / touching neighbours of earlier ones.
Lifetime RandomLifetime(std::mt19937_64& rng, Time base, Time span,
                        const std::vector<Lifetime>& earlier) {
  auto pick = [&](Time lo, Time hi) {  // Uniform in [lo, hi].
    return std::uniform_int_distribution<Time>(lo, hi)(rng);
  };
  const int kind = static_cast<int>(pick(0, 9));
  const Time start = base + pick(0, span);
  if (!earlier.empty() && kind >= 7) {
    const Lifetime& other = earlier[pick(0, static_cast<Time>(earlier.size()) - 1)];
    if (kind == 7) return other;                                                   // Identical.
    if (kind == 8 && other.end >= other.start) {  // Starts where `other` ends.
      return {other.end, other.end + pick(0, std::min<Time>(3, base + span - other.end))};
    }
    if (other.start > base) return {other.start - pick(0, 3), other.start};  // Touches start.
  }
  switch (kind) {
    case 0: return {start, start - 1 - pick(0, 2)};  // Empty.
    case 1:
    case 2: return {start, start};  // Single point.
    default:
      // Never past base + span, so no arithmetic overflows near INT64_MAX.
      return {start, start + pick(0, std::min<Time>(span / 3 + 1, base + span - start))};
  }
}

int64_t RunRandomCase(uint64_t seed, Time base, Time span, int count) {
  std::mt19937_64 rng(seed);
  std::vector<Lifetime> lifetimes;
  for (int i = 0; i < count; ++i) lifetimes.push_back(RandomLifetime(rng, base, span, lifetimes));
  // In node order, as graphs mostly list them: SlotLayout then walks the axis.
  if (seed % 3 == 0) {
    std::stable_sort(lifetimes.begin(), lifetimes.end(),
                     [](const Lifetime& a, const Lifetime& b) { return a.start < b.start; });
  }
  // Fresh lifetimes that are only ever queried, after the stored ones.
  const int fresh = 1 + count / 2;
  for (int i = 0; i < fresh; ++i) lifetimes.push_back(RandomLifetime(rng, base, span, lifetimes));
  const int universe = count + fresh;
  const SlotLayout layout(lifetimes);
  CHECK_EQ(layout.size(), static_cast<Slot>(universe));
  IntervalIndex index(layout);

  // A random subset of the stored lifetimes, inserted in random order.
  std::vector<Slot> order(count);
  std::iota(order.begin(), order.end(), Slot{0});
  std::shuffle(order.begin(), order.end(), rng);
  order.resize(std::uniform_int_distribution<int>(0, count)(rng));

  std::vector<bool> inserted(universe, false);
  int64_t queries = 0;
  const auto check = [&](Slot query) {
    if (!CHECK_EQ(Query(index, query), BruteForce(lifetimes, inserted, lifetimes[query]))) {
      std::cerr << "    seed " << seed << " query [" << lifetimes[query].start << ", "
                << lifetimes[query].end << "]\n";
    }
    ++queries;
  };
  auto query_now = [&]() {
    const int number = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int q = 0; q < number; ++q)
      check(std::uniform_int_distribution<Slot>(0, universe - 1)(rng));
  };
  // The index keeps its slots only from the first query on: in some cases
  // that query comes only after half the insertions.
  const size_t quiet = seed % 2 == 1 ? order.size() / 2 : 0;
  if (quiet == 0) query_now();
  for (size_t k = 0; k < order.size(); ++k) {
    index.Insert(order[k], StorageOf(order[k]));
    inserted[order[k]] = true;
    if (k >= quiet && rng() % 3 == 0) query_now();
  }
  query_now();
  for (Slot query = 0; query < universe; ++query) check(query);  // Every lifetime at the end.
  return queries;
}

// Builds a layout of `stored` lifetimes followed by `queries`, inserts the
// stored ones, and returns what each query reports (sorted stored slots).
std::vector<std::vector<Slot>> Ask(const std::vector<Lifetime>& stored,
                                   const std::vector<Lifetime>& queries, bool insert = true) {
  std::vector<Lifetime> lifetimes = stored;
  lifetimes.insert(lifetimes.end(), queries.begin(), queries.end());
  const SlotLayout layout(lifetimes);
  IntervalIndex index(layout);
  if (insert) {
    for (Slot s = 0; s < static_cast<Slot>(stored.size()); ++s) index.Insert(s, StorageOf(s));
  }
  std::vector<std::vector<Slot>> answers;
  for (size_t q = 0; q < queries.size(); ++q) {
    answers.push_back(Query(index, static_cast<Slot>(stored.size() + q)));
  }
  return answers;
}

using Answers = std::vector<std::vector<Slot>>;

void TestEmptyIndex() {
  CHECK_EQ(Ask({}, {{0, 100}, {5, 4}}), (Answers{{}, {}}));
  // A universe but nothing inserted yet.
  CHECK_EQ(Ask({{0, 10}, {3, 3}, {5, 20}}, {{0, 100}}, /*insert=*/false), (Answers{{}}));
  // Only empty lifetimes inserted: nothing is ever reported.
  CHECK_EQ(Ask({{5, 4}, {10, 0}, {0, -1}}, {{-100, 100}, {4, 5}}), (Answers{{}, {}}));
}

void TestEmptyQueries() {
  // Empty queries overlap nothing, even when they lie "inside" an inserted lifetime.
  CHECK_EQ(Ask({{0, 10}, {3, 3}, {5, 20}, {0, 0}}, {{0, 20}, {3, 2}, {5, 4}, {20, 0}, {}}),
           (Answers{{0, 1, 2, 3}, {}, {}, {}, {}}));
}

void TestInclusiveEnds() {
  // [0, 3] and [3, 7] share node 3; [8, 8] touches nothing; [7, 8] touches both.
  CHECK_EQ(Ask({{0, 3}, {3, 7}, {8, 8}}, {{3, 3}, {7, 7}, {7, 8}, {4, 6}, {9, 100}, {-5, -1}}),
           (Answers{{0, 1}, {1}, {1, 2}, {1}, {}, {}}));
}

void TestExtremeTimes() {
  constexpr Time kMax = std::numeric_limits<Time>::max();
  const std::vector<Lifetime> stored = {{kMax, kMax},         {kMax - 1, kMax}, {0, kMax},
                                        {kMax - 5, kMax - 3}, {kMax, kMax - 1},  // Empty.
                                        {kMax - 3, kMax - 3}};
  CHECK_EQ(Ask(stored, {{kMax, kMax}, {kMax - 3, kMax - 2}, {0, kMax}, {kMax, 0}}),
           (Answers{{0, 1, 2}, {2, 3, 5}, {0, 1, 2, 3, 5}, {}}));
}

// Lifetimes far longer than the buckets, and queries spanning many buckets.
void TestManyBuckets() {
  std::vector<Lifetime> stored;
  for (Time t = 0; t < 400; ++t) stored.push_back({t, t});  // Narrow buckets.
  stored.push_back({0, 399});
  stored.push_back({150, 160});
  const Answers answers = Ask(stored, {{100, 300}, {399, 1000}, {-10, -1}});
  std::vector<Slot> expected;
  for (Slot s = 100; s <= 300; ++s) expected.push_back(s);
  expected.push_back(400);
  expected.push_back(401);
  CHECK_EQ(answers[0], expected);
  CHECK_EQ(answers[1], (std::vector<Slot>{399, 400}));
  CHECK_EQ(answers[2], std::vector<Slot>{});
}

}  // namespace

// CountBelowFrom against std::partition_point, from every known prefix.
void TestCountBelowFrom() {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    const size_t count = rng() % 70;
    std::vector<Time> values(count);
    for (Time& value : values) value = static_cast<Time>(rng() % 40);
    std::sort(values.begin(), values.end());
    for (Time threshold = -1; threshold <= 41; ++threshold) {
      const auto below = [threshold](Time value) { return value < threshold; };
      const size_t expected = static_cast<size_t>(
          std::partition_point(values.begin(), values.end(), below) - values.begin());
      for (size_t known = 0; known <= expected; ++known) {
        CHECK_EQ(cadence_memplan::CountBelowFrom(values.data(), count, known, below), expected);
      }
    }
  }
}

int main() {
  const auto begin = std::chrono::steady_clock::now();
  TestCountBelowFrom();
  TestEmptyIndex();
  TestEmptyQueries();
  TestInclusiveEnds();
  TestExtremeTimes();
  TestManyBuckets();

  int64_t cases = 0;
  int64_t queries = 0;
  constexpr Time kMax = std::numeric_limits<Time>::max();
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    memplan_test::SetContext("random case seed " + std::to_string(seed));
    std::mt19937_64 shape(seed * 7919);
    // Sizes 0..80 mostly, some larger ones so the tree has several levels and a
    // non-power-of-two leaf count.
    const int count =
        seed % 10 == 0 ? static_cast<int>(shape() % 400) : static_cast<int>(shape() % 81);
    // Dense (many ties / touches), sparse, negative, and near INT64_MAX time ranges.
    Time base = 0;
    Time span = 20;
    switch (seed % 5) {
      case 0: span = 5; break;
      case 1: span = 20; break;
      case 2: span = 1000; break;
      case 3:
        base = -50;
        span = 100;
        break;
      case 4:
        base = kMax - 40;
        span = 40;
        break;
    }
    queries += RunRandomCase(seed, base, span, count);
    ++cases;
  }
  memplan_test::SetContext("");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::cout << "interval_index_test: " << cases << " random cases, " << queries
            << " queries checked against brute force in " << seconds << " s\n";
  return memplan_test::Finish();
}
