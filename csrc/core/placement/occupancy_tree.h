// OccupancyTree: which bytes of one memory are taken while a given tensor
// lives, answered as merged segments rather than as the tensors themselves.
//
// The interval index (interval_index.h) lists the k tensors whose lifetimes
// overlap a query, and a placer then sorts them by offset: O(k log k) per
// placement. On graphs with thousands of tensors alive at once that sort is
// the whole cost. Yet the placers only ever look at the holes between those
// tensors, and thousands of overlapping tensors leave only tens of holes.
//
// Structure: a segment tree over time whose leaves are the distinct start
// times of all lifetimes (a TimeAxis, interval_index.h). Every node keeps the union of some
// tensors' byte segments, as a sorted vector of disjoint, merged segments:
//   * covers: tensors whose lifetime's canonical decomposition contains v;
//   * starts: tensors whose start leaf lies under v.
// A tensor alive during [s, e] either covers s, and then sits in covers of an
// ancestor of leaf(s), or starts within (s, e], and then sits in starts of a
// canonical node of (s, e]. So the bytes taken during [s, e] are the union of
// O(log T) sorted lists, and a query costs O(m log log T) for the m segments
// in those lists, however many tensors they merge.
//
// Segments are half-open byte ranges [begin, end). A tensor's time is given as
// its lifetime's span on the axis (AxisSpan, interval_index.h), which the
// slot layout computes once per slot; empty spans overlap nothing and are
// never stored.
#pragma once

#include <cstdint>
#include <memory_resource>
#include <vector>

#include "core/common/types.h"
#include "core/placement/interval_index.h"

namespace cadence_memplan {

// The earliest of the smallest holes, for the best-fit placer.
struct SmallestHole {
  Offset begin = kNoOffset;  // kNoOffset: no hole holds the size.
  // The end of the highest segment, 0 without any; set when begin is
  // kNoOffset (a search may stop below the top, at a hole no later one can
  // beat).
  Offset top = 0;
};

class OccupancyTree {
 public:
  // The tree starts empty, over an axis of `leaf_count` starts.
  explicit OccupancyTree(int64_t leaf_count) : leaf_count_(leaf_count) {}

  // Records that `segment` is taken during `span`. Empty spans and empty
  // segments are ignored.
  void Insert(const AxisSpan& span, Segment segment);

  // The lowest hole of at least `size` > 0 bytes among the segments taken
  // during `span`: its begin, or the top when no hole below the top holds it.
  Offset LowestHole(const AxisSpan& span, Size size) const;

  // The smallest hole of at least `size` > 0 bytes, the lowest among equals;
  // when there is none, the top. A hole no later one can beat ends the
  // search, so `top` is only meaningful when `begin` is kNoOffset.
  SmallestHole FindSmallestHole(const AxisSpan& span, Size size) const;

  // Whether `segment` meets a segment taken during `span`.
  bool Intersects(const AxisSpan& span, Segment segment) const;

 private:
  using SegmentList = std::pmr::vector<Segment>;  // Sorted, disjoint, none touching the next.

  // Points `lists_` at the non-empty lists whose union is the bytes taken
  // during `span`.
  void GatherLists(const AxisSpan& span) const;
  static void AddToList(SegmentList* list, Segment segment);

  // Visits the union of lists_ in offset order, as maximal runs of touching
  // or overlapping segments; stops when `visit(run)` returns true.
  template <typename Visit>
  void VisitUnion(Visit&& visit) const;

  int64_t leaf_count_;
  // A node's two lists side by side: a query reads the covers of the nodes
  // whose starts the insertion after it updates, and the other way round,
  // so one cache miss on a node serves both.
  struct Node {
    SegmentList covers;
    SegmentList starts;
  };
  // The lists' storage. A tensor goes into a few tens of lists, which grow one
  // segment at a time: through malloc, their growth and the frees at the
  // end cost first fit on Y_1 about a tenth of its time. The arena bumps a
  // pointer and frees everything at once; the blocks a list outgrew are not
  // reused, 5-11 MB more at peak on Y_1's 62,185 tensors.
  std::pmr::monotonic_buffer_resource arena_;
  // Heap-ordered over the axis's leaves (leaf i is node leaf_count_ + i);
  // allocated on the first insertion, so an unused memory costs nothing.
  std::vector<Node> nodes_;
  // Every inserted begin and end, or-ed together. A hole runs from 0 or an
  // end to a begin, so its length is a multiple of this value's lowest set
  // bit: with aligned placements, a hole of `size` rounded up to that grain
  // is as small as any that holds it, and best fit stops there.
  Offset bounds_ = 0;
  // Scratch for queries.
  struct Cursor {
    const Segment* next;
    const Segment* end;
  };
  mutable std::vector<const SegmentList*> lists_;
  mutable std::vector<Cursor> cursors_;
  struct Head {
    Offset begin;   // The list's next segment's begin, or past every begin.
    uint32_t list;  // Into cursors_.
  };
  mutable std::vector<Head> winners_, losers_;  // The merge's tournament tree.
};

}  // namespace cadence_memplan
