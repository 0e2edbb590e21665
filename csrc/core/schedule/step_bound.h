// Lower bounds on a schedule's peak by minimum cuts: the fewest bytes a
// unit's step can hold over every legal order, alone and in pairs.
//
// When unit v runs, the units run before it are a set S closed under
// predecessors that holds v's ancestors and none of its descendants; the
// step holds v's outputs and every buffer made in S that a unit outside S
// still reads (or that is kept to the end). The least such total over all S
// is a minimum cut (project selection: a node per unit, in S or not, and one
// per buffer, "every reader in S", so a buffer costs its bytes when its
// producer is in S and its readers are not all there). It bounds step(v) in
// every order, so the peak too, and it is at least the must-live bytes of
// unit_graph.h, which count only what every S keeps.
//
// Two units u and v that no edge orders run one before the other. If u runs
// first, S holds u and its ancestors when v runs, and the cut with them
// forced into S bounds step(v); if v runs first, the same bounds step(u). So
// the smaller of the two bounds the peak: this catches two branches that each
// leave a buffer alive during the other's heaviest step, which no single
// unit's bound sees.
#pragma once

#include <vector>

#include "core/common/types.h"
#include "core/schedule/schedule.h"
#include "core/schedule/unit_graph.h"

namespace cadence_memplan::schedule::detail {

// How many units, those with the most must-live bytes, get the cut bounds:
// one cut each, and two per unordered pair of them.
inline constexpr size_t kCutBoundUnits = 12;

// The best bound the cuts give on the peak of every legal order, at least
// `bound` (the caller's), over the kCutBoundUnits units with the most
// must-live bytes.
Size CutBound(const ScheduleProblem& problem, const UnitGraph& graph, const Reachability& reach,
              const std::vector<Size>& must_live, Size bound);

}  // namespace cadence_memplan::schedule::detail
