#include "core/best/best.h"

#include <algorithm>
#include <utility>

#include "core/best/best_search.h"
#include "core/common/str_cat.h"

namespace cadence_memplan {
namespace detail {

// The steps, in best.h's order. Each reads the best plan so far and offers
// better ones through Consider; a step that may leave nothing outside memory 1
// goes before the last call of MinimizeMemory1, which then minimises its plan.
BestResult BestSearch::Run() {
  Portfolio();
  FitFirst();
  PackSelection();
  if (best_cost_.empty()) {
    if (first_failure_) throw NoPlan();
    throw InvalidInput("no candidate plan passes Validate: " + first_problem_);
  }
  if (NothingOutsideMemory1()) {
    if (MinimizeMemory1()) return Finish();
  }
  SqueakyWheel();
  if (!NothingOutsideMemory1()) GrowMemory1();
  if (NothingOutsideMemory1()) MinimizeMemory1();
  return Finish();
}

// 2. Memory 1's bufsize, exactly, when nothing of this call lies outside
// it; sets the lower bound. Returns whether the plan is proved optimal or
// the exact search used the budget (so nothing else is worth trying).
bool BestSearch::MinimizeMemory1() {
  const Memory& memory = request_.memories[0];
  PackingProblem problem;
  problem.alignment = memory.alignment;
  std::vector<TensorIndex> in_memory1;
  std::vector<Offset> incumbent;
  for (size_t i = 0; i < request_.tensors.size(); ++i) {
    if (result_.plan.placements[i].mem_id != 1) continue;
    in_memory1.push_back(static_cast<TensorIndex>(i));
    problem.tensors.push_back(request_.tensors[i]);
    incumbent.push_back(result_.plan.placements[i].offset);
  }
  Size others = 0;  // The other memories' bufsizes: already-placed tensors only.
  for (const PlacedTensor& p : request_.placed) {
    if (p.placement.mem_id == 1) problem.obstacles.push_back({p.tensor, p.placement.offset});
  }
  for (size_t m = 2; m < result_.plan.bufsizes.size(); ++m) {
    others = SaturatingAdd(others, PlacedBufsize(static_cast<MemId>(m)));
  }
  const double started = ElapsedMs();
  const PackingResult packed = MinimizeBufsize(problem, memory.size, incumbent, Limits());
  Charge(packed.nodes);
  if (packed.bufsize < result_.plan.bufsizes[1]) {
    std::vector<Placement> placements = result_.plan.placements;
    for (size_t k = 0; k < in_memory1.size(); ++k) {
      placements[in_memory1[k]].offset = packed.offsets[k];
    }
    const Size before = best_cost_.back();
    if (Consider(AssemblePlan(request_, std::move(placements), result_.plan.occupancy),
                 packed.strategy)) {
      // The search's own progress, in PlanBest's time.
      result_.improvements.pop_back();
      for (size_t k = 1; k < packed.improvements.size(); ++k) {
        const Size total = SaturatingAdd(
            before, packed.improvements[k].bufsize - packed.improvements.front().bufsize);
        result_.improvements.push_back({started + packed.improvements[k].elapsed_ms, total});
      }
    }
  }
  result_.lower_bound = SaturatingAdd(packed.lower_bound, others);
  result_.proved_optimal = best_cost_.back() == *result_.lower_bound;
  if (result_.proved_optimal || !packed.searched) return result_.proved_optimal;
  result_.budget_exhausted = true;  // The search ends unproved only when the budget does.
  return true;
}

// The largest aligned end of memory m's already-placed tensors.
Size BestSearch::PlacedBufsize(MemId m) const {
  Size bufsize = 0;
  for (const PlacedTensor& p : request_.placed) {
    if (p.placement.mem_id != m) continue;
    bufsize = std::max(bufsize, AlignUp(SaturatingAdd(p.placement.offset, p.tensor.size),
                                        request_.memories[m - 1].alignment));
  }
  return bufsize;
}

}  // namespace detail

std::vector<Size> PlanCost(const PlanRequest& request, const PlanResult& plan,
                           const std::vector<Size>& weights) {
  const size_t memory_count = request.memories.size();
  // outside[m]: the weights (bytes by default) of this call's tensors in
  // memories past m. Saturating: they may add up past 2^63.
  std::vector<Size> cost(memory_count, 0);
  for (size_t i = 0; i < request.tensors.size(); ++i) {
    const Size weight = weights.empty() ? request.tensors[i].size : weights[i];
    for (size_t m = plan.placements[i].mem_id; m-- > 1;) {
      cost[m - 1] = SaturatingAdd(cost[m - 1], weight);
    }
  }
  Size total = 0;
  for (size_t m = 1; m <= memory_count; ++m) total = SaturatingAdd(total, plan.bufsizes[m]);
  cost[memory_count - 1] = total;
  return cost;
}

BestResult PlanBest(const PlanRequest& request, const BestOptions& options) {
  if (std::string problem = CheckRequest(request); !problem.empty()) throw InvalidInput(problem);
  std::vector<char> selected(request.tensors.size(), 0);
  for (TensorIndex t : options.keep_in_memory1) {
    if (t < 0 || t >= static_cast<TensorIndex>(request.tensors.size())) {
      throw InvalidInput(StrCat("keep_in_memory1: tensor ", t, " is out of range 0..",
                                request.tensors.size(), ")"));
    }
    if (selected[t]) throw InvalidInput(StrCat("keep_in_memory1: tensor ", t, " is named twice"));
    if (!detail::MayUse(request, t, 1)) {
      throw InvalidInput(StrCat("keep_in_memory1: tensor ", t, " may not go to memory 1"));
    }
    selected[t] = 1;
  }
  if (options.work_budget < 0) {
    throw InvalidInput(StrCat("work_budget must be >= 0, got ", options.work_budget));
  }
  if (!(options.budget_ms >= 0)) {  // NaN too.
    throw InvalidInput(StrCat("budget_ms must be a number >= 0, got ", options.budget_ms));
  }
  if (!options.weights.empty() && options.weights.size() != request.tensors.size()) {
    throw InvalidInput(StrCat("weights has ", options.weights.size(), " entries for ",
                              request.tensors.size(), " tensors"));
  }
  for (size_t i = 0; i < options.weights.size(); ++i) {
    if (options.weights[i] < 0) {
      throw InvalidInput(StrCat("weights[", i, "] is negative: ", options.weights[i]));
    }
  }
  return detail::BestSearch(request, options).Run();
}

}  // namespace cadence_memplan
