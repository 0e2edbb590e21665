// FreeObjectTree: the first shared object, in creation order, that no
// allocation occupies during a given lifetime (pick_shared_obj's first pass,
// object_pool.h), without visiting the objects before it.
//
// exir's loop tries the objects in order and each object's allocations until
// one overlaps; on graphs with thousands of tensors alive at once the first
// free object comes after hundreds of busy ones. Here each object keeps its
// busy time, the union of its allocations' lifetimes, as sorted disjoint runs,
// and a segment tree over the objects keeps at every node the times at which
// every object below it is busy: the intersection of its children's. A
// subtree holds no free object when that intersection meets the lifetime, so
// the search descends only into subtrees that may hold one, leftmost first.
//
// Why it is exact. An object is free during [s, e] exactly when no run of its
// busy time meets [s, e] (inclusive integer times: an allocation [a, b]
// overlaps [s, e] exactly when the union does there). A node is skipped only
// when one time in [s, e] finds every object below it busy, so no free object
// is skipped; leaves test their own runs, so no busy one is returned. Only
// non-empty lifetimes (start <= end) may be stored or asked about: exir's
// comparison of inverted lifetimes is not an interval test (the pool keeps
// such memories on exir's loops).
//
// Cost. Adding an allocation grows one leaf's runs and the intersections
// above it only where they change; on MiniMalloc's real instances a query
// visits about as many nodes as the tree is deep (docs/performance.md).
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/types.h"

namespace cadence_memplan {

class FreeObjectTree {
 public:
  // Room for `capacity` objects, numbered 0..capacity-1; none exists yet.
  explicit FreeObjectTree(int64_t capacity);

  // Object `object` (the next one, or an existing one) of `size` bytes is
  // busy during the non-empty `lifetime` from now on.
  void AddBusy(int64_t object, Size size, const Lifetime& lifetime);

  // The first object among from..count-1 of at least `min_size` bytes that
  // is busy at no time of the non-empty `lifetime`; -1 when there is none.
  int64_t FirstFree(int64_t from, int64_t count, Size min_size, const Lifetime& lifetime) const;

 private:
  using Runs = std::vector<Lifetime>;  // Sorted, disjoint, not adjacent.

  int64_t Find(int64_t node, int64_t first, int64_t width, int64_t from, int64_t count,
               Size min_size, const Lifetime& lifetime) const;

  int64_t leaves_ = 1;
  // Heap layout, node 1 the root, leaf i at leaves_ + i: the times at which
  // every object below is busy (at a leaf, the object's own busy time), and
  // the largest object below (-1 where none exists).
  std::vector<Runs> all_busy_;
  std::vector<Size> max_size_;
  // Scratch for AddBusy: the times a node just gained, and its parent's share.
  Runs added_, grown_;
};

}  // namespace cadence_memplan
