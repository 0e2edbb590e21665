#include "core/exir/storage_reuse.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>
#include <utility>

#include "core/common/errors.h"
#include "core/common/str_cat.h"
#include "core/exir/live_allocation_index.h"

namespace cadence_memplan {
namespace {

// Whether one tensor backs the other through a chain of storage bases.
bool BacksOrBackedBy(const std::vector<int64_t>& parents, int64_t a, int64_t b) {
  for (int64_t node = parents[a]; node >= 0; node = parents[node]) {
    if (node == b) return true;
  }
  for (int64_t node = parents[b]; node >= 0; node = parents[node]) {
    if (node == a) return true;
  }
  return false;
}

bool BytesOverlap(const ReuseTensor& a, const ReuseTensor& b) {
  return a.mem_id == b.mem_id && StorageOverlaps(a.offset, a.size, b.offset, b.size);
}

ReuseCheckResult CheckStorageReuseScan(const ReuseCheckRequest& request) {
  ReuseCheckResult result;
  const auto& tensors = request.tensors;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (size_t j = i + 1; j < tensors.size(); ++j) {
      if (!BytesOverlap(tensors[i], tensors[j])) continue;
      if (!request.allow_lifetime_and_storage_overlap &&
          tensors[i].lifetime.Overlaps(tensors[j].lifetime) &&
          !BacksOrBackedBy(request.parents, static_cast<int64_t>(i), static_cast<int64_t>(j))) {
        result.violation = true;
      }
      if (tensors[i].mem_obj_id != tensors[j].mem_obj_id) result.violation = true;
      ++result.reuse_pairs;
    }
  }
  return result;
}

// Throws InvalidInput unless every tensor has a parent entry, every parent
// names a node, offsets and sizes are in range and the chains of storage
// bases end (a cycle would make BacksOrBackedBy loop).
void CheckReuseRequest(const ReuseCheckRequest& request) {
  const auto& tensors = request.tensors;
  const auto count = static_cast<int64_t>(tensors.size());
  if (static_cast<int64_t>(request.parents.size()) < count) {
    throw InvalidInput("parents must have an entry per tensor at least");
  }
  for (size_t node = 0; node < request.parents.size(); ++node) {
    const int64_t parent = request.parents[node];
    if (parent < -1 || parent >= static_cast<int64_t>(request.parents.size())) {
      throw InvalidInput(StrCat("node ", node, " has parent ", parent));
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    const ReuseTensor& tensor = tensors[i];
    if (tensor.offset < 0 || tensor.offset > kMaxByteValue || tensor.size < 0 ||
        tensor.size > kMaxByteValue) {
      throw InvalidInput(StrCat("tensor ", i, " has an offset or size outside 0..2^62"));
    }
  }
  std::vector<int8_t> state(request.parents.size(), 0);  // 0 new, 1 on path, 2 done.
  std::vector<int64_t> path;
  for (size_t start = 0; start < request.parents.size(); ++start) {
    path.clear();
    int64_t node = static_cast<int64_t>(start);
    while (node >= 0 && state[node] == 0) {
      state[node] = 1;
      path.push_back(node);
      node = request.parents[node];
    }
    if (node >= 0 && state[node] == 1) throw InvalidInput("storage bases form a cycle");
    for (int64_t done : path) state[done] = 2;
  }
}

// One memory's tensors, `order[first..stop)` sorted by offset: the sweep
// over offsets that finds the pairs whose bytes overlap and whether one of
// them is forbidden.
class MemorySweep {
 public:
  MemorySweep(const ReuseCheckRequest& request, const std::vector<TensorIndex>& order, size_t first,
              size_t stop)
      : request_(request), tensors_(request.tensors), order_(order), first_(first), stop_(stop) {}

  Offset LastByte(TensorIndex t) const { return tensors_[t].offset + tensors_[t].size - 1; }

  // Pairs whose bytes overlap: every earlier tensor (by offset) whose last
  // byte is at or after this one's first.
  int64_t ReusePairs() const {
    std::vector<Offset> last_bytes;
    for (size_t k = first_; k < stop_; ++k) last_bytes.push_back(LastByte(order_[k]));
    std::sort(last_bytes.begin(), last_bytes.end());
    int64_t pairs = 0;
    for (size_t k = first_; k < stop_; ++k) {
      const auto before = static_cast<int64_t>(
          std::lower_bound(last_bytes.begin(), last_bytes.end(), tensors_[order_[k]].offset) -
          last_bytes.begin());
      pairs += static_cast<int64_t>(k - first_) - before;
    }
    return pairs;
  }

  // The forbidden pairs, by a sweep over offsets that keeps the tensors
  // whose bytes reach the current offset: true at the first one.
  bool Violates(const std::vector<Lifetime>& lifetimes, std::vector<int64_t>* slot_of) const {
    std::vector<std::pair<Time, TensorIndex>> points;
    for (size_t k = first_; k < stop_; ++k) {
      const TensorIndex t = order_[k];
      if (!lifetimes[t].empty()) points.emplace_back(lifetimes[t].start, t);
    }
    LiveAllocationIndex alive(std::move(points), lifetimes, slot_of);
    using Ending = std::pair<Offset, TensorIndex>;
    std::priority_queue<Ending, std::vector<Ending>, std::greater<>> active;
    std::unordered_map<int64_t, int64_t> active_per_object;
    bool violation = false;
    for (size_t k = first_; k < stop_ && !violation; ++k) {
      const TensorIndex t = order_[k];
      while (!active.empty() && active.top().first < tensors_[t].offset) {
        const TensorIndex gone = active.top().second;
        active.pop();
        --active_per_object[tensors_[gone].mem_obj_id];
        if (!lifetimes[gone].empty()) alive.Erase(gone);
      }
      if (static_cast<int64_t>(active.size()) != active_per_object[tensors_[t].mem_obj_id]) {
        violation = true;
      }
      if (!request_.allow_lifetime_and_storage_overlap && !lifetimes[t].empty()) {
        alive.ForEachOverlapping(t, [&](TensorIndex other) {
          if (!BacksOrBackedBy(request_.parents, t, other)) violation = true;
        });
      }
      active.emplace(LastByte(t), t);
      ++active_per_object[tensors_[t].mem_obj_id];
      if (!lifetimes[t].empty()) alive.Insert(t);
    }
    return violation;
  }

 private:
  const ReuseCheckRequest& request_;
  const std::vector<ReuseTensor>& tensors_;
  const std::vector<TensorIndex>& order_;
  const size_t first_, stop_;
};

}  // namespace

ReuseCheckResult CheckStorageReuse(const ReuseCheckRequest& request) {
  CheckReuseRequest(request);
  if (request.search == Occupancy::kScan) return CheckStorageReuseScan(request);
  const auto& tensors = request.tensors;
  const auto count = static_cast<int64_t>(tensors.size());
  ReuseCheckResult result;
  // Tensors that take bytes, by memory, then by offset.
  std::vector<TensorIndex> order;
  for (int64_t i = 0; i < count; ++i) {
    if (tensors[i].size > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](TensorIndex a, TensorIndex b) {
    if (tensors[a].mem_id != tensors[b].mem_id) return tensors[a].mem_id < tensors[b].mem_id;
    if (tensors[a].offset != tensors[b].offset) return tensors[a].offset < tensors[b].offset;
    return a < b;
  });
  std::vector<Lifetime> lifetimes(count);
  for (int64_t i = 0; i < count; ++i) lifetimes[i] = tensors[i].lifetime;
  std::vector<int64_t> slot_of(count, -1);  // Each tensor is in one memory.
  for (size_t first = 0; first < order.size();) {
    size_t stop = first;
    while (stop < order.size() && tensors[order[stop]].mem_id == tensors[order[first]].mem_id) {
      ++stop;
    }
    const MemorySweep sweep(request, order, first, stop);
    result.reuse_pairs += sweep.ReusePairs();
    if (!result.violation) result.violation = sweep.Violates(lifetimes, &slot_of);
    first = stop;
  }
  return result;
}

}  // namespace cadence_memplan
