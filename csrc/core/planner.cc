#include "planner.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <utility>

#include "interval_index.h"
#include "str_cat.h"

namespace cadence_memplan {
namespace {

std::string Describe(const Lifetime& lifetime) {
  return StrCat("[", lifetime.start, ", ", lifetime.end, "]");
}

// Checks the fields shared by tensors to place and already-placed tensors.
std::string CheckTensor(const Tensor& tensor) {
  if (tensor.size < 0) return StrCat("size ", tensor.size, " is negative");
  if (tensor.size > kMaxByteValue) {
    return StrCat("size ", tensor.size, " exceeds the supported maximum 2^62");
  }
  if (tensor.lifetime.start < 0 || tensor.lifetime.end < 0) {
    return StrCat("lifetime ", Describe(tensor.lifetime), " has a negative node index");
  }
  return "";
}

std::string CheckPlaced(const PlacedTensor& placed, const std::vector<Memory>& memories) {
  const MemId mem_id = placed.placement.mem_id;
  const Offset offset = placed.placement.offset;
  if (std::string problem = CheckTensor(placed.tensor); !problem.empty()) return problem;
  if (mem_id < 1 || mem_id > static_cast<MemId>(memories.size())) {
    return StrCat("mem_id ", mem_id, " is not a memory id (1..", memories.size(), ")");
  }
  if (offset < 0 || offset > kMaxByteValue) {
    return StrCat("offset ", offset, " is outside [0, 2^62]");
  }
  // Both terms may be 2^62, whose sum overflows int64_t but not uint64_t.
  const uint64_t end = static_cast<uint64_t>(offset) + static_cast<uint64_t>(placed.tensor.size);
  if (end > static_cast<uint64_t>(memories[mem_id - 1].size)) {
    return StrCat("storage [", offset, ", ", end, ") lies outside memory ",
                  mem_id, " of ", memories[mem_id - 1].size, " bytes");
  }
  return "";
}

}  // namespace

std::string CheckRequest(const PlanRequest& request) {
  const auto memory_count = static_cast<int64_t>(request.memories.size());
  const auto tensor_count = static_cast<int64_t>(request.tensors.size());
  if (memory_count < 1 || memory_count > kMaxMemories) {
    return StrCat("the number of memories must be in 1..", kMaxMemories, ", got ", memory_count);
  }
  for (int64_t m = 0; m < memory_count; ++m) {
    const Memory& memory = request.memories[m];
    if (memory.size < 1 || memory.size > kMaxByteValue) {
      return StrCat("memory ", m + 1, ": size ", memory.size, " is outside [1, 2^62]");
    }
    if (memory.alignment < 1 || memory.alignment > kMaxByteValue) {
      return StrCat("memory ", m + 1, ": alignment ", memory.alignment, " is outside [1, 2^62]");
    }
  }
  for (int64_t i = 0; i < tensor_count; ++i) {
    if (std::string problem = CheckTensor(request.tensors[i]); !problem.empty()) {
      return StrCat("tensor ", i, ": ", problem);
    }
  }
  if (!request.blocked.empty()) {
    if (static_cast<int64_t>(request.blocked.size()) != tensor_count) {
      return StrCat("blocked has ", request.blocked.size(), " entries for ", tensor_count,
                    " tensors");
    }
    // Bits 1..N: the memory ids that exist (memory_count <= 63 leaves bit 0 free).
    const MemoryMask existing = (~MemoryMask{0} >> (63 - memory_count)) & ~MaskOf(0);
    for (int64_t i = 0; i < tensor_count; ++i) {
      if ((request.blocked[i] & ~existing) != 0) {
        return StrCat("tensor ", i, ": its blocklist names a memory id that does not exist (1..",
                      memory_count, ")");
      }
    }
  }
  if (!request.incoming_offsets.empty()) {
    if (static_cast<int64_t>(request.incoming_offsets.size()) != tensor_count) {
      return StrCat("incoming_offsets has ", request.incoming_offsets.size(), " entries for ",
                    tensor_count, " tensors");
    }
    for (int64_t i = 0; i < tensor_count; ++i) {
      const Offset offset = request.incoming_offsets[i];
      if (offset != kNoOffset && (offset < 0 || offset > kMaxByteValue)) {
        return StrCat("tensor ", i, ": incoming offset ", offset, " is outside [0, 2^62]");
      }
    }
  }
  for (size_t j = 0; j < request.placed.size(); ++j) {
    if (std::string problem = CheckPlaced(request.placed[j], request.memories); !problem.empty()) {
      return StrCat("placed tensor ", j, ": ", problem);
    }
  }
  return "";
}

namespace {

// Slots of the interval index: already-placed tensor j is slot j, tensor i to
// place is slot placed.size() + i (the same numbering as ListEntry).
class Planner {
 public:
  Planner(const PlanRequest& request, Algorithm algorithm)
      : request_(request),
        algorithm_(algorithm),
        placed_count_(static_cast<Slot>(request.placed.size())),
        memory_count_(static_cast<MemId>(request.memories.size())),
        layout_(AllLifetimes(request)),
        indexes_(memory_count_ + 1, IntervalIndex(layout_)),
        members_(memory_count_ + 1),
        sorted_by_offset_(memory_count_ + 1, false),
        slot_offset_(layout_.size(), kNoOffset),
        slot_size_(layout_.size(), 0),
        slot_sequence_(layout_.size(), 0),
        attempts_(memory_count_ + 1) {
    result_.placements.resize(request.tensors.size());
    result_.bufsizes.assign(memory_count_ + 1, 0);
    for (Slot j = 0; j < placed_count_; ++j) slot_size_[j] = request.placed[j].tensor.size;
    for (size_t i = 0; i < request.tensors.size(); ++i) {
      slot_size_[placed_count_ + static_cast<Slot>(i)] = request.tensors[i].size;
    }
    for (Slot j = 0; j < placed_count_; ++j) {
      const Placement& placement = request.placed[j].placement;
      AddToMemory(j, placement.mem_id, placement.offset);
    }
  }

  PlanResult Run() {
    PollInterrupted();  // Building the index sorts every lifetime: poll after it.
    std::vector<TensorIndex> order(request_.tensors.size());
    std::iota(order.begin(), order.end(), TensorIndex{0});
    std::stable_sort(order.begin(), order.end(), [&](TensorIndex a, TensorIndex b) {
      return request_.tensors[a].size > request_.tensors[b].size;
    });
    PollInterrupted();
    int64_t until_interrupt_check = kInterruptCheckInterval;
    for (TensorIndex i : order) {
      if (--until_interrupt_check == 0) {
        until_interrupt_check = kInterruptCheckInterval;
        PollInterrupted();
      }
      const Placement placement = algorithm_ == Algorithm::kPositionBasedGreedy
                                      ? PlacePositionBased(i)
                                      : PlaceByHeuristic(i);
      result_.placements[i] = placement;
      AddToMemory(placed_count_ + i, placement.mem_id, placement.offset);
      if (algorithm_ == Algorithm::kGreedyByHeuristic) sorted_by_offset_[placement.mem_id] = true;
    }
    result_.memory_order.resize(memory_count_ + 1);
    for (MemId m = 1; m <= memory_count_; ++m) {
      std::vector<Slot>& list = members_[m];
      // Upstream re-sorts after every placement; one stable sort of the
      // appended list gives the same order, since appends come last among ties.
      if (sorted_by_offset_[m]) {
        std::stable_sort(list.begin(), list.end(),
                         [&](Slot a, Slot b) { return slot_offset_[a] < slot_offset_[b]; });
      }
      result_.memory_order[m] = std::move(list);
    }
    return std::move(result_);
  }

 private:
  static std::vector<Lifetime> AllLifetimes(const PlanRequest& request) {
    std::vector<Lifetime> lifetimes;
    lifetimes.reserve(request.placed.size() + request.tensors.size());
    for (const PlacedTensor& placed : request.placed) lifetimes.push_back(placed.tensor.lifetime);
    for (const Tensor& tensor : request.tensors) lifetimes.push_back(tensor.lifetime);
    return lifetimes;
  }

  void PollInterrupted() const {
    if (request_.interrupted && request_.interrupted()) throw Interrupted();
  }

  void AddToMemory(Slot slot, MemId mem_id, Offset offset) {
    slot_offset_[slot] = offset;
    slot_sequence_[slot] = next_sequence_++;
    members_[mem_id].push_back(slot);
    indexes_[mem_id].Insert(slot);
    Size& bufsize = result_.bufsizes[mem_id];
    bufsize = std::max(bufsize, AlignUp(SaturatingAdd(offset, slot_size_[slot]),
                                        request_.memories[mem_id - 1].alignment));
  }

  bool Fits(MemId mem_id, Offset offset, Size size) const {
    const Memory& memory = request_.memories[mem_id - 1];
    return AlignUp(SaturatingAdd(offset, size), memory.alignment) <= memory.size;
  }

  bool Blocked(TensorIndex i, MemId mem_id) const {
    return !request_.blocked.empty() && (request_.blocked[i] & MaskOf(mem_id)) != 0;
  }

  bool Allowed(MemId mem_id) const { return (request_.allowed & MaskOf(mem_id)) != 0; }

  // First fit: the lowest aligned offset whose storage is free while the
  // tensor lives. Upstream restarts a scan after each conflict, jumping to the
  // aligned end of the conflicting tensor; every aligned offset it jumps over
  // conflicts with that tensor, so the lowest conflict-free aligned offset is
  // where it stops too. Here it comes from one sweep over the lifetime-
  // overlapping tensors by offset.
  Offset LowestFreeOffset(MemId mem_id, Slot slot) {
    const Size size = slot_size_[slot];
    if (size == 0) return 0;  // Zero bytes overlap nothing.
    const Size alignment = request_.memories[mem_id - 1].alignment;
    overlapping_.clear();
    indexes_[mem_id].FindOverlapping(layout_.lifetime(slot), &overlapping_);
    storage_.clear();
    for (Slot other : overlapping_) {
      if (slot_size_[other] > 0) {
        storage_.emplace_back(slot_offset_[other], SaturatingAdd(slot_offset_[other], slot_size_[other]));
      }
    }
    std::sort(storage_.begin(), storage_.end());
    Offset candidate = 0;
    for (const auto& [begin, end] : storage_) {
      if (begin >= SaturatingAdd(candidate, size)) break;  // Fits before it and all later ones.
      if (end > candidate) candidate = AlignUp(end, alignment);
    }
    return candidate;
  }

  Placement PlacePositionBased(TensorIndex i) {
    const Slot slot = placed_count_ + i;
    for (MemId m = 1; m <= memory_count_; ++m) {
      if (!Allowed(m)) {
        attempts_[m] = {Attempt::kNotAllowed, 0};
        continue;
      }
      if (Blocked(i, m)) {
        attempts_[m] = {Attempt::kBlocked, 0};
        continue;
      }
      const Offset offset = LowestFreeOffset(m, slot);
      if (Fits(m, offset, slot_size_[slot])) return {m, offset};
      attempts_[m] = {Attempt::kNoRoom, offset};
    }
    throw Failure(i);
  }

  Placement PlaceByHeuristic(TensorIndex i) {
    const Slot slot = placed_count_ + i;
    const Size size = slot_size_[slot];
    Offset carried = request_.keep_incoming_offset && !request_.incoming_offsets.empty()
                         ? request_.incoming_offsets[i]
                         : kNoOffset;
    for (MemId m = 1; m <= memory_count_; ++m) {
      if (Blocked(i, m)) {
        attempts_[m] = {Attempt::kBlocked, 0};
        continue;
      }
      if (!request_.keep_incoming_offset) carried = kNoOffset;
      if (!Allowed(m)) {
        // Upstream computes an offset here, finds the memory invalid and
        // drops it; only the dropped offset is observable.
        carried = kNoOffset;
        attempts_[m] = {Attempt::kNotAllowed, 0};
        continue;
      }
      const Size alignment = request_.memories[m - 1].alignment;
      overlapping_.clear();
      indexes_[m].FindOverlapping(layout_.lifetime(slot), &overlapping_);
      SortInListOrder(m, &overlapping_);
      Offset running_end = 0;
      Size smallest_gap = -1;  // -1: no gap found yet.
      for (Slot other : overlapping_) {
        const Size gap = slot_offset_[other] - running_end;
        if (gap >= size && (smallest_gap < 0 || gap < smallest_gap)) {
          smallest_gap = gap;
          carried = running_end;
        }
        running_end = std::max(
            running_end, AlignUp(SaturatingAdd(slot_offset_[other], slot_size_[other]), alignment));
      }
      if (carried == kNoOffset) carried = running_end;
      if (!Fits(m, carried, size)) {
        attempts_[m] = {Attempt::kNoRoom, carried};
        carried = kNoOffset;
        continue;
      }
      for (Slot other : overlapping_) {
        if (StorageOverlaps(carried, size, slot_offset_[other], slot_size_[other])) {
          throw Conflict(i, m, carried, other);
        }
      }
      return {m, carried};
    }
    throw Failure(i);
  }

  // Upstream scans `allocated_buffers[m]` in list order: insertion order until
  // the first placement in m, then (offset, insertion order).
  void SortInListOrder(MemId mem_id, std::vector<Slot>* slots) const {
    if (sorted_by_offset_[mem_id]) {
      std::sort(slots->begin(), slots->end(), [&](Slot a, Slot b) {
        return slot_offset_[a] != slot_offset_[b] ? slot_offset_[a] < slot_offset_[b]
                                                  : slot_sequence_[a] < slot_sequence_[b];
      });
    } else {
      std::sort(slots->begin(), slots->end(),
                [&](Slot a, Slot b) { return slot_sequence_[a] < slot_sequence_[b]; });
    }
  }

  std::string DescribeTensor(TensorIndex i) const {
    return StrCat("tensor ", i, " (size ", request_.tensors[i].size, " bytes, lifetime ",
                  Describe(request_.tensors[i].lifetime), ")");
  }

  PlanningFailure Failure(TensorIndex i) const {
    std::ostringstream out;
    out << "cannot place " << DescribeTensor(i) << " in any memory:";
    for (MemId m = 1; m <= memory_count_; ++m) {
      const Memory& memory = request_.memories[m - 1];
      out << "\n  memory " << m << " (" << memory.size << " bytes, alignment " << memory.alignment
          << "): ";
      switch (attempts_[m].kind) {
        case Attempt::kNotAllowed:
          out << "not allowed in this call";
          break;
        case Attempt::kBlocked:
          out << "blocked for this tensor";
          break;
        case Attempt::kNoRoom:
          out << "no room, the best offset " << attempts_[m].offset << " ends past its size";
          break;
      }
    }
    return PlanningFailure(i, out.str());
  }

  PlanningFailure Conflict(TensorIndex i, MemId mem_id, Offset offset, Slot other) const {
    std::ostringstream out;
    out << "placing " << DescribeTensor(i) << " at offset " << offset << " of memory " << mem_id
        << " would overlap ";
    if (other < placed_count_) {
      out << "placed tensor " << other;
    } else {
      out << "tensor " << other - placed_count_;
    }
    out << " at offset " << slot_offset_[other] << " (upstream's heuristic keeps an incoming "
        << "offset, or scans placed tensors in their given order, and then fails its assertion)";
    return PlanningFailure(i, out.str());
  }

  const PlanRequest& request_;
  const Algorithm algorithm_;
  const Slot placed_count_;
  const MemId memory_count_;
  SlotLayout layout_;
  std::vector<IntervalIndex> indexes_;       // By memory id.
  std::vector<std::vector<Slot>> members_;   // By memory id, in insertion order.
  std::vector<bool> sorted_by_offset_;       // By memory id.
  std::vector<Offset> slot_offset_;
  std::vector<Size> slot_size_;
  std::vector<int64_t> slot_sequence_;       // Insertion order into any memory.
  int64_t next_sequence_ = 0;
  PlanResult result_;
  // Why each memory was rejected for the tensor being placed, for the error.
  struct Attempt {
    enum Kind { kNotAllowed, kBlocked, kNoRoom } kind = kNoRoom;
    Offset offset = 0;
  };
  std::vector<Attempt> attempts_;
  // Scratch buffers reused across placements.
  std::vector<Slot> overlapping_;
  std::vector<std::pair<Offset, Offset>> storage_;
};

}  // namespace

PlanResult Plan(const PlanRequest& request, Algorithm algorithm) {
  if (std::string problem = CheckRequest(request); !problem.empty()) throw InvalidInput(problem);
  return Planner(request, algorithm).Run();
}

}  // namespace cadence_memplan
