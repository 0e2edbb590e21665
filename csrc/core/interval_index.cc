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
  leaf_of_slot_.resize(count);
  start_of_leaf_.resize(count);
  for (int64_t leaf = 0; leaf < count; ++leaf) {
    leaf_of_slot_[slot_of_leaf_[leaf]] = leaf;
    start_of_leaf_[leaf] = lifetimes_[slot_of_leaf_[leaf]].start;
  }
  constexpr int64_t kBucketSize = IntervalIndex::kBucketSize;
  while (bucket_base_ * kBucketSize < count) bucket_base_ *= 2;
  first_start_.assign(2 * bucket_base_, std::numeric_limits<Time>::max());
  for (int64_t bucket = 0; bucket * kBucketSize < count; ++bucket) {
    first_start_[bucket_base_ + bucket] = start_of_leaf_[bucket * kBucketSize];
  }
  for (int64_t node = bucket_base_ - 1; node >= 1; --node) {
    first_start_[node] = first_start_[2 * node];
  }
}

void IntervalIndex::Insert(Slot slot) {
  const Lifetime& lifetime = layout_->lifetimes_[slot];
  if (lifetime.empty()) return;
  if (max_end_.empty()) {
    end_of_leaf_.assign(layout_->lifetimes_.size(), kNothing);
    max_end_.assign(2 * layout_->bucket_base_, kNothing);
  }
  const int64_t leaf = layout_->leaf_of_slot_[slot];
  end_of_leaf_[leaf] = lifetime.end;
  for (int64_t node = layout_->bucket_base_ + leaf / kBucketSize;
       node >= 1 && max_end_[node] < lifetime.end; node /= 2) {
    max_end_[node] = lifetime.end;
  }
}

void IntervalIndex::FindOverlapping(const Lifetime& query, std::vector<Slot>* out) const {
  if (max_end_.empty() || query.empty()) return;
  Collect(1, 0, layout_->bucket_base_, query, out);
}

void IntervalIndex::Collect(int64_t node, int64_t first_bucket, int64_t bucket_count,
                            const Lifetime& query, std::vector<Slot>* out) const {
  if (max_end_[node] == kNothing || max_end_[node] < query.start ||
      layout_->first_start_[node] > query.end) {
    return;
  }
  if (bucket_count == 1) {
    const int64_t begin = first_bucket * kBucketSize;
    const int64_t end = std::min(begin + kBucketSize, layout_->size());
    for (int64_t leaf = begin; leaf < end; ++leaf) {
      // Starts ascend within a bucket: past the query's end, nothing can overlap.
      if (layout_->start_of_leaf_[leaf] > query.end) break;
      if (end_of_leaf_[leaf] != kNothing && end_of_leaf_[leaf] >= query.start) {
        out->push_back(layout_->slot_of_leaf_[leaf]);
      }
    }
    return;
  }
  const int64_t half = bucket_count / 2;
  Collect(2 * node, first_bucket, half, query, out);
  Collect(2 * node + 1, first_bucket + half, half, query, out);
}

}  // namespace cadence_memplan
