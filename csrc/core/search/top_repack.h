// TopRepack: lowers a valid packing of one memory below a smaller capacity by
// repacking the tensors that end highest, the others staying where they are
// (a large neighbourhood search whose repair is the exact search,
// FitInCapacity, with the others as obstacles).
//
// Why. MinimizeBufsize's probes ask "does everything fit below C?" of the
// whole problem. Where the optimum is hard (cut rectangles, D and J), such a
// search runs out of nodes far from its answer: a depth-first search does
// not revisit the choices near its root within its limit. But a packing
// just above the target often needs changing only near its top: repacking
// the k tensors that end highest on the skyline the others leave is a
// small problem, answered in a few dives where the whole one is not. k is
// drawn around a size that grows while repacks fail and shrinks while they
// answer. (Freeing a window of time instead was tried: the freed tensors
// that outlive the window stay pinned by their neighbours outside it, and
// the repacks rarely answered; docs/research-log.md.)
//
// Deterministic: k is drawn from a fixed-seed generator, the work is counted
// in nodes, and a deadline only stops it early. Lifetimes are inclusive
// [start, end], as everywhere in the core.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/common/types.h"
#include "core/search/exact_search.h"

namespace cadence_memplan {

class TopRepack {
 public:
  // `offsets`: a valid packing of `problem` (one byte offset per tensor).
  TopRepack(const PackingProblem& problem, std::vector<Offset> offsets);

  // Starts again from another valid packing.
  void Reset(std::vector<Offset> offsets) { offsets_ = std::move(offsets); }

  // Repacks until every tensor's aligned end is within `capacity` (true:
  // offsets() is such a packing), or `max_nodes` are spent, `limits` stop
  // it or `max_failures` repacks in a row found nothing (false). offsets()
  // is a valid packing throughout, its tensors' aligned ends no higher than
  // the larger of `capacity` and their highest before the call. Throws
  // Interrupted.
  bool RepackTo(Size capacity, int64_t max_nodes, int max_failures, const SearchLimits& limits);

  const std::vector<Offset>& offsets() const { return offsets_; }
  int64_t nodes() const { return nodes_; }                   // Charged since construction.
  const std::string& strategy() const { return strategy_; }  // Of the last repack that fitted.

 private:
  const PackingProblem& problem_;
  std::vector<Offset> offsets_;
  std::vector<TensorIndex> placed_;  // The tensors with bytes and a lifetime.
  std::mt19937_64 rng_{0x5eed};
  size_t freed_;  // About how many tensors a repack frees.
  int64_t nodes_ = 0;
  std::string strategy_;
};

}  // namespace cadence_memplan
