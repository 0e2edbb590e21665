// The core's exceptions, shared by every component: what the binding layer
// maps to Python's (csrc/bindings/module.cc). A component throws them instead
// of returning partial results, so a caller never sees half a plan.
#pragma once

#include <stdexcept>
#include <string>

#include "core/common/types.h"

namespace cadence_memplan {

// The request breaks a precondition; nothing was planned.
class InvalidInput : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Planning was attempted and a tensor could not be placed.
class PlanningFailure : public std::runtime_error {
 public:
  PlanningFailure(TensorIndex tensor, const std::string& message)
      : std::runtime_error(message), tensor_(tensor) {}
  TensorIndex tensor() const { return tensor_; }

 private:
  TensorIndex tensor_;
};

// An interrupt check (PlanRequest::interrupted and its like) returned true;
// nothing was planned.
class Interrupted : public std::runtime_error {
 public:
  Interrupted() : std::runtime_error("planning was interrupted") {}
};

}  // namespace cadence_memplan
