// BestSearch: one PlanBest call (best.h), its state and its steps.
//
// The state is what every step reads and improves: the request, the budget
// (the work left, and the wall-clock cap when one is set), the best plan so
// far with its cost under PlanCost, and the BestResult being built. The steps
// change the best plan only through Consider, which keeps a candidate only
// when it passes Validate and is strictly better; so whatever a step does, the
// result never gets worse, and it stays valid. Lifetimes are inclusive
// [start, end] throughout (types.h).
//
// Each step is a member function defined in its own file:
//   Portfolio        portfolio.cc      1. both placers on several visit orders
//   FitFirst,        fit_memory1.cc    every tensor allowed in memory 1 packed
//   PackSelection                      there at once; then the caller's selection
//   MinimizeMemory1  best.cc           2. memory 1's bufsize, exactly
//   SqueakyWheel     squeaky_wheel.cc  3. the best candidate's order improved
//   GrowMemory1      grow_memory1.cc   3. memory 1 grown by the exact search
// Run (best.cc) calls them in the order best.h describes. A new step is a
// member declared below, defined in a file of its own (listed in
// CMakeLists.txt), and one call in Run; it spends the budget through
// OverBudget, Limits and Charge, polls request_.interrupt in its phase, and
// offers plans through Consider or ConsiderPlacer.
//
// Deterministic unless budget_ms is set: the steps run one after the other
// on the calling thread and decide from the work left; only the portfolio's
// members and the exact search's decisions use threads, and neither which
// run nor their answers depend on them.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/best/best.h"
#include "core/best/portfolio.h"
#include "core/placement/planner.h"
#include "core/search/exact_search.h"

namespace cadence_memplan {
namespace detail {

// A plan of `request` from its placements: bufsizes (already-placed tensors
// included), this call's bufsizes, and each memory's list: its already-placed
// tensors in their order, then this call's by offset.
PlanResult AssemblePlan(const PlanRequest& request, std::vector<Placement> placements,
                        Occupancy occupancy);

// Tensor i of the request may go to memory m.
inline bool MayUse(const PlanRequest& request, TensorIndex i, MemId m) {
  if ((request.allowed & MaskOf(m)) == 0) return false;
  return request.blocked.empty() || (request.blocked[i] & MaskOf(m)) == 0;
}

class BestSearch {
 public:
  BestSearch(const PlanRequest& request, const BestOptions& options);

  // The steps in their order; the search's result.
  BestResult Run();

 private:
  // The budget.
  static std::chrono::steady_clock::time_point DeadlineAfter(
      std::chrono::steady_clock::time_point start, double budget_ms);
  double ElapsedMs() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began_)
        .count();
  }
  // The wall-clock cap has passed (never without one); notes it in the result.
  bool DeadlinePassed();
  // The work is spent, or the cap has passed.
  bool OverBudget() { return work_left_ <= 0 || DeadlinePassed(); }
  // The exact search's limits: the work left, the cap, the interrupt, the threads.
  SearchLimits Limits() const {
    SearchLimits limits;
    limits.max_nodes = std::max<int64_t>(0, work_left_);
    limits.deadline = deadline_;
    limits.interrupt = request_.interrupt;
    limits.threads = threads_;
    return limits;
  }
  // Counts the nodes the exact search spent against the budget.
  void Charge(int64_t nodes) {
    result_.search_nodes += nodes;
    ChargeWork(nodes);
  }
  void ChargeWork(int64_t units) {
    result_.work += units;
    work_left_ -= units;
  }

  // The best plan.
  // "" when `plan` passes Validate (with the already-placed tensors when
  // those pass it), else why not.
  std::string Problem(const PlanResult& plan) const;
  // Keeps `plan` if it is valid (`validated`: checked already) and strictly
  // better; returns whether it was.
  bool Consider(PlanResult plan, const std::string& strategy, bool validated = false);
  // Consider for a placer's plan, counted as a candidate; a kept plan sets
  // the result's algorithm and order.
  bool ConsiderPlacer(PlanResult plan, Algorithm algorithm, const std::string& order,
                      bool validated = false);
  static std::string PlacerStrategy(Algorithm algorithm, const std::string& order);
  // The best plan leaves no byte of this call outside memory 1.
  bool NothingOutsideMemory1() const;
  // The result, its lower bound dropped unless nothing lies outside memory 1.
  BestResult Finish();
  // When no step found a plan and a candidate of the portfolio failed: its
  // failure (with the peak-live note) and what fit first learned.
  PlanningFailure NoPlan() const;

  // The portfolio's members: a visit order and a placer.
  struct Member {
    const NamedOrder* order;
    Algorithm algorithm;
  };
  struct Outcome {
    std::optional<PlanResult> plan;
    std::optional<PlanningFailure> failure;
  };
  // Both placers on every order, in the order given.
  static std::vector<Member> Members(const std::vector<NamedOrder>& orders);
  // Plans `request` with the members the work left pays for (the first two,
  // upstream's placers on upstream's order, always), in threads on large
  // requests, and charges them; a member not run stays empty.
  std::vector<std::optional<Outcome>> RunMembers(const PlanRequest& request,
                                                 const std::vector<Member>& members);

  // The steps, each in the file named above.
  void Portfolio();
  void FitFirst();
  void PackSelection();
  bool MinimizeMemory1();
  void SqueakyWheel();
  void GrowMemory1();

  // Memory 1's obstacles: the already-placed tensors there.
  std::vector<Obstacle> Memory1Obstacles() const;
  // Packs `members` (each allowed in memory 1) into memory 1 by the exact
  // search within `limits`; on a packing, offers the plan with them there and
  // the rest placed around memory 1 (PlaceAroundMemory1), its strategy
  // `strategy` closed by " by the <search's strategy>)".
  Fit PackIntoMemory1(const std::vector<TensorIndex>& members, const SearchLimits& limits,
                      const std::string& strategy);
  // Offers the plans that keep `kept` in memory 1 at `offsets` (indexed by
  // tensor) and place the other tensors in memories 2..N with every member
  // of the portfolio; returns whether one of them was kept.
  bool PlaceAroundMemory1(const std::vector<TensorIndex>& kept, const std::vector<Offset>& offsets,
                          const std::string& strategy);
  // Limits for a step that may spend `share` of the work left (and of the
  // time left to the cap).
  SearchLimits LimitsForShare(double share) const;

  // The largest aligned end of memory m's already-placed tensors.
  Size PlacedBufsize(MemId m) const;

  const PlanRequest& request_;
  const BestOptions& options_;
  const std::chrono::steady_clock::time_point began_;
  const std::chrono::steady_clock::time_point deadline_;  // max(): no cap.
  int64_t work_left_;
  int threads_ = 1;
  std::vector<Tensor> placed_tensors_;
  std::vector<Placement> placed_placements_;
  bool check_with_placed_ = false;
  std::vector<NamedOrder> orders_;
  std::vector<TensorIndex> best_order_;  // The visit order of the portfolio's winner.
  std::vector<Size> best_cost_;
  Size best_outside_memory1_ = 0;  // The best plan's bytes outside memory 1.
  std::string first_problem_;
  std::optional<PlanningFailure> first_failure_;  // The portfolio's first.
  BestResult result_;
};

}  // namespace detail
}  // namespace cadence_memplan
