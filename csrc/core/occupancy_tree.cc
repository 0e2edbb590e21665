#include "occupancy_tree.h"

#include <algorithm>

namespace cadence_memplan {

TimeAxis::TimeAxis(const std::vector<Lifetime>& lifetimes) {
  starts_.reserve(lifetimes.size());
  for (const Lifetime& lifetime : lifetimes) {
    if (!lifetime.empty()) starts_.push_back(lifetime.start);
  }
  std::sort(starts_.begin(), starts_.end());
  starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
}

std::pair<int64_t, int64_t> TimeAxis::Leaves(const Lifetime& lifetime) const {
  const auto first = std::lower_bound(starts_.begin(), starts_.end(), lifetime.start);
  const auto past_last = std::upper_bound(first, starts_.end(), lifetime.end);
  return {first - starts_.begin(), (past_last - starts_.begin()) - 1};
}

// The tree is the bottom-up segment tree over leaf_count leaves (node 1 is the
// root, leaf i is node leaf_count + i, the parent of v is v / 2). Its canonical
// decomposition of a leaf range is at most 2 log T nodes whose leaves are
// exactly the range, for any leaf count.
namespace {

template <typename Visit>
void ForCanonicalNodes(int64_t leaf_count, int64_t first, int64_t last, Visit&& visit) {
  for (int64_t low = first + leaf_count, high = last + leaf_count + 1; low < high;
       low /= 2, high /= 2) {
    if (low & 1) visit(low++);
    if (high & 1) visit(--high);
  }
}

}  // namespace

void OccupancyTree::AddToList(SegmentList* list, Segment segment) {
  // The first segment that ends at or after the new one begins: it and the
  // ones after it that begin no later than the new one ends merge with it.
  auto first = std::lower_bound(list->begin(), list->end(), segment.begin,
                                [](const Segment& s, Offset begin) { return s.end < begin; });
  auto past = first;
  while (past != list->end() && past->begin <= segment.end) {
    segment.begin = std::min(segment.begin, past->begin);
    segment.end = std::max(segment.end, past->end);
    ++past;
  }
  if (first == past) {
    list->insert(first, segment);
  } else {
    *first = segment;
    list->erase(first + 1, past);
  }
}

void OccupancyTree::Insert(const Lifetime& lifetime, Segment segment) {
  if (lifetime.empty() || segment.begin >= segment.end) return;
  const int64_t leaf_count = axis_->leaf_count();
  if (covers_.empty()) {
    covers_.resize(2 * leaf_count);
    starts_.resize(2 * leaf_count);
  }
  const auto [first, last] = axis_->Leaves(lifetime);
  ForCanonicalNodes(leaf_count, first, last,
                    [&](int64_t node) { AddToList(&covers_[node], segment); });
  // The root's starts_ would be read only by a query over all leaves after
  // leaf 0, which includes none: skip it.
  for (int64_t node = first + leaf_count; node > 1; node /= 2) AddToList(&starts_[node], segment);
}

void OccupancyTree::GatherLists(const Lifetime& lifetime) const {
  lists_.clear();
  if (covers_.empty() || lifetime.empty()) return;
  const int64_t leaf_count = axis_->leaf_count();
  const auto [first, last] = axis_->Leaves(lifetime);
  for (int64_t node = first + leaf_count; node >= 1; node /= 2) {
    if (!covers_[node].empty()) lists_.push_back(&covers_[node]);
  }
  ForCanonicalNodes(leaf_count, first + 1, last, [&](int64_t node) {
    if (!starts_[node].empty()) lists_.push_back(&starts_[node]);
  });
}

template <typename Visit>
void OccupancyTree::VisitUnion(Visit&& visit) const {
  // A k-way merge of the lists by begin, with a min-heap of cursors.
  const auto later = [](const Cursor& a, const Cursor& b) { return a.next->begin > b.next->begin; };
  heap_.clear();
  for (const SegmentList* list : lists_) heap_.push_back({list->data(), list->data() + list->size()});
  std::make_heap(heap_.begin(), heap_.end(), later);
  bool have_run = false;
  Segment run;
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    Cursor& cursor = heap_.back();
    const Segment segment = *cursor.next++;
    if (cursor.next == cursor.end) {
      heap_.pop_back();
    } else {
      std::push_heap(heap_.begin(), heap_.end(), later);
    }
    if (have_run && segment.begin <= run.end) {
      run.end = std::max(run.end, segment.end);
      continue;
    }
    if (have_run && visit(run)) return;
    run = segment;
    have_run = true;
  }
  if (have_run) visit(run);
}

Offset OccupancyTree::LowestHole(const Lifetime& lifetime, Size size) const {
  GatherLists(lifetime);
  Offset below = 0;  // End of the runs visited so far.
  VisitUnion([&](const Segment& run) {
    if (run.begin - below >= size) return true;
    below = run.end;
    return false;
  });
  return below;
}

SmallestHole OccupancyTree::FindSmallestHole(const Lifetime& lifetime, Size size) const {
  GatherLists(lifetime);
  SmallestHole best;
  Size best_length = 0;
  VisitUnion([&](const Segment& run) {
    const Size length = run.begin - best.top;
    if (length >= size && (best.begin == kNoOffset || length < best_length)) {
      best.begin = best.top;
      best_length = length;
    }
    best.top = run.end;
    return false;
  });
  return best;
}

bool OccupancyTree::Intersects(const Lifetime& lifetime, Segment segment) const {
  GatherLists(lifetime);
  for (const SegmentList* list : lists_) {
    const auto after = std::lower_bound(
        list->begin(), list->end(), segment.begin,
        [](const Segment& s, Offset begin) { return s.end <= begin; });
    if (after != list->end() && after->begin < segment.end) return true;
  }
  return false;
}

}  // namespace cadence_memplan
