// RunOnThreads: the one way the core runs work on several threads (the
// portfolio's members, the exact search's members), so that Ctrl-C is
// honoured while they run: only the calling thread may poll the caller's
// interrupt (interrupt.h), so it keeps polling while it waits for the others.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cadence_memplan {

// Runs `work` on `threads` threads, the calling one included (at least one),
// and returns when every copy has returned. While the calling thread waits
// for the others it calls `poll` every few milliseconds; `poll` may make the
// others stop early (through their own checks) but must not throw. `work`
// must not throw either: it keeps its exceptions for the caller.
inline void RunOnThreads(int threads, const std::function<void()>& work,
                         const std::function<void()>& poll) {
  std::mutex mutex;
  std::condition_variable done;
  int finished = 0;
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    pool.emplace_back([&] {
      work();
      const std::lock_guard<std::mutex> lock(mutex);
      ++finished;
      done.notify_one();
    });
  }
  work();
  {
    std::unique_lock<std::mutex> lock(mutex);
    while (finished < static_cast<int>(pool.size())) {
      done.wait_for(lock, std::chrono::milliseconds(5));
      lock.unlock();
      poll();
      lock.lock();
    }
  }
  for (std::thread& thread : pool) thread.join();
}

}  // namespace cadence_memplan
