#include "core/search/top_repack.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace cadence_memplan {
namespace {

// The count a repack frees is drawn around a size that starts here and
// never goes below it.
constexpr size_t kFewestFreed = 16;
// A repack gets this many nodes per freed tensor, a few dives' worth: one
// that does not answer quickly is given up for another draw.
constexpr int64_t kNodesPerFreed = 16;

}  // namespace

TopRepack::TopRepack(const PackingProblem& problem, std::vector<Offset> offsets)
    : problem_(problem), offsets_(std::move(offsets)), freed_(kFewestFreed) {
  for (size_t t = 0; t < problem.tensors.size(); ++t) {
    const Tensor& tensor = problem.tensors[t];
    if (tensor.size > 0 && !tensor.lifetime.empty()) placed_.push_back(static_cast<TensorIndex>(t));
  }
}

bool TopRepack::RepackTo(Size capacity, int64_t max_nodes, int max_failures,
                         const SearchLimits& limits) {
  const int64_t began = nodes_;
  for (int failures = 0;;) {
    // The tensors by their aligned end, highest first (ties by index:
    // deterministic).
    std::vector<std::pair<Offset, TensorIndex>> by_end;
    by_end.reserve(placed_.size());
    for (const TensorIndex t : placed_) {
      by_end.push_back(
          {AlignUp(SaturatingAdd(offsets_[t], problem_.tensors[t].size), problem_.alignment), t});
    }
    std::sort(by_end.begin(), by_end.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    size_t above = 0;
    while (above < by_end.size() && by_end[above].first > capacity) ++above;
    if (above == 0) return true;
    const int64_t left = max_nodes - (nodes_ - began);
    if (left <= 0 || failures >= max_failures ||
        std::chrono::steady_clock::now() > limits.deadline) {
      return false;
    }
    // Free the k highest, k drawn in [freed_ / 2, 3 freed_ / 2], and at
    // least every tensor above the capacity.
    const size_t drawn = freed_ / 2 + 1 + static_cast<size_t>(rng_() % (freed_ + 1));
    const size_t k = std::min(by_end.size(), std::max(above, drawn));
    // The freed tensors, and as obstacles where they are, the others alive
    // within the freed ones' span (no other can meet them).
    PackingProblem top;
    top.alignment = problem_.alignment;
    top.obstacles = problem_.obstacles;
    Lifetime span = problem_.tensors[by_end[0].second].lifetime;
    for (size_t r = 0; r < k; ++r) {
      const Tensor& tensor = problem_.tensors[by_end[r].second];
      top.tensors.push_back(tensor);
      span.start = std::min(span.start, tensor.lifetime.start);
      span.end = std::max(span.end, tensor.lifetime.end);
    }
    for (size_t r = k; r < by_end.size(); ++r) {
      const TensorIndex t = by_end[r].second;
      if (problem_.tensors[t].lifetime.Overlaps(span)) {
        top.obstacles.push_back({problem_.tensors[t], offsets_[t]});
      }
    }
    SearchLimits repack = limits;
    repack.max_nodes = std::min(left, kNodesPerFreed * static_cast<int64_t>(k) + 64);
    const FitResult fit = FitInCapacity(top, capacity, repack);
    nodes_ += fit.nodes;
    if (fit.fit == Fit::kFits) {
      for (size_t r = 0; r < k; ++r) offsets_[by_end[r].second] = fit.offsets[r];
      strategy_ = "top repack, " + fit.strategy;
      failures = 0;
      freed_ = std::max(kFewestFreed, freed_ - freed_ / 8);
    } else {
      ++failures;
      freed_ = std::min(placed_.size(), freed_ + freed_ / 4 + 1);
    }
  }
}

}  // namespace cadence_memplan
