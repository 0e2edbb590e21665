// Searches whose steps are conditional moves rather than branches.
//
// The planners search sorted arrays at points that fall among the elements
// like coin tosses (a random tensor's start among all starts, a segment among
// a list's), so a branching binary search mispredicts at about every other
// step, which costs more than the step itself.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace cadence_memplan {

// The length of the prefix of [first, first + count) whose elements satisfy
// below(element), where every element satisfying it comes before every one
// that does not: std::partition_point's answer, as a count.
template <typename T, typename Below>
size_t CountBelow(const T* first, size_t count, Below&& below) {
  if (count == 0) return 0;
  const T* base = first;
  while (count > 1) {
    const size_t half = count / 2;
    // A mask, not a ternary, which compilers may compile to a branch.
    base += half & (size_t{0} - static_cast<size_t>(below(base[half - 1])));
    count -= half;
  }
  return static_cast<size_t>(base - first) + (below(*base) ? 1 : 0);
}

// CountBelow for a caller that knows the first `known` elements satisfy
// below(element): steps of doubling length from there, then CountBelow
// within the last step, so an answer d elements past `known` costs
// O(log d). The steps branch, but there are few.
template <typename T, typename Below>
size_t CountBelowFrom(const T* first, size_t count, size_t known, Below&& below) {
  size_t step = 1;
  while (known + step <= count && below(first[known + step - 1])) {
    known += step;
    step *= 2;
  }
  // Unless past the end, first[known + step - 1] is not below.
  const size_t window = std::min(step - 1, count - known);
  return known + CountBelow(first + known, window, below);
}

}  // namespace cadence_memplan
