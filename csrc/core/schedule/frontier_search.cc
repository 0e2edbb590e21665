#include "core/schedule/frontier_search.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "core/common/errors.h"

namespace cadence_memplan::schedule::detail {
namespace {

// How often the meter looks at the clock, in work.
constexpr int64_t kPollEvery = 256;

// A unit's Zobrist key: a set's hash is the xor of its units' keys, so adding
// a unit updates it in O(1). splitmix64, for keys that depend on nothing else.
uint64_t UnitKey(UnitIndex unit) {
  uint64_t z = static_cast<uint64_t>(unit) + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A prefix of the schedule: the set S of units run so far (its bitset, in the
// bucket's arena), what it costs, and how it was reached.
struct State {
  Size peak = 0;      // The highest step of the best order of S found.
  Size resident = 0;  // Bytes alive after S: a function of S alone.
  uint64_t hash = 0;
  int64_t parent = -1;    // The history entry of the prefix it extends.
  int64_t words_at = 0;   // Its bitset in Bucket::words.
  int64_t ready_at = 0;   // Its candidates in Bucket::ready...
  int32_t ready_len = 0;  // ...sorted: the units that may run next.
  int64_t added_at = 0;   // The units it ran after its parent, in order,
  int32_t added_len = 0;  // in Bucket::added.
};

// The states of one prefix size.
struct Bucket {
  std::vector<State> states;
  std::vector<uint64_t> words;
  std::vector<int32_t> ready, added;
  std::unordered_multimap<uint64_t, int32_t> by_hash;
  bool truncated = false;
};

class Pass {
 public:
  Pass(const UnitGraph& graph, int64_t width, Size ceiling, int64_t max_states, WorkMeter& meter)
      : graph_(graph),
        width_(std::max<int64_t>(1, width)),
        ceiling_(ceiling),
        max_states_(max_states),
        meter_(meter),
        words_((graph.units + 63) / 64),
        set_(words_, 0) {}

  PassResult Run() {
    PassResult result;
    // The root: nothing run yet, then every unit that allocates nothing and
    // is ready.
    added_.clear();
    ready_.clear();
    for (UnitIndex u = 0; u < graph_.units; ++u) {
      if (MayRun(u)) ready_.push_back(u);
    }
    Size peak = 0, resident = graph_.resident_at_start;
    int32_t count = 0;
    RunFreeUnits(peak, resident, count);
    if (peak >= ceiling_) return Finished(result);
    Insert(count, State{peak, resident, HashOf(added_), -1}, added_, ready_);
    while (!buckets_.empty()) {
      auto first = buckets_.begin();
      const int32_t size = first->first;
      Bucket bucket = std::move(first->second);
      buckets_.erase(first);
      if (static_cast<int64_t>(bucket.states.size()) > width_) Truncate(bucket);
      result.truncated |= bucket.truncated;
      for (const int32_t index : BestFirst(bucket)) {
        const State& state = bucket.states[index];
        if (static_cast<int64_t>(history_parent_.size()) >= max_states_) return result;
        const int64_t id = Remember(bucket, state);
        if (size == graph_.units) {
          result.found = true;
          result.peak = state.peak;
          result.order = OrderOf(id);
          continue;
        }
        if (!Expand(bucket, state, size, id)) return result;
      }
    }
    return Finished(result);
  }

 private:
  static PassResult& Finished(PassResult& result) {
    result.finished = true;
    return result;
  }

  bool InSet(UnitIndex u) const { return (set_[u / 64] >> (u % 64)) & 1; }
  void Add(UnitIndex u) { set_[u / 64] |= uint64_t{1} << (u % 64); }
  void Remove(UnitIndex u) { set_[u / 64] &= ~(uint64_t{1} << (u % 64)); }

  static uint64_t HashOf(const std::vector<int32_t>& units) {
    uint64_t hash = 0;
    for (const int32_t u : units) hash ^= UnitKey(u);
    return hash;
  }

  // Whether `unit` may run next after the set: every predecessor has run, or
  // is a deferred source that may run now (and will, just before it).
  bool MayRun(UnitIndex unit) const {
    if (InSet(unit) || graph_.deferred_source[unit]) return false;
    for (const int32_t* q = graph_.preds.begin(unit); q != graph_.preds.end(unit); ++q) {
      if (InSet(*q)) continue;
      if (!graph_.deferred_source[*q]) return false;
      for (const int32_t* r = graph_.preds.begin(*q); r != graph_.preds.end(*q); ++r) {
        if (!InSet(*r)) return false;
      }
    }
    return true;
  }

  // Adds to `ready` the successors of `unit` that may now run, and those of
  // its deferred successors (which may have become runnable themselves).
  void NoteSuccessorsOf(UnitIndex unit, std::vector<int32_t>& ready) const {
    for (const int32_t* v = graph_.succs.begin(unit); v != graph_.succs.end(unit); ++v) {
      if (graph_.deferred_source[*v]) {
        for (const int32_t* w = graph_.succs.begin(*v); w != graph_.succs.end(*v); ++w) {
          if (MayRun(*w)) ready.push_back(*w);
        }
      } else if (MayRun(*v)) {
        ready.push_back(*v);
      }
    }
  }

  // Runs `unit` after the set: its step's bytes raise `peak`; then its
  // outputs that live on join `resident` and the inputs it read last leave.
  void Step(UnitIndex unit, Size& peak, Size& resident, int32_t& count) {
    const Size at_step =
        resident + graph_.out_all[unit] + (count == 0 ? graph_.first_step_only : 0);
    peak = std::max(peak, at_step);
    Add(unit);
    ++count;
    added_.push_back(unit);
    resident += graph_.out_kept[unit];
    for (const int32_t* b = graph_.inputs.begin(unit); b != graph_.inputs.end(unit); ++b) {
      bool last = true;
      for (const int32_t* v = graph_.users.begin(*b); v != graph_.users.end(*b) && last; ++v) {
        last = InSet(*v);
      }
      if (last) resident -= graph_.buffer_size[*b];
    }
  }

  // The first exchange rule: units that allocate nothing run as soon as
  // they are ready (every predecessor run), smallest index first.
  void RunFreeUnits(Size& peak, Size& resident, int32_t& count) {
    for (bool ran = true; ran;) {
      ran = false;
      for (size_t i = 0; i < ready_.size(); ++i) {
        const UnitIndex u = ready_[i];
        if (!graph_.allocates_nothing[u]) continue;
        bool all_run = true;
        for (const int32_t* q = graph_.preds.begin(u); q != graph_.preds.end(u) && all_run; ++q) {
          all_run = InSet(*q);
        }
        if (!all_run) continue;
        ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(i));
        Step(u, peak, resident, count);
        const size_t before = ready_.size();
        NoteSuccessorsOf(u, ready_);
        Merge(before);
        ran = true;
        break;
      }
    }
  }

  // Sorts the entries of ready_ from `before` on into the sorted rest.
  void Merge(size_t before) {
    std::sort(ready_.begin() + static_cast<std::ptrdiff_t>(before), ready_.end());
    std::inplace_merge(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(before),
                       ready_.end());
    ready_.erase(std::unique(ready_.begin(), ready_.end()), ready_.end());
  }

  // Every child of `state`: one per unit that may run next. False when the
  // budget ran out.
  bool Expand(const Bucket& bucket, const State& state, int32_t size, int64_t id) {
    std::copy_n(bucket.words.begin() + state.words_at, words_, set_.begin());
    const int32_t* candidates = bucket.ready.data() + state.ready_at;
    for (int32_t k = 0; k < state.ready_len; ++k) {
      if (!meter_.Charge(1)) return false;
      const UnitIndex unit = candidates[k];
      ready_.assign(candidates, candidates + state.ready_len);
      ready_.erase(ready_.begin() + k);
      added_.clear();
      Size peak = state.peak, resident = state.resident;
      int32_t count = size;
      // The second exchange rule: deferred sources run just before their
      // first successor.
      for (const int32_t* q = graph_.deferred_preds.begin(unit);
           q != graph_.deferred_preds.end(unit); ++q) {
        if (!InSet(*q)) Step(*q, peak, resident, count);
      }
      Step(unit, peak, resident, count);
      const size_t before = ready_.size();
      for (const int32_t u : added_) NoteSuccessorsOf(u, ready_);
      Merge(before);
      RunFreeUnits(peak, resident, count);
      if (peak < ceiling_) {
        Insert(count, State{peak, resident, state.hash ^ HashOf(added_), id}, added_, ready_);
      }
      for (const int32_t u : added_) Remove(u);
    }
    return true;
  }

  // Adds a state of `size` units (the set in set_) to its bucket, or lowers
  // the peak of the same set reached before.
  void Insert(int32_t size, State state, const std::vector<int32_t>& added,
              const std::vector<int32_t>& ready) {
    Bucket& bucket = buckets_[size];
    const auto [first, last] = bucket.by_hash.equal_range(state.hash);
    for (auto it = first; it != last; ++it) {
      State& known = bucket.states[it->second];
      if (!std::equal(set_.begin(), set_.end(), bucket.words.begin() + known.words_at)) continue;
      if (state.peak < known.peak) {
        known.peak = state.peak;
        known.parent = state.parent;
        known.added_at = static_cast<int64_t>(bucket.added.size());
        known.added_len = static_cast<int32_t>(added.size());
        bucket.added.insert(bucket.added.end(), added.begin(), added.end());
      }
      return;
    }
    state.words_at = static_cast<int64_t>(bucket.words.size());
    bucket.words.insert(bucket.words.end(), set_.begin(), set_.end());
    state.ready_at = static_cast<int64_t>(bucket.ready.size());
    state.ready_len = static_cast<int32_t>(ready.size());
    bucket.ready.insert(bucket.ready.end(), ready.begin(), ready.end());
    state.added_at = static_cast<int64_t>(bucket.added.size());
    state.added_len = static_cast<int32_t>(added.size());
    bucket.added.insert(bucket.added.end(), added.begin(), added.end());
    bucket.by_hash.emplace(state.hash, static_cast<int32_t>(bucket.states.size()));
    bucket.states.push_back(state);
    // Cut early, so that a bucket never holds much more than its width.
    if (static_cast<int64_t>(bucket.states.size()) > 2 * width_) Truncate(bucket);
  }

  // The bucket's states, best first: lowest peak, then fewest bytes alive,
  // then first reached (which makes the pass deterministic).
  static std::vector<int32_t> BestFirst(const Bucket& bucket) {
    std::vector<int32_t> order(bucket.states.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      const State &x = bucket.states[a], &y = bucket.states[b];
      return x.peak != y.peak ? x.peak < y.peak : x.resident < y.resident;
    });
    return order;
  }

  // Keeps the bucket's `width_` best states.
  void Truncate(Bucket& bucket) const {
    std::vector<int32_t> keep = BestFirst(bucket);
    keep.resize(static_cast<size_t>(width_));
    Bucket kept;
    kept.truncated = true;
    for (const int32_t index : keep) {
      State state = bucket.states[index];
      const auto copy = [](const auto& from, int64_t at, int64_t len, auto& to) {
        const int64_t where = static_cast<int64_t>(to.size());
        to.insert(to.end(), from.begin() + at, from.begin() + at + len);
        return where;
      };
      state.words_at = copy(bucket.words, state.words_at, words_, kept.words);
      state.ready_at = copy(bucket.ready, state.ready_at, state.ready_len, kept.ready);
      state.added_at = copy(bucket.added, state.added_at, state.added_len, kept.added);
      kept.by_hash.emplace(state.hash, static_cast<int32_t>(kept.states.size()));
      kept.states.push_back(state);
    }
    bucket = std::move(kept);
  }

  int64_t Remember(const Bucket& bucket, const State& state) {
    history_parent_.push_back(state.parent);
    history_added_at_.push_back(static_cast<int64_t>(history_added_.size()));
    history_added_.insert(history_added_.end(), bucket.added.begin() + state.added_at,
                          bucket.added.begin() + state.added_at + state.added_len);
    history_added_at_.push_back(static_cast<int64_t>(history_added_.size()));
    return static_cast<int64_t>(history_parent_.size()) - 1;
  }

  std::vector<UnitIndex> OrderOf(int64_t id) const {
    std::vector<UnitIndex> order;
    for (; id >= 0; id = history_parent_[id]) {
      const int64_t from = history_added_at_[2 * id], to = history_added_at_[2 * id + 1];
      for (int64_t k = to - 1; k >= from; --k) order.push_back(history_added_[k]);
    }
    std::reverse(order.begin(), order.end());
    return order;
  }

  const UnitGraph& graph_;
  const int64_t width_;
  const Size ceiling_;
  const int64_t max_states_;
  WorkMeter& meter_;
  const int32_t words_;
  std::vector<uint64_t> set_;   // The set being extended, then its child.
  std::vector<int32_t> ready_;  // The child's candidates, sorted.
  std::vector<int32_t> added_;  // The units the child ran, in order.
  std::map<int32_t, Bucket> buckets_;
  // Every kept state: its parent and the units it ran after it.
  std::vector<int64_t> history_parent_, history_added_at_;
  std::vector<int32_t> history_added_;
};

}  // namespace

WorkMeter::WorkMeter(const ScheduleOptions& options) : options_(options) {}

bool WorkMeter::Charge(int64_t work) {
  if (spent_ >= options_.work_budget || cut_short_) return false;
  spent_ += work;
  if (spent_ < next_poll_) return true;
  next_poll_ = spent_ + kPollEvery;
  if (options_.deadline != std::chrono::steady_clock::time_point::max() &&
      std::chrono::steady_clock::now() > options_.deadline) {
    cut_short_ = true;
    return false;
  }
  options_.interrupt.Poll();
  return true;
}

PassResult SearchFrontier(const UnitGraph& graph, int64_t width, Size ceiling, int64_t max_states,
                          WorkMeter& meter) {
  return Pass(graph, width, ceiling, max_states, meter).Run();
}

}  // namespace cadence_memplan::schedule::detail
