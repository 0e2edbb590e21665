#include "core/common/interrupt.h"

#include <utility>

namespace cadence_memplan {

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kCheck: return "check";
    case Phase::kIndex: return "index";
    case Phase::kOrder: return "order";
    case Phase::kPlace: return "place";
    case Phase::kResult: return "result";
    case Phase::kValidate: return "validate";
    case Phase::kSearch: return "search";
    case Phase::kImprove: return "improve";
    case Phase::kSchedule: return "schedule";
  }
  return "unknown";
}

Interrupt::Interrupt(PollFunction poll) {
  if (!poll) return;
  shared_ = std::make_shared<Shared>();
  shared_->poll = std::move(poll);
  shared_->owner = std::this_thread::get_id();
}

void Interrupt::Ask(const Phase* phase) const {
  Shared& shared = *shared_;
  if (shared.stopped.load(std::memory_order_relaxed)) throw Interrupted();
  if (std::this_thread::get_id() != shared.owner) return;
  if (phase != nullptr) shared.phase = *phase;
  const int64_t poll = ++shared.polls[static_cast<size_t>(shared.phase)];
  if (shared.poll(shared.phase, poll)) {
    shared.stopped = true;
    throw Interrupted();
  }
}

bool Interrupt::Stopping() const {
  if (!shared_) return false;
  try {
    Ask(nullptr);
  } catch (const Interrupted&) {
    return true;
  }
  return false;
}

}  // namespace cadence_memplan
