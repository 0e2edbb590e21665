// Interrupt (core/common/interrupt.h): polls numbered per phase over a call,
// a stop that every copy sees, other threads that only see it, the polled
// sorts, and RunOnThreads polling while it waits.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "core/common/interrupt.h"
#include "core/common/polled_sort.h"
#include "core/common/stable_sort.h"
#include "core/common/threads.h"
#include "tests/common/check.h"

namespace {

using namespace cadence_memplan;

struct Poll {
  Phase phase;
  int64_t number;
};

// Polls are numbered from 1 in each phase, across re-entries; nothing is
// polled after the poll that says stop, from this copy or another.
void TestNumbering() {
  memplan_test::SetContext("numbering");
  std::vector<Poll> polls;
  const Interrupt interrupt([&](Phase phase, int64_t number) {
    polls.push_back({phase, number});
    return phase == Phase::kPlace && number == 3;
  });
  interrupt.Begin(Phase::kCheck);
  interrupt.Poll();
  interrupt.Begin(Phase::kPlace);
  interrupt.Begin(Phase::kCheck);
  interrupt.Poll();
  interrupt.Begin(Phase::kPlace);
  bool thrown = false;
  try {
    interrupt.Poll();
  } catch (const Interrupted&) {
    thrown = true;
  }
  CHECK(thrown);
  const std::vector<int64_t> numbers = {1, 2, 1, 3, 4, 2, 3};
  CHECK_EQ(polls.size(), numbers.size());
  for (size_t k = 0; k < std::min(polls.size(), numbers.size()); ++k) {
    CHECK_EQ(polls[k].number, numbers[k]);
  }
  // A copy made before the stop says stop too, and asks no one.
  const Interrupt copy = interrupt;
  CHECK(copy.Stopping());
  thrown = false;
  try {
    copy.Begin(Phase::kResult);
  } catch (const Interrupted&) {
    thrown = true;
  }
  CHECK(thrown);
  CHECK_EQ(polls.size(), numbers.size());
  // A plain Interrupt never stops.
  const Interrupt plain;
  plain.Begin(Phase::kSearch);
  plain.Poll();
  CHECK(!plain.Stopping());
  CHECK(!plain.active());
}

// Another thread's polls never call the poll function; once the owner's
// poll says stop, they throw too. RunOnThreads polls while it waits: the
// worker below stops only because the waiting owner heard the stop.
void TestOtherThreads() {
  memplan_test::SetContext("other threads");
  const std::thread::id owner = std::this_thread::get_id();
  std::atomic<bool> asked_elsewhere{false};
  std::atomic<int64_t> worker_polls{0};
  const Interrupt interrupt([&](Phase, int64_t) {
    if (std::this_thread::get_id() != owner) asked_elsewhere = true;
    return worker_polls.load() > 1000;  // Stop once the worker has polled a while.
  });
  std::atomic<bool> worker_stopped{false};
  RunOnThreads(
      2,
      [&] {
        if (std::this_thread::get_id() == owner) return;  // The owner only waits.
        try {
          for (;;) {
            interrupt.Poll();
            ++worker_polls;
          }
        } catch (const Interrupted&) {
          worker_stopped = true;
        }
      },
      [&] { interrupt.Stopping(); });
  CHECK(worker_stopped.load());
  CHECK(!asked_elsewhere.load());
  CHECK(interrupt.Stopping());
}

// The polled sorts sort as std::sort and the radix sort do, and stop at
// the poll that says stop.
void TestPolledSorts() {
  memplan_test::SetContext("polled sorts");
  std::mt19937_64 rng(3);
  std::vector<int64_t> values(200000);
  for (int64_t& v : values) v = static_cast<int64_t>(rng() % 1000);
  int64_t polls = 0;
  const Interrupt counting([&](Phase, int64_t) {
    ++polls;
    return false;
  });
  std::vector<int64_t> sorted = values;
  SortPolled(sorted.begin(), sorted.end(), std::less<int64_t>(), counting);
  std::vector<int64_t> expected = values;
  std::sort(expected.begin(), expected.end());
  CHECK(sorted == expected);
  CHECK(polls > 10);
  std::vector<Keyed<int>> keyed(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    keyed[i] = {static_cast<uint64_t>(values[i]), static_cast<int>(i)};
  }
  SortStablyByKey(&keyed, counting);
  bool stable = true;
  for (size_t i = 1; i < keyed.size(); ++i) {
    stable &= keyed[i - 1].key < keyed[i].key ||
              (keyed[i - 1].key == keyed[i].key && keyed[i - 1].value < keyed[i].value);
  }
  CHECK(stable);
  const Interrupt stopping([&](Phase, int64_t number) { return number == 2; });
  bool thrown = false;
  try {
    std::vector<int64_t> copy = values;
    StableSortPolled(copy.begin(), copy.end(), std::less<int64_t>(), stopping);
  } catch (const Interrupted&) {
    thrown = true;
  }
  CHECK(thrown);
}

}  // namespace

int main() {
  TestNumbering();
  TestOtherThreads();
  TestPolledSorts();
  return memplan_test::Finish();
}
