#include "core/schedule/schedule.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "core/common/errors.h"
#include "core/schedule/frontier_search.h"
#include "core/schedule/unit_graph.h"

namespace cadence_memplan::schedule {

ScheduleResult Schedule(const ScheduleProblem& problem, const ScheduleOptions& options) {
  if (const std::string problem_error = CheckProblem(problem); !problem_error.empty()) {
    throw InvalidInput(problem_error);
  }
  if (options.work_budget < 0 || options.max_states < 1) {
    throw InvalidInput("work_budget must be >= 0 and max_states >= 1");
  }
  ScheduleResult result;
  result.order.resize(problem.units);
  std::iota(result.order.begin(), result.order.end(), 0);
  result.given_peak_live = result.peak_live = PeakLiveOf(problem, result.order);
  result.lower_bound = ScheduleLowerBound(problem);
  result.proved_optimal = result.peak_live <= result.lower_bound;
  if (result.proved_optimal) return result;

  options.interrupt.Begin(Phase::kSchedule);
  const detail::UnitGraph graph = detail::UnitGraph::Build(problem);
  detail::WorkMeter meter(options);
  // Every kept state is remembered, and each prefix size keeps up to `width`
  // of them: the widest pass fits the state cap.
  const int64_t widest = std::max<int64_t>(1, options.max_states / std::max(1, problem.units));
  for (int64_t width = 1;; width = std::min(widest, width * 8)) {
    detail::PassResult pass =
        detail::SearchFrontier(graph, width, result.peak_live, options.max_states, meter);
    if (pass.found) {
      // The search's own account of the peak, checked by the independent sweep.
      if (!CheckOrder(problem, pass.order).empty() ||
          PeakLiveOf(problem, pass.order) != pass.peak) {
        throw std::logic_error("the scheduler's search returned an order it did not account for");
      }
      result.order = std::move(pass.order);
      result.peak_live = pass.peak;
      result.strategy = pass.truncated ? "beam" : "exact";
    }
    if (pass.finished && !pass.truncated) result.proved_optimal = true;
    if (result.peak_live <= result.lower_bound) result.proved_optimal = true;
    if (!pass.finished || result.proved_optimal || width == widest) break;
  }
  result.work = meter.spent();
  result.cut_short = meter.cut_short();
  return result;
}

}  // namespace cadence_memplan::schedule
