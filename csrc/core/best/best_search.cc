#include "core/best/best_search.h"

#include <thread>
#include <utility>

#include "core/common/polled_sort.h"
#include "core/common/validator.h"
#include "core/placement/occupancy.h"

namespace cadence_memplan {
namespace detail {
namespace {

// Whether `a` is strictly better than `b` under PlanCost.
bool Better(const std::vector<Size>& a, const std::vector<Size>& b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

}  // namespace

// A plan of `request` from its placements: bufsizes (already-placed tensors
// included), this call's bufsizes, and each memory's list: its already-placed
// tensors in their order, then this call's by offset.
PlanResult AssemblePlan(const PlanRequest& request, std::vector<Placement> placements,
                        Occupancy occupancy) {
  const size_t memory_count = request.memories.size();
  PlanResult plan;
  plan.placements = std::move(placements);
  plan.occupancy = occupancy;
  plan.bufsizes.assign(memory_count + 1, 0);
  plan.call_bufsizes.assign(memory_count + 1, 0);
  plan.memory_order.assign(memory_count + 1, {});
  const auto end = [&](const Tensor& t, const Placement& p) {
    return AlignUp(SaturatingAdd(p.offset, t.size), request.memories[p.mem_id - 1].alignment);
  };
  for (size_t j = 0; j < request.placed.size(); ++j) {
    const PlacedTensor& p = request.placed[j];
    Size& bufsize = plan.bufsizes[p.placement.mem_id];
    bufsize = std::max(bufsize, end(p.tensor, p.placement));
    plan.memory_order[p.placement.mem_id].push_back(static_cast<Slot>(j));
  }
  request.interrupt.Begin(Phase::kResult);
  std::vector<TensorIndex> by_offset(request.tensors.size());
  for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = static_cast<TensorIndex>(i);
  StableSortPolled(
      by_offset.begin(), by_offset.end(),
      [&](TensorIndex a, TensorIndex b) {
        return plan.placements[a].offset < plan.placements[b].offset;
      },
      request.interrupt);
  const auto placed_count = static_cast<Slot>(request.placed.size());
  for (TensorIndex i : by_offset) {
    const Placement& p = plan.placements[i];
    const Size e = end(request.tensors[i], p);
    plan.bufsizes[p.mem_id] = std::max(plan.bufsizes[p.mem_id], e);
    plan.call_bufsizes[p.mem_id] = std::max(plan.call_bufsizes[p.mem_id], e);
    plan.memory_order[p.mem_id].push_back(placed_count + i);
  }
  return plan;
}

BestSearch::BestSearch(const PlanRequest& request, const BestOptions& options)
    : request_(request),
      options_(options),
      began_(std::chrono::steady_clock::now()),
      deadline_(DeadlineAfter(began_, options.budget_ms)),
      work_left_(options.work_budget) {
  // The already-placed tensors are the caller's: when they break Validate
  // among themselves (overlapping, unaligned), no plan can pass it with
  // them, so each candidate's own tensors are then checked alone.
  for (const PlacedTensor& p : request.placed) {
    placed_tensors_.push_back(p.tensor);
    placed_placements_.push_back(p.placement);
  }
  check_with_placed_ =
      Validate(placed_tensors_, placed_placements_, request.memories, request.interrupt).empty();
  const size_t cores = options.threads > 0
                           ? static_cast<size_t>(options.threads)
                           : std::max<size_t>(1, std::thread::hardware_concurrency());
  threads_ = static_cast<int>(cores);
}

std::chrono::steady_clock::time_point BestSearch::DeadlineAfter(
    std::chrono::steady_clock::time_point start, double budget_ms) {
  const auto left = std::chrono::steady_clock::time_point::max() - start;
  const std::chrono::duration<double, std::milli> budget(budget_ms);
  if (!(budget < left)) return std::chrono::steady_clock::time_point::max();
  return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(budget);
}

bool BestSearch::DeadlinePassed() {
  if (deadline_ == std::chrono::steady_clock::time_point::max()) return false;
  if (std::chrono::steady_clock::now() <= deadline_) return false;
  result_.cut_short = true;
  return true;
}

std::string BestSearch::Problem(const PlanResult& plan) const {
  std::vector<Tensor> tensors = request_.tensors;
  std::vector<Placement> placements = plan.placements;
  if (check_with_placed_) {
    tensors.insert(tensors.end(), placed_tensors_.begin(), placed_tensors_.end());
    placements.insert(placements.end(), placed_placements_.begin(), placed_placements_.end());
  }
  return Validate(tensors, placements, request_.memories, request_.interrupt);
}

bool BestSearch::Consider(PlanResult plan, const std::string& strategy, bool validated) {
  if (!validated) {
    const std::string problem = Problem(plan);
    if (!problem.empty()) {
      if (first_problem_.empty()) first_problem_ = problem;
      return false;
    }
  }
  std::vector<Size> cost = PlanCost(request_, plan, options_.weights);
  if (!best_cost_.empty() && !Better(cost, best_cost_)) return false;
  best_cost_ = std::move(cost);
  best_outside_memory1_ = 0;
  for (size_t i = 0; i < request_.tensors.size(); ++i) {
    if (plan.placements[i].mem_id != 1) {
      best_outside_memory1_ = SaturatingAdd(best_outside_memory1_, request_.tensors[i].size);
    }
  }
  result_.plan = std::move(plan);
  result_.strategy = strategy;
  result_.improvements.push_back({ElapsedMs(), best_cost_.back()});
  return true;
}

bool BestSearch::ConsiderPlacer(PlanResult plan, Algorithm algorithm, const std::string& order,
                                bool validated) {
  ++result_.candidates;
  if (!Consider(std::move(plan), PlacerStrategy(algorithm, order), validated)) return false;
  result_.algorithm = algorithm;
  result_.order = order;
  return true;
}

std::string BestSearch::PlacerStrategy(Algorithm algorithm, const std::string& order) {
  return std::string(algorithm == Algorithm::kPositionBasedGreedy ? "position" : "heuristic") +
         " placer, tensors ordered by " + order;
}

bool BestSearch::NothingOutsideMemory1() const {
  return !best_cost_.empty() && best_outside_memory1_ == 0;
}

SearchLimits BestSearch::LimitsForShare(double share) const {
  SearchLimits limits = Limits();
  limits.max_nodes = static_cast<int64_t>(static_cast<double>(limits.max_nodes) * share);
  if (limits.deadline != std::chrono::steady_clock::time_point::max()) {
    const auto now = std::chrono::steady_clock::now();
    if (limits.deadline > now) {
      limits.deadline = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  (limits.deadline - now) * share);
    }
  }
  return limits;
}

std::vector<Obstacle> BestSearch::Memory1Obstacles() const {
  std::vector<Obstacle> obstacles;
  for (const PlacedTensor& p : request_.placed) {
    if (p.placement.mem_id == 1) obstacles.push_back({p.tensor, p.placement.offset});
  }
  return obstacles;
}

bool BestSearch::PlaceAroundMemory1(const std::vector<TensorIndex>& kept,
                                    const std::vector<Offset>& offsets,
                                    const std::string& strategy) {
  // The rest is planned as a request of its own, memory 1's tensors being
  // already placed there and every other tensor blocked from memory 1.
  const size_t n = request_.tensors.size();
  std::vector<char> in_memory1(n, 0);
  for (TensorIndex t : kept) in_memory1[t] = 1;
  PlanRequest rest;
  rest.memories = request_.memories;
  rest.allowed = request_.allowed;
  rest.placed = request_.placed;
  rest.keep_incoming_offset = request_.keep_incoming_offset;
  rest.occupancy = request_.occupancy;
  rest.interrupt = request_.interrupt;
  std::vector<TensorIndex> rest_index;
  for (size_t i = 0; i < n; ++i) {
    if (in_memory1[i]) {
      rest.placed.push_back({request_.tensors[i], {1, offsets[i]}});
      continue;
    }
    rest_index.push_back(static_cast<TensorIndex>(i));
    rest.tensors.push_back(request_.tensors[i]);
    rest.blocked.push_back((request_.blocked.empty() ? 0 : request_.blocked[i]) | MaskOf(1));
    if (!request_.incoming_offsets.empty()) {
      rest.incoming_offsets.push_back(request_.incoming_offsets[i]);
    }
  }
  const auto combine = [&](const std::vector<Placement>& rest_placements, Occupancy occupancy) {
    std::vector<Placement> placements(n);
    for (TensorIndex t : kept) placements[t] = {1, offsets[t]};
    for (size_t k = 0; k < rest_index.size(); ++k) placements[rest_index[k]] = rest_placements[k];
    return AssemblePlan(request_, std::move(placements), occupancy);
  };
  // What the plan says answered the placers: the best plan's, else (no plan
  // yet) what the request's choice comes to.
  Occupancy occupancy = best_cost_.empty() ? request_.occupancy : result_.plan.occupancy;
  if (occupancy == Occupancy::kAuto) {
    std::vector<Lifetime> lifetimes;
    for (const Tensor& t : request_.tensors) lifetimes.push_back(t.lifetime);
    occupancy = ChooseOccupancy(lifetimes, request_.interrupt);
  }
  if (rest.tensors.empty()) return Consider(combine({}, occupancy), strategy);
  const std::vector<NamedOrder> orders = PortfolioOrders(rest.tensors, request_.interrupt);
  const std::vector<Member> members = Members(orders);
  std::vector<std::optional<Outcome>> outcomes = RunMembers(rest, members);
  bool kept_one = false;
  for (size_t k = 0; k < members.size(); ++k) {
    if (!outcomes[k] || !outcomes[k]->plan) continue;
    const Occupancy used = best_cost_.empty() ? outcomes[k]->plan->occupancy : occupancy;
    kept_one |= Consider(combine(outcomes[k]->plan->placements, used),
                         strategy + ", then the " +
                             PlacerStrategy(members[k].algorithm, members[k].order->name) +
                             " for the rest");
  }
  return kept_one;
}

BestResult BestSearch::Finish() {
  // A search the cap stopped, in a step that does not check it itself.
  if (!result_.proved_optimal) DeadlinePassed();
  if (!NothingOutsideMemory1()) {
    result_.lower_bound.reset();
    result_.proved_optimal = false;
  }
  return std::move(result_);
}

}  // namespace detail
}  // namespace cadence_memplan
