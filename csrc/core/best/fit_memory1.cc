// Fit first (best.h): the exact search asked directly whether every tensor
// that may go to memory 1 fits there, and then whether the caller's selection
// does, instead of waiting for a placer's plan that already fits. Where
// memory is tight the placers spill tensors that a packing keeps, so this is
// the step that answers "does it fit in my fast memory?".
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/best/best_search.h"
#include "core/common/peak_live.h"
#include "core/common/str_cat.h"

namespace cadence_memplan {
namespace detail {
namespace {

// Of the budget left, what fit first may spend when a plan exists already:
// the rest goes to the steps that improve a plan that spills.
constexpr double kFitFirstShare = 0.5;
// The same for the caller's selection: it comes from a bound (the capacity-first
// program), so packing it is worth more than the squeaky wheel's rounds.
constexpr double kSelectionShare = 0.8;

// The most units of `alignment` alive at once among `tensors` (each rounded
// up to whole units) and the units below `capacity_units` that `obstacles`
// cover whole: above capacity_units, no packing fits (exact_search.h,
// "Units"). Counts of units are held in a Size.
Size AlignedPeakLiveUnits(const std::vector<Tensor>& tensors,
                          const std::vector<Obstacle>& obstacles, Size alignment,
                          Size capacity_units) {
  PeakLive live;
  for (const Tensor& t : tensors) {
    live.Add(t.lifetime, t.size / alignment + (t.size % alignment != 0 ? 1 : 0));
  }
  for (const Obstacle& o : obstacles) {
    const Size first = o.offset / alignment + (o.offset % alignment != 0 ? 1 : 0);
    const Size end = std::min(SaturatingAdd(o.offset, o.tensor.size) / alignment, capacity_units);
    if (end > first) live.Add(o.tensor.lifetime, end - first);
  }
  return live.Peak();
}

}  // namespace

Fit BestSearch::PackIntoMemory1(const std::vector<TensorIndex>& members, const SearchLimits& limits,
                                const std::string& strategy) {
  const Memory& memory = request_.memories[0];
  PackingProblem problem;
  problem.alignment = memory.alignment;
  problem.obstacles = Memory1Obstacles();
  for (TensorIndex t : members) problem.tensors.push_back(request_.tensors[t]);
  const Size capacity_units = memory.size / memory.alignment;
  if (AlignedPeakLiveUnits(problem.tensors, problem.obstacles, memory.alignment, capacity_units) >
      capacity_units) {
    return Fit::kDoesNotFit;
  }
  const FitResult fit = FitInCapacity(problem, memory.size, limits);
  Charge(fit.nodes);
  if (fit.fit != Fit::kFits) return fit.fit;
  std::vector<Offset> offsets(request_.tensors.size(), kNoOffset);
  for (size_t k = 0; k < members.size(); ++k) offsets[members[k]] = fit.offsets[k];
  PlaceAroundMemory1(members, offsets, StrCat(strategy, " by the ", fit.strategy, ")"));
  return Fit::kFits;
}

void BestSearch::FitFirst() {
  if (!best_cost_.empty() && NothingOutsideMemory1()) return;
  std::vector<TensorIndex> allowed;
  for (size_t i = 0; i < request_.tensors.size(); ++i) {
    if (MayUse(request_, static_cast<TensorIndex>(i), 1)) {
      allowed.push_back(static_cast<TensorIndex>(i));
    }
  }
  if (allowed.empty()) return;
  const SearchLimits limits = best_cost_.empty() ? Limits() : LimitsForShare(kFitFirstShare);
  const std::string strategy = StrCat("fit-first packing (all ", allowed.size(),
                                      " tensors allowed in memory 1 packed there");
  switch (PackIntoMemory1(allowed, limits, strategy)) {
    case Fit::kFits: result_.all_in_memory1 = AllInMemory1::kFits; break;
    case Fit::kDoesNotFit: result_.all_in_memory1 = AllInMemory1::kProvedImpossible; break;
    case Fit::kUnknown:
      result_.all_in_memory1 = AllInMemory1::kNotFound;
      result_.budget_exhausted = OverBudget();
      break;
  }
}

void BestSearch::PackSelection() {
  const std::vector<TensorIndex>& selection = options_.keep_in_memory1;
  if (selection.empty() || (!best_cost_.empty() && NothingOutsideMemory1())) return;
  if (OverBudget()) return;
  const SearchLimits limits = best_cost_.empty() ? Limits() : LimitsForShare(kSelectionShare);
  result_.selection_fit = PackIntoMemory1(
      selection, limits,
      StrCat("capacity-first selection (", selection.size(), " tensors packed in memory 1"));
}

PlanningFailure BestSearch::NoPlan() const {
  const bool one_memory_each = [&] {
    for (size_t i = 0; i < request_.tensors.size(); ++i) {
      for (MemId m = 2; m <= static_cast<MemId>(request_.memories.size()); ++m) {
        if (MayUse(request_, static_cast<TensorIndex>(i), m)) return false;
      }
    }
    return true;
  }();
  std::string why;
  switch (result_.all_in_memory1) {
    case AllInMemory1::kProvedImpossible:
      why = one_memory_each ? "no plan exists: these tensors provably do not fit (by their aligned "
                              "peak-live bytes or the exact search)"
                            : "the tensors allowed in memory 1 provably do not all fit there";
      break;
    case AllInMemory1::kNotFound:
      why = StrCat("no plan found within the budget (", options_.work_budget, " units of work",
                   result_.cut_short ? StrCat(", cut short by the ", options_.budget_ms, " ms cap")
                                     : std::string(),
                   "): the exact search neither packed the tensors allowed in memory 1 nor "
                   "proved that they do not fit; a larger budget may find a plan");
      break;
    case AllInMemory1::kNotAsked:
    case AllInMemory1::kFits: break;
  }
  const PlanningFailure noted = WithPeakLiveNote(request_, *first_failure_);
  if (why.empty()) return noted;
  return PlanningFailure(noted.tensor(), StrCat(noted.what(), "\n  ", why));
}

}  // namespace detail
}  // namespace cadence_memplan
