#include "core/search/squeaky_dives.h"

#include <algorithm>

#include "core/search/canonical_search.h"

namespace cadence_memplan {
namespace detail {
namespace {

// A tensor whose end lies in the top 1 / kBandShare of the best plan's height
// is pushed forward, the more the higher it ends, by up to kPush, half the
// largest starting priority: a few dives in the band move it past most of
// the tensors of its size.
constexpr double kBandShare = 32;
constexpr double kPush = 0.5;

}  // namespace

SqueakyDives::SqueakyDives(const UnitProblem& problem)
    : problem_(problem), priority_(problem.items.size()), capacity_(problem.obstacle_top) {
  // No item goes above every item before it and every obstacle: a dive at
  // this capacity never backtracks.
  double largest = 1;
  for (size_t i = 0; i < problem.items.size(); ++i) {
    const Item& item = problem.items[i];
    capacity_ = SaturatingAdd(capacity_, item.units);
    const double length =
        static_cast<double>(item.lifetime.end) - static_cast<double>(item.lifetime.start) + 1;
    priority_[i] = length * static_cast<double>(item.units);
    largest = std::max(largest, priority_[i]);
  }
  for (double& priority : priority_) priority /= largest;
}

bool SqueakyDives::Dive(int64_t max_nodes, Unit reference,
                        const std::function<bool()>& should_stop) {
  CanonicalSearch search(problem_, capacity_, "TWA", kMaxUndoBytes, &priority_);
  const Outcome outcome = search.Run(max_nodes, should_stop);
  nodes_ += search.nodes();
  if (outcome != Outcome::kFound) return false;
  packing_ = search.solution();
  top_ = problem_.ItemsTop(packing_);
  const double band_floor = static_cast<double>(reference) * (1 - 1 / kBandShare);
  const double band = static_cast<double>(top_) - band_floor + 1;
  for (size_t i = 0; i < packing_.size(); ++i) {
    const double end = static_cast<double>(packing_[i] + problem_.items[i].units);
    if (end > band_floor) priority_[i] += kPush * (end - band_floor) / band;
  }
  return true;
}

}  // namespace detail
}  // namespace cadence_memplan
