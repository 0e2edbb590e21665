// The only place that knows about Python: the `_core` module. Each concept's
// file (planning.cc, shared_objects.cc, schedule.cc) converts its arrays to the core's
// types and back, with keyword-only arguments and results by name, and
// releases the GIL while the core works; this file maps the core's
// exceptions to Python's. Values are checked by the core itself
// (CheckRequest and friends); the Python layer owns the public API.
#include "bindings/convert.h"
#include "bindings/interrupt.h"

namespace py = pybind11;
namespace cm = cadence_memplan;

PYBIND11_MODULE(_core, m) {
  m.doc() = "C++ core of cadence_memplan; use the functions of the cadence_memplan package.";
  m.attr("MAX_MEMORIES") = cm::kMaxMemories;
  m.attr("MAX_BYTE_VALUE") = cm::kMaxByteValue;

  // A PlanningFailure becomes the package's own PlanningError, with the
  // failing tensor's index, so that no layer above needs to translate it.
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const cm::PlanningFailure& failure) {
      const py::object type = py::module_::import("cadence_memplan._types").attr("PlanningError");
      const py::object error = type(failure.what(), failure.tensor());
      PyErr_SetObject(type.ptr(), error.ptr());
    } catch (const cm::InvalidInput& invalid) {
      PyErr_SetString(PyExc_ValueError, invalid.what());
    }
  });

  cm::bindings::RegisterPlanning(m);
  cm::bindings::RegisterSharedObjects(m);
  cm::bindings::RegisterSchedule(m);
  cm::bindings::RegisterInterrupt(m);
}
