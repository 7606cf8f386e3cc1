#include "launcher/worker_output.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>

namespace elastic {
namespace {
constexpr size_t kReadSize = 64 * 1024;
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

WorkerOutput::WorkerOutput(EventLoop& loop, std::string prefix, Console* console, UniqueFd file,
                           std::shared_ptr<DuplicateSink> duplicate)
    : loop_(loop),
      splitter_(prefix),
      console_(console),
      duplicate_(std::move(duplicate)),
      duplicate_splitter_(prefix),
      prefix_size_(prefix.size()),
      file_(std::move(file)) {
  if (console_) source_ = console_->AddSource([this] { Resume(); });
}

WorkerOutput::~WorkerOutput() {
  if (read_end_ && !paused_) loop_.Remove(read_end_.get());
  if (console_) console_->RemoveSource(source_);
}

bool WorkerOutput::Open(std::string* err) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *err = fmt::format("pipe: {}", strerror(errno));
    return false;
  }
  read_end_.Reset(fds[0]);
  write_end_.Reset(fds[1]);
  fcntl(read_end_.get(), F_SETFL, fcntl(read_end_.get(), F_GETFL) | O_NONBLOCK);
  return loop_.Add(read_end_.get(), EPOLLIN, [this](uint32_t) { OnReadable(); }, err);
}

void WorkerOutput::OnReadable() {
  bool eof = false;
  ReadOnce(&eof);
  if (eof) {
    Close();
  } else if (console_ && console_->over_limit(source_)) {
    Pause();
  }
}

// Out of the loop while paused (not EPOLL interest 0: a pipe whose writer is gone
// would report EPOLLHUP on every turn).
void WorkerOutput::Pause() {
  if (paused_ || !read_end_) return;
  loop_.Remove(read_end_.get());
  paused_ = true;
}

void WorkerOutput::Resume() {
  if (!paused_ || !read_end_) return;
  paused_ = false;
  std::string err;
  if (!loop_.Add(read_end_.get(), EPOLLIN, [this](uint32_t) { OnReadable(); }, &err)) {
    paused_ = true;  // cannot happen short of ENOMEM; Drain/Close still read it
  }
}

bool WorkerOutput::ReadOnce(bool* eof, size_t* got) {
  if (!read_end_) return false;
  char buf[kReadSize];
  ssize_t n;
  do {
    n = read(read_end_.get(), buf, sizeof(buf));
  } while (n < 0 && errno == EINTR);
  if (n == 0 || (n < 0 && errno != EAGAIN)) {
    *eof = true;
    return false;
  }
  if (n < 0) return false;
  Emit(buf, static_cast<size_t>(n));
  if (got) *got += static_cast<size_t>(n);
  return true;
}

// Everything in the pipe now, but no more than its capacity past the console's
// limit: a process that escaped the worker's group and still writes cannot make
// this loop forever or the queue grow without bound.
void WorkerOutput::ReadAvailable(bool* eof) {
  int capacity = fcntl(read_end_.get(), F_GETPIPE_SZ);
  size_t budget = capacity > 0 ? static_cast<size_t>(capacity) : kReadSize;
  size_t read_past_limit = 0;
  while (true) {
    bool over = console_ && console_->over_limit(source_);
    if (over && read_past_limit >= budget) break;
    if (!ReadOnce(eof, over ? &read_past_limit : nullptr)) break;
  }
}

void WorkerOutput::Emit(const char* data, size_t size) {
  if (captured_.size() < capture_limit_) {
    captured_.append(data, std::min(size, capture_limit_ - captured_.size()));
  }
  if (file_ && !WriteAll(file_.get(), data, size)) file_.Reset();
  if (duplicate_) {
    std::string lines;
    duplicate_splitter_.Feed(std::string_view(data, size), &lines);
    if (!lines.empty()) duplicate_->Write(lines, prefix_size_);
  }
  if (!console_) return;
  std::string lines;
  splitter_.Feed(std::string_view(data, size), &lines);
  if (!lines.empty()) console_->Write(source_, std::move(lines));
}

void WorkerOutput::Drain() {
  if (!read_end_) return;
  bool eof = false;
  ReadAvailable(&eof);
  if (eof) Close();
}

void WorkerOutput::Close() {
  if (read_end_) {
    if (!paused_) loop_.Remove(read_end_.get());
    paused_ = false;
    bool eof = false;
    ReadAvailable(&eof);
    read_end_.Reset();
  }
  if (console_) {
    std::string last;
    splitter_.Finish(&last);
    if (!last.empty()) console_->Write(source_, std::move(last));
  }
  if (duplicate_) {
    std::string last;
    duplicate_splitter_.Finish(&last);
    if (!last.empty()) duplicate_->Write(last, prefix_size_);
  }
  file_.Reset();
  write_end_.Reset();
}

}  // namespace elastic
