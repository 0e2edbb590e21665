// Validate against an O(n^2) brute-force check on random plans, valid ones and
// ones with injected faults: Validate must return "" exactly when the brute
// force finds no violation, and its message must name a real culprit.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "core/common/validator.h"
#include "tests/common/check.h"

namespace {

using namespace cadence_memplan;
using Wide = __int128;

int64_t Pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

bool LifetimesOverlap(const Lifetime& a, const Lifetime& b) {
  if (a.start > a.end || b.start > b.end) return false;
  return a.start <= b.end && b.start <= a.end;
}

// Bytes [offset, offset + size - 1], inclusive, in exact arithmetic.
bool BytesOverlap(Wide a_offset, Wide a_size, Wide b_offset, Wide b_size) {
  const Wide a_last = a_offset + a_size - 1;
  const Wide b_last = b_offset + b_size - 1;
  if (a_offset > a_last || b_offset > b_last) return false;
  return a_offset <= b_last && b_offset <= a_last;
}

struct Plan {
  std::vector<Tensor> tensors;
  std::vector<Placement> placements;
  std::vector<Memory> memories;
};

// A violation of one tensor on its own, or nullopt.
bool BoundsOk(const Plan& p, size_t i) {
  const Tensor& t = p.tensors[i];
  const Placement& q = p.placements[i];
  if (t.size < 0) return false;
  if (q.mem_id < 1 || q.mem_id > static_cast<MemId>(p.memories.size())) return false;
  if (q.offset < 0) return false;
  const Memory& m = p.memories[q.mem_id - 1];
  if (m.alignment < 1 || q.offset % m.alignment != 0) return false;
  return Wide{q.offset} + t.size <= m.size;
}

bool Conflict(const Plan& p, size_t i, size_t j) {
  return p.placements[i].mem_id == p.placements[j].mem_id &&
         LifetimesOverlap(p.tensors[i].lifetime, p.tensors[j].lifetime) &&
         BytesOverlap(p.placements[i].offset, p.tensors[i].size, p.placements[j].offset,
                      p.tensors[j].size);
}

struct Verdict {
  bool valid = true;
  std::optional<size_t> first_bounds_violation;
  std::set<std::pair<size_t, size_t>> conflicts;
};

Verdict BruteForce(const Plan& p) {
  Verdict v;
  if (p.tensors.size() != p.placements.size()) {
    v.valid = false;
    return v;
  }
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    if (!BoundsOk(p, i)) {
      v.valid = false;
      if (!v.first_bounds_violation) v.first_bounds_violation = i;
    }
  }
  if (v.first_bounds_violation) return v;  // Conflicts are only meaningful with sane bounds.
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    for (size_t j = i + 1; j < p.tensors.size(); ++j) {
      if (Conflict(p, i, j)) {
        v.valid = false;
        v.conflicts.insert({i, j});
      }
    }
  }
  return v;
}

// The indices a message names as "tensor K (".
std::vector<size_t> NamedTensors(const std::string& message) {
  static const std::regex pattern("tensor (\\d+) \\(");
  std::vector<size_t> result;
  for (auto it = std::sregex_iterator(message.begin(), message.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    result.push_back(std::stoul((*it)[1].str()));
  }
  return result;
}

Lifetime RandomLifetime(std::mt19937_64& rng, int span) {
  const Time start = Pick(rng, 0, span);
  switch (Pick(rng, 0, 9)) {
    case 0: return {start, start - 1};  // Empty.
    case 1:
    case 2: return {start, start};
    default: return {start, start + Pick(rng, 0, span / 2 + 1)};
  }
}

Plan RandomValidPlan(std::mt19937_64& rng, bool huge) {
  Plan p;
  static const Size kAlignments[] = {1, 16, 37, 64};
  const int memory_count = static_cast<int>(Pick(rng, 1, 4));
  for (int m = 0; m < memory_count; ++m) {
    Memory memory{huge ? kMaxByteValue - Pick(rng, 0, 1000) : Pick(rng, 1, 300),
                  kAlignments[Pick(rng, 0, 3)]};
    p.memories.push_back(memory);
  }
  const int count = static_cast<int>(Pick(rng, 0, 16));
  const int span = static_cast<int>(Pick(rng, 1, 15));
  for (int i = 0; i < count; ++i) {
    Size size = Pick(rng, 0, 4) == 0 ? 0 : Pick(rng, 1, 64);
    if (huge && Pick(rng, 0, 1) == 0) size = kMaxByteValue / 4 + Pick(rng, -10, 10);
    p.tensors.push_back({RandomLifetime(rng, span), size});
    p.placements.push_back({});
    // Random aligned spots until one is free; a valid plan needs one.
    bool placed = false;
    for (int attempt = 0; attempt < 40 && !placed; ++attempt) {
      const MemId mem = static_cast<MemId>(Pick(rng, 1, memory_count));
      const Memory& memory = p.memories[mem - 1];
      if (size > memory.size) continue;
      Offset offset = Pick(rng, 0, memory.size - size) / memory.alignment * memory.alignment;
      if (attempt % 3 == 0) offset = 0;
      p.placements.back() = {mem, offset};
      placed = true;
      const size_t last = p.tensors.size() - 1;
      for (size_t j = 0; j < last && placed; ++j) placed = !Conflict(p, last, j);
    }
    if (!placed) {  // Give up on this tensor: drop it.
      p.tensors.pop_back();
      p.placements.pop_back();
    }
  }
  return p;
}

void Inject(std::mt19937_64& rng, Plan& p, bool conflicts_only) {
  if (p.tensors.empty()) return;
  const size_t i = Pick(rng, 0, static_cast<int64_t>(p.tensors.size()) - 1);
  Placement& q = p.placements[i];
  // Earlier faults may have broken this tensor already; leave it then.
  if (q.mem_id < 1 || q.mem_id > static_cast<MemId>(p.memories.size()) ||
      p.memories[q.mem_id - 1].alignment < 1 || q.offset < 0 || q.offset > kMaxByteValue ||
      p.tensors[i].size < 0 || p.tensors[i].size > kMaxByteValue) {
    return;
  }
  const Memory& memory = p.memories[q.mem_id - 1];
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  switch (conflicts_only ? 0 : Pick(rng, 0, 9)) {
    case 0:
    case 1:
    case 2: {  // Move onto another tensor (a conflict when lifetimes overlap and sizes > 0).
      const size_t j = Pick(rng, 0, static_cast<int64_t>(p.tensors.size()) - 1);
      q = p.placements[j];
      if (Pick(rng, 0, 2) != 0) p.tensors[i].lifetime = p.tensors[j].lifetime;
      if (Pick(rng, 0, 2) == 0 && p.placements[j].offset >= memory.alignment) {
        q.offset -= memory.alignment;  // Partial overlap from below.
      }
      break;
    }
    case 3:  // Misaligned (no violation if alignment is 1).
      q.offset += Pick(rng, 1, 63);
      break;
    case 4:  // Ends past the memory, or exactly at its end.
      q.offset = (memory.size - p.tensors[i].size + Pick(rng, 0, 2) * memory.alignment) /
                 memory.alignment * memory.alignment;
      if (q.offset < 0) q.offset = 0;
      break;
    case 5: {
      static const MemId kBadIds[] = {0, -1, 5, 63, 64, std::numeric_limits<MemId>::max()};
      q.mem_id = Pick(rng, 0, 1) == 0 ? static_cast<MemId>(p.memories.size() + 1)
                                      : kBadIds[Pick(rng, 0, 5)];
      break;
    }
    case 6:
      q.offset = Pick(rng, 0, 1) == 0 ? -memory.alignment : std::numeric_limits<int64_t>::min();
      break;
    case 7:
      p.tensors[i].size = Pick(rng, 0, 1) == 0 ? -1 : std::numeric_limits<int64_t>::min();
      break;
    case 8:  // Offsets / sizes at the top of int64: offset + size overflows.
      q.offset = kMax / memory.alignment * memory.alignment;
      if (Pick(rng, 0, 1) == 0) p.tensors[i].size = kMax;
      break;
    default:  // A bad alignment on the tensor's memory.
      p.memories[q.mem_id - 1].alignment = Pick(rng, -2, 0);
      break;
  }
}

struct Stats {
  int64_t plans = 0;
  int64_t valid = 0;
  int64_t bounds = 0;
  int64_t conflicts = 0;
};

void CheckOne(const Plan& p, Stats& stats) {
  ++stats.plans;
  const std::string message = Validate(p.tensors, p.placements, p.memories);
  const Verdict v = BruteForce(p);
  if (!CHECK_EQ(message.empty(), v.valid)) {
    std::cerr << "    Validate said: \"" << message << "\"\n";
    return;
  }
  if (v.valid) {
    ++stats.valid;
    return;
  }
  if (v.first_bounds_violation) {
    ++stats.bounds;
    // Bounds are checked tensor by tensor, so the first offender is reported.
    const std::string prefix = "tensor " + std::to_string(*v.first_bounds_violation) + " ";
    const MemId mem = p.placements[*v.first_bounds_violation].mem_id;
    const bool bad_alignment = mem >= 1 && mem <= static_cast<MemId>(p.memories.size()) &&
                               p.tensors[*v.first_bounds_violation].size >= 0 &&
                               p.placements[*v.first_bounds_violation].offset >= 0 &&
                               p.memories[mem - 1].alignment < 1;
    if (!CHECK(message.rfind(bad_alignment ? std::string("memory ") : prefix, 0) == 0)) {
      std::cerr << "    expected the message to start with \"" << prefix << "\": " << message
                << "\n";
    }
    return;
  }
  if (!v.conflicts.empty()) {
    ++stats.conflicts;
    // The message names a pair that really conflicts: two indices, both present.
    const std::vector<size_t> named = NamedTensors(message);
    bool ok = CHECK_EQ(named.size(), size_t{2});
    if (ok)
      ok = CHECK(v.conflicts.count({std::min(named[0], named[1]), std::max(named[0], named[1])}) ==
                 1);
    if (ok && v.conflicts.size() == 1) {
      CHECK_EQ(std::set<size_t>(named.begin(), named.end()),
               (std::set<size_t>{v.conflicts.begin()->first, v.conflicts.begin()->second}));
    }
    if (!ok) std::cerr << "    message: " << message << "\n";
  }
}

void TestHandMade() {
  memplan_test::SetContext("hand-made");
  const std::vector<Memory> memories = {{100, 4}, {50, 1}};
  // Touching lifetimes share node 5; bytes 0..7 and 4..11 share 4..7.
  std::vector<Tensor> tensors = {{{0, 5}, 8}, {{5, 9}, 8}};
  std::vector<Placement> placements = {{1, 0}, {1, 4}};
  std::string message = Validate(tensors, placements, memories);
  CHECK(!message.empty());
  CHECK_EQ(NamedTensors(message), (std::vector<size_t>{0, 1}));
  // Adjacent bytes do not overlap.
  placements[1].offset = 8;
  CHECK_EQ(Validate(tensors, placements, memories), std::string());
  // Disjoint lifetimes may share bytes.
  tensors[1].lifetime = {6, 9};
  placements[1].offset = 0;
  CHECK_EQ(Validate(tensors, placements, memories), std::string());
  // Zero-size tensors overlap nothing, but must still be aligned and inside.
  tensors.push_back({{0, 9}, 0});
  placements.push_back({1, 4});
  CHECK_EQ(Validate(tensors, placements, memories), std::string());
  placements[2].offset = 100;
  CHECK_EQ(Validate(tensors, placements, memories), std::string());
  placements[2].offset = 104;
  CHECK(!Validate(tensors, placements, memories).empty());
  placements[2].offset = 2;
  CHECK(!Validate(tensors, placements, memories).empty());
  // Different memories never conflict.
  placements[2] = {2, 0};
  tensors[2].size = 50;
  CHECK_EQ(Validate(tensors, placements, memories), std::string());
  tensors[2].size = 51;
  CHECK(!Validate(tensors, placements, memories).empty());
  // Mismatched lengths.
  placements.pop_back();
  CHECK(!Validate(tensors, placements, memories).empty());
  // A conflict among many tensors names exactly the conflicting pair.
  tensors.clear();
  placements.clear();
  for (int i = 0; i < 20; ++i) {
    tensors.push_back({{i, i + 2}, 4});
    placements.push_back({1, 4 * (i % 3)});  // Rotating three slots: valid.
  }
  CHECK_EQ(Validate(tensors, placements, memories), std::string());
  // Tensor 13, now alive only at 13, moves to bytes 8..11: only tensor 11
  // ([11, 13] at 8) is alive then in those bytes; 14 starts at 14.
  tensors[13].lifetime = {13, 13};
  placements[13].offset = 8;
  message = Validate(tensors, placements, memories);
  CHECK_EQ(NamedTensors(message), (std::vector<size_t>{11, 13}));
  memplan_test::SetContext("");
}

}  // namespace

int main() {
  const auto begin = std::chrono::steady_clock::now();
  TestHandMade();
  Stats stats;
  constexpr int kCases = 30000;
  for (uint64_t seed = 1; seed <= kCases; ++seed) {
    memplan_test::SetContext("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    Plan p = RandomValidPlan(rng, /*huge=*/seed % 10 == 0);
    CheckOne(p, stats);
    // Then the same plan with 1-3 injected faults (some turn out harmless).
    const int faults = static_cast<int>(Pick(rng, 1, 3));
    const bool conflicts_only = Pick(rng, 0, 1) == 0;
    for (int f = 0; f < faults; ++f) Inject(rng, p, conflicts_only);
    CheckOne(p, stats);
    if (seed % 50 == 0) {  // Length mismatch.
      p.placements.push_back({1, 0});
      CheckOne(p, stats);
    }
  }
  memplan_test::SetContext("");
  // The random plans must exercise every outcome.
  CHECK(stats.valid > stats.plans / 5);
  CHECK(stats.bounds > stats.plans / 10);
  CHECK(stats.conflicts > stats.plans / 20);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  std::cout << "validator_test: " << stats.plans << " random plans vs brute force (" << stats.valid
            << " valid, " << stats.bounds << " bounds violations, " << stats.conflicts
            << " conflicts) in " << seconds << " s\n";
  return memplan_test::Finish();
}
