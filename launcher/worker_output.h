// WorkerOutput: one stream (stdout or stderr) of one worker. The worker writes
// into a pipe; the agent reads it on the event loop and writes
//   - whole lines prefixed "[rankN]: " to its console (Console: its own stdout or
//     stderr, never waiting), unless the stream is redirected or the rank filtered out;
//   - the bytes exactly as written to the per-attempt log file (--tee/--redirects).
// Backpressure: when the console holds Console::kDefaultLimit bytes of this stream
// that it could not write yet, the agent stops reading the pipe (the worker blocks
// on its own write once the pipe is full) and reads again once the console took
// them; everything else on the loop goes on.
// Nothing is lost: after the worker exits the agent drains the pipe (Drain: at most
// one pipe's worth past the limit), and Close() queues a last line without newline.
#pragma once

#include <memory>
#include <string>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "launcher/console.h"
#include "launcher/duplicate_filter.h"
#include "launcher/line_splitter.h"

namespace elastic {

class WorkerOutput {
 public:
  // console: where the lines go, or null for none (it must outlive this). file:
  // open log file, or invalid for none. duplicate: this attempt's
  // --duplicate-std*-filters file (shared by the workers), or null.
  WorkerOutput(EventLoop& loop, std::string prefix, Console* console, UniqueFd file,
               std::shared_ptr<DuplicateSink> duplicate = nullptr);
  ~WorkerOutput();
  WorkerOutput(const WorkerOutput&) = delete;
  WorkerOutput& operator=(const WorkerOutput&) = delete;

  // Creates the pipe and starts reading. child_fd() is the write end for the child.
  bool Open(std::string* err);
  int child_fd() const { return write_end_.get(); }
  // After fork: the agent's copy of the write end must go, or EOF never comes.
  void CloseChildEnd() { write_end_.Reset(); }

  // Reads what is in the pipe now (the writer exited: everything it wrote is there),
  // paused or not: at most one pipe's capacity past the console's limit.
  void Drain();
  // Drain, queue the partial last line, stop reading, close.
  void Close();
  // Not reading the pipe because the console holds too much of this stream.
  bool paused() const { return paused_; }

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
  bool ReadOnce(bool* eof, size_t* got = nullptr);
  void ReadAvailable(bool* eof);
  void Emit(const char* data, size_t size);
  void Pause();
  void Resume();

  EventLoop& loop_;
  LineSplitter splitter_;
  Console* console_;
  std::shared_ptr<DuplicateSink> duplicate_;
  LineSplitter duplicate_splitter_;  // its own: the console may be off for this rank
  size_t prefix_size_ = 0;
  int source_ = 0;
  UniqueFd file_;
  UniqueFd read_end_;
  UniqueFd write_end_;
  bool paused_ = false;
  size_t capture_limit_ = 0;
  std::string captured_;
};

// write(2) everything to a regular file (a log file: no reader to wait for).
bool WriteAll(int fd, const char* data, size_t size);

}  // namespace elastic
