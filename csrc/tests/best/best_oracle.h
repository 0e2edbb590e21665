// The oracle that holds PlanBest (best.h) to its promises, shared by best_test
// (random requests) and plan_fuzzer (libFuzzer's requests): InvalidInput with
// CheckRequest's message exactly when CheckRequest complains; otherwise a plan
// that passes Validate (with the already-placed tensors, unless those break it
// among themselves), never worse under PlanCost than a valid plan of either of
// upstream's placers nor than its portfolio alone, and the same plan when run
// again; or a failure only when
// neither upstream placer gives a valid plan. Its lower bound is set exactly
// when the plan leaves no byte outside memory 1, never exceeds the plan's
// total bufsize, and proved_optimal says whether they are equal; where brute
// force can run (packing_oracle.h: a few tensors, a few offsets), the bound
// is at most the true optimum and a plan proved optimal is optimal.
#pragma once

#include <string>
#include <vector>

#include "core/best/best.h"
#include "core/common/validator.h"
#include "core/placement/planner.h"
#include "tests/search/packing_oracle.h"

namespace cadence_memplan::reference {

enum class BestOutcome { kPlanned, kFailed, kInvalidInput };

struct BestCheck {
  BestOutcome outcome = BestOutcome::kPlanned;
  bool better = false;  // Strictly better than both upstream placers.
  bool proved = false;  // PlanBest says its plan is optimal,
  bool brute_forced = false;  // and brute force checked its claims.
  std::string problem;  // "" when every promise holds.
};

// The lower bound and the optimality claim of `best`, against brute force
// when it can run (tensors <= 5, offsets <= 24 per tensor).
inline std::string CheckClaims(const PlanRequest& r, const BestResult& best, int64_t brute_steps,
                               bool* brute_forced) {
  const std::vector<Size> cost = PlanCost(r, best.plan);
  bool nothing_outside = true;
  for (size_t k = 0; k + 1 < cost.size(); ++k) nothing_outside &= cost[k] == 0;
  if (best.lower_bound.has_value() != nothing_outside) {
    return "lower_bound set although bytes lie outside memory 1, or not set although none do";
  }
  if (!best.lower_bound) return best.proved_optimal ? "proved optimal without a bound" : "";
  const Size total = cost.back();
  if (*best.lower_bound > total) return "the lower bound exceeds the plan's total bufsize";
  if (best.proved_optimal != (*best.lower_bound == total)) {
    return "proved_optimal disagrees with the lower bound";
  }
  // Every plan with nothing outside memory 1: this call's tensors there,
  // the other memories' bufsizes those of their already-placed tensors.
  const Memory& memory = r.memories[0];
  std::vector<std::pair<Tensor, Offset>> obstacles;
  Size others = 0;
  std::vector<Size> placed_ends(r.memories.size() + 1, 0);
  for (const PlacedTensor& p : r.placed) {
    if (p.placement.mem_id == 1) obstacles.push_back({p.tensor, p.placement.offset});
    placed_ends[p.placement.mem_id] = std::max(
        placed_ends[p.placement.mem_id], AlignUp(SaturatingAdd(p.placement.offset, p.tensor.size),
                                                 r.memories[p.placement.mem_id - 1].alignment));
  }
  for (size_t m = 2; m < placed_ends.size(); ++m) others = SaturatingAdd(others, placed_ends[m]);
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < r.tensors.size(); ++i) {
    if (r.tensors[i].size > 0) tensors.push_back(r.tensors[i]);
  }
  const Size bufsize = best.plan.bufsizes[1];
  if (tensors.size() > 5 || bufsize / memory.alignment > 24 || bufsize > (Size{1} << 40)) {
    return "";
  }
  const std::optional<Size> optimum =
      BruteForcePacking(tensors, obstacles, memory.alignment, std::min(memory.size, bufsize))
          .Optimum(brute_steps);
  if (!optimum) return "";
  *brute_forced = true;
  if (*optimum < 0) return "brute force finds no packing where PlanBest planned";
  if (*best.lower_bound > SaturatingAdd(*optimum, others)) {
    return "the lower bound exceeds the optimum";
  }
  if (best.proved_optimal && bufsize != *optimum)
    return "proved optimal, but brute force does better";
  return "";
}

// `brute_steps` caps the brute force of each check (packing_oracle.h).
// `search_work` is the work left for the exact search once the portfolio and
// the rounds are paid for.
inline BestCheck CheckBest(const PlanRequest& r, int64_t improvement_rounds, int64_t search_work,
                           int64_t brute_steps) {
  BestCheck check;
  BestOptions options;
  options.improvement_rounds = improvement_rounds;
  const int64_t placements = 12 + improvement_rounds;  // The portfolio's members, the rounds.
  options.work_budget = search_work + placements * PlacementWork(r.tensors.size());
  const std::string invalid = CheckRequest(r);
  if (!invalid.empty()) {
    check.outcome = BestOutcome::kInvalidInput;
    try {
      PlanBest(r, options);
      check.problem = "PlanBest planned although CheckRequest says \"" + invalid + "\"";
    } catch (const InvalidInput& e) {
      if (e.what() != invalid) check.problem = std::string("InvalidInput: ") + e.what();
    } catch (const std::exception& e) {
      check.problem = std::string("unexpected exception: ") + e.what();
    }
    return check;
  }
  std::vector<Tensor> placed_tensors;
  std::vector<Placement> placed_placements;
  for (const PlacedTensor& p : r.placed) {
    placed_tensors.push_back(p.tensor);
    placed_placements.push_back(p.placement);
  }
  const bool with_placed = Validate(placed_tensors, placed_placements, r.memories).empty();
  const auto valid = [&](const PlanResult& plan) {
    std::vector<Tensor> tensors = r.tensors;
    std::vector<Placement> placements = plan.placements;
    if (with_placed) {
      tensors.insert(tensors.end(), placed_tensors.begin(), placed_tensors.end());
      placements.insert(placements.end(), placed_placements.begin(), placed_placements.end());
    }
    return Validate(tensors, placements, r.memories).empty();
  };
  std::vector<std::vector<Size>> upstream_costs;
  for (Algorithm a : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
    try {
      const PlanResult plan = Plan(r, a);
      if (valid(plan)) upstream_costs.push_back(PlanCost(r, plan));
    } catch (const PlanningFailure&) {
    }
  }
  try {
    const BestResult best = PlanBest(r, options);
    if (!valid(best.plan)) {
      check.problem = "PlanBest's plan fails Validate";
      return check;
    }
    const std::vector<Size> cost = PlanCost(r, best.plan);
    for (const std::vector<Size>& upstream : upstream_costs) {
      if (upstream < cost) check.problem = "PlanBest is worse than an upstream placer";
    }
    check.better = !upstream_costs.empty();
    for (const std::vector<Size>& upstream : upstream_costs) check.better &= cost < upstream;
    // Never worse than the portfolio alone (no improvement rounds, no work
    // left for the exact search).
    BestOptions portfolio_only = options;
    portfolio_only.improvement_rounds = 0;
    portfolio_only.work_budget = 12 * PlacementWork(r.tensors.size());
    if (PlanCost(r, PlanBest(r, portfolio_only).plan) < cost) {
      check.problem = "PlanBest is worse than its portfolio alone";
    }
    check.proved = best.proved_optimal;
    if (std::string claim = CheckClaims(r, best, brute_steps, &check.brute_forced);
        !claim.empty()) {
      check.problem = claim;
    }
    const BestResult again = PlanBest(r, options);
    bool same = again.order == best.order;
    for (size_t i = 0; same && i < best.plan.placements.size(); ++i) {
      same = again.plan.placements[i].mem_id == best.plan.placements[i].mem_id &&
             again.plan.placements[i].offset == best.plan.placements[i].offset;
    }
    if (!same) check.problem = "PlanBest gave another plan when run again";
  } catch (const PlanningFailure&) {
    check.outcome = BestOutcome::kFailed;
    if (!upstream_costs.empty()) check.problem = "PlanBest failed where an upstream placer planned";
  } catch (const InvalidInput& e) {
    check.outcome = BestOutcome::kFailed;
    if (!upstream_costs.empty()) check.problem = std::string("InvalidInput: ") + e.what();
  } catch (const std::exception& e) {
    check.problem = std::string("unexpected exception: ") + e.what();
  }
  return check;
}

}  // namespace cadence_memplan::reference
