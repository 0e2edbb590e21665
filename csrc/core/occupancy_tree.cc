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
  // A merge of the few sorted lists by begin. Each run starts at the lowest
  // head and then swallows, list by list and round the lists again while it
  // grows, every segment that begins inside it. A swallowed segment costs
  // one comparison, and most segments are swallowed: on large live sets about
  // five per run.
  cursors_.clear();
  Offset next_begin = std::numeric_limits<Offset>::max();
  for (const SegmentList* list : lists_) {
    cursors_.push_back({list->data(), list->data() + list->size()});
    next_begin = std::min(next_begin, list->front().begin);
  }
  while (!cursors_.empty()) {
    Segment run{next_begin, next_begin};
    next_begin = std::numeric_limits<Offset>::max();
    // Stop once every list in a row has neither grown the run nor been emptied.
    size_t unchanged = 0;
    bool emptied = false;
    for (size_t c = 0; unchanged < cursors_.size(); c = c + 1 == cursors_.size() ? 0 : c + 1) {
      Cursor& cursor = cursors_[c];
      bool grew = false;
      for (; cursor.next != cursor.end && cursor.next->begin <= run.end; ++cursor.next) {
        if (cursor.next->end > run.end) {
          run.end = cursor.next->end;
          grew = true;
        }
      }
      if (grew) {
        // Every other list must be looked at again; this one is done.
        unchanged = 1;
        next_begin = std::numeric_limits<Offset>::max();
      } else {
        ++unchanged;
      }
      if (cursor.next == cursor.end) {
        emptied = true;
      } else {
        next_begin = std::min(next_begin, cursor.next->begin);
      }
    }
    if (emptied) {
      cursors_.erase(std::remove_if(cursors_.begin(), cursors_.end(),
                                    [](const Cursor& c) { return c.next == c.end; }),
                     cursors_.end());
    }
    if (visit(run)) return;
  }
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
    const auto after =
        std::lower_bound(list->begin(), list->end(), segment.begin,
                         [](const Segment& s, Offset begin) { return s.end <= begin; });
    if (after != list->end() && after->begin < segment.end) return true;
  }
  return false;
}

}  // namespace cadence_memplan
