#include "core/search/exact_search.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <utility>

#include "core/common/errors.h"
#include "core/common/threads.h"
#include "core/search/canonical_search.h"
#include "core/search/squeaky_dives.h"
#include "core/search/top_repack.h"
#include "core/search/unit_problem.h"

namespace cadence_memplan {
namespace {

using detail::CanonicalSearch;
using detail::kNoLimit;
using detail::Outcome;
using detail::SqueakyDives;
using detail::Unit;
using detail::UnitProblem;

// Calls of Controller::Poll (about one per node) on the calling thread
// between two polls of the interrupt.
constexpr int64_t kNodesPerPoll = 256;

// What stops a search: the deadline (only when one is set: the clock is
// read only then), an interruption (polled from the thread that created the
// controller, every kNodesPerPoll of its polls) or a node limit.
class Controller {
 public:
  explicit Controller(const SearchLimits& limits)
      : limits_(limits),
        owner_(std::this_thread::get_id()),
        has_deadline_(limits.deadline != std::chrono::steady_clock::time_point::max()) {
    limits_.interrupt.Begin(Phase::kSearch);
  }

  // True when every search should stop now.
  bool Poll() {
    if (stopped_.load(std::memory_order_relaxed)) return true;
    if (has_deadline_ && std::chrono::steady_clock::now() > limits_.deadline) {
      stopped_ = true;
      return true;
    }
    if (std::this_thread::get_id() == owner_ && --until_poll_ <= 0) {
      until_poll_ = kNodesPerPoll;
      return PollInterrupt();
    }
    return false;
  }
  // Polls the interrupt now (the calling thread only, while it waits for the
  // others); true when every search should stop.
  bool PollInterrupt() {
    if (limits_.interrupt.Stopping()) {
      interrupted_ = true;
      stopped_ = true;
    }
    return stopped_.load();
  }
  bool stopped() const { return stopped_.load(); }
  void ThrowIfInterrupted() const {
    if (interrupted_.load()) throw Interrupted();
  }
  int threads() const { return std::max(1, limits_.threads); }

 private:
  const SearchLimits& limits_;
  const std::thread::id owner_;
  const bool has_deadline_;
  int64_t until_poll_ = kNodesPerPoll;  // Touched by the owner's polls only.
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
  int preorder = -1;  // Which answered: an index into Preorders().
};

// The members of the decisions at one capacity, kept between them: a
// decision with a larger node limit resumes each member where the last one
// stopped (canonical_search.h), so that raising the limit round after round
// (the restarts over the preorders) visits each node once instead of
// replaying every node of the rounds before. An answer is final: a member
// that answered, or gave up, is not run again.
class Members {
 public:
  // The members run in preorder order, but `first` (an index into
  // Preorders()) before the others: it decides which answer counts.
  Members(const UnitProblem& problem, Unit capacity, int first = 0)
      : problem_(&problem), capacity_(capacity), searches_(Preorders().size()) {
    order_.push_back(first);
    for (int k = 0; k < static_cast<int>(Preorders().size()); ++k) {
      if (k != first) order_.push_back(k);
    }
  }

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
    const int count = static_cast<int>(order_.size());
    limit_ = std::max(limit_, node_limit);
    std::vector<Outcome> outcomes(count, Outcome::kAborted);
    std::vector<int64_t> nodes(count, 0);
    std::atomic<int> answered{count};  // The lowest member with an answer.
    std::atomic<int> next{0};
    const auto work = [&] {
      for (int k; (k = next++) < count;) {
        if (answered.load() < k || controller.stopped()) continue;
        if (!searches_[k]) {
          searches_[k] =
              std::make_unique<CanonicalSearch>(*problem_, capacity_, preorders[order_[k]]);
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
    RunOnThreads(std::min(controller.threads(), count), work, [&] { controller.PollInterrupt(); });
    controller.ThrowIfInterrupted();

    Decision decision;
    const int winner = answered.load();
    for (int k = 0; k < count && k <= winner; ++k) decision.nodes += nodes[k];
    if (winner == count) return decision;
    decision.fit = outcomes[winner] == Outcome::kFound ? Fit::kFits : Fit::kDoesNotFit;
    decision.strategy = "exact search, preorder " + preorders[order_[winner]];
    decision.preorder = order_[winner];
    if (decision.fit == Fit::kFits) decision.units = searches_[winner]->solution();
    return decision;
  }

 private:
  const UnitProblem* problem_;
  Unit capacity_;
  int64_t limit_ = 0;
  std::vector<int> order_;                                  // Preorder indices, in member order.
  std::vector<std::unique_ptr<CanonicalSearch>> searches_;  // Per member, made when first run.
};

std::vector<Offset> ToOffsets(const PackingProblem& problem, const UnitProblem& units,
                              const std::vector<Unit>& item_units) {
  std::vector<Offset> offsets(problem.tensors.size(), 0);
  for (size_t i = 0; i < units.items.size(); ++i) {
    offsets[units.items[i].tensor] = item_units[i] * problem.alignment;
  }
  return offsets;
}

// The descent (MinimizeBufsize; the comment there says how they are
// used). Each round (node limit L per member) gives the descent
// kDescentShareNum / kDescentShareDen of the bound's nodes, in probes of
// L / kDescentLimitDivisor nodes per member. A probe answers quickly within
// 1/kQuick of that, or within kDives dives (a dive, a search that answers
// without backtracking, visits one node per item). The first step below the
// best plan is the gap to the bound >> kFirstShift.
constexpr int64_t kDescentShareNum = 4;
constexpr int64_t kDescentShareDen = 3;
constexpr int64_t kDescentLimitDivisor = 4;
constexpr int64_t kQuick = 2;
constexpr int64_t kDives = 2;
constexpr int kFirstShift = 3;
constexpr int64_t kBelowWeight = 2;
// In a round after a descent that gained at most 1 / kStallFraction of the
// gap to the bound, squeaky dives (squeaky_dives.h), then the top repack
// (top_repack.h), each get half of the round's descent nodes left while
// they gain, each call that gains nothing halving that share, down to
// 2^-kStallShareMaxShift. The repack's first step below the best plan is the
// gap >> kRepackFirstShift, and a target is given up after kRepackFailures
// repacks in a row that found nothing.
constexpr Unit kStallFraction = 64;
constexpr int kStallShareMaxShift = 4;
constexpr int kRepackFirstShift = 4;
constexpr int kRepackFailures = 8;

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
  // The loop may end on a poll that said stop: that is no answer.
  controller.ThrowIfInterrupted();
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
  const int64_t members = static_cast<int64_t>(Preorders().size());
  // The members at the bound, and one unit below the best plan: kept, and
  // resumed with larger limits, until their capacity changes.
  std::unique_ptr<Members> bound, below;
  int favourite = 0;  // The preorder of the descent's last answer: it runs first.
  // A packing whose top is `top` units, below the best plan: the best plan.
  const auto take = [&](std::vector<Offset> offsets, Unit top, const std::string& strategy) {
    upper = top;
    result.offsets = std::move(offsets);
    result.bufsize = upper * a;
    result.strategy = strategy;
    result.improvements.push_back(
        {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began)
             .count(),
         result.bufsize, result.nodes});
  };
  // Runs `set` on to `limit` nodes per member (each visits at most its
  // share of `remaining` more): a packing found is taken at its real top, a
  // capacity proved too small raises the bound.
  const auto decide = [&](Members& set, int64_t limit) {
    const int64_t each = std::max<int64_t>(1, remaining / members);
    Decision decision = set.Decide(std::min(limit, SaturatingAdd(set.limit(), each)), controller);
    result.nodes += decision.nodes;
    remaining -= decision.nodes;
    if (decision.fit != Fit::kUnknown && &set != bound.get()) favourite = decision.preorder;
    if (decision.fit == Fit::kFits) {
      const Unit top = std::max(floor_units, units.ItemsTop(decision.units));
      if (top < upper) take(ToOffsets(problem, units, decision.units), top, decision.strategy);
    } else if (decision.fit == Fit::kDoesNotFit) {
      lower = std::max(lower, units.GrainAbove(set.capacity()));
    }
    return decision;
  };
  // The nodes this call may still visit: the node budget, and with a
  // deadline, as many as the nodes so far at their rate (an estimate).
  const auto nodes_left = [&] {
    double left = static_cast<double>(remaining);
    if (limits.deadline != std::chrono::steady_clock::time_point::max() && result.nodes > 0) {
      const auto now = std::chrono::steady_clock::now();
      const double spent = std::chrono::duration<double>(now - began).count();
      const double ahead = std::chrono::duration<double>(limits.deadline - now).count();
      if (spent > 0) left = std::min(left, static_cast<double>(result.nodes) * ahead / spent);
    }
    return left;
  };
  // The capacity one unit below the best plan; the descent runs while it
  // lies above the bound (it admits a packing the bound's members do not).
  const auto just_below = [&] { return units.Snap(upper - 1); };
  // The schedule. Rounds of doubling node limits L (the restarts over the
  // preorders). Each round first resumes the bound's members to L nodes
  // each: often they fit, and then the plan is optimal. Resumed, they cost
  // half what restarting them from the root cost, and the descent gets the
  // difference: kDescentShareNum / kDescentShareDen of the bound's nodes
  // (a share that left every proof at the bound of A-K faster than
  // before; docs/quality.md), below the best plan, each packing found
  // taken at its real top (often well below the probe):
  //   * one unit below the best plan: its members, favourite first, are
  //     resumed from probe to probe and round to round (from a dive's
  //     limit, doubling, then by L / kDescentLimitDivisor per probe) until
  //     they answer. While the bound and the steps go unanswered, this is
  //     where the budget goes, so a plan just below ours is found when a
  //     search from scratch would find it;
  //   * between two of those probes, and after a quick answer, a step
  //     toward the bound: fresh members, favourite first, with L /
  //     kDescentLimitDivisor nodes each, at the best plan minus the step.
  //     A quick answer doubles the step and probes again (a bisection
  //     toward the bound while probes answer quickly, up to the bound's own
  //     members); an unanswered one halves it, down to one unit and then
  //     back to the first step: a capacity is not easier for being higher,
  //     and a probe further down is a different search.
  // When the descent of the last round that ran one gained at most 1 /
  // kStallFraction of the gap to the bound, shares of this round's descent
  // nodes first go to squeaky dives, then to the top repack, which starts
  // from their plan when it is the best (half of what is left each, less
  // while one gains nothing; below). Stalls come where the whole problem's
  // searches run out of nodes (cut rectangles); of A-K, whose descents keep
  // gaining, only F stalls (twice).
  // The preorder that answered last (in the descent) runs first: one
  // preorder tends to answer all the probes of an instance, and the nodes
  // of the members before the winner are charged. When what is left cannot
  // pay for a whole round (its bound's nodes and the descent's share), the
  // bound gets its part of what is left, so the descent keeps its share to
  // the end instead of a last bound probe taking the rest. Only nodes
  // decide, except that estimate with a deadline: deterministic under a
  // node budget.
  Unit step = std::max<Unit>(1, (upper - lower) >> kFirstShift);
  bool stepping = true;  // The next descent probe is a step, not one unit below.
  // The descent's nodes in steps and one unit below the best plan: a step
  // that does not follow a quick answer waits until the steps have had at
  // most 1 / kBelowWeight of what the probes one unit below had.
  int64_t step_nodes = 0, below_nodes = 0;
  const int64_t dive = kDives * static_cast<int64_t>(units.items.size());
  int64_t due = 0;  // The descent's nodes not yet spent (negative: overspent).
  const auto descend = [&](int64_t probe_limit) {
    const auto quick = [&](const Decision& d) {
      return d.fit == Fit::kFits && d.nodes <= std::max(dive, probe_limit / kQuick);
    };
    while (just_below() > lower && due > 0 && remaining > 0 && !controller.Poll()) {
      const int64_t spent = result.nodes;
      if (step > 1 && (stepping || step_nodes * kBelowWeight <= below_nodes)) {
        const Unit target = units.Snap(upper - std::min(step, upper - lower));
        Decision decision;
        if (target <= lower) {  // The step reaches the bound: its own members.
          decision = decide(*bound, SaturatingAdd(bound->limit(), probe_limit));
        } else {
          Members fresh(units, target, favourite);
          decision = decide(fresh, probe_limit);
        }
        due -= result.nodes - spent;
        step_nodes += result.nodes - spent;
        if (quick(decision)) {
          stepping = true;
          step = step > kNoLimit / 2 ? kNoLimit : 2 * step;
        } else {
          if (decision.fit == Fit::kUnknown) {
            step /= 2;
            if (step <= 1) step = std::max<Unit>(2, (upper - lower) >> kFirstShift);
          }
          stepping = false;
        }
        continue;
      }
      if (!below || below->capacity() != just_below()) {
        below = std::make_unique<Members>(units, just_below(), favourite);
      }
      if (below->exhausted()) return;  // Every member gave up (memory).
      const bool fresh = below->limit() == 0;
      const int64_t to = fresh ? FirstNodeLimit(units)
                               : std::min(SaturatingAdd(below->limit(), below->limit()),
                                          SaturatingAdd(below->limit(), probe_limit));
      const Decision decision = decide(*below, to);
      due -= result.nodes - spent;
      below_nodes += result.nodes - spent;
      stepping = fresh && quick(decision);
    }
  };
  // The top repack (top_repack.h): when the descent stalls, repacking the
  // tensors that end highest, the others staying put, often lowers the best
  // plan where no search of the whole problem answers in its nodes (cut
  // rectangles, docs/quality.md). It works on its own copy of the best plan,
  // toward targets below it, in steps that double while it reaches them
  // and halve while it does not; given up at one unit, until the next round.
  std::unique_ptr<TopRepack> repack;
  Unit repack_step = std::max<Unit>(1, (upper - lower) >> kRepackFirstShift);
  const auto repack_top = [&](int64_t budget) {
    if (!repack) repack = std::make_unique<TopRepack>(problem, result.offsets);
    if (PackingBufsize(problem, repack->offsets()) > result.bufsize) repack->Reset(result.offsets);
    while (budget > 0 && remaining > 0 && just_below() >= lower && !controller.Poll()) {
      const Unit target = std::max(lower, units.Snap(upper - std::min(repack_step, upper - lower)));
      const int64_t before = repack->nodes();
      const bool reached =
          repack->RepackTo(target * a, std::min(budget, remaining), kRepackFailures, limits);
      const int64_t spent = repack->nodes() - before;
      result.nodes += spent;
      remaining -= spent;
      budget -= spent;
      if (reached) {
        const Unit top = std::max(floor_units, PackingBufsize(problem, repack->offsets()) / a);
        if (top < upper) take(repack->offsets(), top, repack->strategy());
        repack_step = repack_step > kNoLimit / 2 ? kNoLimit : 2 * repack_step;
      } else if (repack_step == 1) {
        return;
      } else {
        repack_step /= 2;
      }
    }
  };
  // Squeaky dives (squeaky_dives.h): greedy packings whose order is learned
  // from dive to dive, a search that leaves the depth-first one's subtree.
  std::unique_ptr<SqueakyDives> dives;
  const auto squeaky_dives = [&](int64_t budget) {
    if (!dives) dives = std::make_unique<SqueakyDives>(units);
    while (budget > 0 && remaining > 0 && just_below() >= lower && !controller.Poll()) {
      const int64_t before = dives->nodes();
      const bool dived =
          dives->Dive(std::min(budget, remaining), upper, [&] { return controller.Poll(); });
      const int64_t spent = dives->nodes() - before;
      result.nodes += spent;
      remaining -= spent;
      budget -= spent;
      if (!dived) return;
      const Unit top = std::max(floor_units, dives->top());
      if (top < upper) take(ToOffsets(problem, units, dives->packing()), top, "squeaky dives");
    }
  };
  // Whether the last round whose descent ran gained at most 1 /
  // kStallFraction of the gap. (A round whose descent had nothing to spend,
  // its nodes already overspent, says nothing.)
  bool stalled = false;
  // Runs `helper` with its share of the descent's nodes, due >> shift, and
  // adapts the share to whether it lowered the best plan.
  const auto share_with = [&](int& shift, const auto& helper) {
    if ((due >> shift) <= 0) return;
    const int64_t helper_began = result.nodes;
    const Unit upper_before = upper;
    helper(due >> shift);
    due -= result.nodes - helper_began;
    shift = upper < upper_before ? 1 : std::min(shift + 1, kStallShareMaxShift);
  };
  int repack_shift = 1, dives_shift = 1;
  for (int64_t limit = FirstNodeLimit(units); lower < upper && remaining > 0 && !controller.Poll();
       limit = limit > kNoLimit / 2 ? kNoLimit : 2 * limit) {
    const int64_t round_began = result.nodes;
    if (!bound || bound->capacity() != units.Snap(lower)) {
      bound = std::make_unique<Members>(units, units.Snap(lower));
    }
    const int64_t from = bound->limit();
    int64_t to = std::max(limit, from);
    const double round_cost = static_cast<double>(members) * static_cast<double>(to - from) *
                              static_cast<double>(kDescentShareNum + kDescentShareDen) /
                              static_cast<double>(kDescentShareDen);
    const double left = nodes_left();
    if (left < round_cost) {
      to = from + std::max<int64_t>(
                      1, static_cast<int64_t>(static_cast<double>(to - from) * left / round_cost));
    }
    if (decide(*bound, to).fit != Fit::kUnknown) continue;
    due += (result.nodes - round_began) * kDescentShareNum / kDescentShareDen;
    if (stalled) {
      share_with(dives_shift, squeaky_dives);
      share_with(repack_shift, repack_top);
    }
    const Unit upper_before = upper;
    const int64_t descent_began = result.nodes;
    descend(std::max(FirstNodeLimit(units), limit / kDescentLimitDivisor));
    if (result.nodes > descent_began) {
      stalled = upper_before - upper <= (upper_before - lower) / kStallFraction;
    }
    // Every member at the bound gave up, and the descent has nothing to run.
    if (result.nodes == round_began && bound->exhausted()) break;
  }
  result.lower_bound = std::min(result.bufsize, lower * a);
  controller.ThrowIfInterrupted();
  return result;
}

}  // namespace cadence_memplan
