// What every binding file shares: the array types the core's functions take,
// the checks of an array's shape, and arrays handed back to Python without a
// copy. Values are checked by the core itself (CheckRequest and friends).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <utility>
#include <vector>

#include "core/placement/planner.h"

namespace cadence_memplan::bindings {

namespace py = pybind11;

using Int64Array = py::array_t<int64_t, py::array::c_style>;
using MaskArray = py::array_t<uint64_t, py::array::c_style>;

inline void RequireOneDimensional(const char* name, const py::array& array) {
  if (array.ndim() != 1) {
    throw InvalidInput(std::string(name) + " must be one-dimensional, got " +
                       std::to_string(array.ndim()) + " dimensions");
  }
}

inline void RequireLength(const char* name, const py::array& array, py::ssize_t expected) {
  RequireOneDimensional(name, array);
  if (array.size() != expected) {
    throw InvalidInput(std::string(name) + " has " + std::to_string(array.size()) +
                       " entries, expected " + std::to_string(expected));
  }
}

template <typename T>
std::vector<T> ToVector(const py::array_t<T, py::array::c_style>& array, const char* name) {
  RequireOneDimensional(name, array);
  return std::vector<T>(array.data(), array.data() + array.size());
}

// A vector's values as a numpy array that owns them (no copy).
template <typename T>
py::array_t<T> ToArray(std::vector<T>&& values) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), free_when_done);
}

// The registration of each concept's functions and result types on the module.
void RegisterPlanning(py::module_& m);
void RegisterSharedObjects(py::module_& m);
void RegisterSchedule(py::module_& m);

// The one table of Occupancy's names, as the Python API spells them (_types.py's
// OCCUPANCIES), for every binding that takes an occupancy.
inline constexpr std::pair<Occupancy, const char*> kOccupancyNames[] = {
    {Occupancy::kAuto, "auto"},
    {Occupancy::kInterval, "interval"},
    {Occupancy::kTree, "tree"},
    {Occupancy::kScan, "scan"},
};

inline Occupancy ToOccupancy(const std::string& name) {
  for (const auto& [occupancy, spelled] : kOccupancyNames) {
    if (name == spelled) return occupancy;
  }
  throw InvalidInput("occupancy must be 'auto', 'interval', 'tree' or 'scan', got '" + name + "'");
}

inline const char* OccupancyName(Occupancy occupancy) {
  for (const auto& [value, spelled] : kOccupancyNames) {
    if (value == occupancy) return spelled;
  }
  return "?";
}

}  // namespace cadence_memplan::bindings
