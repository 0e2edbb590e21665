// libFuzzer target for the planner core. Each input decodes into a small
// PlanRequest that both placers then plan, held to the oracles of
// reference_planner.h: InvalidInput exactly when CheckRequest complains, the
// naive reference's plan or failing tensor, and Validate on every plan.
// algorithm="best" is held to best_oracle.h: Validate, never worse than
// either upstream placer nor than its own portfolio, the same plan when run
// again, and every lower bound and claim of optimality checked by brute force
// (packing_oracle.h) where that can run. The same tensors then go through
// exir's greedy and BankedGreedy (shared_objects.h), whose tree, indexed and
// automatic searches must give exactly what exir's loops (Occupancy::kScan)
// give. Any violation aborts, so libFuzzer keeps
// the input as a crash.
//
// The decoding draws values from small classes (zero, ties, 2^62 and its
// neighbours, alignments such as 37) rather than raw 8-byte integers, so that
// mutations reach the edge cases in a few steps; invalid values come from one
// optional corruption at the end, so most inputs still get planned.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/exir/shared_objects.h"
#include "core/placement/planner.h"
#include "tests/best/best_oracle.h"
#include "tests/placement/reference_planner.h"

namespace {

using namespace cadence_memplan;
using namespace cadence_memplan::reference;

constexpr Size kTop = kMaxByteValue;
constexpr int kMaxMemoriesHere = 4;
constexpr int kMaxTensors = 40;
constexpr int kMaxPlaced = 8;
constexpr Time kMaxStart = 24;

Size ConsumeSize(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 8)) {
    case 0: return 0;
    case 1: return 16;  // Ties, which the stable sort must keep in input order.
    case 2: return 32;
    case 3: return kTop;
    case 4: return kTop - in.ConsumeIntegralInRange<Size>(1, 64);
    case 5: return kTop / 2 + in.ConsumeIntegralInRange<Size>(-64, 64);
    default: return in.ConsumeIntegralInRange<Size>(1, 160);
  }
}

Memory ConsumeMemory(FuzzedDataProvider& in) {
  Memory memory;
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: memory.size = kTop; break;
    case 1: memory.size = kTop - in.ConsumeIntegralInRange<Size>(0, 1024); break;
    default: memory.size = in.ConsumeIntegralInRange<Size>(1, 600); break;
  }
  // The last entry stands for "any small alignment".
  memory.alignment = in.PickValueInArray<Size>({1, 2, 3, 16, 37, 64, kTop / 2, kTop, 0});
  if (memory.alignment == 0) memory.alignment = in.ConsumeIntegralInRange<Size>(1, 100);
  return memory;
}

// Empty lifetimes keep end >= 0: a negative node index is a corruption of its own.
Lifetime ConsumeLifetime(FuzzedDataProvider& in) {
  const Time start = in.ConsumeIntegralInRange<Time>(0, kMaxStart);
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: return {start + 1 + in.ConsumeIntegralInRange<Time>(0, 3), start};
    case 1: return {start, start};
    default: return {start, start + in.ConsumeIntegralInRange<Time>(0, 8)};
  }
}

// Memory ids 1..4 from the low bits of a byte.
MemoryMask ConsumeSmallMask(FuzzedDataProvider& in) {
  return static_cast<MemoryMask>(in.ConsumeIntegral<uint8_t>()) << 1;
}

// Inside its memory, as CheckRequest demands; aligned, packed after the
// previous one in the same memory, flush with the memory's end, or anywhere
// (an invalid state, which the placers must accept all the same).
PlacedTensor ConsumePlaced(FuzzedDataProvider& in, const PlanRequest& r) {
  PlacedTensor p;
  p.tensor = {ConsumeLifetime(in), ConsumeSize(in)};
  p.placement.mem_id = in.ConsumeIntegralInRange<MemId>(1, static_cast<MemId>(r.memories.size()));
  const Memory& memory = r.memories[p.placement.mem_id - 1];
  p.tensor.size = std::min(p.tensor.size, memory.size);
  const Offset last = memory.size - p.tensor.size;
  Offset offset = in.ConsumeIntegralInRange<Offset>(0, last);
  switch (in.ConsumeIntegralInRange(0, 3)) {
    case 0: offset -= offset % memory.alignment; break;
    case 1:
      for (const PlacedTensor& q : r.placed) {
        if (q.placement.mem_id == p.placement.mem_id) {
          offset = AlignUp(q.placement.offset + q.tensor.size, memory.alignment);
        }
      }
      if (offset > last) offset = 0;
      break;
    case 2: offset = last; break;
    default: break;
  }
  p.placement.offset = offset;
  return p;
}

Offset ConsumeIncomingOffset(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0: return kNoOffset;
    case 1: return 0;
    case 2: return in.ConsumeIntegralInRange<Offset>(0, 400);
    case 3: return 64 * in.ConsumeIntegralInRange<Offset>(0, 6);
    default: return in.PickValueInArray<Offset>({kTop / 2, kTop - 1, kTop});
  }
}

template <typename T>
size_t PickIndex(FuzzedDataProvider& in, const std::vector<T>& items) {
  return in.ConsumeIntegralInRange<size_t>(0, items.size() - 1);
}

// One value CheckRequest should reject (a few land on valid requests, e.g. a
// wrong-length list when its length happens to match; the oracle copes).
void Corrupt(FuzzedDataProvider& in, PlanRequest& r) {
  const auto memory_count = static_cast<MemId>(r.memories.size());
  switch (in.ConsumeIntegralInRange(0, 12)) {
    case 0: r.memories.assign(in.PickValueInArray<size_t>({0, 64}), Memory{100, 1}); return;
    case 1:
      r.memories[PickIndex(in, r.memories)].size = in.PickValueInArray<Size>({0, -1, kTop + 1});
      return;
    case 2:
      r.memories[PickIndex(in, r.memories)].alignment =
          in.PickValueInArray<Size>({0, -16, kTop + 1});
      return;
    case 3:
      if (r.tensors.empty()) return;
      r.tensors[PickIndex(in, r.tensors)].size = in.PickValueInArray<Size>({-1, kTop + 1});
      return;
    case 4:
      if (r.tensors.empty()) return;
      r.tensors[PickIndex(in, r.tensors)].lifetime =
          in.PickValueInArray<Lifetime>({{-1, 3}, {2, -1}, {-3, -2}});
      return;
    case 5: r.blocked.resize(r.blocked.size() + 1); return;
    case 6:
      if (r.tensors.empty()) return;
      if (r.blocked.empty()) r.blocked.assign(r.tensors.size(), 0);
      r.blocked[PickIndex(in, r.blocked)] |=
          MaskOf(in.ConsumeIntegralInRange<MemId>(memory_count + 1, kMaxMemories));
      return;
    case 7: r.incoming_offsets.resize(r.incoming_offsets.size() + 1, kNoOffset); return;
    case 8:
      if (r.tensors.empty()) return;
      if (r.incoming_offsets.empty()) r.incoming_offsets.assign(r.tensors.size(), kNoOffset);
      r.incoming_offsets[PickIndex(in, r.incoming_offsets)] =
          in.PickValueInArray<Offset>({-2, kTop + 1, INT64_MIN});
      return;
    case 9:
      if (r.placed.empty()) return;
      r.placed[PickIndex(in, r.placed)].placement.mem_id =
          in.PickValueInArray<MemId>({0, -1, static_cast<MemId>(memory_count + 1), 64});
      return;
    case 10: {
      if (r.placed.empty()) return;
      PlacedTensor& p = r.placed[PickIndex(in, r.placed)];
      const Size memory_size = r.memories[p.placement.mem_id - 1].size;
      p.placement.offset =
          in.PickValueInArray<Offset>({-8, kNoOffset, memory_size - p.tensor.size + 1, kTop});
      return;
    }
    case 11:
      if (r.placed.empty()) return;
      r.placed[PickIndex(in, r.placed)].tensor.size = in.PickValueInArray<Size>({-1, kTop + 1});
      return;
    default:
      if (r.placed.empty()) return;
      r.placed[PickIndex(in, r.placed)].tensor.lifetime.start = -1;
      return;
  }
}

PlanRequest ConsumeRequest(FuzzedDataProvider& in) {
  PlanRequest r;
  const int memory_count = in.ConsumeIntegralInRange(1, kMaxMemoriesHere);
  for (int m = 0; m < memory_count; ++m) r.memories.push_back(ConsumeMemory(in));
  const MemoryMask existing = AllMemories(memory_count);

  const int tensor_count = in.ConsumeIntegralInRange(0, kMaxTensors);
  for (int i = 0; i < tensor_count; ++i)
    r.tensors.push_back({ConsumeLifetime(in), ConsumeSize(in)});
  if (in.ConsumeBool()) {
    for (int i = 0; i < tensor_count; ++i) r.blocked.push_back(ConsumeSmallMask(in) & existing);
  }
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0: break;  // The default, every bit set.
    case 1: r.allowed = ConsumeSmallMask(in) & existing; break;
    default: r.allowed = in.ConsumeIntegral<MemoryMask>(); break;  // Stray bits are ignored.
  }
  const int placed_count = in.ConsumeIntegralInRange(0, kMaxPlaced);
  for (int j = 0; j < placed_count; ++j) r.placed.push_back(ConsumePlaced(in, r));
  if (in.ConsumeBool()) {
    for (int i = 0; i < tensor_count; ++i) r.incoming_offsets.push_back(ConsumeIncomingOffset(in));
  }
  r.keep_incoming_offset = in.ConsumeBool();
  // Last, so that it cannot disturb the decoding of a valid request above.
  if (in.ConsumeIntegralInRange(0, 7) == 7) Corrupt(in, r);
  return r;
}

// The request's tensors as exir's planners see them: blocked masks become
// pins, incoming offsets storage bases (the next tensor's), memories banks.
BankedRequest ToExirRequest(const PlanRequest& r) {
  BankedRequest request;
  const auto count = static_cast<TensorIndex>(r.tensors.size());
  for (TensorIndex i = 0; i < count; ++i) {
    ExirTensor tensor;
    tensor.lifetime = r.tensors[i].lifetime;
    tensor.nbytes = r.tensors[i].size;
    tensor.sort_size = tensor.nbytes;
    const MemoryMask mask = i < static_cast<TensorIndex>(r.blocked.size()) ? r.blocked[i] : 0;
    tensor.pinned = mask != 0;
    tensor.mem_id = tensor.pinned ? static_cast<int64_t>(1 + mask % 3) : 1;
    if (i < static_cast<TensorIndex>(r.incoming_offsets.size()) && r.incoming_offsets[i] >= 0 &&
        count > 1) {
      tensor.base = (i + 1) % count;
      tensor.base_offset = r.incoming_offsets[i] % 64;
    }
    request.greedy.tensors.push_back(tensor);
  }
  request.greedy.alignment = r.memories[0].alignment;
  request.greedy.allow_overlapping_allocations = r.keep_incoming_offset;
  for (size_t m = 0; m < r.memories.size(); ++m) {
    const Memory& memory = r.memories[m];
    request.banks.push_back({static_cast<int64_t>(m + 1), memory.size, memory.alignment % 3 * 16});
  }
  return request;
}

// What a caller can observe of a pack: the error, or the placements.
std::vector<int64_t> Observed(const PackResult& result) {
  std::vector<int64_t> seen = {static_cast<int64_t>(result.error.kind), result.error.tensor,
                               result.error.value};
  seen.insert(seen.end(), result.visit_order.begin(), result.visit_order.end());
  seen.insert(seen.end(), result.final_alignment.begin(), result.final_alignment.end());
  if (result.error.kind != PackErrorKind::kNone) return seen;
  for (const ExirPlacement& p : result.placements) {
    seen.insert(seen.end(), {p.mem_id, p.object, p.offset});
  }
  seen.insert(seen.end(), result.bufsizes.begin(), result.bufsizes.end());
  seen.insert(seen.end(), result.used.begin(), result.used.end());
  return seen;
}

template <typename Pack>
void CheckSearchesAgree(BankedRequest request, Pack pack, const char* what) {
  constexpr int kSearches = 4;
  std::vector<int64_t> observed[kSearches];
  bool invalid[kSearches] = {false, false, false, false};
  const Occupancy searches[kSearches] = {Occupancy::kTree, Occupancy::kInterval, Occupancy::kAuto,
                                         Occupancy::kScan};
  request.greedy.auto_minimum_tensors = 0;  // kAuto's own choice, on small inputs too.
  for (int k = 0; k < kSearches; ++k) {
    request.greedy.search = searches[k];
    try {
      observed[k] = Observed(pack(request));
    } catch (const InvalidInput&) {
      invalid[k] = true;
    }
  }
  bool agree = true;
  for (int k = 0; k + 1 < kSearches; ++k) {
    agree = agree && invalid[k] == invalid[kSearches - 1] && observed[k] == observed[kSearches - 1];
  }
  if (!agree) {
    std::fprintf(stderr, "plan_fuzzer: %s: the searches and exir's loops disagree\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const PlanRequest request = ConsumeRequest(in);
  for (Algorithm algorithm : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
    const Comparison c = CompareWithReference(request, algorithm);
    if (!c.problem.empty()) {
      std::fprintf(stderr, "plan_fuzzer: oracle violated: %s\n", c.problem.c_str());
      std::abort();
    }
  }
  // algorithm="best", with a few improvement rounds and a small node budget
  // for the exact search, to keep inputs fast.
  const BestCheck best = CheckBest(request, 4, 200, int64_t{1} << 16);
  if (!best.problem.empty()) {
    std::fprintf(stderr, "plan_fuzzer: best's oracle violated: %s\n", best.problem.c_str());
    std::abort();
  }
  if (!request.memories.empty()) {
    const BankedRequest exir = ToExirRequest(request);
    CheckSearchesAgree(exir, [](const BankedRequest& r) { return PackGreedy(r.greedy); }, "greedy");
    CheckSearchesAgree(exir, [](const BankedRequest& r) { return PackBanked(r); }, "banked");
  }
  return 0;
}
