// FileTimerServer: the agent's side of PyTorch's named-pipe watchdog
// (torch.distributed.elastic.timer.FileTimerServer), so that unchanged worker
// code using FileTimerClient / expires(after=...) works under elasticrun as it
// does under torchrun with TORCHELASTIC_ENABLE_FILE_TIMER=1.
//
// Contracts:
// - Start() makes the FIFO (mode 0600; an existing file at the path is removed
//   first, as PyTorch does) and opens it O_RDWR | O_NONBLOCK: the agent is
//   always a reader, so clients' non-blocking opens succeed, and being a writer
//   too it never sees the end-of-file storm of a FIFO whose last writer left.
//   The destructor removes the FIFO.
// - Everything runs on the agent's event loop: lines are read as they come,
//   one read per readiness, no blocking. Bounded: a line longer than
//   kMaxFileTimerRequest is dropped up to its newline, at most `max_timers`
//   timers are held, bad requests are logged rate-limited.
// - One loop timer is armed for the earliest expiration. Expiration times are
//   wall-clock (the clients use time.time()); the delay until one is measured
//   on the wall clock, the waiting is done on the monotonic one, and an early
//   wake (the wall clock stepped back) simply re-arms.
// - on_expired is called once per pid whose timer expired, and that pid's
//   timers are dropped (PyTorch's behaviour). What to do about it is the
//   caller's business (the agent: collect stacks, stop the group).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/event_loop.h"
#include "common/log_limit.h"
#include "common/unique_fd.h"
#include "launcher/file_timer_request.h"

namespace elastic {

class FileTimerServer {
 public:
  using WallClock = std::function<double()>;  // seconds since the epoch
  using OnExpired = std::function<void(const ExpiredTimer&)>;

  FileTimerServer(EventLoop& loop, std::string path, OnExpired on_expired, size_t max_timers = 1024,
                  WallClock wall_clock = nullptr);
  ~FileTimerServer();
  FileTimerServer(const FileTimerServer&) = delete;
  FileTimerServer& operator=(const FileTimerServer&) = delete;

  bool Start(std::string* err);
  const std::string& path() const { return path_; }
  // Drops every timer (a new attempt: the old workers are gone).
  void Clear();
  size_t timers() const { return table_.size(); }
  // Feeds bytes as if read from the pipe (the reader calls it; tests too).
  void Feed(std::string_view bytes);

 private:
  void OnReadable();
  void HandleLine(std::string_view line);
  void Rearm();
  void OnTimer();

  EventLoop& loop_;
  std::string path_;
  OnExpired on_expired_;
  WallClock wall_clock_;
  TimerTable table_;
  UniqueFd fd_;
  bool made_fifo_ = false;
  std::string partial_;
  bool skipping_ = false;   // inside an over-long line: drop up to its newline
  Timer timer_;  // the earliest expiration
  LogRateLimiter bad_requests_;
};

}  // namespace elastic
