// An exact search for one memory: "do these tensors fit in capacity C?"
// (FitInCapacity), and the smallest bufsize, anytime (MinimizeBufsize).
//
// The problem. Tensors with inclusive lifetimes and byte sizes go to offsets
// that are multiples of the memory's alignment a (any positive value, not
// only a power of two), so that no two tensors alive at the same time share
// a byte, no tensor shares a byte with an obstacle (a tensor placed before
// the call, at any offset, aligned or not) alive with it, and every aligned
// end AlignUp(offset + size, a) stays within the capacity, as the placers
// demand (planner.h). The bufsize of a packing is its largest aligned end,
// obstacles included, as PlanResult::bufsizes counts it.
//
// Units. Write every offset as k * a and let units(s) = ceil(s / a) for a
// tensor of s > 0 bytes. Then
//   * two tensors at k1 * a and k2 * a (k1 <= k2, sizes s1, s2, lifetimes
//     overlapping) share no byte iff k2 * a >= k1 * a + s1, and since k2 is
//     an integer, iff k2 >= k1 + units(s1);
//   * AlignUp(k * a + s, a) = (k + units(s)) * a, so the aligned end is
//     within capacity C iff k + units(s) <= floor(C / a), and the bufsize is
//     a times the largest k + units(s).
// So among the tensors to place the problem is exactly the same problem on
// integers: sizes units(s), capacity floor(C / a), offsets k, and every
// answer scales back by a. Obstacles do not reduce so: a tensor of s bytes
// at k * a overlaps an obstacle [o, o + t) iff k * a < o + t and o < k * a +
// s, i.e. iff k lies in [floor((o - s) / a) + 1, ceil((o + t) / a) - 1];
// each tensor keeps those forbidden ranges of k, computed from its own byte
// size, so obstacles are honoured byte for byte.
// Zero-size tensors and tensors with an empty lifetime meet nothing; they go
// to offset 0 (which needs units(s) <= floor(C / a)) and take no part in the
// search.
//
// Canonical packings (Moffitt, "MiniMalloc", ASPLOS 2023). Call a packing
// settled when no tensor can move to a lower aligned offset, the others
// staying put. Any packing settles (move tensors down while one can: offsets
// only decrease, so it ends) without a larger bufsize. List a settled
// packing's tensors by (offset, rank), rank being a fixed preorder; then each
// tensor sits at the lowest k that is (a) at or above the top of every
// earlier-listed tensor alive with it, and (b) outside its forbidden ranges:
// any lower such k would be free, since later-listed tensors lie at or above
// its offset, so it could move down. The search therefore builds packings in
// that order: the next tensor is chosen among the unplaced ones, and goes to
// exactly that lowest k (its "minimum offset"); offsets never decrease along
// the sequence, and equal offsets go in increasing rank. Every settled
// packing is one leaf of this tree, so the search is complete: when it ends
// without a leaf, no packing fits.
//
// Pruning, each sound for that tree:
//   * Dominance: let H be the lowest top (minimum offset + units) of any
//     unplaced tensor u. A tensor placed next at k >= H leaves room for u at
//     its minimum offset below every later tensor, so no settled packing
//     lies below that branch (u would move down).
//   * Sections: time is cut at every distinct end of a lifetime; the tensors
//     alive at such a time are alive together, and every set of tensors that
//     is alive together is alive together at some end (the earliest of theirs).
//     In each section, every unplaced tensor sits at or above L = the larger
//     of the last placed offset (offsets never decrease) and the section's
//     floor, the lowest minimum offset of its unplaced tensors ("unallocated
//     floor"); they are pairwise alive together, so they stack:
//     L + (their units) + (units above L covered whole by obstacles alive
//     then) <= capacity, or the branch dies.
//   * Symmetry: of two tensors with the same lifetime and size, the one of
//     lower rank is placed first.
//   * Decomposition: when no unplaced tensor is alive both before and after
//     a section boundary, the tensors on either side are independent; each
//     side is solved alone (a failure of one fails the node), with its own
//     preorder.
// The search restarts over several static preorders (by the largest section
// total, the lifetime length and the area, in three key orders, as in
// MiniMalloc) with a node limit per attempt that doubles after each round;
// a run that hits its limit says nothing (and the next round resumes it
// where it stopped rather than replaying its nodes: canonical_search.h), one
// that ends without a leaf proves that nothing fits.
//
// Work is counted in nodes (calls of the search). Node limits make every
// answer deterministic, whatever the number of threads: the members of one
// decision run independently, and the answer is that of the first member, in
// a fixed order, that reached one. A wall-clock deadline only stops the
// search early; then the result depends on how far it got. An interruption
// (SearchLimits::interrupt) throws Interrupted, from every step.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/common/interrupt.h"
#include "core/common/types.h"

namespace cadence_memplan {

// A tensor that sits in the memory before the search and does not move.
struct Obstacle {
  Tensor tensor;
  Offset offset = 0;
};

// What to pack into one memory.
struct PackingProblem {
  std::vector<Tensor> tensors;      // To place; offsets come back in this order.
  std::vector<Obstacle> obstacles;  // Fixed; they count in the bufsize.
  Size alignment = 1;               // Every offset is a multiple of it; > 0.
};

// When a search stops. Nodes are the deterministic measure of work.
struct SearchLimits {
  int64_t max_nodes = std::numeric_limits<int64_t>::max();
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  // Polled in phase kSearch, every kNodesPerPoll nodes of the calling
  // thread's members (interrupt.h); a stop stops every member and the search
  // throws Interrupted.
  Interrupt interrupt;
  // Members of a decision run on up to this many threads (the calling thread
  // included); the answer does not depend on it.
  int threads = 1;
};

enum class Fit {
  kFits,        // A packing was found.
  kDoesNotFit,  // Proved: no packing fits.
  kUnknown,     // The limits stopped the search first.
};

struct FitResult {
  Fit fit = Fit::kUnknown;
  std::vector<Offset> offsets;  // With kFits: one byte offset per tensor.
  int64_t nodes = 0;            // Work charged (see SearchLimits).
  std::string strategy;         // The preorder whose search answered.
};

// Whether the problem's tensors fit with every aligned end <= capacity.
// Throws Interrupted.
FitResult FitInCapacity(const PackingProblem& problem, Size capacity, const SearchLimits& limits);

// A bufsize after `elapsed_ms` of MinimizeBufsize.
struct Improvement {
  double elapsed_ms = 0;
  Size bufsize = 0;
  int64_t nodes = 0;  // The search's nodes so far (deterministic, unlike the time).
};

struct PackingResult {
  std::vector<Offset> offsets;  // The best packing known: the incumbent if none beat it.
  Size bufsize = 0;             // Its bufsize, obstacles included.
  // Proved: no packing of the problem within the capacity has a smaller
  // bufsize. The largest of the aligned peak-live bound (the most units alive
  // at once, obstacles' whole units included, times a), the largest aligned
  // end of a lone tensor or an obstacle, and one unit above each capacity the
  // search proved too small; without obstacles alive, the next multiple of
  // the grain g above such a capacity, g being the greatest common divisor of
  // the tensors' units (a settled packing's tops are sums of units, so no
  // bufsize lies strictly between: unit_problem.h).
  Size lower_bound = 0;
  bool proved_optimal() const { return bufsize == lower_bound; }
  int64_t nodes = 0;
  std::string strategy;  // What found `offsets`; "" for the incumbent.
  // The first entry is the incumbent's bufsize at 0 ms.
  std::vector<Improvement> improvements;
  bool searched = false;  // False when the problem is too large to search.
};

// The bufsize of `offsets` (one per tensor): their largest aligned end and
// the obstacles'.
Size PackingBufsize(const PackingProblem& problem, const std::vector<Offset>& offsets);

// Minimises the bufsize below `capacity`, starting from `incumbent` (offsets
// of a valid packing within it), until it is proved optimal or the limits stop
// the search. Each capacity is probed rounded down to a multiple of the grain
// (above), which admits the same packings. Rounds of doubling node limits:
// each resumes the search at the lower bound, then gives a share of the
// nodes to the descent below the best plan, each packing found taken at its
// real top. By default the descent resumes the search one unit below the
// best plan, so that when the bound and the steps toward it go unanswered
// the budget goes there, to the deadline; between those probes, and while
// probes answer quickly, it steps toward the bound (a bisection while they
// answer quickly, a smaller step when they do not). Near the end of a node
// budget or a deadline, the bound's probe is cut to its share of what is
// left (exact_search.cc says how the nodes are shared). After a round in
// which the descent gained little, shares of the next round's descent go
// to greedy dives whose order the squeaky wheel learns (SqueakyDives,
// squeaky_dives.h), then to repacking the tensors that end highest, the
// others staying put (TopRepack, top_repack.h). Every packing it returns is
// valid for the problem; `improvements` lists each step. Throws Interrupted.
PackingResult MinimizeBufsize(const PackingProblem& problem, Size capacity,
                              std::vector<Offset> incumbent, const SearchLimits& limits);

// Memory: one number of bytes. A MinimizeBufsize or FitInCapacity call
// holds the problem's tables (UnitProblem: 4 bytes per entry, an entry being
// one section a tensor spans, plus about 100 per tensor and 50 per section),
// shared read-only by its members, and per member (one per preorder and
// capacity kept: MinimizeBufsize keeps those at the bound and one unit below
// the best plan and runs those of a step, of a top repack's FitInCapacity or
// a squeaky dive, one of them at a time, so at most kSearchMembers at once,
// whatever the threads) a fixed state (about 100 bytes per tensor and 100
// per section) and undo logs that grow with the depth of its search (8
// bytes per section whose lowest tensor changed, 12 per tensor whose minimum
// offset rose, per placement on the stack). Each member's logs are capped at
// kMaxUndoBytes: past it, the member drops its oldest entries and goes on as
// a dive, which gives up, unanswered, only if it must backtrack past them
// (canonical_search.h; deterministic: the cap depends on neither threads nor
// time). So a search that needs no deep backtracking answers whatever its
// depth: pangu_2.6B (18,692 tensors) is packed at its bound by one dive.
// When the tables and fixed states (SearchBytesEstimate) plus kSearchMembers
// capped logs would pass kMaxSearchBytes, the search is not attempted and
// the incumbent comes back with the bound. PlanBest on pangu_2.6B peaks at
// about 150 MB resident with 2 threads (docs/quality.md).
inline constexpr int64_t kSearchMembers = 9;
inline constexpr int64_t kMaxUndoBytes = int64_t{8} << 20;
inline constexpr int64_t kMaxSearchBytes = int64_t{160} << 20;
inline constexpr int64_t SearchBytesEstimate(int64_t entries, int64_t tensors, int64_t sections) {
  return 4 * entries + (100 + kSearchMembers * 100) * tensors +
         (50 + kSearchMembers * 100) * sections;
}

}  // namespace cadence_memplan
