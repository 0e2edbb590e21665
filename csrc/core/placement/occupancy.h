// MemoryOccupancy: the questions a placer asks one memory, and three ways to
// answer them (see Occupancy in types.h), all exact.
//
//   * kInterval lists the k tensors alive with the one being placed
//     (interval_index.h, time buckets) and sorts their aligned storage by
//     offset: O(bucket entries + k log k). Best when k is small and the graph
//     too big to scan, as in long exported models.
//   * kTree keeps merged byte segments in a segment tree over time
//     (occupancy_tree.h): the cost follows the holes, not k. Best when
//     thousands of tensors are alive at once. It also builds an interval index
//     for the questions the merged segments cannot answer (see below), on
//     the first such question.
//   * kScan scans every tensor of the memory in offset order, as TFLM's
//     planner and TFLite's greedy_by_size do: O(n). It is the simplest
//     correct native planner, the benchmarks' baseline, and the fastest for
//     a few thousand tensors, which fit in cache.
//
// Why merged segments are exact. A tensor at `offset` with `size` bytes in a
// memory of alignment A blocks the segment [offset, AlignUp(offset + size, A)):
//   * First fit only ever tries aligned offsets (0 and aligned ends), and an
//     aligned offset c meets [offset, offset + size) exactly when it meets
//     the aligned segment. So the lowest fit is the begin of the lowest hole
//     of the union that holds the size, or the union's top.
//   * Best fit scans the tensors in (offset, insertion) order and measures
//     each gap from the largest aligned end so far. For size > 0 only
//     positive gaps count, and the positive gaps of that scan are exactly the
//     holes of the union, in order; ties between equal offsets only make
//     gaps of zero. A zero-size tensor, though, splits a hole without taking
//     a byte, so best fit falls back to the listed tensors in a memory that
//     holds one (the planner decides; FindSmallestHole requires none).
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "core/common/interrupt.h"
#include "core/common/types.h"
#include "core/placement/interval_index.h"
#include "core/placement/occupancy_tree.h"

namespace cadence_memplan {

// What the planner knows of every slot (interval_index.h), shared by the
// occupancy of every memory. Offsets and sequences are set on insertion.
struct SlotTable {
  explicit SlotTable(std::vector<Lifetime> all_lifetimes)
      : lifetimes(std::move(all_lifetimes)), slots(lifetimes.size()) {}

  // Side by side, so that reading a listed tensor costs one cache miss.
  struct SlotState {
    Size size = 0;
    Offset offset = kNoOffset;
    int64_t sequence = 0;  // Insertion order into any memory.
  };
  std::vector<Lifetime> lifetimes;
  std::vector<SlotState> slots;
  // The time axis and the interval indexes' buckets: built only for the
  // occupancies that use them (not for a scan, which must stay cheap).
  std::optional<SlotLayout> layout;
};

class MemoryOccupancy {
 public:
  virtual ~MemoryOccupancy() = default;

  // Adds a slot whose offset and sequence the table already holds.
  virtual void Insert(Slot slot) = 0;

  // For a slot of size > 0: the lowest offset that is 0 or an aligned end of
  // a tensor alive with it, at which its storage meets none (first fit).
  virtual Offset LowestFreeOffset(Slot slot) const = 0;

  // For a slot of size > 0, in a memory that holds no zero-size tensor:
  // upstream's best-fit scan over the tensors alive with the slot, in
  // (offset, insertion) order. `top` is only set when no hole holds the slot.
  virtual SmallestHole FindSmallestHole(Slot slot) const = 0;

  // False when the slot's storage at `offset` meets no tensor alive with it;
  // true when it may (the caller then checks the listed tensors).
  virtual bool MayCollide(Slot slot, Offset offset) const = 0;

  // Appends every inserted slot whose lifetime overlaps the slot's, in no
  // particular order.
  virtual void FindOverlapping(Slot slot, std::vector<Slot>* out) const = 0;

  // Prefetching for a query of `slot` a visit or two ahead (prefetch.h):
  // first what locates the slot's data, then, a visit later, the data.
  virtual void PrefetchLocation(Slot /*slot*/) const {}
  virtual void PrefetchData(Slot /*slot*/) const {}
};

// `occupancy` must not be kAuto; `table.layout` must be set unless it is
// kScan. `table` must outlive the result.
std::unique_ptr<MemoryOccupancy> MakeOccupancy(Occupancy occupancy, const SlotTable& table,
                                               Size alignment);

// The number of pairs of non-empty lifetimes that overlap: exactly the number
// of tensors all placements together would list if every tensor went to one
// memory. O(n + time span) when node indices are dense, else O(n log n).
int64_t CountOverlappingPairs(const std::vector<Lifetime>& lifetimes,
                              const Interrupt& interrupt = Interrupt());

// The occupancy kAuto stands for: the cheapest by a cost model of planning
// time per tensor, in nanoseconds, fitted on synthetic graphs and MiniMalloc's
// real instances (x86-64; n tensors, k = overlapping pairs / n):
//   scan      0.65 n            (every tensor of the memory, in cache order)
//   interval  200 + 27 k        (the listed tensors, sorted)
//   tree      1000 + 20 min(k, 150)
// So a few thousand tensors are scanned, and graphs with many tensors alive
// at once get the tree. A wrong choice costs time, never a different plan.
Occupancy ChooseOccupancy(const std::vector<Lifetime>& lifetimes,
                          const Interrupt& interrupt = Interrupt());

}  // namespace cadence_memplan
