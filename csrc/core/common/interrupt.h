// Interrupt: how a long call of the core stops when its caller asks (Ctrl-C
// in Python), in every phase of the call.
//
// The caller gives a poll function. The core calls it when a phase of a call
// begins and then, within the phase, after each stretch of work: stretches
// are counted in work (placements, sort comparisons, search nodes), never in
// time. Polls are numbered 1, 2, ... per phase over the whole call (a phase
// entered again, as best's steps enter "place" once per plan, goes on
// counting), so the same input polls at the same points and a test can stop
// a call at the Nth poll of a phase. The
// poll function decides how often to really ask (the binding asks Python at
// most every few milliseconds, the GIL taken back for it) and returns true to
// stop. The core then throws Interrupted from where it is; every copy of the
// Interrupt (handed to the portfolio's members, the exact search's threads,
// the placers of best's steps) says stop from then on, so no step swallows it.
//
// Threads: only the thread that made the Interrupt calls the poll function
// (Python runs signal handlers on its main thread only) and counts the
// polls; on other threads Poll and Begin only check whether a stop was asked.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "core/common/errors.h"

namespace cadence_memplan {

// The phases of a call, in the order a plan goes through them.
enum class Phase : uint8_t {
  kCheck,     // The request's values checked.
  kIndex,     // The occupancy indexes built: every lifetime sorted.
  kOrder,     // Visit orders sorted.
  kPlace,     // Tensors placed, one after the other.
  kResult,    // Each memory's list sorted by offset, the plan assembled.
  kValidate,  // A plan checked by Validate.
  kSearch,    // The exact search.
  kImprove,   // best's improvements of a plan: squeaky wheel, memory 1 grown.
  kSchedule,  // The scheduler's search.
};
inline constexpr int kPhaseCount = 9;

// The phase's name in words ("check", "index", ...), as the binding's test
// hook names it.
const char* PhaseName(Phase phase);

// The caller's poll: the phase and the poll's number in it (from 1). True
// stops the call.
using PollFunction = std::function<bool(Phase phase, int64_t poll)>;

class Interrupt {
 public:
  Interrupt() = default;  // Never stops, and costs nothing to poll.
  explicit Interrupt(PollFunction poll);

  // Enters `phase` and polls. Throws Interrupted.
  void Begin(Phase phase) const {
    if (shared_) Ask(&phase);
  }
  // Polls within the current phase. Throws Interrupted.
  void Poll() const {
    if (shared_) Ask(nullptr);
  }
  // Poll without the throw: true once the call should stop.
  bool Stopping() const;
  // Whether a poll function was given (a plain Interrupt never stops).
  bool active() const { return shared_ != nullptr; }

 private:
  struct Shared {
    PollFunction poll;
    std::thread::id owner;
    std::atomic<bool> stopped{false};
    Phase phase = Phase::kCheck;
    std::array<int64_t, kPhaseCount> polls{};  // Per phase, over the call.
  };
  // Polls (entering *phase first, when given); throws Interrupted on a stop.
  void Ask(const Phase* phase) const;

  std::shared_ptr<Shared> shared_;
};

// Polls `interrupt` once every `stride` calls of Tick: for loops whose steps
// are too cheap to poll each.
class PollEvery {
 public:
  PollEvery(const Interrupt& interrupt, int64_t stride)
      : interrupt_(interrupt), stride_(stride), left_(stride) {}
  void Tick() {
    if (--left_ > 0) return;
    left_ = stride_;
    interrupt_.Poll();
  }

 private:
  const Interrupt& interrupt_;
  const int64_t stride_;
  int64_t left_;
};

// Work between two polls: tensors checked or placed, items sorted. A poll
// that does not reach Python costs a clock read, so these keep polls a few
// hundred microseconds apart on large requests.
inline constexpr int64_t kItemsPerPoll = 1 << 14;
inline constexpr int64_t kComparisonsPerPoll = 1 << 16;

}  // namespace cadence_memplan
