#include "launcher/worker_output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        poll(&p, 1, -1);
        continue;
      }
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

WorkerOutput::WorkerOutput(EventLoop& loop, std::string prefix, int console_fd, UniqueFd file)
    : loop_(loop), splitter_(std::move(prefix)), console_fd_(console_fd), file_(std::move(file)) {}

WorkerOutput::~WorkerOutput() {
  if (read_end_) loop_.Remove(read_end_.get());
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
  if (eof) Close();
}

bool WorkerOutput::ReadOnce(bool* eof) {
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
  return true;
}

void WorkerOutput::Emit(const char* data, size_t size) {
  if (captured_.size() < capture_limit_) {
    captured_.append(data, std::min(size, capture_limit_ - captured_.size()));
  }
  if (file_ && !WriteAll(file_.get(), data, size)) file_.Reset();
  if (console_fd_ < 0) return;
  pending_.clear();
  splitter_.Feed(std::string_view(data, size), &pending_);
  WriteConsole(pending_);
}

void WorkerOutput::WriteConsole(const std::string& text) {
  if (text.empty() || console_fd_ < 0) return;
  // A closed console (EPIPE: `elasticrun ... | head`) stops console output, not the run.
  if (!WriteAll(console_fd_, text.data(), text.size())) console_fd_ = -1;
}

void WorkerOutput::Drain() {
  bool eof = false;
  while (ReadOnce(&eof)) {
  }
  if (eof) Close();
}

void WorkerOutput::Close() {
  if (read_end_) {
    loop_.Remove(read_end_.get());
    bool eof = false;
    while (ReadOnce(&eof)) {
    }
    read_end_.Reset();
  }
  pending_.clear();
  splitter_.Finish(&pending_);
  WriteConsole(pending_);
  file_.Reset();
  write_end_.Reset();
}

}  // namespace elastic
