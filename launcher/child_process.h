// Starting and reaping one worker process.
//
// Contracts:
// - The child runs in its own process group (pgid == pid; set by both parent and
//   child, so the parent can signal the group as soon as SpawnChild returns).
// - The child gets PR_SET_PDEATHSIG(SIGKILL): it dies with the agent. If the agent
//   died between fork and prctl, the child notices (getppid) and exits.
// - The child restores `child_mask` (the agent blocks the signals it reads through
//   signalfd) and default dispositions for SIGPIPE and the handled signals.
// - The child is made with clone(CLONE_VM | CLONE_VFORK), as posix_spawn does: it
//   shares the agent's memory on its own stack until it execs, so the agent copies
//   no page tables and takes no copy-on-write faults per worker (about a third of
//   the cost of starting 4 workers with fork). Hence everything the child uses is
//   prepared beforehand, and the child only makes system calls.
// - `in_child` runs in the child before exec (hwloc binding) under that rule: no
//   allocation, no locks. A non-zero errno it returns is printed to the worker's
//   stderr as "elasticrun: warning: <in_child_what>: <call>: <error>", where
//   <call> is the static string in_child set; the worker still starts.
// - The caller owns the returned pidfd and must reap the child (ReapChild) once the
//   pidfd is readable; until then the pid cannot be reused.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace elastic {

struct ChildSpec {
  std::string path;                    // absolute or relative path to exec
  std::vector<std::string> argv;
  std::vector<std::string> env;        // KEY=VALUE
  int stdout_fd = -1;                  // becomes the child's fd 1 (-1: inherit)
  int stderr_fd = -1;                  // becomes the child's fd 2 (-1: inherit)
  sigset_t child_mask;                 // signal mask the child execs with
  std::vector<int> default_signals;    // dispositions reset to SIG_DFL in the child
  std::function<int(const char** call)> in_child;  // returns 0 or an errno value
  std::string in_child_what;
};

struct ChildHandle {
  pid_t pid = -1;
  UniqueFd pidfd;
};

bool SpawnChild(const ChildSpec& spec, ChildHandle* child, std::string* err);

// Non-blocking reap. Returns false if the child has not exited yet. On exit sets
// *exit_code (when it exited) or *signal (when a signal killed it).
bool ReapChild(pid_t pid, int* exit_code, int* signal);

// Signals every process of the group `pgid`; false if the group is gone.
bool SignalGroup(pid_t pgid, int sig);

// "SIGKILL" for 9, "signal 42" for unknown ones.
std::string SignalName(int sig);

}  // namespace elastic
