// exir's default memory planner (`greedy` in executorch/exir/memory_planning.py)
// and its banked variant (`BankedGreedy` in
// executorch/exir/banked_memory_planning.py), with the same results and the
// same failures.
//
// What exir does. Tensors are visited largest first (sorted by their incoming
// size; among equal sizes the later one first). Each memory keeps a list of
// shared objects, and `pick_shared_obj` puts each tensor into one of them or
// into a new one (object_pool.h). Storage-backed tensors (`storage_base`) are
// resolved afterwards into their base's object, in exir's rounds; objects are
// then laid end to end per memory, after the bytes a control-flow submodule
// reserved. BankedGreedy places the pinned tensors (a preset `mem_id`) first,
// each into its own memory, then every other tensor into the first bank,
// in preference order, that takes it within the bank's size.
//
// Arithmetic. Every byte count, offset and alignment of a request is at most
// 2^60 (checked on entry), so an offset inside an object plus a size stays
// below 2^62; sums over many objects (a memory's total, a tensor's offset in
// its memory) go through CheckedAdd and report kOverflow, since exir's Python
// ints never wrap.
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/types.h"

namespace cadence_memplan {

// `ExirTensor::base` when the tensor has no storage_base.
inline constexpr TensorIndex kNoStorageBase = -1;
// `ExirTensor::base` when the storage_base is not one of the planned tensors,
// which exir reports as an unresolvable dependency.
inline constexpr TensorIndex kOutsideStorageBase = -2;

// One TensorSpec as exir's planners read it.
struct ExirTensor {
  Lifetime lifetime;       // Raw: exir's comparison, inverted lifetimes included.
  Size sort_size = 0;      // `allocated_memory` before realignment: the visit order's key.
  Size nbytes = 0;         // Unaligned bytes; the planner aligns them (`realign`).
  int64_t mem_id = 1;      // The preset `mem_id` (greedy: None is passed as 1).
  bool pinned = true;      // BankedGreedy: `mem_id` was set (greedy ignores it).
  TensorIndex base = kNoStorageBase;
  Offset base_offset = 0;  // `storage_base_offset`.
};

// Where exir's `SpecAllocResult` puts a tensor. `object` is the shared
// object's index in its memory (`mem_obj_id`); -1 while unplaced.
struct ExirPlacement {
  int64_t mem_id = 0;
  int64_t object = -1;
  Offset offset = 0;  // In the memory: the object's offset plus the allocation's.
};

// The ways exir's planners fail, with the tensor and value its message names.
// They are outcomes of exir's algorithm, not bad input: the caller raises
// exir's own exception for them.
enum class PackErrorKind {
  kNone,
  kNotSorted,               // pick_shared_obj's "Allocation specs are not sorted".
  kNegativeStorageOffset,   // storage_base_offset < 0.
  kMisalignedStorage,       // value: the base's offset in its object.
  kStorageDoesNotFit,       // storage_base_offset + size > the base's size.
  kUnresolvableStorage,     // Unresolved tensors: placement.object == -1.
  kPinnedDoesNotFit,        // BankedGreedy; value: the bank's bytes left.
  kNoBankFits,              // BankedGreedy; `used` holds every bank's bytes used.
  kOverflow,                // A size or offset beyond int64 (exir's ints are unbounded).
};

struct PackError {
  PackErrorKind kind = PackErrorKind::kNone;
  TensorIndex tensor = -1;  // Index into the request's tensors.
  int64_t value = 0;
};

struct PackResult {
  // The tensors in the order exir visits them (and inserts them into its result).
  std::vector<TensorIndex> visit_order;
  std::vector<ExirPlacement> placements;  // Per tensor, in input order.
  std::vector<Size> bufsizes;             // Indexed by mem_id; exir's `[0, 0]` when empty.
  // The alignment each tensor ends with (BankedGreedy realigns per bank); 0
  // for tensors the planner has not reached when it failed.
  std::vector<Size> final_alignment;
  std::vector<Size> used;  // BankedGreedy: bytes used per bank, in the banks' order.
  PackError error;
};

struct GreedyRequest {
  std::vector<ExirTensor> tensors;
  Size alignment = 16;
  bool allow_overlapping_allocations = true;
  Size extra_padding = 0;
  // graph_module.input_mem_buffer_sizes, indexed by mem_id (shorter = zeros).
  std::vector<Size> input_sizes;
  Occupancy search = Occupancy::kAuto;
  // kAuto: a memory with fewer tensors is scanned, with no structure built,
  // which would cost more than it saves (docs/performance.md). Tests lower it
  // to reach the other choices on small problems.
  int64_t auto_minimum_tensors = 1000;
};

// exir's `greedy`. Throws InvalidInput (planner.h) for input exir cannot
// have produced (negative sizes, mem_ids outside [0, 2^20], bases out of
// range) and for byte counts, offsets or alignments beyond 2^60, so that the
// sums the planner forms stay within int64 (exir's Python ints never wrap).
PackResult PackGreedy(const GreedyRequest& request);

// One bank of a TargetMemoryMap.
struct Bank {
  int64_t mem_id = 1;
  Size size = 0;
  Size alignment = 0;  // 0: the graph's alignment.
};

struct BankedRequest {
  GreedyRequest greedy;    // Tensors and options; `pinned` says which mem_ids were set.
  std::vector<Bank> banks;  // Preference order.
};

// exir's `BankedGreedy.__call__` after its Python-side checks (bank
// alignments, CPU only), before its capacity backstop. `bufsizes` includes the
// extra padding of the banks that hold something.
PackResult PackBanked(const BankedRequest& request);

}  // namespace cadence_memplan
