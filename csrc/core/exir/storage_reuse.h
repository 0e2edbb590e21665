// CheckStorageReuse: exir's `Verifier.verify_storage_reuse`
// (executorch/exir/memory_planning.py) on a finished plan, with the same
// count and the same verdict.
//
// What exir does. For every pair of tensors in one memory whose bytes overlap
// it counts a reuse, and it rejects the plan when such a pair also overlaps in
// lifetime while neither tensor backs the other through storage_base ("Unexpected
// storage overlap", unless overlaps are allowed), or when the pair's
// mem_obj_ids differ ("mem_obj_id mismatch"). Its loops visit every pair.
//
// How it is done here. The pairs whose bytes overlap are counted by a sort per
// memory: after sorting by offset, tensor k overlaps every earlier tensor
// whose last byte is at or after its first, counted by a binary search over
// the sorted last bytes (O(n log n)). A forbidden pair is looked for by a
// sweep over offsets that keeps the tensors whose bytes reach the current
// offset, both as counts per mem_obj_id (a tensor meets a different object
// exactly when the active tensors are not all of its own object) and in a
// LiveAllocationIndex (live_allocation_index.h), so that only the pairs that
// overlap in both bytes and lifetime are listed: in a valid plan, the
// in-place ones. Occupancy::kScan runs exir's all-pairs loops instead.
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/types.h"

namespace cadence_memplan {

// One tensor of a finished plan.
struct ReuseTensor {
  Lifetime lifetime;   // Inverted lifetimes overlap nothing here (exir's has_overlap).
  int64_t mem_id = 0;  // Any value; tensors of equal mem_id share a memory.
  Offset offset = 0;   // >= 0.
  Size size = 0;       // >= 0; zero-size tensors overlap nothing.
  int64_t mem_obj_id = 0;
};

struct ReuseCheckRequest {
  std::vector<ReuseTensor> tensors;
  // parents[node]: the node backing it (storage_base), -1 for none. Nodes
  // 0..n-1 are the tensors, further ones are storage bases that are not
  // checked themselves. Must be acyclic.
  std::vector<int64_t> parents;
  bool allow_lifetime_and_storage_overlap = false;
  Occupancy search = Occupancy::kAuto;  // kScan: exir's loops; otherwise the sweep.
};

struct ReuseCheckResult {
  int64_t reuse_pairs = 0;  // Pairs whose bytes overlap (exir's return value).
  // A pair exir rejects exists ("Unexpected storage overlap" or "mem_obj_id
  // mismatch"); which one exir reports first is for the caller to find.
  bool violation = false;
};

// Throws InvalidInput (planner.h) for offsets or sizes outside 0..2^62,
// parents out of range, or storage bases that form a cycle.
ReuseCheckResult CheckStorageReuse(const ReuseCheckRequest& request);

}  // namespace cadence_memplan
