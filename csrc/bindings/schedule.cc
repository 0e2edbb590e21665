// Scheduling: `schedule`, the order of a program's units with the lowest
// peak of live bytes (core/schedule/schedule.h), on int64 arrays: the
// buffers' users in compressed rows, the edges as two columns.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "bindings/convert.h"
#include "bindings/interrupt.h"
#include "core/schedule/schedule.h"

namespace cadence_memplan::bindings {
namespace {

using schedule::UnitIndex;
using BoolArray = py::array_t<bool, py::array::c_style>;

// What `schedule` returns, by name (cadence_memplan.api makes a ScheduleResult).
struct ScheduleOutput {
  py::array_t<int64_t> order;
  int64_t peak_live = 0, given_peak_live = 0, lower_bound = 0;
  bool proved_optimal = false;
  std::string strategy;
  int64_t work = 0;
  bool cut_short = false;
};

// A unit index as the core's type. The core checks the range; values that
// do not fit the type are refused here, by name.
UnitIndex ToUnit(int64_t value, const char* name, py::ssize_t index) {
  if (value < std::numeric_limits<UnitIndex>::min() ||
      value > std::numeric_limits<UnitIndex>::max()) {
    throw InvalidInput(std::string(name) + "[" + std::to_string(index) +
                       "] = " + std::to_string(value) + " is not a unit index");
  }
  return static_cast<UnitIndex>(value);
}

ScheduleOutput Schedule(int64_t num_units, const Int64Array& edge_before,
                        const Int64Array& edge_after, const Int64Array& buffer_sizes,
                        const Int64Array& buffer_producers, const Int64Array& buffer_user_offsets,
                        const Int64Array& buffer_users, const BoolArray& buffer_live_to_end,
                        int64_t work_budget, double budget_ms) {
  schedule::ScheduleProblem problem;
  if (num_units < 0 || num_units >= std::numeric_limits<UnitIndex>::max()) {
    throw InvalidInput("num_units must be in [0, 2^31 - 1), got " + std::to_string(num_units));
  }
  problem.units = static_cast<UnitIndex>(num_units);
  RequireOneDimensional("edge_before", edge_before);
  RequireLength("edge_after", edge_after, edge_before.size());
  problem.edges.resize(edge_before.size());
  for (py::ssize_t e = 0; e < edge_before.size(); ++e) {
    problem.edges[e] = {ToUnit(edge_before.at(e), "edges[:, 0]", e),
                        ToUnit(edge_after.at(e), "edges[:, 1]", e)};
  }
  const py::ssize_t buffers = buffer_sizes.size();
  RequireOneDimensional("buffer_sizes", buffer_sizes);
  RequireLength("buffer_producers", buffer_producers, buffers);
  RequireLength("buffer_user_offsets", buffer_user_offsets, buffers + 1);
  RequireOneDimensional("buffer_users", buffer_users);
  if (buffer_live_to_end.size() != 0)
    RequireLength("buffer_live_to_end", buffer_live_to_end, buffers);
  const auto offsets = buffer_user_offsets.unchecked<1>();
  if (offsets(0) != 0 || offsets(buffers) != buffer_users.size()) {
    throw InvalidInput("buffer_user_offsets must start at 0 and end at len(buffer_users)");
  }
  problem.buffers.resize(buffers);
  for (py::ssize_t b = 0; b < buffers; ++b) {
    if (offsets(b + 1) < offsets(b)) {
      throw InvalidInput("buffer_user_offsets must not decrease, but entry " +
                         std::to_string(b + 1) + " is below entry " + std::to_string(b));
    }
    schedule::Buffer& buffer = problem.buffers[b];
    buffer.producer = ToUnit(buffer_producers.at(b), "buffer_producers", b);
    buffer.size = buffer_sizes.at(b);
    for (int64_t k = offsets(b); k < offsets(b + 1); ++k) {
      buffer.users.push_back(ToUnit(buffer_users.at(k), "buffer_users", k));
    }
    buffer.live_to_end = buffer_live_to_end.size() != 0 && buffer_live_to_end.at(b);
  }
  schedule::ScheduleOptions options;
  options.work_budget = work_budget;
  if (std::isfinite(budget_ms)) {
    options.deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double, std::milli>(std::max(0.0, budget_ms)));
  }
  options.interrupt = PythonInterrupt();
  schedule::ScheduleResult result;
  try {
    py::gil_scoped_release release;
    result = schedule::Schedule(problem, options);
  } catch (const Interrupted&) {
    throw py::error_already_set();
  }
  return {ToArray(std::vector<int64_t>(result.order.begin(), result.order.end())),
          result.peak_live,
          result.given_peak_live,
          result.lower_bound,
          result.proved_optimal,
          result.strategy,
          result.work,
          result.cut_short};
}

}  // namespace

void RegisterSchedule(py::module_& m) {
  m.attr("DEFAULT_SCHEDULE_WORK") = schedule::kDefaultWorkBudget;
  py::class_<ScheduleOutput>(m, "ScheduleOutput", "What schedule() decided, by name.")
      .def_readonly("order", &ScheduleOutput::order)
      .def_readonly("peak_live", &ScheduleOutput::peak_live)
      .def_readonly("given_peak_live", &ScheduleOutput::given_peak_live)
      .def_readonly("lower_bound", &ScheduleOutput::lower_bound)
      .def_readonly("proved_optimal", &ScheduleOutput::proved_optimal)
      .def_readonly("strategy", &ScheduleOutput::strategy)
      .def_readonly("work", &ScheduleOutput::work)
      .def_readonly("cut_short", &ScheduleOutput::cut_short);
  m.def("schedule", &Schedule, py::kw_only(), py::arg("num_units"), py::arg("edge_before"),
        py::arg("edge_after"), py::arg("buffer_sizes"), py::arg("buffer_producers"),
        py::arg("buffer_user_offsets"), py::arg("buffer_users"), py::arg("buffer_live_to_end"),
        py::arg("work_budget"), py::arg("budget_ms"));
}

}  // namespace cadence_memplan::bindings
