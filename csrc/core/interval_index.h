// IntervalIndex: which placed tensors of one memory are alive at the same
// time as a given tensor?
//
// Both placers ask this once per (tensor, memory) they try. Upstream answers it
// by scanning every tensor already placed in the memory, which makes planning
// quadratic.
//
// Structure: every lifetime that may ever be inserted is known before planning
// starts (a SlotLayout), so time can be cut into buckets up front. Bucket b
// spans the start times from the (b * width)-th distinct start of all
// lifetimes up to the next bucket's first. An inserted lifetime is appended to
// every bucket it meets, as an entry that carries its start and end, and a
// query scans the entries of the buckets it meets; an entry is reported by
// the first of those buckets that holds it, so once.
//
// Why buckets and not a tree: the placers visit tensors by size, so queries
// land at random times, and a tree's descent costs a cache miss per level. A
// query here reads one or two contiguous runs of entries. The width is the
// mean number of distinct starts a lifetime spans (within [8, 1024]), which
// keeps both the copies of a long lifetime (its length / width) and the
// entries a query scans (about width + live tensors per bucket) small. When
// thousands of tensors are alive at once the occupancy tree (occupancy_tree.h)
// answers the placers instead, and this index only lists tensors for rare
// fallbacks.
//
// Lifetimes are inclusive [start, end]; empty ones (start > end) are never
// stored and never reported.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "types.h"

namespace cadence_memplan {

// The distinct start times of the non-empty lifetimes, ascending.
class TimeAxis {
 public:
  explicit TimeAxis(const std::vector<Lifetime>& lifetimes);

  int64_t size() const { return static_cast<int64_t>(starts_.size()); }
  Time operator[](int64_t position) const { return starts_[position]; }

  // The positions [first, last] of the starts inside a non-empty lifetime;
  // empty (first > last) when none is.
  std::pair<int64_t, int64_t> Span(const Lifetime& lifetime) const;

 private:
  std::vector<Time> starts_;
};

// The lifetimes an IntervalIndex may hold, and the buckets they share with
// the indexes of all memories.
class SlotLayout {
 public:
  explicit SlotLayout(std::vector<Lifetime> lifetimes);

  Slot size() const { return static_cast<Slot>(lifetimes_.size()); }
  const Lifetime& lifetime(Slot slot) const { return lifetimes_[slot]; }
  const std::vector<Lifetime>& lifetimes() const { return lifetimes_; }
  const TimeAxis& axis() const { return axis_; }

 private:
  friend class IntervalIndex;
  using Bucket = int32_t;  // Buckets hold at least 8 distinct starts each.
  struct BucketRange {
    Bucket first = 0;
    Bucket last = -1;  // Empty for an empty lifetime.
  };

  std::vector<Lifetime> lifetimes_;
  TimeAxis axis_;
  // bucket_begin_[b]: the first start time of bucket b, ascending.
  std::vector<Time> bucket_begin_;
  // The buckets each slot's lifetime meets, found once rather than per query.
  std::vector<BucketRange> buckets_of_slot_;
};

class IntervalIndex {
 public:
  // The index starts empty; `layout` must outlive it.
  explicit IntervalIndex(const SlotLayout& layout) : layout_(&layout) {}

  // Adds a slot, with the bytes it takes (kept beside it, so that a query
  // reads no other memory). Empty lifetimes are ignored: they overlap nothing.
  void Insert(Slot slot, Segment storage);

  // Calls visit(slot, storage) for every inserted slot whose lifetime
  // overlaps the lifetime of slot `query` (which need not be inserted), in no
  // particular order.
  template <typename Visit>
  void ForEachOverlapping(Slot query, Visit&& visit) const;

  // Appends those slots to `out`.
  void FindOverlapping(Slot query, std::vector<Slot>* out) const {
    ForEachOverlapping(query, [out](Slot slot, const Segment&) { out->push_back(slot); });
  }

  // Writes the non-empty storage of those slots to the front of `buffer`,
  // which grows as needed and never shrinks, and returns how many. Without a
  // branch per entry: about half the entries a query scans overlap it, in no
  // pattern a branch predictor could learn.
  size_t CollectOverlappingStorage(Slot query, std::vector<Segment>* buffer) const;

 private:
  struct Entry {
    Lifetime lifetime;
    Slot slot;
    Segment storage;
  };

  const SlotLayout* layout_;
  // Allocated on the first insertion, so an unused memory costs nothing.
  std::vector<std::vector<Entry>> buckets_;
};

template <typename Visit>
void IntervalIndex::ForEachOverlapping(Slot query, Visit&& visit) const {
  if (buckets_.empty()) return;
  const auto [first, last] = layout_->buckets_of_slot_[query];
  const Lifetime& lifetime = layout_->lifetimes_[query];
  for (auto bucket = first; bucket <= last; ++bucket) {
    // An entry that starts before this bucket is also in the previous one,
    // which reports it unless this is the query's first bucket.
    const Time begin =
        bucket == first ? std::numeric_limits<Time>::min() : layout_->bucket_begin_[bucket];
    for (const Entry& entry : buckets_[bucket]) {
      if (entry.lifetime.start <= lifetime.end && entry.lifetime.end >= lifetime.start &&
          entry.lifetime.start >= begin) {
        visit(entry.slot, entry.storage);
      }
    }
  }
}

}  // namespace cadence_memplan
