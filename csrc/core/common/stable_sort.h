// SortStablyByKey: the stable sort the planner runs on every tensor.
//
// The placers visit tensors largest first with ties in input order, and hand
// each memory's tensors back by offset with ties in placement order: two
// stable sorts of up to millions of items. An LSD radix sort is stable by
// construction and, over only the bytes in which some keys differ (three
// for sizes or offsets below 16 MiB), several times faster than a comparison
// sort there. It polls `interrupt` every kItemsPerPoll items it moves.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/common/interrupt.h"

namespace cadence_memplan {

template <typename Value>
struct Keyed {
  uint64_t key;
  Value value;
};

// Sorts `items` by key, ascending, equal keys in the order they come.
template <typename Value>
void SortStablyByKey(std::vector<Keyed<Value>>* items, const Interrupt& interrupt = Interrupt()) {
  if (items->empty()) return;
  uint64_t differing = 0;  // The bits in which some key differs from the first.
  for (const Keyed<Value>& item : *items) differing |= item.key ^ items->front().key;
  if (differing == 0) return;
  std::vector<Keyed<Value>> scratch(items->size());
  for (int shift = 0; shift < 64; shift += 8) {
    if (((differing >> shift) & 0xff) == 0) continue;  // Every key has the same byte here.
    std::array<size_t, 257> starts{};
    for (const Keyed<Value>& item : *items) ++starts[((item.key >> shift) & 0xff) + 1];
    for (size_t digit = 1; digit < starts.size(); ++digit) starts[digit] += starts[digit - 1];
    PollEvery poll(interrupt, kItemsPerPoll);
    for (const Keyed<Value>& item : *items) {
      scratch[starts[(item.key >> shift) & 0xff]++] = item;
      poll.Tick();
    }
    items->swap(scratch);
  }
}

}  // namespace cadence_memplan
