// The smallest bufsize of one memory by brute force, sharing no code and no
// theory with the exact search (exact_search.h): every offset that is a
// multiple of the alignment, for every tensor in input order, keeping the
// packings whose aligned ends stay within the capacity and whose tensors meet
// no other tensor alive with them, nor an obstacle (already-placed tensors at
// any offset). The bufsize counts the obstacles' aligned ends, as
// PlanResult::bufsizes does. For tiny problems only: the work is about
// (bufsize / alignment) ^ tensors, and a cap on it gives up instead.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/common/types.h"

namespace cadence_memplan::reference {

class BruteForcePacking {
 public:
  BruteForcePacking(std::vector<Tensor> tensors, std::vector<std::pair<Tensor, Offset>> obstacles,
                    Size alignment, Size capacity)
      : tensors_(std::move(tensors)),
        obstacles_(std::move(obstacles)),
        alignment_(alignment),
        capacity_(capacity) {}

  // The smallest bufsize (-1: nothing fits), or nullopt when `max_steps`
  // offsets were tried first.
  std::optional<Size> Optimum(int64_t max_steps) {
    steps_left_ = max_steps;
    offsets_.assign(tensors_.size(), 0);
    best_ = -1;
    Size floor = 0;
    for (const auto& [o, offset] : obstacles_) floor = std::max(floor, End(offset, o.size));
    Place(0, floor);
    if (steps_left_ < 0) return std::nullopt;
    return best_;
  }

  static bool Meet(const Tensor& a, Offset x, const Tensor& b, Offset y) {
    return a.size > 0 && b.size > 0 && a.lifetime.Overlaps(b.lifetime) &&
           x < SaturatingAdd(y, b.size) && y < SaturatingAdd(x, a.size);
  }

 private:
  Size End(Offset x, Size size) const { return AlignUp(SaturatingAdd(x, size), alignment_); }

  void Place(size_t i, Size bufsize) {
    if (steps_left_ < 0 || (best_ >= 0 && bufsize >= best_)) return;
    if (i == tensors_.size()) {
      best_ = bufsize;
      return;
    }
    const Tensor& t = tensors_[i];
    for (Offset x = 0; End(x, t.size) <= capacity_; x = SaturatingAdd(x, alignment_)) {
      if (--steps_left_ < 0) return;
      bool free = true;
      for (size_t j = 0; j < i && free; ++j) free = !Meet(t, x, tensors_[j], offsets_[j]);
      for (const auto& [o, offset] : obstacles_) free = free && !Meet(t, x, o, offset);
      if (!free) continue;
      offsets_[i] = x;
      Place(i + 1, std::max(bufsize, End(x, t.size)));
    }
  }

  const std::vector<Tensor> tensors_;
  const std::vector<std::pair<Tensor, Offset>> obstacles_;
  const Size alignment_;
  const Size capacity_;
  std::vector<Offset> offsets_;
  Size best_ = -1;
  int64_t steps_left_ = 0;
};

}  // namespace cadence_memplan::reference
