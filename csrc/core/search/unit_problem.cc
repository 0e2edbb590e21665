#include "core/search/unit_problem.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace cadence_memplan {
namespace detail {
namespace {

// Sorts ranges and merges those that overlap or touch, so that a value just
// past a range is outside every range.
std::vector<UnitRange> Merged(std::vector<UnitRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const UnitRange& a, const UnitRange& b) { return a.first < b.first; });
  std::vector<UnitRange> merged;
  for (const UnitRange& r : ranges) {
    if (!merged.empty() && r.first <= SaturatingAdd(merged.back().last, 1)) {
      merged.back().last = std::max(merged.back().last, r.last);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

}  // namespace

UnitProblem::UnitProblem(const PackingProblem& problem) : alignment(problem.alignment) {
  SplitTensors(problem);
  CutSections();
  IndexByLo();
  const std::vector<Unit> totals = SectionTotals();
  CoverObstacles();
  ForbidObstacles();
  Bound(totals);
  if (searchable) ListMembers();
}

// Items, lone tensors (zero-size or never alive) and the obstacles that
// take bytes.
void UnitProblem::SplitTensors(const PackingProblem& problem) {
  const Size a = alignment;
  for (size_t t = 0; t < problem.tensors.size(); ++t) {
    const Tensor& tensor = problem.tensors[t];
    const Unit units = CeilDiv(tensor.size, a);
    if (tensor.size == 0 || tensor.lifetime.empty()) {
      lone.push_back(static_cast<TensorIndex>(t));
      lone_units = std::max(lone_units, units);
      continue;
    }
    items.push_back({static_cast<TensorIndex>(t), units, tensor.size, tensor.lifetime, 0, 0});
  }
  for (const Obstacle& o : problem.obstacles) {
    if (o.tensor.size == 0) continue;
    obstacle_top = std::max(obstacle_top, AlignUp(SaturatingAdd(o.offset, o.tensor.size), a) / a);
    if (!o.tensor.lifetime.empty()) obstacles.push_back(o);
  }
}

// Sections at the items' ends; each item's sections, and whether the search's
// lists fit in memory.
void UnitProblem::CutSections() {
  for (const Item& item : items) section_times.push_back(item.lifetime.end);
  std::sort(section_times.begin(), section_times.end());
  section_times.erase(std::unique(section_times.begin(), section_times.end()), section_times.end());
  const auto section_count = static_cast<SectionIndex>(section_times.size());
  for (Item& item : items) {
    item.lo = SectionAt(item.lifetime.start);
    item.hi = static_cast<SectionIndex>(
        std::upper_bound(section_times.begin(), section_times.end(), item.lifetime.end) -
        section_times.begin());
    entries += item.hi - item.lo;
  }
  searchable = SearchBytesEstimate(entries, static_cast<int64_t>(items.size()), section_count) +
                   kSearchMembers * kMaxUndoBytes <=
               kMaxSearchBytes;
}

// Items by first section; first_by_lo[s]: where those starting at s begin.
void UnitProblem::IndexByLo() {
  const auto section_count = static_cast<SectionIndex>(section_times.size());
  by_lo.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) by_lo[i] = static_cast<ItemIndex>(i);
  std::stable_sort(by_lo.begin(), by_lo.end(),
                   [&](ItemIndex x, ItemIndex y) { return items[x].lo < items[y].lo; });
  first_by_lo.assign(section_count + 1, 0);
  for (const Item& item : items) ++first_by_lo[item.lo + 1];
  for (SectionIndex s = 0; s < section_count; ++s) first_by_lo[s + 1] += first_by_lo[s];
}

// Units alive in each section (saturating: sizes may add up past 2^63).
std::vector<Unit> UnitProblem::SectionTotals() const {
  std::vector<Unit> totals(section_times.size(), 0);
  for (const Item& item : items) {
    for (SectionIndex s = item.lo; s < item.hi; ++s) {
      totals[s] = SaturatingAdd(totals[s], item.units);
    }
  }
  return totals;
}

// The units that obstacles alive in each section cover whole.
void UnitProblem::CoverObstacles() {
  const Size a = alignment;
  const auto section_count = static_cast<SectionIndex>(section_times.size());
  std::vector<std::vector<UnitRange>> covered_lists(section_count);
  for (const Obstacle& o : obstacles) {
    const Unit first = CeilDiv(o.offset, a);
    const Unit last = SaturatingAdd(o.offset, o.tensor.size) / a - 1;
    if (first > last) continue;
    for (SectionIndex s = SectionAt(o.tensor.lifetime.start);
         s < section_count && section_times[s] <= o.tensor.lifetime.end; ++s) {
      covered_lists[s].push_back({first, last});
    }
  }
  for (SectionIndex s = 0; s < section_count; ++s) {
    for (const UnitRange& r : Merged(std::move(covered_lists[s]))) covered.Add(r);
    covered.EndRow();
    if (!covered.empty(s)) has_covered = true;
  }
}

// What each obstacle forbids each tensor alive with it.
void UnitProblem::ForbidObstacles() {
  const Size a = alignment;
  for (const Item& item : items) {
    std::vector<UnitRange> ranges;
    for (const Obstacle& o : obstacles) {
      if (!o.tensor.lifetime.Overlaps(item.lifetime)) continue;
      const Offset below = o.offset - item.bytes;  // >= -2^62: no overflow.
      const Unit first = below < 0 ? 0 : below / a + 1;
      const Unit last = CeilDiv(SaturatingAdd(o.offset, o.tensor.size), a) - 1;
      if (first <= last) ranges.push_back({first, last});
    }
    for (const UnitRange& r : Merged(std::move(ranges))) forbidden.Add(r);
    forbidden.EndRow();
  }
}

// The grain (unit_problem.h): with no obstacle alive, the items' tops in a
// settled packing are sums of item units. (The bound below is then a
// multiple of it already: a sum of units alive at once, or one item's.)
void UnitProblem::Bound(const std::vector<Unit>& totals) {
  grain = 0;
  for (const Item& item : items) grain = std::gcd(grain, item.units);
  if (grain == 0 || !obstacles.empty()) grain = 1;
  lower_bound = std::max(lone_units, obstacle_top);
  for (SectionIndex s = 0; s < static_cast<SectionIndex>(section_times.size()); ++s) {
    Unit covered_units = 0;
    for (const UnitRange* r = covered.begin(s); r != covered.end(s); ++r) {
      covered_units = SaturatingAdd(covered_units, r->last - r->first + 1);
    }
    lower_bound = std::max(lower_bound, SaturatingAdd(totals[s], covered_units));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    lower_bound = std::max(lower_bound,
                           SaturatingAdd(LowestFree(static_cast<ItemIndex>(i), 0), items[i].units));
  }
}

// Who is alive in each section, in item order.
void UnitProblem::ListMembers() {
  const auto section_count = static_cast<SectionIndex>(section_times.size());
  std::vector<int64_t> fill(section_count + 1, 0);
  for (const Item& item : items) {
    ++fill[item.lo + 1];
    if (item.hi < section_count) --fill[item.hi + 1];
  }
  std::vector<int64_t> counts(section_count, 0);
  int64_t alive = 0;
  for (SectionIndex s = 0; s < section_count; ++s) {
    alive += fill[s + 1];
    counts[s] = alive;
  }
  members.Reserve(counts);
  for (size_t i = 0; i < items.size(); ++i) {
    for (SectionIndex s = items[i].lo; s < items[i].hi; ++s) {
      members.Put(s, static_cast<ItemIndex>(i));
    }
  }
}

}  // namespace detail
}  // namespace cadence_memplan
