#include "core/exir/live_allocation_index.h"

#include <algorithm>

namespace cadence_memplan {

LiveAllocationIndex::LiveAllocationIndex(std::vector<std::pair<Time, TensorIndex>> points,
                                         const std::vector<Lifetime>& lifetimes,
                                         std::vector<int64_t>* slot_of)
    : points_(std::move(points)), slot_of_(slot_of) {
  std::sort(points_.begin(), points_.end());
  const auto count = static_cast<int64_t>(points_.size());
  ends_.reserve(count);
  Time longest = 0;
  for (int64_t position = 0; position < count; ++position) {
    const auto [start, tensor] = points_[position];
    (*slot_of_)[tensor] = position;
    const Time end = lifetimes[tensor].end;
    ends_.push_back(end);
    if (end > start) longest = std::max(longest, end - start);
  }
  windows_.resize(count);
  for (int64_t position = 0; position < count; ++position) {
    const Time start = points_[position].first;
    const Time end = ends_[position];
    const Time earliest =
        start < std::numeric_limits<Time>::min() + longest ? kAbsent : start - longest;
    const auto first =
        std::lower_bound(points_.begin(), points_.end(),
                         std::make_pair(earliest, std::numeric_limits<TensorIndex>::min()));
    const auto limit =
        std::upper_bound(points_.begin(), points_.end(),
                         std::make_pair(end, std::numeric_limits<TensorIndex>::max()));
    windows_[position] = {start, static_cast<int64_t>(first - points_.begin()),
                          static_cast<int64_t>(limit - points_.begin())};
    if (windows_[position].limit - windows_[position].first > kLinearWindow) use_tree_ = true;
  }
  if (use_tree_) {
    while (leaves_ < count) leaves_ *= 2;
    max_end_.assign(static_cast<size_t>(2 * leaves_), kAbsent);
  }
  present_.assign(count, 0);
}

void LiveAllocationIndex::Set(TensorIndex tensor, bool present) {
  const int64_t position = (*slot_of_)[tensor];
  present_[position] = present ? 1 : 0;
  if (!use_tree_) return;
  int64_t node = leaves_ + position;
  max_end_[node] = present ? ends_[position] : kAbsent;
  for (node /= 2; node >= 1; node /= 2) {
    max_end_[node] = std::max(max_end_[2 * node], max_end_[2 * node + 1]);
  }
}

}  // namespace cadence_memplan
