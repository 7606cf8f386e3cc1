#include "launcher/event_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <fmt/format.h>

#include "common/log.h"
#include "launcher/job_status.h"

namespace elastic {

int64_t WallClockMillis() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

bool EventWriter::OpenFile(const std::string& path, const std::string& what, File* file,
                           std::string* err) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = fmt::format("{}: cannot open '{}' for appending events: {}", what, path, strerror(errno));
    return false;
  }
  file->path = path;
  file->fd = UniqueFd(fd);
  return true;
}

EventWriter::EventWriter(EventLoop& loop, std::vector<File> files, bool echo_to_console,
                         std::function<int64_t()> wall_ms, uint64_t max_file_bytes)
    : loop_(loop),
      files_(std::move(files)),
      echo_(echo_to_console),
      wall_ms_(std::move(wall_ms)),
      max_file_bytes_(max_file_bytes),
      posted_(loop) {}

void EventWriter::OnHostStart(const RendezvousSettings& settings, const std::string& run_id,
                              const std::string& node_name, const CarriedRound* carried, TimePoint now) {
  memory_ = JobEventMemory{};
  memory_.run_id = run_id;
  memory_.host = node_name;
  start_ = MakeJobStart(settings, carried, &memory_, now, wall_ms_());
  Enqueue(*start_);
}

void EventWriter::SetListener(std::function<void(const JobEvent&)> listener) {
  listener_ = std::move(listener);
  // The first host starts as the rendezvous is made, before the listener is set.
  if (listener_ && start_) listener_(*start_);
}

void EventWriter::OnHostStep(const HostStep& step) {
  // Most steps (heartbeats) make no event: no clock read for them.
  bool maybe = !step.actions.empty() || step.phase_before != step.after.phase ||
               step.round_before != step.after.round;
  if (!maybe) return;
  for (const JobEvent& e : DeriveJobEvents(step, &memory_, wall_ms_())) Enqueue(e);
}

nlohmann::json EventWriter::Status(const RendezvousState& state, NodeId requester) {
  return EncodeJobStatus(MakeJobStatus(state, memory_, requester, wall_ms_()));
}

void EventWriter::Enqueue(const JobEvent& event) {
  if (listener_) listener_(event);
  Write(event);
}

void EventWriter::Write(const JobEvent& event) {
  if (files_.empty() && !echo_) return;  // kept for the status view only
  std::string line = EncodeJobEvent(event);
  if (echo_) Log(LogLevel::kInfo, "event: {}", line);
  if (files_.empty()) return;
  if (queue_.size() >= kMaxQueuedLines) {
    if (dropped_++ == 0)
      Log(LogLevel::kWarning, "events: the writer is behind ({} lines queued): events dropped",
          queue_.size());
    return;
  }
  queue_.push_back(line + '\n');
  if (!posted_.pending()) posted_.Post([this] { Flush(); });
}

void EventWriter::Flush() {
  while (!queue_.empty()) {
    const std::string& line = queue_.front();
    for (File& f : files_) {
      if (f.full) continue;
      if (f.bytes + line.size() > max_file_bytes_) {
        f.full = true;
        Log(LogLevel::kWarning, "events: '{}' reached its bound of {} bytes: no more events in it",
            f.path, max_file_bytes_);
        continue;
      }
      // One write of a whole line (O_APPEND): a short write to a regular file
      // means a full disk; the rest of the line is not retried.
      ssize_t n = write(f.fd.get(), line.data(), line.size());
      if (n < 0 && errno == EINTR) n = write(f.fd.get(), line.data(), line.size());
      if (n != static_cast<ssize_t>(line.size())) {
        f.full = true;
        Log(LogLevel::kWarning, "events: cannot write '{}': {}: no more events in it", f.path,
            n < 0 ? strerror(errno) : "short write (disk full?)");
        continue;
      }
      f.bytes += line.size();
    }
    queue_.pop_front();
  }
}

}  // namespace elastic
