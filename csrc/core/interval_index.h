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
// simulator, without rebalancing). A query for [s, e] visits only the prefix of
// lifetimes with start <= e and prunes every subtree whose max end is < s.
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

 private:
  friend class IntervalIndex;
  std::vector<Lifetime> lifetimes_;
  std::vector<Time> sorted_starts_;  // Leaf i holds the i-th start in order.
  std::vector<Slot> slot_of_leaf_;
  std::vector<int64_t> leaf_of_slot_;
  int64_t leaf_base_ = 1;  // Number of leaves, rounded up to a power of two.
};

class IntervalIndex {
 public:
  // The index starts empty; `layout` must outlive it.
  explicit IntervalIndex(const SlotLayout& layout) : layout_(&layout) {}

  // Adds a slot. Empty lifetimes are ignored: they overlap nothing.
  void Insert(Slot slot);

  // Appends to `out` every inserted slot whose lifetime overlaps `query`, in
  // no particular order.
  void FindOverlapping(const Lifetime& query, std::vector<Slot>* out) const;

 private:
  void Collect(int64_t node, int64_t node_begin, int64_t node_end, int64_t prefix_end,
               Time query_start, std::vector<Slot>* out) const;

  const SlotLayout* layout_;
  // max_end_[node] = largest end among inserted leaves under node, or
  // kNothing. Allocated on the first insertion, so an unused memory costs
  // nothing.
  std::vector<Time> max_end_;
};

}  // namespace cadence_memplan
