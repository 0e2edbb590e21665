// IntervalIndex: which placed tensors of one memory are alive at the same
// time as a given tensor?
//
// Both placers ask this once per (tensor, memory) they try. Upstream answers it
// by scanning every tensor already placed in the memory, which makes planning
// quadratic. The index answers it in O(log n + k log(n / k)) for k reported
// tensors, and an insertion costs O(log n).
//
// Structure: every lifetime that may ever be inserted is known before planning
// starts, so the index is a static, perfectly balanced tree over those
// lifetimes sorted by start, augmented with the maximum end of the inserted
// lifetimes below each node (the augmented interval tree of XLA's heap
// simulator, without rebalancing). A query for [s, e] prunes every subtree
// whose first start is > e or whose max end is < s.
// The tree's leaves are buckets of kBucketSize consecutive lifetimes, scanned
// linearly: the tensors overlapping a query mostly start close together, so
// a few short scans replace many tree nodes.
// Lifetimes are inclusive [start, end]; empty ones (start > end) are never
// stored and never reported.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "types.h"

namespace cadence_memplan {

using Slot = int64_t;  // Identifies one lifetime of the universe; 0..size-1.

// The lifetimes an IntervalIndex may hold, sorted once and shared by the
// indexes of all memories.
class SlotLayout {
 public:
  explicit SlotLayout(const std::vector<Lifetime>& lifetimes);

  Slot size() const { return static_cast<Slot>(lifetimes_.size()); }
  const Lifetime& lifetime(Slot slot) const { return lifetimes_[slot]; }
  const std::vector<Lifetime>& lifetimes() const { return lifetimes_; }

 private:
  friend class IntervalIndex;
  std::vector<Lifetime> lifetimes_;
  std::vector<Slot> slot_of_leaf_;  // Leaf i holds the i-th lifetime by start.
  std::vector<Time> start_of_leaf_;  // Ascending; scanned with end_of_leaf_.
  std::vector<int64_t> leaf_of_slot_;
  int64_t bucket_base_ = 1;  // Number of buckets, rounded up to a power of two.
  // first_start_[node]: smallest start under a node of the bucket tree (see
  // IntervalIndex::max_end_), or +infinity under a node past the last leaf.
  std::vector<Time> first_start_;
};

class IntervalIndex {
 public:
  static constexpr int64_t kBucketSize = 16;

  // The index starts empty; `layout` must outlive it.
  explicit IntervalIndex(const SlotLayout& layout) : layout_(&layout) {}

  // Adds a slot. Empty lifetimes are ignored: they overlap nothing. A lifetime
  // ending at INT64_MIN is not supported (the index uses it as "nothing");
  // the planner only passes non-negative times.
  void Insert(Slot slot);

  // Appends to `out` every inserted slot whose lifetime overlaps `query`, in
  // no particular order.
  void FindOverlapping(const Lifetime& query, std::vector<Slot>* out) const;

 private:
  void Collect(int64_t node, int64_t first_bucket, int64_t bucket_count, const Lifetime& query,
               std::vector<Slot>* out) const;

  const SlotLayout* layout_;
  // Both are allocated on the first insertion, so an unused memory costs
  // nothing. end_of_leaf_[leaf] = end of the inserted lifetime, or kNothing.
  std::vector<Time> end_of_leaf_;
  // Heap-ordered tree over buckets (root 1, children 2i and 2i + 1):
  // max_end_[node] = largest end inserted under node, or kNothing.
  std::vector<Time> max_end_;
};

}  // namespace cadence_memplan
