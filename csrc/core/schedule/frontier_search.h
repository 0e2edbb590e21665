// One pass of the scheduler's search (schedule.h): prefixes of the schedule,
// expanded in order of their size, the states of one size deduplicated by
// their set of units and cut to `width` when there are more.
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/types.h"
#include "core/schedule/schedule.h"
#include "core/schedule/unit_graph.h"

namespace cadence_memplan::schedule::detail {

// What spends and stops the search: the work budget, the deadline and the
// interrupt (polled every kPollEvery units of work).
class WorkMeter {
 public:
  explicit WorkMeter(const ScheduleOptions& options);
  // Charges `work`; false once the budget or the deadline is spent. Throws
  // Interrupted when the interrupt check says so.
  bool Charge(int64_t work);
  int64_t spent() const { return spent_; }
  bool cut_short() const { return cut_short_; }

 private:
  const ScheduleOptions& options_;
  int64_t spent_ = 0;
  int64_t next_poll_ = 0;
  bool cut_short_ = false;
};

struct PassResult {
  // The pass ran to its end, not stopped by the budget, the deadline or the
  // state cap. Only a finished pass that kept every state proves anything.
  bool finished = false;
  bool truncated = false;  // Some prefix size had more states than `width`.
  bool found = false;      // An order whose peak is below the ceiling.
  Size peak = 0;
  std::vector<UnitIndex> order;
};

// Looks for an order whose peak live is below `ceiling`, keeping at most
// `width` states of each prefix size and at most `max_states` in all.
PassResult SearchFrontier(const UnitGraph& graph, int64_t width, Size ceiling, int64_t max_states,
                          WorkMeter& meter);

}  // namespace cadence_memplan::schedule::detail
