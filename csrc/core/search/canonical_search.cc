#include "core/search/canonical_search.h"

#include <algorithm>
#include <cstddef>

namespace cadence_memplan {
namespace detail {

Outcome CanonicalSearch::Run(int64_t node_limit, const std::function<bool()>& should_stop) {
  if (state_ == State::kNew) {
    state_ = State::kRunning;
    if (Start() == Outcome::kNotFound) {
      state_ = State::kFinished;
      outcome_ = Outcome::kNotFound;
    }
  }
  if (state_ == State::kFinished) return outcome_;
  const Outcome outcome = Search(node_limit, should_stop);
  if (outcome == Outcome::kAborted && !stack_.empty()) return outcome;  // Paused.
  state_ = State::kFinished;
  outcome_ = outcome;
  // Nothing will be searched again: free the state (the solution stays).
  stack_ = {};
  parts_ = {};
  low_log_ = {};
  min_offset_log_ = {};
  min_offset_log_values_ = {};
  lowest_in_ = {};
  return outcome_;
}

Outcome CanonicalSearch::Start() {
  const size_t n = p_.items.size();
  const auto sections = static_cast<SectionIndex>(p_.section_times.size());
  offset_.assign(n, kNoUnit);
  solution_.assign(n, kNoUnit);
  min_offset_.resize(n);
  argmin_sections_.assign(n, 0);
  lowest_in_.assign(n, {});
  total_.assign(sections, 0);
  low_.assign(sections, kNoLimit);
  low_item_.assign(sections, kNoItem);
  cuts_.assign(sections, 0);
  flagged_.assign(sections, 0);
  for (size_t i = 0; i < n; ++i) {
    const Item& item = p_.items[i];
    min_offset_[i] = p_.LowestFree(static_cast<ItemIndex>(i), 0);
    if (item.units > capacity_ || min_offset_[i] > capacity_ - item.units) {
      return Outcome::kNotFound;
    }
    for (SectionIndex s = item.lo; s < item.hi; ++s) {
      if (total_[s] > capacity_ - item.units) return Outcome::kNotFound;
      total_[s] += item.units;
    }
    for (SectionIndex s = item.lo; s + 1 < item.hi; ++s) ++cuts_[s];
  }
  totals_ = MaxTree(total_);
  for (SectionIndex s = 0; s < sections; ++s) {
    FindLowest(s);
    if (!SectionFits(s, 0)) return Outcome::kNotFound;
  }
  // The parts no tensor crosses at the start, solved one after the other.
  Frame root;
  root.sides = true;
  root.bounds = {0};
  for (SectionIndex s = 0; s + 1 < sections; ++s) {
    if (cuts_[s] == 0) root.bounds.push_back(s + 1);
  }
  root.bounds.push_back(sections);
  root.side_items.resize(root.bounds.size() - 1);
  for (size_t i = 0; i < n; ++i) {
    const size_t side = std::upper_bound(root.bounds.begin(), root.bounds.end(), p_.items[i].lo) -
                        root.bounds.begin() - 1;
    root.side_items[side].push_back(static_cast<ItemIndex>(i));
  }
  stack_.push_back(std::move(root));
  return Outcome::kAborted;  // Not answered yet.
}

void CanonicalSearch::DropOldestUndo() {
  // Keep the newest half of each log: halving (not trimming to the cap)
  // makes the cost of the copies linear in the entries logged.
  const size_t lows = low_log_.size() / 2;
  low_log_.erase(low_log_.begin(), low_log_.begin() + static_cast<std::ptrdiff_t>(lows));
  lows_dropped_ += lows;
  const size_t mins = min_offset_log_.size() / 2;
  min_offset_log_.erase(min_offset_log_.begin(),
                        min_offset_log_.begin() + static_cast<std::ptrdiff_t>(mins));
  min_offset_log_values_.erase(min_offset_log_values_.begin(),
                               min_offset_log_values_.begin() + static_cast<std::ptrdiff_t>(mins));
  min_offsets_dropped_ += mins;
}

inline void CanonicalSearch::SolveSides(Frame& frame) {
  if (returned_) {
    parts_.pop_back();
    returned_ = false;
    if (result_ != Outcome::kFound) {
      Answer(result_);
      return;
    }
  }
  while (frame.next_side < frame.side_items.size() && frame.side_items[frame.next_side].empty()) {
    ++frame.next_side;
  }
  if (frame.next_side == frame.side_items.size()) {
    Answer(Outcome::kFound);
    return;
  }
  const size_t k = frame.next_side++;
  parts_.push_back(MakePart(std::move(frame.side_items[k]), frame.bounds[k], frame.bounds[k + 1]));
  Frame search;
  search.part = parts_.size() - 1;
  stack_.push_back(std::move(search));  // `frame` is not used after this.
}

inline CanonicalSearch::Next CanonicalSearch::StartNode(Frame& frame, int64_t node_limit,
                                                        const std::function<bool()>& should_stop) {
  // Pause before the node, so that the next call starts it: where a step
  // stops does not change what the search visits.
  if (nodes_ >= node_limit || ((nodes_ & 255) == 0 && should_stop())) return Next::kStop;
  ++nodes_;
  frame.started = true;
  if (UndoBytes() > max_undo_bytes_) DropOldestUndo();
  if (!StartCandidates(&frame)) {
    Answer(Outcome::kFound);  // Every tensor of the part is placed.
    return Next::kLoop;
  }
  return Next::kGoOn;
}

inline CanonicalSearch::Next CanonicalSearch::TakeAnswer(Frame& frame) {
  returned_ = false;
  if (Undoable(frame.mark)) {
    // Also on kFound: a decomposition's side that fits is undone on the way
    // up (the solution keeps its offsets), so that a later side that does
    // not fit can backtrack above it.
    Remove(frame.placed, frame.mark);
    parts_[frame.part].Relink(frame.placed_rank);
    frame.placed = kNoItem;
  } else if (result_ == Outcome::kNotFound) {
    stack_.clear();  // It must backtrack past what the logs kept: give up.
    return Next::kStop;
  }
  // Else kFound, and no backtracking can reach this frame any more (the
  // frames below it have older marks): its placement may stay.
  if (result_ == Outcome::kFound) {
    Answer(Outcome::kFound);
    return Next::kLoop;
  }
  return Next::kGoOn;
}

inline void CanonicalSearch::TryCandidates(Frame& frame) {
  Part& part = parts_[frame.part];
  Candidate candidate;
  while (NextCandidate(&frame, &candidate)) {
    const int32_t twin = part.twin[candidate.rank];
    if (twin >= 0 && offset_[part.items[twin]] == kNoUnit) continue;
    const ItemIndex i = part.items[candidate.rank];
    frame.mark = {lows_dropped_ + low_log_.size(), min_offsets_dropped_ + min_offset_log_.size()};
    const bool split = Place(i, candidate.offset);
    if (!FitsAfter(part, candidate.offset)) {
      Remove(i, frame.mark);
      continue;
    }
    frame.placed = i;
    frame.placed_rank = candidate.rank;
    part.Unlink(candidate.rank);
    Frame child;
    if (split) {
      child.sides = true;
      SplitSides(part, i, &child);
    } else {
      child.part = frame.part;
      child.last_offset = candidate.offset;
      child.last_rank = candidate.rank;
    }
    stack_.push_back(std::move(child));  // `frame` is not used after this.
    return;
  }
  Answer(Outcome::kNotFound);
}

inline Outcome CanonicalSearch::Search(int64_t node_limit,
                                       const std::function<bool()>& should_stop) {
  while (!stack_.empty()) {
    Frame& frame = stack_.back();
    if (frame.sides) {
      SolveSides(frame);
      continue;
    }
    if (!frame.started) {
      const Next next = StartNode(frame, node_limit, should_stop);
      if (next == Next::kStop) return Outcome::kAborted;
      if (next == Next::kLoop) continue;
    }
    if (returned_) {
      const Next next = TakeAnswer(frame);
      if (next == Next::kStop) return Outcome::kAborted;
      if (next == Next::kLoop) continue;
    }
    TryCandidates(frame);
  }
  return result_;
}

inline CanonicalSearch::Part CanonicalSearch::MakePart(std::vector<ItemIndex> items,
                                                       SectionIndex lo, SectionIndex hi) const {
  Part part;
  part.lo = lo;
  part.hi = hi;
  // Keys, largest first: T the largest section total, W the lifetime's
  // length, A the area, Z the size, C the number of sections; the first
  // replaced by priority_ when there is one.
  struct Keyed {
    ItemIndex item;
    double key[4];
  };
  std::vector<Keyed> keyed;
  keyed.reserve(items.size());
  // (A priority replaces the first key, so a T there needs no total.)
  const bool needs_total = preorder_.find('T', priority_ != nullptr ? 1 : 0) != std::string::npos;
  for (ItemIndex i : items) {
    const Item& item = p_.items[i];
    const Unit total = needs_total ? totals_.Max(item.lo, item.hi) : 0;
    const double length =
        static_cast<double>(item.lifetime.end) - static_cast<double>(item.lifetime.start) + 1;
    Keyed k{i, {0, 0, 0, 0}};
    for (size_t c = 0; c < preorder_.size() && c < 4; ++c) {
      switch (preorder_[c]) {
        case 'T': k.key[c] = static_cast<double>(total); break;
        case 'W': k.key[c] = length; break;
        case 'A': k.key[c] = length * static_cast<double>(item.units); break;
        case 'Z': k.key[c] = static_cast<double>(item.units); break;
        default: k.key[c] = static_cast<double>(item.hi - item.lo); break;
      }
    }
    if (priority_ != nullptr) k.key[0] = (*priority_)[i];
    keyed.push_back(k);
  }
  // Ties: identical tensors next to each other (for the symmetry rule),
  // then the caller's order.
  std::sort(keyed.begin(), keyed.end(), [&](const Keyed& x, const Keyed& y) {
    for (int c = 0; c < 4; ++c) {
      if (x.key[c] != y.key[c]) return x.key[c] > y.key[c];
    }
    const Item& a = p_.items[x.item];
    const Item& b = p_.items[y.item];
    if (a.lifetime.start != b.lifetime.start) return a.lifetime.start < b.lifetime.start;
    if (a.lifetime.end != b.lifetime.end) return a.lifetime.end < b.lifetime.end;
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    return x.item < y.item;
  });
  part.items.resize(keyed.size());
  part.twin.assign(keyed.size(), -1);
  const auto end = static_cast<int32_t>(keyed.size());
  part.next.resize(keyed.size() + 1);
  part.prev.resize(keyed.size() + 1);
  for (int32_t r = 0; r <= end; ++r) {
    part.next[r] = r == end ? 0 : r + 1;
    part.prev[r] = r == 0 ? end : r - 1;
  }
  for (size_t r = 0; r < keyed.size(); ++r) {
    part.items[r] = keyed[r].item;
    if (r == 0) continue;
    const Item& a = p_.items[part.items[r - 1]];
    const Item& b = p_.items[part.items[r]];
    if (a.lifetime.start == b.lifetime.start && a.lifetime.end == b.lifetime.end &&
        a.bytes == b.bytes) {
      part.twin[r] = static_cast<int32_t>(r - 1);
    }
  }
  return part;
}

inline bool CanonicalSearch::StartCandidates(Frame* frame) const {
  const Part& part = parts_[frame->part];
  const auto end = static_cast<int32_t>(part.items.size());
  if (part.next[end] == end) return false;
  Unit lowest_top = kNoLimit;
  for (int32_t r = part.next[end]; r != end; r = part.next[r]) {
    const ItemIndex i = part.items[r];
    lowest_top = std::min(lowest_top, SaturatingAdd(min_offset_[i], p_.items[i].units));
  }
  frame->highest = std::min(lowest_top - 1, capacity_ - totals_.Max(part.lo, part.hi));
  return true;
}

inline bool CanonicalSearch::NextCandidate(Frame* frame, Candidate* next) const {
  const Part& part = parts_[frame->part];
  const auto end = static_cast<int32_t>(part.items.size());
  const Candidate first{frame->last_offset, frame->last_rank};  // Canonical: not before it.
  const Candidate after =
      Before(frame->tried, first) ? Candidate{first.offset, first.rank - 1} : frame->tried;
  Candidate best{kNoLimit, end};
  for (int32_t r = part.next[end]; r != end; r = part.next[r]) {
    const Candidate c{min_offset_[part.items[r]], r};
    if (c.offset > frame->highest || !Before(after, c) || !Before(c, best)) continue;
    best = c;
  }
  if (best.offset == kNoLimit) return false;
  frame->tried = best;
  *next = best;
  return true;
}

inline void CanonicalSearch::SplitSides(const Part& part, ItemIndex i, Frame* sides) const {
  const Item& item = p_.items[i];
  sides->bounds = {part.lo};
  for (SectionIndex s = std::max(item.lo, part.lo); s + 1 < std::min(item.hi, part.hi); ++s) {
    if (cuts_[s] == 0) sides->bounds.push_back(s + 1);
  }
  sides->bounds.push_back(part.hi);
  sides->side_items.resize(sides->bounds.size() - 1);
  for (ItemIndex j : part.items) {
    if (offset_[j] != kNoUnit) continue;
    const size_t side =
        std::upper_bound(sides->bounds.begin(), sides->bounds.end(), p_.items[j].lo) -
        sides->bounds.begin() - 1;
    sides->side_items[side].push_back(j);
  }
}

inline bool CanonicalSearch::Place(ItemIndex i, Unit k) {
  const Item& item = p_.items[i];
  offset_[i] = k;
  solution_[i] = k;
  const Unit top = k + item.units;
  bool split = false;
  for (SectionIndex s = item.lo; s < item.hi; ++s) total_[s] -= item.units;
  totals_.Add(item.lo, item.hi, -item.units);
  for (SectionIndex s = item.lo; s + 1 < item.hi; ++s) {
    if (--cuts_[s] == 0) split = true;
  }
  changed_.clear();
  // The sections whose lowest unplaced item was this one, or one that
  // rises now, need their lowest found again; no other section's changes.
  if (argmin_sections_[i] > 0) NoteLowestMoved(i);
  p_.ForEachAliveWith(i, [&](ItemIndex j) {
    if (offset_[j] != kNoUnit || min_offset_[j] >= top) return;
    min_offset_log_.push_back(j);
    min_offset_log_values_.push_back(min_offset_[j]);
    min_offset_[j] = p_.LowestFree(j, top);
    if (argmin_sections_[j] > 0) NoteLowestMoved(j);
  });
  RefreshLows();
  return split;
}

inline void CanonicalSearch::NoteLowestMoved(ItemIndex j) {
  for (SectionIndex s : lowest_in_[j]) {
    if (low_item_[s] != j) continue;  // Stale, or listed twice.
    low_log_.push_back({s, j});
    --argmin_sections_[j];
    low_item_[s] = kNoItem;
    changed_.push_back(s);
  }
  lowest_in_[j].clear();  // Lowest nowhere now.
}

inline void CanonicalSearch::RefreshLows() {
  if (changed_.size() < 64) {
    std::sort(changed_.begin(), changed_.end());
  } else {  // A counting pass costs less than sorting them.
    SectionIndex first = changed_.front(), last = changed_.front();
    for (SectionIndex s : changed_) {
      flagged_[s] = 1;
      first = std::min(first, s);
      last = std::max(last, s);
    }
    changed_.clear();
    for (SectionIndex s = first; s <= last; ++s) {
      if (flagged_[s] == 0) continue;
      flagged_[s] = 0;
      changed_.push_back(s);
    }
  }
  for (size_t a = 0; a < changed_.size();) {
    size_t e = a + 1;
    while (e < changed_.size() && changed_[e] == changed_[e - 1] + 1) ++e;
    if (e - a < kSweepRun) {
      for (size_t k = a; k < e; ++k) FindLowest(changed_[k]);
    } else {
      SweepLowest(changed_[a], changed_[e - 1]);
    }
    a = e;
  }
}

inline void CanonicalSearch::FindLowest(SectionIndex s) {
  Unit lowest = kNoLimit;
  ItemIndex which = kNoItem;
  for (const ItemIndex* j = p_.members.begin(s); j != p_.members.end(s); ++j) {
    if (offset_[*j] == kNoUnit && min_offset_[*j] < lowest) {
      lowest = min_offset_[*j];
      which = *j;
    }
  }
  SetLowest(s, lowest, which);
}

inline void CanonicalSearch::SweepLowest(SectionIndex first, SectionIndex last) {
  heap_.clear();
  const auto later = [](const std::pair<Unit, ItemIndex>& x, const std::pair<Unit, ItemIndex>& y) {
    return x > y;
  };
  const auto push = [&](ItemIndex j) {
    if (offset_[j] != kNoUnit) return;
    heap_.push_back({min_offset_[j], j});
    std::push_heap(heap_.begin(), heap_.end(), later);
  };
  for (const ItemIndex* j = p_.members.begin(first); j != p_.members.end(first); ++j) push(*j);
  for (SectionIndex s = first; s <= last; ++s) {
    if (s > first) {
      for (int64_t k = p_.first_by_lo[s]; k < p_.first_by_lo[s + 1]; ++k) push(p_.by_lo[k]);
    }
    while (!heap_.empty() && p_.items[heap_.front().second].hi <= s) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      heap_.pop_back();
    }
    if (heap_.empty()) {
      SetLowest(s, kNoLimit, kNoItem);
    } else {
      SetLowest(s, heap_.front().first, heap_.front().second);
    }
  }
}

inline void CanonicalSearch::SetLowest(SectionIndex s, Unit lowest, ItemIndex which) {
  low_[s] = lowest;
  low_item_[s] = which;
  if (which != kNoItem) BecomeLowest(which, s);
}

inline void CanonicalSearch::BecomeLowest(ItemIndex j, SectionIndex s) {
  ++argmin_sections_[j];
  std::vector<SectionIndex>& list = lowest_in_[j];
  list.push_back(s);
  if (list.size() > 2 * static_cast<size_t>(argmin_sections_[j]) + 16) {
    list.erase(
        std::remove_if(list.begin(), list.end(), [&](SectionIndex t) { return low_item_[t] != j; }),
        list.end());
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
}

inline void CanonicalSearch::Remove(ItemIndex i, const Mark& mark) {
  const Item& item = p_.items[i];
  while (min_offsets_dropped_ + min_offset_log_.size() > mark.min_offsets) {
    min_offset_[min_offset_log_.back()] = min_offset_log_values_.back();
    min_offset_log_.pop_back();
    min_offset_log_values_.pop_back();
  }
  while (lows_dropped_ + low_log_.size() > mark.lows) {
    const LowChange& c = low_log_.back();
    if (low_item_[c.section] != kNoItem) --argmin_sections_[low_item_[c.section]];
    low_[c.section] = min_offset_[c.item];
    low_item_[c.section] = c.item;
    BecomeLowest(c.item, c.section);
    low_log_.pop_back();
  }
  for (SectionIndex s = item.lo; s < item.hi; ++s) total_[s] += item.units;
  totals_.Add(item.lo, item.hi, item.units);
  for (SectionIndex s = item.lo; s + 1 < item.hi; ++s) ++cuts_[s];
  offset_[i] = kNoUnit;
}

inline bool CanonicalSearch::SectionFits(SectionIndex s, Unit x) const {
  if (total_[s] == 0) return true;
  const Unit from = std::max(x, low_[s]);
  if (from > capacity_ || total_[s] > capacity_ - from) return false;
  return !p_.has_covered || total_[s] + p_.CoveredAbove(s, from, capacity_) <= capacity_ - from;
}

inline bool CanonicalSearch::FitsAfter(const Part& part, Unit x) const {
  if (p_.has_covered) {
    for (SectionIndex s = part.lo; s < part.hi; ++s) {
      if (!SectionFits(s, x)) return false;
    }
    return true;
  }
  for (SectionIndex s : changed_) {
    if (!SectionFits(s, x)) return false;
  }
  return true;
}

}  // namespace detail
}  // namespace cadence_memplan
