// The scheduling problem as the search reads it: compressed adjacency of the
// units (the caller's edges and the implied producer -> user edges), each
// unit's buffers, and what each unit adds to and frees from the live bytes.
// Built once per Schedule() call from a problem that passed CheckProblem.
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/types.h"
#include "core/schedule/schedule.h"

namespace cadence_memplan::schedule::detail {

// Rows of a compressed sparse table: row r is items[start[r] .. start[r+1]).
struct Rows {
  std::vector<int32_t> start;
  std::vector<int32_t> items;

  const int32_t* begin(int32_t row) const { return items.data() + start[row]; }
  const int32_t* end(int32_t row) const { return items.data() + start[row + 1]; }
  int32_t size(int32_t row) const { return start[row + 1] - start[row]; }
};

struct UnitGraph {
  UnitIndex units = 0;
  Rows preds, succs;  // Sorted, without repeats.
  // inputs[u]: the buffers u reads that u's running may free: nonzero size,
  // not kept to the end, not u's own. users[b]: b's readers but its producer.
  Rows inputs, users;
  std::vector<Size> buffer_size;
  // out_all[u]: the bytes u allocates (alive at its step); out_kept[u]: those
  // of them alive after it (read later, or kept to the end).
  std::vector<Size> out_all, out_kept;
  // Bytes alive before the first step and after it (graph inputs someone
  // reads, or kept), and bytes alive at the first step only (unread inputs).
  Size resident_at_start = 0;
  Size first_step_only = 0;
  // The exchange rules of schedule.h: a unit that allocates nothing runs as
  // soon as it is ready; a deferred source runs just before its first
  // successor.
  std::vector<uint8_t> allocates_nothing, deferred_source;
  Rows deferred_preds;  // Each unit's predecessors that are deferred sources.

  static UnitGraph Build(const ScheduleProblem& problem);
};

// Bitsets over the units, one row per unit: ancestors and descendants, each
// including the unit itself. Rows of `words` uint64 each.
struct Reachability {
  int32_t words = 0;
  std::vector<uint64_t> ancestors, descendants;

  static Reachability Build(const UnitGraph& graph);
  const uint64_t* AncestorsOf(UnitIndex u) const { return ancestors.data() + int64_t{u} * words; }
  const uint64_t* DescendantsOf(UnitIndex u) const {
    return descendants.data() + int64_t{u} * words;
  }
};

// Reachability costs units^2 bits; above this many units the lower bound
// falls back to what each unit reads and writes.
inline constexpr UnitIndex kMaxUnitsForReachability = 12000;

// The bytes alive at each unit's step in every legal order (schedule.h's
// lower bound, per unit); with no reachability, what each unit reads and
// writes.
std::vector<Size> MustLive(const ScheduleProblem& problem, const UnitGraph& graph,
                           const Reachability* reach);

// The peak no legal order goes below: the first step's bytes alive from the
// start, and the most bytes that must be alive at one unit's step.
Size LowerBoundOf(const UnitGraph& graph, const std::vector<Size>& must_live);

}  // namespace cadence_memplan::schedule::detail
