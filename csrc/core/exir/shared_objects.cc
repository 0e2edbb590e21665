#include "core/exir/shared_objects.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

#include "core/common/errors.h"
#include "core/common/str_cat.h"
#include "core/exir/object_pool.h"

namespace cadence_memplan {
namespace {

constexpr int64_t kMaxMemId = int64_t{1} << 20;
// The bound on every byte count, offset and alignment of a request: sums of a
// few of them cannot overflow (exir's are Python ints; no tensor comes near).
constexpr int64_t kMaxExirValue = int64_t{1} << 60;

void CheckTensors(const GreedyRequest& request) {
  if (request.alignment < 1 || request.alignment > kMaxExirValue) {
    throw InvalidInput(StrCat("alignment must be in 1..2^60, got ", request.alignment));
  }
  const auto count = static_cast<TensorIndex>(request.tensors.size());
  for (TensorIndex i = 0; i < count; ++i) {
    const ExirTensor& tensor = request.tensors[i];
    if (tensor.nbytes < 0 || tensor.nbytes > kMaxExirValue || tensor.sort_size < 0) {
      throw InvalidInput(StrCat("tensor ", i, " has a size outside 0..2^60"));
    }
    if (tensor.mem_id < 0 || tensor.mem_id > kMaxMemId) {
      throw InvalidInput(StrCat("tensor ", i, " has mem_id ", tensor.mem_id, " outside 0..2^20"));
    }
    if (tensor.base < kOutsideStorageBase || tensor.base >= count) {
      throw InvalidInput(StrCat("tensor ", i, " has storage base ", tensor.base));
    }
    if (tensor.base_offset < -kMaxExirValue || tensor.base_offset > kMaxExirValue) {
      throw InvalidInput(StrCat("tensor ", i, " has a storage_base_offset outside +-2^60"));
    }
  }
  for (Size size : request.input_sizes) {
    if (size < -kMaxExirValue || size > kMaxExirValue) {
      throw InvalidInput("input_mem_buffer_sizes must be within +-2^60");
    }
  }
  if (request.extra_padding < -kMaxExirValue || request.extra_padding > kMaxExirValue) {
    throw InvalidInput("extra_padding must be within +-2^60");
  }
}

// exir's visit order: bisect.insort by size, then reversed, so largest first
// and, among equal sizes, the later tensor first.
std::vector<TensorIndex> PackingOrder(const std::vector<ExirTensor>& tensors,
                                      std::vector<TensorIndex> subset) {
  std::reverse(subset.begin(), subset.end());
  std::stable_sort(subset.begin(), subset.end(), [&](TensorIndex a, TensorIndex b) {
    return tensors[a].sort_size > tensors[b].sort_size;
  });
  return subset;
}

std::vector<Lifetime> LifetimesOf(const std::vector<ExirTensor>& tensors) {
  std::vector<Lifetime> lifetimes(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) lifetimes[i] = tensors[i].lifetime;
  return lifetimes;
}

// _resolve_storage_base_specs. exir makes rounds over the deferred tensors in
// `deferred` order, resolving each whose base is resolved by then (earlier in
// the same round counts), and raises at the first failed check, or when a
// round makes no progress. A tensor's round follows from its base's, so the
// rounds are computed instead of repeated: the checks then run in exir's
// (round, position) order.
PackError ResolveStorageBases(const GreedyRequest& request,
                              const std::vector<TensorIndex>& deferred,
                              std::vector<Allocation>* where, std::vector<int64_t>* mem_of) {
  const auto& tensors = request.tensors;
  const auto count = static_cast<TensorIndex>(tensors.size());
  std::vector<int64_t> position(count, -1);
  for (size_t p = 0; p < deferred.size(); ++p) position[deferred[p]] = static_cast<int64_t>(p);
  constexpr int64_t kUnknown = -3, kInProgress = -2, kNever = -1;
  std::vector<int64_t> round(count, kUnknown);
  for (TensorIndex t = 0; t < count; ++t) {
    if (tensors[t].base == kNoStorageBase) round[t] = 0;  // Placed before any round.
  }
  std::vector<TensorIndex> chain;
  for (TensorIndex first : deferred) {
    chain.clear();
    TensorIndex t = first;
    while (round[t] == kUnknown) {
      round[t] = kInProgress;
      chain.push_back(t);
      const TensorIndex base = tensors[t].base;
      if (base < 0) break;
      t = base;
    }
    // Unwind from the deepest tensor of the chain.
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const TensorIndex tensor = *it;
      const TensorIndex base = tensors[tensor].base;
      if (base == kOutsideStorageBase || round[base] == kInProgress || round[base] == kNever) {
        round[tensor] = kNever;
      } else if (round[base] == 0) {
        round[tensor] = 1;
      } else {
        round[tensor] = round[base] + (position[base] < position[tensor] ? 0 : 1);
      }
    }
  }
  std::vector<TensorIndex> order;
  bool unresolved = false;
  for (TensorIndex t : deferred) {
    if (round[t] == kNever) {
      unresolved = true;
    } else {
      order.push_back(t);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](TensorIndex a, TensorIndex b) { return round[a] < round[b]; });
  for (TensorIndex t : order) {
    const ExirTensor& tensor = tensors[t];
    const Allocation base = (*where)[tensor.base];
    const Size size = (*where)[t].size;
    if (tensor.base_offset < 0) return {PackErrorKind::kNegativeStorageOffset, t, 0};
    if ((base.offset + tensor.base_offset) % request.alignment != 0) {
      return {PackErrorKind::kMisalignedStorage, t, base.offset};
    }
    if (tensor.base_offset + size > base.size) return {PackErrorKind::kStorageDoesNotFit, t, 0};
    (*where)[t] = {base.object, base.offset + tensor.base_offset, size};
    (*mem_of)[t] = (*mem_of)[tensor.base];
  }
  if (unresolved) return {PackErrorKind::kUnresolvableStorage, -1, 0};
  return {};
}

// _compute_total_sizes: each memory's objects end to end after the bytes its
// submodules reserved; `padded` memories get extra_padding on top.
bool LayOut(const GreedyRequest& request, const std::map<int64_t, ObjectPool>& pools,
            const std::function<bool(int64_t, const ObjectPool&)>& padded,
            const std::vector<Allocation>& where, const std::vector<int64_t>& mem_of,
            PackResult* result) {
  if (pools.empty()) {
    result->bufsizes = {0, 0};
    return true;
  }
  result->bufsizes.assign(static_cast<size_t>(pools.rbegin()->first + 1), 0);
  std::map<int64_t, std::vector<Offset>> object_offsets;
  for (const auto& [mem_id, pool] : pools) {
    Size total =
        mem_id < static_cast<int64_t>(request.input_sizes.size()) ? request.input_sizes[mem_id] : 0;
    auto& offsets = object_offsets[mem_id];
    for (int64_t object = 0; object < pool.object_count(); ++object) {
      offsets.push_back(total);
      if (!CheckedAdd(total, pool.object_size(object), &total)) return false;
    }
    if (padded(mem_id, pool) && !CheckedAdd(total, request.extra_padding, &total)) {
      return false;
    }
    result->bufsizes[mem_id] = total;
  }
  for (size_t t = 0; t < where.size(); ++t) {
    if (where[t].object < 0) continue;
    const Offset object_offset = object_offsets[mem_of[t]][where[t].object];
    Offset offset = 0;
    if (!CheckedAdd(object_offset, where[t].offset, &offset)) return false;
    result->placements[t] = {mem_of[t], where[t].object, offset};
  }
  return true;
}

// The memory ids in use and, per memory, the tensors that may go there.
std::map<int64_t, std::vector<TensorIndex>> MembersByMemory(const std::vector<ExirTensor>& tensors,
                                                            bool pinned_only) {
  std::map<int64_t, std::vector<TensorIndex>> members;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const ExirTensor& tensor = tensors[t];
    if (tensor.base != kNoStorageBase || (pinned_only && !tensor.pinned)) continue;
    members[tensor.mem_id].push_back(static_cast<TensorIndex>(t));
  }
  return members;
}

}  // namespace

PackResult PackGreedy(const GreedyRequest& request) {
  CheckTensors(request);
  const auto& tensors = request.tensors;
  const auto count = static_cast<TensorIndex>(tensors.size());
  PackResult result;
  result.placements.assign(count, {});
  result.final_alignment.assign(count, 0);
  std::vector<TensorIndex> all(count);
  for (TensorIndex t = 0; t < count; ++t) all[t] = t;
  result.visit_order = PackingOrder(tensors, all);

  const std::vector<Lifetime> lifetimes = LifetimesOf(tensors);
  std::vector<Allocation> where(count);
  std::vector<int64_t> mem_of(count, 0);
  std::map<int64_t, ObjectPool> pools;
  std::vector<int64_t> slot_of(count, -1);  // Each tensor is in one pool at most.
  for (const auto& [mem_id, members] : MembersByMemory(tensors, false)) {
    pools.emplace(std::piecewise_construct, std::forward_as_tuple(mem_id),
                  std::forward_as_tuple(lifetimes, members, &where, request.search,
                                        request.auto_minimum_tensors, &slot_of));
  }
  std::vector<TensorIndex> deferred;
  for (TensorIndex t : result.visit_order) {
    const ExirTensor& tensor = tensors[t];
    const Size size = AlignUp(tensor.nbytes, request.alignment);
    result.final_alignment[t] = request.alignment;
    mem_of[t] = tensor.mem_id;
    where[t].size = size;
    if (tensor.base != kNoStorageBase) {
      deferred.push_back(t);
      continue;
    }
    ObjectPool& pool = pools.at(tensor.mem_id);
    if (pool.Pick(t, size, request.allow_overlapping_allocations) ==
        ObjectPool::Picked::kNotSorted) {
      result.error = {PackErrorKind::kNotSorted, t, 0};
      return result;
    }
  }
  result.error = ResolveStorageBases(request, deferred, &where, &mem_of);
  if (result.error.kind == PackErrorKind::kUnresolvableStorage) {
    for (TensorIndex t : deferred) result.placements[t].object = where[t].object;
  }
  if (result.error.kind != PackErrorKind::kNone) return result;
  if (!LayOut(
          request, pools, [](int64_t, const ObjectPool&) { return true; }, where, mem_of,
          &result)) {
    result.error = {PackErrorKind::kOverflow, -1, 0};
  }
  return result;
}

namespace {

// BankedGreedy's packing, its state named: the banks by memory id, the
// tensors by kind (pinned to a memory, free to go to any bank, or deferred
// to their storage base), each memory's pool of shared objects and what
// each bank has used.
class BankedPacking {
 public:
  explicit BankedPacking(const BankedRequest& request)
      : request_(request), greedy_(request.greedy), tensors_(request.greedy.tensors) {
    CheckTensors(greedy_);
    CheckBanks();
    const auto count = static_cast<TensorIndex>(tensors_.size());
    result_.placements.assign(count, {});
    result_.final_alignment.assign(count, 0);
    SortTensors();
    lifetimes_ = LifetimesOf(tensors_);
    where_.resize(count);
    mem_of_.assign(count, 0);
    MakePools();
    used_.resize(request_.banks.size());
    for (size_t b = 0; b < request_.banks.size(); ++b) {
      const int64_t mem_id = request_.banks[b].mem_id;
      const auto given = static_cast<int64_t>(greedy_.input_sizes.size());
      used_[b] = mem_id < given ? greedy_.input_sizes[mem_id] : 0;
    }
  }
  BankedPacking(const BankedPacking&) = delete;  // The pools point into it.
  BankedPacking& operator=(const BankedPacking&) = delete;

  PackResult Run() {
    if (!PackPinned() || !PackFree()) return std::move(result_);
    for (TensorIndex t : deferred_) {
      result_.visit_order.push_back(t);
      where_[t].size = AlignUp(tensors_[t].nbytes, greedy_.alignment);
    }
    const PackError error = ResolveStorageBases(greedy_, deferred_, &where_, &mem_of_);
    if (error.kind != PackErrorKind::kNone) {
      if (error.kind == PackErrorKind::kUnresolvableStorage) {
        for (TensorIndex t : deferred_) result_.placements[t].object = where_[t].object;
      }
      return Fail(error.kind, error.tensor, error.value);
    }
    const auto padded = [](int64_t, const ObjectPool& pool) { return pool.object_count() > 0; };
    if (!LayOut(greedy_, pools_, padded, where_, mem_of_, &result_)) {
      return Fail(PackErrorKind::kOverflow, -1, 0);
    }
    result_.used = used_;
    return std::move(result_);
  }

 private:
  void CheckBanks() {
    if (request_.banks.empty()) throw InvalidInput("a target memory map needs at least one bank");
    for (size_t b = 0; b < request_.banks.size(); ++b) {
      const Bank& bank = request_.banks[b];
      if (bank.mem_id < 1 || bank.mem_id > kMaxMemId || bank.size < 1 ||
          bank.size > kMaxExirValue || bank.alignment < 0 || bank.alignment > kMaxExirValue ||
          !bank_of_.emplace(bank.mem_id, b).second) {
        throw InvalidInput(StrCat("bank ", b, " is not a valid bank of a target memory map"));
      }
    }
  }

  // Tensors with a storage base are deferred (realigned before anything
  // else); the others are pinned or free.
  void SortTensors() {
    for (TensorIndex t = 0; t < static_cast<TensorIndex>(tensors_.size()); ++t) {
      if (tensors_[t].base != kNoStorageBase) {
        deferred_.push_back(t);
        result_.final_alignment[t] = greedy_.alignment;
      } else if (tensors_[t].pinned) {
        pinned_.push_back(t);
      } else {
        free_.push_back(t);
      }
    }
  }

  // The unpinned tensors are in every bank's pool, so each bank has its own
  // slots; pools of undeclared memories hold pins only, and share theirs.
  void MakePools() {
    members_ = MembersByMemory(tensors_, true);
    for (const Bank& bank : request_.banks) {
      auto& bank_members = members_[bank.mem_id];
      bank_members.insert(bank_members.end(), free_.begin(), free_.end());
    }
    slots_.assign(request_.banks.size() + 1, std::vector<int64_t>(tensors_.size(), -1));
    for (const auto& [mem_id, list] : members_) {
      const auto bank = bank_of_.find(mem_id);
      std::vector<int64_t>* slot_of =
          &slots_[bank == bank_of_.end() ? request_.banks.size() : bank->second];
      pools_.emplace(std::piecewise_construct, std::forward_as_tuple(mem_id),
                     std::forward_as_tuple(lifetimes_, list, &where_, greedy_.search,
                                           greedy_.auto_minimum_tensors, slot_of));
    }
  }

  Size AlignmentOf(int64_t mem_id) const {
    const auto found = bank_of_.find(mem_id);
    if (found == bank_of_.end() || request_.banks[found->second].alignment == 0) {
      return greedy_.alignment;
    }
    return request_.banks[found->second].alignment;
  }

  PackResult Fail(PackErrorKind kind, TensorIndex tensor, int64_t value) {
    result_.error = {kind, tensor, value};
    result_.used = used_;
    return std::move(result_);
  }

  // Pins first, each into its own memory by pick_shared_obj; false (the
  // error set) when one fails.
  bool PackPinned() {
    for (TensorIndex t : PackingOrder(tensors_, pinned_)) {
      result_.visit_order.push_back(t);
      const int64_t mem_id = tensors_[t].mem_id;
      const Size alignment = AlignmentOf(mem_id);
      const Size size = AlignUp(tensors_[t].nbytes, alignment);
      result_.final_alignment[t] = alignment;
      mem_of_[t] = mem_id;
      ObjectPool& pool = pools_.at(mem_id);
      const ObjectPool::Picked picked = pool.Pick(t, size, greedy_.allow_overlapping_allocations);
      if (picked == ObjectPool::Picked::kNotSorted) {
        return SetError(PackErrorKind::kNotSorted, t, 0);
      }
      if (picked == ObjectPool::Picked::kReused) continue;
      const auto found = bank_of_.find(mem_id);
      if (found == bank_of_.end()) continue;  // Laid out, but not budgeted.
      const Bank& bank = request_.banks[found->second];
      Size& bank_used = used_[found->second];
      const Size cost = size + (pool.object_count() == 1 ? greedy_.extra_padding : 0);
      if (bank_used + cost > bank.size) {
        return SetError(PackErrorKind::kPinnedDoesNotFit, t, bank.size - bank_used);
      }
      bank_used += cost;
    }
    return true;
  }

  // Then the others, each into the first bank that takes it; false (the
  // error set) when none does.
  bool PackFree() {
    for (TensorIndex t : PackingOrder(tensors_, free_)) {
      result_.visit_order.push_back(t);
      bool placed = false;
      for (size_t b = 0; b < request_.banks.size() && !placed; ++b) placed = PlaceInBank(t, b);
      if (!placed) return SetError(PackErrorKind::kNoBankFits, t, 0);
    }
    return true;
  }

  bool PlaceInBank(TensorIndex t, size_t b) {
    const Bank& bank = request_.banks[b];
    const Size alignment = AlignmentOf(bank.mem_id);
    const Size size = AlignUp(tensors_[t].nbytes, alignment);
    result_.final_alignment[t] = alignment;
    ObjectPool& pool = pools_.at(bank.mem_id);
    bool placed = pool.Reuse(t, size, greedy_.allow_overlapping_allocations);
    if (!placed) {
      const Size cost = size + (pool.object_count() == 0 ? greedy_.extra_padding : 0);
      if (used_[b] + cost <= bank.size) {
        used_[b] += cost;
        pool.AddObject(t, size);
        placed = true;
      }
    }
    if (placed) mem_of_[t] = bank.mem_id;
    return placed;
  }

  bool SetError(PackErrorKind kind, TensorIndex tensor, int64_t value) {
    result_.error = {kind, tensor, value};
    result_.used = used_;
    return false;
  }

  const BankedRequest& request_;
  const GreedyRequest& greedy_;
  const std::vector<ExirTensor>& tensors_;
  std::map<int64_t, size_t> bank_of_;  // Mem id to bank index.
  PackResult result_;
  std::vector<TensorIndex> pinned_, free_, deferred_;
  std::vector<Lifetime> lifetimes_;
  std::vector<Allocation> where_;
  std::vector<int64_t> mem_of_;
  std::map<int64_t, std::vector<TensorIndex>> members_;  // Each pool's tensors.
  std::vector<std::vector<int64_t>> slots_;              // Per bank, and the pins'.
  std::map<int64_t, ObjectPool> pools_;
  std::vector<Size> used_;  // Per bank.
};

}  // namespace

PackResult PackBanked(const BankedRequest& request) { return BankedPacking(request).Run(); }

}  // namespace cadence_memplan
