// The most weight alive at once: the sweep behind every peak-live figure of
// the core (the failure message's bound, the squeaky wheel's per-memory
// bounds, fit first's aligned-unit test). Lifetimes are inclusive [start,
// end] (types.h); an empty one adds nothing.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

#include "core/common/types.h"

namespace cadence_memplan {

class PeakLive {
 public:
  // `weight` (bytes, or units of an alignment) counts at every t in lifetime.
  void Add(Lifetime lifetime, Size weight) {
    if (lifetime.empty() || weight == 0) return;
    events_.push_back({lifetime.start, weight});
    events_.push_back({SaturatingAdd(lifetime.end, 1), -weight});
  }

  // The peak. Saturating at both ends: weights may add up past 2^63, and
  // after that the removals would take the sum below zero; a saturated peak
  // reads as the largest Size (callers that report it say "at least").
  Size Peak() {
    std::sort(events_.begin(), events_.end());  // At one time, ends before starts.
    Size live = 0, peak = 0;
    for (const auto& [time, delta] : events_) {
      live = delta > 0 ? SaturatingAdd(live, delta) : std::max<Size>(0, live + delta);
      peak = std::max(peak, live);
    }
    return peak;
  }

 private:
  std::vector<std::pair<Time, Size>> events_;  // (time, +weight at a start, -weight past an end)
};

}  // namespace cadence_memplan
