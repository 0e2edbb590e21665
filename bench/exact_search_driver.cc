// PlanBest on one memory, from C++: MiniMalloc CSVs or the cut-rectangle
// set (csrc/tests/search/cut_rectangles.h), one instance at a time, for
// docs/quality.md's measurements (and /usr/bin/time's peak memory).
//
//   exact_search_driver [options] FILE.csv...   MiniMalloc instances
//   exact_search_driver [options] --rectangles  the 12 cut rectangles
// Options: --work N (best's default), --budget-ms B (a wall-clock cap; none
//   by default), --threads T (1),
//   --below-ms B: afterwards, ask FitInCapacity for a packing one byte below
//   the plan with this budget (does a smaller plan exist that we missed?),
//   --progress: print every improvement,
//   --write-csv DIR: write the instances as MiniMalloc CSVs (id,lower,upper,
//   size; half-open lifetimes) into DIR, e.g. DIR/rectangle-1.1048576.csv,
//   and plan nothing (bench/minimalloc_compare.py hands them to MiniMalloc).
// Built with the tests (CMake target exact_search_driver); not a test.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/best/best.h"
#include "core/search/exact_search.h"
#include "tests/search/cut_rectangles.h"

namespace {

using namespace cadence_memplan;

bool ReadInstance(const std::string& path, std::vector<Tensor>* tensors) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<int64_t> v;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) v.push_back(std::stoll(cell));
    if (v.size() >= 4) tensors->push_back({{v[1], v[2] - 1}, v[3]});  // [lower, upper)
  }
  return true;
}

Size PeakLive(const std::vector<Tensor>& tensors) {
  std::vector<std::pair<Time, Size>> events;
  for (const Tensor& t : tensors) {
    events.push_back({t.lifetime.start, t.size});
    events.push_back({t.lifetime.end + 1, -t.size});
  }
  std::sort(events.begin(), events.end());
  Size live = 0, peak = 0;
  for (const auto& e : events) peak = std::max(peak, live += e.second);
  return peak;
}

// MiniMalloc's CSV, its capacity in the name as in its benchmark files;
// written whole (a temporary file, then renamed) or not at all.
bool WriteCsv(const std::string& dir, const std::string& name, const std::vector<Tensor>& tensors,
              Size capacity) {
  const std::string path = dir + "/" + name + "." + std::to_string(capacity) + ".csv";
  const std::string temporary = path + ".tmp";
  std::ofstream out(temporary);
  out << "id,lower,upper,size\n";
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    out << k << ',' << t.lifetime.start << ',' << t.lifetime.end + 1 << ',' << t.size << '\n';
  }
  out.close();
  if (!out || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  std::printf("wrote %s\n", path.c_str());
  return true;
}

struct Options {
  double budget_ms = std::numeric_limits<double>::infinity();
  int64_t work_budget = kDefaultBestWork;
  int threads = 1;
  double below_ms = 0;
  bool progress = false;
};

// Returns bufsize / peak-live bound.
double Run(const std::string& name, const std::vector<Tensor>& tensors, const Options& o) {
  PlanRequest request;
  request.tensors = tensors;
  Size total = 0;
  for (const Tensor& t : tensors) total += t.size;
  request.memories = {{total, 1}};
  BestOptions options;
  options.budget_ms = o.budget_ms;
  options.threads = o.threads;
  options.work_budget = o.work_budget;
  const auto began = std::chrono::steady_clock::now();
  const BestResult r = PlanBest(request, options);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
  const Size bound = PeakLive(tensors);
  const Size bufsize = r.plan.bufsizes[1];
  const double last = r.improvements.empty() ? 0 : r.improvements.back().elapsed_ms;
  std::printf(
      "%-28s %6zu bound %10lld bufsize %10lld ratio %.4f lower %10lld %s time %7.0f ms"
      " last improvement %7.0f ms nodes %lld work %lld steps %zu",
      name.c_str(), tensors.size(), static_cast<long long>(bound), static_cast<long long>(bufsize),
      static_cast<double>(bufsize) / bound, static_cast<long long>(r.lower_bound.value_or(-1)),
      r.proved_optimal ? "proved" : "open  ", ms, last, static_cast<long long>(r.search_nodes),
      static_cast<long long>(r.work), r.improvements.size());
  if (o.below_ms > 0 && !r.proved_optimal) {
    PackingProblem problem;
    problem.tensors = tensors;
    SearchLimits limits;
    limits.deadline = std::chrono::steady_clock::now() +
                      std::chrono::microseconds(static_cast<int64_t>(o.below_ms * 1000));
    limits.threads = o.threads;
    const FitResult fit = FitInCapacity(problem, bufsize - 1, limits);
    std::printf(" below: %s (%lld nodes%s)",
                fit.fit == Fit::kFits         ? "exists"
                : fit.fit == Fit::kDoesNotFit ? "none"
                                              : "?",
                static_cast<long long>(fit.nodes),
                fit.fit == Fit::kFits
                    ? (", top " + std::to_string(PackingBufsize(problem, fit.offsets))).c_str()
                    : "");
  }
  std::printf("\n");
  if (o.progress) {
    for (const Improvement& i : r.improvements) {
      std::printf("    %9.1f ms %lld\n", i.elapsed_ms, static_cast<long long>(i.bufsize));
    }
  }
  std::fflush(stdout);
  return static_cast<double>(bufsize) / bound;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool rectangles = false;
  std::string write_csv;
  std::vector<std::string> files;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    const auto value = [&] { return k + 1 < argc ? std::string(argv[++k]) : std::string("0"); };
    if (arg == "--budget-ms") {
      o.budget_ms = std::stod(value());
    } else if (arg == "--work") {
      o.work_budget = std::stoll(value());
    } else if (arg == "--threads") {
      o.threads = std::stoi(value());
    } else if (arg == "--below-ms") {
      o.below_ms = std::stod(value());
    } else if (arg == "--progress") {
      o.progress = true;
    } else if (arg == "--write-csv") {
      write_csv = value();
    } else if (arg == "--rectangles") {
      rectangles = true;
    } else {
      files.push_back(arg);
    }
  }
  double log_sum = 0;
  int count = 0, exact = 0;
  const auto add = [&](double ratio) {
    log_sum += std::log(ratio);
    ++count;
    exact += ratio == 1.0;
  };
  if (rectangles) {
    for (const memplan_test::CutRectangleSpec& spec : memplan_test::CutRectangleSet()) {
      const auto pieces =
          memplan_test::CutRectangle(spec.seed, spec.pieces, memplan_test::kCutRectangleHeight,
                                     memplan_test::kCutRectangleSpan);
      if (!write_csv.empty()) {
        if (!WriteCsv(write_csv, "rectangle-" + std::to_string(spec.seed),
                      memplan_test::Tensors(pieces), memplan_test::kCutRectangleHeight)) {
          return 2;
        }
        continue;
      }
      add(Run("rectangle seed " + std::to_string(spec.seed), memplan_test::Tensors(pieces), o));
    }
  }
  if (!write_csv.empty()) return 0;
  for (const std::string& file : files) {
    std::vector<Tensor> tensors;
    if (!ReadInstance(file, &tensors)) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 2;
    }
    add(Run(file.substr(file.find_last_of('/') + 1), tensors, o));
  }
  if (count > 1) {
    std::printf("geometric mean of bufsize / bound: %.4f over %d, %d at the bound\n",
                std::exp(log_sum / count), count, exact);
  }
  return 0;
}
