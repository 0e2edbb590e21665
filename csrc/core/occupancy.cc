#include "occupancy.h"

#include <algorithm>
#include <utility>

namespace cadence_memplan {
namespace {

// The gap scan of upstream's best fit over tensors in (offset, insertion)
// order: each gap is measured from the largest aligned end so far.
template <typename Slots>
SmallestHole ScanForSmallestHole(const SlotTable& table, Size alignment, Size size,
                                 const Slots& in_order) {
  SmallestHole best;
  Size best_length = 0;
  for (Slot other : in_order) {
    const Size gap = table.offset[other] - best.top;
    if (gap >= size && (best.begin == kNoOffset || gap < best_length)) {
      best.begin = best.top;
      best_length = gap;
    }
    best.top = std::max(best.top,
                        AlignUp(SaturatingAdd(table.offset[other], table.size[other]), alignment));
  }
  return best;
}

bool StorageMeetsAny(const SlotTable& table, Slot slot, Offset offset,
                     const std::vector<Slot>& others) {
  return std::any_of(others.begin(), others.end(), [&](Slot other) {
    return StorageOverlaps(offset, table.size[slot], table.offset[other], table.size[other]);
  });
}

class IntervalOccupancy final : public MemoryOccupancy {
 public:
  IntervalOccupancy(const SlotTable& table, Size alignment)
      : table_(table), alignment_(alignment), index_(table.layout) {}

  void Insert(Slot slot) override { index_.Insert(slot); }

  Offset LowestFreeOffset(Slot slot) const override {
    const Size size = table_.size[slot];
    Collect(slot);
    storage_.clear();
    for (Slot other : overlapping_) {
      if (table_.size[other] > 0) {
        storage_.emplace_back(table_.offset[other],
                              SaturatingAdd(table_.offset[other], table_.size[other]));
      }
    }
    std::sort(storage_.begin(), storage_.end());
    // Every aligned offset jumped over meets the tensor it jumps over.
    Offset candidate = 0;
    for (const auto& [begin, end] : storage_) {
      if (begin - candidate >= size) break;  // Fits before it, and so before every later one.
      if (end > candidate) candidate = AlignUp(end, alignment_);
    }
    return candidate;
  }

  SmallestHole FindSmallestHole(Slot slot) const override {
    Collect(slot);
    std::sort(overlapping_.begin(), overlapping_.end(), [&](Slot a, Slot b) {
      return table_.offset[a] != table_.offset[b] ? table_.offset[a] < table_.offset[b]
                                                  : table_.sequence[a] < table_.sequence[b];
    });
    return ScanForSmallestHole(table_, alignment_, table_.size[slot], overlapping_);
  }

  bool MayCollide(Slot slot, Offset offset) const override {
    Collect(slot);
    return StorageMeetsAny(table_, slot, offset, overlapping_);
  }

  void FindOverlapping(Slot slot, std::vector<Slot>* out) const override {
    index_.FindOverlapping(table_.layout.lifetime(slot), out);
  }

 private:
  void Collect(Slot slot) const {
    overlapping_.clear();
    FindOverlapping(slot, &overlapping_);
  }

  const SlotTable& table_;
  const Size alignment_;
  IntervalIndex index_;
  mutable std::vector<Slot> overlapping_;
  mutable std::vector<std::pair<Offset, Offset>> storage_;
};

class TreeOccupancy final : public MemoryOccupancy {
 public:
  TreeOccupancy(const SlotTable& table, Size alignment)
      : table_(table), alignment_(alignment), tree_(table.axis), index_(table.layout) {}

  void Insert(Slot slot) override {
    index_.Insert(slot);
    tree_.Insert(table_.layout.lifetime(slot), AlignedStorage(slot, table_.offset[slot]));
  }

  Offset LowestFreeOffset(Slot slot) const override {
    return tree_.LowestHole(table_.layout.lifetime(slot), table_.size[slot]);
  }

  SmallestHole FindSmallestHole(Slot slot) const override {
    return tree_.FindSmallestHole(table_.layout.lifetime(slot), table_.size[slot]);
  }

  bool MayCollide(Slot slot, Offset offset) const override {
    return tree_.Intersects(table_.layout.lifetime(slot), AlignedStorage(slot, offset));
  }

  void FindOverlapping(Slot slot, std::vector<Slot>* out) const override {
    index_.FindOverlapping(table_.layout.lifetime(slot), out);
  }

 private:
  // Empty for a zero-size tensor: first fit ignores those, and best fit does
  // not ask the tree in a memory that holds one.
  Segment AlignedStorage(Slot slot, Offset offset) const {
    if (table_.size[slot] == 0) return {offset, offset};
    return {offset, AlignUp(SaturatingAdd(offset, table_.size[slot]), alignment_)};
  }

  const SlotTable& table_;
  const Size alignment_;
  OccupancyTree tree_;
  IntervalIndex index_;  // For the tensors themselves, when the planner needs them.
};

class ScanOccupancy final : public MemoryOccupancy {
 public:
  ScanOccupancy(const SlotTable& table, Size alignment) : table_(table), alignment_(alignment) {}

  void Insert(Slot slot) override {
    // After every equal offset: the new slot has the largest sequence.
    const auto at = std::upper_bound(
        by_offset_.begin(), by_offset_.end(), table_.offset[slot],
        [&](Offset offset, Slot other) { return offset < table_.offset[other]; });
    by_offset_.insert(at, slot);
  }

  Offset LowestFreeOffset(Slot slot) const override {
    const Size size = table_.size[slot];
    const Lifetime& lifetime = table_.layout.lifetime(slot);
    Offset candidate = 0;
    for (Slot other : by_offset_) {
      if (table_.size[other] == 0 || !lifetime.Overlaps(table_.layout.lifetime(other))) continue;
      if (table_.offset[other] - candidate >= size) break;
      const Offset end = SaturatingAdd(table_.offset[other], table_.size[other]);
      if (end > candidate) candidate = AlignUp(end, alignment_);
    }
    return candidate;
  }

  SmallestHole FindSmallestHole(Slot slot) const override {
    overlapping_.clear();
    FindOverlapping(slot, &overlapping_);  // Already in (offset, insertion) order.
    return ScanForSmallestHole(table_, alignment_, table_.size[slot], overlapping_);
  }

  bool MayCollide(Slot slot, Offset offset) const override {
    overlapping_.clear();
    FindOverlapping(slot, &overlapping_);
    return StorageMeetsAny(table_, slot, offset, overlapping_);
  }

  void FindOverlapping(Slot slot, std::vector<Slot>* out) const override {
    const Lifetime& lifetime = table_.layout.lifetime(slot);
    for (Slot other : by_offset_) {
      if (lifetime.Overlaps(table_.layout.lifetime(other))) out->push_back(other);
    }
  }

 private:
  const SlotTable& table_;
  const Size alignment_;
  std::vector<Slot> by_offset_;  // (offset, insertion) order.
  mutable std::vector<Slot> overlapping_;
};

}  // namespace

std::unique_ptr<MemoryOccupancy> MakeOccupancy(Occupancy occupancy, const SlotTable& table,
                                               Size alignment) {
  switch (occupancy) {
    case Occupancy::kIntervalIndex:
      return std::make_unique<IntervalOccupancy>(table, alignment);
    case Occupancy::kSegmentTree:
      return std::make_unique<TreeOccupancy>(table, alignment);
    case Occupancy::kScan:
      return std::make_unique<ScanOccupancy>(table, alignment);
    case Occupancy::kAuto:
      break;
  }
  return nullptr;
}

Occupancy ChooseOccupancy(const std::vector<Lifetime>& lifetimes) {
  std::vector<Time> starts, ends;
  starts.reserve(lifetimes.size());
  ends.reserve(lifetimes.size());
  for (const Lifetime& lifetime : lifetimes) {
    if (lifetime.empty()) continue;
    starts.push_back(lifetime.start);
    ends.push_back(lifetime.end);
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  // Lifetime j overlaps i exactly when j starts no later than i ends and does
  // not end before i starts; i itself is one of them.
  int64_t overlap_ends = 0;  // Both ends of each pair: twice the pair count.
  for (const Lifetime& lifetime : lifetimes) {
    if (lifetime.empty()) continue;
    const auto started = std::upper_bound(starts.begin(), starts.end(), lifetime.end) -
                         starts.begin();
    const auto ended = std::lower_bound(ends.begin(), ends.end(), lifetime.start) - ends.begin();
    overlap_ends += started - ended - 1;
  }
  const auto count = static_cast<int64_t>(starts.size());
  return overlap_ends / 2 >= kSegmentTreeMinAverageOverlaps * count ? Occupancy::kSegmentTree
                                                                    : Occupancy::kIntervalIndex;
}

}  // namespace cadence_memplan
