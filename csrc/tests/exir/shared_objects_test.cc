// FreeObjectTree against a brute force; PackGreedy, PackBanked and
// CheckStorageReuse with Occupancy::kTree,
// kInterval and kAuto against kScan (exir's loops, ported literally) on random problems: ties,
// zero sizes, inverted lifetimes, pins, storage-backed chains and bad bases.
// Every successful plan must also keep tensors that exir considers
// overlapping in time apart in memory, and the reuse check must count what a
// brute force over pairs counts.
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/exir/free_object_tree.h"
#include "core/exir/shared_objects.h"
#include "core/exir/storage_reuse.h"
#include "tests/common/check.h"

namespace {

using namespace cadence_memplan;

int64_t Pick(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Every other request has no inverted lifetime, so that kTree, which leaves
// memories holding one to exir's loops, searches its tree; one in ten is
// larger, for deeper trees.
GreedyRequest RandomRequest(std::mt19937_64& rng) {
  GreedyRequest request;
  const bool inverted = Pick(rng, 0, 1) == 0;
  const int64_t count = Pick(rng, 0, Pick(rng, 0, 9) == 0 ? 400 : 60);
  const int64_t horizon = Pick(rng, 1, count > 60 ? 200 : 40);
  for (int64_t i = 0; i < count; ++i) {
    ExirTensor tensor;
    const Time start = Pick(rng, 0, horizon);
    tensor.lifetime = {start, start + Pick(rng, inverted ? -2 : 0, 12)};
    tensor.nbytes = Pick(rng, 0, 4) * Pick(rng, 0, 64);
    const Size old_alignment = count <= 60 && Pick(rng, 0, 30) == 0 ? 64 : 16;
    tensor.sort_size = AlignUp(tensor.nbytes, old_alignment);
    tensor.pinned = Pick(rng, 0, 3) == 0;
    tensor.mem_id = tensor.pinned ? Pick(rng, 1, 3) : 1;
    request.tensors.push_back(tensor);
  }
  // Large requests keep the failures (storage bases, sizes out of order) of
  // small ones rare, so that most of them plan.
  for (int64_t i = 0; i < count; ++i) {
    if (Pick(rng, 0, count <= 60 ? 9 : 400) != 0) continue;
    const int64_t base = Pick(rng, 0, 20) == 0 ? kOutsideStorageBase : Pick(rng, 0, count - 1);
    request.tensors[i].base = base;
    request.tensors[i].base_offset = Pick(rng, 0, 8) == 0 ? Pick(rng, -1, 40) : 0;
  }
  request.alignment = Pick(rng, 0, 1) ? 16 : 1;
  request.allow_overlapping_allocations = Pick(rng, 0, 1) == 1;
  request.extra_padding = Pick(rng, 0, 1) * 8;
  if (Pick(rng, 0, 2) == 0) request.input_sizes = {0, Pick(rng, 0, 100), 32};
  return request;
}

bool SamePack(const PackResult& a, const PackResult& b) {
  if (a.error.kind != b.error.kind || a.error.tensor != b.error.tensor ||
      a.error.value != b.error.value || a.visit_order != b.visit_order ||
      a.final_alignment != b.final_alignment) {
    return false;
  }
  if (a.error.kind != PackErrorKind::kNone) return true;
  if (a.bufsizes != b.bufsizes || a.used != b.used) return false;
  for (size_t i = 0; i < a.placements.size(); ++i) {
    const ExirPlacement& p = a.placements[i];
    const ExirPlacement& q = b.placements[i];
    if (p.mem_id != q.mem_id || p.object != q.object || p.offset != q.offset) return false;
  }
  return true;
}

// exir's lifetime test (no case for inverted lifetimes) and bytes test.
bool Apart(const GreedyRequest& request, const PackResult& result) {
  const auto& tensors = request.tensors;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (size_t j = i + 1; j < tensors.size(); ++j) {
      if (tensors[i].base != kNoStorageBase || tensors[j].base != kNoStorageBase) continue;
      const Lifetime& a = tensors[i].lifetime;
      const Lifetime& b = tensors[j].lifetime;
      if (a.end < b.start || a.start > b.end) continue;
      const ExirPlacement& p = result.placements[i];
      const ExirPlacement& q = result.placements[j];
      const Size p_size = AlignUp(tensors[i].nbytes, request.alignment);
      const Size q_size = AlignUp(tensors[j].nbytes, request.alignment);
      if (p.mem_id == q.mem_id && StorageOverlaps(p.offset, p_size, q.offset, q_size)) {
        return false;
      }
    }
  }
  return true;
}

void TestGreedy(std::mt19937_64& rng, int rounds) {
  int successes = 0;
  for (int round = 0; round < rounds; ++round) {
    memplan_test::SetContext("greedy round " + std::to_string(round));
    GreedyRequest request = RandomRequest(rng);
    for (ExirTensor& tensor : request.tensors) tensor.mem_id = tensor.pinned ? tensor.mem_id : 1;
    request.search = Occupancy::kScan;
    const PackResult naive = PackGreedy(request);
    request.search = Occupancy::kInterval;
    const PackResult fast = PackGreedy(request);
    if (!CHECK(SamePack(fast, naive))) return;
    request.search = Occupancy::kTree;
    if (!CHECK(SamePack(PackGreedy(request), naive))) return;
    request.search = Occupancy::kAuto;
    request.auto_minimum_tensors = 0;  // The per-query choice, not a plain scan.
    if (!CHECK(SamePack(PackGreedy(request), naive))) return;
    if (fast.error.kind == PackErrorKind::kNone) {
      ++successes;
      CHECK(Apart(request, fast));
    }
  }
  CHECK(successes > rounds / 4);  // The generator must not only make failures.
}

void TestBanked(std::mt19937_64& rng, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    memplan_test::SetContext("banked round " + std::to_string(round));
    BankedRequest request;
    request.greedy = RandomRequest(rng);
    const int64_t banks = Pick(rng, 1, 3);
    for (int64_t b = 0; b < banks; ++b) {
      request.banks.push_back({b + 1, Pick(rng, 1, 4) * 500, Pick(rng, 0, 1) * 32});
    }
    request.greedy.search = Occupancy::kScan;
    const PackResult naive = PackBanked(request);
    request.greedy.search = Occupancy::kInterval;
    const PackResult fast = PackBanked(request);
    if (!CHECK(SamePack(fast, naive))) return;
    request.greedy.search = Occupancy::kTree;
    if (!CHECK(SamePack(PackBanked(request), naive))) return;
    request.greedy.search = Occupancy::kAuto;
    request.greedy.auto_minimum_tensors = 0;
    if (!CHECK(SamePack(PackBanked(request), naive))) return;
  }
}

void TestStorageReuse(std::mt19937_64& rng, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    memplan_test::SetContext("reuse round " + std::to_string(round));
    ReuseCheckRequest request;
    const int64_t count = Pick(rng, 0, 40);
    for (int64_t i = 0; i < count; ++i) {
      const Time start = Pick(rng, 0, 20);
      request.tensors.push_back({{start, start + Pick(rng, -1, 6)},
                                 Pick(rng, 1, 2),
                                 Pick(rng, 0, 10) * 16,
                                 Pick(rng, 0, 3) * 16,
                                 Pick(rng, 0, 2)});
      request.parents.push_back(i > 0 && Pick(rng, 0, 4) == 0 ? Pick(rng, 0, i - 1) : -1);
    }
    request.allow_lifetime_and_storage_overlap = Pick(rng, 0, 1) == 1;
    request.search = Occupancy::kScan;
    const ReuseCheckResult naive = CheckStorageReuse(request);
    request.search = Occupancy::kInterval;
    const ReuseCheckResult fast = CheckStorageReuse(request);
    if (!CHECK_EQ(fast.reuse_pairs, naive.reuse_pairs)) return;
    if (!CHECK_EQ(fast.violation, naive.violation)) return;
  }
}

// FreeObjectTree alone against a brute force over each object's lifetimes,
// with some times at the ends of int64 (where a run's end + 1 would overflow).
void TestFreeObjectTree(std::mt19937_64& rng, int rounds) {
  constexpr Time kMax = std::numeric_limits<Time>::max();
  constexpr Time kMin = std::numeric_limits<Time>::min();
  for (int round = 0; round < rounds; ++round) {
    memplan_test::SetContext("free object tree, round " + std::to_string(round));
    const int64_t capacity = Pick(rng, 1, Pick(rng, 0, 4) == 0 ? 70 : 9);
    const Time horizon = Pick(rng, 1, 30);
    const bool extreme = Pick(rng, 0, 3) == 0;
    const auto time = [&] {
      if (extreme && Pick(rng, 0, 3) == 0) {
        const Time offset = Pick(rng, 0, 3);
        return Pick(rng, 0, 1) == 0 ? kMin + offset : kMax - offset;
      }
      return Pick(rng, 0, horizon);
    };
    // Mostly short lifetimes, so that objects stay free somewhere.
    const auto lifetime = [&] {
      Time a = time();
      const Time length = Pick(rng, 0, 4);
      Time b = Pick(rng, 0, 4) == 0 ? time() : (a <= kMax - length ? a + length : kMax);
      if (a > b) std::swap(a, b);
      return Lifetime{a, b};
    };
    FreeObjectTree tree(capacity);
    std::vector<Size> sizes;
    std::vector<std::vector<Lifetime>> busy;
    for (int step = 0; step < 60; ++step) {
      if (Pick(rng, 0, 2) > 0) {
        int64_t object = Pick(rng, 0, static_cast<int64_t>(sizes.size()));
        if (object == static_cast<int64_t>(sizes.size())) {
          if (object == capacity) continue;
          sizes.push_back(Pick(rng, 0, 8));
          busy.emplace_back();
        }
        const Lifetime added = lifetime();
        tree.AddBusy(object, sizes[object], added);
        busy[object].push_back(added);
        continue;
      }
      const auto count = static_cast<int64_t>(sizes.size());
      const int64_t from = Pick(rng, 0, count);
      const Size min_size = Pick(rng, 0, 8);
      const Lifetime asked = lifetime();
      int64_t expected = -1;
      for (int64_t object = from; object < count && expected < 0; ++object) {
        bool free = sizes[object] >= min_size;
        for (const Lifetime& run : busy[object]) free = free && !run.Overlaps(asked);
        if (free) expected = object;
      }
      if (!CHECK_EQ(tree.FirstFree(from, count, min_size, asked), expected)) return;
    }
  }
}

}  // namespace

int main() {
  std::mt19937_64 rng(14);
  TestFreeObjectTree(rng, 3000);
  TestGreedy(rng, 3000);
  TestBanked(rng, 3000);
  TestStorageReuse(rng, 3000);
  return memplan_test::Finish();
}
