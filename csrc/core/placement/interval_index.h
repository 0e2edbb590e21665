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
// every bucket it meets, as an entry that carries its positions on the axis
// (SlotLayout::Positions) and its storage, and a query scans the entries of
// the buckets it meets; an entry is reported by the first of those buckets
// that holds it, so once.
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
#include <utility>
#include <vector>

#include "core/common/interrupt.h"
#include "core/common/prefetch.h"
#include "core/common/types.h"

namespace cadence_memplan {

// The positions [first, last] on a TimeAxis of the starts inside a lifetime.
// For lifetimes that start on the axis, as a layout's all do, two lifetimes
// overlap exactly when their spans do.
struct AxisSpan {
  int64_t first = 0;
  int64_t last = -1;
  bool empty() const { return first > last; }
};

// The distinct start times of the non-empty lifetimes, ascending.
class TimeAxis {
 public:
  explicit TimeAxis(const std::vector<Lifetime>& lifetimes,
                    const Interrupt& interrupt = Interrupt());

  int64_t size() const { return static_cast<int64_t>(starts_.size()); }
  Time operator[](int64_t position) const { return starts_[position]; }

  // The span of a non-empty lifetime whose start is on the axis, at a
  // position known to be at least `first_at_least`: O(log) of the distances
  // from there, for callers that walk lifetimes in nearly ascending order.
  AxisSpan SpanOfStartOnAxis(const Lifetime& lifetime, int64_t first_at_least) const;

 private:
  std::vector<Time> starts_;
};

// The lifetimes an IntervalIndex may hold, and the buckets they share with
// the indexes of all memories.
class SlotLayout {
 public:
  // Throws std::length_error past 2^31 - 1 distinct start times, and
  // Interrupted when `interrupt` says stop while it sorts the starts.
  explicit SlotLayout(std::vector<Lifetime> lifetimes, const Interrupt& interrupt = Interrupt());

  Slot size() const { return static_cast<Slot>(lifetimes_.size()); }
  const Lifetime& lifetime(Slot slot) const { return lifetimes_[slot]; }
  const std::vector<Lifetime>& lifetimes() const { return lifetimes_; }
  const TimeAxis& axis() const { return axis_; }
  // The span of lifetime(slot) on axis(), computed once.
  AxisSpan span(Slot slot) const {
    const Positions& positions = positions_of_slot_[slot];
    return {positions.first, positions.last};
  }

  // Prefetching a query of `slot` (prefetch.h): its positions on the axis.
  void PrefetchPositions(Slot slot) const { PrefetchLine(&positions_of_slot_[slot]); }

 private:
  friend class IntervalIndex;
  // A lifetime as the positions on the axis of the starts inside it. For
  // lifetimes that start on the axis, as all do, [a, b] and [c, d] overlap
  // exactly when their positions do, and half the bytes of the times are
  // enough: so an index entry is smaller, and a query reads less memory.
  using Position = int32_t;
  struct Positions {
    Position first = 0;
    Position last = -1;  // Empty for an empty lifetime.
  };

  std::vector<Lifetime> lifetimes_;
  TimeAxis axis_;
  // Bucket b holds the positions [b << bucket_shift_, (b + 1) << bucket_shift_).
  int bucket_shift_ = 0;
  int64_t bucket_count_ = 0;
  std::vector<Positions> positions_of_slot_;
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

  // Prefetching a query of `query` (prefetch.h), once its positions are in
  // cache: the heads of its buckets, then, once those are too, their entries.
  void PrefetchBucketHeads(Slot query) const;
  void PrefetchEntries(Slot query) const;

 private:
  using Positions = SlotLayout::Positions;
  struct Entry {
    Positions positions;
    Segment storage;
  };
  // The slots beside the entries, not in them: most queries want only the
  // storage. Most plans never ask for the slots at all, so they are kept
  // only from the first call that does (KeepSlots): until then an insertion
  // appends its slot to one list instead of writing to every bucket it meets.
  struct Bucket {
    std::vector<Entry> entries;
    std::vector<Slot> slots;  // Empty until KeepSlots.
  };
  // Not safe while another thread queries the same index; each planner
  // has its own.
  void KeepSlots() const;

  // Whether a bucket reports an entry to `query`: the entry overlaps the
  // query and starts at or after `from`, the bucket's first position, or 0
  // in the query's first bucket (ReportedFrom). An entry that starts before a
  // bucket is also in the previous one, which reports it.
  static bool Reports(const Entry& entry, const Positions& query, SlotLayout::Position from) {
    return (entry.positions.first <= query.last) & (entry.positions.last >= query.first) &
           (entry.positions.first >= from);
  }
  // The buckets [first, last] that hold positions [positions.first, positions.last].
  std::pair<int64_t, int64_t> BucketsOf(const Positions& positions) const {
    return {positions.first >> layout_->bucket_shift_, positions.last >> layout_->bucket_shift_};
  }
  SlotLayout::Position ReportedFrom(int64_t bucket, int64_t first_bucket) const {
    return bucket == first_bucket
               ? 0
               : static_cast<SlotLayout::Position>(bucket << layout_->bucket_shift_);
  }

  const SlotLayout* layout_;
  // Allocated on the first insertion, so an unused memory costs nothing.
  mutable std::vector<Bucket> buckets_;
  mutable bool slots_kept_ = false;
  mutable std::vector<Slot> inserted_;  // Until KeepSlots: the non-empty slots, in order.
};

template <typename Visit>
void IntervalIndex::ForEachOverlapping(Slot query, Visit&& visit) const {
  if (buckets_.empty()) return;
  const Positions& positions = layout_->positions_of_slot_[query];
  if (positions.first > positions.last) return;
  KeepSlots();
  const auto [first, last] = BucketsOf(positions);
  for (int64_t bucket = first; bucket <= last; ++bucket) {
    const SlotLayout::Position from = ReportedFrom(bucket, first);
    const Bucket& entries = buckets_[bucket];
    for (size_t k = 0; k < entries.entries.size(); ++k) {
      if (Reports(entries.entries[k], positions, from)) {
        visit(entries.slots[k], entries.entries[k].storage);
      }
    }
  }
}

}  // namespace cadence_memplan
