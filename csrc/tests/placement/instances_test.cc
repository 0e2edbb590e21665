// Both placers, under every occupancy, on MiniMalloc's public instances (real
// compiler graphs with up to tens of thousands of buffers and thousands alive
// at once) against a naive sweep reference, plus Validate on every plan.
//
// Usage: instances_test DATA_DIR [--slow]
//   DATA_DIR holds real/*.csv (MiniMalloc format: id,lower,upper,size with a
//   half-open [lower, upper)). The data is not in the repository; without it
//   the test is skipped (exit code 77). --slow adds Y_1 (62,185 buffers).
//
// The random requests of planner_test hold the core to a literal port of
// upstream's loops, but on a few dozen tensors; here the core meets graphs
// big enough to exercise the occupancy tree for real. Upstream's loops take
// hours at this size, so the reference is the textbook form of the same two
// rules (scan every tensor of the memory, in list order): O(n^2), seconds.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/validator.h"
#include "core/placement/planner.h"
#include "tests/common/check.h"
#include "tests/placement/reference_planner.h"

namespace {

using namespace cadence_memplan;
using reference::kEveryOccupancy;
using reference::Name;

constexpr int kSkipped = 77;

// Reads a MiniMalloc CSV; returns false when the file cannot be opened.
bool ReadInstance(const std::string& path, std::vector<Tensor>* tensors) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  std::getline(in, line);
  std::vector<std::string> names;
  std::stringstream header(line);
  for (std::string name; std::getline(header, name, ',');) names.push_back(name);
  const auto column = [&](const std::string& name) {
    return std::find(names.begin(), names.end(), name) - names.begin();
  };
  const auto lower = column("lower"), upper = column("upper"), size = column("size");
  while (std::getline(in, line)) {
    std::vector<int64_t> values;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) values.push_back(std::stoll(cell));
    tensors->push_back({{values[lower], values[upper] - 1}, values[size]});
  }
  return true;
}

// The most bytes alive at any one time: no plan of one memory can be smaller.
Size PeakLiveBytes(const std::vector<Tensor>& tensors) {
  std::vector<std::pair<Time, Size>> events;
  for (const Tensor& t : tensors) {
    events.push_back({t.lifetime.start, t.size});
    events.push_back({t.lifetime.end + 1, -t.size});
  }
  std::sort(events.begin(), events.end());  // Frees before allocations at the same time.
  Size live = 0, peak = 0;
  for (const auto& [time, delta] : events) peak = std::max(peak, live += delta);
  return peak;
}

// Upstream's two rules, scanning every tensor of a memory in its list order
// (offset, then insertion: both placers' scans are correct in that order, and
// it is the heuristic's own once it has placed a tensor). Only for requests
// without already-placed tensors, incoming offsets or blocklists.
std::vector<Placement> SweepReference(const PlanRequest& r, Algorithm algorithm) {
  struct Entry {
    Lifetime lifetime;
    Offset offset;
    Size size;
  };
  std::vector<std::vector<Entry>> lists(r.memories.size() + 1);
  std::vector<size_t> order(r.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return r.tensors[a].size > r.tensors[b].size; });
  const auto align_up = [](Offset value, Size alignment) {
    return (value + alignment - 1) / alignment * alignment;
  };
  std::vector<Placement> placements(r.tensors.size());
  for (size_t i : order) {
    const Tensor& t = r.tensors[i];
    bool placed = false;
    for (MemId m = 1; m <= static_cast<MemId>(r.memories.size()) && !placed; ++m) {
      const Size alignment = r.memories[m - 1].alignment;
      Offset offset = 0;
      if (algorithm == Algorithm::kPositionBasedGreedy) {
        for (const Entry& e : lists[m]) {  // Ascending offsets.
          if (!t.lifetime.Overlaps(e.lifetime) || e.size == 0 || t.size == 0) continue;
          if (e.offset >= offset + t.size) break;
          offset = std::max(offset, align_up(e.offset + e.size, alignment));
        }
      } else {
        Offset running_end = 0, best = -1;
        Size smallest_gap = -1;
        for (const Entry& e : lists[m]) {
          if (!t.lifetime.Overlaps(e.lifetime)) continue;
          const Size gap = e.offset - running_end;
          if (gap >= t.size && (smallest_gap < 0 || gap < smallest_gap)) {
            smallest_gap = gap;
            best = running_end;
          }
          running_end = std::max(running_end, align_up(e.offset + e.size, alignment));
        }
        offset = best >= 0 ? best : running_end;
      }
      if (align_up(offset + t.size, alignment) > r.memories[m - 1].size) continue;
      const auto at = std::upper_bound(lists[m].begin(), lists[m].end(), offset,
                                       [](Offset o, const Entry& e) { return o < e.offset; });
      lists[m].insert(at, {t.lifetime, offset, t.size});
      placements[i] = {m, offset};
      placed = true;
    }
    CHECK(placed);  // The last memory holds every buffer side by side.
  }
  return placements;
}

void CheckInstance(const std::string& name, const std::vector<Tensor>& tensors) {
  // The setup: a fast memory a quarter of the peak, then a huge one.
  PlanRequest r;
  r.tensors = tensors;
  r.memories = {{std::max<Size>(1, PeakLiveBytes(tensors) / 4), 16}, {Size{1} << 50, 64}};
  for (Algorithm algorithm : {Algorithm::kPositionBasedGreedy, Algorithm::kGreedyByHeuristic}) {
    const std::vector<Placement> expected = SweepReference(r, algorithm);
    for (Occupancy occupancy : kEveryOccupancy) {
      memplan_test::SetContext(name + " " + reference::Name(algorithm) + " " + Name(occupancy));
      r.occupancy = occupancy;
      const auto began = std::chrono::steady_clock::now();
      const PlanResult plan = Plan(r, algorithm);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      CHECK(plan.placements == expected);
      CHECK_EQ(Validate(r.tensors, plan.placements, r.memories), std::string());
      std::cout << "instances_test: " << name << " (" << tensors.size() << " buffers) "
                << reference::Name(algorithm) << ", " << Name(occupancy) << " -> "
                << Name(plan.occupancy) << ": " << seconds << " s\n";
    }
  }
  memplan_test::SetContext("");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: instances_test DATA_DIR [--slow]\n";
    return 2;
  }
  const std::string folder = std::string(argv[1]) + "/real/";
  const bool slow = argc > 2 && std::string(argv[2]) == "--slow";
  std::vector<std::string> names = {"G_1", "resnet50", "pangu_2.6B", "S_1"};
  if (slow) names = {"Y_1"};
  for (const std::string& name : names) {
    std::vector<Tensor> tensors;
    if (!ReadInstance(folder + name + ".csv", &tensors)) {
      std::cout << "instances_test: skipped, no " << folder << name << ".csv\n";
      return kSkipped;
    }
    CheckInstance(name, tensors);
  }
  return memplan_test::Finish();
}
