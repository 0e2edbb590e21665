// Planning: `plan` (both placers and `best`) and `validate`, on int64 arrays.
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings/convert.h"
#include "bindings/interrupt.h"
#include "core/best/best.h"
#include "core/common/validator.h"

namespace cadence_memplan::bindings {
namespace {

// What `plan` returns, by name (cadence_memplan.api turns it into a PlanResult).
struct PlanOutput {
  py::array_t<int64_t> mem_ids, offsets, bufsizes, call_bufsizes;
  py::tuple memory_order;
  std::string occupancy;
  py::object strategy;  // How "best" found its plan; None for the upstream placers.
  bool proved_optimal = false;  // "best" proved that no valid plan is better.
  py::object lower_bound;       // BestResult::lower_bound, or None.
  py::object progress;          // BestResult::improvements as (ms, bytes) pairs, or None.
  // BestResult::all_in_memory1 and selection_fit in words, or None.
  py::object all_in_memory1;
  py::object selection_fit;
  int64_t work = 0;        // BestResult::work: units of work spent ("best"; 0 otherwise).
  // BestResult::budget_exhausted: the work (or the cap) ran out before the steps ended.
  bool budget_exhausted = false;
  bool cut_short = false;  // BestResult::cut_short: the wall-clock cap ended the search.
};

const char* AllInMemory1Name(AllInMemory1 answer) {
  switch (answer) {
    case AllInMemory1::kFits: return "fits";
    case AllInMemory1::kProvedImpossible: return "proved impossible";
    case AllInMemory1::kNotFound: return "not found";
    case AllInMemory1::kNotAsked: break;
  }
  return "not asked";
}

const char* FitName(Fit fit) {
  switch (fit) {
    case Fit::kFits: return "fits";
    case Fit::kDoesNotFit: return "does not fit";
    case Fit::kUnknown: break;
  }
  return "unknown";
}

std::vector<Tensor> ToTensors(const Int64Array& starts, const Int64Array& ends,
                              const Int64Array& sizes, const char* what) {
  RequireOneDimensional(what, starts);
  RequireLength("ends", ends, starts.size());
  RequireLength("sizes", sizes, starts.size());
  const auto start = starts.unchecked<1>(), end = ends.unchecked<1>(), size = sizes.unchecked<1>();
  std::vector<Tensor> tensors(starts.size());
  for (py::ssize_t i = 0; i < starts.size(); ++i) tensors[i] = {{start(i), end(i)}, size(i)};
  return tensors;
}

std::vector<Memory> ToMemories(const Int64Array& sizes, const Int64Array& alignments) {
  RequireOneDimensional("memory_sizes", sizes);
  RequireLength("memory_alignments", alignments, sizes.size());
  std::vector<Memory> memories(sizes.size());
  for (py::ssize_t m = 0; m < sizes.size(); ++m) memories[m] = {sizes.at(m), alignments.at(m)};
  return memories;
}

// Out-of-range ids become 0, which CheckRequest and Validate report as not a memory id.
MemId ToMemId(int64_t mem_id) {
  return mem_id >= 1 && mem_id <= kMaxMemories ? static_cast<MemId>(mem_id) : kNotPlaced;
}

PlanOutput Plan(const std::string& algorithm, const Int64Array& starts, const Int64Array& ends,
                const Int64Array& sizes, const Int64Array& memory_sizes,
                const Int64Array& memory_alignments, const MaskArray& blocked, uint64_t allowed,
                const Int64Array& placed_starts, const Int64Array& placed_ends,
                const Int64Array& placed_sizes, const Int64Array& placed_mem_ids,
                const Int64Array& placed_offsets, const Int64Array& incoming_offsets,
                bool keep_incoming_offset, const std::string& occupancy, int64_t work_budget,
                double budget_ms, int threads, const Int64Array& keep_in_memory1,
                const Int64Array& weights) {
  const bool best = algorithm == "best";
  Algorithm placer = Algorithm::kPositionBasedGreedy;
  if (algorithm == "heuristic") {
    placer = Algorithm::kGreedyByHeuristic;
  } else if (algorithm != "position" && !best) {
    throw InvalidInput("algorithm must be 'position', 'heuristic' or 'best', got '" + algorithm +
                       "'");
  }
  PlanRequest request;
  request.occupancy = ToOccupancy(occupancy);
  request.tensors = ToTensors(starts, ends, sizes, "starts");
  request.memories = ToMemories(memory_sizes, memory_alignments);
  request.blocked = ToVector(blocked, "blocked");
  request.allowed = allowed;
  request.incoming_offsets = ToVector(incoming_offsets, "incoming_offsets");
  request.keep_incoming_offset = keep_incoming_offset;
  const std::vector<Tensor> placed =
      ToTensors(placed_starts, placed_ends, placed_sizes, "placed_starts");
  RequireLength("placed_mem_ids", placed_mem_ids, placed_starts.size());
  RequireLength("placed_offsets", placed_offsets, placed_starts.size());
  request.placed.resize(placed.size());
  for (size_t j = 0; j < placed.size(); ++j) {
    request.placed[j] = {placed[j], {ToMemId(placed_mem_ids.at(j)), placed_offsets.at(j)}};
  }

  request.interrupt = PythonInterrupt();
  if (threads < 0) throw InvalidInput("threads must be >= 0, got " + std::to_string(threads));
  PlanResult result;
  std::string strategy;
  std::optional<Size> lower_bound;
  bool proved_optimal = false;
  std::vector<Improvement> improvements;
  AllInMemory1 all_in_memory1 = AllInMemory1::kNotAsked;
  Fit selection_fit = Fit::kUnknown;
  int64_t work = 0;
  bool budget_exhausted = false;
  bool cut_short = false;
  std::vector<TensorIndex> selection = ToVector(keep_in_memory1, "keep_in_memory1");
  const bool selection_given = !selection.empty();
  if (!best && selection_given) throw InvalidInput("keep_in_memory1 needs algorithm 'best'");
  std::vector<Size> tensor_weights = ToVector(weights, "weights");
  if (!best && !tensor_weights.empty()) throw InvalidInput("weights needs algorithm 'best'");
  try {
    py::gil_scoped_release release;
    if (best) {
      BestOptions options;
      options.work_budget = work_budget;
      options.budget_ms = budget_ms;
      options.threads = threads;
      options.keep_in_memory1 = std::move(selection);
      options.weights = std::move(tensor_weights);
      BestResult found = PlanBest(request, options);
      result = std::move(found.plan);
      strategy = std::move(found.strategy);
      lower_bound = found.lower_bound;
      proved_optimal = found.proved_optimal;
      improvements = std::move(found.improvements);
      all_in_memory1 = found.all_in_memory1;
      selection_fit = found.selection_fit;
      work = found.work;
      budget_exhausted = found.budget_exhausted;
      cut_short = found.cut_short;
    } else {
      result = cadence_memplan::Plan(request, placer);
    }
  } catch (const Interrupted&) {
    throw py::error_already_set();
  }

  const size_t count = result.placements.size();
  std::vector<int64_t> mem_ids(count), offsets(count);
  for (size_t i = 0; i < count; ++i) {
    mem_ids[i] = result.placements[i].mem_id;
    offsets[i] = result.placements[i].offset;
  }
  py::object progress = py::none();
  if (best) {
    py::tuple steps(improvements.size());
    for (size_t k = 0; k < improvements.size(); ++k) {
      steps[k] = py::make_tuple(improvements[k].elapsed_ms, improvements[k].bufsize);
    }
    progress = std::move(steps);
  }
  py::tuple memory_order(result.memory_order.size());
  for (size_t m = 0; m < result.memory_order.size(); ++m) {
    memory_order[m] = ToArray(std::move(result.memory_order[m]));
  }
  return {ToArray(std::move(mem_ids)),
          ToArray(std::move(offsets)),
          ToArray(std::move(result.bufsizes)),
          ToArray(std::move(result.call_bufsizes)),
          std::move(memory_order),
          OccupancyName(result.occupancy),
          best ? py::object(py::str(strategy)) : py::object(py::none()),
          proved_optimal,
          lower_bound ? py::object(py::int_(*lower_bound)) : py::object(py::none()),
          std::move(progress),
          best ? py::object(py::str(AllInMemory1Name(all_in_memory1))) : py::object(py::none()),
          selection_given ? py::object(py::str(FitName(selection_fit))) : py::object(py::none()),
          work,
          budget_exhausted,
          cut_short};
}

std::string Validate(const Int64Array& starts, const Int64Array& ends, const Int64Array& sizes,
                     const Int64Array& mem_ids, const Int64Array& offsets,
                     const Int64Array& memory_sizes, const Int64Array& memory_alignments) {
  const std::vector<Tensor> tensors = ToTensors(starts, ends, sizes, "starts");
  const std::vector<Memory> memories = ToMemories(memory_sizes, memory_alignments);
  RequireLength("mem_ids", mem_ids, starts.size());
  RequireLength("offsets", offsets, starts.size());
  std::vector<Placement> placements(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    placements[i] = {ToMemId(mem_ids.at(i)), offsets.at(i)};
  }
  const Interrupt interrupt = PythonInterrupt();
  try {
    py::gil_scoped_release release;
    return cadence_memplan::Validate(tensors, placements, memories, interrupt);
  } catch (const Interrupted&) {
    throw py::error_already_set();
  }
}

}  // namespace

void RegisterPlanning(py::module_& m) {
  py::class_<PlanOutput>(m, "PlanOutput", "What plan() decided, by name.")
      .def_readonly("mem_ids", &PlanOutput::mem_ids)
      .def_readonly("offsets", &PlanOutput::offsets)
      .def_readonly("bufsizes", &PlanOutput::bufsizes)
      .def_readonly("call_bufsizes", &PlanOutput::call_bufsizes)
      .def_readonly("memory_order", &PlanOutput::memory_order)
      .def_readonly("occupancy", &PlanOutput::occupancy)
      .def_readonly("strategy", &PlanOutput::strategy)
      .def_readonly("proved_optimal", &PlanOutput::proved_optimal)
      .def_readonly("lower_bound", &PlanOutput::lower_bound)
      .def_readonly("progress", &PlanOutput::progress)
      .def_readonly("all_in_memory1", &PlanOutput::all_in_memory1)
      .def_readonly("selection_fit", &PlanOutput::selection_fit)
      .def_readonly("work", &PlanOutput::work)
      .def_readonly("budget_exhausted", &PlanOutput::budget_exhausted)
      .def_readonly("cut_short", &PlanOutput::cut_short);
  m.attr("DEFAULT_BEST_WORK") = kDefaultBestWork;
  m.def("plan", &Plan, py::kw_only(), py::arg("algorithm"), py::arg("starts"), py::arg("ends"),
        py::arg("sizes"), py::arg("memory_sizes"), py::arg("memory_alignments"), py::arg("blocked"),
        py::arg("allowed"), py::arg("placed_starts"), py::arg("placed_ends"),
        py::arg("placed_sizes"), py::arg("placed_mem_ids"), py::arg("placed_offsets"),
        py::arg("incoming_offsets"), py::arg("keep_incoming_offset"), py::arg("occupancy"),
        py::arg("work_budget"), py::arg("budget_ms"), py::arg("threads"),
        py::arg("keep_in_memory1"), py::arg("weights"));
  m.def("validate", &Validate, py::kw_only(), py::arg("starts"), py::arg("ends"), py::arg("sizes"),
        py::arg("mem_ids"), py::arg("offsets"), py::arg("memory_sizes"),
        py::arg("memory_alignments"));
}

}  // namespace cadence_memplan::bindings
