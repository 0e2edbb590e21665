#include "core/placement/interval_index.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>

#include "core/common/branch_free.h"
#include "core/common/polled_sort.h"

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

TimeAxis::TimeAxis(const std::vector<Lifetime>& lifetimes, const Interrupt& interrupt) {
  starts_.reserve(lifetimes.size());
  PollEvery poll(interrupt, kItemsPerPoll);
  for (const Lifetime& lifetime : lifetimes) {
    if (!lifetime.empty()) starts_.push_back(lifetime.start);
    poll.Tick();
  }
  // Graphs list their tensors in node order more often than not.
  if (!std::is_sorted(starts_.begin(), starts_.end())) {
    SortPolled(starts_.begin(), starts_.end(), std::less<Time>(), interrupt);
  }
  starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
}

AxisSpan TimeAxis::SpanOfStartOnAxis(const Lifetime& lifetime, int64_t first_at_least) const {
  const size_t first =
      CountBelowFrom(starts_.data(), starts_.size(), static_cast<size_t>(first_at_least),
                     [&](Time t) { return t < lifetime.start; });
  // The start itself is on the axis, at `first`, and no later than the end.
  const size_t past_last = CountBelowFrom(starts_.data(), starts_.size(), first + 1,
                                          [&](Time t) { return t <= lifetime.end; });
  return {static_cast<int64_t>(first), static_cast<int64_t>(past_last) - 1};
}

SlotLayout::SlotLayout(std::vector<Lifetime> lifetimes, const Interrupt& interrupt)
    : lifetimes_(std::move(lifetimes)), axis_(lifetimes_, interrupt) {
  if (axis_.size() > std::numeric_limits<Position>::max()) {
    throw std::length_error("more than 2^31 - 1 distinct start times");
  }
  const int64_t width = BucketWidth(lifetimes_, axis_);
  while ((int64_t{1} << bucket_shift_) < width) ++bucket_shift_;
  bucket_count_ = (axis_.size() + width - 1) / width;
  positions_of_slot_.resize(lifetimes_.size());
  // Graphs list their tensors in node order more often than not, so each
  // search starts from the previous start's position when it can.
  Time previous_start = std::numeric_limits<Time>::max();
  int64_t previous_first = 0;
  PollEvery poll(interrupt, kItemsPerPoll);
  for (size_t slot = 0; slot < lifetimes_.size(); ++slot) {
    poll.Tick();
    const Lifetime& lifetime = lifetimes_[slot];
    if (lifetime.empty()) continue;
    const int64_t first_at_least = lifetime.start >= previous_start ? previous_first : 0;
    const AxisSpan span = axis_.SpanOfStartOnAxis(lifetime, first_at_least);
    positions_of_slot_[slot] = {static_cast<Position>(span.first),
                                static_cast<Position>(span.last)};
    previous_start = lifetime.start;
    previous_first = span.first;
  }
}

void IntervalIndex::Insert(Slot slot, Segment storage) {
  const Positions& positions = layout_->positions_of_slot_[slot];
  if (positions.first > positions.last) return;
  if (buckets_.empty()) buckets_.resize(layout_->bucket_count_);
  const auto [first, last] = BucketsOf(positions);
  for (int64_t bucket = first; bucket <= last; ++bucket) {
    buckets_[bucket].entries.push_back({positions, storage});
    if (slots_kept_) buckets_[bucket].slots.push_back(slot);
  }
  if (!slots_kept_) inserted_.push_back(slot);
}

void IntervalIndex::KeepSlots() const {
  if (slots_kept_) return;
  slots_kept_ = true;
  // In insertion order, so each bucket's slots line up with its entries.
  for (Slot slot : inserted_) {
    const auto [first, last] = BucketsOf(layout_->positions_of_slot_[slot]);
    for (int64_t bucket = first; bucket <= last; ++bucket) buckets_[bucket].slots.push_back(slot);
  }
  inserted_ = {};
}

void IntervalIndex::PrefetchBucketHeads(Slot query) const {
  if (buckets_.empty()) return;
  const Positions& positions = layout_->positions_of_slot_[query];
  if (positions.first > positions.last) return;
  const auto [first, last] = BucketsOf(positions);
  PrefetchLines(&buckets_[first], static_cast<size_t>(last - first + 1) * sizeof(Bucket), 4);
}

void IntervalIndex::PrefetchEntries(Slot query) const {
  if (buckets_.empty()) return;
  const Positions& positions = layout_->positions_of_slot_[query];
  if (positions.first > positions.last) return;
  const auto [first, last] = BucketsOf(positions);
  for (int64_t bucket = first; bucket <= std::min(last, first + 1); ++bucket) {
    const std::vector<Entry>& entries = buckets_[bucket].entries;
    PrefetchLines(entries.data(), entries.size() * sizeof(Entry), 16);
  }
}

size_t IntervalIndex::CollectOverlappingStorage(Slot query, std::vector<Segment>* buffer) const {
  if (buckets_.empty()) return 0;
  const Positions& positions = layout_->positions_of_slot_[query];
  if (positions.first > positions.last) return 0;
  const auto [first, last] = BucketsOf(positions);
  size_t scanned = 0;
  for (int64_t bucket = first; bucket <= last; ++bucket) scanned += buckets_[bucket].entries.size();
  if (buffer->size() < scanned) buffer->resize(scanned);
  Segment* segments = buffer->data();
  size_t count = 0;
  for (int64_t bucket = first; bucket <= last; ++bucket) {
    const SlotLayout::Position from = ReportedFrom(bucket, first);
    for (const Entry& entry : buckets_[bucket].entries) {
      // Every entry is written, and the count moves past the ones that count.
      segments[count] = entry.storage;
      count += static_cast<size_t>(Reports(entry, positions, from) &
                                   (entry.storage.begin < entry.storage.end));
    }
  }
  return count;
}

}  // namespace cadence_memplan
