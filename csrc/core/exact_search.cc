#include "exact_search.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include "planner.h"

namespace cadence_memplan {
namespace {

using Unit = int64_t;         // An offset or a size in multiples of the alignment.
using ItemIndex = int32_t;    // A tensor that takes part in the search.
using SectionIndex = int32_t;

constexpr Unit kNoUnit = -1;
constexpr Unit kNoLimit = std::numeric_limits<Unit>::max();
constexpr ItemIndex kNoItem = -1;

Unit CeilDiv(Size value, Size divisor) { return value / divisor + (value % divisor != 0 ? 1 : 0); }

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

struct Item {
  TensorIndex tensor = 0;
  Unit units = 0;
  Size bytes = 0;
  Lifetime lifetime;
  SectionIndex lo = 0, hi = 0;  // The sections it is alive in: [lo, hi).
};

// The problem in units (see the header): the tensors that take part in the
// search, the sections and who is alive in each, and what obstacles forbid.
class UnitProblem {
 public:
  explicit UnitProblem(const PackingProblem& problem) : alignment(problem.alignment) {
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
    for (const Item& item : items) section_times.push_back(item.lifetime.end);
    std::sort(section_times.begin(), section_times.end());
    section_times.erase(std::unique(section_times.begin(), section_times.end()),
                        section_times.end());
    const auto section_count = static_cast<SectionIndex>(section_times.size());
    for (Item& item : items) {
      item.lo = SectionAt(item.lifetime.start);
      item.hi = static_cast<SectionIndex>(
          std::upper_bound(section_times.begin(), section_times.end(), item.lifetime.end) -
          section_times.begin());
      entries += item.hi - item.lo;
    }
    searchable = entries <= kMaxSearchEntries;

    // Items by first section; first_by_lo[s]: where those starting at s begin.
    by_lo.resize(items.size());
    for (size_t i = 0; i < items.size(); ++i) by_lo[i] = static_cast<ItemIndex>(i);
    std::stable_sort(by_lo.begin(), by_lo.end(),
                     [&](ItemIndex x, ItemIndex y) { return items[x].lo < items[y].lo; });
    first_by_lo.assign(section_count + 1, 0);
    for (const Item& item : items) ++first_by_lo[item.lo + 1];
    for (SectionIndex s = 0; s < section_count; ++s) first_by_lo[s + 1] += first_by_lo[s];

    // Units alive in each section (saturating: sizes may add up past 2^63),
    // and the units that obstacles alive then cover whole.
    std::vector<Unit> totals(section_count, 0);
    for (const Item& item : items) {
      for (SectionIndex s = item.lo; s < item.hi; ++s) {
        totals[s] = SaturatingAdd(totals[s], item.units);
      }
    }
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
    // What each obstacle forbids each tensor alive with it.
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

    lower_bound = std::max(lone_units, obstacle_top);
    for (SectionIndex s = 0; s < section_count; ++s) {
      Unit covered_units = 0;
      for (const UnitRange* r = covered.begin(s); r != covered.end(s); ++r) {
        covered_units = SaturatingAdd(covered_units, r->last - r->first + 1);
      }
      lower_bound = std::max(lower_bound, SaturatingAdd(totals[s], covered_units));
    }
    for (size_t i = 0; i < items.size(); ++i) {
      lower_bound = std::max(
          lower_bound, SaturatingAdd(LowestFree(static_cast<ItemIndex>(i), 0), items[i].units));
    }
    if (!searchable) return;

    // Who is alive in each section, in item order.
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

  SectionIndex SectionAt(Time start) const {
    return static_cast<SectionIndex>(
        std::lower_bound(section_times.begin(), section_times.end(), start) -
        section_times.begin());
  }

  Size alignment;
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

// What stops a search: the deadline, an interruption (polled only on the
// thread that created it, at most every ten milliseconds) or a node limit.
class Controller {
 public:
  explicit Controller(const SearchLimits& limits)
      : limits_(limits), owner_(std::this_thread::get_id()) {
    Poll();
  }

  // True when every search should stop now.
  bool Poll() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now > limits_.deadline) {
      stopped_ = true;
      return true;
    }
    if (limits_.interrupted && std::this_thread::get_id() == owner_ &&
        now - last_poll_ >= std::chrono::milliseconds(10)) {
      last_poll_ = now;
      if (limits_.interrupted()) {
        interrupted_ = true;
        stopped_ = true;
        return true;
      }
    }
    return false;
  }
  bool stopped() const { return stopped_.load(); }
  void ThrowIfInterrupted() const {
    if (interrupted_.load()) throw Interrupted();
  }
  int threads() const { return std::max(1, limits_.threads); }

 private:
  const SearchLimits& limits_;
  const std::thread::id owner_;
  std::chrono::steady_clock::time_point last_poll_{};
  std::atomic<bool> stopped_{false};
  std::atomic<bool> interrupted_{false};
};

enum class Outcome { kFound, kNotFound, kAborted };

// One depth-first search over canonical packings (the header) at a fixed
// capacity, with one static preorder, up to a node limit.
class CanonicalSearch {
 public:
  CanonicalSearch(const UnitProblem& problem, Unit capacity, const std::string& preorder,
                  int64_t node_limit, std::function<bool()> should_stop)
      : p_(problem),
        capacity_(capacity),
        preorder_(preorder),
        node_limit_(node_limit),
        should_stop_(std::move(should_stop)) {}

  Outcome Run() {
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
    candidates_.resize(n + 1);
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
    return SolveSides(std::move(root));
  }

  // Units per item, after kFound.
  const std::vector<Unit>& solution() const { return solution_; }
  int64_t nodes() const { return nodes_; }

 private:
  struct Part {
    std::vector<ItemIndex> items;  // In preorder: rank = position.
    std::vector<int32_t> twin;     // Per rank: the rank of an identical item before it, or -1.
    SectionIndex lo = 0, hi = 0;   // Its sections.
    // The unplaced ranks, linked in rank order from and to rank items.size();
    // placements unlink and removals relink them in reverse order.
    std::vector<int32_t> next, prev;
    void Unlink(int32_t r) {
      next[prev[r]] = next[r];
      prev[next[r]] = prev[r];
    }
    void Relink(int32_t r) {
      next[prev[r]] = r;
      prev[next[r]] = r;
    }
  };
  struct Candidate {
    Unit offset;
    int32_t rank;
  };
  struct Mark {
    size_t lows = 0, min_offsets = 0;
  };
  // The search is a loop over an explicit stack, not a recursion: its depth
  // is the number of tensors placed, more than a thread's stack may hold.
  struct Frame {
    bool sides = false;  // Solves independent parts in turn, or searches one.
    // A search: its part, where the last placement went, the candidates
    // (candidates_[depth]) and the next to try, the child's placement.
    size_t part = 0;
    Unit last_offset = 0;
    int32_t last_rank = -1;
    size_t depth = 0;
    size_t next = 0;
    bool started = false;
    ItemIndex placed = kNoItem;
    int32_t placed_rank = -1;
    Mark mark;
    // Sides: the bounds of each side's sections, its items, the next side.
    std::vector<SectionIndex> bounds;
    std::vector<std::vector<ItemIndex>> side_items;
    size_t next_side = 0;
  };

  // Solves the parts pushed as `root` sides.
  Outcome SolveSides(Frame root) {
    std::vector<Frame> stack;
    stack.push_back(std::move(root));
    Outcome result = Outcome::kNotFound;
    bool returned = false;  // `result` is the answer of the frame just popped.
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.sides) {
        if (returned) {
          parts_.pop_back();
          returned = false;
          if (result != Outcome::kFound) {
            stack.pop_back();
            returned = true;
            continue;
          }
        }
        while (frame.next_side < frame.side_items.size() &&
               frame.side_items[frame.next_side].empty()) {
          ++frame.next_side;
        }
        if (frame.next_side == frame.side_items.size()) {
          result = Outcome::kFound;
          stack.pop_back();
          returned = true;
          continue;
        }
        const size_t k = frame.next_side++;
        parts_.push_back(
            MakePart(std::move(frame.side_items[k]), frame.bounds[k], frame.bounds[k + 1]));
        Frame search;
        search.part = parts_.size() - 1;
        search.depth = frame.depth;
        stack.push_back(std::move(search));
        continue;
      }
      if (!frame.started) {
        frame.started = true;
        if (++nodes_ > node_limit_ || ((nodes_ & 255) == 0 && should_stop_())) {
          result = Outcome::kAborted;
          stack.pop_back();
          returned = true;
          continue;
        }
        if (!CollectCandidates(frame)) {
          result = Outcome::kFound;  // Every tensor of the part is placed.
          stack.pop_back();
          returned = true;
          continue;
        }
      }
      if (returned) {
        returned = false;
        Remove(frame.placed, frame.mark);
        parts_[frame.part].Relink(frame.placed_rank);
        frame.placed = kNoItem;
        if (result != Outcome::kNotFound) {
          stack.pop_back();
          returned = true;
          continue;
        }
      }
      // The next candidate that passes the symmetry rule and the checks.
      Part& part = parts_[frame.part];
      std::vector<Candidate>& candidates = candidates_[frame.depth];
      bool descended = false;
      while (frame.next < candidates.size()) {
        // In (offset, rank) order, by selection: a descent mostly takes the
        // first, where sorting them all would cost more.
        const auto first = candidates.begin() + static_cast<std::ptrdiff_t>(frame.next);
        std::iter_swap(
            first,
            std::min_element(first, candidates.end(), [](const Candidate& a, const Candidate& b) {
              return a.offset != b.offset ? a.offset < b.offset : a.rank < b.rank;
            }));
        const Candidate candidate = candidates[frame.next++];
        const int32_t twin = part.twin[candidate.rank];
        if (twin >= 0 && offset_[part.items[twin]] == kNoUnit) continue;
        const ItemIndex i = part.items[candidate.rank];
        frame.mark = {low_log_.size(), min_offset_log_.size()};
        const bool split = Place(i, candidate.offset);
        if (!FitsAfter(part, candidate.offset)) {
          Remove(i, frame.mark);
          continue;
        }
        frame.placed = i;
        frame.placed_rank = candidate.rank;
        part.Unlink(candidate.rank);
        Frame child;
        child.depth = frame.depth + 1;
        if (split) {
          child.sides = true;
          SplitSides(part, i, &child);
        } else {
          child.part = frame.part;
          child.last_offset = candidate.offset;
          child.last_rank = candidate.rank;
        }
        stack.push_back(std::move(child));  // `frame` is not used after this.
        descended = true;
        break;
      }
      if (descended) continue;
      result = Outcome::kNotFound;
      stack.pop_back();
      returned = true;
    }
    return result;
  }

  // A part in the search's preorder, with the totals of now.
  Part MakePart(std::vector<ItemIndex> items, SectionIndex lo, SectionIndex hi) const {
    Part part;
    part.lo = lo;
    part.hi = hi;
    // Keys, largest first: T the largest section total, W the lifetime's
    // length, A the area, Z the size, C the number of sections.
    struct Keyed {
      ItemIndex item;
      double key[4];
    };
    std::vector<Keyed> keyed;
    keyed.reserve(items.size());
    const bool needs_total = preorder_.find('T') != std::string::npos;
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

  // The candidates of a search frame, which SolveSides takes in (offset,
  // rank) order: canonical (not before the last placement), not dominated
  // (below the lowest top of an unplaced item), and low enough: every
  // unplaced item goes at or above the offset, so the offset plus any
  // section's total must fit (those alive with the candidate go above its
  // top, but it leaves their total). False when the part has no unplaced
  // item.
  bool CollectCandidates(const Frame& frame) {
    const Part& part = parts_[frame.part];
    std::vector<Candidate>& candidates = candidates_[frame.depth];
    candidates.clear();
    const auto end = static_cast<int32_t>(part.items.size());
    if (part.next[end] == end) return false;
    Unit lowest_top = kNoLimit;
    for (int32_t r = part.next[end]; r != end; r = part.next[r]) {
      const ItemIndex i = part.items[r];
      lowest_top = std::min(lowest_top, SaturatingAdd(min_offset_[i], p_.items[i].units));
    }
    const Unit highest = std::min(lowest_top - 1, capacity_ - totals_.Max(part.lo, part.hi));
    for (int32_t r = part.next[end]; r != end; r = part.next[r]) {
      const Unit offset = min_offset_[part.items[r]];
      if (offset > highest || offset < frame.last_offset) continue;
      if (offset == frame.last_offset && r < frame.last_rank) continue;
      candidates.push_back({offset, r});
    }
    return true;
  }

  // Item i was just placed and left no unplaced tensor across some section
  // boundaries of the part: each side is solved on its own.
  void SplitSides(const Part& part, ItemIndex i, Frame* sides) const {
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

  // Puts item i at k and updates what depends on it; returns whether some
  // section boundary has no unplaced item across it any more.
  bool Place(ItemIndex i, Unit k) {
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
      min_offset_log_.push_back({j, min_offset_[j]});
      min_offset_[j] = p_.LowestFree(j, top);
      if (argmin_sections_[j] > 0) NoteLowestMoved(j);
    });
    RefreshLows();
    return split;
  }

  // Lists the sections whose lowest item j moves (placed or risen), once.
  void NoteLowestMoved(ItemIndex j) {
    for (SectionIndex s : lowest_in_[j]) {
      if (low_item_[s] != j) continue;  // Stale, or listed twice.
      low_log_.push_back({s, low_[s], j});
      --argmin_sections_[j];
      low_item_[s] = kNoItem;
      changed_.push_back(s);
    }
    lowest_in_[j].clear();  // Lowest nowhere now.
  }

  // Finds the lowest item of every changed section: one by one, or, along a
  // long run of adjacent sections, by one sweep that adds the items as their
  // first section comes and drops them once past their last.
  void RefreshLows() {
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

  // low_[s]: the lowest minimum offset of an unplaced item of section s.
  void FindLowest(SectionIndex s) {
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

  void SweepLowest(SectionIndex first, SectionIndex last) {
    heap_.clear();
    const auto later = [](const std::pair<Unit, ItemIndex>& x,
                          const std::pair<Unit, ItemIndex>& y) { return x > y; };
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

  void SetLowest(SectionIndex s, Unit lowest, ItemIndex which) {
    low_[s] = lowest;
    low_item_[s] = which;
    if (which != kNoItem) BecomeLowest(which, s);
  }

  // Item j is now the lowest of section s. lowest_in_[j] lists at least
  // every such section; stale entries go when the list doubles.
  void BecomeLowest(ItemIndex j, SectionIndex s) {
    ++argmin_sections_[j];
    std::vector<SectionIndex>& list = lowest_in_[j];
    list.push_back(s);
    if (list.size() > 2 * static_cast<size_t>(argmin_sections_[j]) + 16) {
      list.erase(std::remove_if(list.begin(), list.end(),
                                [&](SectionIndex t) { return low_item_[t] != j; }),
                 list.end());
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
    }
  }

  void Remove(ItemIndex i, const Mark& mark) {
    const Item& item = p_.items[i];
    while (low_log_.size() > mark.lows) {
      const LowChange& c = low_log_.back();
      if (low_item_[c.section] != kNoItem) --argmin_sections_[low_item_[c.section]];
      low_[c.section] = c.low;
      low_item_[c.section] = c.item;
      BecomeLowest(c.item, c.section);
      low_log_.pop_back();
    }
    while (min_offset_log_.size() > mark.min_offsets) {
      min_offset_[min_offset_log_.back().first] = min_offset_log_.back().second;
      min_offset_log_.pop_back();
    }
    for (SectionIndex s = item.lo; s < item.hi; ++s) total_[s] += item.units;
    totals_.Add(item.lo, item.hi, item.units);
    for (SectionIndex s = item.lo; s + 1 < item.hi; ++s) ++cuts_[s];
    offset_[i] = kNoUnit;
  }

  // Section s with every unplaced item at or above max(x, its lowest).
  bool SectionFits(SectionIndex s, Unit x) const {
    if (total_[s] == 0) return true;
    const Unit from = std::max(x, low_[s]);
    if (from > capacity_ || total_[s] > capacity_ - from) return false;
    return !p_.has_covered || total_[s] + p_.CoveredAbove(s, from, capacity_) <= capacity_ - from;
  }

  // After the placement at x (CollectCandidates checked x against every
  // section's total): the sections whose lowest item rose, and with
  // obstacles every section, since what they cover above x depends on x.
  bool FitsAfter(const Part& part, Unit x) const {
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

  // Below this many adjacent sections, finding each one's lowest item by
  // scanning its members costs less than a sweep.
  static constexpr size_t kSweepRun = 8;

  const UnitProblem& p_;
  const Unit capacity_;
  const std::string preorder_;
  const int64_t node_limit_;
  const std::function<bool()> should_stop_;
  int64_t nodes_ = 0;

  std::vector<Unit> offset_;      // Per item: placed at, or kNoUnit.
  std::vector<Unit> solution_;    // Per item: the last placement (a leaf's, after kFound).
  std::vector<Unit> min_offset_;  // Per item: where it would go now.
  std::vector<int32_t> argmin_sections_;  // Per item: how many sections it is lowest in,
  std::vector<std::vector<SectionIndex>> lowest_in_;  // and which (BecomeLowest).
  std::vector<Unit> total_;               // Per section: units of its unplaced items,
  MaxTree totals_{{}};                    // and the same for ranges of sections.
  std::vector<Unit> low_;                 // Per section: its lowest minimum offset,
  std::vector<ItemIndex> low_item_;       // of this unplaced item (kNoItem: none).
  std::vector<int32_t> cuts_;             // Per boundary s|s+1: unplaced items across it.
  struct LowChange {
    SectionIndex section;
    Unit low;
    ItemIndex item;
  };
  std::vector<LowChange> low_log_;
  std::vector<std::pair<ItemIndex, Unit>> min_offset_log_;
  std::vector<SectionIndex> changed_;  // By the last Place: their lowest moved.
  std::vector<uint8_t> flagged_;       // Per section, while RefreshLows sorts them.
  std::vector<std::pair<Unit, ItemIndex>> heap_;    // SweepLowest's.
  std::vector<std::vector<Candidate>> candidates_;  // Per depth.
  std::vector<Part> parts_;                         // Of the frames on the stack.
};

// The static preorders, tried in this order (MiniMalloc's three).
const std::vector<std::string>& Preorders() {
  static const std::vector<std::string> preorders = {"TWA", "WAT", "TAW"};
  return preorders;
}

// One decision at `capacity` units: every preorder's search with the same
// node limit, on up to limits.threads threads. The answer is the first
// member's, in preorder order, that reached one; the nodes charged are those
// of that member and the members before it, so neither depends on threads.
struct Decision {
  Fit fit = Fit::kUnknown;
  std::vector<Unit> units;  // Per item, with kFits.
  int64_t nodes = 0;
  std::string strategy;
};

Decision Decide(const UnitProblem& problem, Unit capacity, int64_t node_limit,
                Controller& controller) {
  const std::vector<std::string>& preorders = Preorders();
  const int count = static_cast<int>(preorders.size());
  std::vector<Outcome> outcomes(count, Outcome::kAborted);
  std::vector<int64_t> nodes(count, 0);
  std::vector<std::vector<Unit>> solutions(count);
  std::atomic<int> answered{count};  // The lowest member with an answer.
  std::atomic<int> next{0};
  std::mutex mutex;
  std::condition_variable done;
  int finished_threads = 0;
  const auto work = [&] {
    for (int k; (k = next++) < count;) {
      if (answered.load() < k || controller.stopped()) continue;
      CanonicalSearch search(problem, capacity, preorders[k], node_limit,
                             [&, k] { return answered.load() < k || controller.Poll(); });
      outcomes[k] = search.Run();
      nodes[k] = search.nodes();
      if (outcomes[k] == Outcome::kAborted) continue;
      solutions[k] = search.solution();
      int seen = answered.load();
      while (k < seen && !answered.compare_exchange_weak(seen, k)) {
      }
    }
  };
  const int threads = std::min(controller.threads(), count);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&] {
      work();
      const std::lock_guard<std::mutex> lock(mutex);
      ++finished_threads;
      done.notify_one();
    });
  }
  work();
  // Keep polling for Ctrl-C while the other threads finish.
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (finished_threads < threads - 1) {
      done.wait_for(lock, std::chrono::milliseconds(10));
      lock.unlock();
      controller.Poll();
      lock.lock();
    }
  }
  for (std::thread& thread : pool) thread.join();
  controller.ThrowIfInterrupted();

  Decision decision;
  const int winner = answered.load();
  for (int k = 0; k < count && k <= winner; ++k) decision.nodes += nodes[k];
  if (winner == count) return decision;
  decision.fit = outcomes[winner] == Outcome::kFound ? Fit::kFits : Fit::kDoesNotFit;
  decision.strategy = "exact search, preorder " + preorders[winner];
  if (decision.fit == Fit::kFits) decision.units = std::move(solutions[winner]);
  return decision;
}

std::vector<Offset> ToOffsets(const PackingProblem& problem, const UnitProblem& units,
                              const std::vector<Unit>& item_units) {
  std::vector<Offset> offsets(problem.tensors.size(), 0);
  for (size_t i = 0; i < units.items.size(); ++i) {
    offsets[units.items[i].tensor] = item_units[i] * problem.alignment;
  }
  return offsets;
}

// MinimizeBufsize's nodes for halving the gap per round, per node of the
// round's limit (the probe at the bound takes up to one limit per preorder):
// most of each round goes to the bound, which, when feasible, ends the search.
constexpr int64_t kDescentShare = 1;

int64_t FirstNodeLimit(const UnitProblem& problem) {
  return std::max<int64_t>(64, 2 * static_cast<int64_t>(problem.items.size()));
}

}  // namespace

Size PackingBufsize(const PackingProblem& problem, const std::vector<Offset>& offsets) {
  Size bufsize = 0;
  for (size_t t = 0; t < problem.tensors.size(); ++t) {
    bufsize = std::max(
        bufsize, AlignUp(SaturatingAdd(offsets[t], problem.tensors[t].size), problem.alignment));
  }
  for (const Obstacle& o : problem.obstacles) {
    bufsize = std::max(bufsize, AlignUp(SaturatingAdd(o.offset, o.tensor.size), problem.alignment));
  }
  return bufsize;
}

FitResult FitInCapacity(const PackingProblem& problem, Size capacity, const SearchLimits& limits) {
  const UnitProblem units(problem);
  Controller controller(limits);
  FitResult result;
  const Unit capacity_units = capacity / problem.alignment;
  if (units.lone_units > capacity_units) {
    result.fit = Fit::kDoesNotFit;
    return result;
  }
  int64_t remaining = limits.max_nodes;
  for (int64_t limit = FirstNodeLimit(units); remaining > 0 && !controller.Poll();
       limit = limit > kNoLimit / 2 ? kNoLimit : 2 * limit) {
    const Decision decision = Decide(units, capacity_units, std::min(limit, remaining), controller);
    result.nodes += decision.nodes;
    remaining -= decision.nodes;
    if (decision.fit == Fit::kUnknown) continue;
    result.fit = decision.fit;
    result.strategy = decision.strategy;
    if (decision.fit == Fit::kFits) result.offsets = ToOffsets(problem, units, decision.units);
    return result;
  }
  return result;
}

PackingResult MinimizeBufsize(const PackingProblem& problem, Size capacity,
                              std::vector<Offset> incumbent, const SearchLimits& limits) {
  const auto began = std::chrono::steady_clock::now();
  const UnitProblem units(problem);
  const Size a = problem.alignment;
  PackingResult result;
  result.offsets = std::move(incumbent);
  result.bufsize = PackingBufsize(problem, result.offsets);
  result.lower_bound = std::min(result.bufsize, units.lower_bound * a);
  result.improvements.push_back({0, result.bufsize});
  result.searched = units.searchable && result.bufsize <= capacity;
  if (!result.searched || result.proved_optimal()) return result;

  Controller controller(limits);
  Unit lower = result.lower_bound / a;
  Unit upper = result.bufsize / a;  // Aligned ends are multiples of a.
  const Unit floor_units = std::max(units.lone_units, units.obstacle_top);
  int64_t remaining = limits.max_nodes;
  // Returns whether the probe answered.
  const auto probe_at = [&](Unit at, int64_t limit) {
    const Decision decision = Decide(units, at, std::min(limit, remaining), controller);
    result.nodes += decision.nodes;
    remaining -= decision.nodes;
    if (decision.fit == Fit::kFits) {
      Unit top = floor_units;
      for (size_t i = 0; i < units.items.size(); ++i) {
        top = std::max(top, decision.units[i] + units.items[i].units);
      }
      if (top < upper) {
        upper = top;
        result.offsets = ToOffsets(problem, units, decision.units);
        result.bufsize = upper * a;
        result.strategy = decision.strategy;
        result.improvements.push_back(
            {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began)
                 .count(),
             result.bufsize});
      }
    } else if (decision.fit == Fit::kDoesNotFit) {
      lower = std::max(lower, at + 1);
    }
    return decision.fit != Fit::kUnknown;
  };
  // Rounds of doubling node limits. Each first tries the lower bound (often
  // feasible, and then optimal), then halves the gap to the best bufsize
  // known with a quarter of that limit per probe, kDescentShare limits in all.
  for (int64_t limit = FirstNodeLimit(units); lower < upper && remaining > 0 && !controller.Poll();
       limit = limit > kNoLimit / 2 ? kNoLimit : 2 * limit) {
    if (probe_at(lower, limit) || lower >= upper) continue;
    Unit low = lower + 1;  // The bound itself did not answer at this limit.
    const int64_t descent_end = result.nodes + kDescentShare * limit;
    while (low < upper && result.nodes < descent_end && remaining > 0 && !controller.Poll()) {
      const Unit probe = low + (upper - 1 - low) / 2;
      if (!probe_at(probe, std::max<int64_t>(1, limit / 4))) low = probe + 1;
      low = std::max(low, lower);
    }
  }
  result.lower_bound = std::min(result.bufsize, lower * a);
  controller.ThrowIfInterrupted();
  return result;
}

}  // namespace cadence_memplan
