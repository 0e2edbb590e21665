// The portfolio's visit orders: the orders in which PlanBest's first step
// (best.h) runs both placers. Each is a permutation of the request's tensors,
// built by a stable key; ties go by size, largest first, then by index, so an
// order depends only on the tensors. Lifetimes are inclusive [start, end];
// a tensor with an empty lifetime is alive with nothing. portfolio.cc also
// holds the step that runs both placers on them (BestSearch::Portfolio and
// RunMembers, best_search.h), which the growth of memory 1 reuses.
#pragma once

#include <string>
#include <vector>

#include "core/common/interrupt.h"
#include "core/common/types.h"

namespace cadence_memplan {
namespace detail {

// A visit order and its name in words (for BestResult::order).
struct NamedOrder {
  std::string name;
  std::vector<TensorIndex> order;
};

// The orders, in this fixed order: by size (upstream's, first), lifetime
// length, area (size x length), the bytes of the tensors alive with each one,
// their number, and start time (earliest first). Polls `interrupt` in phase
// kOrder.
std::vector<NamedOrder> PortfolioOrders(const std::vector<Tensor>& tensors,
                                        const Interrupt& interrupt = Interrupt());

}  // namespace detail
}  // namespace cadence_memplan
