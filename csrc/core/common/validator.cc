#include "core/common/validator.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>

#include "core/common/polled_sort.h"
#include "core/common/str_cat.h"

namespace cadence_memplan {
namespace {

std::string DescribeTensor(TensorIndex i, const Tensor& tensor, const Placement& placement) {
  std::ostringstream out;
  out << "tensor " << i << " (lifetime [" << tensor.lifetime.start << ", " << tensor.lifetime.end
      << "], bytes [" << placement.offset << ", " << SaturatingAdd(placement.offset, tensor.size)
      << ") of memory " << placement.mem_id << ")";
  return out.str();
}

std::string CheckBounds(TensorIndex i, const Tensor& tensor, const Placement& placement,
                        const std::vector<Memory>& memories) {
  const auto memory_count = static_cast<MemId>(memories.size());
  if (tensor.size < 0) return StrCat("tensor ", i, " has negative size ", tensor.size);
  if (placement.mem_id < 1 || placement.mem_id > memory_count) {
    return StrCat("tensor ", i, " has mem_id ", placement.mem_id, ", not a memory id (1..",
                  memory_count, ")");
  }
  if (placement.offset < 0) return StrCat("tensor ", i, " has negative offset ", placement.offset);
  const Memory& memory = memories[placement.mem_id - 1];
  if (memory.alignment < 1) {
    return StrCat("memory ", placement.mem_id, " has alignment ", memory.alignment);
  }
  if (placement.offset % memory.alignment != 0) {
    return StrCat(DescribeTensor(i, tensor, placement), " is not aligned to ", memory.alignment,
                  " bytes");
  }
  if (SaturatingAdd(placement.offset, tensor.size) > memory.size) {
    return StrCat(DescribeTensor(i, tensor, placement), " ends past the memory's ", memory.size,
                  " bytes");
  }
  return "";
}

}  // namespace

std::string Validate(const std::vector<Tensor>& tensors, const std::vector<Placement>& placements,
                     const std::vector<Memory>& memories, const Interrupt& interrupt) {
  interrupt.Begin(Phase::kValidate);
  PollEvery poll(interrupt, kItemsPerPoll);
  if (tensors.size() != placements.size()) {
    std::ostringstream out;
    out << tensors.size() << " tensors but " << placements.size() << " placements";
    return out.str();
  }
  const auto count = static_cast<TensorIndex>(tensors.size());
  for (TensorIndex i = 0; i < count; ++i) {
    if (std::string problem = CheckBounds(i, tensors[i], placements[i], memories);
        !problem.empty()) {
      return problem;
    }
    poll.Tick();
  }

  // Events: a tensor arrives at its start and leaves after its end. At equal
  // times arrivals come first, because lifetimes are inclusive.
  struct Event {
    Time time;
    bool leaves;
    TensorIndex tensor;
  };
  std::vector<Event> events;
  for (TensorIndex i = 0; i < count; ++i) {
    if (tensors[i].size == 0 || tensors[i].lifetime.empty()) continue;  // Overlaps nothing.
    events.push_back({tensors[i].lifetime.start, false, i});
    events.push_back({tensors[i].lifetime.end, true, i});
  }
  SortPolled(
      events.begin(), events.end(),
      [](const Event& a, const Event& b) {
        if (a.time != b.time) return a.time < b.time;
        if (a.leaves != b.leaves) return !a.leaves;
        return a.tensor < b.tensor;
      },
      interrupt);

  // Live tensors of each memory by (offset, index). Live storage never
  // overlaps (else we would have returned), so ends are ordered like offsets
  // and the neighbours of a new tensor are the only candidates for a clash.
  std::vector<std::set<std::pair<Offset, TensorIndex>>> live(memories.size() + 1);
  for (const Event& event : events) {
    poll.Tick();
    const Placement& placement = placements[event.tensor];
    auto& memory_live = live[placement.mem_id];
    const std::pair<Offset, TensorIndex> key{placement.offset, event.tensor};
    if (event.leaves) {
      memory_live.erase(key);
      continue;
    }
    const auto position = memory_live.insert(key).first;
    auto clash = [&](TensorIndex other) -> std::string {
      std::ostringstream out;
      out << DescribeTensor(std::min(event.tensor, other), tensors[std::min(event.tensor, other)],
                            placements[std::min(event.tensor, other)])
          << " and "
          << DescribeTensor(std::max(event.tensor, other), tensors[std::max(event.tensor, other)],
                            placements[std::max(event.tensor, other)])
          << " are alive at the same time and share bytes";
      return out.str();
    };
    if (position != memory_live.begin()) {
      const TensorIndex previous = std::prev(position)->second;
      if (StorageOverlaps(placements[previous].offset, tensors[previous].size, placement.offset,
                          tensors[event.tensor].size)) {
        return clash(previous);
      }
    }
    if (const auto next = std::next(position); next != memory_live.end()) {
      if (StorageOverlaps(placements[next->second].offset, tensors[next->second].size,
                          placement.offset, tensors[event.tensor].size)) {
        return clash(next->second);
      }
    }
  }
  return "";
}

}  // namespace cadence_memplan
