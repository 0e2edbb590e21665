// Memory-aware scheduling: a legal order of a program's units whose peak of
// live bytes is as low as the search can find, and never above the given
// order's. Placement cannot go below the peak-live bound of the order it is
// given; the order itself is free within the program's dependencies.
//
// The problem, in the given order's numbering:
//   * Units 0..n-1, listed in an order that is legal (topological). A unit is
//     what runs in one step; the caller groups an op with the allocations it
//     writes and decides what may not move (csrc/core is graph-agnostic).
//   * Edges (before, after), before < after: the caller's ordering rules.
//   * Buffers: `size` bytes allocated when their producer runs and freed after
//     the last of their users has run. Lifetimes are INCLUSIVE, as ExecuTorch's
//     (common/types.h): a buffer is alive at every step from its producer's to
//     its last user's. A producer of kBeforeProgram means alive from step 0
//     (a graph input); `live_to_end` keeps it alive to the last step (a graph
//     output); a buffer nobody reads is alive at its producer's step only.
//     Every user runs after the producer: those edges are implied.
// A schedule's peak live is the most bytes alive at one step.
//
// The search (frontier_search.cc) runs over prefixes of the schedule: a state
// is the set S of units scheduled so far, and what is alive after them
// depends on S alone, so states reached in different orders are one (the
// dynamic program of Serenity, MLSys 2020). States are expanded in order of
// |S|; when one size has more states than the width allows, the best by
// (peak so far, bytes alive) are kept (a beam). Widths grow 1, 8, 64, ...
// until a pass keeps every state, which proves its order optimal, or the work
// budget ends. Two exchange rules, each of which never raises the peak, cut
// the states without losing optimality:
//   * a unit that allocates nothing runs as soon as it is ready (it only
//     frees: a copy_ write-back, a view);
//   * a unit that reads no buffer and allocates bytes everyone reads later (a
//     weight's transpose) runs just before its first reader, unless it may
//     run first and some input nobody reads is alive at the first step.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/common/interrupt.h"
#include "core/common/types.h"

namespace cadence_memplan::schedule {

using UnitIndex = int32_t;  // A unit's position in the given order.

// Buffer::producer for a buffer alive from the program's first step.
inline constexpr UnitIndex kBeforeProgram = -1;

struct Buffer {
  UnitIndex producer = kBeforeProgram;
  Size size = 0;
  std::vector<UnitIndex> users;  // Any order; repeats and the producer itself are ignored.
  bool live_to_end = false;
};

struct ScheduleProblem {
  UnitIndex units = 0;
  std::vector<std::pair<UnitIndex, UnitIndex>> edges;  // (before, after), before < after.
  std::vector<Buffer> buffers;
};

// The default work budget: search transitions (a prefix extended by one
// unit). Calibrated to about a second on the largest exported models.
inline constexpr int64_t kDefaultWorkBudget = 2'000'000;

struct ScheduleOptions {
  // Search transitions the search may spend: the budget that makes the
  // result a function of the problem alone.
  int64_t work_budget = kDefaultWorkBudget;
  // An optional wall-clock cap, and Ctrl-C: either ends the search early,
  // the first with the best order found so far (ScheduleResult::cut_short),
  // the second by throwing Interrupted. `interrupt` is polled in phase
  // kSchedule every few hundred transitions (interrupt.h).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  Interrupt interrupt;
  // The most states the search remembers (the history of every kept state,
  // for rebuilding the order), which bounds its memory: about 16 bytes each.
  int64_t max_states = int64_t{1} << 23;
};

struct ScheduleResult {
  std::vector<UnitIndex> order;  // A legal permutation of 0..n-1.
  Size peak_live = 0;            // Of `order`.
  Size given_peak_live = 0;      // Of the given order 0..n-1.
  Size lower_bound = 0;          // No legal order peaks below it.
  bool proved_optimal = false;   // No legal order peaks below peak_live.
  // "given" (nothing better found: order is 0..n-1), "exact" (a pass that
  // kept every state found it, so it is optimal) or "beam".
  std::string strategy = "given";
  int64_t work = 0;        // Transitions spent.
  bool cut_short = false;  // The deadline ended the search.
};

// Why `problem` is not a valid input, or "" when it is: unit and buffer
// indexes in range, edges forward in the given order, users after their
// producer, sizes >= 0 and their sum at most kMaxByteValue.
std::string CheckProblem(const ScheduleProblem& problem);

// Why `order` is not a legal schedule of `problem` (not a permutation of the
// units, or an edge or a producer-user pair reversed), or "" when it is.
std::string CheckOrder(const ScheduleProblem& problem, const std::vector<UnitIndex>& order);

// The peak live of a legal `order`, by an independent sweep over the
// buffers' lifetimes (no search state): the oracle of the tests.
Size PeakLiveOf(const ScheduleProblem& problem, const std::vector<UnitIndex>& order);

// A bound no legal order goes below: for each unit u, the bytes that are
// alive when u runs in every order (a buffer made by u or an ancestor of u
// and read by u or a descendant, or kept to the end), maximised over u.
Size ScheduleLowerBound(const ScheduleProblem& problem);

// The best order the search finds within options.work_budget. Throws
// InvalidInput (CheckProblem failed) or Interrupted. Deterministic: the
// result depends only on the problem and the budget, unless the deadline
// cuts it short.
ScheduleResult Schedule(const ScheduleProblem& problem, const ScheduleOptions& options);

}  // namespace cadence_memplan::schedule
