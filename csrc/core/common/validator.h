// Validate: an independent check of a finished plan, sharing no code with the
// placers beyond the definitions in types.h.
//
// A plan is valid when every tensor
//   * sits in an existing memory (id 1..N) at a non-negative offset that is a
//     multiple of the memory's alignment,
//   * lies inside the memory: offset + size <= memory size, and
//   * shares no byte of storage with any tensor of the same memory whose
//     (inclusive) lifetime overlaps its own.
//
// Runs in O(n log n): a sweep over time per memory that keeps the live
// tensors ordered by offset, so each insertion only needs to be compared with
// its two neighbours. Polls `interrupt` in its phase kValidate.
#pragma once

#include <string>
#include <vector>

#include "core/common/interrupt.h"
#include "core/common/types.h"

namespace cadence_memplan {

// Returns "" when the plan is valid, else the first violation found, in words.
// `placements[i]` is where `tensors[i]` went; memories[m - 1] is memory id m.
std::string Validate(const std::vector<Tensor>& tensors, const std::vector<Placement>& placements,
                     const std::vector<Memory>& memories, const Interrupt& interrupt = Interrupt());

}  // namespace cadence_memplan
