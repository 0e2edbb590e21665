#include "core/schedule/unit_graph.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "core/common/bits.h"
#include "core/common/peak_live.h"
#include "core/common/str_cat.h"
#include "core/schedule/schedule.h"
#include "core/schedule/step_bound.h"

namespace cadence_memplan::schedule {
namespace {

using detail::Reachability;
using detail::Rows;
using detail::UnitGraph;

// Rows from (row, item) pairs: sorted within each row, repeats dropped.
Rows MakeRows(int32_t rows, std::vector<std::pair<int32_t, int32_t>> pairs) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  Rows table;
  table.start.assign(rows + 1, 0);
  table.items.reserve(pairs.size());
  for (const auto& [row, item] : pairs) {
    ++table.start[row + 1];
    table.items.push_back(item);
  }
  for (int32_t r = 0; r < rows; ++r) table.start[r + 1] += table.start[r];
  return table;
}

// A buffer's readers, its producer left out (a unit may read what it makes).
std::vector<UnitIndex> Readers(const Buffer& buffer) {
  std::vector<UnitIndex> readers;
  for (const UnitIndex user : buffer.users) {
    if (user != buffer.producer) readers.push_back(user);
  }
  std::sort(readers.begin(), readers.end());
  readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  return readers;
}

}  // namespace

std::string CheckProblem(const ScheduleProblem& problem) {
  const UnitIndex n = problem.units;
  if (n < 0 || n == std::numeric_limits<UnitIndex>::max()) {
    return StrCat("units must be in [0, 2^31 - 1), got ", n);
  }
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    const auto [before, after] = problem.edges[e];
    if (before < 0 || after >= n || before >= after) {
      return StrCat("edge ", e, " is (", before, ", ", after, "): both ends must be units in [0, ",
                    n, ") and the first must come before the second in the given order");
    }
  }
  Size total = 0;
  for (size_t b = 0; b < problem.buffers.size(); ++b) {
    const Buffer& buffer = problem.buffers[b];
    if (buffer.producer < kBeforeProgram || buffer.producer >= n) {
      return StrCat("buffer ", b, " has producer ", buffer.producer, ", not a unit in [0, ", n,
                    ") or -1 (alive from the start)");
    }
    if (buffer.size < 0 || buffer.size > kMaxByteValue) {
      return StrCat("buffer ", b, " has size ", buffer.size, ", not in [0, 2^62]");
    }
    total += buffer.size;
    if (total > kMaxByteValue) return "the buffers' sizes add up to more than 2^62 bytes";
    for (const UnitIndex user : buffer.users) {
      if (user < 0 || user >= n) {
        return StrCat("buffer ", b, " has user ", user, ", not a unit in [0, ", n, ")");
      }
      if (user < buffer.producer) {
        return StrCat("buffer ", b, " is read by unit ", user, " before its producer, unit ",
                      buffer.producer, ", runs in the given order");
      }
    }
  }
  return "";
}

std::string CheckOrder(const ScheduleProblem& problem, const std::vector<UnitIndex>& order) {
  const UnitIndex n = problem.units;
  if (order.size() != static_cast<size_t>(n)) {
    return StrCat("the order has ", order.size(), " units, the problem ", n);
  }
  std::vector<int64_t> step(n, -1);
  for (size_t s = 0; s < order.size(); ++s) {
    const UnitIndex u = order[s];
    if (u < 0 || u >= n) return StrCat("step ", s, " runs ", u, ", not a unit in [0, ", n, ")");
    if (step[u] >= 0) return StrCat("unit ", u, " runs twice, at steps ", step[u], " and ", s);
    step[u] = static_cast<int64_t>(s);
  }
  for (size_t e = 0; e < problem.edges.size(); ++e) {
    const auto [before, after] = problem.edges[e];
    if (step[before] > step[after]) {
      return StrCat("unit ", after, " runs at step ", step[after], ", before unit ", before,
                    " (step ", step[before], "), which edge ", e, " puts first");
    }
  }
  for (size_t b = 0; b < problem.buffers.size(); ++b) {
    const Buffer& buffer = problem.buffers[b];
    if (buffer.producer == kBeforeProgram) continue;
    for (const UnitIndex user : buffer.users) {
      if (user != buffer.producer && step[user] < step[buffer.producer]) {
        return StrCat("unit ", user, " reads buffer ", b, " at step ", step[user],
                      ", before its producer, unit ", buffer.producer, ", makes it at step ",
                      step[buffer.producer]);
      }
    }
  }
  return "";
}

Size PeakLiveOf(const ScheduleProblem& problem, const std::vector<UnitIndex>& order) {
  const UnitIndex n = problem.units;
  if (n == 0) return 0;
  std::vector<Time> step(n);
  for (size_t s = 0; s < order.size(); ++s) step[order[s]] = static_cast<Time>(s);
  PeakLive peak;
  for (const Buffer& buffer : problem.buffers) {
    const Time start = buffer.producer == kBeforeProgram ? 0 : step[buffer.producer];
    Time end = start;
    if (buffer.live_to_end) {
      end = n - 1;
    } else {
      for (const UnitIndex user : buffer.users) end = std::max(end, step[user]);
    }
    peak.Add({start, end}, buffer.size);
  }
  return peak.Peak();
}

namespace detail {

UnitGraph UnitGraph::Build(const ScheduleProblem& problem) {
  const UnitIndex n = problem.units;
  const int32_t buffers = static_cast<int32_t>(problem.buffers.size());
  UnitGraph graph;
  graph.units = n;
  graph.buffer_size.resize(buffers);
  graph.out_all.assign(n, 0);
  graph.out_kept.assign(n, 0);
  std::vector<std::pair<int32_t, int32_t>> forward(problem.edges.begin(), problem.edges.end());
  std::vector<std::pair<int32_t, int32_t>> reads, readers;
  for (int32_t b = 0; b < buffers; ++b) {
    const Buffer& buffer = problem.buffers[b];
    graph.buffer_size[b] = buffer.size;
    const std::vector<UnitIndex> users = Readers(buffer);
    for (const UnitIndex user : users) {
      readers.push_back({b, user});
      if (buffer.producer != kBeforeProgram) forward.push_back({buffer.producer, user});
      if (buffer.size > 0 && !buffer.live_to_end) reads.push_back({user, b});
    }
    const bool kept = buffer.live_to_end || !users.empty();
    if (buffer.producer == kBeforeProgram) {
      (kept ? graph.resident_at_start : graph.first_step_only) += buffer.size;
    } else {
      graph.out_all[buffer.producer] += buffer.size;
      if (kept) graph.out_kept[buffer.producer] += buffer.size;
    }
  }
  std::vector<std::pair<int32_t, int32_t>> backward(forward.size());
  for (size_t e = 0; e < forward.size(); ++e) backward[e] = {forward[e].second, forward[e].first};
  graph.succs = MakeRows(n, std::move(forward));
  graph.preds = MakeRows(n, std::move(backward));
  graph.inputs = MakeRows(n, std::move(reads));
  graph.users = MakeRows(buffers, std::move(readers));
  graph.allocates_nothing.resize(n);
  graph.deferred_source.resize(n);
  for (UnitIndex u = 0; u < n; ++u) {
    graph.allocates_nothing[u] = graph.out_all[u] == 0;
    // Why deferring is safe (schedule.h): it frees nothing, so running it
    // later only shortens its outputs' lives, and every output is still read
    // or kept after its first successor, so its own step is never the peak.
    // A deferred source's predecessors are not deferred, so that they run on
    // their own (the given order puts them first, so this loop sees them).
    // One exception: the inputs nobody reads are alive at the first step,
    // whichever unit runs there, so a source that may run first does free
    // something (it takes them away from a heavier unit); it is not deferred.
    bool after_deferred = false;
    for (const int32_t* q = graph.preds.begin(u); q != graph.preds.end(u); ++q) {
      after_deferred |= graph.deferred_source[*q] != 0;
    }
    const bool may_run_first = graph.preds.size(u) == 0;
    graph.deferred_source[u] = graph.inputs.size(u) == 0 && graph.out_all[u] > 0 &&
                               graph.out_kept[u] == graph.out_all[u] && graph.succs.size(u) > 0 &&
                               !after_deferred && !(may_run_first && graph.first_step_only > 0);
  }
  std::vector<std::pair<int32_t, int32_t>> deferred;
  for (UnitIndex u = 0; u < n; ++u) {
    for (const int32_t* q = graph.preds.begin(u); q != graph.preds.end(u); ++q) {
      if (graph.deferred_source[*q]) deferred.push_back({u, *q});
    }
  }
  graph.deferred_preds = MakeRows(n, std::move(deferred));
  return graph;
}

Reachability Reachability::Build(const UnitGraph& graph) {
  const UnitIndex n = graph.units;
  Reachability reach;
  reach.words = (n + 63) / 64;
  reach.ancestors.assign(int64_t{n} * reach.words, 0);
  reach.descendants.assign(int64_t{n} * reach.words, 0);
  // The given order is topological: predecessors come first.
  for (UnitIndex u = 0; u < n; ++u) {
    uint64_t* row = reach.ancestors.data() + int64_t{u} * reach.words;
    row[u / 64] |= uint64_t{1} << (u % 64);
    for (const int32_t* q = graph.preds.begin(u); q != graph.preds.end(u); ++q) {
      const uint64_t* other = reach.AncestorsOf(*q);
      for (int32_t w = 0; w < reach.words; ++w) row[w] |= other[w];
    }
  }
  for (UnitIndex u = n - 1; u >= 0; --u) {
    uint64_t* row = reach.descendants.data() + int64_t{u} * reach.words;
    row[u / 64] |= uint64_t{1} << (u % 64);
    for (const int32_t* v = graph.succs.begin(u); v != graph.succs.end(u); ++v) {
      const uint64_t* other = reach.DescendantsOf(*v);
      for (int32_t w = 0; w < reach.words; ++w) row[w] |= other[w];
    }
  }
  return reach;
}

}  // namespace detail

namespace detail {

std::vector<Size> MustLive(const ScheduleProblem& problem, const UnitGraph& graph,
                           const Reachability* reach) {
  const UnitIndex n = problem.units;
  std::vector<Size> alive(n, 0);
  if (reach == nullptr) {
    // What each unit reads and writes is alive at its step.
    for (size_t b = 0; b < problem.buffers.size(); ++b) {
      const int32_t index = static_cast<int32_t>(b);
      const Buffer& buffer = problem.buffers[b];
      if (buffer.producer != kBeforeProgram) alive[buffer.producer] += buffer.size;
      for (const int32_t* v = graph.users.begin(index); v != graph.users.end(index); ++v) {
        alive[*v] += buffer.size;
      }
    }
    return alive;
  }
  std::vector<uint64_t> span(reach->words);
  for (size_t b = 0; b < problem.buffers.size(); ++b) {
    const Buffer& buffer = problem.buffers[b];
    const int32_t index = static_cast<int32_t>(b);
    if (buffer.size == 0 || (graph.users.size(index) == 0 && !buffer.live_to_end &&
                             buffer.producer == kBeforeProgram)) {
      continue;
    }
    // Alive at u in every order when made at or before u (u descends from the
    // producer) and read at or after u (u is an ancestor of a reader).
    if (buffer.live_to_end) {
      std::fill(span.begin(), span.end(), ~uint64_t{0});
    } else {
      std::fill(span.begin(), span.end(), 0);
      if (buffer.producer != kBeforeProgram) {
        span[buffer.producer / 64] |= uint64_t{1} << (buffer.producer % 64);
      }
      for (const int32_t* v = graph.users.begin(index); v != graph.users.end(index); ++v) {
        const uint64_t* ancestors = reach->AncestorsOf(*v);
        for (int32_t w = 0; w < reach->words; ++w) span[w] |= ancestors[w];
      }
    }
    if (buffer.producer != kBeforeProgram) {
      const uint64_t* descendants = reach->DescendantsOf(buffer.producer);
      for (int32_t w = 0; w < reach->words; ++w) span[w] &= descendants[w];
    }
    for (int32_t w = 0; w < reach->words; ++w) {
      for (uint64_t bits = span[w]; bits != 0; bits &= bits - 1) {
        const int64_t u = int64_t{w} * 64 + CountTrailingZeros(bits);
        if (u < n) alive[u] += buffer.size;
      }
    }
  }
  return alive;
}

Size LowerBoundOf(const UnitGraph& graph, const std::vector<Size>& must_live) {
  if (graph.units == 0) return 0;  // No step, nothing alive.
  Size bound = graph.resident_at_start + graph.first_step_only;
  for (const Size bytes : must_live) bound = std::max(bound, bytes);
  return bound;
}

}  // namespace detail

Size ScheduleLowerBound(const ScheduleProblem& problem) {
  const UnitGraph graph = UnitGraph::Build(problem);
  if (problem.units > detail::kMaxUnitsForReachability) {
    return detail::LowerBoundOf(graph, detail::MustLive(problem, graph, nullptr));
  }
  const Reachability reach = Reachability::Build(graph);
  const std::vector<Size> must_live = detail::MustLive(problem, graph, &reach);
  return detail::CutBound(problem, graph, reach, must_live, detail::LowerBoundOf(graph, must_live));
}

}  // namespace cadence_memplan::schedule
