// Planning: the core's request, best's options and what a plan decided, bound
// as classes (`PlanRequest`, `BestOptions`, `PlanOutput`), and `plan`,
// `validate` on them. A request's arrays are converted once, when it is made,
// so a caller that plans the same request again (capacity-first planning)
// pays for them once.
#include <pybind11/stl.h>

#include <limits>
#include <memory>
#include <mutex>
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

// The core's request as Python holds it. Its fields are fixed once made; the
// mutex lets one call at a time hand the core its own Interrupt, so that two
// threads may plan the same request.
struct BoundRequest {
  PlanRequest request;
  std::mutex calling;
};

// What `plan` returns, by name (cadence_memplan.api turns it into a PlanResult).
struct PlanOutput {
  py::array_t<int64_t> mem_ids, offsets, bufsizes, call_bufsizes;
  py::tuple memory_order;
  std::string occupancy;
  py::object strategy = py::none();  // How "best" found its plan; None for the upstream placers.
  bool proved_optimal = false;       // "best" proved that no valid plan is better.
  py::object lower_bound = py::none();  // BestResult::lower_bound, or None.
  py::object progress = py::none();  // BestResult::improvements as (ms, bytes) pairs, or None.
  // BestResult::all_in_memory1 and selection_fit in words, or None.
  py::object all_in_memory1 = py::none();
  py::object selection_fit = py::none();
  int64_t work = 0;  // BestResult::work: units of work spent ("best"; 0 otherwise).
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

std::vector<PlacedTensor> ToPlaced(const Int64Array& starts, const Int64Array& ends,
                                   const Int64Array& sizes, const Int64Array& mem_ids,
                                   const Int64Array& offsets) {
  const std::vector<Tensor> tensors = ToTensors(starts, ends, sizes, "placed_starts");
  RequireLength("placed_mem_ids", mem_ids, starts.size());
  RequireLength("placed_offsets", offsets, starts.size());
  std::vector<PlacedTensor> placed(tensors.size());
  for (size_t j = 0; j < tensors.size(); ++j) {
    placed[j] = {tensors[j], {ToMemId(mem_ids.at(j)), offsets.at(j)}};
  }
  return placed;
}

// PlanRequest(...): the arrays become the core's types here, once.
std::unique_ptr<BoundRequest> MakeRequest(
    const Int64Array& starts, const Int64Array& ends, const Int64Array& sizes,
    const Int64Array& memory_sizes, const Int64Array& memory_alignments, const MaskArray& blocked,
    std::optional<uint64_t> allowed, const Int64Array& placed_starts, const Int64Array& placed_ends,
    const Int64Array& placed_sizes, const Int64Array& placed_mem_ids,
    const Int64Array& placed_offsets, const Int64Array& incoming_offsets, bool keep_incoming_offset,
    const std::string& occupancy) {
  auto bound = std::make_unique<BoundRequest>();
  PlanRequest& request = bound->request;
  request.tensors = ToTensors(starts, ends, sizes, "starts");
  request.memories = ToMemories(memory_sizes, memory_alignments);
  request.blocked = ToVector(blocked, "blocked");
  if (allowed) request.allowed = *allowed;
  request.placed =
      ToPlaced(placed_starts, placed_ends, placed_sizes, placed_mem_ids, placed_offsets);
  request.incoming_offsets = ToVector(incoming_offsets, "incoming_offsets");
  request.keep_incoming_offset = keep_incoming_offset;
  request.occupancy = ToOccupancy(occupancy);
  return bound;
}

// BestOptions(...). The core checks the budgets; a negative thread count
// cannot reach its unsigned arithmetic.
BestOptions MakeBestOptions(int64_t work_budget, double budget_ms, int threads,
                            const Int64Array& keep_in_memory1, const Int64Array& weights) {
  if (threads < 0) throw InvalidInput("threads must be >= 0, got " + std::to_string(threads));
  BestOptions options;
  options.work_budget = work_budget;
  options.budget_ms = budget_ms;
  options.threads = threads;
  options.keep_in_memory1 = ToVector(keep_in_memory1, "keep_in_memory1");
  options.weights = ToVector(weights, "weights");
  return options;
}

// The placement's arrays, each handed over without a copy but mem_ids and
// offsets, which the core holds as Placement pairs.
PlanOutput PlacementOutput(PlanResult&& plan) {
  const size_t count = plan.placements.size();
  std::vector<int64_t> mem_ids(count), offsets(count);
  for (size_t i = 0; i < count; ++i) {
    mem_ids[i] = plan.placements[i].mem_id;
    offsets[i] = plan.placements[i].offset;
  }
  PlanOutput output;
  output.mem_ids = ToArray(std::move(mem_ids));
  output.offsets = ToArray(std::move(offsets));
  output.bufsizes = ToArray(std::move(plan.bufsizes));
  output.call_bufsizes = ToArray(std::move(plan.call_bufsizes));
  py::tuple memory_order(plan.memory_order.size());
  for (size_t m = 0; m < plan.memory_order.size(); ++m) {
    memory_order[m] = ToArray(std::move(plan.memory_order[m]));
  }
  output.memory_order = std::move(memory_order);
  output.occupancy = OccupancyName(plan.occupancy);
  return output;
}

PlanOutput BestOutput(BestResult&& found, bool selection_given) {
  PlanOutput output = PlacementOutput(std::move(found.plan));
  output.strategy = py::str(found.strategy);
  output.proved_optimal = found.proved_optimal;
  if (found.lower_bound) output.lower_bound = py::int_(*found.lower_bound);
  py::tuple steps(found.improvements.size());
  for (size_t k = 0; k < found.improvements.size(); ++k) {
    steps[k] = py::make_tuple(found.improvements[k].elapsed_ms, found.improvements[k].bufsize);
  }
  output.progress = std::move(steps);
  output.all_in_memory1 = py::str(AllInMemory1Name(found.all_in_memory1));
  if (selection_given) output.selection_fit = py::str(FitName(found.selection_fit));
  output.work = found.work;
  output.budget_exhausted = found.budget_exhausted;
  output.cut_short = found.cut_short;
  return output;
}

Algorithm ToPlacer(const std::string& algorithm) {
  if (algorithm == "position") return Algorithm::kPositionBasedGreedy;
  if (algorithm == "heuristic") return Algorithm::kGreedyByHeuristic;
  throw InvalidInput("algorithm must be 'position', 'heuristic' or 'best', got '" + algorithm +
                     "'");
}

// The one check that what only "best" takes reaches "best" alone (the
// placers ignore best's budgets, which every caller may pass).
void RequireBestFor(const std::string& algorithm, const BestOptions& options) {
  if (algorithm == "best") return;
  const auto refuse = [&](const char* what) {
    throw InvalidInput(std::string(what) + " algorithm='best' only, not '" + algorithm + "'");
  };
  if (!options.weights.empty()) refuse("weights apply to");
  if (!options.keep_in_memory1.empty()) refuse("keep_in_memory1 applies to");
}

// Runs `plan` on the core with the GIL released and the request's Interrupt
// set for this call alone; Ctrl-C comes back as the handler's exception.
template <typename Planner>
auto CallCore(BoundRequest& bound, const Planner& plan) {
  Interrupt interrupt = PythonInterrupt();
  try {
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(bound.calling);
    bound.request.interrupt = std::move(interrupt);
    struct Cleared {
      PlanRequest& request;
      ~Cleared() { request.interrupt = Interrupt(); }
    } cleared{bound.request};
    return plan(bound.request);
  } catch (const Interrupted&) {
    throw py::error_already_set();
  }
}

// plan(request=, algorithm=, options=None): `options` (None: the defaults)
// by pointer, so that its vectors are not copied.
PlanOutput Plan(BoundRequest& request, const std::string& algorithm, const BestOptions* given) {
  const BestOptions defaults;
  const BestOptions& options = given ? *given : defaults;
  RequireBestFor(algorithm, options);
  if (algorithm != "best") {
    const Algorithm placer = ToPlacer(algorithm);
    return PlacementOutput(CallCore(
        request, [placer](const PlanRequest& r) { return cadence_memplan::Plan(r, placer); }));
  }
  return BestOutput(
      CallCore(request, [&options](const PlanRequest& r) { return PlanBest(r, options); }),
      !options.keep_in_memory1.empty());
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

void RegisterRequest(py::module_& m) {
  const Int64Array none(0);
  py::class_<BoundRequest>(m, "PlanRequest",
                           "The core's PlanRequest (csrc/core/placement/planner.h): tensors, "
                           "memories, constraints; its arrays converted once, when made.")
      .def(py::init(&MakeRequest), py::kw_only(), py::arg("starts"), py::arg("ends"),
           py::arg("sizes"), py::arg("memory_sizes"), py::arg("memory_alignments"),
           py::arg("blocked") = MaskArray(0), py::arg("allowed") = py::none(),
           py::arg("placed_starts") = none, py::arg("placed_ends") = none,
           py::arg("placed_sizes") = none, py::arg("placed_mem_ids") = none,
           py::arg("placed_offsets") = none, py::arg("incoming_offsets") = none,
           py::arg("keep_incoming_offset") = true, py::arg("occupancy") = "auto")
      .def_property_readonly("tensor_count",
                             [](const BoundRequest& b) { return b.request.tensors.size(); })
      .def_property_readonly("memory_count",
                             [](const BoundRequest& b) { return b.request.memories.size(); });
}

void RegisterBestOptions(py::module_& m) {
  const Int64Array none(0);
  py::class_<BestOptions>(m, "BestOptions",
                          "The core's BestOptions (csrc/core/best/best.h): what 'best' may "
                          "spend and what it keeps in memory 1.")
      .def(py::init(&MakeBestOptions), py::kw_only(), py::arg("work_budget") = kDefaultBestWork,
           py::arg("budget_ms") = std::numeric_limits<double>::infinity(), py::arg("threads") = 0,
           py::arg("keep_in_memory1") = none, py::arg("weights") = none)
      .def_readonly("work_budget", &BestOptions::work_budget)
      .def_readonly("budget_ms", &BestOptions::budget_ms)
      .def_readonly("threads", &BestOptions::threads);
}

void RegisterOutput(py::module_& m) {
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
}

}  // namespace

void RegisterPlanning(py::module_& m) {
  RegisterRequest(m);
  RegisterBestOptions(m);
  RegisterOutput(m);
  m.attr("DEFAULT_BEST_WORK") = kDefaultBestWork;
  m.def("plan", &Plan, py::kw_only(), py::arg("request"), py::arg("algorithm"),
        py::arg("options") = py::none());
  m.def("validate", &Validate, py::kw_only(), py::arg("starts"), py::arg("ends"), py::arg("sizes"),
        py::arg("mem_ids"), py::arg("offsets"), py::arg("memory_sizes"),
        py::arg("memory_alignments"));
}

}  // namespace cadence_memplan::bindings
