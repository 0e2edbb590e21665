#include "interval_index.h"

#include <algorithm>
#include <limits>

namespace cadence_memplan {
namespace {

constexpr int64_t kMinBucketWidth = 8;
constexpr int64_t kMaxBucketWidth = 1024;

// The mean number of distinct starts a non-empty lifetime spans, estimated
// from the mean length and the mean spacing of the starts, as a power of two
// in [kMinBucketWidth, kMaxBucketWidth]. Doubles: times may span 2^64.
int64_t BucketWidth(const std::vector<Lifetime>& lifetimes, const TimeAxis& axis) {
  if (axis.size() < 2) return kMinBucketWidth;
  double total_length = 0;
  double count = 0;
  for (const Lifetime& lifetime : lifetimes) {
    if (lifetime.empty()) continue;
    total_length += static_cast<double>(lifetime.end) - static_cast<double>(lifetime.start) + 1;
    count += 1;
  }
  const double spacing =
      (static_cast<double>(axis[axis.size() - 1]) - static_cast<double>(axis[0])) /
      static_cast<double>(axis.size() - 1);
  const double starts_spanned = total_length / count / spacing;
  int64_t width = kMinBucketWidth;
  while (width < kMaxBucketWidth && static_cast<double>(width) < starts_spanned) width *= 2;
  return width;
}

}  // namespace

TimeAxis::TimeAxis(const std::vector<Lifetime>& lifetimes) {
  starts_.reserve(lifetimes.size());
  for (const Lifetime& lifetime : lifetimes) {
    if (!lifetime.empty()) starts_.push_back(lifetime.start);
  }
  // Graphs list their tensors in node order more often than not.
  if (!std::is_sorted(starts_.begin(), starts_.end())) std::sort(starts_.begin(), starts_.end());
  starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
}

std::pair<int64_t, int64_t> TimeAxis::Span(const Lifetime& lifetime) const {
  const auto first = std::lower_bound(starts_.begin(), starts_.end(), lifetime.start);
  const auto past_last = std::upper_bound(first, starts_.end(), lifetime.end);
  return {first - starts_.begin(), (past_last - starts_.begin()) - 1};
}

SlotLayout::SlotLayout(std::vector<Lifetime> lifetimes)
    : lifetimes_(std::move(lifetimes)), axis_(lifetimes_) {
  const int64_t width = BucketWidth(lifetimes_, axis_);
  for (int64_t position = 0; position < axis_.size(); position += width) {
    bucket_begin_.push_back(axis_[position]);
  }
  // Every non-empty lifetime starts on the axis, so at or after bucket 0's begin.
  const auto bucket_of = [&](Time time) {
    return static_cast<Bucket>(std::upper_bound(bucket_begin_.begin(), bucket_begin_.end(), time) -
                               bucket_begin_.begin() - 1);
  };
  buckets_of_slot_.resize(lifetimes_.size());
  for (size_t slot = 0; slot < lifetimes_.size(); ++slot) {
    const Lifetime& lifetime = lifetimes_[slot];
    if (!lifetime.empty())
      buckets_of_slot_[slot] = {bucket_of(lifetime.start), bucket_of(lifetime.end)};
  }
}

void IntervalIndex::Insert(Slot slot, Segment storage) {
  const auto [first, last] = layout_->buckets_of_slot_[slot];
  if (first > last) return;
  if (buckets_.empty()) buckets_.resize(layout_->bucket_begin_.size());
  const Lifetime& lifetime = layout_->lifetimes_[slot];
  for (auto bucket = first; bucket <= last; ++bucket) {
    buckets_[bucket].push_back({lifetime, slot, storage});
  }
}

size_t IntervalIndex::CollectOverlappingStorage(Slot query, std::vector<Segment>* buffer) const {
  if (buckets_.empty()) return 0;
  const auto [first, last] = layout_->buckets_of_slot_[query];
  const Lifetime& lifetime = layout_->lifetimes_[query];
  size_t scanned = 0;
  for (auto bucket = first; bucket <= last; ++bucket) scanned += buckets_[bucket].size();
  if (buffer->size() < scanned) buffer->resize(scanned);
  Segment* segments = buffer->data();
  size_t count = 0;
  for (auto bucket = first; bucket <= last; ++bucket) {
    // As in ForEachOverlapping: an entry that starts before this bucket is
    // reported by the previous one, unless this is the query's first bucket.
    const Time begin =
        bucket == first ? std::numeric_limits<Time>::min() : layout_->bucket_begin_[bucket];
    for (const Entry& entry : buckets_[bucket]) {
      // Every entry is written, and the count moves past the ones that count.
      segments[count] = entry.storage;
      count += static_cast<size_t>(
          (entry.lifetime.start <= lifetime.end) & (entry.lifetime.end >= lifetime.start) &
          (entry.lifetime.start >= begin) & (entry.storage.begin < entry.storage.end));
    }
  }
  return count;
}

}  // namespace cadence_memplan
