#include "common/event_loop.h"

#include <errno.h>
#include <string.h>

#include <algorithm>
#include <vector>

namespace elastic {
namespace {

uint64_t Pack(int fd, uint32_t generation) {
  return (uint64_t{generation} << 32) | static_cast<uint32_t>(fd);
}

}  // namespace

Timer::Timer(Timer&& other) noexcept : loop_(other.loop_), id_(other.id_) {
  other.loop_ = nullptr;
  other.id_ = 0;
}

Timer& Timer::operator=(Timer&& other) noexcept {
  if (this != &other) {
    Cancel();
    loop_ = other.loop_;
    id_ = other.id_;
    other.loop_ = nullptr;
    other.id_ = 0;
  }
  return *this;
}

void Timer::Cancel() {
  if (loop_) loop_->CancelTimer(id_);
  loop_ = nullptr;
  id_ = 0;
}

bool Timer::armed() const { return loop_ && loop_->TimerArmed(id_); }

EventLoop::EventLoop(const Clock& clock) : clock_(clock), epoll_fd_(epoll_create1(EPOLL_CLOEXEC)) {}

bool EventLoop::Add(int fd, uint32_t events, FdCallback cb, std::string* err) {
  auto handler = std::make_shared<Handler>(Handler{next_generation_++, std::move(cb)});
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = Pack(fd, handler->generation);
  int op = handlers_.count(fd) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
  if (epoll_ctl(epoll_fd_.get(), op, fd, &ev) != 0) {
    if (err) *err = std::string("epoll_ctl(add fd ") + std::to_string(fd) + "): " + strerror(errno);
    return false;
  }
  handlers_[fd] = std::move(handler);
  return true;
}

bool EventLoop::Modify(int fd, uint32_t events, std::string* err) {
  auto it = handlers_.find(fd);
  if (it == handlers_.end()) {
    if (err) *err = "fd " + std::to_string(fd) + " is not registered";
    return false;
  }
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = Pack(fd, it->second->generation);
  if (epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, fd, &ev) != 0) {
    if (err) *err = std::string("epoll_ctl(mod): ") + strerror(errno);
    return false;
  }
  return true;
}

void EventLoop::Remove(int fd) {
  if (handlers_.erase(fd) == 0) return;
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void EventLoop::Post(TimerCallback cb) {
  posted_.emplace(next_post_++, PostedEntry{kNoOwner, std::move(cb)});
}

Posted::Posted(EventLoop& loop) : loop_(loop), owner_(loop.next_post_owner_++) {}

void Posted::Post(std::function<void()> cb) {
  loop_.posted_.emplace(loop_.next_post_++, EventLoop::PostedEntry{owner_, std::move(cb)});
}

void Posted::Cancel() {
  std::erase_if(loop_.posted_, [this](const auto& entry) { return entry.second.owner == owner_; });
}

bool Posted::pending() const {
  return std::any_of(loop_.posted_.begin(), loop_.posted_.end(),
                     [this](const auto& entry) { return entry.second.owner == owner_; });
}

Timer EventLoop::After(Millis delay, TimerCallback cb) {
  return Timer(this, Schedule(delay, Millis(0), std::move(cb)));
}

Timer EventLoop::Every(Millis period, TimerCallback cb) {
  period = std::max(period, Millis(1));
  return Timer(this, Schedule(period, period, std::move(cb)));
}

EventLoop::TimerId EventLoop::Schedule(Millis delay, Millis period, TimerCallback cb) {
  TimerId id = next_timer_++;
  auto due = Now() + std::max(delay, Millis(0));
  timers_.emplace(id, TimerEntry{due, period, std::make_shared<TimerCallback>(std::move(cb))});
  timer_queue_.emplace(due, id);
  return id;
}

void EventLoop::Unqueue(TimerId id, MonoClock::time_point due) {
  auto [lo, hi] = timer_queue_.equal_range(due);
  for (auto q = lo; q != hi; ++q) {
    if (q->second == id) {
      timer_queue_.erase(q);
      return;
    }
  }
}

void EventLoop::CancelTimer(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  Unqueue(id, it->second.due);
  timers_.erase(it);
}

std::optional<MonoClock::time_point> EventLoop::NextTimerDue() const {
  if (timer_queue_.empty()) return std::nullopt;
  return timer_queue_.begin()->first;
}

int EventLoop::TimeoutMillis(Millis max_wait) const {
  long long timeout = max_wait.count() < 0 ? -1 : max_wait.count();
  if (!posted_.empty()) return 0;
  if (!timer_queue_.empty()) {
    long long until = std::chrono::ceil<Millis>(timer_queue_.begin()->first - Now()).count();
    until = std::max<long long>(until, 0);
    timeout = timeout < 0 ? until : std::min(timeout, until);
  }
  return static_cast<int>(std::min<long long>(timeout, 1 << 30));
}

void EventLoop::RunDueTimers() {
  auto now = Now();
  // Collect first: callbacks may add timers that are already due; those run next turn.
  std::vector<TimerId> due;
  for (auto it = timer_queue_.begin(); it != timer_queue_.end() && it->first <= now; ++it) {
    due.push_back(it->second);
  }
  for (TimerId id : due) {
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;  // cancelled by an earlier callback
    std::shared_ptr<TimerCallback> cb = it->second.cb;
    TimerEntry& t = it->second;
    Unqueue(id, t.due);
    if (t.period.count() > 0) {
      // Next due time from the previous one; past ones are skipped, not run in a burst.
      auto missed = (now - t.due) / t.period;
      t.due += t.period * (missed + 1);
      timer_queue_.emplace(t.due, id);
    } else {
      timers_.erase(it);
    }
    (*cb)();
  }
}

void EventLoop::RunPosted() {
  // Only what was posted before this phase: a callback that posts again runs
  // next turn. One at a time, so a callback may cancel those after it.
  uint64_t end = next_post_;
  while (!posted_.empty() && posted_.begin()->first < end) {
    TimerCallback cb = std::move(posted_.begin()->second.cb);
    posted_.erase(posted_.begin());
    cb();
  }
}

bool EventLoop::RunOnce(Millis max_wait) {
  epoll_event events[64];
  int n = epoll_wait(epoll_fd_.get(), events, 64, TimeoutMillis(max_wait));
  if (n < 0) return errno == EINTR;
  for (int i = 0; i < n; ++i) {
    int fd = static_cast<int>(events[i].data.u64 & 0xffffffffu);
    uint32_t generation = static_cast<uint32_t>(events[i].data.u64 >> 32);
    auto it = handlers_.find(fd);
    // Skip fds removed (or removed and re-added) by an earlier callback of this batch.
    if (it == handlers_.end() || it->second->generation != generation) continue;
    auto handler = it->second;  // keeps the callback alive if it removes itself
    handler->cb(events[i].events);
  }
  RunDueTimers();
  RunPosted();
  return true;
}

void EventLoop::Run() {
  stopped_ = false;
  while (!stopped_) {
    if (!RunOnce()) break;
  }
}

}  // namespace elastic
