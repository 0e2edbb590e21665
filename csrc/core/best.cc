#include "best.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "validator.h"

namespace cadence_memplan {
namespace {

// Whether `a` is strictly better than `b` under PlanCost.
bool Better(const std::vector<Size>& a, const std::vector<Size>& b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

// Tensors by `key`, largest first; ties by size, largest first, then by index.
template <typename Key>
std::vector<TensorIndex> OrderBy(const std::vector<Tensor>& tensors, const std::vector<Key>& key) {
  std::vector<TensorIndex> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<TensorIndex>(i);
  std::sort(order.begin(), order.end(), [&](TensorIndex a, TensorIndex b) {
    if (key[a] != key[b]) return key[a] > key[b];
    if (tensors[a].size != tensors[b].size) return tensors[a].size > tensors[b].size;
    return a < b;
  });
  return order;
}

// For each tensor, the number and the bytes of the tensors alive with it
// (itself included; 0 for an empty lifetime).
void OverlapTotals(const std::vector<Tensor>& tensors, std::vector<double>* count,
                   std::vector<double>* bytes) {
  std::vector<std::pair<Time, Size>> starts, ends;
  for (const Tensor& t : tensors) {
    if (t.lifetime.empty()) continue;
    starts.push_back({t.lifetime.start, t.size});
    ends.push_back({t.lifetime.end, t.size});
  }
  std::sort(starts.begin(), starts.end());
  std::sort(ends.begin(), ends.end());
  // Prefix sums in doubles: bytes may add up past 2^63.
  std::vector<double> start_bytes(starts.size() + 1, 0), end_bytes(ends.size() + 1, 0);
  for (size_t k = 0; k < starts.size(); ++k) {
    start_bytes[k + 1] = start_bytes[k] + static_cast<double>(starts[k].second);
    end_bytes[k + 1] = end_bytes[k] + static_cast<double>(ends[k].second);
  }
  count->assign(tensors.size(), 0);
  bytes->assign(tensors.size(), 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Lifetime& lifetime = tensors[i].lifetime;
    if (lifetime.empty()) continue;
    // Alive with i: started by i's end and not ended before i's start.
    const size_t started = std::upper_bound(starts.begin(), starts.end(),
                                            std::pair<Time, Size>{lifetime.end, kMaxByteValue}) -
                           starts.begin();
    const size_t ended =
        std::lower_bound(ends.begin(), ends.end(), std::pair<Time, Size>{lifetime.start, -1}) -
        ends.begin();
    (*count)[i] = static_cast<double>(started) - static_cast<double>(ended);
    (*bytes)[i] = start_bytes[started] - end_bytes[ended];
  }
}

// Fixed, so that the search is deterministic.
constexpr uint64_t kImprovementSeed = 20010328;
// Below this many tensors a candidate takes well under a millisecond, less
// than starting a thread.
constexpr size_t kMinTensorsForThreads = 2048;
// Squeaky-wheel rounds between restarts from the best order so far.
constexpr int64_t kRoundsBeforeRestart = 25;

struct NamedOrder {
  std::string name;
  std::vector<TensorIndex> order;
};

std::vector<NamedOrder> PortfolioOrders(const std::vector<Tensor>& tensors) {
  const size_t n = tensors.size();
  std::vector<double> length(n), area(n), start(n), count, bytes;
  for (size_t i = 0; i < n; ++i) {
    const Lifetime& l = tensors[i].lifetime;
    length[i] = l.empty() ? 0 : static_cast<double>(l.end) - static_cast<double>(l.start) + 1;
    area[i] = length[i] * static_cast<double>(tensors[i].size);
    start[i] = -static_cast<double>(l.start);  // Earliest first.
  }
  OverlapTotals(tensors, &count, &bytes);
  std::vector<NamedOrder> orders;
  orders.push_back({"size", UpstreamOrder(tensors)});
  orders.push_back({"lifetime length", OrderBy(tensors, length)});
  orders.push_back({"area", OrderBy(tensors, area)});
  orders.push_back({"bytes alive with it", OrderBy(tensors, bytes)});
  orders.push_back({"tensors alive with it", OrderBy(tensors, count)});
  orders.push_back({"start time", OrderBy(tensors, start)});
  return orders;
}

// The most bytes alive at once among the tensors of each memory, already
// placed ones included: no placement in that memory can end lower.
std::vector<Size> PeakLiveBounds(const PlanRequest& request, const PlanResult& plan) {
  const size_t memory_count = request.memories.size();
  std::vector<std::vector<std::pair<Time, Size>>> events(memory_count + 1);
  const auto add = [&](const Tensor& t, MemId m) {
    if (t.lifetime.empty()) return;
    events[m].push_back({t.lifetime.start, t.size});
    events[m].push_back({SaturatingAdd(t.lifetime.end, 1), -t.size});
  };
  for (const PlacedTensor& p : request.placed) add(p.tensor, p.placement.mem_id);
  for (size_t i = 0; i < request.tensors.size(); ++i)
    add(request.tensors[i], plan.placements[i].mem_id);
  std::vector<Size> bounds(memory_count + 1, 0);
  for (size_t m = 1; m <= memory_count; ++m) {
    std::sort(events[m].begin(), events[m].end());  // Ends before starts at the same time.
    Size live = 0;
    for (const auto& [time, delta] : events[m]) {
      // Saturating at both ends: live bytes may add up past 2^63, and after
      // that the removals would take the sum below zero. The bounds only
      // steer the search, so a saturated one costs no correctness.
      live = delta > 0 ? SaturatingAdd(live, delta) : std::max<Size>(0, live + delta);
      bounds[m] = std::max(bounds[m], live);
    }
  }
  return bounds;
}

// Tensor i of the request may go to memory m.
bool MayUse(const PlanRequest& request, TensorIndex i, MemId m) {
  if ((request.allowed & MaskOf(m)) == 0) return false;
  return request.blocked.empty() || (request.blocked[i] & MaskOf(m)) == 0;
}

// A plan of `request` from its placements: bufsizes (already-placed tensors
// included), this call's bufsizes, and each memory's list: its already-placed
// tensors in their order, then this call's by offset.
PlanResult AssemblePlan(const PlanRequest& request, std::vector<Placement> placements,
                        Occupancy occupancy) {
  const size_t memory_count = request.memories.size();
  PlanResult plan;
  plan.placements = std::move(placements);
  plan.occupancy = occupancy;
  plan.bufsizes.assign(memory_count + 1, 0);
  plan.call_bufsizes.assign(memory_count + 1, 0);
  plan.memory_order.assign(memory_count + 1, {});
  const auto end = [&](const Tensor& t, const Placement& p) {
    return AlignUp(SaturatingAdd(p.offset, t.size), request.memories[p.mem_id - 1].alignment);
  };
  for (size_t j = 0; j < request.placed.size(); ++j) {
    const PlacedTensor& p = request.placed[j];
    Size& bufsize = plan.bufsizes[p.placement.mem_id];
    bufsize = std::max(bufsize, end(p.tensor, p.placement));
    plan.memory_order[p.placement.mem_id].push_back(static_cast<Slot>(j));
  }
  std::vector<TensorIndex> by_offset(request.tensors.size());
  for (size_t i = 0; i < by_offset.size(); ++i) by_offset[i] = static_cast<TensorIndex>(i);
  std::stable_sort(by_offset.begin(), by_offset.end(), [&](TensorIndex a, TensorIndex b) {
    return plan.placements[a].offset < plan.placements[b].offset;
  });
  const auto placed_count = static_cast<Slot>(request.placed.size());
  for (TensorIndex i : by_offset) {
    const Placement& p = plan.placements[i];
    const Size e = end(request.tensors[i], p);
    plan.bufsizes[p.mem_id] = std::max(plan.bufsizes[p.mem_id], e);
    plan.call_bufsizes[p.mem_id] = std::max(plan.call_bufsizes[p.mem_id], e);
    plan.memory_order[p.mem_id].push_back(placed_count + i);
  }
  return plan;
}

// The lowest aligned offset where tensor t fits into memory m beside
// `present` (tensors with their offsets), or kNoOffset.
Offset FirstFit(const Tensor& t, const Memory& memory,
                const std::vector<std::pair<Tensor, Offset>>& present) {
  std::vector<std::pair<Offset, Offset>> taken;  // [begin, end) alive with t.
  for (const auto& [other, offset] : present) {
    if (other.size > 0 && other.lifetime.Overlaps(t.lifetime)) {
      taken.push_back({offset, SaturatingAdd(offset, other.size)});
    }
  }
  std::sort(taken.begin(), taken.end());
  Offset candidate = 0;
  for (const auto& [begin, end] : taken) {
    if (SaturatingAdd(candidate, t.size) <= begin) break;
    if (end > candidate) candidate = AlignUp(end, memory.alignment);
  }
  return AlignUp(SaturatingAdd(candidate, t.size), memory.alignment) <= memory.size ? candidate
                                                                                    : kNoOffset;
}

// Whether memory m holds the aligned bytes alive with t, those of `present`
// included, at every time t lives: needed for t to join them at all.
bool RoomAlive(const Tensor& t, const Memory& memory,
               const std::vector<std::pair<Tensor, Offset>>& present) {
  std::vector<std::pair<Time, Size>> events;  // Within t's lifetime.
  for (const auto& [other, offset] : present) {
    if (other.size == 0 || !other.lifetime.Overlaps(t.lifetime)) continue;
    const Size bytes = AlignUp(other.size, memory.alignment);
    events.push_back({std::max(other.lifetime.start, t.lifetime.start), bytes});
    if (other.lifetime.end < t.lifetime.end) events.push_back({other.lifetime.end + 1, -bytes});
  }
  std::sort(events.begin(), events.end());  // Ends before starts at the same time.
  const Size room = memory.size - AlignUp(t.size, memory.alignment);
  Size live = 0;
  for (const auto& [time, delta] : events) {
    live = SaturatingAdd(live, delta);
    if (live > room) return false;
  }
  return true;
}

// One PlanBest call: the request, the best plan so far and the budget.
class BestSearch {
 public:
  BestSearch(const PlanRequest& request, const BestOptions& options)
      : request_(request),
        options_(options),
        began_(std::chrono::steady_clock::now()),
        deadline_(DeadlineAfter(began_, options.budget_ms)),
        nodes_left_(options.max_nodes) {
    // The already-placed tensors are the caller's: when they break Validate
    // among themselves (overlapping, unaligned), no plan can pass it with
    // them, so each candidate's own tensors are then checked alone.
    for (const PlacedTensor& p : request.placed) {
      placed_tensors_.push_back(p.tensor);
      placed_placements_.push_back(p.placement);
    }
    check_with_placed_ = Validate(placed_tensors_, placed_placements_, request.memories).empty();
    const size_t cores = options.threads > 0
                             ? static_cast<size_t>(options.threads)
                             : std::max<size_t>(1, std::thread::hardware_concurrency());
    threads_ = static_cast<int>(cores);
  }

  BestResult Run() {
    Portfolio();
    if (NothingOutsideMemory1()) {
      if (MinimizeMemory1()) return Finish();
    }
    SqueakyWheel();
    if (!NothingOutsideMemory1()) GrowMemory1();
    if (NothingOutsideMemory1()) MinimizeMemory1();
    return Finish();
  }

 private:
  static std::chrono::steady_clock::time_point DeadlineAfter(
      std::chrono::steady_clock::time_point start, double budget_ms) {
    const auto left = std::chrono::steady_clock::time_point::max() - start;
    const std::chrono::duration<double, std::milli> budget(budget_ms);
    if (!(budget < left)) return std::chrono::steady_clock::time_point::max();
    return start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(budget);
  }

  double ElapsedMs() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began_)
        .count();
  }
  bool OverBudget() const { return std::chrono::steady_clock::now() > deadline_; }

  SearchLimits Limits() const {
    SearchLimits limits;
    limits.max_nodes = std::max<int64_t>(0, nodes_left_);
    limits.deadline = deadline_;
    limits.interrupted = request_.interrupted;
    limits.threads = threads_;
    return limits;
  }
  void Charge(int64_t nodes) {
    result_.search_nodes += nodes;
    nodes_left_ -= nodes;
  }

  // "" when `plan` passes Validate (with the already-placed tensors when
  // those pass it), else why not.
  std::string Problem(const PlanResult& plan) const {
    std::vector<Tensor> tensors = request_.tensors;
    std::vector<Placement> placements = plan.placements;
    if (check_with_placed_) {
      tensors.insert(tensors.end(), placed_tensors_.begin(), placed_tensors_.end());
      placements.insert(placements.end(), placed_placements_.begin(), placed_placements_.end());
    }
    return Validate(tensors, placements, request_.memories);
  }

  // Keeps `plan` if it is valid (`validated`: checked already) and strictly
  // better; returns whether it was.
  bool Consider(PlanResult plan, const std::string& strategy, bool validated = false) {
    if (!validated) {
      const std::string problem = Problem(plan);
      if (!problem.empty()) {
        if (first_problem_.empty()) first_problem_ = problem;
        return false;
      }
    }
    std::vector<Size> cost = PlanCost(request_, plan);
    if (!best_cost_.empty() && !Better(cost, best_cost_)) return false;
    best_cost_ = std::move(cost);
    result_.plan = std::move(plan);
    result_.strategy = strategy;
    result_.improvements.push_back({ElapsedMs(), best_cost_.back()});
    return true;
  }
  bool ConsiderPlacer(PlanResult plan, Algorithm algorithm, const std::string& order,
                      bool validated = false) {
    ++result_.candidates;
    if (!Consider(std::move(plan), PlacerStrategy(algorithm, order), validated)) return false;
    result_.algorithm = algorithm;
    result_.order = order;
    return true;
  }
  static std::string PlacerStrategy(Algorithm algorithm, const std::string& order) {
    return std::string(algorithm == Algorithm::kPositionBasedGreedy ? "position" : "heuristic") +
           " placer, tensors ordered by " + order;
  }

  bool NothingOutsideMemory1() const {
    for (size_t k = 0; k + 1 < best_cost_.size(); ++k) {
      if (best_cost_[k] != 0) return false;
    }
    return true;
  }

  struct Member {
    const NamedOrder* order;
    Algorithm algorithm;
  };
  struct Outcome {
    std::optional<PlanResult> plan;
    std::optional<PlanningFailure> failure;
  };

  // Plans `request` with every member, in threads on large requests; a
  // member not run (the budget ran out, after the first two) stays empty.
  std::vector<std::optional<Outcome>> RunMembers(const PlanRequest& request,
                                                 const std::vector<Member>& members) const {
    std::vector<std::optional<Outcome>> outcomes(members.size());
    std::atomic<size_t> next_member{0};
    std::exception_ptr error;  // The first exception a worker met (e.g. Interrupted).
    std::mutex error_mutex;
    const auto work = [&] {
      for (size_t k; (k = next_member++) < members.size();) {
        if (k >= 2 && OverBudget()) continue;
        try {
          Outcome outcome;
          try {
            outcome.plan = PlanInOrder(request, members[k].algorithm, members[k].order->order);
          } catch (const PlanningFailure& failure) {
            outcome.failure = failure;
          }
          outcomes[k] = std::move(outcome);
        } catch (...) {
          const std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
          next_member = members.size();
        }
      }
    };
    // Threads pay for themselves only on plans that take milliseconds.
    const size_t threads = request.tensors.size() < kMinTensorsForThreads
                               ? 1
                               : std::min(members.size(), static_cast<size_t>(threads_));
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& thread : pool) thread.join();
    if (error) std::rethrow_exception(error);
    return outcomes;
  }

  static std::vector<Member> Members(const std::vector<NamedOrder>& orders) {
    std::vector<Member> members;
    for (const NamedOrder& order : orders) {
      for (Algorithm algorithm : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
        members.push_back({&order, algorithm});
      }
    }
    return members;
  }

  // 1. The portfolio, in threads; upstream's two placers always run. The
  // candidates are then considered in their fixed order, so the threads do
  // not change the result.
  void Portfolio() {
    orders_ = PortfolioOrders(request_.tensors);
    const std::vector<Member> members = Members(orders_);
    std::vector<std::optional<Outcome>> outcomes = RunMembers(request_, members);
    best_order_ = orders_.front().order;
    std::optional<PlanningFailure> first_failure;
    for (size_t k = 0; k < members.size(); ++k) {
      if (!outcomes[k]) {
        result_.budget_exhausted = true;
        continue;
      }
      if (outcomes[k]->failure) {
        ++result_.candidates;
        if (!first_failure) first_failure = outcomes[k]->failure;
        continue;
      }
      if (ConsiderPlacer(std::move(*outcomes[k]->plan), members[k].algorithm,
                         members[k].order->name)) {
        best_order_ = members[k].order->order;
      }
    }
    if (best_cost_.empty()) {
      if (first_failure) throw WithPeakLiveNote(request_, *first_failure);
      throw InvalidInput("no candidate plan passes Validate: " + first_problem_);
    }
  }

  // 2. Memory 1's bufsize, exactly, when nothing of this call lies outside
  // it; sets the lower bound. Returns whether the plan is proved optimal or
  // the exact search used the budget (so nothing else is worth trying).
  bool MinimizeMemory1() {
    const Memory& memory = request_.memories[0];
    PackingProblem problem;
    problem.alignment = memory.alignment;
    std::vector<TensorIndex> in_memory1;
    std::vector<Offset> incumbent;
    for (size_t i = 0; i < request_.tensors.size(); ++i) {
      if (result_.plan.placements[i].mem_id != 1) continue;
      in_memory1.push_back(static_cast<TensorIndex>(i));
      problem.tensors.push_back(request_.tensors[i]);
      incumbent.push_back(result_.plan.placements[i].offset);
    }
    Size others = 0;  // The other memories' bufsizes: already-placed tensors only.
    for (const PlacedTensor& p : request_.placed) {
      if (p.placement.mem_id == 1) problem.obstacles.push_back({p.tensor, p.placement.offset});
    }
    for (size_t m = 2; m < result_.plan.bufsizes.size(); ++m) {
      others = SaturatingAdd(others, PlacedBufsize(static_cast<MemId>(m)));
    }
    const double started = ElapsedMs();
    const PackingResult packed = MinimizeBufsize(problem, memory.size, incumbent, Limits());
    Charge(packed.nodes);
    if (packed.bufsize < result_.plan.bufsizes[1]) {
      std::vector<Placement> placements = result_.plan.placements;
      for (size_t k = 0; k < in_memory1.size(); ++k) {
        placements[in_memory1[k]].offset = packed.offsets[k];
      }
      const Size before = best_cost_.back();
      if (Consider(AssemblePlan(request_, std::move(placements), result_.plan.occupancy),
                   packed.strategy)) {
        // The search's own progress, in PlanBest's time.
        result_.improvements.pop_back();
        for (size_t k = 1; k < packed.improvements.size(); ++k) {
          const Size total = SaturatingAdd(
              before, packed.improvements[k].bufsize - packed.improvements.front().bufsize);
          result_.improvements.push_back({started + packed.improvements[k].elapsed_ms, total});
        }
      }
    }
    result_.lower_bound = SaturatingAdd(packed.lower_bound, others);
    result_.proved_optimal = best_cost_.back() == *result_.lower_bound;
    if (result_.proved_optimal || !packed.searched) return result_.proved_optimal;
    result_.budget_exhausted = true;  // The search ends unproved only when the budget does.
    return true;
  }

  // The largest aligned end of memory m's already-placed tensors.
  Size PlacedBufsize(MemId m) const {
    Size bufsize = 0;
    for (const PlacedTensor& p : request_.placed) {
      if (p.placement.mem_id != m) continue;
      bufsize = std::max(bufsize, AlignUp(SaturatingAdd(p.placement.offset, p.tensor.size),
                                          request_.memories[m - 1].alignment));
    }
    return bufsize;
  }

  // 3. Squeaky wheel: priorities start from the best order's ranks; each
  // round, the tensors that stand out push themselves forward.
  void SqueakyWheel() {
    if (result_.budget_exhausted) return;
    const size_t n = request_.tensors.size();
    std::vector<double> priority(n);
    std::vector<TensorIndex> best_order = best_order_;
    for (size_t rank = 0; rank < n; ++rank) {
      priority[best_order[rank]] = static_cast<double>(n - rank);
    }
    const Algorithm algorithm = result_.algorithm;
    const std::string base = result_.order;
    std::vector<TensorIndex> order = best_order;
    PlanResult current = result_.plan;
    // A push moves a tensor about n / 32 places forward.
    const double push = static_cast<double>(n) / 32 + 1;
    std::mt19937_64 rng(kImprovementSeed);
    for (int64_t round = 0; round < options_.improvement_rounds; ++round) {
      if (OverBudget()) {
        result_.budget_exhausted = true;
        break;
      }
      const std::vector<Size> bounds = PeakLiveBounds(request_, current);
      bool any = false;
      for (size_t i = 0; i < n; ++i) {
        const Placement& p = current.placements[i];
        const Size end = AlignUp(SaturatingAdd(p.offset, request_.tensors[i].size),
                                 request_.memories[p.mem_id - 1].alignment);
        const bool spilled = p.mem_id > 1;
        const bool high = end > bounds[p.mem_id];
        if (spilled || high) {
          // Spilled further, pushed harder; the jitter keeps the rounds from
          // cycling through the same few orders.
          const double weight = spilled ? p.mem_id : 1;
          priority[i] += push * weight * std::uniform_real_distribution<double>(0.5, 1.5)(rng);
          any = true;
        }
      }
      if (!any) break;  // Every memory at its bound and nothing spilled: optimal.
      std::sort(order.begin(), order.end(), [&](TensorIndex a, TensorIndex b) {
        return priority[a] != priority[b] ? priority[a] > priority[b] : a < b;
      });
      PlanResult plan;
      try {
        plan = PlanInOrder(request_, algorithm, order);
      } catch (const PlanningFailure&) {
        break;
      }
      if (!Problem(plan).empty()) break;
      if (ConsiderPlacer(plan, algorithm,
                         base + ", then " + std::to_string(round + 1) + " squeaky-wheel rounds",
                         /*validated=*/true)) {
        best_order = order;
      }
      current = std::move(plan);
      if ((round + 1) % kRoundsBeforeRestart == 0) {
        // Start again from the best order so far: the pushes drift away from it.
        order = best_order;
        for (size_t rank = 0; rank < n; ++rank) {
          priority[order[rank]] = static_cast<double>(n - rank);
        }
        current = result_.plan;
      }
    }
  }

  // 3. Memory 1 grows: every tensor that may go there if they all fit, else
  // one by one, largest first; then the portfolio places the rest below it.
  void GrowMemory1() {
    const Memory& memory = request_.memories[0];
    const size_t n = request_.tensors.size();
    std::vector<TensorIndex> kept, outside;
    for (size_t i = 0; i < n; ++i) {
      const auto t = static_cast<TensorIndex>(i);
      if (result_.plan.placements[i].mem_id == 1) {
        kept.push_back(t);
      } else if (request_.tensors[i].size > 0 && MayUse(request_, t, 1)) {
        outside.push_back(t);
      }
    }
    if (outside.empty() || OverBudget() || nodes_left_ <= 0) return;
    std::stable_sort(outside.begin(), outside.end(), [&](TensorIndex a, TensorIndex b) {
      return request_.tensors[a].size > request_.tensors[b].size;
    });
    std::vector<Offset> offsets(n, kNoOffset);
    for (TensorIndex t : kept) offsets[t] = result_.plan.placements[t].offset;
    PackingProblem problem;
    problem.alignment = memory.alignment;
    for (const PlacedTensor& p : request_.placed) {
      if (p.placement.mem_id == 1) problem.obstacles.push_back({p.tensor, p.placement.offset});
    }
    // Packs `members` anew; true (and their offsets set) when they fit.
    int64_t growth_nodes = kGrowthNodesPerTensor * static_cast<int64_t>(n);
    const auto repack = [&](const std::vector<TensorIndex>& members, int64_t nodes) {
      problem.tensors.clear();
      for (TensorIndex t : members) problem.tensors.push_back(request_.tensors[t]);
      SearchLimits limits = Limits();
      limits.max_nodes = std::min({limits.max_nodes, nodes, growth_nodes});
      const FitResult fit = FitInCapacity(problem, memory.size, limits);
      Charge(fit.nodes);
      growth_nodes -= fit.nodes;
      if (fit.fit != Fit::kFits) return false;
      for (size_t k = 0; k < members.size(); ++k) offsets[members[k]] = fit.offsets[k];
      return true;
    };
    const size_t kept_before = kept.size();
    std::vector<TensorIndex> all = kept;
    all.insert(all.end(), outside.begin(), outside.end());
    if (repack(all, kAllAtOnceNodesPerTensor * static_cast<int64_t>(all.size()))) {
      kept = std::move(all);
    } else {
      std::vector<std::pair<Tensor, Offset>> present;  // Memory 1 now.
      const auto list_present = [&] {
        present.clear();
        for (const Obstacle& o : problem.obstacles) present.push_back({o.tensor, o.offset});
        for (TensorIndex k : kept) present.push_back({request_.tensors[k], offsets[k]});
      };
      list_present();
      int failures = 0;  // Searches in a row that did not fit one more.
      for (TensorIndex t : outside) {
        if (OverBudget() || std::min(nodes_left_, growth_nodes) <= 0 ||
            failures == kGrowthFailures) {
          break;
        }
        const Offset hole = FirstFit(request_.tensors[t], memory, present);
        if (hole != kNoOffset) {
          offsets[t] = hole;
          kept.push_back(t);
          present.push_back({request_.tensors[t], hole});
          continue;
        }
        if (!RoomAlive(request_.tensors[t], memory, present)) continue;
        std::vector<TensorIndex> with = kept;
        with.push_back(t);
        if (repack(with, kOneMoreNodesPerTensor * static_cast<int64_t>(with.size()))) {
          kept = std::move(with);
          list_present();
          failures = 0;
        } else {
          ++failures;
        }
      }
    }
    if (kept.size() == kept_before) return;

    // The rest below memory 1, which holds `kept` fixed.
    std::vector<char> in_memory1(n, 0);
    for (TensorIndex t : kept) in_memory1[t] = 1;
    PlanRequest rest;
    rest.memories = request_.memories;
    rest.allowed = request_.allowed;
    rest.placed = request_.placed;
    rest.keep_incoming_offset = request_.keep_incoming_offset;
    rest.occupancy = request_.occupancy;
    rest.interrupted = request_.interrupted;
    std::vector<TensorIndex> rest_index;
    for (size_t i = 0; i < n; ++i) {
      if (in_memory1[i]) {
        rest.placed.push_back({request_.tensors[i], {1, offsets[i]}});
        continue;
      }
      rest_index.push_back(static_cast<TensorIndex>(i));
      rest.tensors.push_back(request_.tensors[i]);
      rest.blocked.push_back((request_.blocked.empty() ? 0 : request_.blocked[i]) | MaskOf(1));
      if (!request_.incoming_offsets.empty()) {
        rest.incoming_offsets.push_back(request_.incoming_offsets[i]);
      }
    }
    const std::string grown =
        "memory 1 grown by the exact search to " + std::to_string(kept.size()) + " tensors";
    const auto combine = [&](const std::vector<Placement>& rest_placements) {
      std::vector<Placement> placements(n);
      for (TensorIndex t : kept) placements[t] = {1, offsets[t]};
      for (size_t k = 0; k < rest_index.size(); ++k) placements[rest_index[k]] = rest_placements[k];
      return AssemblePlan(request_, std::move(placements), result_.plan.occupancy);
    };
    if (rest.tensors.empty()) {
      Consider(combine({}), grown);
      return;
    }
    const std::vector<NamedOrder> orders = PortfolioOrders(rest.tensors);
    const std::vector<Member> members = Members(orders);
    std::vector<std::optional<Outcome>> outcomes = RunMembers(rest, members);
    for (size_t k = 0; k < members.size(); ++k) {
      if (!outcomes[k] || !outcomes[k]->plan) continue;
      Consider(combine(outcomes[k]->plan->placements),
               grown + ", then the " +
                   PlacerStrategy(members[k].algorithm, members[k].order->name) + " for the rest");
    }
  }

  BestResult Finish() {
    if (!NothingOutsideMemory1()) {
      result_.lower_bound.reset();
      result_.proved_optimal = false;
    }
    return std::move(result_);
  }

  // Nodes of the exact search per tensor of the request: for the whole
  // growth of memory 1, for packing every tensor that may go there at once,
  // and per tensor of memory 1 for adding one more. A node costs about a
  // pass over the tensors, so the growth costs about n^2 * 16 steps.
  static constexpr int64_t kGrowthNodesPerTensor = 16;
  static constexpr int64_t kAllAtOnceNodesPerTensor = 16;
  static constexpr int64_t kOneMoreNodesPerTensor = 4;
  // After this many searches in a row that could not add a tensor to memory
  // 1, the growth stops: the rest rarely fits either.
  static constexpr int kGrowthFailures = 4;

  const PlanRequest& request_;
  const BestOptions& options_;
  const std::chrono::steady_clock::time_point began_;
  const std::chrono::steady_clock::time_point deadline_;
  int64_t nodes_left_;
  int threads_ = 1;
  std::vector<Tensor> placed_tensors_;
  std::vector<Placement> placed_placements_;
  bool check_with_placed_ = false;
  std::vector<NamedOrder> orders_;
  std::vector<TensorIndex> best_order_;  // The visit order of the portfolio's winner.
  std::vector<Size> best_cost_;
  std::string first_problem_;
  BestResult result_;
};

}  // namespace

std::vector<Size> PlanCost(const PlanRequest& request, const PlanResult& plan) {
  const size_t memory_count = request.memories.size();
  // outside[m]: bytes of this call's tensors in memories past m. Saturating:
  // sizes may add up past 2^63.
  std::vector<Size> cost(memory_count, 0);
  for (size_t i = 0; i < request.tensors.size(); ++i) {
    for (size_t m = plan.placements[i].mem_id; m-- > 1;) {
      cost[m - 1] = SaturatingAdd(cost[m - 1], request.tensors[i].size);
    }
  }
  Size total = 0;
  for (size_t m = 1; m <= memory_count; ++m) total = SaturatingAdd(total, plan.bufsizes[m]);
  cost[memory_count - 1] = total;
  return cost;
}

BestResult PlanBest(const PlanRequest& request, const BestOptions& options) {
  if (std::string problem = CheckRequest(request); !problem.empty()) throw InvalidInput(problem);
  return BestSearch(request, options).Run();
}

}  // namespace cadence_memplan
