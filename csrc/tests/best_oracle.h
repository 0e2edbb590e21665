// The oracle that holds PlanBest (best.h) to its promises, shared by best_test
// (random requests) and plan_fuzzer (libFuzzer's requests): InvalidInput with
// CheckRequest's message exactly when CheckRequest complains; otherwise a plan
// that passes Validate (with the already-placed tensors, unless those break it
// among themselves), never worse under PlanCost than a valid plan of either of
// upstream's placers, and the same plan when run again; or a failure only when
// neither upstream placer gives a valid plan.
#pragma once

#include <string>
#include <vector>

#include "best.h"
#include "planner.h"
#include "validator.h"

namespace cadence_memplan::reference {

enum class BestOutcome { kPlanned, kFailed, kInvalidInput };

struct BestCheck {
  BestOutcome outcome = BestOutcome::kPlanned;
  bool better = false;  // Strictly better than both upstream placers.
  std::string problem;  // "" when every promise holds.
};

inline BestCheck CheckBest(const PlanRequest& r, int64_t improvement_rounds, int64_t max_nodes) {
  BestCheck check;
  BestOptions options;
  options.budget_ms = 1e12;  // Deterministic: the rounds and the nodes end the search.
  options.improvement_rounds = improvement_rounds;
  options.max_nodes = max_nodes;
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
