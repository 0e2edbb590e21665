// The only file that knows about Python: converts numpy arrays to the core's
// types and back, releases the GIL while the core works, and maps C++
// exceptions to Python ones. Checks of values live in the core
// (CheckRequest); the Python layer owns dtype checks and the public API.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "core/best.h"
#include "core/planner.h"
#include "core/shared_objects.h"
#include "core/validator.h"

namespace py = pybind11;
namespace cm = cadence_memplan;

namespace {

// The Python exception type for cm::PlanningFailure. Created once at import
// and deliberately never freed: it must outlive every call into the module.
PyObject* planning_error_type = nullptr;

using Int64Array = py::array_t<int64_t, py::array::c_style>;
using MaskArray = py::array_t<uint64_t, py::array::c_style>;

void RequireLength(const char* name, py::ssize_t actual, py::ssize_t expected) {
  if (actual != expected) {
    throw cm::InvalidInput(std::string(name) + " has " + std::to_string(actual) +
                           " entries, expected " + std::to_string(expected));
  }
}

void RequireOneDimensional(const char* name, const py::array& array) {
  if (array.ndim() != 1) {
    throw cm::InvalidInput(std::string(name) + " must be one-dimensional, got " +
                           std::to_string(array.ndim()) + " dimensions");
  }
}

std::vector<cm::Tensor> ToTensors(const Int64Array& starts, const Int64Array& ends,
                                  const Int64Array& sizes, const char* what) {
  RequireOneDimensional(what, starts);
  RequireOneDimensional(what, ends);
  RequireOneDimensional(what, sizes);
  RequireLength("ends", ends.size(), starts.size());
  RequireLength("sizes", sizes.size(), starts.size());
  auto start = starts.unchecked<1>();
  auto end = ends.unchecked<1>();
  auto size = sizes.unchecked<1>();
  std::vector<cm::Tensor> tensors(starts.size());
  for (py::ssize_t i = 0; i < starts.size(); ++i) {
    tensors[i] = {{start(i), end(i)}, size(i)};
  }
  return tensors;
}

std::vector<cm::Memory> ToMemories(const Int64Array& sizes, const Int64Array& alignments) {
  RequireOneDimensional("memory_sizes", sizes);
  RequireOneDimensional("memory_alignments", alignments);
  RequireLength("memory_alignments", alignments.size(), sizes.size());
  std::vector<cm::Memory> memories(sizes.size());
  for (py::ssize_t m = 0; m < sizes.size(); ++m) memories[m] = {sizes.at(m), alignments.at(m)};
  return memories;
}

template <typename T>
std::vector<T> ToVector(const py::array_t<T, py::array::c_style>& array, const char* name) {
  RequireOneDimensional(name, array);
  return std::vector<T>(array.data(), array.data() + array.size());
}

Int64Array ToArray(std::vector<int64_t>&& values) {
  auto* owned = new std::vector<int64_t>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<int64_t>*>(p); });
  return Int64Array(static_cast<py::ssize_t>(owned->size()), owned->data(), free_when_done);
}

// The names of cm::Occupancy, as the Python API spells them.
constexpr std::pair<cm::Occupancy, const char*> kOccupancyNames[] = {
    {cm::Occupancy::kAuto, "auto"},
    {cm::Occupancy::kIntervalIndex, "interval"},
    {cm::Occupancy::kSegmentTree, "tree"},
    {cm::Occupancy::kScan, "scan"},
};

cm::Occupancy ToOccupancy(const std::string& name) {
  for (const auto& [occupancy, spelled] : kOccupancyNames) {
    if (name == spelled) return occupancy;
  }
  throw cm::InvalidInput("occupancy must be 'auto', 'interval', 'tree' or 'scan', got '" + name +
                         "'");
}

const char* OccupancyName(cm::Occupancy occupancy) {
  for (const auto& [value, spelled] : kOccupancyNames) {
    if (value == occupancy) return spelled;
  }
  return "?";
}

py::tuple Plan(const std::string& algorithm, const Int64Array& starts, const Int64Array& ends,
               const Int64Array& sizes, const Int64Array& memory_sizes,
               const Int64Array& memory_alignments, const MaskArray& blocked, uint64_t allowed,
               const Int64Array& placed_starts, const Int64Array& placed_ends,
               const Int64Array& placed_sizes, const Int64Array& placed_mem_ids,
               const Int64Array& placed_offsets, const Int64Array& incoming_offsets,
               bool keep_incoming_offset, const std::string& occupancy, double budget_ms) {
  cm::Algorithm algo = cm::Algorithm::kPositionBasedGreedy;
  const bool best = algorithm == "best";
  if (algorithm == "heuristic") {
    algo = cm::Algorithm::kGreedyByHeuristic;
  } else if (algorithm != "position" && !best) {
    throw cm::InvalidInput("algorithm must be 'position', 'heuristic' or 'best', got '" +
                           algorithm + "'");
  }
  cm::PlanRequest request;
  request.occupancy = ToOccupancy(occupancy);
  request.tensors = ToTensors(starts, ends, sizes, "tensor arrays");
  request.memories = ToMemories(memory_sizes, memory_alignments);
  request.blocked = ToVector(blocked, "blocked");
  request.allowed = allowed;
  request.incoming_offsets = ToVector(incoming_offsets, "incoming_offsets");
  request.keep_incoming_offset = keep_incoming_offset;
  const std::vector<cm::Tensor> placed =
      ToTensors(placed_starts, placed_ends, placed_sizes, "placed tensor arrays");
  RequireOneDimensional("placed_mem_ids", placed_mem_ids);
  RequireOneDimensional("placed_offsets", placed_offsets);
  RequireLength("placed_mem_ids", placed_mem_ids.size(), placed_starts.size());
  RequireLength("placed_offsets", placed_offsets.size(), placed_starts.size());
  request.placed.resize(placed.size());
  for (size_t j = 0; j < placed.size(); ++j) {
    const int64_t mem_id = placed_mem_ids.at(j);
    // Out-of-range ids become 0, which CheckRequest reports as not a memory id.
    const bool in_range = mem_id >= 1 && mem_id <= cm::kMaxMemories;
    request.placed[j] = {placed[j],
                         {in_range ? static_cast<cm::MemId>(mem_id) : 0, placed_offsets.at(j)}};
  }

  // Ctrl-C: Python runs signal handlers only in the main thread and only
  // with the GIL, so take it back now and then to let them run. A handler
  // that raises (KeyboardInterrupt) leaves its exception set; Interrupted
  // then unwinds the core and error_already_set re-raises that exception.
  request.interrupted = [] {
    py::gil_scoped_acquire acquire;
    return PyErr_CheckSignals() != 0;
  };
  cm::PlanResult result;
  std::string strategy;  // How "best" found its plan; empty for the upstream placers.
  try {
    py::gil_scoped_release release;
    if (best) {
      cm::BestOptions options;
      options.budget_ms = budget_ms;
      cm::BestResult found = cm::PlanBest(request, options);
      result = std::move(found.plan);
      strategy = std::string(found.algorithm == cm::Algorithm::kPositionBasedGreedy ? "position"
                                                                                    : "heuristic") +
                 " placer, tensors ordered by " + found.order;
    } else {
      result = cm::Plan(request, algo);
    }
  } catch (const cm::Interrupted&) {
    throw py::error_already_set();
  }

  const size_t count = result.placements.size();
  std::vector<int64_t> mem_ids(count), offsets(count);
  for (size_t i = 0; i < count; ++i) {
    mem_ids[i] = result.placements[i].mem_id;
    offsets[i] = result.placements[i].offset;
  }
  py::list memory_order;
  for (auto& order : result.memory_order) memory_order.append(ToArray(std::move(order)));
  return py::make_tuple(ToArray(std::move(mem_ids)), ToArray(std::move(offsets)),
                        ToArray(std::move(result.bufsizes)), memory_order,
                        OccupancyName(result.occupancy), strategy);
}

std::string Validate(const Int64Array& starts, const Int64Array& ends, const Int64Array& sizes,
                     const Int64Array& mem_ids, const Int64Array& offsets,
                     const Int64Array& memory_sizes, const Int64Array& memory_alignments) {
  const std::vector<cm::Tensor> tensors = ToTensors(starts, ends, sizes, "tensor arrays");
  const std::vector<cm::Memory> memories = ToMemories(memory_sizes, memory_alignments);
  RequireOneDimensional("mem_ids", mem_ids);
  RequireOneDimensional("offsets", offsets);
  RequireLength("mem_ids", mem_ids.size(), starts.size());
  RequireLength("offsets", offsets.size(), starts.size());
  std::vector<cm::Placement> placements(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int64_t mem_id = mem_ids.at(i);
    const bool in_range = mem_id >= 1 && mem_id <= cm::kMaxMemories;
    placements[i] = {in_range ? static_cast<cm::MemId>(mem_id) : 0, offsets.at(i)};
  }
  py::gil_scoped_release release;
  return cm::Validate(tensors, placements, memories);
}

cm::ObjectSearch ToObjectSearch(const std::string& name) {
  if (name == "auto") return cm::ObjectSearch::kAuto;
  if (name == "index") return cm::ObjectSearch::kIndex;
  if (name == "scan") return cm::ObjectSearch::kScan;
  throw cm::InvalidInput("occupancy must be 'auto', 'index' or 'scan', got '" + name + "'");
}

// The names of cm::PackErrorKind, as cadence_memplan.exir spells them.
const char* PackErrorName(cm::PackErrorKind kind) {
  switch (kind) {
    case cm::PackErrorKind::kNone: return "";
    case cm::PackErrorKind::kNotSorted: return "not_sorted";
    case cm::PackErrorKind::kNegativeStorageOffset: return "negative_storage_offset";
    case cm::PackErrorKind::kMisalignedStorage: return "misaligned_storage";
    case cm::PackErrorKind::kStorageDoesNotFit: return "storage_does_not_fit";
    case cm::PackErrorKind::kUnresolvableStorage: return "unresolvable_storage";
    case cm::PackErrorKind::kPinnedDoesNotFit: return "pinned_does_not_fit";
    case cm::PackErrorKind::kNoBankFits: return "no_bank_fits";
    case cm::PackErrorKind::kOverflow: return "overflow";
  }
  return "?";
}

cm::GreedyRequest ToGreedyRequest(const Int64Array& starts, const Int64Array& ends,
                                  const Int64Array& sort_sizes, const Int64Array& nbytes,
                                  const Int64Array& mem_ids, const Int64Array& pinned,
                                  const Int64Array& bases, const Int64Array& base_offsets,
                                  int64_t alignment, bool allow_overlapping_allocations,
                                  int64_t extra_padding, const Int64Array& input_sizes,
                                  const std::string& occupancy) {
  const py::ssize_t count = starts.size();
  const std::pair<const char*, const Int64Array*> arrays[] = {
      {"starts", &starts},         {"ends", &ends},
      {"sort_sizes", &sort_sizes}, {"nbytes", &nbytes},
      {"mem_ids", &mem_ids},       {"pinned", &pinned},
      {"bases", &bases},           {"base_offsets", &base_offsets}};
  for (const auto& [name, array] : arrays) {
    RequireOneDimensional(name, *array);
    RequireLength(name, array->size(), count);
  }
  cm::GreedyRequest request;
  request.alignment = alignment;
  request.allow_overlapping_allocations = allow_overlapping_allocations;
  request.extra_padding = extra_padding;
  request.input_sizes = ToVector(input_sizes, "input_sizes");
  request.search = ToObjectSearch(occupancy);
  request.tensors.resize(count);
  const auto start = starts.unchecked<1>(), end = ends.unchecked<1>();
  const auto sort_size = sort_sizes.unchecked<1>(), bytes = nbytes.unchecked<1>();
  const auto mem_id = mem_ids.unchecked<1>(), pin = pinned.unchecked<1>();
  const auto base = bases.unchecked<1>(), base_offset = base_offsets.unchecked<1>();
  for (py::ssize_t i = 0; i < count; ++i) {
    request.tensors[i] = {{start(i), end(i)}, sort_size(i), bytes(i),      mem_id(i),
                          pin(i) != 0,        base(i),      base_offset(i)};
  }
  return request;
}

py::tuple FromPackResult(cm::PackResult&& result) {
  const size_t count = result.placements.size();
  std::vector<int64_t> mem_ids(count), objects(count), offsets(count);
  for (size_t i = 0; i < count; ++i) {
    mem_ids[i] = result.placements[i].mem_id;
    objects[i] = result.placements[i].object;
    offsets[i] = result.placements[i].offset;
  }
  return py::make_tuple(
      PackErrorName(result.error.kind), result.error.tensor, result.error.value,
      ToArray(std::move(result.visit_order)), ToArray(std::move(mem_ids)),
      ToArray(std::move(objects)), ToArray(std::move(offsets)), ToArray(std::move(result.bufsizes)),
      ToArray(std::move(result.final_alignment)), ToArray(std::move(result.used)));
}

py::tuple PackGreedy(const Int64Array& starts, const Int64Array& ends, const Int64Array& sort_sizes,
                     const Int64Array& nbytes, const Int64Array& mem_ids, const Int64Array& pinned,
                     const Int64Array& bases, const Int64Array& base_offsets, int64_t alignment,
                     bool allow_overlapping_allocations, int64_t extra_padding,
                     const Int64Array& input_sizes, const Int64Array& bank_mem_ids,
                     const Int64Array& bank_sizes, const Int64Array& bank_alignments,
                     const std::string& occupancy) {
  cm::BankedRequest request;
  request.greedy = ToGreedyRequest(starts, ends, sort_sizes, nbytes, mem_ids, pinned, bases,
                                   base_offsets, alignment, allow_overlapping_allocations,
                                   extra_padding, input_sizes, occupancy);
  RequireOneDimensional("bank_mem_ids", bank_mem_ids);
  RequireLength("bank_sizes", bank_sizes.size(), bank_mem_ids.size());
  RequireLength("bank_alignments", bank_alignments.size(), bank_mem_ids.size());
  for (py::ssize_t b = 0; b < bank_mem_ids.size(); ++b) {
    request.banks.push_back({bank_mem_ids.at(b), bank_sizes.at(b), bank_alignments.at(b)});
  }
  cm::PackResult result;
  {
    py::gil_scoped_release release;
    result = request.banks.empty() ? cm::PackGreedy(request.greedy) : cm::PackBanked(request);
  }
  return FromPackResult(std::move(result));
}

py::tuple CheckStorageReuse(const Int64Array& starts, const Int64Array& ends,
                            const Int64Array& mem_ids, const Int64Array& offsets,
                            const Int64Array& sizes, const Int64Array& mem_obj_ids,
                            const Int64Array& parents, bool allow_lifetime_and_storage_overlap,
                            const std::string& occupancy) {
  const py::ssize_t count = starts.size();
  const std::pair<const char*, const Int64Array*> arrays[] = {
      {"starts", &starts},   {"ends", &ends},   {"mem_ids", &mem_ids},
      {"offsets", &offsets}, {"sizes", &sizes}, {"mem_obj_ids", &mem_obj_ids}};
  for (const auto& [name, array] : arrays) {
    RequireOneDimensional(name, *array);
    RequireLength(name, array->size(), count);
  }
  cm::ReuseCheckRequest request;
  request.parents = ToVector(parents, "parents");
  request.allow_lifetime_and_storage_overlap = allow_lifetime_and_storage_overlap;
  request.search = ToObjectSearch(occupancy);
  request.tensors.resize(count);
  const auto start = starts.unchecked<1>(), end = ends.unchecked<1>();
  const auto mem_id = mem_ids.unchecked<1>(), offset = offsets.unchecked<1>();
  const auto size = sizes.unchecked<1>(), mem_obj_id = mem_obj_ids.unchecked<1>();
  for (py::ssize_t i = 0; i < count; ++i) {
    request.tensors[i] = {{start(i), end(i)}, mem_id(i), offset(i), size(i), mem_obj_id(i)};
  }
  cm::ReuseCheckResult result;
  {
    py::gil_scoped_release release;
    result = cm::CheckStorageReuse(request);
  }
  return py::make_tuple(result.reuse_pairs, result.violation);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "C++ core of cadence_memplan; use the functions of the cadence_memplan package.";
  m.attr("MAX_MEMORIES") = cm::kMaxMemories;
  m.attr("MAX_BYTE_VALUE") = cm::kMaxByteValue;

  planning_error_type =
      py::exception<cm::PlanningFailure>(m, "PlanningError", PyExc_RuntimeError).release().ptr();
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const cm::PlanningFailure& failure) {
      py::object error = py::reinterpret_borrow<py::object>(planning_error_type)(failure.what());
      error.attr("tensor_index") = failure.tensor();
      PyErr_SetObject(planning_error_type, error.ptr());
    } catch (const cm::InvalidInput& invalid) {
      PyErr_SetString(PyExc_ValueError, invalid.what());
    }
  });

  m.def("plan", &Plan, py::arg("algorithm"), py::arg("starts"), py::arg("ends"), py::arg("sizes"),
        py::arg("memory_sizes"), py::arg("memory_alignments"), py::arg("blocked"),
        py::arg("allowed"), py::arg("placed_starts"), py::arg("placed_ends"),
        py::arg("placed_sizes"), py::arg("placed_mem_ids"), py::arg("placed_offsets"),
        py::arg("incoming_offsets"), py::arg("keep_incoming_offset"), py::arg("occupancy") = "auto",
        py::arg("budget_ms") = 5000.0);
  m.def("validate", &Validate, py::arg("starts"), py::arg("ends"), py::arg("sizes"),
        py::arg("mem_ids"), py::arg("offsets"), py::arg("memory_sizes"),
        py::arg("memory_alignments"));
  m.def("pack_shared_objects", &PackGreedy, py::arg("starts"), py::arg("ends"),
        py::arg("sort_sizes"), py::arg("nbytes"), py::arg("mem_ids"), py::arg("pinned"),
        py::arg("bases"), py::arg("base_offsets"), py::arg("alignment"),
        py::arg("allow_overlapping_allocations"), py::arg("extra_padding"), py::arg("input_sizes"),
        py::arg("bank_mem_ids"), py::arg("bank_sizes"), py::arg("bank_alignments"),
        py::arg("occupancy") = "auto");
  m.def("check_storage_reuse", &CheckStorageReuse, py::arg("starts"), py::arg("ends"),
        py::arg("mem_ids"), py::arg("offsets"), py::arg("sizes"), py::arg("mem_obj_ids"),
        py::arg("parents"), py::arg("allow_lifetime_and_storage_overlap"),
        py::arg("occupancy") = "auto");
}
