// PlanBest: smaller plans than upstream's single greedy passes, by trying
// many and keeping the best.
//
// Objective, compared lexicographically (smaller is better): the tensor bytes
// outside memory 1, then outside memories 1..2, and so on up to N-1, then the
// total of all bufsizes. With one memory that is its bufsize. On a DSP every
// byte kept in fast memory saves cycles, so the fast memories come first.
//
// The search, in a fixed order:
//   1. A portfolio: both placers (planner.h) on several visit orders: by size
//      (upstream's), lifetime length, area (size x length), the bytes of the
//      tensors alive with each one, their number, and start time.
//   2. Squeaky-wheel improvement of the best candidate's order (Joslin and
//      Clements, JAIR 1999): after each plan, the tensors that made it worse
//      than it must be (those outside memory 1, and those ending above their
//      memory's peak-live bound) move forward in the order, by a seeded
//      random amount, so that the next plan places them earlier; every 25
//      rounds the search restarts from the best order so far.
// Every candidate is checked with Validate, with the already-placed tensors
// unless those break it among themselves; one that fails to plan or to
// validate is skipped. The first candidate is upstream's better placer, so
// the result is never worse than both upstream placers.
//
// Deterministic: the candidates and their order depend only on the request.
// The budget only stops the search early (after the portfolio's first two
// candidates at least), and then the result depends on how far it got; the
// default is meant as a safety cap that plans of a few thousand tensors do not
// reach (MiniMalloc's challenging instances, 154-454 tensors, take 20-120 ms).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner.h"

namespace cadence_memplan {

struct BestOptions {
  // Wall-clock cap on the search, in milliseconds; checked between candidates.
  double budget_ms = 5000;
  // Rounds of squeaky-wheel improvement after the portfolio.
  int64_t improvement_rounds = 300;
  // Threads for the portfolio's candidates; 0: one per core. The result does
  // not depend on it (unless the budget runs out).
  int threads = 0;
};

struct BestResult {
  PlanResult plan;
  Algorithm algorithm = Algorithm::kPositionBasedGreedy;  // The winner's placer.
  std::string order;          // The winner's visit order, in words.
  int64_t candidates = 0;     // Plans tried.
  bool budget_exhausted = false;
};

// The objective of a plan of `request` (see above), for comparisons.
std::vector<Size> PlanCost(const PlanRequest& request, const PlanResult& plan);

// Throws InvalidInput like Plan() (and when no candidate passes Validate), and
// PlanningFailure when no candidate plans: the first candidate's failure,
// upstream's position placer's.
BestResult PlanBest(const PlanRequest& request, const BestOptions& options = {});

}  // namespace cadence_memplan
