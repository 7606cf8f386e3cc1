// EventLoop: a small single-threaded reactor in the shape of redis' ae.c.
// File events come from epoll; timers are kept on the monotonic clock and
// turned into epoll_wait's timeout, so nothing ever sleep-polls.
//
// Contracts:
// - The loop does not own registered fds; the caller closes them after Remove().
// - Callbacks may add/remove fds and timers (including their own) while running.
// - Not thread-safe: one loop per thread (our agents are single-threaded).
#pragma once

#include <sys/epoll.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/unique_fd.h"

namespace elastic {

using MonoClock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

class EventLoop {
 public:
  using FdCallback = std::function<void(uint32_t epoll_events)>;
  using TimerCallback = std::function<void()>;
  using TimerId = uint64_t;

  EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Registers fd for `events` (EPOLLIN, EPOLLOUT, ...). Replaces any existing
  // registration of the same fd. Returns false with *err on failure.
  bool Add(int fd, uint32_t events, FdCallback cb, std::string* err);
  bool Modify(int fd, uint32_t events, std::string* err);
  void Remove(int fd);
  bool Watching(int fd) const { return handlers_.count(fd) != 0; }

  // One-shot timer `delay` from now on the monotonic clock.
  TimerId AddTimer(Millis delay, TimerCallback cb);
  void CancelTimer(TimerId id);

  // Waits until at least one event or timer fired, or `max_wait` passed
  // (negative: no limit besides timers). Runs the due callbacks.
  // Returns false only if epoll_wait failed for a reason other than EINTR.
  bool RunOnce(Millis max_wait = Millis(-1));
  // Runs until Stop() is called from a callback.
  void Run();
  void Stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

 private:
  struct Handler {
    uint32_t generation;
    FdCallback cb;
  };
  struct Timer {
    MonoClock::time_point due;
    TimerCallback cb;
  };
  int TimeoutMillis(Millis max_wait) const;
  void RunDueTimers();

  UniqueFd epoll_fd_;
  uint32_t next_generation_ = 1;
  std::unordered_map<int, std::shared_ptr<Handler>> handlers_;
  TimerId next_timer_ = 1;
  std::map<TimerId, Timer> timers_;
  std::multimap<MonoClock::time_point, TimerId> timer_queue_;
  bool stopped_ = false;
};

}  // namespace elastic
