// exir's planners: `pack_shared_objects` (greedy and BankedGreedy) and
// `check_storage_reuse`. Tensors and banks cross as structured numpy arrays
// whose dtypes are the core's own structs (ExirTensor, Bank, ReuseTensor),
// registered here once: Python builds them from `_core`'s dtypes, so the
// field list is written only in the core's header.
#include <string>
#include <utility>
#include <vector>

#include "bindings/convert.h"
#include "core/exir/shared_objects.h"
#include "core/exir/storage_reuse.h"

namespace cadence_memplan::bindings {
namespace {

template <typename T>
using RecordArray = py::array_t<T, py::array::c_style>;

// What `pack_shared_objects` returns, by name: per tensor in input order,
// except `visit_order` and the per-bank `used`.
struct SharedObjectPacking {
  std::string error;  // "" on success, else a PackErrorKind by name (below).
  int64_t error_tensor = -1;
  int64_t error_value = 0;
  py::array_t<int64_t> visit_order, mem_ids, objects, offsets, bufsizes, final_alignment, used;
};

struct StorageReuse {
  int64_t reuse_pairs = 0;
  bool violation = false;
};

template <typename T>
std::vector<T> ToRecords(const RecordArray<T>& records, const char* name) {
  RequireOneDimensional(name, records);
  return std::vector<T>(records.data(), records.data() + records.size());
}

// The names of PackErrorKind, as cadence_memplan.exir spells them.
const char* PackErrorName(PackErrorKind kind) {
  switch (kind) {
    case PackErrorKind::kNone: return "";
    case PackErrorKind::kNotSorted: return "not_sorted";
    case PackErrorKind::kNegativeStorageOffset: return "negative_storage_offset";
    case PackErrorKind::kMisalignedStorage: return "misaligned_storage";
    case PackErrorKind::kStorageDoesNotFit: return "storage_does_not_fit";
    case PackErrorKind::kUnresolvableStorage: return "unresolvable_storage";
    case PackErrorKind::kPinnedDoesNotFit: return "pinned_does_not_fit";
    case PackErrorKind::kNoBankFits: return "no_bank_fits";
    case PackErrorKind::kOverflow: return "overflow";
  }
  return "?";
}

SharedObjectPacking PackSharedObjects(const RecordArray<ExirTensor>& tensors, int64_t alignment,
                                      bool allow_overlapping_allocations, int64_t extra_padding,
                                      const Int64Array& input_sizes, const RecordArray<Bank>& banks,
                                      const std::string& occupancy) {
  BankedRequest request;
  GreedyRequest& greedy = request.greedy;
  greedy.tensors = ToRecords(tensors, "tensors");
  greedy.alignment = alignment;
  greedy.allow_overlapping_allocations = allow_overlapping_allocations;
  greedy.extra_padding = extra_padding;
  greedy.input_sizes = ToVector(input_sizes, "input_sizes");
  greedy.search = ToOccupancy(occupancy);
  request.banks = ToRecords(banks, "banks");
  PackResult result;
  {
    py::gil_scoped_release release;
    result = request.banks.empty() ? PackGreedy(greedy) : PackBanked(request);
  }
  const size_t count = result.placements.size();
  std::vector<int64_t> mem_ids(count), objects(count), offsets(count);
  for (size_t i = 0; i < count; ++i) {
    mem_ids[i] = result.placements[i].mem_id;
    objects[i] = result.placements[i].object;
    offsets[i] = result.placements[i].offset;
  }
  return {PackErrorName(result.error.kind),
          result.error.tensor,
          result.error.value,
          ToArray(std::move(result.visit_order)),
          ToArray(std::move(mem_ids)),
          ToArray(std::move(objects)),
          ToArray(std::move(offsets)),
          ToArray(std::move(result.bufsizes)),
          ToArray(std::move(result.final_alignment)),
          ToArray(std::move(result.used))};
}

StorageReuse CheckStorageReuse(const RecordArray<ReuseTensor>& tensors, const Int64Array& parents,
                               bool allow_lifetime_and_storage_overlap,
                               const std::string& occupancy) {
  ReuseCheckRequest request;
  request.tensors = ToRecords(tensors, "tensors");
  request.parents = ToVector(parents, "parents");
  request.allow_lifetime_and_storage_overlap = allow_lifetime_and_storage_overlap;
  request.search = ToOccupancy(occupancy);
  ReuseCheckResult result;
  {
    py::gil_scoped_release release;
    result = cadence_memplan::CheckStorageReuse(request);
  }
  return {result.reuse_pairs, result.violation};
}

}  // namespace

void RegisterSharedObjects(py::module_& m) {
  PYBIND11_NUMPY_DTYPE(Lifetime, start, end);
  PYBIND11_NUMPY_DTYPE(ExirTensor, lifetime, sort_size, nbytes, mem_id, pinned, base, base_offset);
  PYBIND11_NUMPY_DTYPE(Bank, mem_id, size, alignment);
  PYBIND11_NUMPY_DTYPE(ReuseTensor, lifetime, mem_id, offset, size, mem_obj_id);
  m.attr("EXIR_TENSOR_DTYPE") = py::dtype::of<ExirTensor>();
  m.attr("BANK_DTYPE") = py::dtype::of<Bank>();
  m.attr("REUSE_TENSOR_DTYPE") = py::dtype::of<ReuseTensor>();
  m.attr("NO_STORAGE_BASE") = kNoStorageBase;
  m.attr("OUTSIDE_STORAGE_BASE") = kOutsideStorageBase;

  py::class_<SharedObjectPacking>(m, "SharedObjectPacking",
                                  "What pack_shared_objects() decided, by name.")
      .def_readonly("error", &SharedObjectPacking::error)
      .def_readonly("error_tensor", &SharedObjectPacking::error_tensor)
      .def_readonly("error_value", &SharedObjectPacking::error_value)
      .def_readonly("visit_order", &SharedObjectPacking::visit_order)
      .def_readonly("mem_ids", &SharedObjectPacking::mem_ids)
      .def_readonly("objects", &SharedObjectPacking::objects)
      .def_readonly("offsets", &SharedObjectPacking::offsets)
      .def_readonly("bufsizes", &SharedObjectPacking::bufsizes)
      .def_readonly("final_alignment", &SharedObjectPacking::final_alignment)
      .def_readonly("used", &SharedObjectPacking::used);
  py::class_<StorageReuse>(m, "StorageReuse", "What check_storage_reuse() found, by name.")
      .def_readonly("reuse_pairs", &StorageReuse::reuse_pairs)
      .def_readonly("violation", &StorageReuse::violation);

  // noconvert: a record array of another layout is refused, never cast field by field.
  m.def("pack_shared_objects", &PackSharedObjects, py::kw_only(), py::arg("tensors").noconvert(),
        py::arg("alignment"), py::arg("allow_overlapping_allocations"), py::arg("extra_padding"),
        py::arg("input_sizes"), py::arg("banks").noconvert(), py::arg("occupancy"));
  m.def("check_storage_reuse", &CheckStorageReuse, py::kw_only(), py::arg("tensors").noconvert(),
        py::arg("parents"), py::arg("allow_lifetime_and_storage_overlap"), py::arg("occupancy"));
}

}  // namespace cadence_memplan::bindings
