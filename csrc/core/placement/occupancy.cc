#include "core/placement/occupancy.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>

#include "core/common/polled_sort.h"

namespace cadence_memplan {
namespace {

// Up to this many segments, first fit jumps over the conflicts without
// sorting them: each jump passes every segment in the way, and few remain.
constexpr size_t kMaxSegmentsToJump = 32;

// The segments [first, last) of a scratch buffer.
struct Segments {
  Segment* first;
  Segment* last;
  Segment* begin() const { return first; }
  Segment* end() const { return last; }
  size_t size() const { return static_cast<size_t>(last - first); }
};

void SortByBegin(Segments segments) {
  std::sort(segments.begin(), segments.end(),
            [](const Segment& a, const Segment& b) { return a.begin < b.begin; });
}

// First fit among unsorted aligned segments: the lowest offset, 0 or an
// aligned end, where `size` > 0 bytes meet none.
Offset LowestHoleOf(Segments segments, Size size) {
  Offset candidate = 0;
  if (segments.size() <= kMaxSegmentsToJump) {
    // Every offset below the largest end of the segments in the way meets
    // that segment, so the jump skips only offsets that do not fit.
    for (bool moved = true; moved;) {
      moved = false;
      Offset past = candidate;
      for (const Segment& segment : segments) {
        // Ends are never negative, so a segment out of the way counts as 0.
        const Offset in_the_way = -static_cast<Offset>(segment.begin - candidate < size);
        past = std::max(past, segment.end & in_the_way);
      }
      if (past > candidate) {
        candidate = past;
        moved = true;
      }
    }
    return candidate;
  }
  SortByBegin(segments);
  for (const Segment& segment : segments) {
    if (segment.begin - candidate >= size) break;  // Fits before it, and so before every later one.
    candidate = std::max(candidate, segment.end);
  }
  return candidate;
}

// Best fit among unsorted aligned segments: the holes of their union, in order.
SmallestHole SmallestHoleOf(Segments segments, Size size) {
  SortByBegin(segments);
  SmallestHole best;
  Size best_length = 0;
  for (const Segment& segment : segments) {
    const Size length = segment.begin - best.top;
    if (length >= size && (best.begin == kNoOffset || length < best_length)) {
      best.begin = best.top;
      best_length = length;
      // Nothing later is smaller or, if equal, earlier. The tree stops sooner,
      // at the size rounded up to the grain (occupancy_tree.h); here finding
      // the grain would cost a pass over the segments, and the sort above
      // costs more than the scan that stop would shorten.
      if (length == size) break;
    }
    best.top = std::max(best.top, segment.end);
  }
  return best;
}

// The bytes a tensor of `size` at `offset` blocks: [offset, AlignUp(offset +
// size)), or nothing for a zero-size tensor, which first fit ignores and best
// fit never asks the merged segments about (occupancy.h).
Segment AlignedStorage(Size size, Offset offset, Size alignment) {
  if (size == 0) return {offset, offset};
  return {offset, AlignUp(SaturatingAdd(offset, size), alignment)};
}

Segment AlignedStorage(const SlotTable& table, Slot slot, Size alignment) {
  return AlignedStorage(table.slots[slot].size, table.slots[slot].offset, alignment);
}

class IntervalOccupancy final : public MemoryOccupancy {
 public:
  IntervalOccupancy(const SlotTable& table, Size alignment)
      : table_(table), alignment_(alignment), index_(*table.layout) {}

  void Insert(Slot slot) override { index_.Insert(slot, AlignedStorage(table_, slot, alignment_)); }

  // Zero-size tensors take no bytes: first fit ignores them, and best fit
  // asks only where none is (occupancy.h).
  Offset LowestFreeOffset(Slot slot) const override {
    return LowestHoleOf(OverlappingStorage(slot), table_.slots[slot].size);
  }

  SmallestHole FindSmallestHole(Slot slot) const override {
    return SmallestHoleOf(OverlappingStorage(slot), table_.slots[slot].size);
  }

  bool MayCollide(Slot slot, Offset offset) const override {
    const Size size = table_.slots[slot].size;
    bool meets = false;
    index_.ForEachOverlapping(slot, [&](Slot other, const Segment&) {
      meets = meets ||
              StorageOverlaps(offset, size, table_.slots[other].offset, table_.slots[other].size);
    });
    return meets;
  }

  void FindOverlapping(Slot slot, std::vector<Slot>* out) const override {
    index_.FindOverlapping(slot, out);
  }

  void PrefetchLocation(Slot slot) const override { index_.PrefetchBucketHeads(slot); }
  void PrefetchData(Slot slot) const override { index_.PrefetchEntries(slot); }

 private:
  Segments OverlappingStorage(Slot slot) const {
    const size_t count = index_.CollectOverlappingStorage(slot, &buffer_);
    return {buffer_.data(), buffer_.data() + count};
  }

  const SlotTable& table_;
  const Size alignment_;
  IntervalIndex index_;
  mutable std::vector<Segment> buffer_;
};

class TreeOccupancy final : public MemoryOccupancy {
 public:
  TreeOccupancy(const SlotTable& table, Size alignment)
      : table_(table), alignment_(alignment), tree_(table.layout->axis().size()) {}

  void Insert(Slot slot) override {
    const Segment storage = AlignedStorage(table_, slot, alignment_);
    tree_.Insert(table_.layout->span(slot), storage);
    if (index_) {
      index_->Insert(slot, storage);
    } else {
      unindexed_.push_back(slot);
    }
  }

  Offset LowestFreeOffset(Slot slot) const override {
    return tree_.LowestHole(table_.layout->span(slot), table_.slots[slot].size);
  }

  SmallestHole FindSmallestHole(Slot slot) const override {
    return tree_.FindSmallestHole(table_.layout->span(slot), table_.slots[slot].size);
  }

  bool MayCollide(Slot slot, Offset offset) const override {
    return tree_.Intersects(table_.layout->span(slot),
                            AlignedStorage(table_.slots[slot].size, offset, alignment_));
  }

  void FindOverlapping(Slot slot, std::vector<Slot>* out) const override {
    if (!index_) {
      index_.emplace(*table_.layout);
      for (Slot inserted : unindexed_)
        index_->Insert(inserted, AlignedStorage(table_, inserted, alignment_));
      unindexed_ = {};
    }
    index_->FindOverlapping(slot, out);
  }

 private:
  const SlotTable& table_;
  const Size alignment_;
  OccupancyTree tree_;
  // The tensors themselves, for the planner's rare questions that holes
  // cannot answer (occupancy.h): indexed on the first such question, since
  // first fit without zero-size tensors never asks one (keeping the index
  // from the start cost 6% of first fit's time on Y_1).
  mutable std::optional<IntervalIndex> index_;
  mutable std::vector<Slot> unindexed_;  // Inserted before the index was built, in order.
};

class ScanOccupancy final : public MemoryOccupancy {
 public:
  ScanOccupancy(const SlotTable& table, Size alignment) : table_(table), alignment_(alignment) {}

  void Insert(Slot slot) override {
    const SlotTable::SlotState& state = table_.slots[slot];
    // After every equal offset: the new slot has the largest sequence.
    const auto at =
        std::upper_bound(by_offset_.begin(), by_offset_.end(), state.offset,
                         [](Offset offset, const Entry& entry) { return offset < entry.offset; });
    by_offset_.insert(at, {table_.lifetimes[slot], state.offset, state.size, slot});
  }

  Offset LowestFreeOffset(Slot slot) const override {
    const Size size = table_.slots[slot].size;
    const Lifetime& lifetime = table_.lifetimes[slot];
    Offset candidate = 0;
    for (const Entry& entry : by_offset_) {
      if (entry.size == 0 || !lifetime.Overlaps(entry.lifetime)) continue;
      if (entry.offset - candidate >= size) break;  // Fits before it and every later one.
      const Offset end = SaturatingAdd(entry.offset, entry.size);
      if (end > candidate) candidate = AlignUp(end, alignment_);
    }
    return candidate;
  }

  // Upstream's own loop: each gap is measured from the largest aligned end so far.
  SmallestHole FindSmallestHole(Slot slot) const override {
    const Size size = table_.slots[slot].size;
    const Lifetime& lifetime = table_.lifetimes[slot];
    SmallestHole best;
    Size best_length = 0;
    for (const Entry& entry : by_offset_) {
      if (!lifetime.Overlaps(entry.lifetime)) continue;
      const Size gap = entry.offset - best.top;
      if (gap >= size && (best.begin == kNoOffset || gap < best_length)) {
        best.begin = best.top;
        best_length = gap;
      }
      best.top = std::max(best.top, AlignUp(SaturatingAdd(entry.offset, entry.size), alignment_));
    }
    return best;
  }

  bool MayCollide(Slot slot, Offset offset) const override {
    const Size size = table_.slots[slot].size;
    const Lifetime& lifetime = table_.lifetimes[slot];
    return std::any_of(by_offset_.begin(), by_offset_.end(), [&](const Entry& entry) {
      return lifetime.Overlaps(entry.lifetime) &&
             StorageOverlaps(offset, size, entry.offset, entry.size);
    });
  }

  void FindOverlapping(Slot slot, std::vector<Slot>* out) const override {
    const Lifetime& lifetime = table_.lifetimes[slot];
    for (const Entry& entry : by_offset_) {
      if (lifetime.Overlaps(entry.lifetime)) out->push_back(entry.slot);
    }
  }

 private:
  // What a scan reads of each tensor, side by side in (offset, insertion) order.
  struct Entry {
    Lifetime lifetime;
    Offset offset;
    Size size;
    Slot slot;
  };

  const SlotTable& table_;
  const Size alignment_;
  std::vector<Entry> by_offset_;
};

}  // namespace

std::unique_ptr<MemoryOccupancy> MakeOccupancy(Occupancy occupancy, const SlotTable& table,
                                               Size alignment) {
  switch (occupancy) {
    case Occupancy::kInterval: return std::make_unique<IntervalOccupancy>(table, alignment);
    case Occupancy::kTree: return std::make_unique<TreeOccupancy>(table, alignment);
    case Occupancy::kScan: return std::make_unique<ScanOccupancy>(table, alignment);
    case Occupancy::kAuto: break;
  }
  return nullptr;
}

int64_t CountOverlappingPairs(const std::vector<Lifetime>& lifetimes, const Interrupt& interrupt) {
  int64_t count = 0;
  Time first = std::numeric_limits<Time>::max();
  Time last = std::numeric_limits<Time>::min();
  for (const Lifetime& lifetime : lifetimes) {
    if (lifetime.empty()) continue;
    ++count;
    first = std::min(first, lifetime.start);
    last = std::max(last, lifetime.end);
  }
  if (count < 2) return 0;
  // Lifetimes i and j are disjoint when one ends before the other starts, and
  // then exactly one of (i, j), (j, i) has j ending before i starts: count
  // those pairs, by time.
  int64_t disjoint_pairs = 0;
  const auto span = static_cast<uint64_t>(last) - static_cast<uint64_t>(first);
  if (span <= 4 * static_cast<uint64_t>(count)) {
    // Dense node indices, as exported graphs have: histograms over time.
    std::vector<int64_t> starts_at(span + 1, 0), ends_at(span + 1, 0);
    PollEvery poll(interrupt, kItemsPerPoll);
    for (const Lifetime& lifetime : lifetimes) {
      poll.Tick();
      if (lifetime.empty()) continue;
      ++starts_at[lifetime.start - first];
      ++ends_at[lifetime.end - first];
    }
    int64_t ended = 0;  // Lifetimes that end before time t.
    for (uint64_t t = 0; t <= span; ++t) {
      disjoint_pairs += starts_at[t] * ended;
      ended += ends_at[t];
    }
  } else {
    std::vector<Time> starts, ends;
    starts.reserve(count);
    ends.reserve(count);
    for (const Lifetime& lifetime : lifetimes) {
      if (lifetime.empty()) continue;
      starts.push_back(lifetime.start);
      ends.push_back(lifetime.end);
    }
    SortPolled(starts.begin(), starts.end(), std::less<Time>(), interrupt);
    SortPolled(ends.begin(), ends.end(), std::less<Time>(), interrupt);
    size_t ended = 0;
    for (Time start : starts) {
      while (ended < ends.size() && ends[ended] < start) ++ended;
      disjoint_pairs += static_cast<int64_t>(ended);
    }
  }
  // Below n^2 / 2 < 2^63 for any n a machine can hold.
  return count * (count - 1) / 2 - disjoint_pairs;
}

Occupancy ChooseOccupancy(const std::vector<Lifetime>& lifetimes, const Interrupt& interrupt) {
  // The cost model of occupancy.h, in nanoseconds per tensor.
  constexpr double kScanPerTensor = 0.65;
  constexpr double kInterval = 200, kIntervalPerOverlap = 27;
  constexpr double kTree = 1000, kTreePerOverlap = 20, kTreeOverlapsThatCount = 150;
  const auto count = static_cast<double>(lifetimes.size());
  const double scan = kScanPerTensor * count;
  // Scanning this few is cheaper than any index, whatever the overlaps: skip counting them.
  if (scan <= kInterval) return Occupancy::kScan;
  const double k = static_cast<double>(CountOverlappingPairs(lifetimes, interrupt)) / count;
  const double interval = kInterval + kIntervalPerOverlap * k;
  const double tree = kTree + kTreePerOverlap * std::min(k, kTreeOverlapsThatCount);
  if (scan <= interval && scan <= tree) return Occupancy::kScan;
  return interval <= tree ? Occupancy::kInterval : Occupancy::kTree;
}

}  // namespace cadence_memplan
