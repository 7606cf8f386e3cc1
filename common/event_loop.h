// EventLoop: a small single-threaded reactor in the shape of redis' ae.c.
// File events come from epoll; timers are kept on an injected monotonic Clock
// (common/clock.h; a FakeClock in tests) and turned into epoll_wait's
// timeout, so nothing ever sleep-polls.
//
// One turn of the loop (RunOnce): wait for fd events (no longer than the next
// timer, not at all when something is posted), run their callbacks, then the
// timers that are due, then what was posted before this phase began.
//
// Contracts:
// - The loop does not own registered fds; the caller closes them after Remove().
// - Callbacks may add/remove fds and timers (including their own) while running.
// - Post() is how an object hands a result to its owner without running the
//   owner's code inside its own frame: the owner may then destroy it freely.
//   An object whose posted callbacks capture `this` posts them through a
//   Posted member instead: destroying it drops those not yet run, so no
//   callback outlives its owner (and no liveness flag is needed).
// - A Timer handle cancels its timer when destroyed or reset; the loop must
//   outlive the handles (Timer, Posted) it gave out.
// - Not thread-safe: one loop per thread (our agents are single-threaded).
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "common/unique_fd.h"

namespace elastic {

class EventLoop;

// A scheduled timer, owned: destroying, resetting or reassigning the handle
// cancels it. An empty handle (default, or after the timer fired) is inert.
class Timer {
 public:
  Timer() = default;
  Timer(Timer&& other) noexcept;
  Timer& operator=(Timer&& other) noexcept;
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  ~Timer() { Cancel(); }

  void Cancel();
  // True while the timer is scheduled (a periodic one until cancelled).
  bool armed() const;

 private:
  friend class EventLoop;
  Timer(EventLoop* loop, uint64_t id) : loop_(loop), id_(id) {}
  EventLoop* loop_ = nullptr;
  uint64_t id_ = 0;
};

// Callbacks posted on behalf of one owner, usually a member of it: destroying
// the handle (or Cancel()) drops those not yet run. They run like Post()'s, in
// the order posted. Not movable: it names its owner's posts for its lifetime.
class Posted {
 public:
  explicit Posted(EventLoop& loop);
  Posted(const Posted&) = delete;
  Posted& operator=(const Posted&) = delete;
  ~Posted() { Cancel(); }

  void Post(std::function<void()> cb);
  void Cancel();
  // True while a callback posted through this handle has not run yet.
  bool pending() const;

 private:
  EventLoop& loop_;
  uint64_t owner_;
};

class EventLoop {
 public:
  using FdCallback = std::function<void(uint32_t epoll_events)>;
  using TimerCallback = std::function<void()>;
  using TimerId = uint64_t;

  explicit EventLoop(const Clock& clock = SteadyClock());
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Registers fd for `events` (EPOLLIN, EPOLLOUT, ...). Replaces any existing
  // registration of the same fd. Returns false with *err on failure.
  bool Add(int fd, uint32_t events, FdCallback cb, std::string* err);
  bool Modify(int fd, uint32_t events, std::string* err);
  void Remove(int fd);
  bool Watching(int fd) const { return handlers_.count(fd) != 0; }

  // Now on the loop's clock: what timers and the logic on the loop compare against.
  MonoClock::time_point Now() const { return clock_.Now(); }
  const Clock& clock() const { return clock_; }

  // Runs `cb` on this loop's next turn, after that turn's fd events and
  // timers, in the order posted. `cb` must not outlive what it captures:
  // an owner that may be destroyed first posts through a Posted member.
  void Post(TimerCallback cb);

  // A one-shot timer `delay` from now, cancelled with its handle.
  [[nodiscard]] Timer After(Millis delay, TimerCallback cb);
  // A periodic timer: first `period` from now, then every `period` after the
  // previous due time (no drift; a late turn runs it once, not once per
  // missed period). Runs until its handle cancels it.
  [[nodiscard]] Timer Every(Millis period, TimerCallback cb);

  // When the earliest timer is due (none: nullopt). Tests step a FakeClock
  // from one timer to the next with it.
  std::optional<MonoClock::time_point> NextTimerDue() const;

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
  friend class Posted;
  friend class Timer;  // timers are cancelled through their handles only
  void CancelTimer(TimerId id);
  bool TimerArmed(TimerId id) const { return timers_.count(id) != 0; }
  static constexpr uint64_t kNoOwner = 0;
  struct PostedEntry {
    uint64_t owner;  // a Posted handle's, or kNoOwner
    TimerCallback cb;
  };
  struct TimerEntry {
    MonoClock::time_point due;
    Millis period;  // zero: one-shot
    std::shared_ptr<TimerCallback> cb;  // shared: kept alive while it runs
  };
  TimerId Schedule(Millis delay, Millis period, TimerCallback cb);
  void Unqueue(TimerId id, MonoClock::time_point due);
  int TimeoutMillis(Millis max_wait) const;
  void RunDueTimers();
  void RunPosted();

  const Clock& clock_;
  UniqueFd epoll_fd_;
  uint32_t next_generation_ = 1;
  std::unordered_map<int, std::shared_ptr<Handler>> handlers_;
  TimerId next_timer_ = 1;
  std::map<TimerId, TimerEntry> timers_;
  std::multimap<MonoClock::time_point, TimerId> timer_queue_;
  // Posted callbacks by sequence number: in the order posted, any one cancellable.
  std::map<uint64_t, PostedEntry> posted_;
  uint64_t next_post_ = 1;
  uint64_t next_post_owner_ = kNoOwner + 1;
  bool stopped_ = false;
};

}  // namespace elastic
