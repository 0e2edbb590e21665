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

// The descent (BufsizeSearch; the comment there says how they are
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

namespace {

// MinimizeBufsize's search, once the incumbent is known to leave a gap to
// the bound: its state named, its schedule in short steps. The schedule,
// rounds of doubling node limits L (the restarts over the preorders):
// each round (Round) first resumes the bound's members to L nodes each:
// often they fit, and then the plan is optimal. Resumed, they cost half
// what restarting them from the root cost, and the descent gets the
// difference: kDescentShareNum / kDescentShareDen of the bound's nodes (a
// share that left every proof at the bound of A-K faster than before;
// docs/quality.md), below the best plan, each packing found taken at its
// real top (often well below the probe):
//   * one unit below the best plan (ProbeJustBelow): its members, favourite
//     first, are resumed from probe to probe and round to round (from a
//     dive's limit, doubling, then by L / kDescentLimitDivisor per probe)
//     until they answer. While the bound and the steps go unanswered, this
//     is where the budget goes, so a plan just below ours is found when a
//     search from scratch would find it;
//   * between two of those probes, and after a quick answer, a step toward
//     the bound (ProbeStep): fresh members, favourite first, with L /
//     kDescentLimitDivisor nodes each, at the best plan minus the step. A
//     quick answer doubles the step and probes again (a bisection toward
//     the bound while probes answer quickly, up to the bound's own
//     members); an unanswered one halves it, down to one unit and then back
//     to the first step: a capacity is not easier for being higher, and a
//     probe further down is a different search.
// When the descent of the last round that ran one gained at most 1 /
// kStallFraction of the gap to the bound, shares of this round's descent
// nodes first go to squeaky dives, then to the top repack, which starts
// from their plan when it is the best (half of what is left each, less
// while one gains nothing; ShareWith). Stalls come where the whole
// problem's searches run out of nodes (cut rectangles); of A-K, whose
// descents keep gaining, only F stalls (twice).
// The preorder that answered last (in the descent) runs first: one
// preorder tends to answer all the probes of an instance, and the nodes of
// the members before the winner are charged. When what is left cannot pay
// for a whole round (its bound's nodes and the descent's share), the bound
// gets its part of what is left (BoundLimit), so the descent keeps its
// share to the end instead of a last bound probe taking the rest. Only
// nodes decide, except that estimate with a deadline: deterministic under
// a node budget.
class BufsizeSearch {
 public:
  BufsizeSearch(const PackingProblem& problem, const UnitProblem& units, const SearchLimits& limits,
                std::chrono::steady_clock::time_point began, PackingResult incumbent)
      : problem_(problem),
        units_(units),
        limits_(limits),
        began_(began),
        alignment_(problem.alignment),
        floor_units_(std::max(units.lone_units, units.obstacle_top)),
        dive_(kDives * static_cast<int64_t>(units.items.size())),
        controller_(limits),
        result_(std::move(incumbent)),
        lower_(result_.lower_bound / alignment_),
        upper_(result_.bufsize / alignment_),  // Aligned ends are multiples of it.
        remaining_(limits.max_nodes),
        step_(std::max<Unit>(1, (upper_ - lower_) >> kFirstShift)),
        repack_step_(std::max<Unit>(1, (upper_ - lower_) >> kRepackFirstShift)) {}

  PackingResult Run() {
    for (int64_t limit = FirstNodeLimit(units_);
         lower_ < upper_ && remaining_ > 0 && !controller_.Poll(); limit = Doubled(limit)) {
      if (!Round(limit)) break;
    }
    result_.lower_bound = std::min(result_.bufsize, lower_ * alignment_);
    controller_.ThrowIfInterrupted();
    return std::move(result_);
  }

 private:
  static int64_t Doubled(int64_t value) { return value > kNoLimit / 2 ? kNoLimit : 2 * value; }

  // One round at node limit `limit` per member (see the class comment);
  // false when nothing is left to run.
  bool Round(int64_t limit) {
    const int64_t round_began = result_.nodes;
    if (!bound_ || bound_->capacity() != units_.Snap(lower_)) {
      bound_ = std::make_unique<Members>(units_, units_.Snap(lower_));
    }
    if (Decide(*bound_, BoundLimit(limit)).fit != Fit::kUnknown) return true;
    due_ += (result_.nodes - round_began) * kDescentShareNum / kDescentShareDen;
    if (stalled_) {
      ShareWith(dives_shift_, &BufsizeSearch::DiveSqueakily);
      ShareWith(repack_shift_, &BufsizeSearch::RepackTop);
    }
    const Unit upper_before = upper_;
    const int64_t descent_began = result_.nodes;
    Descend(std::max(FirstNodeLimit(units_), limit / kDescentLimitDivisor));
    if (result_.nodes > descent_began) {
      stalled_ = upper_before - upper_ <= (upper_before - lower_) / kStallFraction;
    }
    // Every member at the bound gave up, and the descent has nothing to run.
    return result_.nodes != round_began || !bound_->exhausted();
  }

  // The bound's members' node limit this round: `limit`, or their part of
  // what is left when that cannot pay for the whole round.
  int64_t BoundLimit(int64_t limit) const {
    const int64_t from = bound_->limit();
    const int64_t to = std::max(limit, from);
    const double round_cost = static_cast<double>(members_) * static_cast<double>(to - from) *
                              static_cast<double>(kDescentShareNum + kDescentShareDen) /
                              static_cast<double>(kDescentShareDen);
    const double left = NodesLeft();
    if (left >= round_cost) return to;
    return from + std::max<int64_t>(
                      1, static_cast<int64_t>(static_cast<double>(to - from) * left / round_cost));
  }

  // A packing whose top is `top` units, below the best plan: the best plan.
  void Take(std::vector<Offset> offsets, Unit top, const std::string& strategy) {
    upper_ = top;
    result_.offsets = std::move(offsets);
    result_.bufsize = upper_ * alignment_;
    result_.strategy = strategy;
    result_.improvements.push_back(
        {std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began_)
             .count(),
         result_.bufsize, result_.nodes});
  }

  // Runs `set` on to `limit` nodes per member (each visits at most its
  // share of remaining_ more): a packing found is taken at its real top, a
  // capacity proved too small raises the bound.
  Decision Decide(Members& set, int64_t limit) {
    const int64_t each = std::max<int64_t>(1, remaining_ / members_);
    Decision decision = set.Decide(std::min(limit, SaturatingAdd(set.limit(), each)), controller_);
    Charge(decision.nodes);
    if (decision.fit != Fit::kUnknown && &set != bound_.get()) favourite_ = decision.preorder;
    if (decision.fit == Fit::kFits) {
      const Unit top = std::max(floor_units_, units_.ItemsTop(decision.units));
      if (top < upper_) Take(ToOffsets(problem_, units_, decision.units), top, decision.strategy);
    } else if (decision.fit == Fit::kDoesNotFit) {
      lower_ = std::max(lower_, units_.GrainAbove(set.capacity()));
    }
    return decision;
  }

  void Charge(int64_t nodes) {
    result_.nodes += nodes;
    remaining_ -= nodes;
  }

  // The nodes this call may still visit: the node budget, and with a
  // deadline, as many as the nodes so far at their rate (an estimate).
  double NodesLeft() const {
    double left = static_cast<double>(remaining_);
    if (limits_.deadline != std::chrono::steady_clock::time_point::max() && result_.nodes > 0) {
      const auto now = std::chrono::steady_clock::now();
      const double spent = std::chrono::duration<double>(now - began_).count();
      const double ahead = std::chrono::duration<double>(limits_.deadline - now).count();
      if (spent > 0) left = std::min(left, static_cast<double>(result_.nodes) * ahead / spent);
    }
    return left;
  }

  // The capacity one unit below the best plan; the descent runs while it
  // lies above the bound (it admits a packing the bound's members do not).
  Unit JustBelow() const { return units_.Snap(upper_ - 1); }

  // A probe that answered within a dive's nodes or 1 / kQuick of its limit.
  bool Quick(const Decision& decision, int64_t probe_limit) const {
    return decision.fit == Fit::kFits && decision.nodes <= std::max(dive_, probe_limit / kQuick);
  }

  // The descent: probes below the best plan while it has nodes due.
  void Descend(int64_t probe_limit) {
    while (JustBelow() > lower_ && due_ > 0 && remaining_ > 0 && !controller_.Poll()) {
      // A step that does not follow a quick answer waits until the steps
      // have had at most 1 / kBelowWeight of what the probes one unit below had.
      if (step_ > 1 && (stepping_ || step_nodes_ * kBelowWeight <= below_nodes_)) {
        ProbeStep(probe_limit);
      } else if (!ProbeJustBelow(probe_limit)) {
        return;
      }
    }
  }

  // A probe at the best plan minus the step; adapts the step.
  void ProbeStep(int64_t probe_limit) {
    const int64_t spent = result_.nodes;
    const Unit target = units_.Snap(upper_ - std::min(step_, upper_ - lower_));
    Decision decision;
    if (target <= lower_) {  // The step reaches the bound: its own members.
      decision = Decide(*bound_, SaturatingAdd(bound_->limit(), probe_limit));
    } else {
      Members fresh(units_, target, favourite_);
      decision = Decide(fresh, probe_limit);
    }
    due_ -= result_.nodes - spent;
    step_nodes_ += result_.nodes - spent;
    if (Quick(decision, probe_limit)) {
      stepping_ = true;
      step_ = Doubled(step_);
      return;
    }
    if (decision.fit == Fit::kUnknown) {
      step_ /= 2;
      if (step_ <= 1) step_ = std::max<Unit>(2, (upper_ - lower_) >> kFirstShift);
    }
    stepping_ = false;
  }

  // A probe one unit below the best plan, resuming its members; false when
  // every one of them gave up (memory).
  bool ProbeJustBelow(int64_t probe_limit) {
    const int64_t spent = result_.nodes;
    if (!below_ || below_->capacity() != JustBelow()) {
      below_ = std::make_unique<Members>(units_, JustBelow(), favourite_);
    }
    if (below_->exhausted()) return false;
    const bool fresh = below_->limit() == 0;
    const int64_t to = fresh ? FirstNodeLimit(units_)
                             : std::min(SaturatingAdd(below_->limit(), below_->limit()),
                                        SaturatingAdd(below_->limit(), probe_limit));
    const Decision decision = Decide(*below_, to);
    due_ -= result_.nodes - spent;
    below_nodes_ += result_.nodes - spent;
    stepping_ = fresh && Quick(decision, probe_limit);
    return true;
  }

  // Runs `helper` with its share of the descent's nodes, due_ >> shift, and
  // adapts the share to whether it lowered the best plan.
  void ShareWith(int& shift, void (BufsizeSearch::*helper)(int64_t)) {
    if ((due_ >> shift) <= 0) return;
    const int64_t helper_began = result_.nodes;
    const Unit upper_before = upper_;
    (this->*helper)(due_ >> shift);
    due_ -= result_.nodes - helper_began;
    shift = upper_ < upper_before ? 1 : std::min(shift + 1, kStallShareMaxShift);
  }

  // The top repack (top_repack.h): when the descent stalls, repacking the
  // tensors that end highest, the others staying put, often lowers the best
  // plan where no search of the whole problem answers in its nodes (cut
  // rectangles, docs/quality.md). It works on its own copy of the best plan,
  // toward targets below it, in steps that double while it reaches them
  // and halve while it does not; given up at one unit, until the next round.
  void RepackTop(int64_t budget) {
    if (!repack_) repack_ = std::make_unique<TopRepack>(problem_, result_.offsets);
    if (PackingBufsize(problem_, repack_->offsets()) > result_.bufsize) {
      repack_->Reset(result_.offsets);
    }
    while (budget > 0 && remaining_ > 0 && JustBelow() >= lower_ && !controller_.Poll()) {
      const Unit target =
          std::max(lower_, units_.Snap(upper_ - std::min(repack_step_, upper_ - lower_)));
      const int64_t before = repack_->nodes();
      const bool reached = repack_->RepackTo(target * alignment_, std::min(budget, remaining_),
                                             kRepackFailures, limits_);
      Charge(repack_->nodes() - before);
      budget -= repack_->nodes() - before;
      if (reached) {
        const Unit top =
            std::max(floor_units_, PackingBufsize(problem_, repack_->offsets()) / alignment_);
        if (top < upper_) Take(repack_->offsets(), top, repack_->strategy());
        repack_step_ = Doubled(repack_step_);
      } else if (repack_step_ == 1) {
        return;
      } else {
        repack_step_ /= 2;
      }
    }
  }

  // Squeaky dives (squeaky_dives.h): greedy packings whose order is learned
  // from dive to dive, a search that leaves the depth-first one's subtree.
  void DiveSqueakily(int64_t budget) {
    if (!dives_) dives_ = std::make_unique<SqueakyDives>(units_);
    while (budget > 0 && remaining_ > 0 && JustBelow() >= lower_ && !controller_.Poll()) {
      const int64_t before = dives_->nodes();
      const bool dived =
          dives_->Dive(std::min(budget, remaining_), upper_, [this] { return controller_.Poll(); });
      Charge(dives_->nodes() - before);
      budget -= dives_->nodes() - before;
      if (!dived) return;
      const Unit top = std::max(floor_units_, dives_->top());
      if (top < upper_) Take(ToOffsets(problem_, units_, dives_->packing()), top, "squeaky dives");
    }
  }

  const PackingProblem& problem_;
  const UnitProblem& units_;
  const SearchLimits& limits_;
  const std::chrono::steady_clock::time_point began_;
  const Size alignment_;
  const Unit floor_units_;  // No packing's top lies below it.
  const int64_t members_ = static_cast<int64_t>(Preorders().size());
  const int64_t dive_;  // The nodes of kDives dives.
  Controller controller_;
  PackingResult result_;  // The best plan so far.
  Unit lower_;            // The bound, in units.
  Unit upper_;            // The best plan's top, in units.
  int64_t remaining_;     // Of the node budget.
  // The members at the bound, and one unit below the best plan: kept, and
  // resumed with larger limits, until their capacity changes.
  std::unique_ptr<Members> bound_, below_;
  int favourite_ = 0;  // The preorder of the descent's last answer: it runs first.
  Unit step_;  // The descent's next step below the best plan.
  bool stepping_ = true;  // The next descent probe is a step, not one unit below.
  // The descent's nodes in steps and one unit below the best plan.
  int64_t step_nodes_ = 0, below_nodes_ = 0;
  int64_t due_ = 0;  // The descent's nodes not yet spent (negative: overspent).
  // The helpers after a stall.
  std::unique_ptr<TopRepack> repack_;
  Unit repack_step_;
  std::unique_ptr<SqueakyDives> dives_;
  // Whether the last round whose descent ran gained at most 1 /
  // kStallFraction of the gap. (A round whose descent had nothing to spend,
  // its nodes already overspent, says nothing.)
  bool stalled_ = false;
  int repack_shift_ = 1, dives_shift_ = 1;
};

}  // namespace

PackingResult MinimizeBufsize(const PackingProblem& problem, Size capacity,
                              std::vector<Offset> incumbent, const SearchLimits& limits) {
  const auto began = std::chrono::steady_clock::now();
  const UnitProblem units(problem);
  PackingResult result;
  result.offsets = std::move(incumbent);
  result.bufsize = PackingBufsize(problem, result.offsets);
  result.lower_bound = std::min(result.bufsize, units.lower_bound * problem.alignment);
  result.improvements.push_back({0, result.bufsize});
  result.searched = units.searchable && result.bufsize <= capacity;
  if (!result.searched || result.proved_optimal()) return result;
  return BufsizeSearch(problem, units, limits, began, std::move(result)).Run();
}

}  // namespace cadence_memplan
