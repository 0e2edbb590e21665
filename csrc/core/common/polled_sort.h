// SortPolled, StableSortPolled: std::sort and std::stable_sort that poll an
// Interrupt (interrupt.h) every kComparisonsPerPoll comparisons, for the
// sorts of every tensor or lifetime of a request: on millions of them one
// sort takes longer than a caller waits for Ctrl-C to act. A poll that stops
// throws Interrupted out of the sort, which leaves the range in some order;
// the call that sorted is abandoned with it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/common/interrupt.h"

namespace cadence_memplan {

namespace detail {

// `less`, polling every kComparisonsPerPoll calls.
template <typename Less>
class PolledLess {
 public:
  PolledLess(Less less, const Interrupt& interrupt, int64_t* left)
      : less_(less), interrupt_(&interrupt), left_(left) {}
  template <typename T>
  bool operator()(const T& a, const T& b) const {
    if (--*left_ <= 0) {
      *left_ = kComparisonsPerPoll;
      interrupt_->Poll();
    }
    return less_(a, b);
  }

 private:
  Less less_;
  const Interrupt* interrupt_;
  int64_t* left_;
};

}  // namespace detail

template <typename Iterator, typename Less>
void SortPolled(Iterator first, Iterator last, Less less, const Interrupt& interrupt) {
  if (!interrupt.active()) {
    std::sort(first, last, less);
    return;
  }
  int64_t left = kComparisonsPerPoll;
  std::sort(first, last, detail::PolledLess<Less>(less, interrupt, &left));
}

template <typename Iterator, typename Less>
void StableSortPolled(Iterator first, Iterator last, Less less, const Interrupt& interrupt) {
  if (!interrupt.active()) {
    std::stable_sort(first, last, less);
    return;
  }
  int64_t left = kComparisonsPerPoll;
  std::stable_sort(first, last, detail::PolledLess<Less>(less, interrupt, &left));
}

}  // namespace cadence_memplan
