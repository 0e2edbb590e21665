#include "core/best/portfolio.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <utility>

#include "core/best/best_search.h"
#include "core/common/polled_sort.h"
#include "core/common/threads.h"

namespace cadence_memplan {
namespace detail {
namespace {

// Tensors by `key`, largest first; ties by size, largest first, then by index.
template <typename Key>
std::vector<TensorIndex> OrderBy(const std::vector<Tensor>& tensors, const std::vector<Key>& key,
                                 const Interrupt& interrupt) {
  std::vector<TensorIndex> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<TensorIndex>(i);
  SortPolled(
      order.begin(), order.end(),
      [&](TensorIndex a, TensorIndex b) {
        if (key[a] != key[b]) return key[a] > key[b];
        if (tensors[a].size != tensors[b].size) return tensors[a].size > tensors[b].size;
        return a < b;
      },
      interrupt);
  return order;
}

// For each tensor, the number and the bytes of the tensors alive with it
// (itself included; 0 for an empty lifetime).
void OverlapTotals(const std::vector<Tensor>& tensors, const Interrupt& interrupt,
                   std::vector<double>* count, std::vector<double>* bytes) {
  std::vector<std::pair<Time, Size>> starts, ends;
  for (const Tensor& t : tensors) {
    if (t.lifetime.empty()) continue;
    starts.push_back({t.lifetime.start, t.size});
    ends.push_back({t.lifetime.end, t.size});
  }
  SortPolled(starts.begin(), starts.end(), std::less<std::pair<Time, Size>>(), interrupt);
  SortPolled(ends.begin(), ends.end(), std::less<std::pair<Time, Size>>(), interrupt);
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

// Below this many tensors a candidate takes well under a millisecond, less
// than starting a thread.
constexpr size_t kMinTensorsForThreads = 2048;

}  // namespace

std::vector<NamedOrder> PortfolioOrders(const std::vector<Tensor>& tensors,
                                        const Interrupt& interrupt) {
  interrupt.Begin(Phase::kOrder);
  const size_t n = tensors.size();
  std::vector<double> length(n), area(n), start(n), count, bytes;
  for (size_t i = 0; i < n; ++i) {
    const Lifetime& l = tensors[i].lifetime;
    length[i] = l.empty() ? 0 : static_cast<double>(l.end) - static_cast<double>(l.start) + 1;
    area[i] = length[i] * static_cast<double>(tensors[i].size);
    start[i] = -static_cast<double>(l.start);  // Earliest first.
  }
  OverlapTotals(tensors, interrupt, &count, &bytes);
  std::vector<NamedOrder> orders;
  orders.push_back({"size", UpstreamOrder(tensors, interrupt)});
  orders.push_back({"lifetime length", OrderBy(tensors, length, interrupt)});
  orders.push_back({"area", OrderBy(tensors, area, interrupt)});
  orders.push_back({"bytes alive with it", OrderBy(tensors, bytes, interrupt)});
  orders.push_back({"tensors alive with it", OrderBy(tensors, count, interrupt)});
  orders.push_back({"start time", OrderBy(tensors, start, interrupt)});
  return orders;
}

std::vector<BestSearch::Member> BestSearch::Members(const std::vector<NamedOrder>& orders) {
  std::vector<Member> members;
  for (const NamedOrder& order : orders) {
    for (Algorithm algorithm : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
      members.push_back({&order, algorithm});
    }
  }
  return members;
}

std::vector<std::optional<BestSearch::Outcome>> BestSearch::RunMembers(
    const PlanRequest& request, const std::vector<Member>& members) {
  // Which members run is decided here, from the work left alone: the first
  // two always, then as many as the work left pays for.
  const int64_t cost = PlacementWork(request.tensors.size());
  const size_t paid =
      std::min(members.size(),
               static_cast<size_t>(std::max<int64_t>(2, 2 + (work_left_ - 2 * cost) / cost)));
  ChargeWork(cost * static_cast<int64_t>(paid));
  // With a wall-clock cap, a member past the cap is not started either.
  const bool capped = deadline_ != std::chrono::steady_clock::time_point::max();
  std::vector<std::optional<Outcome>> outcomes(members.size());
  std::atomic<size_t> next_member{0};
  std::exception_ptr error;  // The first exception a worker met (e.g. Interrupted).
  std::mutex error_mutex;
  const auto work = [&] {
    for (size_t k; (k = next_member++) < paid;) {
      if (k >= 2 && capped && std::chrono::steady_clock::now() > deadline_) continue;
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
        next_member = paid;
      }
    }
  };
  // Threads pay for themselves only on plans that take milliseconds.
  const size_t threads = request.tensors.size() < kMinTensorsForThreads
                             ? 1
                             : std::min(paid, static_cast<size_t>(threads_));
  // A stop the calling thread hears reaches the others through their polls.
  RunOnThreads(static_cast<int>(threads), work, [&] { request.interrupt.Stopping(); });
  if (error) std::rethrow_exception(error);
  request.interrupt.Poll();  // A stop heard while waiting, when no member threw it.
  for (size_t k = 2; k < paid; ++k) {
    if (!outcomes[k]) DeadlinePassed();  // Skipped by the cap: say so in the result.
  }
  return outcomes;
}

// 1. The portfolio, in threads; upstream's two placers always run. The
// candidates are then considered in their fixed order, so the threads do
// not change the result.
void BestSearch::Portfolio() {
  orders_ = PortfolioOrders(request_.tensors, request_.interrupt);
  const std::vector<Member> members = Members(orders_);
  std::vector<std::optional<Outcome>> outcomes = RunMembers(request_, members);
  best_order_ = orders_.front().order;
  for (size_t k = 0; k < members.size(); ++k) {
    if (!outcomes[k]) {
      result_.budget_exhausted = true;
      continue;
    }
    if (outcomes[k]->failure) {
      ++result_.candidates;
      if (!first_failure_) first_failure_ = outcomes[k]->failure;
      continue;
    }
    if (ConsiderPlacer(std::move(*outcomes[k]->plan), members[k].algorithm,
                       members[k].order->name)) {
      best_order_ = members[k].order->order;
    }
  }
  // No plan yet is no failure yet: fit first may still find one.
}

}  // namespace detail
}  // namespace cadence_memplan
