// PyTorch's FileTimerClient requests (torch/distributed/elastic/timer/
// file_based_local_timer.py, the same in 1.13 and 2.x): one JSON object per
// line, written to the named pipe of TORCHELASTIC_TIMER_FILE in one write of at
// most PIPE_BUF bytes plus the newline:
//   {"version": 1, "pid": 4242, "scope_id": "train.py#17", "expiration_time": 1764590000.5, "signal": 9}
// expiration_time is on the wall clock (time.time(), seconds); a negative one
// releases the timer (pid, scope_id). signal <= 0 asks for no kill on expiry.
//
// This is the only parser of those lines (the named pipe is an outside input:
// any process of the user can write to it), and TimerTable is the pure state
// of the timers it set, keyed by (pid, scope_id) as FileTimerServer keys them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace elastic {

// PIPE_BUF: FileTimerClient refuses longer requests (the write is then atomic).
constexpr size_t kMaxFileTimerRequest = 4096;

struct FileTimerRequest {
  int version = 1;
  pid_t pid = 0;
  std::string scope_id;
  double expiration_time = 0;  // wall clock, seconds since the epoch; < 0: release
  int signal = 0;              // <= 0: do not kill on expiry
  bool release() const { return expiration_time < 0; }
};

// Parses one line (without its newline). False with *err naming the bad field
// and value: not JSON, not an object, a missing field, pid not a positive
// integer, scope_id not a string or longer than the line limit, expiration_time
// not a finite number, signal not an integer in [-64, 64], version not 1.
bool ParseFileTimerRequest(std::string_view line, FileTimerRequest* out, std::string* err);

// A timer that expired: the one of its pid with the earliest expiration among
// those that ask for a signal, as FileTimerServer picks it (signal 0 when none
// of that pid's expired timers asks for one).
struct ExpiredTimer {
  pid_t pid = 0;
  std::string scope_id;
  double expiration_time = 0;
  int signal = 0;
};

class TimerTable {
 public:
  enum class Applied { kSet, kReleased, kNotHeld, kFull };
  explicit TimerTable(size_t max_timers) : max_timers_(max_timers) {}

  // Sets or releases (negative expiration) the timer (pid, scope_id). A new
  // timer beyond max_timers is refused (kFull); replacing one is not.
  Applied Apply(const FileTimerRequest& request);
  // The earliest expiration time held, if any.
  std::optional<double> Earliest() const;
  // Every pid with a timer expired at `now` (expiration <= now): one entry per
  // pid, and all of that pid's timers are removed (FileTimerServer.clear_timers).
  std::vector<ExpiredTimer> TakeExpired(double now);
  void ErasePid(pid_t pid);
  void Clear() { timers_.clear(); }
  size_t size() const { return timers_.size(); }

 private:
  struct Timer {
    double expiration_time;
    int signal;
  };
  size_t max_timers_;
  std::map<std::pair<pid_t, std::string>, Timer> timers_;
};

}  // namespace elastic
