// LiveAllocationIndex: which of a known set of lifetimes, inserted so far,
// overlap a given one of them, in exir's sense: a and b overlap unless
// a.end < b.start or a.start > b.end, with no special case for inverted
// (start > end) lifetimes (exir's shared-object planners compare them so).
//
// exir's packers (shared_objects.h) ask it for the allocations alive with the
// tensor being placed; the storage-reuse check (storage_reuse.h) for the
// tensors alive with one whose bytes it sweeps past, and erases tensors as
// the sweep leaves them behind.
//
// Structure: the lifetimes are points (start, end), ordered by start once at
// construction. A point that reaches `start` starts at `start - longest` or
// later, where `longest` is the longest end - start of any point, so each
// query's candidates are the points in a window of starts, found once at
// construction. Windows of up to kLinearWindow points are read in a row (the
// usual case: graphs are long and lifetimes short). Only when some window is
// wider is a max-tree over the inserted points' ends kept as well, and
// searched depth first, pruning subtrees past the window or whose largest end
// is before `start`: O((k + 1) log n) for k results.
//
// Why it is exact: a point outside the window starts before `start - longest`
// and so ends before `start`, or starts after the query's end; inside it, the
// test is exir's own.
#pragma once

#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "core/common/types.h"

namespace cadence_memplan {

class LiveAllocationIndex {
 public:
  LiveAllocationIndex() = default;
  // `points`: (start, tensor) of the tensors that may be inserted, in any
  // order; `lifetimes` is indexed by tensor. `slot_of` (one entry per tensor
  // of `lifetimes`) receives each point's position; indexes whose points are
  // disjoint may share it, and it must outlive the index.
  LiveAllocationIndex(std::vector<std::pair<Time, TensorIndex>> points,
                      const std::vector<Lifetime>& lifetimes, std::vector<int64_t>* slot_of);

  void Insert(TensorIndex tensor) { Set(tensor, true); }
  void Erase(TensorIndex tensor) { Set(tensor, false); }

  // How many points (inserted or not) a query for `query` may have to read:
  // a bound on the work of ForEachOverlapping.
  int64_t WindowSize(TensorIndex query) const {
    const Window& window = windows_[(*slot_of_)[query]];
    return window.limit - window.first;
  }

  // Calls visit(tensor) for every inserted point overlapping the lifetime of
  // `query`, which must be one of the points, in no particular order.
  template <typename Visit>
  void ForEachOverlapping(TensorIndex query, Visit&& visit) const;

 private:
  struct Window {
    Time start;     // The point's own start.
    int64_t first;  // Positions [first, limit) may overlap it.
    int64_t limit;
  };

  void Set(TensorIndex tensor, bool present);

  // Up to this many candidate points are read in a row instead of searched.
  static constexpr int64_t kLinearWindow = 256;
  static constexpr Time kAbsent = std::numeric_limits<Time>::min();

  std::vector<std::pair<Time, TensorIndex>> points_;  // (start, tensor), ascending.
  std::vector<Time> ends_;                            // Each point's end, present or not.
  std::vector<Window> windows_;                       // Each point's query.
  std::vector<int64_t>* slot_of_ = nullptr;
  std::vector<char> present_;
  bool use_tree_ = false;
  int64_t leaves_ = 1;
  std::vector<Time> max_end_;  // Heap layout; node 1 is the root.
};

template <typename Visit>
void LiveAllocationIndex::ForEachOverlapping(TensorIndex query, Visit&& visit) const {
  const Window& window = windows_[(*slot_of_)[query]];
  const Time start = window.start;
  if (window.limit - window.first <= kLinearWindow) {
    for (int64_t position = window.first; position < window.limit; ++position) {
      if (present_[position] && ends_[position] >= start) visit(points_[position].second);
    }
    return;
  }
  // Depth first over the tree, left to right, pruning subtrees that lie past
  // the window or whose largest end is before `start`.
  struct Frame {
    int64_t node, first, count;
  };
  Frame stack[64];
  int depth = 0;
  stack[depth++] = {1, 0, leaves_};
  while (depth > 0) {
    const Frame frame = stack[--depth];
    if (frame.first >= window.limit || max_end_[frame.node] < start) continue;
    if (frame.count == 1) {
      if (present_[frame.first]) visit(points_[frame.first].second);
      continue;
    }
    const int64_t half = frame.count / 2;
    stack[depth++] = {2 * frame.node + 1, frame.first + half, half};
    stack[depth++] = {2 * frame.node, frame.first, half};
  }
}

}  // namespace cadence_memplan
