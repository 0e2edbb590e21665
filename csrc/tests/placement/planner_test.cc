// Both placers against the naive references of reference_planner.h, plus
// Validate on every plan, CheckRequest on bad inputs and values near 2^62.
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/placement/planner.h"
#include "tests/common/check.h"
#include "tests/placement/reference_planner.h"

namespace {

using namespace cadence_memplan;
using namespace cadence_memplan::reference;

// ---------------------------------------------------------------------------
// Random requests.

struct Stats {
  int64_t cases = 0;
  int64_t plans = 0;
  int64_t failures = 0;
  int64_t conflicts_heuristic = 0;  // Failures where some memory had room (assertion path).
};

Stats stats[2];

int64_t Pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// `huge`: sizes, memories and offsets near 2^62 (part d).
// `medium`: up to 80 tensors with many equal sizes, so that sorting must be
// stable for real (small arrays are insertion-sorted, which is stable anyway).
PlanRequest RandomRequest(std::mt19937_64& rng, bool huge, bool medium = false) {
  PlanRequest r;
  const int memory_count = static_cast<int>(Pick(rng, 1, 4));
  static const Size kAlignments[] = {1, 16, 37, 64};
  constexpr Size kTop = kMaxByteValue;
  for (int m = 0; m < memory_count; ++m) {
    Memory memory;
    if (huge) {
      static const Size kHugeAlignments[] = {1, 16, 37, 64, kTop / 2, kTop, 3, kTop - 1};
      memory.size = Pick(rng, 0, 2) == 0 ? kTop : kTop - Pick(rng, 0, kTop / 2);
      memory.alignment = kHugeAlignments[Pick(rng, 0, 7)];
    } else {
      memory.size = medium ? Pick(rng, 200, 3000) : Pick(rng, 1, 400);
      memory.alignment = kAlignments[Pick(rng, 0, 3)];
    }
    r.memories.push_back(memory);
  }
  const int tensor_count = static_cast<int>(medium ? Pick(rng, 20, 80) : Pick(rng, 0, 12));
  const int time_span = static_cast<int>(medium ? Pick(rng, 5, 40) : Pick(rng, 1, 12));
  auto random_size = [&]() -> Size {
    if (huge) {
      switch (Pick(rng, 0, 5)) {
        case 0: return 0;
        case 1: return kTop;
        case 2: return kTop - Pick(rng, 0, 100);
        case 3: return kTop / 2 + Pick(rng, -100, 100);
        case 4: return Pick(rng, 1, 100);
        default: return Pick(rng, 0, kTop);
      }
    }
    if (medium) return 16 * Pick(rng, 0, 3);  // Nothing but ties.
    switch (Pick(rng, 0, 5)) {
      case 0: return 0;
      case 1: return 16;  // Ties.
      case 2: return 32;
      default: return Pick(rng, 1, 150);
    }
  };
  auto random_lifetime = [&]() -> Lifetime {
    const Time start = Pick(rng, 0, time_span);
    if (Pick(rng, 0, 9) == 0) return {start, start - 1 - Pick(rng, 0, start)};  // Empty, >= -1.
    if (Pick(rng, 0, 4) == 0) return {start, start};
    return {start, start + Pick(rng, 0, time_span / 2 + 1)};
  };
  for (int i = 0; i < tensor_count; ++i) {
    Tensor t{random_lifetime(), random_size()};
    if (t.lifetime.end < 0) t.lifetime = {1, 0};  // CheckRequest forbids negative node indices.
    r.tensors.push_back(t);
  }
  if (Pick(rng, 0, 2) == 0) {
    for (int i = 0; i < tensor_count; ++i) {
      r.blocked.push_back(Pick(rng, 0, 2) == 0 ? (rng() & AllMemories(memory_count)) : 0);
    }
  }
  r.allowed = AllMemories(memory_count);
  if (Pick(rng, 0, 3) == 0) r.allowed &= rng();
  // Bits of absent memories (and of id 0) are ignored; set some at random.
  if (Pick(rng, 0, 3) == 0) r.allowed |= rng() & ~AllMemories(memory_count);
  // Pre-placed tensors: mostly a valid state (aligned, inside, non-overlapping),
  // sometimes arbitrary (still inside the memory, as CheckRequest demands).
  const bool arbitrary_placed = Pick(rng, 0, 9) == 0;
  const int placed_count = Pick(rng, 0, 2) == 0 ? 0 : static_cast<int>(Pick(rng, 1, 6));
  for (int attempt = 0; attempt < 50 && static_cast<int>(r.placed.size()) < placed_count;
       ++attempt) {
    PlacedTensor p;
    p.tensor = {random_lifetime(), random_size()};
    if (p.tensor.lifetime.end < 0) p.tensor.lifetime = {1, 0};
    p.placement.mem_id = static_cast<MemId>(Pick(rng, 1, memory_count));
    const Memory& memory = r.memories[p.placement.mem_id - 1];
    if (p.tensor.size > memory.size) continue;
    Offset offset = Pick(rng, 0, memory.size - p.tensor.size);
    if (!arbitrary_placed) offset = offset / memory.alignment * memory.alignment;
    p.placement.offset = offset;
    bool clash = false;
    for (const PlacedTensor& q : r.placed) {
      clash |= q.placement.mem_id == p.placement.mem_id &&
               LifetimesOverlap(q.tensor.lifetime, p.tensor.lifetime) &&
               StorageIntervalsOverlap(q.placement.offset, q.tensor.size, offset, p.tensor.size);
    }
    if (clash && !arbitrary_placed) continue;
    r.placed.push_back(p);
  }
  if (Pick(rng, 0, 1) == 0) {
    for (int i = 0; i < tensor_count; ++i) {
      Offset offset = kNoOffset;
      switch (Pick(rng, 0, 3)) {
        case 0: break;
        case 1: offset = 0; break;
        case 2: offset = huge ? Pick(rng, 0, kTop) : Pick(rng, 0, 400); break;
        default: offset = huge ? kTop / 2 : 64 * Pick(rng, 0, 6); break;
      }
      r.incoming_offsets.push_back(offset);
    }
  }
  r.keep_incoming_offset = Pick(rng, 0, 4) != 0;
  return r;
}

void CompareOnce(const PlanRequest& r, Algorithm algorithm, Stats& s) {
  ++s.cases;
  const Comparison c = CompareWithReference(r, algorithm);
  if (!CHECK(c.problem.empty())) std::cerr << "    " << c.problem << "\n";
  if (c.outcome == Outcome::kPlanned) ++s.plans;
  if (c.outcome == Outcome::kPlanningFailure) ++s.failures;
}

void TestAgainstReference(uint64_t first_seed, int count, bool huge, bool medium = false) {
  for (uint64_t seed = first_seed; seed < first_seed + count; ++seed) {
    memplan_test::SetContext(std::string(huge     ? "huge"
                                         : medium ? "medium"
                                                  : "small") +
                             " seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const PlanRequest r = RandomRequest(rng, huge, medium);
    if (!CHECK_EQ(CheckRequest(r), std::string())) {
      std::cerr << "    " << Describe(r) << "\n";
      continue;
    }
    CompareOnce(r, Algorithm::kPositionBasedGreedy, stats[0]);
    CompareOnce(r, Algorithm::kGreedyByHeuristic, stats[1]);
  }
  memplan_test::SetContext("");
}

// ---------------------------------------------------------------------------
// Hand-made cases whose answers follow from the documented semantics.

PlanRequest Basic() {
  PlanRequest r;
  r.memories = {{100, 16}, {1000, 1}};
  r.allowed = AllMemories(2);
  r.tensors = {{{0, 5}, 10}, {{3, 8}, 20}, {{6, 9}, 30}};
  return r;
}

void TestHandMade() {
  memplan_test::SetContext("hand-made");
  // Position-based: sorted 30, 20, 10. T2 [6,9] at 0; T1 [3,8] overlaps T2 -> 32;
  // T0 [0,5] overlaps T1 only (inclusive) -> 0 (bytes 0..9 vs T1 32..51).
  PlanResult p = Plan(Basic(), Algorithm::kPositionBasedGreedy);
  CHECK_EQ(p.placements, (std::vector<Placement>{{1, 0}, {1, 32}, {1, 0}}));
  CHECK_EQ(p.bufsizes, (std::vector<Size>{0, 64, 0}));
  CHECK_EQ(p.memory_order, (std::vector<std::vector<Slot>>{{}, {2, 1, 0}, {}}));

  // Touching lifetimes conflict: [0,5] and [5,9] may not share bytes.
  PlanRequest touch;
  touch.memories = {{64, 1}};
  touch.allowed = AllMemories(1);
  touch.tensors = {{{0, 5}, 32}, {{5, 9}, 32}, {{10, 12}, 64}};
  p = Plan(touch, Algorithm::kPositionBasedGreedy);
  CHECK_EQ(p.placements, (std::vector<Placement>{{1, 0}, {1, 32}, {1, 0}}));
  // A fourth 1-byte tensor alive at 5 no longer fits anywhere.
  touch.tensors.push_back({{5, 5}, 1});
  for (Algorithm a : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
    try {
      Plan(touch, a);
      CHECK(false);
    } catch (const PlanningFailure& f) {
      CHECK_EQ(f.tensor(), TensorIndex{3});
    }
  }
  // Zero-size tensors overlap nothing and sit at offset 0.
  touch.tensors.back().size = 0;
  p = Plan(touch, Algorithm::kPositionBasedGreedy);
  CHECK_EQ(p.placements.back(), (Placement{1, 0}));

  // Heuristic best fit: gap of 48 before a tensor at 48 and one of 32 between
  // two; a 32-byte tensor takes the smaller (32-byte) gap.
  PlanRequest gaps;
  gaps.memories = {{1000, 16}};
  gaps.allowed = AllMemories(1);
  gaps.placed = {{{{0, 9}, 16}, {1, 48}}, {{{0, 9}, 16}, {1, 96}}};
  gaps.tensors = {{{2, 3}, 32}};
  p = Plan(gaps, Algorithm::kGreedyByHeuristic);
  CHECK_EQ(p.placements, (std::vector<Placement>{{1, 64}}));
  CHECK_EQ(p.memory_order[1], (std::vector<Slot>{0, 2, 1}));
  p = Plan(gaps, Algorithm::kPositionBasedGreedy);  // First fit instead.
  CHECK_EQ(p.placements, (std::vector<Placement>{{1, 0}}));
  CHECK_EQ(p.memory_order[1], (std::vector<Slot>{0, 1, 2}));
  memplan_test::SetContext("");
}

// The cases where a memory's merged segments cannot answer the heuristic and
// the planner lists the tensors instead (occupancy.h), each under every
// occupancy against the reference.
void TestFallbacks() {
  const auto expect = [](const PlanRequest& r, Algorithm a, Outcome outcome, const char* what) {
    memplan_test::SetContext(what);
    const Comparison c = CompareWithReference(r, a);
    if (!CHECK(c.problem.empty())) std::cerr << "    " << c.problem << "\n";
    CHECK(c.outcome == outcome);
  };
  // Zero-size tensors split a hole without taking a byte: a 48-byte hole at
  // 16 split at 32 by a zero-size tensor leaves two 16-byte holes, so a
  // 32-byte tensor goes on top (64) instead of into the hole (16).
  PlanRequest zero;
  zero.memories = {{1000, 16}};
  zero.placed = {{{{0, 9}, 16}, {1, 0}}, {{{0, 9}, 0}, {1, 32}}, {{{0, 9}, 16}, {1, 48}}};
  zero.tensors = {{{0, 9}, 16}, {{2, 3}, 32}, {{2, 3}, 0}};
  expect(zero, Algorithm::kGreedyByHeuristic, Outcome::kPlanned, "zero-size tensors");
  expect(zero, Algorithm::kPositionBasedGreedy, Outcome::kPlanned, "zero-size tensors");
  CHECK_EQ(Plan(zero, Algorithm::kGreedyByHeuristic).placements[1], (Placement{1, 64}));
  // Before its first placement in a memory the heuristic scans the placed
  // tensors in their given order: here 96 then 0, so the gap before 96 counts
  // from 0 and a 64-byte tensor lands at 0, over the tensor at 0.
  PlanRequest unsorted;
  unsorted.memories = {{1000, 16}};
  unsorted.placed = {{{{0, 9}, 16}, {1, 96}}, {{{0, 9}, 16}, {1, 0}}};
  unsorted.tensors = {{{2, 3}, 64}};
  expect(unsorted, Algorithm::kGreedyByHeuristic, Outcome::kPlanningFailure,
         "first placement in a memory that holds tensors");
  // A kept incoming offset that meets a tensor fails, naming that tensor.
  PlanRequest kept;
  kept.memories = {{100, 16}};
  kept.placed = {{{{0, 9}, 48}, {1, 0}}};
  kept.tensors = {{{2, 3}, 64}};
  kept.incoming_offsets = {32};
  expect(kept, Algorithm::kGreedyByHeuristic, Outcome::kPlanningFailure,
         "kept incoming offset that collides");
  for (Occupancy occupancy : kEveryOccupancy) {
    kept.occupancy = occupancy;
    try {
      Plan(kept, Algorithm::kGreedyByHeuristic);
    } catch (const PlanningFailure& f) {
      CHECK(std::string(f.what()).find("would overlap placed tensor 0 at offset 0") !=
            std::string::npos);
    }
  }
  memplan_test::SetContext("");
}

// A tensor larger than a memory skips the search there, yet the failure still
// names the offset the search finds, as for any other memory without room.
void TestFailureMessages() {
  memplan_test::SetContext("failure messages");
  PlanRequest r;
  r.memories = {{64, 16}, {80, 1}};
  r.placed = {{{{0, 9}, 30}, {1, 0}}, {{{0, 9}, 50}, {2, 10}}};
  r.tensors = {{{2, 3}, 70}};
  r.incoming_offsets = {5};
  for (Algorithm a : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
    try {
      Plan(r, a);
      CHECK(false);
    } catch (const PlanningFailure& f) {
      const std::string message = f.what();
      // Memory 1: first fit finds 32 (the aligned end of 30 bytes), while the
      // heuristic keeps the incoming offset 5; memory 2: both reach the top, 60.
      const std::string first = a == Algorithm::kPositionBasedGreedy ? "32" : "5";
      const bool named =
          message.find("memory 1 (64 bytes, alignment 16): no room, the best offset " + first +
                       " ") != std::string::npos &&
          message.find(
              "memory 2 (80 bytes, alignment 1): no room, the best offset "
              "60 ") != std::string::npos;
      if (!CHECK(named)) std::cerr << "    " << message << "\n";
    }
  }
  memplan_test::SetContext("");
}

// ---------------------------------------------------------------------------
// (c) CheckRequest / InvalidInput.

void ExpectInvalid(const PlanRequest& r, const std::string& what) {
  memplan_test::SetContext("invalid input: " + what);
  CHECK(!CheckRequest(r).empty());
  for (Algorithm a : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
    bool threw_invalid = false;
    try {
      Plan(r, a);
    } catch (const InvalidInput&) {
      threw_invalid = true;
    } catch (...) {
    }
    CHECK(threw_invalid);
  }
}

void ExpectValid(const PlanRequest& r, const std::string& what) {
  memplan_test::SetContext("valid input: " + what);
  CHECK_EQ(CheckRequest(r), std::string());
}

void TestCheckRequest() {
  PlanRequest base = Basic();
  base.blocked = {0, 0, 0};
  base.incoming_offsets = {kNoOffset, 0, 16};
  base.placed = {{{{0, 1}, 8}, {2, 992}}};
  ExpectValid(base, "base");
  auto mutate = [&](const std::function<void(PlanRequest&)>& change) {
    PlanRequest r = base;
    change(r);
    return r;
  };
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[1].size = -1; }), "negative size");
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[1].size = kMaxByteValue + 1; }),
                "size > 2^62");
  ExpectValid(mutate([](PlanRequest& r) { r.tensors[1].size = kMaxByteValue; }), "size 2^62");
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[0].lifetime.start = -1; }), "negative start");
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[0].lifetime = {-3, -2}; }),
                "negative lifetime");
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[2].lifetime.end = -1; }), "negative end");
  ExpectInvalid(mutate([](PlanRequest& r) {
                  r.memories.clear();
                  r.allowed = 0;
                }),
                "0 memories");
  ExpectInvalid(mutate([](PlanRequest& r) {
                  r.memories.assign(64, Memory{100, 1});
                  r.allowed = ~MemoryMask{0} & ~MemoryMask{1};
                }),
                "64 memories");
  ExpectValid(mutate([](PlanRequest& r) {
                r.memories.assign(63, Memory{1000, 1});
                r.allowed = ~MemoryMask{0} & ~MemoryMask{1};
                r.blocked = {MemoryMask{1} << 63, 0, 0};
              }),
              "63 memories, blocked id 63");
  ExpectInvalid(mutate([](PlanRequest& r) { r.memories[0].size = 0; }), "memory size 0");
  ExpectInvalid(mutate([](PlanRequest& r) { r.memories[1].size = -5; }), "memory size < 0");
  ExpectInvalid(mutate([](PlanRequest& r) { r.memories[0].alignment = 0; }), "alignment 0");
  ExpectInvalid(mutate([](PlanRequest& r) { r.memories[1].alignment = -16; }), "alignment < 0");
  ExpectInvalid(mutate([](PlanRequest& r) { r.blocked[1] = MemoryMask{1} << 3; }),
                "blocked id 3 of 2");
  ExpectValid(mutate([](PlanRequest& r) { r.blocked[1] = MemoryMask{1} << 2; }),
              "blocked id 2 of 2");
  ExpectInvalid(mutate([](PlanRequest& r) { r.blocked[1] = MemoryMask{1} << 63; }),
                "blocked id 63 of 2");
  // planner.h: "Bits of ids that do not exist are ignored" (and bit 0 too), so
  // these are valid and plan exactly like the mask of existing ids.
  for (MemoryMask extra :
       {MemoryMask{1} << 3, MemoryMask{1} << 63, MemoryMask{1}, ~MemoryMask{0}}) {
    PlanRequest plain = base;
    plain.incoming_offsets.clear();  // (With them the heuristic fails; see the random tests.)
    plain.allowed = MemoryMask{1} << 2;  // Memory 2 only.
    PlanRequest with_extra = plain;
    with_extra.allowed |= extra;
    ExpectValid(with_extra, "allowed mask with bits of absent memories");
    PlanRequest existing_only = with_extra;
    existing_only.allowed &= AllMemories(2);
    for (Algorithm a : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
      CHECK_EQ(Plan(with_extra, a).placements, Plan(existing_only, a).placements);
    }
  }
  PlanRequest default_mask;  // Default `allowed`, fewer than 63 memories.
  default_mask.memories = {{100, 1}, {100, 1}};
  ExpectValid(default_mask, "default allowed mask");
  ExpectValid(mutate([](PlanRequest& r) { r.allowed = 0; }), "nothing allowed");
  ExpectInvalid(mutate([](PlanRequest& r) { r.blocked.pop_back(); }), "blocked too short");
  ExpectInvalid(mutate([](PlanRequest& r) { r.blocked.push_back(0); }), "blocked too long");
  ExpectInvalid(mutate([](PlanRequest& r) { r.incoming_offsets.pop_back(); }),
                "incoming too short");
  ExpectInvalid(mutate([](PlanRequest& r) { r.incoming_offsets.push_back(0); }),
                "incoming too long");
  ExpectInvalid(mutate([](PlanRequest& r) { r.incoming_offsets[0] = -2; }), "incoming offset -2");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.mem_id = 0; }),
                "placed mem_id 0");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.mem_id = 3; }),
                "placed mem_id 3 of 2");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.mem_id = -1; }),
                "placed mem_id -1");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.offset = 993; }),
                "placed past end");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement = {1, 96}; }),
                "placed past end of mem 1");
  ExpectValid(mutate([](PlanRequest& r) { r.placed[0].placement = {1, 92}; }),
              "placed ends at mem 1 end");
  ExpectInvalid(mutate([](PlanRequest& r) {
                  r.memories[1].size = kMaxByteValue;
                  r.placed[0] = {{{0, 1}, kMaxByteValue}, {2, kMaxByteValue}};
                }),
                "placed end 2^63 (overflows int64)");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.offset = -8; }),
                "placed negative offset");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.offset = kNoOffset; }),
                "placed offset None");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].tensor.size = -1; }),
                "placed negative size");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].tensor.lifetime.start = -1; }),
                "placed negative time");
  memplan_test::SetContext("");
}

// (d) Fixed cases at the top of the value range; the random ones run under
// TestAgainstReference(huge = true).
void TestHugeValues() {
  memplan_test::SetContext("huge hand-made");
  constexpr Size kTop = kMaxByteValue;
  PlanRequest r;
  r.memories = {{kTop, kTop}, {kTop, 1}};
  r.allowed = AllMemories(2);
  r.tensors = {{{0, 3}, kTop}, {{0, 3}, kTop}, {{0, 3}, 1}, {{4, 4}, kTop - 1}};
  r.placed = {{{{9, 9}, kTop}, {1, 0}}};
  for (Algorithm a : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
    try {
      Plan(r, a);
      CHECK(false);  // Two full-size tensors alive together, one 1-byte one: 3 tensors, 2 memories.
    } catch (const PlanningFailure& f) {
      CHECK_EQ(f.tensor(), TensorIndex{2});
    }
  }
  r.tensors.pop_back();
  r.tensors[2].lifetime = {5, 5};
  PlanResult p = Plan(r, Algorithm::kPositionBasedGreedy);
  CHECK_EQ(p.placements, (std::vector<Placement>{{1, 0}, {2, 0}, {1, 0}}));
  CHECK_EQ(p.bufsizes, (std::vector<Size>{0, kTop, kTop}));
  memplan_test::SetContext("");
}

}  // namespace

int main() {
  const auto begin = std::chrono::steady_clock::now();
  TestHandMade();
  TestFailureMessages();
  TestFallbacks();
  TestCheckRequest();
  TestHugeValues();
  constexpr int kSmallCases = 20000;
  constexpr int kHugeCases = 5000;
  TestAgainstReference(1, kSmallCases, /*huge=*/false);
  TestAgainstReference(1000001, kHugeCases, /*huge=*/true);
  constexpr int kMediumCases = 2000;
  TestAgainstReference(2000001, kMediumCases, /*huge=*/false, /*medium=*/true);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  for (int a = 0; a < 2; ++a) {
    std::cout << "planner_test: " << Name(static_cast<Algorithm>(a)) << ": " << stats[a].cases
              << " random requests vs naive reference (" << stats[a].plans << " planned, "
              << stats[a].failures << " PlanningFailure)\n";
    // The comparison must not be vacuous.
    CHECK(stats[a].plans > stats[a].cases / 10);
    CHECK(stats[a].failures > stats[a].cases / 20);
  }
  std::cout << "planner_test: " << seconds << " s\n";
  return memplan_test::Finish();
}
