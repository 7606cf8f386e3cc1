// WorkerOutput: one stream (stdout or stderr) of one worker. The worker writes
// into a pipe; the agent reads it on the event loop and writes
//   - whole lines prefixed "[rankN]: " to its own stdout/stderr (the console),
//     unless the stream is redirected or the rank filtered out;
//   - the bytes exactly as written to the per-attempt log file (--tee/--redirects).
// Nothing is lost: after the worker exits the agent drains the pipe (Drain), and
// Close() flushes a last line without newline.
#pragma once

#include <string>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "launcher/line_splitter.h"

namespace elastic {

class WorkerOutput {
 public:
  // console_fd: 1 or 2, or -1 for none. file: open log file, or invalid for none.
  WorkerOutput(EventLoop& loop, std::string prefix, int console_fd, UniqueFd file);
  ~WorkerOutput();
  WorkerOutput(const WorkerOutput&) = delete;
  WorkerOutput& operator=(const WorkerOutput&) = delete;

  // Creates the pipe and starts reading. child_fd() is the write end for the child.
  bool Open(std::string* err);
  int child_fd() const { return write_end_.get(); }
  // After fork: the agent's copy of the write end must go, or EOF never comes.
  void CloseChildEnd() { write_end_.Reset(); }

  // Reads all that is in the pipe now (the writer exited: everything it wrote is there).
  void Drain();
  // Drain, flush the partial last line, stop reading, close.
  void Close();

  // Also keeps the first `limit` bytes written from now on (a hung worker's
  // stacks after SIGABRT: hung_worker.h).
  void StartCapture(size_t limit) {
    capture_limit_ = limit;
    captured_.clear();
  }
  const std::string& captured() const { return captured_; }

 private:
  void OnReadable();
  // Reads once; false at EOF or when nothing is left (EAGAIN) or on error.
  bool ReadOnce(bool* eof);
  void Emit(const char* data, size_t size);
  void WriteConsole(const std::string& text);

  EventLoop& loop_;
  LineSplitter splitter_;
  int console_fd_;
  UniqueFd file_;
  UniqueFd read_end_;
  UniqueFd write_end_;
  std::string pending_;  // console text of one read, written in one go
  size_t capture_limit_ = 0;
  std::string captured_;
};

// write(2) everything, waiting (poll, not sleeping) if the fd is non-blocking and full.
bool WriteAll(int fd, const char* data, size_t size);

}  // namespace elastic
