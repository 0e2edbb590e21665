#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/best/best_search.h"
#include "core/common/peak_live.h"
#include "core/common/polled_sort.h"

namespace cadence_memplan {
namespace detail {
namespace {

// Fixed, so that the search is deterministic.
constexpr uint64_t kImprovementSeed = 20010328;
// Squeaky-wheel rounds between restarts from the best order so far.
constexpr int64_t kRoundsBeforeRestart = 25;

// The most bytes alive at once among the tensors of each memory, already
// placed ones included: no placement in that memory can end lower.
std::vector<Size> PeakLiveBounds(const PlanRequest& request, const PlanResult& plan) {
  std::vector<PeakLive> live(request.memories.size() + 1);
  // The bounds only steer the search, so a saturated one costs no correctness.
  for (const PlacedTensor& p : request.placed) {
    live[p.placement.mem_id].Add(p.tensor.lifetime, p.tensor.size);
  }
  for (size_t i = 0; i < request.tensors.size(); ++i) {
    live[plan.placements[i].mem_id].Add(request.tensors[i].lifetime, request.tensors[i].size);
  }
  std::vector<Size> bounds(live.size(), 0);
  for (size_t m = 1; m < live.size(); ++m) bounds[m] = live[m].Peak();
  return bounds;
}

}  // namespace

// 3. Squeaky wheel: priorities start from the best order's ranks; each
// round, the tensors that stand out push themselves forward.
void BestSearch::SqueakyWheel() {
  if (result_.budget_exhausted) return;
  const size_t n = request_.tensors.size();
  const int64_t round_work = PlacementWork(n);
  std::vector<double> priority(n);
  std::vector<TensorIndex> best_order = best_order_;
  for (size_t rank = 0; rank < n; ++rank) {
    priority[best_order[rank]] = static_cast<double>(n - rank);
  }
  const Algorithm algorithm = result_.algorithm;
  const std::string base = result_.order;
  std::vector<TensorIndex> order = best_order;
  PlanResult current = result_.plan;
  // A push moves a tensor about n / 32 places forward.
  const double push = static_cast<double>(n) / 32 + 1;
  std::mt19937_64 rng(kImprovementSeed);
  for (int64_t round = 0; round < options_.improvement_rounds; ++round) {
    if (work_left_ < round_work || DeadlinePassed()) {
      result_.budget_exhausted = true;
      break;
    }
    ChargeWork(round_work);
    request_.interrupt.Begin(Phase::kImprove);
    const std::vector<Size> bounds = PeakLiveBounds(request_, current);
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      const Placement& p = current.placements[i];
      const Size end = AlignUp(SaturatingAdd(p.offset, request_.tensors[i].size),
                               request_.memories[p.mem_id - 1].alignment);
      const bool spilled = p.mem_id > 1;
      const bool high = end > bounds[p.mem_id];
      if (spilled || high) {
        // Spilled further, pushed harder; the jitter keeps the rounds from
        // cycling through the same few orders.
        const double weight = spilled ? p.mem_id : 1;
        priority[i] += push * weight * std::uniform_real_distribution<double>(0.5, 1.5)(rng);
        any = true;
      }
    }
    if (!any) break;  // Every memory at its bound and nothing spilled: optimal.
    SortPolled(
        order.begin(), order.end(),
        [&](TensorIndex a, TensorIndex b) {
          return priority[a] != priority[b] ? priority[a] > priority[b] : a < b;
        },
        request_.interrupt);
    PlanResult plan;
    try {
      plan = PlanInOrder(request_, algorithm, order);
    } catch (const PlanningFailure&) {
      break;
    }
    if (!Problem(plan).empty()) break;
    if (ConsiderPlacer(plan, algorithm,
                       base + ", then " + std::to_string(round + 1) + " squeaky-wheel rounds",
                       /*validated=*/true)) {
      best_order = order;
    }
    current = std::move(plan);
    if ((round + 1) % kRoundsBeforeRestart == 0) {
      // Start again from the best order so far: the pushes drift away from it.
      order = best_order;
      for (size_t rank = 0; rank < n; ++rank) {
        priority[order[rank]] = static_cast<double>(n - rank);
      }
      current = result_.plan;
    }
  }
}

}  // namespace detail
}  // namespace cadence_memplan
