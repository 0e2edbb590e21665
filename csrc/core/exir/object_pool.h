// ObjectPool: exir's `List[SharedObject]` of one memory, and `pick_shared_obj`
// (executorch/exir/memory_planning.py) over it, with exir's answers.
//
// A shared object is a bucket of fixed size, made by the first tensor put in
// it; objects are numbered in creation order. For a tensor, pick_shared_obj
// tries
//   1. the first object none of whose allocations has a lifetime overlapping
//      the tensor's: at offset 0 (BankedGreedy's _reusable_object skips the
//      objects smaller than the tensor);
//   2. else, when overlapping allocations are allowed, the first object whose
//      overlapping allocations end furthest at some e > 0 with e + size <=
//      the object's size: at offset e;
//   3. else a new object of the tensor's size.
// Lifetimes are compared as exir compares them (live_allocation_index.h).
//
// How it is fast. Exir scans every object and each of its allocations for
// every tensor. Both questions concern only the allocations whose lifetimes
// overlap the tensor's: the objects they belong to are the only ones blocked
// for step 1, and the only ones with e > 0 for step 2. So a pool may keep a
// LiveAllocationIndex of its allocations, which lists those k allocations;
// step 1 is then the first object not among the at most k blocked ones (with
// a large enough size: a max-tree over the objects' sizes finds it in
// O((k + 1) log n)), and step 2 the smallest blocked object that fits.
// Occupancy::kScan answers the same questions with exir's loops, the
// baseline for benchmarks and tests.
//
// Listing all k costs more than exir's loops where many allocations are alive
// at once: the loops stop at the first overlap in each object, and step 1
// often ends early. Occupancy::kAuto, the default, therefore scans small
// pools outright and, in large ones, asks the index only when the allocations
// so far outnumber the query's window of the index many times over
// (docs/performance.md has the measurements behind both thresholds).
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/types.h"
#include "core/exir/free_object_tree.h"
#include "core/exir/live_allocation_index.h"

namespace cadence_memplan {

// Where a tensor sits inside its memory's objects.
struct Allocation {
  int64_t object = -1;
  Offset offset = 0;  // In the object.
  Size size = 0;      // Its allocated_memory once placed.
};

// Object sizes by creation index, with "the first object at or after `from`
// of at least `size` bytes" in O(log n).
class ObjectSizeTree {
 public:
  explicit ObjectSizeTree(int64_t capacity);

  void Set(int64_t object, Size size);

  // -1 when there is none.
  int64_t FirstAtLeast(int64_t from, Size size) const { return Find(1, 0, leaves_, from, size); }

 private:
  int64_t Find(int64_t node, int64_t first, int64_t count, int64_t from, Size size) const;

  int64_t leaves_ = 1;
  std::vector<Size> max_size_;
};

class ObjectPool {
 public:
  // `members`: the tensors that may go into this pool; `lifetimes` and
  // `where` are indexed by tensor and must outlive the pool, which records
  // each placement in `where`. `slot_of`: scratch with an entry per tensor,
  // shared by pools without common members (LiveAllocationIndex). kAuto scans
  // a pool of fewer than `auto_minimum_tensors` members with nothing built.
  ObjectPool(const std::vector<Lifetime>& lifetimes, const std::vector<TensorIndex>& members,
             std::vector<Allocation>* where, Occupancy search, int64_t auto_minimum_tensors,
             std::vector<int64_t>* slot_of);

  int64_t object_count() const { return static_cast<int64_t>(object_sizes_.size()); }
  Size object_size(int64_t object) const { return object_sizes_[object]; }

  // What pick_shared_obj did with a tensor.
  enum class Picked {
    kReused,     // Into an existing object (step 1 or 2).
    kNewObject,  // Into a new object of its size (step 3).
    kNotSorted,  // Step 1 found an object smaller than the tensor: exir's assertion
                 // "Allocation specs are not sorted" fails. Nothing was added.
  };
  // exir's greedy (and BankedGreedy's pinned tensors): pick_shared_obj for a
  // tensor of `size` bytes, and the tensor added where it picks.
  Picked Pick(TensorIndex tensor, Size size, bool allow_overlapping);

  // BankedGreedy's _reusable_object: steps 1 (skipping objects smaller than
  // the tensor) and 2 only. Adds the tensor and returns true when an object
  // takes it; returns false, adding nothing, otherwise.
  bool Reuse(TensorIndex tensor, Size size, bool allow_overlapping);

  // Step 3: a new object of `size` bytes holding the tensor at offset 0.
  void AddObject(TensorIndex tensor, Size size);

 private:
  struct Found {
    int64_t object = -1;  // -1: no object takes the tensor.
    Offset offset = 0;
    bool first_pass = false;  // Found by step 1.
  };

  // What kAuto stands for in a pool of these lifetimes (`intervals`: none is
  // inverted): kScan, kTree, kInterval, or, where some lifetime is inverted,
  // kAuto itself (the index or the loops, per query).
  static Occupancy ChooseSearch(const std::vector<Lifetime>& lifetimes, bool intervals,
                                int64_t minimum_tensors);
  // kAuto prefers the index where a pool has more tensors than this many times
  // the square of their mean overlaps (docs/performance.md).
  static constexpr double kIndexOverlapsSquared = 3;

  // Steps 1 and 2; with `skip_small`, step 1 skips objects smaller than `size`.
  Found Find(TensorIndex tensor, Size size, bool skip_small, bool allow_overlapping);
  Found FindIndexed(TensorIndex tensor, Size size, bool skip_small, bool allow_overlapping);
  Found FindByTree(TensorIndex tensor, Size size, bool skip_small, bool allow_overlapping) const;
  Found FindScan(TensorIndex tensor, Size size, bool skip_small, bool allow_overlapping) const;
  void Add(TensorIndex tensor, int64_t object, Offset offset, Size size);
  bool Overlaps(TensorIndex tensor, TensorIndex allocated) const;

  // kAuto scans while there are at most this many allocations per point of
  // the index's window for the query: the loops stop at the first overlap in
  // each object, the index reads its whole window (docs/performance.md).
  static constexpr int64_t kScanPerWindow = 16;

  const std::vector<Lifetime>* lifetimes_;
  std::vector<Allocation>* where_;
  Occupancy search_;
  std::vector<Size> object_sizes_;
  // kInterval and kAuto: the index, object sizes, and per-query scratch stamped
  // by query_.
  LiveAllocationIndex index_;
  ObjectSizeTree sizes_;
  std::vector<int64_t> blocked_stamp_;
  std::vector<Offset> overlap_end_;
  std::vector<int64_t> blocked_;
  int64_t query_ = 0;
  // kTree: the objects' busy times, and each object's allocations as the
  // second pass reads them, side by side.
  struct Record {
    Lifetime lifetime;
    Offset end;  // The allocation's offset plus size, in the object.
  };
  FreeObjectTree free_objects_;
  // The same over each object's first allocation alone, which fills it: the
  // second pass rules out every object whose first allocation overlaps the
  // tensor, and so reads only the others.
  FreeObjectTree first_allocations_;
  std::vector<std::vector<Record>> records_;
  // The tensors of each object, in the order they were added (exir's loops).
  std::vector<std::vector<TensorIndex>> allocations_;
  int64_t allocation_count_ = 0;  // Over all objects.
};

}  // namespace cadence_memplan
