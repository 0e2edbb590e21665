// Ctrl-C for the core's long calls: the Interrupt (core/common/interrupt.h)
// that every binding hands the core, and the test hook that makes it stop
// at a chosen poll of a chosen phase.
#pragma once

#include <pybind11/pybind11.h>

#include "core/common/interrupt.h"

namespace cadence_memplan::bindings {

// An Interrupt that asks Python whether to stop: PyErr_CheckSignals, with
// the GIL taken back, at most every kPythonPollInterval (a poll in between
// answers at once), on the thread that made it. A handler that raises
// (KeyboardInterrupt) leaves its exception set; the core throws
// Interrupted, and the binding turns that into error_already_set, which
// re-raises the handler's exception. Make it with the GIL held.
Interrupt PythonInterrupt();

// set_interrupt_hook / interrupt_hook_fired, for the tests.
void RegisterInterrupt(pybind11::module_& m);

}  // namespace cadence_memplan::bindings
