#include "exact_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "canonical_search.h"
#include "planner.h"
#include "unit_problem.h"

namespace cadence_memplan {
namespace {

using detail::CanonicalSearch;
using detail::kNoLimit;
using detail::Outcome;
using detail::Unit;
using detail::UnitProblem;

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

// The static preorders, tried in this order (MiniMalloc's three).
const std::vector<std::string>& Preorders() {
  static const std::vector<std::string> preorders = {"TWA", "WAT", "TAW"};
  return preorders;
}

// One decision at `capacity` units: every preorder's search, each up to a
// node limit, on up to limits.threads threads. The answer is the first
// member's, in preorder order, that reached one; the nodes charged are those
// each member visited in this call, for that member and the members before
// it, so neither depends on threads.
struct Decision {
  Fit fit = Fit::kUnknown;
  std::vector<Unit> units;  // Per item, with kFits.
  int64_t nodes = 0;
  std::string strategy;
};

// The members of the decisions at one capacity, kept between them: a
// decision with a larger node limit resumes each member where the last one
// stopped (canonical_search.h), so that raising the limit round after round
// (the restarts over the preorders) visits each node once instead of
// replaying every node of the rounds before. An answer is final: a member
// that answered, or gave up, is not run again.
class Members {
 public:
  Members(const UnitProblem& problem, Unit capacity)
      : problem_(&problem), capacity_(capacity), searches_(Preorders().size()) {}

  Unit capacity() const { return capacity_; }
  // The node limit of the last decision: every member has visited at most
  // this many nodes, and those that are still open exactly as many, unless
  // the deadline stopped them.
  int64_t limit() const { return limit_; }
  // Nodes visited by all members since they were made.
  int64_t nodes() const {
    int64_t sum = 0;
    for (const auto& search : searches_) sum += search ? search->nodes() : 0;
    return sum;
  }

  // Every member gave up (canonical_search.h): no decision here answers.
  bool exhausted() const {
    for (const auto& search : searches_) {
      if (!search || !search->gave_up()) return false;
    }
    return true;
  }

  // Runs every member on to `node_limit` nodes in all (since it was made).
  Decision Decide(int64_t node_limit, Controller& controller) {
    const std::vector<std::string>& preorders = Preorders();
    const int count = static_cast<int>(preorders.size());
    limit_ = std::max(limit_, node_limit);
    std::vector<Outcome> outcomes(count, Outcome::kAborted);
    std::vector<int64_t> nodes(count, 0);
    std::atomic<int> answered{count};  // The lowest member with an answer.
    std::atomic<int> next{0};
    std::mutex mutex;
    std::condition_variable done;
    int finished_threads = 0;
    const auto work = [&] {
      for (int k; (k = next++) < count;) {
        if (answered.load() < k || controller.stopped()) continue;
        if (!searches_[k]) {
          searches_[k] = std::make_unique<CanonicalSearch>(*problem_, capacity_, preorders[k]);
        }
        CanonicalSearch& search = *searches_[k];
        const int64_t before = search.nodes();
        outcomes[k] =
            search.Run(node_limit, [&, k] { return answered.load() < k || controller.Poll(); });
        nodes[k] = search.nodes() - before;
        if (outcomes[k] == Outcome::kAborted) continue;
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
    if (decision.fit == Fit::kFits) decision.units = searches_[winner]->solution();
    return decision;
  }

 private:
  const UnitProblem* problem_;
  Unit capacity_;
  int64_t limit_ = 0;
  std::vector<std::unique_ptr<CanonicalSearch>> searches_;  // Per preorder, made when first run.
};

std::vector<Offset> ToOffsets(const PackingProblem& problem, const UnitProblem& units,
                              const std::vector<Unit>& item_units) {
  std::vector<Offset> offsets(problem.tensors.size(), 0);
  for (size_t i = 0; i < units.items.size(); ++i) {
    offsets[units.items[i].tensor] = item_units[i] * problem.alignment;
  }
  return offsets;
}

// The descent (MinimizeBufsize). Each round (node limit L) probes the
// bound with L per preorder, then descends with L / kDescentLimitDivisor per
// probe until it has spent kDescentShare * L nodes: the share the halving
// toward the bound had, so that proofs at the bound (A-K) cost what they
// did. A probe is quick when its decision took at most 1/kQuick of its
// limit. The first step below the best plan is the gap (best - bound) >>
// kFirstShift.
constexpr int64_t kQuick = 2;
constexpr int64_t kDescentLimitDivisor = 4;
constexpr int64_t kDescentShare = 1;
constexpr int kFirstShift = 3;

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
  const Unit capacity_units = units.Snap(capacity / problem.alignment);
  if (units.lone_units > capacity / problem.alignment) {
    result.fit = Fit::kDoesNotFit;
    return result;
  }
  if (!units.searchable) return result;  // Too large to list: kUnknown.
  int64_t remaining = limits.max_nodes;
  // One set of members, resumed with a doubled limit each round.
  Members members(units, capacity_units);
  for (int64_t limit = FirstNodeLimit(units); remaining > 0 && !controller.Poll();
       limit = limit > kNoLimit / 2 ? kNoLimit : 2 * limit) {
    if (members.exhausted()) break;
    const Decision decision =
        members.Decide(std::min(limit, SaturatingAdd(members.limit(), remaining)), controller);
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
  // Probes capacity `at` >= lower (in units): the items at Snap(at), which
  // admits the same packings (unit_problem.h). Returns the answer.
  const auto probe_at = [&](Unit at, int64_t limit) {
    // Fresh members: this schedule probes a capacity once per limit.
    Members members(units, units.Snap(at));
    const Decision decision = members.Decide(std::min(limit, remaining), controller);
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
      lower = std::max(lower, units.GrainAbove(at));
    }
    return decision.fit;
  };
  // Whether a capacity below the best plan admits a different packing:
  // some multiple of the grain lies in (lower, upper).
  const auto room = [&] { return units.Snap(upper - 1) > lower; };
  // Rounds of doubling node limits L (the restarts over the preorders).
  // Each round first probes the bound with L (often feasible, and then
  // optimal: it ends the search). Then it descends from the best plan with
  // L / kDescentLimitDivisor per probe: a probe a step below it, each packing
  // found taken at its real top (often well below the probe). The step is
  // the gap to the bound shifted right: a quick answer halves the shift (the
  // step doubles: a bisection toward the bound only while probes answer
  // quickly, up to the bound itself, probed with L), an unanswered probe
  // raises it (the step halves) for the rest of the search, and a probe one
  // unit below the best plan that does not answer ends the round (it needs a
  // larger limit). Once a step has gone unanswered, every other probe is one
  // unit below the best plan: a packing there, when one exists, is often
  // found at a limit where the larger steps fail, and its real top is often
  // well below it; without them the step would have to halve down to one
  // unit, a failure at a time, before the best plan moves again (the stall
  // of issue 34). Only nodes decide, never time: deterministic.
  int shift = kFirstShift;
  bool just_below = false;  // The last probe was one unit below the best plan.
  for (int64_t limit = FirstNodeLimit(units); lower < upper && remaining > 0 && !controller.Poll();
       limit = limit > kNoLimit / 2 ? kNoLimit : 2 * limit) {
    if (probe_at(lower, limit) != Fit::kUnknown) continue;
    const int64_t descent_limit = std::max(FirstNodeLimit(units), limit / kDescentLimitDivisor);
    const int64_t descent_end =
        result.nodes + (limit > kNoLimit / kDescentShare ? kNoLimit : kDescentShare * limit);
    while (room() && result.nodes < descent_end && remaining > 0 && !controller.Poll()) {
      const Unit step = shift >= 62 ? 1 : std::max<Unit>(1, (upper - lower) >> shift);
      just_below = !just_below && step > 1 && shift > kFirstShift;
      const Unit target = just_below ? upper - 1 : upper - step;
      const int64_t before = result.nodes;
      const Fit fit = probe_at(target, target == lower ? limit : descent_limit);
      if (just_below) continue;
      if (fit == Fit::kFits) {
        if (result.nodes - before <= descent_limit / kQuick) shift = std::max(0, shift - 1);
      } else if (fit == Fit::kUnknown) {
        if (step == 1) break;  // Just below the best plan, unanswered: the next round.
        ++shift;
      }
    }
  }
  result.lower_bound = std::min(result.bufsize, lower * a);
  controller.ThrowIfInterrupted();
  return result;
}

}  // namespace cadence_memplan
