// Both placers against naive references written the way upstream's Python
// does it (executorch backends/cadence/aot/memory_planning.py,
// PositionBasedGreedyWithHierarchy and GreedyWithHeuristic), with exact
// 128-bit arithmetic; plus Validate on every plan, CheckRequest on bad inputs
// and values near 2^62.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "planner.h"
#include "validator.h"

namespace cadence_memplan {
// For CHECK_EQ (types.h defines no comparison or printing).
inline bool operator==(const Placement& a, const Placement& b) {
  return a.mem_id == b.mem_id && a.offset == b.offset;
}
inline std::ostream& operator<<(std::ostream& out, const Placement& p) {
  return out << "(mem " << p.mem_id << ", offset " << p.offset << ")";
}
}  // namespace cadence_memplan

namespace {

using namespace cadence_memplan;
using Wide = __int128;

// ---------------------------------------------------------------------------
// Naive references. They share nothing with the core: own overlap tests, own
// alignment, real per-memory lists.

Wide AlignUpExact(Wide value, Wide alignment) {
  return (value + alignment - 1) / alignment * alignment;  // value >= 0 here.
}

bool LifetimesOverlap(const Lifetime& a, const Lifetime& b) {
  if (a.start > a.end || b.start > b.end) return false;  // Upstream's has_overlap: empty.
  return a.start <= b.end && b.start <= a.end;
}

// Upstream's storage intervals are [offset, offset + size - 1], inclusive.
bool StorageIntervalsOverlap(Wide a_offset, Wide a_size, Wide b_offset, Wide b_size) {
  const Wide a_last = a_offset + a_size - 1;
  const Wide b_last = b_offset + b_size - 1;
  if (a_offset > a_last || b_offset > b_last) return false;
  return a_offset <= b_last && b_offset <= a_last;
}

struct Entry {
  ListEntry id;
  Lifetime lifetime;
  Wide size;
  Wide offset;
};

struct RefFailure {
  TensorIndex tensor;
};

struct RefResult {
  std::vector<Placement> placements;
  std::vector<Size> bufsizes;
  std::vector<std::vector<ListEntry>> memory_order;
};

class Reference {
 public:
  explicit Reference(const PlanRequest& request)
      : r_(request), n_(static_cast<MemId>(request.memories.size())), lists_(n_ + 1) {
    placements_.resize(request.tensors.size());
    bufsizes_.assign(n_ + 1, 0);
    for (size_t j = 0; j < request.placed.size(); ++j) {
      const PlacedTensor& p = request.placed[j];
      Append(p.placement.mem_id,
             {static_cast<ListEntry>(j), p.tensor.lifetime, p.tensor.size, p.placement.offset});
    }
  }

  RefResult Run(Algorithm algorithm) {
    // sorted(specs, key=allocated_memory, reverse=True): Python's sort is
    // stable, and reverse=True keeps equal keys in their original order.
    std::vector<TensorIndex> order(r_.tensors.size());
    std::iota(order.begin(), order.end(), TensorIndex{0});
    std::stable_sort(order.begin(), order.end(), [&](TensorIndex a, TensorIndex b) {
      return r_.tensors[a].size > r_.tensors[b].size;
    });
    for (TensorIndex i : order) {
      if (algorithm == Algorithm::kPositionBasedGreedy) {
        PlacePositionBased(i);
      } else {
        PlaceByHeuristic(i);
      }
    }
    RefResult result;
    result.placements = placements_;
    result.bufsizes = bufsizes_;
    result.memory_order.resize(n_ + 1);
    for (MemId m = 1; m <= n_; ++m) {
      for (const Entry& e : lists_[m]) result.memory_order[m].push_back(e.id);
    }
    return result;
  }

 private:
  bool Allowed(MemId m) const { return (r_.allowed >> m) & 1; }
  bool Blocked(TensorIndex i, MemId m) const {
    return !r_.blocked.empty() && ((r_.blocked[i] >> m) & 1);
  }
  Wide Alignment(MemId m) const { return r_.memories[m - 1].alignment; }
  // is_valid_placement's size test.
  bool Fits(MemId m, Wide offset, Wide size) const {
    return AlignUpExact(offset + size, Alignment(m)) <= r_.memories[m - 1].size;
  }
  Entry Candidate(TensorIndex i, Wide offset) const {
    return {static_cast<ListEntry>(r_.placed.size()) + i, r_.tensors[i].lifetime,
            r_.tensors[i].size, offset};
  }
  // state.get_overlapping_spec: the first list entry overlapping in lifetime AND storage.
  const Entry* FirstOverlapping(MemId m, const Entry& e) const {
    for (const Entry& other : lists_[m]) {
      if (LifetimesOverlap(e.lifetime, other.lifetime) &&
          StorageIntervalsOverlap(e.offset, e.size, other.offset, other.size)) {
        return &other;
      }
    }
    return nullptr;
  }
  // state.place_spec.
  void Append(MemId m, const Entry& e) {
    lists_[m].push_back(e);
    const Wide end = AlignUpExact(e.offset + e.size, Alignment(m));
    if (end > bufsizes_[m]) bufsizes_[m] = static_cast<Size>(end);
  }
  void Place(TensorIndex i, MemId m, Wide offset) {
    Append(m, Candidate(i, offset));
    placements_[i] = {m, static_cast<Offset>(offset)};
  }

  void PlacePositionBased(TensorIndex i) {
    const Wide size = r_.tensors[i].size;
    for (MemId m = 1; m <= n_; ++m) {
      // is_valid_placement also checks these; the while loop never runs then.
      if (!Allowed(m) || Blocked(i, m)) continue;
      Wide offset = 0;
      while (Fits(m, offset, size)) {
        const Entry* overlapped = FirstOverlapping(m, Candidate(i, offset));
        if (overlapped == nullptr) break;
        offset = AlignUpExact(overlapped->offset + overlapped->size, Alignment(m));
      }
      if (Fits(m, offset, size)) {
        Place(i, m, offset);
        return;
      }
    }
    throw RefFailure{i};
  }

  void PlaceByHeuristic(TensorIndex i) {
    const Wide size = r_.tensors[i].size;
    // spec.mem_offset, None = nullopt. It survives across memories.
    std::optional<Wide> mem_offset;
    if (r_.keep_incoming_offset && !r_.incoming_offsets.empty() &&
        r_.incoming_offsets[i] != kNoOffset) {
      mem_offset = r_.incoming_offsets[i];
    }
    for (MemId m = 1; m <= n_; ++m) {
      if (Blocked(i, m)) continue;
      if (!r_.keep_incoming_offset) mem_offset.reset();
      Wide prev_offset = 0;
      std::optional<Wide> smallest_gap;  // nullopt = inf.
      for (const Entry& allocated : lists_[m]) {
        if (!LifetimesOverlap(r_.tensors[i].lifetime, allocated.lifetime)) continue;
        const Wide gap = allocated.offset - prev_offset;
        if (gap >= size && (!smallest_gap || gap < *smallest_gap)) {
          smallest_gap = gap;
          mem_offset = prev_offset;
        }
        prev_offset = std::max(AlignUpExact(allocated.offset + allocated.size, Alignment(m)),
                               prev_offset);
      }
      if (!mem_offset) mem_offset = prev_offset;
      if (!(Allowed(m) && Fits(m, *mem_offset, size))) {
        mem_offset.reset();
        continue;
      }
      // place_spec's `assert self.get_overlapping_spec(spec) is None`.
      if (FirstOverlapping(m, Candidate(i, *mem_offset)) != nullptr) throw RefFailure{i};
      Place(i, m, *mem_offset);
      std::stable_sort(lists_[m].begin(), lists_[m].end(),
                       [](const Entry& a, const Entry& b) { return a.offset < b.offset; });
      return;
    }
    throw RefFailure{i};
  }

  const PlanRequest& r_;
  const MemId n_;
  std::vector<std::vector<Entry>> lists_;
  std::vector<Placement> placements_;
  std::vector<Size> bufsizes_;
};

const char* Name(Algorithm a) {
  return a == Algorithm::kPositionBasedGreedy ? "position-based" : "heuristic";
}

MemoryMask AllMemories(int count) {
  MemoryMask mask = 0;
  for (int m = 1; m <= count; ++m) mask |= MemoryMask{1} << m;
  return mask;
}

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

std::string Describe(const PlanRequest& r) {
  std::ostringstream out;
  out << "memories:";
  for (const Memory& m : r.memories) out << " {" << m.size << ", align " << m.alignment << "}";
  out << "\n    tensors (start,end,size):";
  for (const Tensor& t : r.tensors) out << " (" << t.lifetime.start << "," << t.lifetime.end << "," << t.size << ")";
  out << "\n    blocked: " << memplan_test::Repr(r.blocked) << " allowed: " << r.allowed;
  out << "\n    placed (start,end,size,mem,offset):";
  for (const PlacedTensor& p : r.placed) {
    out << " (" << p.tensor.lifetime.start << "," << p.tensor.lifetime.end << "," << p.tensor.size
        << "," << p.placement.mem_id << "," << p.placement.offset << ")";
  }
  out << "\n    incoming: " << memplan_test::Repr(r.incoming_offsets)
      << " keep: " << r.keep_incoming_offset;
  return out.str();
}

// (b) A successful plan is valid. Exception: the heuristic may keep an
// incoming offset that is not aligned (upstream does too); such a plan is
// valid once alignment is ignored, and only kept offsets may be unaligned.
void CheckPlanIsValid(const PlanRequest& r, Algorithm algorithm, const PlanResult& plan,
                      bool placed_state_valid) {
  std::vector<Tensor> tensors = r.tensors;
  std::vector<Placement> placements = plan.placements;
  if (placed_state_valid) {
    for (const PlacedTensor& p : r.placed) {
      tensors.push_back(p.tensor);
      placements.push_back(p.placement);
    }
  }
  const std::string problem = Validate(tensors, placements, r.memories);
  if (problem.empty()) {
    CHECK(true);
    return;
  }
  bool only_kept_offsets_unaligned = algorithm == Algorithm::kGreedyByHeuristic;
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    const Placement& p = plan.placements[i];
    if (p.offset % r.memories[p.mem_id - 1].alignment != 0) {
      only_kept_offsets_unaligned &= !r.incoming_offsets.empty() && r.incoming_offsets[i] == p.offset;
    }
  }
  std::vector<Memory> unaligned = r.memories;
  for (Memory& m : unaligned) m.alignment = 1;
  if (!CHECK(only_kept_offsets_unaligned && Validate(tensors, placements, unaligned).empty())) {
    std::cerr << "    " << Name(algorithm) << " plan fails Validate: " << problem << "\n    "
              << Describe(r) << "\n";
  }
}

void CompareOnce(const PlanRequest& r, Algorithm algorithm, bool placed_state_valid, Stats& s) {
  ++s.cases;
  std::optional<RefResult> expected;
  std::optional<TensorIndex> expected_failure;
  try {
    expected = Reference(r).Run(algorithm);
  } catch (const RefFailure& f) {
    expected_failure = f.tensor;
  }
  std::optional<PlanResult> actual;
  std::optional<TensorIndex> actual_failure;
  try {
    actual = Plan(r, algorithm);
  } catch (const PlanningFailure& f) {
    actual_failure = f.tensor();
  } catch (const InvalidInput& e) {
    CHECK(false);
    std::cerr << "    unexpected InvalidInput: " << e.what() << "\n    " << Describe(r) << "\n";
    return;
  }
  bool ok = CHECK_EQ(actual_failure.has_value(), expected_failure.has_value());
  if (ok && expected_failure) {
    ++s.failures;
    ok = CHECK_EQ(*actual_failure, *expected_failure);
  } else if (ok) {
    ++s.plans;
    ok = CHECK_EQ(actual->placements, expected->placements) &&
         CHECK_EQ(actual->bufsizes, expected->bufsizes) &&
         CHECK_EQ(actual->memory_order, expected->memory_order);
    CheckPlanIsValid(r, algorithm, *actual, placed_state_valid);
  }
  if (!ok) std::cerr << "    " << Name(algorithm) << " on\n    " << Describe(r) << "\n";
}

bool PlacedStateValid(const PlanRequest& r) {
  for (size_t a = 0; a < r.placed.size(); ++a) {
    const PlacedTensor& p = r.placed[a];
    if (p.placement.offset % r.memories[p.placement.mem_id - 1].alignment != 0) return false;
    for (size_t b = 0; b < a; ++b) {
      const PlacedTensor& q = r.placed[b];
      if (q.placement.mem_id == p.placement.mem_id &&
          LifetimesOverlap(q.tensor.lifetime, p.tensor.lifetime) &&
          StorageIntervalsOverlap(q.placement.offset, q.tensor.size, p.placement.offset,
                                  p.tensor.size)) {
        return false;
      }
    }
  }
  return true;
}

void TestAgainstReference(uint64_t first_seed, int count, bool huge, bool medium = false) {
  for (uint64_t seed = first_seed; seed < first_seed + count; ++seed) {
    memplan_test::SetContext(std::string(huge ? "huge" : medium ? "medium" : "small") + " seed " +
                             std::to_string(seed));
    std::mt19937_64 rng(seed);
    const PlanRequest r = RandomRequest(rng, huge, medium);
    if (!CHECK_EQ(CheckRequest(r), std::string())) {
      std::cerr << "    " << Describe(r) << "\n";
      continue;
    }
    const bool valid_state = PlacedStateValid(r);
    CompareOnce(r, Algorithm::kPositionBasedGreedy, valid_state, stats[0]);
    CompareOnce(r, Algorithm::kGreedyByHeuristic, valid_state, stats[1]);
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
  CHECK_EQ(p.memory_order, (std::vector<std::vector<ListEntry>>{{}, {2, 1, 0}, {}}));

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
  CHECK_EQ(p.memory_order[1], (std::vector<ListEntry>{0, 2, 1}));
  p = Plan(gaps, Algorithm::kPositionBasedGreedy);  // First fit instead.
  CHECK_EQ(p.placements, (std::vector<Placement>{{1, 0}}));
  CHECK_EQ(p.memory_order[1], (std::vector<ListEntry>{0, 1, 2}));
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
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[1].size = kMaxByteValue + 1; }), "size > 2^62");
  ExpectValid(mutate([](PlanRequest& r) { r.tensors[1].size = kMaxByteValue; }), "size 2^62");
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[0].lifetime.start = -1; }), "negative start");
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[0].lifetime = {-3, -2}; }), "negative lifetime");
  ExpectInvalid(mutate([](PlanRequest& r) { r.tensors[2].lifetime.end = -1; }), "negative end");
  ExpectInvalid(mutate([](PlanRequest& r) { r.memories.clear(); r.allowed = 0; }), "0 memories");
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
  ExpectInvalid(mutate([](PlanRequest& r) { r.blocked[1] = MemoryMask{1} << 3; }), "blocked id 3 of 2");
  ExpectValid(mutate([](PlanRequest& r) { r.blocked[1] = MemoryMask{1} << 2; }), "blocked id 2 of 2");
  ExpectInvalid(mutate([](PlanRequest& r) { r.blocked[1] = MemoryMask{1} << 63; }), "blocked id 63 of 2");
  // planner.h: "Bits of ids that do not exist are ignored" (and bit 0 too), so
  // these are valid and plan exactly like the mask of existing ids.
  for (MemoryMask extra : {MemoryMask{1} << 3, MemoryMask{1} << 63, MemoryMask{1}, ~MemoryMask{0}}) {
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
  ExpectInvalid(mutate([](PlanRequest& r) { r.incoming_offsets.pop_back(); }), "incoming too short");
  ExpectInvalid(mutate([](PlanRequest& r) { r.incoming_offsets.push_back(0); }), "incoming too long");
  ExpectInvalid(mutate([](PlanRequest& r) { r.incoming_offsets[0] = -2; }), "incoming offset -2");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.mem_id = 0; }), "placed mem_id 0");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.mem_id = 3; }), "placed mem_id 3 of 2");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.mem_id = -1; }), "placed mem_id -1");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.offset = 993; }), "placed past end");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement = {1, 96}; }), "placed past end of mem 1");
  ExpectValid(mutate([](PlanRequest& r) { r.placed[0].placement = {1, 92}; }), "placed ends at mem 1 end");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.offset = -8; }), "placed negative offset");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].placement.offset = kNoOffset; }), "placed offset None");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].tensor.size = -1; }), "placed negative size");
  ExpectInvalid(mutate([](PlanRequest& r) { r.placed[0].tensor.lifetime.start = -1; }), "placed negative time");
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
