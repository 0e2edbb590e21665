#include "core/exir/free_object_tree.h"

#include <algorithm>

#include "core/common/branch_free.h"

namespace cadence_memplan {
namespace {

using Runs = std::vector<Lifetime>;

// A run ending at `end` stops short of `start` by at least one time, so the
// two neither overlap nor touch. (end < start rules out the overflow.)
bool EndsBefore(Time end, Time start) { return end < start && end + 1 < start; }

// Adds `lifetime` to `runs`, merging the runs it overlaps or touches.
void AddRun(Runs* runs, Lifetime lifetime) {
  auto first =
      std::lower_bound(runs->begin(), runs->end(), lifetime.start,
                       [](const Lifetime& run, Time start) { return EndsBefore(run.end, start); });
  auto past = first;
  while (past != runs->end() && !EndsBefore(lifetime.end, past->start)) {
    lifetime.start = std::min(lifetime.start, past->start);
    lifetime.end = std::max(lifetime.end, past->end);
    ++past;
  }
  if (first == past) {
    runs->insert(first, lifetime);
  } else {
    *first = lifetime;
    runs->erase(first + 1, past);
  }
}

// The first run of [first, last) that ends at or after `start`. Every query
// and every climb searches nodes' runs like this, at unpredictable places:
// branch-free.
Runs::const_iterator FirstEndingFrom(Runs::const_iterator first, Runs::const_iterator last,
                                     Time start) {
  if (first == last) return last;  // (Not dereferenced: it may be the end.)
  return first + static_cast<std::ptrdiff_t>(
                     CountBelow(&*first, static_cast<size_t>(last - first),
                                [&](const Lifetime& run) { return run.end < start; }));
}

Runs::const_iterator FirstEndingFrom(const Runs& runs, Time start) {
  return FirstEndingFrom(runs.begin(), runs.end(), start);
}

bool Meets(const Runs& runs, const Lifetime& lifetime) {
  const auto run = FirstEndingFrom(runs, lifetime.start);
  return run != runs.end() && run->start <= lifetime.end;
}

// The times of `lifetime` that no run of `runs` holds, in order.
void Gaps(const Runs& runs, const Lifetime& lifetime, Runs* out) {
  out->clear();
  Time from = lifetime.start;
  for (auto run = FirstEndingFrom(runs, lifetime.start);
       run != runs.end() && run->start <= lifetime.end; ++run) {
    if (from < run->start) out->push_back({from, run->start - 1});
    if (run->end >= lifetime.end) return;  // (Before run->end + 1 could overflow.)
    from = run->end + 1;
  }
  out->push_back({from, lifetime.end});
}

// The times in both `a` and `b`: disjoint, and not adjacent, since neither's
// runs are.
void Intersect(const Runs& a, const Runs& b, Runs* out) {
  out->clear();
  auto other = b.begin();
  for (const Lifetime& run : a) {
    other = FirstEndingFrom(other, b.end(), run.start);
    for (auto it = other; it != b.end() && it->start <= run.end; ++it) {
      out->push_back({std::max(it->start, run.start), std::min(it->end, run.end)});
    }
  }
}

}  // namespace

FreeObjectTree::FreeObjectTree(int64_t capacity) {
  while (leaves_ < capacity) leaves_ *= 2;
  all_busy_.resize(static_cast<size_t>(2 * leaves_));
  max_size_.assign(static_cast<size_t>(2 * leaves_), -1);
}

void FreeObjectTree::AddBusy(int64_t object, Size size, const Lifetime& lifetime) {
  int64_t node = leaves_ + object;
  if (max_size_[node] < size) {
    for (int64_t above = node; above >= 1 && max_size_[above] < size; above /= 2) {
      max_size_[above] = size;
    }
  }
  Gaps(all_busy_[node], lifetime, &added_);
  AddRun(&all_busy_[node], lifetime);
  // A node's busy times are its children's intersection. When a child gains
  // times it did not have, the node gains exactly those at which the sibling
  // is busy: the node had none of them (it held only times at which the child
  // was busy), so they are added without a check, and the climb ends where
  // none remain (usually at once: the sibling is free then).
  for (int64_t child = node; child > 1 && !added_.empty(); child /= 2) {
    Intersect(added_, all_busy_[child ^ 1], &grown_);
    Runs& parent = all_busy_[child / 2];
    for (const Lifetime& run : grown_) AddRun(&parent, run);
    std::swap(added_, grown_);
  }
}

int64_t FreeObjectTree::FirstFree(int64_t from, int64_t count, Size min_size,
                                  const Lifetime& lifetime) const {
  // No object exists at or past `count`, and an ancestor of the smallest
  // subtree holding objects 0..count-1 holds no others, so it prunes nothing
  // that subtree does not: the search starts there.
  int64_t node = 1;
  int64_t width = leaves_;
  while (width > 1 && width / 2 >= count) {
    node *= 2;
    width /= 2;
  }
  return Find(node, 0, width, from, count, min_size, lifetime);
}

int64_t FreeObjectTree::Find(int64_t node, int64_t first, int64_t width, int64_t from,
                             int64_t count, Size min_size, const Lifetime& lifetime) const {
  if (first >= count || first + width <= from || max_size_[node] < min_size ||
      Meets(all_busy_[node], lifetime)) {
    return -1;
  }
  if (width == 1) return first;
  const int64_t half = width / 2;
  const int64_t left = Find(2 * node, first, half, from, count, min_size, lifetime);
  return left >= 0 ? left : Find(2 * node + 1, first + half, half, from, count, min_size, lifetime);
}

}  // namespace cadence_memplan
