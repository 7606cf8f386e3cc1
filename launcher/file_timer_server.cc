#include "launcher/file_timer_server.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "common/log.h"

namespace elastic {
namespace {

double SystemWallClock() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

FileTimerServer::FileTimerServer(EventLoop& loop, std::string path, OnExpired on_expired,
                                 size_t max_timers, WallClock wall_clock)
    : loop_(loop),
      path_(std::move(path)),
      on_expired_(std::move(on_expired)),
      wall_clock_(wall_clock ? std::move(wall_clock) : WallClock(SystemWallClock)),
      table_(max_timers) {}

FileTimerServer::~FileTimerServer() {
  timer_.Cancel();
  if (fd_) loop_.Remove(fd_.get());
  if (made_fifo_) unlink(path_.c_str());
}

bool FileTimerServer::Start(std::string* err) {
  struct stat st {};
  if (lstat(path_.c_str(), &st) == 0 && unlink(path_.c_str()) != 0) {
    *err = fmt::format("TORCHELASTIC_TIMER_FILE: cannot replace '{}': {}", path_, strerror(errno));
    return false;
  }
  if (mkfifo(path_.c_str(), 0600) != 0) {
    *err = fmt::format("TORCHELASTIC_TIMER_FILE: mkfifo '{}': {}", path_, strerror(errno));
    return false;
  }
  made_fifo_ = true;
  fd_.Reset(open(path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
  if (!fd_) {
    *err = fmt::format("TORCHELASTIC_TIMER_FILE: open '{}': {}", path_, strerror(errno));
    return false;
  }
  return loop_.Add(fd_.get(), EPOLLIN, [this](uint32_t) { OnReadable(); }, err);
}

void FileTimerServer::Clear() {
  table_.Clear();
  Rearm();
}

void FileTimerServer::OnReadable() {
  char buf[16 * 1024];
  ssize_t n;
  do {
    n = read(fd_.get(), buf, sizeof(buf));
  } while (n < 0 && errno == EINTR);
  if (n > 0) Feed(std::string_view(buf, static_cast<size_t>(n)));
}

void FileTimerServer::Feed(std::string_view bytes) {
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view piece = bytes.substr(0, nl);
    if (!skipping_) {
      if (partial_.size() + piece.size() > kMaxFileTimerRequest) {
        if (bad_requests_.Allow(loop_.Now())) {
          Log(LogLevel::kWarning, "{}: dropped a timer request longer than {} bytes", path_,
              kMaxFileTimerRequest);
        }
        partial_.clear();
        skipping_ = true;
      } else {
        partial_.append(piece);
      }
    }
    if (nl == std::string_view::npos) break;
    if (!skipping_) HandleLine(partial_);
    partial_.clear();
    skipping_ = false;
    bytes.remove_prefix(nl + 1);
  }
  Rearm();
}

void FileTimerServer::HandleLine(std::string_view line) {
  if (line.empty()) return;
  FileTimerRequest request;
  std::string err;
  uint64_t dropped = 0;
  if (!ParseFileTimerRequest(line, &request, &err)) {
    if (bad_requests_.Allow(loop_.Now(), &dropped)) {
      Log(LogLevel::kWarning, "{}: {}{}", path_, err,
          dropped ? fmt::format(" (and {} more)", dropped) : std::string());
    }
    return;
  }
  TimerTable::Applied applied = table_.Apply(request);
  if (applied == TimerTable::Applied::kFull && bad_requests_.Allow(loop_.Now(), &dropped)) {
    Log(LogLevel::kWarning, "{}: timer '{}' of pid {} refused: {} timers held already", path_,
        EscapeForLog(request.scope_id, 128), request.pid, table_.size());
  }
  Log(LogLevel::kDebug, "timer '{}' of pid {}: {}", EscapeForLog(request.scope_id, 128), request.pid,
      request.release() ? "released" : fmt::format("expires at {:.3f}", request.expiration_time));
}

void FileTimerServer::Rearm() {
  timer_.Cancel();
  std::optional<double> earliest = table_.Earliest();
  if (!earliest) return;
  double seconds = std::max(0.0, *earliest - wall_clock_());
  // Capped so that a far-away deadline cannot overflow the timer arithmetic;
  // waking up early just re-arms.
  auto delay = Millis(static_cast<long long>(std::ceil(std::min(seconds, 86400.0) * 1000)));
  timer_ = loop_.After(delay, [this] { OnTimer(); });
}

void FileTimerServer::OnTimer() {
  std::vector<ExpiredTimer> expired = table_.TakeExpired(wall_clock_());
  Rearm();
  for (const ExpiredTimer& e : expired) on_expired_(e);
}

}  // namespace elastic
