#include "core/exir/object_pool.h"

#include "core/placement/occupancy.h"

#include <algorithm>
#include <utility>

namespace cadence_memplan {

ObjectSizeTree::ObjectSizeTree(int64_t capacity) {
  while (leaves_ < capacity) leaves_ *= 2;
  max_size_.assign(static_cast<size_t>(2 * leaves_), -1);
}

void ObjectSizeTree::Set(int64_t object, Size size) {
  int64_t node = leaves_ + object;
  max_size_[node] = size;
  for (node /= 2; node >= 1; node /= 2) {
    max_size_[node] = std::max(max_size_[2 * node], max_size_[2 * node + 1]);
  }
}

int64_t ObjectSizeTree::Find(int64_t node, int64_t first, int64_t count, int64_t from,
                             Size size) const {
  if (first + count <= from || max_size_[node] < size) return -1;
  if (count == 1) return first;
  const int64_t half = count / 2;
  const int64_t left = Find(2 * node, first, half, from, size);
  return left >= 0 ? left : Find(2 * node + 1, first + half, half, from, size);
}

ObjectPool::ObjectPool(const std::vector<Lifetime>& lifetimes,
                       const std::vector<TensorIndex>& members, std::vector<Allocation>* where,
                       Occupancy search, int64_t auto_minimum_tensors,
                       std::vector<int64_t>* slot_of)
    : lifetimes_(&lifetimes),
      where_(where),
      search_(search),
      sizes_(static_cast<int64_t>(members.size())),
      free_objects_(static_cast<int64_t>(members.size())),
      first_allocations_(static_cast<int64_t>(members.size())) {
  // The tree compares lifetimes as intervals, which exir's test is only for
  // lifetimes that are not inverted.
  std::vector<Lifetime> member_lifetimes;
  member_lifetimes.reserve(members.size());
  for (TensorIndex t : members) member_lifetimes.push_back(lifetimes[t]);
  const bool intervals = std::none_of(member_lifetimes.begin(), member_lifetimes.end(),
                                      [](const Lifetime& lifetime) { return lifetime.empty(); });
  if (search_ == Occupancy::kAuto)
    search_ = ChooseSearch(member_lifetimes, intervals, auto_minimum_tensors);
  if (search_ == Occupancy::kTree && !intervals) search_ = Occupancy::kScan;
  if (search_ == Occupancy::kAuto || search_ == Occupancy::kInterval) {
    std::vector<std::pair<Time, TensorIndex>> points;
    points.reserve(members.size());
    for (TensorIndex t : members) points.emplace_back(lifetimes[t].start, t);
    index_ = LiveAllocationIndex(std::move(points), lifetimes, slot_of);
  }
}

Occupancy ObjectPool::ChooseSearch(const std::vector<Lifetime>& lifetimes, bool intervals,
                                   int64_t minimum_tensors) {
  const auto count = static_cast<int64_t>(lifetimes.size());
  if (count < minimum_tensors) return Occupancy::kScan;
  if (!intervals) return Occupancy::kAuto;
  // Each structure pays for what it lists: the tree for the allocations of
  // the objects it reads (about count / overlaps each), the index for the
  // allocations alive with the tensor (about overlaps).
  const double overlaps = 2.0 * static_cast<double>(CountOverlappingPairs(lifetimes)) /
                          static_cast<double>(std::max<int64_t>(count, 1));
  return static_cast<double>(count) > kIndexOverlapsSquared * overlaps * overlaps
             ? Occupancy::kInterval
             : Occupancy::kTree;
}

ObjectPool::Picked ObjectPool::Pick(TensorIndex tensor, Size size, bool allow_overlapping) {
  const Found found = Find(tensor, size, /*skip_small=*/false, allow_overlapping);
  if (found.object < 0) {
    AddObject(tensor, size);
    return Picked::kNewObject;
  }
  // Step 1 takes the first free object whatever its size; exir then asserts.
  if (found.first_pass && object_sizes_[found.object] < size) return Picked::kNotSorted;
  Add(tensor, found.object, found.offset, size);
  return Picked::kReused;
}

bool ObjectPool::Reuse(TensorIndex tensor, Size size, bool allow_overlapping) {
  const Found found = Find(tensor, size, /*skip_small=*/true, allow_overlapping);
  if (found.object < 0) return false;
  Add(tensor, found.object, found.offset, size);
  return true;
}

void ObjectPool::AddObject(TensorIndex tensor, Size size) {
  const int64_t object = object_count();
  object_sizes_.push_back(size);
  allocations_.emplace_back();
  if (search_ == Occupancy::kTree) records_.emplace_back();
  if (search_ == Occupancy::kAuto || search_ == Occupancy::kInterval) {
    sizes_.Set(object, size);
    blocked_stamp_.push_back(0);
    overlap_end_.push_back(0);
  }
  Add(tensor, object, 0, size);
}

void ObjectPool::Add(TensorIndex tensor, int64_t object, Offset offset, Size size) {
  (*where_)[tensor] = {object, offset, size};
  ++allocation_count_;
  if (search_ == Occupancy::kTree) {
    const Lifetime& lifetime = (*lifetimes_)[tensor];
    free_objects_.AddBusy(object, object_sizes_[object], lifetime);
    if (records_[object].empty())
      first_allocations_.AddBusy(object, object_sizes_[object], lifetime);
    records_[object].push_back({lifetime, offset + size});
    return;
  }
  allocations_[object].push_back(tensor);
  if (search_ != Occupancy::kScan) index_.Insert(tensor);
}

bool ObjectPool::Overlaps(TensorIndex tensor, TensorIndex allocated) const {
  const Lifetime& a = (*lifetimes_)[tensor];
  const Lifetime& b = (*lifetimes_)[allocated];
  return !(a.end < b.start || a.start > b.end);
}

ObjectPool::Found ObjectPool::Find(TensorIndex tensor, Size size, bool skip_small,
                                   bool allow_overlapping) {
  if (search_ == Occupancy::kScan) return FindScan(tensor, size, skip_small, allow_overlapping);
  if (search_ == Occupancy::kTree) return FindByTree(tensor, size, skip_small, allow_overlapping);
  // The index reads at most the query's window (and lists the k allocations
  // alive with the tensor); exir's loops read at most every allocation so
  // far, but stop at the first overlap in each object and often at the first
  // object. Where many allocations are alive at once the loops win; where few
  // are, the index. Both answers are exir's.
  if (search_ == Occupancy::kAuto &&
      allocation_count_ <= kScanPerWindow * index_.WindowSize(tensor)) {
    return FindScan(tensor, size, skip_small, allow_overlapping);
  }
  return FindIndexed(tensor, size, skip_small, allow_overlapping);
}

ObjectPool::Found ObjectPool::FindIndexed(TensorIndex tensor, Size size, bool skip_small,
                                          bool allow_overlapping) {
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
  Found best;
  for (int64_t object : blocked_) {
    const Offset end = overlap_end_[object];
    if (end > 0 && end + size <= object_sizes_[object] &&
        (best.object < 0 || object < best.object)) {
      best = {object, end, false};
    }
  }
  return best;
}

ObjectPool::Found ObjectPool::FindByTree(TensorIndex tensor, Size size, bool skip_small,
                                         bool allow_overlapping) const {
  const Lifetime& lifetime = (*lifetimes_)[tensor];
  const int64_t free = free_objects_.FirstFree(0, object_count(), skip_small ? size : 0, lifetime);
  if (free >= 0) return {free, 0, true};
  if (!allow_overlapping) return {};
  // Exir's second pass takes the first object whose overlapping allocations
  // end at some e > 0 with e + size <= its size. An object no larger than the
  // tensor never qualifies; nor, for size > 0, does one whose first
  // allocation, which spans it, overlaps the tensor. Of the rest, one
  // allocation ending above its size - size rules an object out.
  // A tree pool's lifetimes are all non-empty (the constructor leaves the
  // others to exir's loops), so overlap takes two comparisons; the bounds and
  // the running maximum are locals, which the compiler keeps in registers.
  const Time start = lifetime.start;
  const Time last = lifetime.end;
  const auto qualifies = [&](int64_t object, Offset* end) {
    const Offset limit = object_sizes_[object] - size;
    Offset highest = 0;
    for (const Record& record : records_[object]) {
      if (record.lifetime.start > last || record.lifetime.end < start) continue;
      highest = std::max(highest, record.end);
      if (highest > limit) return false;
    }
    *end = highest;
    return highest > 0;
  };
  Offset end = 0;
  if (size > 0) {
    for (int64_t object = first_allocations_.FirstFree(0, object_count(), size + 1, lifetime);
         object >= 0;
         object = first_allocations_.FirstFree(object + 1, object_count(), size + 1, lifetime)) {
      if (qualifies(object, &end)) return {object, end, false};
    }
    return {};
  }
  for (int64_t object = 0; object < object_count(); ++object) {
    if (object_sizes_[object] > size && qualifies(object, &end)) return {object, end, false};
  }
  return {};
}

ObjectPool::Found ObjectPool::FindScan(TensorIndex tensor, Size size, bool skip_small,
                                       bool allow_overlapping) const {
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

}  // namespace cadence_memplan
