#include "free_object_tree.h"

#include <algorithm>

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

// The first run that ends at or after `start`.
Runs::const_iterator FirstEndingFrom(const Runs& runs, Time start) {
  return std::lower_bound(runs.begin(), runs.end(), start,
                          [](const Lifetime& run, Time time) { return run.end < time; });
}

bool Meets(const Runs& runs, const Lifetime& lifetime) {
  const auto run = FirstEndingFrom(runs, lifetime.start);
  return run != runs.end() && run->start <= lifetime.end;
}

bool Contains(const Runs& runs, const Lifetime& lifetime) {
  const auto run = FirstEndingFrom(runs, lifetime.start);
  return run != runs.end() && run->start <= lifetime.start && run->end >= lifetime.end;
}

// The parts of `runs` inside `window`.
void Clip(const Runs& runs, const Lifetime& window, Runs* out) {
  out->clear();
  for (auto run = FirstEndingFrom(runs, window.start);
       run != runs.end() && run->start <= window.end; ++run) {
    out->push_back({std::max(run->start, window.start), std::min(run->end, window.end)});
  }
}

// The times in both: disjoint, and not adjacent, since neither's runs are.
void Intersect(const Runs& a, const Runs& b, Runs* out) {
  out->clear();
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const Time start = std::max(a[i].start, b[j].start);
    const Time end = std::min(a[i].end, b[j].end);
    if (start <= end) out->push_back({start, end});
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
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
  AddRun(&all_busy_[node], lifetime);
  // The leaf gained exactly the times of `lifetime`, so only there can the
  // intersections above it grow; they stop growing at the first that does not.
  for (int64_t child = node; child > 1; child /= 2) {
    node = child / 2;
    // Nothing can grow where the sibling is free, the usual case: look there first.
    Clip(all_busy_[child ^ 1], lifetime, &left_);
    if (left_.empty()) break;
    Clip(all_busy_[child], lifetime, &right_);
    Intersect(left_, right_, &both_);
    bool grew = false;
    for (const Lifetime& run : both_) {
      if (Contains(all_busy_[node], run)) continue;
      AddRun(&all_busy_[node], run);
      grew = true;
    }
    if (!grew) break;
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
