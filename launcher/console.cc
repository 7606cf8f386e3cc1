#include "launcher/console.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>
#include <vector>

namespace elastic {

Console::Console(EventLoop& loop, int fd, size_t limit) : loop_(loop), fd_(fd), write_fd_(fd), queue_(limit) {
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) return;  // writes fail: the queue closes
  if (S_ISSOCK(st.st_mode)) {
    socket_ = true;
    return;
  }
  if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) return;  // a file: writes do not wait
  own_.Reset(open(fmt::format("/proc/self/fd/{}", fd).c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  if (own_) {
    write_fd_ = own_.get();
    return;
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0 && !(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0) {
    restore_flags_ = flags;
  }
}

Console::~Console() {
  WatchWritable(false);
  if (restore_flags_ >= 0) fcntl(fd_, F_SETFL, restore_flags_);
}

int Console::AddSource(std::function<void()> on_room) {
  int id = next_source_++;
  sources_[id] = std::move(on_room);
  return id;
}

void Console::RemoveSource(int source) { sources_.erase(source); }

bool Console::Write(int source, std::string text) {
  queue_.Push(source, std::move(text));
  if (!watching_) Flush();  // else the loop writes once the console takes more
  return !queue_.over_limit(source);
}

ssize_t Console::WriteSome(const char* data, size_t size) {
  if (socket_) return send(write_fd_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
  return write(write_fd_, data, size);
}

void Console::Flush() {
  std::vector<int> room;
  auto result = queue_.Flush([this](const char* d, size_t n) { return WriteSome(d, n); }, &room);
  WatchWritable(result == ConsoleQueue::Flushed::kBlocked);
  for (int source : room) {
    auto it = sources_.find(source);
    if (it != sources_.end() && it->second) it->second();
  }
}

void Console::WatchWritable(bool on) {
  if (on == watching_) return;
  if (!on) {
    loop_.Remove(write_fd_);
    watching_ = false;
    return;
  }
  std::string err;
  // Level-triggered EPOLLOUT; EPOLLERR/EPOLLHUP (reader gone) come too, and the
  // write that follows fails with EPIPE, which closes the queue.
  watching_ = loop_.Add(write_fd_, EPOLLOUT, [this](uint32_t) { Flush(); }, &err);
}

size_t Console::DrainUntil(MonoClock::time_point deadline, const Clock& clock) {
  WatchWritable(false);
  while (!queue_.empty()) {
    auto result = queue_.Flush([this](const char* d, size_t n) { return WriteSome(d, n); }, nullptr);
    if (result != ConsoleQueue::Flushed::kBlocked) break;
    auto left = std::chrono::ceil<Millis>(deadline - clock.Now()).count();
    if (left <= 0) break;
    pollfd p{write_fd_, POLLOUT, 0};
    poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
  }
  return queue_.Discard();
}

}  // namespace elastic
