// Named types shared by every component of the planner core.
//
// Conventions (ExecuTorch's, which the planners reproduce exactly):
//   * A lifetime is INCLUSIVE on both ends: a tensor is alive at every node
//     index t with start <= t <= end. A lifetime with start > end is empty and
//     overlaps nothing.
//   * Storage is [offset, offset + size - 1]: a zero-size tensor occupies no
//     byte and so never overlaps another tensor's storage.
//   * Memories are numbered 1..N as in ExecuTorch's `spec.mem_id`; id 0 is
//     reserved (constants) and never planned. Memory 1 is the fastest.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace cadence_memplan {

using Time = int64_t;         // A node index in the graph.
using Offset = int64_t;       // A byte offset inside one memory.
using Size = int64_t;         // A byte count.
using MemId = int32_t;        // 1..kMaxMemories; 0 = not placed.
using TensorIndex = int64_t;  // Position of a tensor in the caller's input.
using MemoryMask = uint64_t;  // Bit m set <=> memory id m is in the set.
// One tensor of a planning call, in the one numbering every component uses:
// the already-placed tensors are slots 0..P-1 in the caller's order, tensor i
// to place is slot P + i. PlanResult::memory_order lists slots.
using Slot = int64_t;

// Bit 0 of a MemoryMask stands for the reserved id 0, so 63 memories fit.
inline constexpr MemId kMaxMemories = 63;
// Sizes, offsets, memory sizes and alignments must not exceed this. It leaves
// headroom so that `offset + size` of two valid values cannot overflow.
inline constexpr int64_t kMaxByteValue = int64_t{1} << 62;
// "No offset": an incoming offset that was None in Python.
inline constexpr Offset kNoOffset = -1;
inline constexpr MemId kNotPlaced = 0;

inline constexpr MemoryMask MaskOf(MemId mem_id) { return MemoryMask{1} << mem_id; }

// Inclusive lifetime [start, end]; empty when start > end.
struct Lifetime {
  Time start = 0;
  Time end = -1;

  bool empty() const { return start > end; }
  bool Overlaps(const Lifetime& other) const {
    return !empty() && !other.empty() && start <= other.end && other.start <= end;
  }
};

struct Tensor {
  Lifetime lifetime;
  Size size = 0;  // ExecuTorch's `allocated_memory`.
};

struct Memory {
  Size size = 0;       // Capacity in bytes.
  Size alignment = 1;  // Any positive value; need not be a power of two.
};

struct Placement {
  MemId mem_id = kNotPlaced;
  Offset offset = kNoOffset;
};

// Which structure answers a memory's occupancy questions: for the placers
// (occupancy.h), "which bytes are taken while this tensor lives?"; for exir's
// planners (object_pool.h) and the storage-reuse check (storage_reuse.h), "which
// shared objects or allocations are alive with this tensor?". Every choice gives
// the same result; they differ only in speed. The names are the Python API's
// ("auto", "interval", "tree", "scan"; csrc/bindings/convert.h spells them).
enum class Occupancy {
  kAuto,      // Chosen per memory from its size and overlap (occupancy.h, object_pool.h).
  kInterval,  // List what is alive with the tensor (IntervalIndex, LiveAllocationIndex).
  kTree,      // A segment tree over time (OccupancyTree) or objects (FreeObjectTree).
  kScan,      // Scan everything, as upstream's loops do: the baseline, for benchmarks.
};

// A half-open byte range [begin, end); empty when begin >= end.
struct Segment {
  Offset begin = 0;
  Offset end = 0;
};

// A tensor that already sits in a memory before a planning call (upstream's
// `state.allocated_buffers`, e.g. offset-pinned tensors).
struct PlacedTensor {
  Tensor tensor;
  Placement placement;
};

// The one overflow check of the core: a + b into *sum, or false (and *sum
// untouched) when the sum does not fit in int64. Portable C++ (no compiler
// builtins), so every compiler of the wheels builds it.
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* sum) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if ((b > 0 && a > kMax - b) || (b < 0 && a < kMin - b)) return false;
  *sum = a + b;
  return true;
}

// Saturating arithmetic: results that would overflow become INT64_MAX (or
// INT64_MIN), which is larger than any valid memory size, so "does it fit?"
// stays exact.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (CheckedAdd(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// ceil(value / alignment) * alignment for value >= 0, alignment > 0,
// saturating like SaturatingAdd.
inline int64_t AlignUp(int64_t value, int64_t alignment) {
  const int64_t quotient = value / alignment + (value % alignment != 0 ? 1 : 0);
  if (quotient > std::numeric_limits<int64_t>::max() / alignment) {
    return std::numeric_limits<int64_t>::max();
  }
  return quotient * alignment;
}

// Storage of two tensors overlaps: [a, a + a_size - 1] meets [b, b + b_size - 1].
inline bool StorageOverlaps(Offset a, Size a_size, Offset b, Size b_size) {
  return a_size > 0 && b_size > 0 && a < SaturatingAdd(b, b_size) && b < SaturatingAdd(a, a_size);
}

}  // namespace cadence_memplan
