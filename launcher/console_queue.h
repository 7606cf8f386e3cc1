// ConsoleQueue: what the agent has to write to one console (its stdout or its
// stderr) and the console has not taken yet. Pure: the write is injected, so the
// rules are unit tested as a table (console_queue_test.cc); Console (console.h)
// is the shell that writes it from the event loop.
//
// Rules:
// - Text is pushed per source (one stream of one worker, or the agent's own log)
//   in chunks of whole lines and written in the order pushed, whatever the source.
//   A chunk written in part is finished before the next one starts, so the lines of
//   a source are never reordered nor cut by another source's text.
// - A source may hold `limit` bytes. At or past it, over_limit(source) is true: its
//   reader stops reading (the worker then blocks on its own write, as under
//   torchrun) until Flush makes room, which it reports in *room.
// - A write that takes nothing (EAGAIN) leaves everything queued: the shell waits
//   until the console is writable. EINTR is retried.
// - Any other error (EPIPE: `elasticrun ... | head`) closes the queue: what is
//   queued and all that is pushed later is discarded, and nothing is over its limit.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace elastic {

class ConsoleQueue {
 public:
  // Like write(2): bytes taken, or -1 with errno set.
  using WriteFn = std::function<ssize_t(const char* data, size_t size)>;
  enum class Flushed { kEmpty, kBlocked, kClosed };

  explicit ConsoleQueue(size_t limit) : limit_(limit) {}

  void Push(int source, std::string text);
  // Writes queued text until the queue is empty, the console is full or it failed.
  // Appends to *room (may be null) the sources that were over their limit before
  // and are not any more.
  Flushed Flush(const WriteFn& write, std::vector<int>* room);
  // Forgets everything queued (at exit, past the drain time): the bytes dropped.
  size_t Discard();

  size_t queued() const { return total_; }
  size_t queued(int source) const;
  bool over_limit(int source) const { return !closed_ && queued(source) >= limit_; }
  bool empty() const { return chunks_.empty(); }
  bool closed() const { return closed_; }
  size_t limit() const { return limit_; }

 private:
  struct Chunk {
    int source;
    std::string text;
  };
  size_t limit_;
  std::deque<Chunk> chunks_;
  size_t offset_ = 0;  // bytes of chunks_.front() already written
  std::map<int, size_t> per_source_;
  size_t total_ = 0;
  bool closed_ = false;
};

}  // namespace elastic
