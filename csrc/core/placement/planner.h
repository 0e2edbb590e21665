// The two hierarchical placers of ExecuTorch's Cadence backend, with exactly
// the placements of upstream's Python classes (executorch 1.5.x,
// backends/cadence/aot/memory_planning.py):
//
//   * kPositionBasedGreedy (PositionBasedGreedyWithHierarchy): each tensor goes
//     to the first memory, fastest first, where it fits, at the lowest aligned
//     offset whose storage is free for its whole lifetime (first fit).
//   * kGreedyByHeuristic (GreedyWithHeuristic, the "greedy by size for offset
//     calculation" of arXiv 2001.03288): each tensor goes to the smallest gap
//     between lifetime-overlapping tensors that holds it (best fit, strictly
//     smaller wins), else after the last of them.
//
// Shared rules: tensors are visited by size, largest first, ties in input
// order (a stable sort); memories are tried in order 1..N; a placement is
// valid when the memory is allowed in this call, not blocked for the tensor,
// and AlignUp(offset + size, alignment) <= memory size. Lifetimes are
// inclusive [start, end] (see types.h).
//
// Upstream behaviours reproduced on purpose, so that plans stay identical:
//   * The heuristic scans a memory's tensors in their list order. Upstream
//     stable-sorts that list by offset after each placement in it, but not
//     before the first one, so already-placed tensors are scanned in the order
//     they were given until then.
//   * The heuristic keeps a tensor's incoming offset when no gap holds it
//     (`keep_incoming_offset`), and keeps it across memories that are blocked
//     for the tensor. Upstream then asserts that the result overlaps nothing;
//     here that assertion is a PlanningFailure.
//   * Upstream aligns with floating-point division, which is inexact above
//     2^53 bytes; this core is exact everywhere.
//
// Each memory answers "which bytes are taken while this tensor lives?"
// through a MemoryOccupancy (occupancy.h): a scan, a time-bucketed interval
// index, or a segment tree of merged free space, chosen per request
// (PlanRequest::occupancy). The plan does not depend on the choice.
#pragma once

#include <string>
#include <vector>

#include "core/common/errors.h"
#include "core/common/interrupt.h"
#include "core/common/types.h"

namespace cadence_memplan {

enum class Algorithm {
  kPositionBasedGreedy,
  kGreedyByHeuristic,
};

struct PlanRequest {
  std::vector<Tensor> tensors;    // To place, in the caller's order.
  std::vector<Memory> memories;   // memories[m - 1] describes memory id m.
  // Empty, or one mask per tensor: the memory ids that tensor must not use.
  std::vector<MemoryMask> blocked;
  // The memory ids usable in this call (upstream's `memory_id_is_valid`).
  // Bits of ids that do not exist are ignored.
  MemoryMask allowed = ~MemoryMask{0};
  // Tensors already in the memories. The order of a memory's tensors here is
  // its list order (upstream's `state.allocated_buffers[m]`).
  std::vector<PlacedTensor> placed;
  // Empty, or one per tensor: its `mem_offset` before the call, kNoOffset for
  // None. Only the heuristic reads it.
  std::vector<Offset> incoming_offsets;
  // Reproduce upstream's "keep the incoming offset" quirk (see above).
  bool keep_incoming_offset = true;
  // How each memory finds the tensors alive with the one being placed. Every
  // choice gives the same plan (occupancy.h); kAuto picks the fastest for the
  // request's lifetimes, and the others exist for tests and benchmarks.
  Occupancy occupancy = Occupancy::kAuto;
  // Polled in every phase of the plan (interrupt.h): the check, the
  // indexes, the visit order, every kPlacementsPerPoll placements, and the
  // result's sorts. A stop abandons the plan with Interrupted. Lets a caller
  // honour Ctrl-C in a long plan.
  Interrupt interrupt;
};

// Placements between two polls of PlanRequest::interrupt: a millisecond or
// two of planning, so a poll costs nothing measurable.
inline constexpr int64_t kPlacementsPerPoll = 1024;

struct PlanResult {
  std::vector<Placement> placements;  // One per tensor.
  // Indexed by memory id 0..N (0 stays 0): the largest aligned end of any
  // tensor in the memory, placed before or during the call.
  std::vector<Size> bufsizes;
  // The same over this call's tensors alone: what upstream's place_spec
  // raises `state.bufsizes` to, since it sees only the tensors it places.
  std::vector<Size> call_bufsizes;
  // Indexed by memory id 0..N: the memory's list order after the call, in
  // slots (types.h), as upstream leaves `state.allocated_buffers[m]`.
  std::vector<std::vector<Slot>> memory_order;
  // The occupancy used: the request's, or what kAuto chose. Never kAuto.
  Occupancy occupancy = Occupancy::kAuto;
};

// Returns why `request` is not a valid input, or "" when it is.
std::string CheckRequest(const PlanRequest& request);

// Plans every tensor of `request`. Throws InvalidInput (CheckRequest failed),
// PlanningFailure (its message ends with WithPeakLiveNote's note) or
// Interrupted. Deterministic: the result depends only on the request.
PlanResult Plan(const PlanRequest& request, Algorithm algorithm);

// `failure` with a note appended to its message: how many bytes must be alive
// at once (the peak-live lower bound over every tensor of the request, placed
// ones included), against what the memories hold in all. What a user needs to
// size the memories; computed only once a plan has failed.
PlanningFailure WithPeakLiveNote(const PlanRequest& request, const PlanningFailure& failure);

// Upstream's visit order: by size, largest first, ties in input order.
// Polls `interrupt` in its phase kOrder.
std::vector<TensorIndex> UpstreamOrder(const std::vector<Tensor>& tensors,
                                       const Interrupt& interrupt = Interrupt());

// Plan() with the tensors visited in `order`, a permutation of their indexes,
// instead of UpstreamOrder: the same placers on another order, as the
// portfolio search of best.h tries them. Its failures carry no note.
PlanResult PlanInOrder(const PlanRequest& request, Algorithm algorithm,
                       const std::vector<TensorIndex>& order);

}  // namespace cadence_memplan
