#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/best/best_search.h"

namespace cadence_memplan {
namespace detail {
namespace {

// Nodes of the exact search per tensor of the request: for the whole
// growth of memory 1, for packing every tensor that may go there at once,
// and per tensor of memory 1 for adding one more. A node costs about a
// pass over the tensors, so the growth costs about n^2 * 16 steps.
constexpr int64_t kGrowthNodesPerTensor = 16;
constexpr int64_t kAllAtOnceNodesPerTensor = 16;
constexpr int64_t kOneMoreNodesPerTensor = 4;
// After this many searches in a row that could not add a tensor to memory
// 1, the growth stops: the rest rarely fits either.
constexpr int kGrowthFailures = 4;

// The lowest aligned offset where tensor t fits into memory m beside
// `present` (tensors with their offsets), or kNoOffset.
Offset FirstFit(const Tensor& t, const Memory& memory,
                const std::vector<std::pair<Tensor, Offset>>& present) {
  std::vector<std::pair<Offset, Offset>> taken;  // [begin, end) alive with t.
  for (const auto& [other, offset] : present) {
    if (other.size > 0 && other.lifetime.Overlaps(t.lifetime)) {
      taken.push_back({offset, SaturatingAdd(offset, other.size)});
    }
  }
  std::sort(taken.begin(), taken.end());
  Offset candidate = 0;
  for (const auto& [begin, end] : taken) {
    if (SaturatingAdd(candidate, t.size) <= begin) break;
    if (end > candidate) candidate = AlignUp(end, memory.alignment);
  }
  return AlignUp(SaturatingAdd(candidate, t.size), memory.alignment) <= memory.size ? candidate
                                                                                    : kNoOffset;
}

// Whether memory m holds the aligned bytes alive with t, those of `present`
// included, at every time t lives: needed for t to join them at all.
bool RoomAlive(const Tensor& t, const Memory& memory,
               const std::vector<std::pair<Tensor, Offset>>& present) {
  std::vector<std::pair<Time, Size>> events;  // Within t's lifetime.
  for (const auto& [other, offset] : present) {
    if (other.size == 0 || !other.lifetime.Overlaps(t.lifetime)) continue;
    const Size bytes = AlignUp(other.size, memory.alignment);
    events.push_back({std::max(other.lifetime.start, t.lifetime.start), bytes});
    if (other.lifetime.end < t.lifetime.end) events.push_back({other.lifetime.end + 1, -bytes});
  }
  std::sort(events.begin(), events.end());  // Ends before starts at the same time.
  const Size room = memory.size - AlignUp(t.size, memory.alignment);
  Size live = 0;
  for (const auto& [time, delta] : events) {
    live = SaturatingAdd(live, delta);
    if (live > room) return false;
  }
  return true;
}

}  // namespace

// 3. Memory 1 grows: every tensor that may go there if they all fit, else
// one by one, largest first; then the portfolio places the rest below it.
void BestSearch::GrowMemory1() {
  const Memory& memory = request_.memories[0];
  const size_t n = request_.tensors.size();
  std::vector<TensorIndex> kept, outside;
  for (size_t i = 0; i < n; ++i) {
    const auto t = static_cast<TensorIndex>(i);
    if (result_.plan.placements[i].mem_id == 1) {
      kept.push_back(t);
    } else if (request_.tensors[i].size > 0 && MayUse(request_, t, 1)) {
      outside.push_back(t);
    }
  }
  if (outside.empty() || OverBudget()) return;
  request_.interrupt.Begin(Phase::kImprove);
  std::stable_sort(outside.begin(), outside.end(), [&](TensorIndex a, TensorIndex b) {
    return request_.tensors[a].size > request_.tensors[b].size;
  });
  std::vector<Offset> offsets(n, kNoOffset);
  for (TensorIndex t : kept) offsets[t] = result_.plan.placements[t].offset;
  PackingProblem problem;
  problem.alignment = memory.alignment;
  for (const PlacedTensor& p : request_.placed) {
    if (p.placement.mem_id == 1) problem.obstacles.push_back({p.tensor, p.placement.offset});
  }
  // Packs `members` anew; true (and their offsets set) when they fit.
  int64_t growth_nodes = kGrowthNodesPerTensor * static_cast<int64_t>(n);
  const auto repack = [&](const std::vector<TensorIndex>& members, int64_t nodes) {
    problem.tensors.clear();
    for (TensorIndex t : members) problem.tensors.push_back(request_.tensors[t]);
    SearchLimits limits = Limits();
    limits.max_nodes = std::min({limits.max_nodes, nodes, growth_nodes});
    const FitResult fit = FitInCapacity(problem, memory.size, limits);
    Charge(fit.nodes);
    growth_nodes -= fit.nodes;
    if (fit.fit != Fit::kFits) return false;
    for (size_t k = 0; k < members.size(); ++k) offsets[members[k]] = fit.offsets[k];
    return true;
  };
  const size_t kept_before = kept.size();
  std::vector<TensorIndex> all = kept;
  all.insert(all.end(), outside.begin(), outside.end());
  if (repack(all, kAllAtOnceNodesPerTensor * static_cast<int64_t>(all.size()))) {
    kept = std::move(all);
  } else {
    std::vector<std::pair<Tensor, Offset>> present;  // Memory 1 now.
    const auto list_present = [&] {
      present.clear();
      for (const Obstacle& o : problem.obstacles) present.push_back({o.tensor, o.offset});
      for (TensorIndex k : kept) present.push_back({request_.tensors[k], offsets[k]});
    };
    list_present();
    int failures = 0;  // Searches in a row that did not fit one more.
    for (TensorIndex t : outside) {
      if (OverBudget() || growth_nodes <= 0 || failures == kGrowthFailures) break;
      request_.interrupt.Poll();
      const Offset hole = FirstFit(request_.tensors[t], memory, present);
      if (hole != kNoOffset) {
        offsets[t] = hole;
        kept.push_back(t);
        present.push_back({request_.tensors[t], hole});
        continue;
      }
      if (!RoomAlive(request_.tensors[t], memory, present)) continue;
      std::vector<TensorIndex> with = kept;
      with.push_back(t);
      if (repack(with, kOneMoreNodesPerTensor * static_cast<int64_t>(with.size()))) {
        kept = std::move(with);
        list_present();
        failures = 0;
      } else {
        ++failures;
      }
    }
  }
  if (kept.size() == kept_before) return;

  PlaceAroundMemory1(
      kept, offsets,
      "memory 1 grown by the exact search to " + std::to_string(kept.size()) + " tensors");
}

}  // namespace detail
}  // namespace cadence_memplan
