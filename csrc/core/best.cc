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
  const auto began = std::chrono::steady_clock::now();
  const auto over_budget = [&] {
    const double spent =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
    return spent > options.budget_ms;
  };

  // The already-placed tensors are the caller's: when they break Validate
  // among themselves (overlapping, unaligned), no plan can pass it with them,
  // so each candidate's own tensors are then checked alone.
  std::vector<Tensor> placed_tensors;
  std::vector<Placement> placed_placements;
  for (const PlacedTensor& p : request.placed) {
    placed_tensors.push_back(p.tensor);
    placed_placements.push_back(p.placement);
  }
  const bool check_with_placed =
      Validate(placed_tensors, placed_placements, request.memories).empty();

  // One candidate's outcome; computing it touches nothing shared, so the
  // portfolio's candidates may run in threads.
  struct Candidate {
    std::optional<PlanResult> plan;           // Planned and passed Validate.
    std::optional<PlanningFailure> failure;  // Or failed to plan,
    std::string problem;                      // or failed Validate.
    std::vector<Size> cost;
  };
  const auto evaluate = [&](Algorithm algorithm, const std::vector<TensorIndex>& order) {
    Candidate candidate;
    try {
      candidate.plan = PlanInOrder(request, algorithm, order);
    } catch (const PlanningFailure& failure) {
      candidate.failure = failure;
      return candidate;
    }
    std::vector<Tensor> tensors = request.tensors;
    std::vector<Placement> placements = candidate.plan->placements;
    if (check_with_placed) {
      tensors.insert(tensors.end(), placed_tensors.begin(), placed_tensors.end());
      placements.insert(placements.end(), placed_placements.begin(), placed_placements.end());
    }
    candidate.problem = Validate(tensors, placements, request.memories);
    if (!candidate.problem.empty()) {
      candidate.plan.reset();
      return candidate;
    }
    candidate.cost = PlanCost(request, *candidate.plan);
    return candidate;
  };

  BestResult best;
  std::vector<Size> best_cost;
  std::optional<PlanningFailure> first_failure;
  std::string first_problem;
  // Keeps a candidate if it is strictly better; returns whether it was.
  const auto consider = [&](Candidate& candidate, Algorithm algorithm, const std::string& name) {
    ++best.candidates;
    if (candidate.failure && !first_failure) first_failure = candidate.failure;
    if (!candidate.problem.empty() && first_problem.empty()) first_problem = candidate.problem;
    if (!candidate.plan || !(best_cost.empty() || Better(candidate.cost, best_cost))) return false;
    best_cost = std::move(candidate.cost);
    best.plan = std::move(*candidate.plan);
    best.algorithm = algorithm;
    best.order = name;
    return true;
  };

  // 1. The portfolio, in threads; upstream's two placers always run. The
  // candidates are then considered in their fixed order, so the threads do
  // not change the result.
  const std::vector<NamedOrder> orders = PortfolioOrders(request.tensors);
  struct Member {
    const NamedOrder* order;
    Algorithm algorithm;
  };
  std::vector<Member> members;
  for (const NamedOrder& order : orders) {
    for (Algorithm algorithm : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
      members.push_back({&order, algorithm});
    }
  }
  std::vector<std::optional<Candidate>> results(members.size());
  std::atomic<size_t> next_member{0};
  std::exception_ptr error;  // The first exception a worker met (e.g. Interrupted).
  std::mutex error_mutex;
  const auto work = [&] {
    for (size_t k; (k = next_member++) < members.size();) {
      if (k >= 2 && over_budget()) continue;
      try {
        results[k] = evaluate(members[k].algorithm, members[k].order->order);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next_member = members.size();
      }
    }
  };
  // Threads pay for themselves only on plans that take milliseconds.
  const size_t cores = options.threads > 0
                           ? static_cast<size_t>(options.threads)
                           : std::max<size_t>(1, std::thread::hardware_concurrency());
  const size_t threads =
      request.tensors.size() < kMinTensorsForThreads ? 1 : std::min(members.size(), cores);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
  std::vector<TensorIndex> best_order = orders.front().order;
  for (size_t k = 0; k < members.size(); ++k) {
    if (!results[k]) {
      best.budget_exhausted = true;
      continue;
    }
    if (consider(*results[k], members[k].algorithm, members[k].order->name)) {
      best_order = members[k].order->order;
    }
  }
  if (best_cost.empty()) {
    if (first_failure) throw WithPeakLiveNote(request, *first_failure);
    throw InvalidInput("no candidate plan passes Validate: " + first_problem);
  }

  // 2. Squeaky wheel: priorities start from the best order's ranks; each
  // round, the tensors that stand out push themselves forward.
  const size_t n = request.tensors.size();
  std::vector<double> priority(n);
  for (size_t rank = 0; rank < n; ++rank)
    priority[best_order[rank]] = static_cast<double>(n - rank);
  const Algorithm algorithm = best.algorithm;
  const std::string base = best.order;
  std::vector<TensorIndex> order = best_order;
  PlanResult current = best.plan;
  // A push moves a tensor about n / 32 places forward.
  const double push = static_cast<double>(n) / 32 + 1;
  std::mt19937_64 rng(kImprovementSeed);
  for (int64_t round = 0; round < options.improvement_rounds && !best.budget_exhausted; ++round) {
    if (over_budget()) {
      best.budget_exhausted = true;
      break;
    }
    const std::vector<Size> bounds = PeakLiveBounds(request, current);
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      const Placement& p = current.placements[i];
      const Size end = AlignUp(SaturatingAdd(p.offset, request.tensors[i].size),
                               request.memories[p.mem_id - 1].alignment);
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
    Candidate candidate = evaluate(algorithm, order);
    if (!candidate.plan) break;
    PlanResult plan = *candidate.plan;
    if (consider(candidate, algorithm,
                 base + ", then " + std::to_string(round + 1) + " squeaky-wheel rounds")) {
      best_order = order;
    }
    current = std::move(plan);
    if ((round + 1) % kRoundsBeforeRestart == 0) {
      // Start again from the best order so far: the pushes drift away from it.
      order = best_order;
      for (size_t rank = 0; rank < n; ++rank) priority[order[rank]] = static_cast<double>(n - rank);
      current = best.plan;
    }
  }
  return best;
}

}  // namespace cadence_memplan
