// PlanBest: smaller plans than upstream's single greedy passes, up to proved
// optimal ones.
//
// Objective, compared lexicographically (smaller is better): the tensor bytes
// outside memory 1, then outside memories 1..2, and so on up to N-1, then the
// total of all bufsizes. With one memory that is its bufsize. On a DSP every
// byte kept in fast memory saves cycles, so the fast memories come first.
// With options.weights, the first N-1 terms sum the tensors' weights instead
// of their bytes (what a tensor outside a fast memory costs, e.g. its traffic).
//
// The search, in a fixed order:
//   1. A portfolio: both placers (planner.h) on several visit orders: by size
//      (upstream's), lifetime length, area (size x length), the bytes of the
//      tensors alive with each one, their number, and start time.
//   Fit first. When the portfolio's plan leaves bytes outside memory 1 (or
//      no candidate planned at all) and the aligned peak-live bytes of the
//      tensors that may go to memory 1 are within its size, the exact search
//      asks whether all of them fit there (FitInCapacity), with half the
//      budget left, or all of it when there is no plan yet. A packing puts
//      them all in memory 1 and the portfolio places the rest in memories
//      2..N. Then, when options.keep_in_memory1 names a selection, the same
//      for that selection (capacity-first planning: the caller chose the
//      tensors, e.g. by an integer program, and memory 1's holes are then
//      filled by the growth of step 3).
//   2. When the best plan so far leaves no byte outside memory 1 (always, with
//      one memory): the exact search of exact_search.h minimises memory 1's
//      bufsize from that plan, the already-placed tensors of memory 1 being
//      obstacles, until it proves the plan optimal or the budget ends.
//   3. Otherwise, squeaky-wheel improvement of the best candidate's order
//      (Joslin and Clements, JAIR 1999): after each plan, the tensors that
//      made it worse than it must be (those outside memory 1, and those ending
//      above their memory's peak-live bound) move forward in the order, by a
//      seeded random amount, so that the next plan places them earlier; every
//      25 rounds the search restarts from the best order so far. Then memory
//      1 grows: first all the tensors that may go there, then the others one
//      by one, largest first, each kept when it fits into a hole of memory 1's
//      packing or when the exact search packs memory 1 anew with it; the
//      portfolio places the rest in memories 2..N, memory 1 fixed. A grown
//      plan that leaves nothing outside memory 1 goes to step 2.
// Every candidate is checked with Validate, with the already-placed tensors
// unless those break it among themselves; one that fails to plan or to
// validate is skipped. The first candidate is upstream's better placer, so
// the result is never worse than both upstream placers, nor than any
// candidate of the portfolio.
//
// Budget. The search stops when the plan is proved optimal (the portfolio's
// plan at its bound returns at once), when the steps above end, or when
// options.work_budget runs out. Work is counted, never timed: a node of the
// exact search is one unit, a placer's plan of n tensors (with its
// validation) PlacementWork(n) units, and every step decides from the work
// left alone, which members of the portfolio run included. So the result is
// a function of the request and the options: the same whatever the load of
// the machine and the number of threads. options.budget_ms adds a wall-clock
// cap, off by default; when it ends the search (BestResult::cut_short), how
// far the steps got, hence the plan, its strategy and lower_bound, depend on
// the machine's speed and load (never its validity, nor the guarantees
// above). Ctrl-C: PlanRequest::interrupt, polled in every step.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/placement/planner.h"
#include "core/search/exact_search.h"

namespace cadence_memplan {

// The default work budget: what the old five-second wall-clock default spent
// on the challenging instances where it ran out, about 6.5 s on D on the
// machine it was calibrated on (docs/best.md, "Budget, threads,
// determinism"); spent only while the plan is not proved optimal.
inline constexpr int64_t kDefaultBestWork = 450'000;

// What a placer's plan of `tensors` tensors costs against the work budget,
// its validation included: about what as many nodes of the exact search cost.
inline int64_t PlacementWork(size_t tensors) { return 1 + static_cast<int64_t>(tensors / 8); }

struct BestOptions {
  // Units of work the search may spend (see "Budget" above); >= 0.
  int64_t work_budget = kDefaultBestWork;
  // Optional wall-clock cap, in milliseconds; infinity (the default) for
  // none. With a cap, the result may depend on the machine's speed and load.
  double budget_ms = std::numeric_limits<double>::infinity();
  // Rounds of squeaky-wheel improvement after the portfolio.
  int64_t improvement_rounds = 300;
  // Threads for the portfolio's candidates and the exact search's members;
  // 0: one per core. The result does not depend on it (unless the wall-clock
  // budget runs out).
  int threads = 0;
  // Tensors to try to keep in memory 1 together (indices into the request,
  // each allowed in memory 1, no repeats); empty: none. A hint: the plan
  // keeps them only when the exact search packs them all and the result is
  // better under PlanCost.
  std::vector<TensorIndex> keep_in_memory1;
  // Per tensor, >= 0, what it costs outside a fast memory (see the objective);
  // empty: its size.
  std::vector<Size> weights;
};

// What the exact search said about packing every tensor that may go to
// memory 1 into it ("fit first"); kNotAsked when the portfolio had already
// done so or the step did not apply.
enum class AllInMemory1 {
  kNotAsked,
  kFits,               // A packing was found (and considered).
  kProvedImpossible,   // Their aligned peak-live bytes, or the search, prove it.
  kNotFound,           // The budget ran out first.
};

struct BestResult {
  PlanResult plan;
  // How the plan was found, in words: a placer and a visit order, or the
  // exact search with its preorder.
  std::string strategy;
  Algorithm algorithm = Algorithm::kPositionBasedGreedy;  // The last placer that improved it.
  std::string order;       // That placer's visit order, in words.
  int64_t candidates = 0;  // Plans of the placers tried.
  int64_t search_nodes = 0;  // Of the exact search.
  int64_t work = 0;          // Units of work spent, search nodes included.
  // The work budget, or the wall-clock cap, ran out before the steps ended.
  bool budget_exhausted = false;
  // The wall-clock cap (options.budget_ms) ended the search: the one case in
  // which the result may differ from run to run.
  bool cut_short = false;
  // Set when the plan leaves no byte outside memory 1 (always with one
  // memory): every valid plan that does the same has a total bufsize of at
  // least this, and every other valid plan is worse under PlanCost. With one
  // memory, a lower bound on its bufsize.
  std::optional<Size> lower_bound;
  // The plan's total bufsize equals lower_bound: no valid plan is better.
  bool proved_optimal = false;
  // The total bufsize each time the best plan improved, after `elapsed_ms`
  // of PlanBest; the first entry is the portfolio's.
  std::vector<Improvement> improvements;
  // Fit first's answer (see above).
  AllInMemory1 all_in_memory1 = AllInMemory1::kNotAsked;
  // Whether the exact search packed options.keep_in_memory1 into memory 1.
  Fit selection_fit = Fit::kUnknown;
};

// The objective of a plan of `request` (see above), for comparisons;
// `weights` as BestOptions::weights.
std::vector<Size> PlanCost(const PlanRequest& request, const PlanResult& plan,
                           const std::vector<Size>& weights = {});

// Throws InvalidInput like Plan() (and when no candidate passes Validate, or
// keep_in_memory1 names a tensor twice, out of range or not allowed in memory
// 1, or weights has another length than the tensors or a negative entry, or
// work_budget is negative or budget_ms is not a number >= 0), PlanningFailure when
// neither a candidate nor fit first plans (the first candidate's failure, upstream's position
// placer's, with Plan()'s peak-live note, then whether fit first proved that no plan exists or
// found none within the budget), and Interrupted.
BestResult PlanBest(const PlanRequest& request, const BestOptions& options = {});

}  // namespace cadence_memplan
