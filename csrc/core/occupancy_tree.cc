#include "occupancy_tree.h"

#include <algorithm>
#include <limits>

namespace cadence_memplan {

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

// Restores the min-heap order by head begin of cursors[0..count) after the
// root's head moved up.
template <typename Cursor>
void SiftDown(Cursor* cursors, size_t count) {
  const Cursor moving = cursors[0];
  size_t at = 0;
  for (size_t child = 1; child < count; child = 2 * at + 1) {
    if (child + 1 < count && cursors[child + 1].begin < cursors[child].begin) ++child;
    if (moving.begin <= cursors[child].begin) break;
    cursors[at] = cursors[child];
    at = child;
  }
  cursors[at] = moving;
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
  const int64_t leaf_count = axis_->size();
  if (covers_.empty()) {
    covers_.resize(2 * leaf_count);
    starts_.resize(2 * leaf_count);
  }
  const auto [first, last] = axis_->Span(lifetime);
  ForCanonicalNodes(leaf_count, first, last,
                    [&](int64_t node) { AddToList(&covers_[node], segment); });
  // The root's starts_ would be read only by a query over all leaves after
  // leaf 0, which includes none: skip it.
  for (int64_t node = first + leaf_count; node > 1; node /= 2) AddToList(&starts_[node], segment);
}

void OccupancyTree::GatherLists(const Lifetime& lifetime) const {
  lists_.clear();
  if (covers_.empty() || lifetime.empty()) return;
  const int64_t leaf_count = axis_->size();
  const auto [first, last] = axis_->Span(lifetime);
  for (int64_t node = first + leaf_count; node >= 1; node /= 2) {
    if (!covers_[node].empty()) lists_.push_back(&covers_[node]);
  }
  ForCanonicalNodes(leaf_count, first + 1, last, [&](int64_t node) {
    if (!starts_[node].empty()) lists_.push_back(&starts_[node]);
  });
}

template <typename Visit>
void OccupancyTree::VisitUnion(Visit&& visit) const {
  // A merge of the few sorted lists by begin, over a min-heap of their heads.
  // The list at the top swallows, in a row, its segments that begin inside
  // the current run, so the heap moves once per list and run, not per segment.
  cursors_.clear();
  for (const SegmentList* list : lists_) {
    const Segment* first = list->data();
    cursors_.push_back({first->begin, first, first + list->size()});
  }
  size_t live = cursors_.size();
  if (live == 0) return;
  std::make_heap(cursors_.begin(), cursors_.end(),
                 [](const Cursor& a, const Cursor& b) { return a.begin > b.begin; });
  Cursor* heap = cursors_.data();
  Segment run{heap[0].begin, heap[0].begin};
  while (live > 0) {
    Cursor& top = heap[0];
    if (top.begin > run.end) {
      if (visit(run)) return;
      run = {top.begin, top.begin};
    }
    const Segment* next = top.next;
    do {
      run.end = std::max(run.end, next->end);
      ++next;
    } while (next != top.end && next->begin <= run.end);
    if (next == top.end) {
      top = heap[--live];
    } else {
      top.next = next;
      top.begin = next->begin;
    }
    SiftDown(heap, live);
  }
  visit(run);
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
      // No later hole is smaller, and an equal one is not earlier.
      if (length == size) return true;
    }
    best.top = run.end;
    return false;
  });
  return best;
}

bool OccupancyTree::Intersects(const Lifetime& lifetime, Segment segment) const {
  GatherLists(lifetime);
  for (const SegmentList* list : lists_) {
    const auto after =
        std::lower_bound(list->begin(), list->end(), segment.begin,
                         [](const Segment& s, Offset begin) { return s.end <= begin; });
    if (after != list->end() && after->begin < segment.end) return true;
  }
  return false;
}

}  // namespace cadence_memplan
