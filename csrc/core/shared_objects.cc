#include "shared_objects.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>
#include <utility>

#include "planner.h"
#include "str_cat.h"

namespace cadence_memplan {
namespace {

constexpr int64_t kMaxMemId = int64_t{1} << 20;
// The bound on every byte count, offset and alignment of a request: sums of a
// few of them cannot overflow (exir's are Python ints; no tensor comes near).
constexpr int64_t kMaxExirValue = int64_t{1} << 60;
constexpr Time kAbsent = std::numeric_limits<Time>::min();

// Points (start, end), one per lifetime that may be inserted, ordered by
// start. For the lifetime of a point, lists the inserted points with
// start <= its end and end >= its start, which is exir's "overlaps" for any
// lifetimes, inverted ones included.
//
// A point that reaches `start` starts at `start - longest` or later, so each
// query's candidates are the points in a window of starts, found once at
// construction. Windows of a few hundred points are read in a row (the usual
// case: graphs are long and lifetimes short); only when some window is wider
// is a max-tree over the inserted points' ends kept and searched instead, in
// O((k + 1) log n) for k results.
class LiveAllocationIndex {
 public:
  LiveAllocationIndex() = default;
  // `slot_of` (one entry per tensor of the request) receives each point's
  // position; indexes whose points are disjoint may share it.
  LiveAllocationIndex(std::vector<std::pair<Time, TensorIndex>> points,
                      const std::vector<Lifetime>& lifetimes, std::vector<int64_t>* slot_of)
      : points_(std::move(points)), slot_of_(slot_of) {
    std::sort(points_.begin(), points_.end());
    const auto count = static_cast<int64_t>(points_.size());
    ends_.reserve(count);
    Time longest = 0;
    for (int64_t position = 0; position < count; ++position) {
      const auto [start, tensor] = points_[position];
      (*slot_of_)[tensor] = position;
      const Time end = lifetimes[tensor].end;
      ends_.push_back(end);
      if (end > start) longest = std::max(longest, end - start);
    }
    windows_.resize(count);
    for (int64_t position = 0; position < count; ++position) {
      const Time start = points_[position].first;
      const Time end = ends_[position];
      const Time earliest =
          start < std::numeric_limits<Time>::min() + longest ? kAbsent : start - longest;
      const auto first =
          std::lower_bound(points_.begin(), points_.end(),
                           std::make_pair(earliest, std::numeric_limits<TensorIndex>::min()));
      const auto limit =
          std::upper_bound(points_.begin(), points_.end(),
                           std::make_pair(end, std::numeric_limits<TensorIndex>::max()));
      windows_[position] = {start, static_cast<int64_t>(first - points_.begin()),
                            static_cast<int64_t>(limit - points_.begin())};
      if (windows_[position].limit - windows_[position].first > kLinearWindow) use_tree_ = true;
    }
    if (use_tree_) {
      while (leaves_ < count) leaves_ *= 2;
      max_end_.assign(static_cast<size_t>(2 * leaves_), kAbsent);
    }
    present_.assign(count, 0);
  }

  void Insert(TensorIndex tensor) { Set(tensor, true); }

  // How many points (inserted or not) a query for `query` may have to read:
  // a bound on the work of ForEachOverlapping.
  int64_t WindowSize(TensorIndex query) const {
    const Window& window = windows_[(*slot_of_)[query]];
    return window.limit - window.first;
  }
  void Erase(TensorIndex tensor) { Set(tensor, false); }

  // Calls visit(tensor) for every inserted point overlapping the lifetime of
  // `query`, which must be one of the points.
  template <typename Visit>
  void ForEachOverlapping(TensorIndex query, Visit&& visit) const {
    const Window& window = windows_[(*slot_of_)[query]];
    const Time start = window.start;
    if (window.limit - window.first <= kLinearWindow) {
      for (int64_t position = window.first; position < window.limit; ++position) {
        if (present_[position] && ends_[position] >= start) visit(points_[position].second);
      }
      return;
    }
    // Depth-first over the tree, left to right, pruning subtrees that lie
    // past the window or whose largest end is before `start`.
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

 private:
  struct Window {
    Time start;     // The point's own start.
    int64_t first;  // Positions [first, limit) may overlap it.
    int64_t limit;
  };

  void Set(TensorIndex tensor, bool present) {
    const int64_t position = (*slot_of_)[tensor];
    present_[position] = present ? 1 : 0;
    if (!use_tree_) return;
    int64_t node = leaves_ + position;
    max_end_[node] = present ? ends_[position] : kAbsent;
    for (node /= 2; node >= 1; node /= 2) {
      max_end_[node] = std::max(max_end_[2 * node], max_end_[2 * node + 1]);
    }
  }

  // Up to this many candidate points are read in a row instead of searched.
  static constexpr int64_t kLinearWindow = 256;

  std::vector<std::pair<Time, TensorIndex>> points_;  // (start, tensor), ascending.
  std::vector<Time> ends_;                            // Each point's end, present or not.
  std::vector<Window> windows_;                       // Each point's query.
  std::vector<int64_t>* slot_of_ = nullptr;
  std::vector<char> present_;
  bool use_tree_ = false;
  int64_t leaves_ = 1;
  std::vector<Time> max_end_;  // Heap layout; node 1 is the root.
};

// Object sizes by creation index, with "the first object at or after `from`
// of at least `size` bytes" in O(log n).
class ObjectSizeTree {
 public:
  explicit ObjectSizeTree(int64_t capacity) {
    while (leaves_ < capacity) leaves_ *= 2;
    max_size_.assign(static_cast<size_t>(2 * leaves_), -1);
  }

  void Set(int64_t object, Size size) {
    int64_t node = leaves_ + object;
    max_size_[node] = size;
    for (node /= 2; node >= 1; node /= 2) {
      max_size_[node] = std::max(max_size_[2 * node], max_size_[2 * node + 1]);
    }
  }

  // -1 when there is none.
  int64_t FirstAtLeast(int64_t from, Size size) const { return Find(1, 0, leaves_, from, size); }

 private:
  int64_t Find(int64_t node, int64_t first, int64_t count, int64_t from, Size size) const {
    if (first + count <= from || max_size_[node] < size) return -1;
    if (count == 1) return first;
    const int64_t half = count / 2;
    const int64_t left = Find(2 * node, first, half, from, size);
    return left >= 0 ? left : Find(2 * node + 1, first + half, half, from, size);
  }

  int64_t leaves_ = 1;
  std::vector<Size> max_size_;
};

// Where a tensor sits inside its memory's objects.
struct Allocation {
  int64_t object = -1;
  Offset offset = 0;  // In the object.
  Size size = 0;      // Its allocated_memory once placed.
};

struct Reuse {
  int64_t object = -1;  // -1: no object takes the tensor.
  Offset offset = 0;
  bool first_pass = false;  // Found by pick_shared_obj's "no overlap at all" pass.
};

// exir's List[SharedObject] of one memory.
class ObjectPool {
 public:
  // `slot_of`: scratch with an entry per tensor, shared by pools without
  // common members (LiveAllocationIndex).
  ObjectPool(const std::vector<Lifetime>& lifetimes, const std::vector<TensorIndex>& members,
             std::vector<Allocation>* where, ObjectSearch search, int64_t index_minimum_tensors,
             std::vector<int64_t>* slot_of)
      : lifetimes_(&lifetimes),
        where_(where),
        search_(search),
        sizes_(static_cast<int64_t>(members.size())) {
    if (search_ == ObjectSearch::kAuto &&
        static_cast<int64_t>(members.size()) < index_minimum_tensors) {
      search_ = ObjectSearch::kScan;
    }
    if (search_ != ObjectSearch::kScan) {
      std::vector<std::pair<Time, TensorIndex>> points;
      points.reserve(members.size());
      for (TensorIndex t : members) points.emplace_back(lifetimes[t].start, t);
      index_ = LiveAllocationIndex(std::move(points), lifetimes, slot_of);
    }
  }

  int64_t object_count() const { return static_cast<int64_t>(object_sizes_.size()); }
  Size object_size(int64_t object) const { return object_sizes_[object]; }

  // pick_shared_obj's two reuse passes. With `skip_small`, the first pass
  // skips objects smaller than `size` (BankedGreedy's _reusable_object);
  // without, it takes the first object with no overlap whatever its size, and
  // the caller checks exir's assertion.
  Reuse Find(TensorIndex tensor, Size size, bool skip_small, bool allow_overlapping) {
    if (search_ == ObjectSearch::kScan)
      return FindScan(tensor, size, skip_small, allow_overlapping);
    // The index reads at most the query's window (and lists the k allocations
    // alive with the tensor); exir's loops read at most every allocation so
    // far, but stop at the first overlap in each object and often at the
    // first object. Where many allocations are alive at once (pangu) the
    // loops win; where few are, the index. Both answers are exir's.
    if (search_ == ObjectSearch::kAuto &&
        allocation_count_ <= kScanPerWindow * index_.WindowSize(tensor)) {
      return FindScan(tensor, size, skip_small, allow_overlapping);
    }
    return FindIndexed(tensor, size, skip_small, allow_overlapping);
  }

  void Add(TensorIndex tensor, int64_t object, Offset offset, Size size) {
    (*where_)[tensor] = {object, offset, size};
    allocations_[object].push_back(tensor);
    ++allocation_count_;
    if (search_ != ObjectSearch::kScan) index_.Insert(tensor);
  }

  void AddObject(TensorIndex tensor, Size size) {
    const int64_t object = object_count();
    object_sizes_.push_back(size);
    allocations_.emplace_back();
    if (search_ != ObjectSearch::kScan) {
      sizes_.Set(object, size);
      blocked_stamp_.push_back(0);
      overlap_end_.push_back(0);
    }
    Add(tensor, object, 0, size);
  }

 private:
  bool Overlaps(TensorIndex tensor, TensorIndex allocated) const {
    const Lifetime& a = (*lifetimes_)[tensor];
    const Lifetime& b = (*lifetimes_)[allocated];
    return !(a.end < b.start || a.start > b.end);
  }

  Reuse FindIndexed(TensorIndex tensor, Size size, bool skip_small, bool allow_overlapping) {
    ++query_;
    blocked_.clear();
    index_.ForEachOverlapping(tensor, [&](TensorIndex allocated) {
      const Allocation& allocation = (*where_)[allocated];
      const int64_t object = allocation.object;
      const Offset end = allocation.offset + allocation.size;
      if (blocked_stamp_[object] != query_) {
        blocked_stamp_[object] = query_;
        overlap_end_[object] = end;
        blocked_.push_back(object);
      } else {
        overlap_end_[object] = std::max(overlap_end_[object], end);
      }
    });
    if (!skip_small) {
      // At most k objects are blocked, so this reads at most k + 1.
      for (int64_t object = 0; object < object_count(); ++object) {
        if (blocked_stamp_[object] != query_) return {object, 0, true};
      }
    } else {
      for (int64_t from = 0;;) {
        const int64_t object = sizes_.FirstAtLeast(from, size);
        if (object < 0) break;
        if (blocked_stamp_[object] != query_) return {object, 0, true};
        from = object + 1;
      }
    }
    if (!allow_overlapping) return {};
    Reuse best;
    for (int64_t object : blocked_) {
      const Offset end = overlap_end_[object];
      if (end > 0 && end + size <= object_sizes_[object] &&
          (best.object < 0 || object < best.object)) {
        best = {object, end, false};
      }
    }
    return best;
  }

  Reuse FindScan(TensorIndex tensor, Size size, bool skip_small, bool allow_overlapping) const {
    for (int64_t object = 0; object < object_count(); ++object) {
      if (skip_small && object_sizes_[object] < size) continue;
      bool free = true;
      for (TensorIndex allocated : allocations_[object]) {
        if (Overlaps(tensor, allocated)) {
          free = false;
          break;
        }
      }
      if (free) return {object, 0, true};
    }
    if (!allow_overlapping) return {};
    for (int64_t object = 0; object < object_count(); ++object) {
      Offset end = 0;
      for (TensorIndex allocated : allocations_[object]) {
        if (!Overlaps(tensor, allocated)) continue;
        const Allocation& allocation = (*where_)[allocated];
        end = std::max(end, allocation.offset + allocation.size);
      }
      if (end > 0 && end + size <= object_sizes_[object]) return {object, end, false};
    }
    return {};
  }

  const std::vector<Lifetime>* lifetimes_;
  std::vector<Allocation>* where_;
  ObjectSearch search_;
  std::vector<Size> object_sizes_;
  // kIndex and kAuto: the index, object sizes, and per-query scratch stamped
  // by query_.
  LiveAllocationIndex index_;
  ObjectSizeTree sizes_;
  std::vector<int64_t> blocked_stamp_;
  std::vector<Offset> overlap_end_;
  std::vector<int64_t> blocked_;
  int64_t query_ = 0;
  // The tensors of each object, in the order they were added (exir's loops).
  std::vector<std::vector<TensorIndex>> allocations_;
  int64_t allocation_count_ = 0;  // Over all objects.
  // kAuto scans while there are at most this many allocations per point of
  // the index's window for the query. 16 keeps kAuto within about 10% of the
  // cheaper search on pangu, S_1, Y_1 (where exir's loops win) and synthetic
  // graphs of 8,000 and 16,000 tensors (where the index wins 2-3.5x); 4 made
  // Y_1 1.8x slower than the loops, 64 lost the synthetic graphs' gain.
  static constexpr int64_t kScanPerWindow = 16;
};

void CheckTensors(const GreedyRequest& request) {
  if (request.alignment < 1 || request.alignment > kMaxExirValue) {
    throw InvalidInput(StrCat("alignment must be in 1..2^60, got ", request.alignment));
  }
  const auto count = static_cast<TensorIndex>(request.tensors.size());
  for (TensorIndex i = 0; i < count; ++i) {
    const ExirTensor& tensor = request.tensors[i];
    if (tensor.nbytes < 0 || tensor.nbytes > kMaxExirValue || tensor.sort_size < 0) {
      throw InvalidInput(StrCat("tensor ", i, " has a size outside 0..2^60"));
    }
    if (tensor.mem_id < 0 || tensor.mem_id > kMaxMemId) {
      throw InvalidInput(StrCat("tensor ", i, " has mem_id ", tensor.mem_id, " outside 0..2^20"));
    }
    if (tensor.base < kOutsideStorageBase || tensor.base >= count) {
      throw InvalidInput(StrCat("tensor ", i, " has storage base ", tensor.base));
    }
    if (tensor.base_offset < -kMaxExirValue || tensor.base_offset > kMaxExirValue) {
      throw InvalidInput(StrCat("tensor ", i, " has a storage_base_offset outside +-2^60"));
    }
  }
  for (Size size : request.input_sizes) {
    if (size < -kMaxExirValue || size > kMaxExirValue) {
      throw InvalidInput("input_mem_buffer_sizes must be within +-2^60");
    }
  }
  if (request.extra_padding < -kMaxExirValue || request.extra_padding > kMaxExirValue) {
    throw InvalidInput("extra_padding must be within +-2^60");
  }
}

// exir's visit order: bisect.insort by size, then reversed, so largest first
// and, among equal sizes, the later tensor first.
std::vector<TensorIndex> PackingOrder(const std::vector<ExirTensor>& tensors,
                                      std::vector<TensorIndex> subset) {
  std::reverse(subset.begin(), subset.end());
  std::stable_sort(subset.begin(), subset.end(), [&](TensorIndex a, TensorIndex b) {
    return tensors[a].sort_size > tensors[b].sort_size;
  });
  return subset;
}

std::vector<Lifetime> LifetimesOf(const std::vector<ExirTensor>& tensors) {
  std::vector<Lifetime> lifetimes(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) lifetimes[i] = tensors[i].lifetime;
  return lifetimes;
}

// _resolve_storage_base_specs. exir makes rounds over the deferred tensors in
// `deferred` order, resolving each whose base is resolved by then (earlier in
// the same round counts), and raises at the first failed check, or when a
// round makes no progress. A tensor's round follows from its base's, so the
// rounds are computed instead of repeated: the checks then run in exir's
// (round, position) order.
PackError ResolveStorageBases(const GreedyRequest& request,
                              const std::vector<TensorIndex>& deferred,
                              std::vector<Allocation>* where, std::vector<int64_t>* mem_of) {
  const auto& tensors = request.tensors;
  const auto count = static_cast<TensorIndex>(tensors.size());
  std::vector<int64_t> position(count, -1);
  for (size_t p = 0; p < deferred.size(); ++p) position[deferred[p]] = static_cast<int64_t>(p);
  constexpr int64_t kUnknown = -3, kInProgress = -2, kNever = -1;
  std::vector<int64_t> round(count, kUnknown);
  for (TensorIndex t = 0; t < count; ++t) {
    if (tensors[t].base == kNoStorageBase) round[t] = 0;  // Placed before any round.
  }
  std::vector<TensorIndex> chain;
  for (TensorIndex first : deferred) {
    chain.clear();
    TensorIndex t = first;
    while (round[t] == kUnknown) {
      round[t] = kInProgress;
      chain.push_back(t);
      const TensorIndex base = tensors[t].base;
      if (base < 0) break;
      t = base;
    }
    // Unwind from the deepest tensor of the chain.
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const TensorIndex tensor = *it;
      const TensorIndex base = tensors[tensor].base;
      if (base == kOutsideStorageBase || round[base] == kInProgress || round[base] == kNever) {
        round[tensor] = kNever;
      } else if (round[base] == 0) {
        round[tensor] = 1;
      } else {
        round[tensor] = round[base] + (position[base] < position[tensor] ? 0 : 1);
      }
    }
  }
  std::vector<TensorIndex> order;
  bool unresolved = false;
  for (TensorIndex t : deferred) {
    if (round[t] == kNever) {
      unresolved = true;
    } else {
      order.push_back(t);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](TensorIndex a, TensorIndex b) { return round[a] < round[b]; });
  for (TensorIndex t : order) {
    const ExirTensor& tensor = tensors[t];
    const Allocation base = (*where)[tensor.base];
    const Size size = (*where)[t].size;
    if (tensor.base_offset < 0) return {PackErrorKind::kNegativeStorageOffset, t, 0};
    if ((base.offset + tensor.base_offset) % request.alignment != 0) {
      return {PackErrorKind::kMisalignedStorage, t, base.offset};
    }
    if (tensor.base_offset + size > base.size) return {PackErrorKind::kStorageDoesNotFit, t, 0};
    (*where)[t] = {base.object, base.offset + tensor.base_offset, size};
    (*mem_of)[t] = (*mem_of)[tensor.base];
  }
  if (unresolved) return {PackErrorKind::kUnresolvableStorage, -1, 0};
  return {};
}

// _compute_total_sizes: each memory's objects end to end after the bytes its
// submodules reserved; `padded` memories get extra_padding on top.
bool LayOut(const GreedyRequest& request, const std::map<int64_t, ObjectPool>& pools,
            const std::function<bool(int64_t, const ObjectPool&)>& padded,
            const std::vector<Allocation>& where, const std::vector<int64_t>& mem_of,
            PackResult* result) {
  if (pools.empty()) {
    result->bufsizes = {0, 0};
    return true;
  }
  result->bufsizes.assign(static_cast<size_t>(pools.rbegin()->first + 1), 0);
  std::map<int64_t, std::vector<Offset>> object_offsets;
  for (const auto& [mem_id, pool] : pools) {
    Size total =
        mem_id < static_cast<int64_t>(request.input_sizes.size()) ? request.input_sizes[mem_id] : 0;
    auto& offsets = object_offsets[mem_id];
    for (int64_t object = 0; object < pool.object_count(); ++object) {
      offsets.push_back(total);
      if (!CheckedAdd(total, pool.object_size(object), &total)) return false;
    }
    if (padded(mem_id, pool) && !CheckedAdd(total, request.extra_padding, &total)) {
      return false;
    }
    result->bufsizes[mem_id] = total;
  }
  for (size_t t = 0; t < where.size(); ++t) {
    if (where[t].object < 0) continue;
    const Offset object_offset = object_offsets[mem_of[t]][where[t].object];
    Offset offset = 0;
    if (!CheckedAdd(object_offset, where[t].offset, &offset)) return false;
    result->placements[t] = {mem_of[t], where[t].object, offset};
  }
  return true;
}

// The memory ids in use and, per memory, the tensors that may go there.
std::map<int64_t, std::vector<TensorIndex>> MembersByMemory(const std::vector<ExirTensor>& tensors,
                                                            bool pinned_only) {
  std::map<int64_t, std::vector<TensorIndex>> members;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const ExirTensor& tensor = tensors[t];
    if (tensor.base != kNoStorageBase || (pinned_only && !tensor.pinned)) continue;
    members[tensor.mem_id].push_back(static_cast<TensorIndex>(t));
  }
  return members;
}

Size AlignedSize(Size nbytes, Size alignment) { return AlignUp(nbytes, alignment); }

}  // namespace

PackResult PackGreedy(const GreedyRequest& request) {
  CheckTensors(request);
  const auto& tensors = request.tensors;
  const auto count = static_cast<TensorIndex>(tensors.size());
  PackResult result;
  result.placements.assign(count, {});
  result.final_alignment.assign(count, 0);
  std::vector<TensorIndex> all(count);
  for (TensorIndex t = 0; t < count; ++t) all[t] = t;
  result.visit_order = PackingOrder(tensors, all);

  const std::vector<Lifetime> lifetimes = LifetimesOf(tensors);
  std::vector<Allocation> where(count);
  std::vector<int64_t> mem_of(count, 0);
  std::map<int64_t, ObjectPool> pools;
  std::vector<int64_t> slot_of(count, -1);  // Each tensor is in one pool at most.
  for (const auto& [mem_id, members] : MembersByMemory(tensors, false)) {
    pools.emplace(std::piecewise_construct, std::forward_as_tuple(mem_id),
                  std::forward_as_tuple(lifetimes, members, &where, request.search,
                                        request.index_minimum_tensors, &slot_of));
  }
  std::vector<TensorIndex> deferred;
  for (TensorIndex t : result.visit_order) {
    const ExirTensor& tensor = tensors[t];
    const Size size = AlignedSize(tensor.nbytes, request.alignment);
    result.final_alignment[t] = request.alignment;
    mem_of[t] = tensor.mem_id;
    where[t].size = size;
    if (tensor.base != kNoStorageBase) {
      deferred.push_back(t);
      continue;
    }
    ObjectPool& pool = pools.at(tensor.mem_id);
    const Reuse reuse =
        pool.Find(t, size, /*skip_small=*/false, request.allow_overlapping_allocations);
    if (reuse.object < 0) {
      pool.AddObject(t, size);
    } else if (reuse.first_pass && pool.object_size(reuse.object) < size) {
      result.error = {PackErrorKind::kNotSorted, t, 0};
      return result;
    } else {
      pool.Add(t, reuse.object, reuse.offset, size);
    }
  }
  result.error = ResolveStorageBases(request, deferred, &where, &mem_of);
  if (result.error.kind == PackErrorKind::kUnresolvableStorage) {
    for (TensorIndex t : deferred) result.placements[t].object = where[t].object;
  }
  if (result.error.kind != PackErrorKind::kNone) return result;
  if (!LayOut(
          request, pools, [](int64_t, const ObjectPool&) { return true; }, where, mem_of,
          &result)) {
    result.error = {PackErrorKind::kOverflow, -1, 0};
  }
  return result;
}

PackResult PackBanked(const BankedRequest& request) {
  const GreedyRequest& greedy = request.greedy;
  CheckTensors(greedy);
  if (request.banks.empty()) throw InvalidInput("a target memory map needs at least one bank");
  std::map<int64_t, size_t> bank_of;
  for (size_t b = 0; b < request.banks.size(); ++b) {
    const Bank& bank = request.banks[b];
    if (bank.mem_id < 1 || bank.mem_id > kMaxMemId || bank.size < 1 || bank.size > kMaxExirValue ||
        bank.alignment < 0 || bank.alignment > kMaxExirValue ||
        !bank_of.emplace(bank.mem_id, b).second) {
      throw InvalidInput(StrCat("bank ", b, " is not a valid bank of a target memory map"));
    }
  }
  const auto& tensors = greedy.tensors;
  const auto count = static_cast<TensorIndex>(tensors.size());
  PackResult result;
  result.placements.assign(count, {});
  result.final_alignment.assign(count, 0);
  const auto alignment_of = [&](int64_t mem_id) {
    const auto found = bank_of.find(mem_id);
    if (found == bank_of.end() || request.banks[found->second].alignment == 0) {
      return greedy.alignment;
    }
    return request.banks[found->second].alignment;
  };

  std::vector<TensorIndex> pinned, free, deferred;
  for (TensorIndex t = 0; t < count; ++t) {
    if (tensors[t].base != kNoStorageBase) {
      deferred.push_back(t);
      result.final_alignment[t] = greedy.alignment;  // Realigned before anything else.
    } else if (tensors[t].pinned) {
      pinned.push_back(t);
    } else {
      free.push_back(t);
    }
  }
  const std::vector<Lifetime> lifetimes = LifetimesOf(tensors);
  std::vector<Allocation> where(count);
  std::vector<int64_t> mem_of(count, 0);
  std::map<int64_t, std::vector<TensorIndex>> members = MembersByMemory(tensors, true);
  for (const Bank& bank : request.banks) {
    auto& bank_members = members[bank.mem_id];
    bank_members.insert(bank_members.end(), free.begin(), free.end());
  }
  std::map<int64_t, ObjectPool> pools;
  // The unpinned tensors are in every bank's pool, so each bank has its own
  // slots; pools of undeclared memories hold pins only, and share theirs.
  std::vector<std::vector<int64_t>> slots(request.banks.size() + 1,
                                          std::vector<int64_t>(count, -1));
  for (const auto& [mem_id, list] : members) {
    const auto bank = bank_of.find(mem_id);
    std::vector<int64_t>* slot_of =
        &slots[bank == bank_of.end() ? request.banks.size() : bank->second];
    pools.emplace(std::piecewise_construct, std::forward_as_tuple(mem_id),
                  std::forward_as_tuple(lifetimes, list, &where, greedy.search,
                                        greedy.index_minimum_tensors, slot_of));
  }
  std::vector<Size> used(request.banks.size());
  for (size_t b = 0; b < request.banks.size(); ++b) {
    const int64_t mem_id = request.banks[b].mem_id;
    used[b] =
        mem_id < static_cast<int64_t>(greedy.input_sizes.size()) ? greedy.input_sizes[mem_id] : 0;
  }
  const auto fail = [&](PackErrorKind kind, TensorIndex tensor, int64_t value) {
    result.error = {kind, tensor, value};
    result.used = used;
    return result;
  };

  // Pins first, each into its own memory by pick_shared_obj.
  for (TensorIndex t : PackingOrder(tensors, pinned)) {
    result.visit_order.push_back(t);
    const int64_t mem_id = tensors[t].mem_id;
    const Size alignment = alignment_of(mem_id);
    const Size size = AlignedSize(tensors[t].nbytes, alignment);
    result.final_alignment[t] = alignment;
    mem_of[t] = mem_id;
    ObjectPool& pool = pools.at(mem_id);
    const Reuse reuse = pool.Find(t, size, false, greedy.allow_overlapping_allocations);
    if (reuse.object >= 0) {
      if (reuse.first_pass && pool.object_size(reuse.object) < size) {
        return fail(PackErrorKind::kNotSorted, t, 0);
      }
      pool.Add(t, reuse.object, reuse.offset, size);
      continue;
    }
    pool.AddObject(t, size);
    const auto found = bank_of.find(mem_id);
    if (found == bank_of.end()) continue;  // Laid out, but not budgeted.
    const Bank& bank = request.banks[found->second];
    Size& bank_used = used[found->second];
    const Size cost = size + (pool.object_count() == 1 ? greedy.extra_padding : 0);
    if (bank_used + cost > bank.size) {
      return fail(PackErrorKind::kPinnedDoesNotFit, t, bank.size - bank_used);
    }
    bank_used += cost;
  }

  // Then the others, each into the first bank that takes it.
  for (TensorIndex t : PackingOrder(tensors, free)) {
    result.visit_order.push_back(t);
    bool placed = false;
    for (size_t b = 0; b < request.banks.size() && !placed; ++b) {
      const Bank& bank = request.banks[b];
      const Size alignment = alignment_of(bank.mem_id);
      const Size size = AlignedSize(tensors[t].nbytes, alignment);
      result.final_alignment[t] = alignment;
      ObjectPool& pool = pools.at(bank.mem_id);
      const Reuse reuse = pool.Find(t, size, true, greedy.allow_overlapping_allocations);
      if (reuse.object >= 0) {
        pool.Add(t, reuse.object, reuse.offset, size);
        placed = true;
      } else {
        const Size cost = size + (pool.object_count() == 0 ? greedy.extra_padding : 0);
        if (used[b] + cost <= bank.size) {
          used[b] += cost;
          pool.AddObject(t, size);
          placed = true;
        }
      }
      if (placed) mem_of[t] = bank.mem_id;
    }
    if (!placed) return fail(PackErrorKind::kNoBankFits, t, 0);
  }

  for (TensorIndex t : deferred) {
    result.visit_order.push_back(t);
    where[t].size = AlignedSize(tensors[t].nbytes, greedy.alignment);
  }
  const PackError error = ResolveStorageBases(greedy, deferred, &where, &mem_of);
  if (error.kind != PackErrorKind::kNone) {
    if (error.kind == PackErrorKind::kUnresolvableStorage) {
      for (TensorIndex t : deferred) result.placements[t].object = where[t].object;
    }
    return fail(error.kind, error.tensor, error.value);
  }
  const auto padded = [](int64_t, const ObjectPool& pool) { return pool.object_count() > 0; };
  if (!LayOut(greedy, pools, padded, where, mem_of, &result)) {
    return fail(PackErrorKind::kOverflow, -1, 0);
  }
  result.used = used;
  return result;
}

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

bool LifetimesOverlap(const Lifetime& a, const Lifetime& b) { return a.Overlaps(b); }

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
          LifetimesOverlap(tensors[i].lifetime, tensors[j].lifetime) &&
          !BacksOrBackedBy(request.parents, static_cast<int64_t>(i), static_cast<int64_t>(j))) {
        result.violation = true;
      }
      if (tensors[i].mem_obj_id != tensors[j].mem_obj_id) result.violation = true;
      ++result.reuse_pairs;
    }
  }
  return result;
}

}  // namespace

ReuseCheckResult CheckStorageReuse(const ReuseCheckRequest& request) {
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
  // Chains must end: a cycle would make BacksOrBackedBy loop.
  {
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
  if (request.search == ObjectSearch::kScan) return CheckStorageReuseScan(request);

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
  const auto last_byte = [&](TensorIndex t) { return tensors[t].offset + tensors[t].size - 1; };
  std::vector<int64_t> slot_of(count, -1);  // Each tensor is in one memory.

  for (size_t first = 0; first < order.size();) {
    size_t stop = first;
    while (stop < order.size() && tensors[order[stop]].mem_id == tensors[order[first]].mem_id) {
      ++stop;
    }
    // Pairs whose bytes overlap: every earlier tensor (by offset) whose last
    // byte is at or after this one's first.
    std::vector<Offset> last_bytes;
    for (size_t k = first; k < stop; ++k) last_bytes.push_back(last_byte(order[k]));
    std::sort(last_bytes.begin(), last_bytes.end());
    for (size_t k = first; k < stop; ++k) {
      const auto before = static_cast<int64_t>(
          std::lower_bound(last_bytes.begin(), last_bytes.end(), tensors[order[k]].offset) -
          last_bytes.begin());
      result.reuse_pairs += static_cast<int64_t>(k - first) - before;
    }

    // The forbidden pairs, by a sweep over offsets that keeps the tensors
    // whose bytes reach the current offset.
    std::vector<std::pair<Time, TensorIndex>> points;
    for (size_t k = first; k < stop; ++k) {
      const TensorIndex t = order[k];
      if (!lifetimes[t].empty()) points.emplace_back(lifetimes[t].start, t);
    }
    LiveAllocationIndex alive(std::move(points), lifetimes, &slot_of);
    using Ending = std::pair<Offset, TensorIndex>;
    std::priority_queue<Ending, std::vector<Ending>, std::greater<>> active;
    std::unordered_map<int64_t, int64_t> active_per_object;
    for (size_t k = first; k < stop && !result.violation; ++k) {
      const TensorIndex t = order[k];
      while (!active.empty() && active.top().first < tensors[t].offset) {
        const TensorIndex gone = active.top().second;
        active.pop();
        --active_per_object[tensors[gone].mem_obj_id];
        if (!lifetimes[gone].empty()) alive.Erase(gone);
      }
      if (static_cast<int64_t>(active.size()) != active_per_object[tensors[t].mem_obj_id]) {
        result.violation = true;
      }
      if (!request.allow_lifetime_and_storage_overlap && !lifetimes[t].empty()) {
        alive.ForEachOverlapping(t, [&](TensorIndex other) {
          if (!BacksOrBackedBy(request.parents, t, other)) result.violation = true;
        });
      }
      active.emplace(last_byte(t), t);
      ++active_per_object[tensors[t].mem_obj_id];
      if (!lifetimes[t].empty()) alive.Insert(t);
    }
    first = stop;
  }
  return result;
}

}  // namespace cadence_memplan
