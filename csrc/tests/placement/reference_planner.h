// Naive references of both placers, written the way upstream's Python does it
// (executorch backends/cadence/aot/memory_planning.py,
// PositionBasedGreedyWithHierarchy and GreedyWithHeuristic), with exact
// 128-bit arithmetic, and the oracles that hold the core to them. Shared by
// planner_test (random requests) and plan_fuzzer (libFuzzer's requests), so
// that both judge the core by the same rules.
//
// The references share nothing with the core: own overlap tests, own
// alignment, real per-memory lists.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <numeric>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/validator.h"
#include "core/placement/planner.h"
#include "tests/common/check.h"

namespace cadence_memplan {
// For comparing and printing plans (types.h defines no comparison or printing).
inline bool operator==(const Placement& a, const Placement& b) {
  return a.mem_id == b.mem_id && a.offset == b.offset;
}
inline std::ostream& operator<<(std::ostream& out, const Placement& p) {
  return out << "(mem " << p.mem_id << ", offset " << p.offset << ")";
}
}  // namespace cadence_memplan

namespace cadence_memplan::reference {

using Wide = __int128;

inline Wide AlignUpExact(Wide value, Wide alignment) {
  return (value + alignment - 1) / alignment * alignment;  // value >= 0 here.
}

inline bool LifetimesOverlap(const Lifetime& a, const Lifetime& b) {
  if (a.start > a.end || b.start > b.end) return false;  // Upstream's has_overlap: empty.
  return a.start <= b.end && b.start <= a.end;
}

// Upstream's storage intervals are [offset, offset + size - 1], inclusive.
inline bool StorageIntervalsOverlap(Wide a_offset, Wide a_size, Wide b_offset, Wide b_size) {
  const Wide a_last = a_offset + a_size - 1;
  const Wide b_last = b_offset + b_size - 1;
  if (a_offset > a_last || b_offset > b_last) return false;
  return a_offset <= b_last && b_offset <= a_last;
}

inline const char* Name(Algorithm a) {
  return a == Algorithm::kPositionBasedGreedy ? "position-based" : "heuristic";
}

// The mask of memory ids 1..count.
inline MemoryMask AllMemories(int count) {
  MemoryMask mask = 0;
  for (int m = 1; m <= count; ++m) mask |= MemoryMask{1} << m;
  return mask;
}

struct Entry {
  Slot id;
  Lifetime lifetime;
  Wide size;
  Wide offset;
};

struct RefFailure {
  TensorIndex tensor;
};

struct RefResult {
  std::vector<Placement> placements;
  std::vector<Size> bufsizes;
  std::vector<Size> call_bufsizes;  // place_spec's raises during the call alone.
  std::vector<std::vector<Slot>> memory_order;
};

// Only for requests that CheckRequest accepts. Run throws RefFailure where the
// core throws PlanningFailure.
class Reference {
 public:
  explicit Reference(const PlanRequest& request)
      : r_(request), n_(static_cast<MemId>(request.memories.size())), lists_(n_ + 1) {
    placements_.resize(request.tensors.size());
    bufsizes_.assign(n_ + 1, 0);
    call_bufsizes_.assign(n_ + 1, 0);
    for (size_t j = 0; j < request.placed.size(); ++j) {
      const PlacedTensor& p = request.placed[j];
      Append(p.placement.mem_id,
             {static_cast<Slot>(j), p.tensor.lifetime, p.tensor.size, p.placement.offset});
    }
  }

  RefResult Run(Algorithm algorithm) {
    // sorted(specs, key=allocated_memory, reverse=True): Python's sort is
    // stable, and reverse=True keeps equal keys in their original order.
    std::vector<TensorIndex> order(r_.tensors.size());
    std::iota(order.begin(), order.end(), TensorIndex{0});
    std::stable_sort(order.begin(), order.end(), [&](TensorIndex a, TensorIndex b) {
      return r_.tensors[a].size > r_.tensors[b].size;
    });
    for (TensorIndex i : order) {
      if (algorithm == Algorithm::kPositionBasedGreedy) {
        PlacePositionBased(i);
      } else {
        PlaceByHeuristic(i);
      }
    }
    RefResult result;
    result.placements = placements_;
    result.bufsizes = bufsizes_;
    result.call_bufsizes = call_bufsizes_;
    result.memory_order.resize(n_ + 1);
    for (MemId m = 1; m <= n_; ++m) {
      for (const Entry& e : lists_[m]) result.memory_order[m].push_back(e.id);
    }
    return result;
  }

 private:
  bool Allowed(MemId m) const { return (r_.allowed >> m) & 1; }
  bool Blocked(TensorIndex i, MemId m) const {
    return !r_.blocked.empty() && ((r_.blocked[i] >> m) & 1);
  }
  Wide Alignment(MemId m) const { return r_.memories[m - 1].alignment; }
  // is_valid_placement's size test.
  bool Fits(MemId m, Wide offset, Wide size) const {
    return AlignUpExact(offset + size, Alignment(m)) <= r_.memories[m - 1].size;
  }
  Entry Candidate(TensorIndex i, Wide offset) const {
    return {static_cast<Slot>(r_.placed.size()) + i, r_.tensors[i].lifetime, r_.tensors[i].size,
            offset};
  }
  // state.get_overlapping_spec: the first list entry overlapping in lifetime AND storage.
  const Entry* FirstOverlapping(MemId m, const Entry& e) const {
    for (const Entry& other : lists_[m]) {
      if (LifetimesOverlap(e.lifetime, other.lifetime) &&
          StorageIntervalsOverlap(e.offset, e.size, other.offset, other.size)) {
        return &other;
      }
    }
    return nullptr;
  }
  // state.place_spec.
  void Append(MemId m, const Entry& e) {
    lists_[m].push_back(e);
    const Wide end = AlignUpExact(e.offset + e.size, Alignment(m));
    if (end > bufsizes_[m]) bufsizes_[m] = static_cast<Size>(end);
  }
  void Place(TensorIndex i, MemId m, Wide offset) {
    Append(m, Candidate(i, offset));
    const Wide end = AlignUpExact(offset + r_.tensors[i].size, Alignment(m));
    if (end > call_bufsizes_[m]) call_bufsizes_[m] = static_cast<Size>(end);
    placements_[i] = {m, static_cast<Offset>(offset)};
  }

  void PlacePositionBased(TensorIndex i) {
    const Wide size = r_.tensors[i].size;
    for (MemId m = 1; m <= n_; ++m) {
      // is_valid_placement also checks these; the while loop never runs then.
      if (!Allowed(m) || Blocked(i, m)) continue;
      Wide offset = 0;
      while (Fits(m, offset, size)) {
        const Entry* overlapped = FirstOverlapping(m, Candidate(i, offset));
        if (overlapped == nullptr) break;
        offset = AlignUpExact(overlapped->offset + overlapped->size, Alignment(m));
      }
      if (Fits(m, offset, size)) {
        Place(i, m, offset);
        return;
      }
    }
    throw RefFailure{i};
  }

  void PlaceByHeuristic(TensorIndex i) {
    const Wide size = r_.tensors[i].size;
    // spec.mem_offset, None = nullopt. It survives across memories.
    std::optional<Wide> mem_offset;
    if (r_.keep_incoming_offset && !r_.incoming_offsets.empty() &&
        r_.incoming_offsets[i] != kNoOffset) {
      mem_offset = r_.incoming_offsets[i];
    }
    for (MemId m = 1; m <= n_; ++m) {
      if (Blocked(i, m)) continue;
      if (!r_.keep_incoming_offset) mem_offset.reset();
      Wide prev_offset = 0;
      std::optional<Wide> smallest_gap;  // nullopt = inf.
      for (const Entry& allocated : lists_[m]) {
        if (!LifetimesOverlap(r_.tensors[i].lifetime, allocated.lifetime)) continue;
        const Wide gap = allocated.offset - prev_offset;
        if (gap >= size && (!smallest_gap || gap < *smallest_gap)) {
          smallest_gap = gap;
          mem_offset = prev_offset;
        }
        prev_offset =
            std::max(AlignUpExact(allocated.offset + allocated.size, Alignment(m)), prev_offset);
      }
      if (!mem_offset) mem_offset = prev_offset;
      if (!(Allowed(m) && Fits(m, *mem_offset, size))) {
        mem_offset.reset();
        continue;
      }
      // place_spec's `assert self.get_overlapping_spec(spec) is None`.
      if (FirstOverlapping(m, Candidate(i, *mem_offset)) != nullptr) throw RefFailure{i};
      Place(i, m, *mem_offset);
      std::stable_sort(lists_[m].begin(), lists_[m].end(),
                       [](const Entry& a, const Entry& b) { return a.offset < b.offset; });
      return;
    }
    throw RefFailure{i};
  }

  const PlanRequest& r_;
  const MemId n_;
  std::vector<std::vector<Entry>> lists_;
  std::vector<Placement> placements_;
  std::vector<Size> bufsizes_;
  std::vector<Size> call_bufsizes_;
};

inline std::string Describe(const PlanRequest& r) {
  std::ostringstream out;
  out << "memories:";
  for (const Memory& m : r.memories) out << " {" << m.size << ", align " << m.alignment << "}";
  out << "\n    tensors (start,end,size):";
  for (const Tensor& t : r.tensors) {
    out << " (" << t.lifetime.start << "," << t.lifetime.end << "," << t.size << ")";
  }
  out << "\n    blocked: " << memplan_test::Repr(r.blocked) << " allowed: " << r.allowed;
  out << "\n    placed (start,end,size,mem,offset):";
  for (const PlacedTensor& p : r.placed) {
    out << " (" << p.tensor.lifetime.start << "," << p.tensor.lifetime.end << "," << p.tensor.size
        << "," << p.placement.mem_id << "," << p.placement.offset << ")";
  }
  out << "\n    incoming: " << memplan_test::Repr(r.incoming_offsets)
      << " keep: " << r.keep_incoming_offset;
  return out.str();
}

// CheckRequest's rules (planner.h, types.h), restated naively in exact
// arithmetic: the core must reject exactly the requests this rejects.
inline bool RequestIsValid(const PlanRequest& r) {
  const Wide top = kMaxByteValue;
  const auto in_range = [](Wide value, Wide low, Wide high) {
    return low <= value && value <= high;
  };
  const auto tensor_valid = [&](const Tensor& t) {
    return in_range(t.size, 0, top) && t.lifetime.start >= 0 && t.lifetime.end >= 0;
  };
  const auto memory_count = static_cast<Wide>(r.memories.size());
  if (!in_range(memory_count, 1, kMaxMemories)) return false;
  for (const Memory& m : r.memories) {
    if (!in_range(m.size, 1, top) || !in_range(m.alignment, 1, top)) return false;
  }
  for (const Tensor& t : r.tensors) {
    if (!tensor_valid(t)) return false;
  }
  if (!r.blocked.empty()) {
    if (r.blocked.size() != r.tensors.size()) return false;
    for (MemoryMask mask : r.blocked) {
      for (int id = 0; id < 64; ++id) {
        if (((mask >> id) & 1) && !in_range(id, 1, memory_count)) return false;
      }
    }
  }
  if (!r.incoming_offsets.empty()) {
    if (r.incoming_offsets.size() != r.tensors.size()) return false;
    for (Offset offset : r.incoming_offsets) {
      if (offset != kNoOffset && !in_range(offset, 0, top)) return false;
    }
  }
  for (const PlacedTensor& p : r.placed) {
    if (!tensor_valid(p.tensor) || !in_range(p.placement.mem_id, 1, memory_count) ||
        !in_range(p.placement.offset, 0, top) ||
        Wide{p.placement.offset} + p.tensor.size > r.memories[p.placement.mem_id - 1].size) {
      return false;
    }
  }
  return true;
}

// The already-placed tensors are aligned and overlap each other nowhere. Only
// for requests that CheckRequest accepts.
inline bool PlacedStateValid(const PlanRequest& r) {
  for (size_t a = 0; a < r.placed.size(); ++a) {
    const PlacedTensor& p = r.placed[a];
    if (p.placement.offset % r.memories[p.placement.mem_id - 1].alignment != 0) return false;
    for (size_t b = 0; b < a; ++b) {
      const PlacedTensor& q = r.placed[b];
      if (q.placement.mem_id == p.placement.mem_id &&
          LifetimesOverlap(q.tensor.lifetime, p.tensor.lifetime) &&
          StorageIntervalsOverlap(q.placement.offset, q.tensor.size, p.placement.offset,
                                  p.tensor.size)) {
        return false;
      }
    }
  }
  return true;
}

// Returns "" when a successful plan is valid, else Validate's complaint. The
// already-placed tensors join the check when they were a valid state to begin
// with. Exception: the heuristic may keep an incoming offset that is not
// aligned (upstream does too); such a plan is valid once alignment is ignored,
// and only kept offsets may be unaligned.
inline std::string PlanValidityProblem(const PlanRequest& r, Algorithm algorithm,
                                       const PlanResult& plan) {
  std::vector<Tensor> tensors = r.tensors;
  std::vector<Placement> placements = plan.placements;
  if (PlacedStateValid(r)) {
    for (const PlacedTensor& p : r.placed) {
      tensors.push_back(p.tensor);
      placements.push_back(p.placement);
    }
  }
  const std::string problem = Validate(tensors, placements, r.memories);
  if (problem.empty()) return "";
  const auto memory_count = static_cast<MemId>(r.memories.size());
  bool only_kept_offsets_unaligned = algorithm == Algorithm::kGreedyByHeuristic;
  for (size_t i = 0; i < r.tensors.size() && only_kept_offsets_unaligned; ++i) {
    const Placement& p = plan.placements[i];
    // Validate has already named a bad memory id; it must not index here.
    if (p.mem_id < 1 || p.mem_id > memory_count) return problem;
    if (p.offset % r.memories[p.mem_id - 1].alignment != 0) {
      only_kept_offsets_unaligned &=
          !r.incoming_offsets.empty() && r.incoming_offsets[i] == p.offset;
    }
  }
  std::vector<Memory> unaligned = r.memories;
  for (Memory& m : unaligned) m.alignment = 1;
  if (only_kept_offsets_unaligned && Validate(tensors, placements, unaligned).empty()) return "";
  return "plan fails Validate: " + problem;
}

template <typename T>
std::string Mismatch(const char* what, const T& core, const T& reference) {
  if (core == reference) return "";
  return std::string(what) + " differ\n    core:      " + memplan_test::Repr(core) +
         "\n    reference: " + memplan_test::Repr(reference);
}

enum class Outcome { kPlanned, kPlanningFailure, kInvalidInput };

struct Comparison {
  Outcome outcome = Outcome::kPlanned;  // What the core did.
  std::string problem;                  // "" when every oracle holds.
};

// Every way the core can answer for a memory (occupancy.h): each must give
// the reference's plan, and kAuto must resolve to one of the others.
inline constexpr Occupancy kEveryOccupancy[] = {Occupancy::kAuto, Occupancy::kInterval,
                                                Occupancy::kTree, Occupancy::kScan};

inline const char* Name(Occupancy o) {
  switch (o) {
    case Occupancy::kAuto: return "auto";
    case Occupancy::kInterval: return "interval index";
    case Occupancy::kTree: return "segment tree";
    case Occupancy::kScan: return "scan";
  }
  return "?";
}

// Plans `request` with the core under `occupancy` and judges the outcome
// against the reference's (`expected`, or `expected_failure`): CheckRequest
// complains exactly when RequestIsValid does, and InvalidInput (with its
// message) exactly then; otherwise the reference's placements, bufsizes and
// memory order, or PlanningFailure on the same tensor; and every plan passes
// PlanValidityProblem.
inline Comparison CompareOccupancy(PlanRequest request, Algorithm algorithm, Occupancy occupancy,
                                   const std::string& invalid,
                                   const std::optional<RefResult>& expected,
                                   const std::optional<TensorIndex>& expected_failure) {
  request.occupancy = occupancy;
  Comparison c;
  std::optional<PlanResult> actual;
  std::optional<TensorIndex> actual_failure;
  try {
    actual = Plan(request, algorithm);
  } catch (const PlanningFailure& f) {
    c.outcome = Outcome::kPlanningFailure;
    actual_failure = f.tensor();
  } catch (const InvalidInput& e) {
    c.outcome = Outcome::kInvalidInput;
    if (e.what() != invalid) {
      c.problem = "InvalidInput(\"" + std::string(e.what()) + "\") but CheckRequest says \"" +
                  invalid + "\"";
    }
  } catch (const std::exception& e) {
    c.problem = std::string("unexpected exception: ") + e.what();
  }
  if (!c.problem.empty() || c.outcome == Outcome::kInvalidInput) return c;
  if (!invalid.empty()) {
    c.problem = "no InvalidInput although CheckRequest says \"" + invalid + "\"";
  } else if (actual_failure.has_value() != expected_failure.has_value()) {
    c.problem = actual_failure ? "PlanningFailure on tensor " + std::to_string(*actual_failure) +
                                     " but the reference plans"
                               : "a plan but the reference fails on tensor " +
                                     std::to_string(*expected_failure);
  } else if (actual_failure) {
    c.problem = Mismatch("failing tensors", *actual_failure, *expected_failure);
  } else {
    c.problem = Mismatch("placements", actual->placements, expected->placements);
    if (c.problem.empty()) c.problem = Mismatch("bufsizes", actual->bufsizes, expected->bufsizes);
    if (c.problem.empty()) {
      c.problem = Mismatch("call bufsizes", actual->call_bufsizes, expected->call_bufsizes);
    }
    if (c.problem.empty()) {
      c.problem = Mismatch("memory orders", actual->memory_order, expected->memory_order);
    }
    if (c.problem.empty()) c.problem = PlanValidityProblem(request, algorithm, *actual);
    const bool resolved = occupancy == Occupancy::kAuto ? actual->occupancy != Occupancy::kAuto
                                                        : actual->occupancy == occupancy;
    if (c.problem.empty() && !resolved) {
      c.problem = std::string("the plan reports occupancy ") + Name(actual->occupancy);
    }
  }
  return c;
}

// Plans `r` with the core under every occupancy and holds each plan to the
// naive reference (CompareOccupancy). The outcome is the automatic choice's.
inline Comparison CompareWithReference(const PlanRequest& r, Algorithm algorithm) {
  const std::string invalid = CheckRequest(r);
  Comparison result;
  if (invalid.empty() != RequestIsValid(r)) {
    result.problem = invalid.empty() ? "CheckRequest accepts a request that breaks its rules"
                                     : "CheckRequest rejects a valid request: " + invalid;
    result.problem += "\n    on " + Describe(r);
    return result;
  }
  std::optional<RefResult> expected;
  std::optional<TensorIndex> expected_failure;
  if (invalid.empty()) {
    try {
      expected = Reference(r).Run(algorithm);
    } catch (const RefFailure& f) {
      expected_failure = f.tensor;
    }
  }
  for (Occupancy occupancy : kEveryOccupancy) {
    Comparison c = CompareOccupancy(r, algorithm, occupancy, invalid, expected, expected_failure);
    if (occupancy == Occupancy::kAuto) result.outcome = c.outcome;
    if (!c.problem.empty()) {
      result.problem = std::string(Name(algorithm)) + " with occupancy " + Name(occupancy) + ": " +
                       c.problem + "\n    on " + Describe(r);
      break;
    }
  }
  return result;
}

}  // namespace cadence_memplan::reference
