// The exact search's problem in units (exact_search.h proves the reduction):
// the tensors that take part in the search as items of whole units, time cut
// into sections at every distinct end of a lifetime (lifetimes are inclusive
// [start, end]), who is alive in each section, the units that obstacles
// forbid each item and cover whole in each section, and the lower bound they
// give. Built once per FitInCapacity or MinimizeBufsize call and then only
// read, by every member of every decision, on any thread.
//
// Also the small tables the search runs on: Rows (rows of a table stored back
// to back) and MaxTree (add to a range of sections, the largest of a range).
// What the search asks at every node (ForEachAliveWith, LowestFree,
// CoveredAbove, MaxTree's Add and Max) is defined here, inline, so that the
// search's translation unit can inline it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/common/types.h"
#include "core/search/exact_search.h"

namespace cadence_memplan {
namespace detail {

using Unit = int64_t;         // An offset or a size in multiples of the alignment.
using ItemIndex = int32_t;    // A tensor that takes part in the search.
using SectionIndex = int32_t;

inline constexpr Unit kNoUnit = -1;
inline constexpr Unit kNoLimit = std::numeric_limits<Unit>::max();
inline constexpr ItemIndex kNoItem = -1;

inline Unit CeilDiv(Size value, Size divisor) {
  return value / divisor + (value % divisor != 0 ? 1 : 0);
}

// Rows of a table stored back to back: row r is [begin[r], begin[r + 1]).
template <typename T>
class Rows {
 public:
  void Add(T value) { data_.push_back(value); }
  void EndRow() { begin_.push_back(static_cast<int64_t>(data_.size())); }
  const T* begin(size_t row) const { return data_.data() + begin_[row]; }
  const T* end(size_t row) const { return data_.data() + begin_[row + 1]; }
  bool empty(size_t row) const { return begin_[row] == begin_[row + 1]; }
  // Filling in any order instead of row by row: the rows' sizes first.
  void Reserve(const std::vector<int64_t>& sizes) {
    begin_.assign(sizes.size() + 1, 0);
    for (size_t r = 0; r < sizes.size(); ++r) begin_[r + 1] = begin_[r] + sizes[r];
    data_.resize(static_cast<size_t>(begin_.back()));
    next_.assign(begin_.begin(), begin_.end() - 1);
  }
  void Put(size_t row, T value) { data_[static_cast<size_t>(next_[row]++)] = value; }

 private:
  std::vector<int64_t> begin_{0};
  std::vector<T> data_;
  std::vector<int64_t> next_;  // While filling with Put.
};

// Units [first, last], inclusive.
struct UnitRange {
  Unit first = 0;
  Unit last = 0;
};

struct Item {
  TensorIndex tensor = 0;
  Unit units = 0;
  Size bytes = 0;
  Lifetime lifetime;
  SectionIndex lo = 0, hi = 0;  // The sections it is alive in: [lo, hi).
};

// The problem in units (exact_search.h): the tensors that take part in the
// search, the sections and who is alive in each, and what obstacles forbid.
class UnitProblem {
 public:
  explicit UnitProblem(const PackingProblem& problem);

  // Calls f(j) for every other item alive with item i: those alive in its
  // first section, and those whose first section comes later within its own.
  template <typename F>
  void ForEachAliveWith(ItemIndex i, F f) const {
    const Item& item = items[i];
    for (const ItemIndex* j = members.begin(item.lo); j != members.end(item.lo); ++j) {
      if (*j != i) f(*j);
    }
    for (int64_t k = first_by_lo[item.lo + 1]; k < first_by_lo[item.hi]; ++k) f(by_lo[k]);
  }

  // The lowest k >= from outside item i's forbidden ranges.
  Unit LowestFree(ItemIndex i, Unit from) const {
    const UnitRange* first = forbidden.begin(i);
    const UnitRange* last = forbidden.end(i);
    const UnitRange* r =
        std::lower_bound(first, last, from, [](const UnitRange& x, Unit k) { return x.last < k; });
    return r != last && r->first <= from ? SaturatingAdd(r->last, 1) : from;
  }

  // Units in [from, capacity) that obstacles alive in section s cover whole.
  Unit CoveredAbove(SectionIndex s, Unit from, Unit capacity) const {
    Unit sum = 0;
    for (const UnitRange* r = covered.begin(s); r != covered.end(s); ++r) {
      const Unit first = std::max(r->first, from);
      const Unit last = std::min(r->last, capacity - 1);
      if (first <= last) sum += last - first + 1;
    }
    return sum;
  }

  // The highest end of the items at `offsets` (units per item; 0 for none):
  // their part of a bufsize, lone tensors and obstacles apart.
  Unit ItemsTop(const std::vector<Unit>& offsets) const {
    Unit top = 0;
    for (size_t i = 0; i < items.size(); ++i) top = std::max(top, offsets[i] + items[i].units);
    return top;
  }

  SectionIndex SectionAt(Time start) const {
    return static_cast<SectionIndex>(
        std::lower_bound(section_times.begin(), section_times.end(), start) -
        section_times.begin());
  }

  // The largest multiple of the grain at or below k (k >= 0): a capacity of
  // k units admits exactly the packings of items that Snap(k) admits.
  Unit Snap(Unit k) const { return k / grain * grain; }
  // The smallest multiple of the grain above k (k >= -1), saturating.
  Unit GrainAbove(Unit k) const {
    const Unit snapped = k < 0 ? 0 : Snap(k);
    return k < 0 ? 0 : snapped > kNoLimit - grain ? kNoLimit : snapped + grain;
  }

  Size alignment;
  // The grain: the greatest common divisor of the items' units when no
  // obstacle is alive, else 1. Then every item's top in a settled packing
  // (exact_search.h) is a multiple of it: each item sits at 0 or at the top
  // of an item listed before it, so by induction every offset is a sum of
  // item units. Any packing settles without a larger bufsize, so (1) the
  // items fit within k units iff they fit within Snap(k) (the search probes
  // Snap(k), whose pruning is tighter), and (2) when they do not fit within
  // k, every packing's items reach GrainAbove(k), which MinimizeBufsize's
  // lower bound then takes. Lone tensors and obstacles that are never alive
  // count apart (lone_units, obstacle_top): a bufsize is the larger of them
  // and the items' top.
  Unit grain = 1;
  std::vector<Item> items;
  std::vector<TensorIndex> lone;  // Zero-size or never alive: at offset 0.
  Unit lone_units = 0;            // The largest of them.
  Unit obstacle_top = 0;          // The largest aligned end of an obstacle.
  std::vector<Obstacle> obstacles;
  std::vector<Time> section_times;   // Section s is the time section_times[s].
  Rows<ItemIndex> members;           // Per section: the items alive then.
  std::vector<ItemIndex> by_lo;      // Items by first section.
  std::vector<int64_t> first_by_lo;  // Per section s: the first in by_lo with lo >= s.
  Rows<UnitRange> forbidden;         // Per item: merged, sorted.
  Rows<UnitRange> covered;           // Per section: merged, sorted.
  bool has_covered = false;
  Unit lower_bound = 0;  // In units (PackingResult::lower_bound).
  int64_t entries = 0;   // Of `members`: how many sections each item spans, summed.
  bool searchable = false;

 private:
  // The constructor's steps, in its order (unit_problem.cc).
  void SplitTensors(const PackingProblem& problem);
  void CutSections();
  void IndexByLo();
  std::vector<Unit> SectionTotals() const;
  void CoverObstacles();
  void ForbidObstacles();
  void Bound(const std::vector<Unit>& totals);
  void ListMembers();
};

// Per section: add to a range, the largest value of a range.
class MaxTree {
 public:
  explicit MaxTree(const std::vector<Unit>& values) : size_(values.size()) {
    max_.assign(4 * std::max<size_t>(1, size_), 0);
    add_.assign(max_.size(), 0);
    if (size_ > 0) Build(1, 0, size_, values);
  }
  void Add(size_t lo, size_t hi, Unit delta) {
    if (lo < hi) Add(1, 0, size_, lo, hi, delta);
  }
  Unit Max(size_t lo, size_t hi) const {
    return lo < hi ? Max(1, 0, size_, lo, hi) : std::numeric_limits<Unit>::min();
  }

 private:
  void Build(size_t node, size_t lo, size_t hi, const std::vector<Unit>& values) {
    if (hi - lo == 1) {
      max_[node] = values[lo];
      return;
    }
    const size_t mid = (lo + hi) / 2;
    Build(2 * node, lo, mid, values);
    Build(2 * node + 1, mid, hi, values);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]);
  }
  void Add(size_t node, size_t lo, size_t hi, size_t from, size_t to, Unit delta) {
    if (to <= lo || hi <= from) return;
    if (from <= lo && hi <= to) {
      max_[node] += delta;
      add_[node] += delta;
      return;
    }
    const size_t mid = (lo + hi) / 2;
    Add(2 * node, lo, mid, from, to, delta);
    Add(2 * node + 1, mid, hi, from, to, delta);
    max_[node] = std::max(max_[2 * node], max_[2 * node + 1]) + add_[node];
  }
  Unit Max(size_t node, size_t lo, size_t hi, size_t from, size_t to) const {
    if (to <= lo || hi <= from) return std::numeric_limits<Unit>::min();
    if (from <= lo && hi <= to) return max_[node];
    const size_t mid = (lo + hi) / 2;
    return std::max(Max(2 * node, lo, mid, from, to), Max(2 * node + 1, mid, hi, from, to)) +
           add_[node];
  }

  size_t size_;
  std::vector<Unit> max_;  // Of the node's range, its own pending add included.
  std::vector<Unit> add_;  // Added to the whole range, not yet to the children.
};

}  // namespace detail
}  // namespace cadence_memplan
