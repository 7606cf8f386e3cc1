// ElasticAgent: workers that SIGKILL cannot end (stuck_worker.h).
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/log.h"
#include "common/unique_fd.h"
#include "launcher/agent.h"
#include "launcher/exit_codes.h"
#include "launcher/stuck_worker.h"

namespace elastic {
namespace {

// /proc/PID/stat and /proc/PID/wchan: neither read waits for a lock the stuck
// process may hold (its cmdline or environ would, through its memory map).
class SystemProcReader : public ProcReader {
 public:
  ProcTable Table() const override { return ReadProcTable(); }
  std::string Wchan(pid_t pid) const override {
    UniqueFd fd(open(fmt::format("/proc/{}/wchan", pid).c_str(), O_RDONLY | O_CLOEXEC));
    char buf[128];
    ssize_t n = fd ? read(fd.get(), buf, sizeof buf) : -1;
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }
};

}  // namespace

std::vector<pid_t> ElasticAgent::StuckPids() const {
  std::vector<pid_t> pids;
  for (const auto& w : workers_)
    if (w->stuck) pids.push_back(w->child.pid);
  return pids;
}

void ElasticAgent::CheckKill() {
  std::vector<UnreapedWorker> unreaped;
  for (const auto& w : workers_)
    if (w->alive && w->child.pid > 0) unreaped.push_back({w->child.pid, w->local_rank, w->global_rank});
  KillCheck check = elastic::CheckKill(SystemProcReader(), unreaped);
  if (check.verdict == KillVerdict::kDying) return;  // their exits are the next events
  for (auto& w : workers_)
    if (w->alive) w->stuck = true;
  double after = config_.agent.uninterruptible_timeout_ms / 1000.0;
  for (const StuckProcess& p : check.processes)
    Log(LogLevel::kError, "{} {} s after SIGKILL (--uninterruptible-timeout={}s)", DescribeStuck(p), after, after);
  if (check.unreported > 0) Log(LogLevel::kError, "and {} more process(es) of those workers", check.unreported);
  bool own_end = status_.after_stop == AfterStop::kRejoin || status_.after_stop == AfterStop::kNone;
  Log(LogLevel::kError, "workers cannot be killed on {}: this node leaves the job{} instead of waiting for them",
      config_.spec.rdzv.hostname,
      own_end ? fmt::format(" (exit {}; the other nodes go on without it)", static_cast<int>(kExitWorkerStuck))
              : std::string());
  Dispatch(Event{EventKind::kWorkersStuck, 0, {}, {}});
}

}  // namespace elastic
