#include "interval_index.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace cadence_memplan {
namespace {
constexpr Time kNothing = std::numeric_limits<Time>::min();
}  // namespace

SlotLayout::SlotLayout(const std::vector<Lifetime>& lifetimes) : lifetimes_(lifetimes) {
  const Slot count = size();
  slot_of_leaf_.resize(count);
  std::iota(slot_of_leaf_.begin(), slot_of_leaf_.end(), Slot{0});
  // Ties by slot keep the layout independent of the sort implementation.
  std::sort(slot_of_leaf_.begin(), slot_of_leaf_.end(), [&](Slot a, Slot b) {
    return lifetimes_[a].start != lifetimes_[b].start ? lifetimes_[a].start < lifetimes_[b].start
                                                      : a < b;
  });
  sorted_starts_.resize(count);
  leaf_of_slot_.resize(count);
  for (int64_t leaf = 0; leaf < count; ++leaf) {
    sorted_starts_[leaf] = lifetimes_[slot_of_leaf_[leaf]].start;
    leaf_of_slot_[slot_of_leaf_[leaf]] = leaf;
  }
  while (leaf_base_ < count) leaf_base_ *= 2;
}

void IntervalIndex::Insert(Slot slot) {
  const Lifetime& lifetime = layout_->lifetimes_[slot];
  if (lifetime.empty()) return;
  if (max_end_.empty()) max_end_.assign(2 * layout_->leaf_base_, kNothing);
  for (int64_t node = layout_->leaf_base_ + layout_->leaf_of_slot_[slot];
       node >= 1 && max_end_[node] < lifetime.end; node /= 2) {
    max_end_[node] = lifetime.end;
  }
}

void IntervalIndex::FindOverlapping(const Lifetime& query, std::vector<Slot>* out) const {
  if (max_end_.empty() || query.empty()) return;
  // Leaves [0, prefix_end) are the lifetimes that start no later than the query ends.
  const auto& starts = layout_->sorted_starts_;
  const int64_t prefix_end = std::upper_bound(starts.begin(), starts.end(), query.end) - starts.begin();
  Collect(1, 0, layout_->leaf_base_, prefix_end, query.start, out);
}

void IntervalIndex::Collect(int64_t node, int64_t node_begin, int64_t node_end,
                            int64_t prefix_end, Time query_start,
                            std::vector<Slot>* out) const {
  if (node_begin >= prefix_end || max_end_[node] == kNothing || max_end_[node] < query_start) {
    return;
  }
  if (node_end - node_begin == 1) {
    out->push_back(layout_->slot_of_leaf_[node_begin]);
    return;
  }
  const int64_t middle = node_begin + (node_end - node_begin) / 2;
  Collect(2 * node, node_begin, middle, prefix_end, query_start, out);
  Collect(2 * node + 1, middle, node_end, prefix_end, query_start, out);
}

}  // namespace cadence_memplan
