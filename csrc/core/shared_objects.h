// Shared-object packing: exir's default memory planner (`greedy` in
// executorch/exir/memory_planning.py), its banked variant (`BankedGreedy` in
// executorch/exir/banked_memory_planning.py) and its storage-reuse check
// (`Verifier.verify_storage_reuse`), with the same results.
//
// What exir does. Tensors are visited largest first (sorted by their incoming
// size; among equal sizes the later one first). Each memory keeps a list of
// shared objects, buckets of fixed size made by the first tensor put in them.
// `pick_shared_obj` puts a tensor into
//   1. the first object, in creation order, none of whose allocations has a
//      lifetime overlapping the tensor's: at offset 0;
//   2. else (when overlapping allocations are allowed) the first object whose
//      overlapping allocations end furthest at some e > 0 with e + size <= the
//      object's size: at offset e;
//   3. else a new object of the tensor's size.
// Lifetimes are compared as exir compares them: allocation a overlaps tensor t
// unless t.end < a.start or t.start > a.end, with no special case for
// inverted (start > end) lifetimes. Storage-backed tensors (`storage_base`)
// are resolved afterwards into their base's object; objects are then laid end
// to end per memory, after the bytes a control-flow submodule reserved.
//
// Why it is fast. Exir scans every object and each of its allocations for
// every tensor. Both questions of `pick_shared_obj` only concern the
// allocations whose lifetimes overlap the tensor's: the objects they belong to
// are the only ones blocked for step 1, and the only ones with e > 0 for step
// 2. So each memory keeps an index of its allocations (LiveAllocationIndex:
// points (start, end) ordered by start, with the largest end per subtree) that
// lists the k overlapping allocations in O((k + 1) log n). Step 1 is then the
// first object not among the at most k blocked ones with a large enough size
// (a max-tree over the objects' sizes finds it in O((k + 1) log n)); step 2 is
// the smallest blocked object that fits. ObjectSearch::kScan answers the same
// questions with exir's loops, as the baseline for benchmarks and tests.
//
// Listing all k costs more than exir's loops where many allocations are alive
// at once: the loops stop at the first overlap in each object and often at the
// first object (pangu: 18,692 tensors, the index alone 3.5x slower than the
// loops). ObjectSearch::kAuto, the default, therefore scans small memories
// outright and, in large ones, asks the index only when the allocations so
// far outnumber the query's window of the index 16 times over.
//
// The storage-reuse check counts pairs of tensors whose bytes overlap by a
// sort per memory (O(n log n)) and looks for a forbidden pair (bytes and
// lifetimes overlap and neither tensor backs the other, or different
// mem_obj_ids) with a sweep over offsets: only pairs that overlap in both
// bytes and lifetime are listed, which in a valid plan are the in-place ones.
#pragma once

#include <cstdint>
#include <vector>

#include "types.h"

namespace cadence_memplan {

// How a memory finds the objects a tensor may go into; all give one result.
enum class ObjectSearch {
  kAuto,   // Per memory and per query, the cheaper of the two below (see Find).
  kIndex,  // The allocations alive with the tensor, from LiveAllocationIndex.
  kScan,   // Every allocation of every object, as exir's loops do.
};

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
  ObjectSearch search = ObjectSearch::kAuto;
  // kAuto: a memory with fewer tensors is scanned, with no index built (below
  // a few thousand, building it costs more than it saves: the crossover on
  // synthetic graphs lies between 2,000 and 4,000 tensors; G_1 and resnet50,
  // about 1,000 each, plan faster by scan). Tests lower it to reach the
  // per-query choice on small problems.
  int64_t index_minimum_tensors = 3000;
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

// One tensor of a finished plan, for the storage-reuse check.
struct ReuseTensor {
  Lifetime lifetime;   // Inverted lifetimes overlap nothing here (exir's has_overlap).
  int64_t mem_id = 0;  // Any value; tensors of equal mem_id share a memory.
  Offset offset = 0;   // >= 0.
  Size size = 0;       // >= 0; zero-size tensors overlap nothing.
  int64_t mem_obj_id = 0;
  // Ancestors through storage_base: index into `ReuseCheckRequest::parents`'
  // node space (tensor i is node i), -1 at the root.
};

struct ReuseCheckRequest {
  std::vector<ReuseTensor> tensors;
  // parents[node]: the node backing it (storage_base), -1 for none. Nodes
  // 0..n-1 are the tensors, further ones are storage bases that are not
  // checked themselves. Must be acyclic.
  std::vector<int64_t> parents;
  bool allow_lifetime_and_storage_overlap = false;
  ObjectSearch search = ObjectSearch::kAuto;
};

struct ReuseCheckResult {
  int64_t reuse_pairs = 0;  // Pairs whose bytes overlap (exir's return value).
  // A pair exir rejects exists ("Unexpected storage overlap" or "mem_obj_id
  // mismatch"); which one exir reports first is for the caller to find.
  bool violation = false;
};

ReuseCheckResult CheckStorageReuse(const ReuseCheckRequest& request);

}  // namespace cadence_memplan
