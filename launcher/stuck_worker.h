// A worker the kill cannot end (issue 19 "Beyond the peers"; issue 22: torchrun's
// TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT). A process in uninterruptible sleep
// (state D: a hung filesystem, a GPU driver) ignores even SIGKILL until its kernel
// call returns, which may be never. When a stopping group's workers are still not
// reaped --uninterruptible-timeout after their SIGKILL, the agent reads the state of
// their processes from /proc (never waiting: /proc/PID/stat and /proc/PID/wchan do
// not take the locks a stuck process holds), reports them, leaves the rendezvous
// with notice (the others go on without this node) and exits kExitWorkerStuck
// instead of waiting forever.
//
// Pure here: the verdict over a snapshot of /proc (JudgeKill, a table test) and the
// report's lines. /proc is read behind ProcReader (fake in unit tests).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "launcher/descendants.h"

namespace elastic {

// Seconds after SIGKILL, unless --uninterruptible-timeout says otherwise.
inline constexpr long long kDefaultUninterruptibleTimeoutMs = 60000;

// A worker of a stopping group whose process the agent has not reaped yet.
struct UnreapedWorker {
  pid_t pid = 0;  // its process, the leader of its process group
  int local_rank = 0;
  int global_rank = 0;
};

// One live process of such a worker's group, as /proc showed it.
struct StuckProcess {
  pid_t pid = 0;
  int local_rank = 0;
  int global_rank = 0;
  bool leader = false;  // the worker's own process (else one it started)
  char state = '?';     // /proc/PID/stat: D uninterruptible sleep, R, S, ...
  std::string wchan;    // where it waits in the kernel ("" unknown)
};

enum class KillVerdict {
  kDying,  // every unreaped worker has exited (zombie): its exit event is on its way
  kStuck,  // some worker still lives after SIGKILL and the timeout: it cannot be killed
};

struct KillCheck {
  KillVerdict verdict = KillVerdict::kDying;
  // The live processes of the stuck workers' groups, D first, at most kMaxReported.
  std::vector<StuckProcess> processes;
  size_t unreported = 0;  // beyond kMaxReported
};
inline constexpr size_t kMaxReported = 16;

// The verdict over one snapshot of /proc. Pure.
KillCheck JudgeKill(const ProcTable& table, const std::vector<UnreapedWorker>& workers);

// /proc, read without blocking.
class ProcReader {
 public:
  virtual ~ProcReader() = default;
  virtual ProcTable Table() const = 0;
  // The text of /proc/PID/wchan ("" when unreadable).
  virtual std::string Wchan(pid_t pid) const = 0;
};

// JudgeKill over reader.Table(), with each reported process's wchan.
KillCheck CheckKill(const ProcReader& reader, const std::vector<UnreapedWorker>& workers);

// /proc/PID/wchan: a kernel symbol name, "0" (or nothing) when the process does not
// wait or the kernel hides it. The name, escaped for a log, or "".
std::string ParseWchan(std::string_view text);

// "local rank 1 (rank 3, pid 4242) is in uninterruptible sleep (state D, wchan
// request_wait_answer)" and the like, for the report.
std::string DescribeStuck(const StuckProcess& p);

}  // namespace elastic
