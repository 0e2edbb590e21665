#include "core/schedule/step_bound.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

namespace cadence_memplan::schedule::detail {
namespace {

constexpr Size kUncuttable = std::numeric_limits<Size>::max();

// Dinic's maximum flow, with an explicit stack (paths may be as long as the
// program). Capacities are bytes; kUncuttable stands for infinity, and every
// finite capacity adds up to at most 2^62, so no residual overflows.
class MaxFlow {
 public:
  explicit MaxFlow(int32_t nodes) : adjacency_(nodes), level_(nodes), next_(nodes) {}

  void AddEdge(int32_t from, int32_t to, Size capacity) {
    adjacency_[from].push_back(static_cast<int32_t>(edges_.size()));
    edges_.push_back({to, capacity});
    adjacency_[to].push_back(static_cast<int32_t>(edges_.size()));
    edges_.push_back({from, 0});
  }

  Size Run(int32_t source, int32_t sink) {
    Size flow = 0;
    while (Levels(source, sink)) {
      std::fill(next_.begin(), next_.end(), 0);
      flow += Blocking(source, sink);
    }
    return flow;
  }

 private:
  struct Edge {
    int32_t to;
    Size capacity;
  };

  bool Levels(int32_t source, int32_t sink) {
    std::fill(level_.begin(), level_.end(), -1);
    std::vector<int32_t> queue = {source};
    level_[source] = 0;
    for (size_t head = 0; head < queue.size(); ++head) {
      for (const int32_t e : adjacency_[queue[head]]) {
        if (edges_[e].capacity > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[queue[head]] + 1;
          queue.push_back(edges_[e].to);
        }
      }
    }
    return level_[sink] >= 0;
  }

  // Augments along level-increasing paths until none is left.
  Size Blocking(int32_t source, int32_t sink) {
    Size flow = 0;
    std::vector<int32_t> path;  // Edges from the source.
    int32_t node = source;
    while (true) {
      if (node == sink) {
        Size pushed = kUncuttable;
        for (const int32_t e : path) pushed = std::min(pushed, edges_[e].capacity);
        for (const int32_t e : path) {
          edges_[e].capacity -= pushed;
          edges_[e ^ 1].capacity += pushed;
        }
        flow += pushed;
        // Back to the tail of the first saturated edge.
        size_t keep = 0;
        while (keep < path.size() && edges_[path[keep]].capacity > 0) ++keep;
        path.resize(keep);
        node = path.empty() ? source : edges_[path.back()].to;
        continue;
      }
      bool advanced = false;
      for (; next_[node] < static_cast<int32_t>(adjacency_[node].size()); ++next_[node]) {
        const int32_t e = adjacency_[node][next_[node]];
        if (edges_[e].capacity > 0 && level_[edges_[e].to] == level_[node] + 1) {
          path.push_back(e);
          node = edges_[e].to;
          advanced = true;
          break;
        }
      }
      if (advanced) continue;
      if (node == source) return flow;
      level_[node] = -1;  // A dead end: never enter it again in this phase.
      path.pop_back();
      node = path.empty() ? source : edges_[path.back()].to;
      ++next_[node];
    }
  }

  std::vector<Edge> edges_;
  std::vector<std::vector<int32_t>> adjacency_;
  std::vector<int32_t> level_, next_;
};

// The least bytes unit v's step holds when every unit of `first` (and so its
// ancestors) runs before v: step_bound.h's cut.
Size LeastAtStep(const ScheduleProblem& problem, const UnitGraph& graph, UnitIndex v,
                 const std::vector<UnitIndex>& first) {
  const int32_t n = graph.units;
  const int32_t source = 0, sink = 1;
  const auto unit = [](UnitIndex u) { return 2 + u; };
  const auto all_read = [n](size_t b) { return 2 + n + static_cast<int32_t>(b); };
  MaxFlow flow(2 + n + static_cast<int32_t>(problem.buffers.size()));
  // Closed under predecessors: a unit in S with a predecessor outside is uncuttable.
  for (UnitIndex w = 0; w < n; ++w) {
    for (const int32_t* q = graph.preds.begin(w); q != graph.preds.end(w); ++q) {
      flow.AddEdge(unit(w), unit(*q), kUncuttable);
    }
  }
  for (const UnitIndex u : first) flow.AddEdge(source, unit(u), kUncuttable);
  for (const int32_t* q = graph.preds.begin(v); q != graph.preds.end(v); ++q) {
    flow.AddEdge(source, unit(*q), kUncuttable);
  }
  flow.AddEdge(unit(v), sink, kUncuttable);  // v, so its descendants, after S.
  Size fixed = graph.out_all[v];
  for (size_t b = 0; b < problem.buffers.size(); ++b) {
    const Buffer& buffer = problem.buffers[b];
    const int32_t index = static_cast<int32_t>(b);
    if (buffer.size == 0 || buffer.producer == v) continue;  // v's own: in out_all.
    const bool before = buffer.producer == kBeforeProgram;
    if (buffer.live_to_end) {
      // Alive from its producer on.
      if (before) {
        fixed += buffer.size;
      } else {
        flow.AddEdge(unit(buffer.producer), sink, buffer.size);
      }
      continue;
    }
    if (graph.users.size(index) == 0) continue;  // Alive at its producer's step only.
    // Costs its bytes when made in S and not every reader is in S.
    flow.AddEdge(before ? source : unit(buffer.producer), all_read(b), buffer.size);
    for (const int32_t* r = graph.users.begin(index); r != graph.users.end(index); ++r) {
      flow.AddEdge(all_read(b), unit(*r), kUncuttable);
    }
  }
  return fixed + flow.Run(source, sink);
}

}  // namespace

Size CutBound(const ScheduleProblem& problem, const UnitGraph& graph, const Reachability& reach,
              const std::vector<Size>& must_live, Size bound) {
  std::vector<UnitIndex> units(graph.units);
  std::iota(units.begin(), units.end(), 0);
  std::stable_sort(units.begin(), units.end(),
                   [&](UnitIndex a, UnitIndex b) { return must_live[a] > must_live[b]; });
  units.resize(std::min(units.size(), kCutBoundUnits));
  for (const UnitIndex v : units) bound = std::max(bound, LeastAtStep(problem, graph, v, {}));
  const auto ordered = [&](UnitIndex a, UnitIndex b) {
    return (reach.AncestorsOf(b)[a / 64] >> (a % 64)) & 1;  // a runs before b in every order
  };
  for (size_t i = 0; i < units.size(); ++i) {
    for (size_t j = i + 1; j < units.size(); ++j) {
      const UnitIndex u = units[i], v = units[j];
      if (ordered(u, v) || ordered(v, u)) continue;
      // Either runs first; the other's step then holds at least this much.
      const Size u_first = LeastAtStep(problem, graph, v, {u});
      if (u_first <= bound) continue;
      bound = std::max(bound, std::min(u_first, LeastAtStep(problem, graph, u, {v})));
    }
  }
  return bound;
}

}  // namespace cadence_memplan::schedule::detail
