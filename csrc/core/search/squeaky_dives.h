// SqueakyDives: greedy canonical packings of one memory, one after another,
// whose choices the squeaky wheel learns (Joslin and Clements, "Squeaky
// Wheel" Optimization, JAIR 1999): after each dive, the tensors that ended
// near the top push themselves forward, so that later dives place them
// earlier, lower down.
//
// Why. Where MinimizeBufsize's descent stalls (cut rectangles), its
// depth-first searches are heavy-tailed: asked for a capacity a little below
// the best plan, one runs out of nodes deep in a subtree whose waste was
// decided near its root, and a search that found 1.30x the bound in one dive
// finds nothing at 1.25x in two million nodes (docs/research-log.md). A dive
// never backtracks; what one learns reaches the next through the
// priorities, so the dives move through packings that differ near the root,
// where a depth-first search does not go back.
//
// A dive is CanonicalSearch (canonical_search.h) at a capacity no packing
// exceeds, so it never backtracks: the next tensor is the one with the
// lowest minimum offset, ties going to the higher priority (then the
// lifetime's length, then the area). It visits a node per item, and one
// per split into independent parts (exact_search.h, decomposition). The
// priorities start at each tensor's area over the largest area; a tensor
// whose end lies in the top 1/32 of the best plan's height gains up to 1/2,
// the more the higher it ends (kBandShare, kPush).
//
// Deterministic: no randomness; the work is counted in nodes. Lifetimes are
// inclusive [start, end], as everywhere in the core.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/search/unit_problem.h"

namespace cadence_memplan {
namespace detail {

class SqueakyDives {
 public:
  explicit SqueakyDives(const UnitProblem& problem);

  // One dive within `max_nodes`, then the push of the tensors near
  // `reference`, the best plan's height in units. False, with nothing
  // learned, when the limit or should_stop stopped it.
  bool Dive(int64_t max_nodes, Unit reference, const std::function<bool()>& should_stop);

  // The last dive's packing: units per item, and its top (the highest end
  // of an item; obstacles not included).
  const std::vector<Unit>& packing() const { return packing_; }
  Unit top() const { return top_; }
  int64_t nodes() const { return nodes_; }  // Since construction.

 private:
  const UnitProblem& problem_;
  std::vector<double> priority_;  // Per item; larger goes first.
  Unit capacity_ = 0;             // No packing of the problem ends above it.
  std::vector<Unit> packing_;
  Unit top_ = 0;
  int64_t nodes_ = 0;
};

}  // namespace detail
}  // namespace cadence_memplan
