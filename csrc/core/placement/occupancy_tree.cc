#include "core/placement/occupancy_tree.h"

#include <algorithm>
#include <limits>

#include "core/common/branch_free.h"

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

// The head of an exhausted list: above every segment's begin, since a
// segment's storage ends within its memory.
constexpr Offset kExhausted = std::numeric_limits<Offset>::max();

}  // namespace

void OccupancyTree::AddToList(SegmentList* list, Segment segment) {
  // The first segment that ends at or after the new one begins: it and the
  // ones after it that begin no later than the new one ends merge with it.
  auto first = list->begin() + static_cast<std::ptrdiff_t>(CountBelow(
                                   list->data(), list->size(),
                                   [&](const Segment& s) { return s.end < segment.begin; }));
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

void OccupancyTree::Insert(const AxisSpan& span, Segment segment) {
  if (span.empty() || segment.begin >= segment.end) return;
  if (nodes_.empty()) {
    // One by one: a copied pmr vector would take the default resource.
    nodes_.reserve(static_cast<size_t>(2 * leaf_count_));
    for (int64_t node = 0; node < 2 * leaf_count_; ++node) {
      nodes_.push_back({SegmentList(&arena_), SegmentList(&arena_)});
    }
  }
  bounds_ |= segment.begin | segment.end;
  ForCanonicalNodes(leaf_count_, span.first, span.last,
                    [&](int64_t node) { AddToList(&nodes_[node].covers, segment); });
  // The root's starts would be read only by a query over all leaves after
  // leaf 0, which includes none: skip it.
  for (int64_t node = span.first + leaf_count_; node > 1; node /= 2) {
    AddToList(&nodes_[node].starts, segment);
  }
}

void OccupancyTree::GatherLists(const AxisSpan& span) const {
  lists_.clear();
  if (nodes_.empty() || span.empty()) return;
  for (int64_t node = span.first + leaf_count_; node >= 1; node /= 2) {
    if (!nodes_[node].covers.empty()) lists_.push_back(&nodes_[node].covers);
  }
  ForCanonicalNodes(leaf_count_, span.first + 1, span.last, [&](int64_t node) {
    if (!nodes_[node].starts.empty()) lists_.push_back(&nodes_[node].starts);
  });
}

template <typename Visit>
void OccupancyTree::VisitUnion(Visit&& visit) const {
  // A merge of the few sorted lists by begin, over a tournament tree of their
  // heads that keeps the loser at each node: when the winner's head moves, it
  // climbs its leaf's path with one comparison and one swap per level, and
  // no branch (a heap's sift-down mispredicts about once per level). The
  // winning list swallows, in a row, its segments that begin inside the
  // current run, so the tree moves once per list and run, not per segment.
  const uint32_t count = static_cast<uint32_t>(lists_.size());
  if (count == 0) return;
  cursors_.resize(count);
  // Node 1 is the root, list i is leaf count + i, and node v's parent is
  // v / 2: a complete binary tree for any count. Built bottom-up: each
  // node's winner moves on to its parent, its loser stays.
  winners_.resize(2 * count);
  losers_.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const Segment* first = lists_[i]->data();
    cursors_[i] = {first, first + lists_[i]->size()};
    winners_[count + i] = {first->begin, i};
  }
  for (uint32_t v = count - 1; v >= 1; --v) {
    const Head& left = winners_[2 * v];
    const Head& right = winners_[2 * v + 1];
    const bool left_wins = left.begin <= right.begin;
    winners_[v] = left_wins ? left : right;
    losers_[v] = left_wins ? right : left;
  }
  Head* losers = losers_.data();
  Head winner = winners_[1];  // With one list, its leaf is the root.

  Segment run{winner.begin, winner.begin};
  while (winner.begin != kExhausted) {
    if (winner.begin > run.end) {
      if (visit(run)) return;
      run = {winner.begin, winner.begin};
    }
    Cursor& cursor = cursors_[winner.list];
    const Segment* next = cursor.next;
    do {
      run.end = std::max(run.end, next->end);
      ++next;
    } while (next != cursor.end && next->begin <= run.end);
    cursor.next = next;
    // The swap is a coin toss, so it is done with masks: compilers turn a
    // conditional swap of two fields into a branch.
    Offset begin = next == cursor.end ? kExhausted : next->begin;
    uint32_t list = winner.list;
    for (uint32_t v = (count + list) / 2; v >= 1; v /= 2) {
      Head& loser = losers[v];
      const Offset swap = -static_cast<Offset>(loser.begin < begin);  // All ones, or zero.
      const Offset begins = (begin ^ loser.begin) & swap;
      const uint32_t lists = (list ^ loser.list) & static_cast<uint32_t>(swap);
      loser.begin ^= begins;
      begin ^= begins;
      loser.list ^= lists;
      list ^= lists;
    }
    winner = {begin, list};
  }
  visit(run);
}

Offset OccupancyTree::LowestHole(const AxisSpan& span, Size size) const {
  GatherLists(span);
  Offset below = 0;  // End of the runs visited so far.
  VisitUnion([&](const Segment& run) {
    if (run.begin - below >= size) return true;
    below = run.end;
    return false;
  });
  return below;
}

SmallestHole OccupancyTree::FindSmallestHole(const AxisSpan& span, Size size) const {
  GatherLists(span);
  SmallestHole best;
  if (lists_.empty()) return best;  // Also before any insertion, with bounds_ still 0.
  Size best_length = 0;
  // No hole that holds `size` is shorter than `size` rounded up to the grain.
  const Size shortest = AlignUp(size, bounds_ & -bounds_);
  VisitUnion([&](const Segment& run) {
    const Size length = run.begin - best.top;
    if (length >= size && (best.begin == kNoOffset || length < best_length)) {
      best.begin = best.top;
      best_length = length;
      // No later hole is smaller, and an equal one is not earlier.
      if (length == shortest) return true;
    }
    best.top = run.end;
    return false;
  });
  return best;
}

bool OccupancyTree::Intersects(const AxisSpan& span, Segment segment) const {
  GatherLists(span);
  for (const SegmentList* list : lists_) {
    const size_t after = CountBelow(list->data(), list->size(),
                                    [&](const Segment& s) { return s.end <= segment.begin; });
    if (after != list->size() && (*list)[after].begin < segment.end) return true;
  }
  return false;
}

}  // namespace cadence_memplan
