#include "core/placement/planner.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <sstream>
#include <utility>

#include "core/common/peak_live.h"
#include "core/common/stable_sort.h"
#include "core/common/str_cat.h"
#include "core/placement/occupancy.h"

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
  // Saturated, the end is still past every memory (at most 2^62 bytes).
  const Offset end = SaturatingAdd(offset, placed.tensor.size);
  if (end > memories[mem_id - 1].size) {
    return StrCat("storage [", offset, ", ", end, ") lies outside memory ", mem_id, " of ",
                  memories[mem_id - 1].size, " bytes");
  }
  return "";
}

}  // namespace

std::string CheckRequest(const PlanRequest& request) {
  request.interrupt.Begin(Phase::kCheck);
  PollEvery poll(request.interrupt, kItemsPerPoll);
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
    poll.Tick();
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
      poll.Tick();
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
      poll.Tick();
    }
  }
  for (size_t j = 0; j < request.placed.size(); ++j) {
    if (std::string problem = CheckPlaced(request.placed[j], request.memories); !problem.empty()) {
      return StrCat("placed tensor ", j, ": ", problem);
    }
    poll.Tick();
  }
  return "";
}

namespace {

// Slots as types.h numbers them: already-placed tensor j is slot j, tensor i
// to place is slot placed.size() + i.
class Planner {
 public:
  Planner(const PlanRequest& request, Algorithm algorithm)
      : request_(request),
        algorithm_(algorithm),
        placed_count_(static_cast<Slot>(request.placed.size())),
        memory_count_(static_cast<MemId>(request.memories.size())),
        table_(AllLifetimes(request)),
        members_(memory_count_ + 1),
        sorted_by_offset_(memory_count_ + 1, false),
        holds_zero_size_(memory_count_ + 1, false),
        attempts_(memory_count_ + 1) {
    request.interrupt.Begin(Phase::kIndex);
    result_.placements.resize(request.tensors.size());
    result_.bufsizes.assign(memory_count_ + 1, 0);
    result_.call_bufsizes.assign(memory_count_ + 1, 0);
    result_.occupancy = request.occupancy == Occupancy::kAuto
                            ? ChooseOccupancy(table_.lifetimes, request.interrupt)
                            : request.occupancy;
    if (result_.occupancy != Occupancy::kScan) {
      table_.layout.emplace(table_.lifetimes, request.interrupt);
    }
    occupancy_.resize(memory_count_ + 1);
    for (MemId m = 1; m <= memory_count_; ++m) {
      occupancy_[m] = MakeOccupancy(result_.occupancy, table_, request.memories[m - 1].alignment);
    }
    for (Slot j = 0; j < placed_count_; ++j) table_.slots[j].size = request.placed[j].tensor.size;
    for (size_t i = 0; i < request.tensors.size(); ++i) {
      table_.slots[placed_count_ + static_cast<Slot>(i)].size = request.tensors[i].size;
    }
    PollEvery poll(request.interrupt, kPlacementsPerPoll);
    for (Slot j = 0; j < placed_count_; ++j) {
      const Placement& placement = request.placed[j].placement;
      AddToMemory(j, placement.mem_id, placement.offset);
      poll.Tick();
    }
  }

  // Places the tensors in `order`, a permutation of the tensor indexes.
  PlanResult Run(const std::vector<TensorIndex>& order) {
    request_.interrupt.Begin(Phase::kPlace);
    PollEvery poll(request_.interrupt, kPlacementsPerPoll);
    for (size_t k = 0; k < order.size(); ++k) {
      const TensorIndex i = order[k];
      Prefetch(order, k);
      poll.Tick();
      const Placement placement = algorithm_ == Algorithm::kPositionBasedGreedy
                                      ? PlacePositionBased(i)
                                      : PlaceByHeuristic(i);
      result_.placements[i] = placement;
      AddToMemory(placed_count_ + i, placement.mem_id, placement.offset);
      if (algorithm_ == Algorithm::kGreedyByHeuristic) sorted_by_offset_[placement.mem_id] = true;
    }
    request_.interrupt.Begin(Phase::kResult);
    result_.memory_order.resize(memory_count_ + 1);
    for (MemId m = 1; m <= memory_count_; ++m) {
      std::vector<Slot>& list = members_[m];
      // Upstream re-sorts after every placement; one stable sort of the
      // appended list gives the same order, since appends come last among ties.
      if (sorted_by_offset_[m]) SortStablyByOffset(&list);
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

  // Placed offsets are never negative, so they sort as unsigned keys.
  void SortStablyByOffset(std::vector<Slot>* list) const {
    std::vector<Keyed<Slot>> by_offset(list->size());
    for (size_t k = 0; k < by_offset.size(); ++k) {
      const Slot slot = (*list)[k];
      by_offset[k] = {static_cast<uint64_t>(table_.slots[slot].offset), slot};
    }
    SortStablyByKey(&by_offset, request_.interrupt);
    for (size_t k = 0; k < by_offset.size(); ++k) (*list)[k] = by_offset[k].value;
  }

  // Asks the cache for what the next visits will read (prefetch.h), in
  // stages, so that each stage's addresses are in cache when it reads them.
  void Prefetch(const std::vector<TensorIndex>& order, size_t k) const {
    if (!table_.layout) return;
    if (k + 3 < order.size()) {
      const Slot slot = placed_count_ + order[k + 3];
      table_.layout->PrefetchPositions(slot);
      PrefetchLine(&table_.slots[slot]);
      PrefetchLine(&table_.lifetimes[slot]);
      PrefetchLineForWrite(&result_.placements[order[k + 3]]);
    }
    if (k + 2 < order.size()) {
      const Slot slot = placed_count_ + order[k + 2];
      for (MemId m = 1; m <= memory_count_; ++m) occupancy_[m]->PrefetchLocation(slot);
    }
    if (k + 1 < order.size()) {
      const Slot slot = placed_count_ + order[k + 1];
      for (MemId m = 1; m <= memory_count_; ++m) occupancy_[m]->PrefetchData(slot);
    }
  }

  void AddToMemory(Slot slot, MemId mem_id, Offset offset) {
    table_.slots[slot].offset = offset;
    table_.slots[slot].sequence = next_sequence_++;
    members_[mem_id].push_back(slot);
    occupancy_[mem_id]->Insert(slot);
    if (table_.slots[slot].size == 0) holds_zero_size_[mem_id] = true;
    const Size end = AlignUp(SaturatingAdd(offset, table_.slots[slot].size),
                             request_.memories[mem_id - 1].alignment);
    result_.bufsizes[mem_id] = std::max(result_.bufsizes[mem_id], end);
    if (slot >= placed_count_) {
      result_.call_bufsizes[mem_id] = std::max(result_.call_bufsizes[mem_id], end);
    }
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
  // conflicts with that tensor, so the lowest conflict-free aligned offset
  // (MemoryOccupancy::LowestFreeOffset) is where it stops too.
  Placement PlacePositionBased(TensorIndex i) {
    const Slot slot = placed_count_ + i;
    const Size size = table_.slots[slot].size;
    for (MemId m = 1; m <= memory_count_; ++m) {
      if (!Allowed(m)) {
        attempts_[m] = {Attempt::kNotAllowed};
        continue;
      }
      if (Blocked(i, m)) {
        attempts_[m] = {Attempt::kBlocked};
        continue;
      }
      if (!Fits(m, 0, size)) {  // Larger than the memory: no offset can fit.
        attempts_[m] = {Attempt::kNoRoom};
        continue;
      }
      // Zero bytes overlap nothing.
      const Offset offset = size == 0 ? 0 : occupancy_[m]->LowestFreeOffset(slot);
      if (Fits(m, offset, size)) return {m, offset};
      attempts_[m] = {Attempt::kNoRoom, offset};
    }
    throw Failure(i);
  }

  // Upstream's offset for the heuristic in memory m, given the offset carried
  // into it, and whether that offset may meet a tensor alive with this one.
  // Fills overlapping_ with the listed tensors when it scans them.
  struct HeuristicOffset {
    Offset offset;
    bool scanned_listed;
    bool may_collide;
  };
  HeuristicOffset ChooseHeuristicOffset(MemId m, Slot slot, Offset carried) {
    const Size size = table_.slots[slot].size;
    // The memory's occupancy answers with holes only where holes alone
    // decide (occupancy.h); elsewhere scan the tensors themselves, in
    // upstream's list order.
    if (size == 0 || holds_zero_size_[m] || (!sorted_by_offset_[m] && !members_[m].empty())) {
      ListOverlappingInListOrder(m, slot);
      return {ScanListed(m, size, carried), true, true};
    }
    const SmallestHole hole = occupancy_[m]->FindSmallestHole(slot);
    if (hole.begin != kNoOffset) return {hole.begin, false, false};
    // Only a kept incoming offset can meet a tensor alive with this one.
    if (carried != kNoOffset) return {carried, false, true};
    return {hole.top, false, false};
  }

  Placement PlaceByHeuristic(TensorIndex i) {
    const Slot slot = placed_count_ + i;
    const Size size = table_.slots[slot].size;
    Offset carried = request_.keep_incoming_offset && !request_.incoming_offsets.empty()
                         ? request_.incoming_offsets[i]
                         : kNoOffset;
    for (MemId m = 1; m <= memory_count_; ++m) {
      if (Blocked(i, m)) {
        attempts_[m] = {Attempt::kBlocked};
        continue;
      }
      if (!request_.keep_incoming_offset) carried = kNoOffset;
      if (!Allowed(m)) {
        // Upstream computes an offset here, finds the memory invalid and
        // drops it; only the dropped offset is observable.
        carried = kNoOffset;
        attempts_[m] = {Attempt::kNotAllowed};
        continue;
      }
      if (!Fits(m, 0, size)) {  // Larger than the memory: no offset can fit.
        attempts_[m] = {Attempt::kNoRoom, kNoOffset, carried};
        carried = kNoOffset;
        continue;
      }
      const HeuristicOffset choice = ChooseHeuristicOffset(m, slot, carried);
      carried = choice.offset;
      if (!Fits(m, carried, size)) {
        attempts_[m] = {Attempt::kNoRoom, carried};
        carried = kNoOffset;
        continue;
      }
      if (choice.may_collide &&
          (choice.scanned_listed || occupancy_[m]->MayCollide(slot, carried))) {
        if (!choice.scanned_listed) ListOverlappingInListOrder(m, slot);
        for (Slot other : overlapping_) {
          if (StorageOverlaps(carried, size, table_.slots[other].offset,
                              table_.slots[other].size)) {
            throw Conflict(i, m, carried, other);
          }
        }
      }
      return {m, carried};
    }
    throw Failure(i);
  }

  // Upstream's gap scan over overlapping_ in list order: the smallest gap
  // that holds `size` (the first among equals), else `carried` if set, else
  // the largest aligned end.
  Offset ScanListed(MemId mem_id, Size size, Offset carried) const {
    const Size alignment = request_.memories[mem_id - 1].alignment;
    Offset running_end = 0;
    Size smallest_gap = -1;  // -1: no gap found yet.
    for (Slot other : overlapping_) {
      const Size gap = table_.slots[other].offset - running_end;
      if (gap >= size && (smallest_gap < 0 || gap < smallest_gap)) {
        smallest_gap = gap;
        carried = running_end;
      }
      running_end = std::max(
          running_end,
          AlignUp(SaturatingAdd(table_.slots[other].offset, table_.slots[other].size), alignment));
    }
    return carried == kNoOffset ? running_end : carried;
  }

  // Fills overlapping_ with the tensors of the memory alive with `slot`, in
  // upstream's list order: insertion order until the first placement in the
  // memory, then (offset, insertion order).
  void ListOverlappingInListOrder(MemId mem_id, Slot slot) {
    overlapping_.clear();
    occupancy_[mem_id]->FindOverlapping(slot, &overlapping_);
    if (sorted_by_offset_[mem_id]) {
      std::sort(overlapping_.begin(), overlapping_.end(), [&](Slot a, Slot b) {
        return table_.slots[a].offset != table_.slots[b].offset
                   ? table_.slots[a].offset < table_.slots[b].offset
                   : table_.slots[a].sequence < table_.slots[b].sequence;
      });
    } else {
      std::sort(overlapping_.begin(), overlapping_.end(), [&](Slot a, Slot b) {
        return table_.slots[a].sequence < table_.slots[b].sequence;
      });
    }
  }

  std::string DescribeTensor(TensorIndex i) const {
    return StrCat("tensor ", i, " (size ", request_.tensors[i].size, " bytes, lifetime ",
                  Describe(request_.tensors[i].lifetime), ")");
  }

  PlanningFailure Failure(TensorIndex i) {
    std::ostringstream out;
    out << "cannot place " << DescribeTensor(i) << " in any memory:";
    for (MemId m = 1; m <= memory_count_; ++m) {
      const Memory& memory = request_.memories[m - 1];
      out << "\n  memory " << m << " (" << memory.size << " bytes, alignment " << memory.alignment
          << "): ";
      switch (attempts_[m].kind) {
        case Attempt::kNotAllowed: out << "not allowed in this call"; break;
        case Attempt::kBlocked: out << "blocked for this tensor"; break;
        case Attempt::kNoRoom:
          out << "no room, the best offset " << BestOffset(i, m) << " ends past its size";
          break;
      }
    }
    return PlanningFailure(i, out.str());
  }

  // The offset a placer found in memory m for the failing tensor i. A tensor
  // larger than the memory skipped the search, which runs here instead.
  Offset BestOffset(TensorIndex i, MemId m) {
    if (attempts_[m].offset != kNoOffset) return attempts_[m].offset;
    const Slot slot = placed_count_ + i;
    if (algorithm_ == Algorithm::kPositionBasedGreedy) return occupancy_[m]->LowestFreeOffset(slot);
    return ChooseHeuristicOffset(m, slot, attempts_[m].carried).offset;
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
    out << " at offset " << table_.slots[other].offset
        << " (upstream's heuristic keeps an incoming "
        << "offset, or scans placed tensors in their given order, and then fails its assertion)";
    return PlanningFailure(i, out.str());
  }

  const PlanRequest& request_;
  const Algorithm algorithm_;
  const Slot placed_count_;
  const MemId memory_count_;
  SlotTable table_;
  std::vector<std::unique_ptr<MemoryOccupancy>> occupancy_;  // By memory id.
  std::vector<std::vector<Slot>> members_;  // By memory id, in insertion order.
  std::vector<bool> sorted_by_offset_;      // By memory id.
  std::vector<bool> holds_zero_size_;       // By memory id.
  int64_t next_sequence_ = 0;
  PlanResult result_;
  // Why each memory was rejected for the tensor being placed, for the error.
  struct Attempt {
    enum Kind { kNotAllowed, kBlocked, kNoRoom } kind = kNoRoom;
    Offset offset = kNoOffset;   // kNoRoom: the offset found, kNoOffset if not searched.
    Offset carried = kNoOffset;  // The heuristic's offset carried into the memory.
  };
  std::vector<Attempt> attempts_;
  std::vector<Slot> overlapping_;  // Scratch, reused across placements.
};

}  // namespace

std::vector<TensorIndex> UpstreamOrder(const std::vector<Tensor>& tensors,
                                       const Interrupt& interrupt) {
  interrupt.Begin(Phase::kOrder);
  // Largest first, ties in input order: ascending by largest - size.
  Size largest = 0;
  for (const Tensor& tensor : tensors) largest = std::max(largest, tensor.size);
  std::vector<Keyed<TensorIndex>> by_size(tensors.size());
  for (size_t i = 0; i < by_size.size(); ++i) {
    by_size[i] = {static_cast<uint64_t>(largest - tensors[i].size), static_cast<TensorIndex>(i)};
  }
  SortStablyByKey(&by_size, interrupt);
  std::vector<TensorIndex> order(by_size.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = by_size[k].value;
  return order;
}

PlanResult Plan(const PlanRequest& request, Algorithm algorithm) {
  if (std::string problem = CheckRequest(request); !problem.empty()) throw InvalidInput(problem);
  Planner planner(request, algorithm);
  try {
    return planner.Run(UpstreamOrder(request.tensors, request.interrupt));
  } catch (const PlanningFailure& failure) {
    throw WithPeakLiveNote(request, failure);
  }
}

PlanningFailure WithPeakLiveNote(const PlanRequest& request, const PlanningFailure& failure) {
  // Saturating: the bytes alive may add up past 2^63. Once saturated the
  // bound is no longer exact, which the note then says.
  PeakLive live;
  for (const PlacedTensor& placed : request.placed)
    live.Add(placed.tensor.lifetime, placed.tensor.size);
  for (const Tensor& tensor : request.tensors) live.Add(tensor.lifetime, tensor.size);
  const Size bound = live.Peak();
  Size total = 0;
  for (const Memory& memory : request.memories) total = SaturatingAdd(total, memory.size);
  constexpr Size kSaturated = std::numeric_limits<Size>::max();
  const auto describe = [&](Size bytes) {
    return StrCat(bytes == kSaturated ? "at least " : "", FormatBytes(bytes), " (",
                  WithThousands(bytes), " bytes)");
  };
  return PlanningFailure(
      failure.tensor(),
      StrCat(failure.what(), "\n  peak-live lower bound: ", describe(bound),
             " must be alive at once, ", bound > total ? "more than" : "within", " the ",
             describe(total), " ",
             request.memories.size() == 1 ? "the one memory holds" : "the memories hold in all"));
}

PlanResult PlanInOrder(const PlanRequest& request, Algorithm algorithm,
                       const std::vector<TensorIndex>& order) {
  if (std::string problem = CheckRequest(request); !problem.empty()) throw InvalidInput(problem);
  std::vector<bool> seen(request.tensors.size(), false);
  bool permutation = order.size() == request.tensors.size();
  PollEvery poll(request.interrupt, kItemsPerPoll);
  for (size_t k = 0; permutation && k < order.size(); ++k) {
    const TensorIndex i = order[k];
    permutation = i >= 0 && i < static_cast<TensorIndex>(seen.size()) && !seen[i];
    if (permutation) seen[i] = true;
    poll.Tick();
  }
  if (!permutation) throw InvalidInput("the visit order is not a permutation of the tensors");
  Planner planner(request, algorithm);
  return planner.Run(order);
}

}  // namespace cadence_memplan
