// Console: the agent's stdout or stderr as the workers' output (and the agent's
// own log lines) reach it, written from the event loop without ever waiting.
//
// A task's stdout under srun is a pipe to slurmstepd; when srun's side is slow or
// stopped the pipe fills. Text the console does not take at once stays queued
// (ConsoleQueue: whole lines, in order, at most `limit` bytes per source); the
// loop writes it when the console turns writable (EPOLLOUT). A source over its
// limit is told to stop reading its worker's pipe; `on_room` tells it to resume.
//
// Non-blocking writes without changing what other processes see: a pipe or a
// terminal is reopened through /proc/self/fd (a description of our own, with
// O_NONBLOCK); a socket is written with MSG_DONTWAIT. When the reopen is refused
// (a pipe that slurmstepd created as root), the shared description gets
// O_NONBLOCK and its flags are restored by the destructor. A regular file is
// written as it is (a write to a file does not wait for a reader).
//
// Contracts: the loop outlives the Console; the Console outlives its sources
// (WorkerOutput); it does not own `fd`.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "launcher/console_queue.h"

namespace elastic {

class Console {
 public:
  // What each source may hold before it is paused; 1 MiB per worker stream.
  static constexpr size_t kDefaultLimit = 1 << 20;

  Console(EventLoop& loop, int fd, size_t limit = kDefaultLimit);
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;

  // A new source; `on_room` runs (on the loop) when it was over its limit and no
  // longer is. RemoveSource forgets the callback; its queued text is still written.
  int AddSource(std::function<void()> on_room);
  void RemoveSource(int source);
  // Queues `text` and writes what the console takes now. Returns false when the
  // source is now over its limit: its reader must stop reading until on_room.
  bool Write(int source, std::string text);
  bool over_limit(int source) const { return queue_.over_limit(source); }
  size_t queued() const { return queue_.queued(); }
  bool closed() const { return queue_.closed(); }

  // At exit, when the loop no longer runs: writes what is queued until `deadline`
  // on `clock` (the loop's), then discards the rest. Returns the bytes dropped.
  size_t DrainUntil(MonoClock::time_point deadline, const Clock& clock);

 private:
  ssize_t WriteSome(const char* data, size_t size);
  void Flush();
  void WatchWritable(bool on);

  EventLoop& loop_;
  int fd_;               // the console as given (1 or 2)
  int write_fd_;         // where writes go: fd_ or own_
  UniqueFd own_;         // our own non-blocking description of a pipe or terminal
  bool socket_ = false;  // send(MSG_DONTWAIT)
  int restore_flags_ = -1;  // the shared description's flags, when we changed them
  bool watching_ = false;
  ConsoleQueue queue_;
  int next_source_ = 1;
  std::map<int, std::function<void()>> sources_;
};

}  // namespace elastic
