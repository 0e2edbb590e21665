// The test hook raises a real SIGINT at the poll it names, so a test covers
// the whole path a Ctrl-C takes (Python's handler, the core's stop, the
// exception back) at a point chosen by phase and poll, not by a timer.
#include "bindings/interrupt.h"

#include <pybind11/stl.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/common/errors.h"

namespace cadence_memplan::bindings {
namespace {

namespace py = pybind11;

// How long a poll that does not reach Python waits at most for the next one
// that does: a fraction of the 0.2 s a Ctrl-C may take, and rare enough that
// taking the GIL back costs nothing measurable.
constexpr std::chrono::milliseconds kPythonPollInterval(5);

struct Hook {
  Phase phase;
  int64_t poll;
};
std::mutex hook_mutex;
std::optional<Hook> hook;  // Cleared once it fires.
bool hook_fired = false;

// Whether the hook names this poll; it fires once.
bool HookFires(Phase phase, int64_t poll) {
  const std::lock_guard<std::mutex> lock(hook_mutex);
  if (!hook || hook->phase != phase || hook->poll != poll) return false;
  hook.reset();
  hook_fired = true;
  return true;
}

Phase PhaseNamed(const std::string& name) {
  for (int k = 0; k < kPhaseCount; ++k) {
    const auto phase = static_cast<Phase>(k);
    if (name == PhaseName(phase)) return phase;
  }
  std::string names;
  for (int k = 0; k < kPhaseCount; ++k) {
    names += std::string(k == 0 ? "" : ", ") + PhaseName(static_cast<Phase>(k));
  }
  throw InvalidInput("unknown phase '" + name + "' (the phases: " + names + ")");
}

void SetInterruptHook(const std::optional<std::string>& phase, int64_t poll) {
  if (poll < 1) throw InvalidInput("poll must be >= 1, got " + std::to_string(poll));
  const std::optional<Hook> wanted =
      phase ? std::optional<Hook>(Hook{PhaseNamed(*phase), poll}) : std::nullopt;
  const std::lock_guard<std::mutex> lock(hook_mutex);
  hook = wanted;
  hook_fired = false;
}

bool InterruptHookFired() {
  const std::lock_guard<std::mutex> lock(hook_mutex);
  return hook_fired;
}

}  // namespace

Interrupt PythonInterrupt() {
  auto last_asked = std::make_shared<std::chrono::steady_clock::time_point>();
  return Interrupt([last_asked](Phase phase, int64_t poll) {
    const bool fires = HookFires(phase, poll);
    const auto now = std::chrono::steady_clock::now();
    if (!fires && now - *last_asked < kPythonPollInterval) return false;
    *last_asked = now;
    py::gil_scoped_acquire acquire;
    if (fires) std::raise(SIGINT);
    return PyErr_CheckSignals() != 0;
  });
}

void RegisterInterrupt(py::module_& m) {
  m.def("set_interrupt_hook", &SetInterruptHook, py::kw_only(), py::arg("phase"),
        py::arg("poll") = 1,
        "Tests only: raise SIGINT at poll `poll` (from 1, counted over a call) of phase `phase` "
        "(None: no hook), once.");
  m.def("interrupt_hook_fired", &InterruptHookFired,
        "Tests only: whether the hook set last has fired.");
}

}  // namespace cadence_memplan::bindings
