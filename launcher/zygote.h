// The agent's side of --preload (docs/elasticrun.md, "Preloading"): one preloaded
// interpreter per node (launcher/python/zygote.py) that imports the modules once
// and forks every worker of every round.
//
// Contracts:
// - Start() spawns the zygote as a child of the agent (its own process group,
//   PR_SET_PDEATHSIG, the agent's original signal mask: child_process.h) with its
//   end of a socket pair on fd 3; it imports while the rendezvous runs.
// - Its "ready" arrives as a loop event (the socket turns readable), never waited
//   for: WhenSettled() runs a callback (posted, so the caller may do anything in
//   it) once it is ready or unusable. "unfit" (a module that starts threads or
//   initialises CUDA at import, an import error), a death, a garbled reply or no
//   answer by ready_timeout (a timer on the loop's clock) make it unusable for
//   good, with the reason in why().
// - Spawn() asks for one worker and returns at once; its reply (the pid) arrives as
//   a loop event and `done` runs from it, or from a timer at spawn_timeout (on the
//   loop's clock) if none came (issue 21: nothing on the loop waits). Requests are
//   answered in order, one at a time. The agent must be a child subreaper: when
//   `done` runs the worker is the agent's child in its own process group, so the
//   caller owns the pidfd and reaps it (ReapChild) exactly as after SpawnChild.
//   While spawning() the caller must not reap unknown children (a worker that died
//   at once would be reaped before its pid is known: ElasticAgent::ReapOrphans).
//   A failed request makes the zygote unusable (killed) and fails every queued one
//   (done(false, ...), posted); the caller starts normally.
// - The zygote's exit is seen through its pidfd on the loop: reaped here, logged
//   once, and usable() is false from then on. The destructor kills and reaps it.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/unique_fd.h"
#include "launcher/child_process.h"
#include "launcher/zygote_request.h"
#include "hwloc_binding/binding.h"

namespace elastic {

struct ZygoteOptions {
  std::string python;                // the resolved interpreter the workers use
  std::string script;                // zygote.py (ZygoteScript)
  bool unbuffered = true;            // -u, as the workers' command has it
  std::vector<std::string> modules;  // --preload
  std::vector<std::string> env;      // KEY=VALUE: what the workers get, less per-rank values
  sigset_t child_mask;
  std::vector<int> default_signals;
  // Required, both positive (Start refuses others): the agent's settings
  // (AgentSettings::zygote_ready_timeout_ms, zygote_spawn_timeout_ms).
  Millis ready_timeout{};            // imports from a shared file system can be slow
  Millis spawn_timeout{};
};

// zygote.py next to `exe` (/proc/self/exe): <prefix>/share/slurm-elastic/python
// once installed, launcher/python in the build tree; "" if missing.
std::string ZygoteScript(const std::string& exe);

// A worker command a zygote can run: PYTHON [-u] SCRIPT ARGS... or PYTHON [-u] -m
// MODULE ARGS..., where PYTHON is `python` (--python) or named python* (the
// command under `srun --elastic python3 train.py`). Other interpreter options
// (-c, -O, -X, ...) are not: false.
struct PythonCommand {
  bool unbuffered = false;  // -u
  bool module = false;      // -m
  std::string target;       // the script or the module
  std::vector<std::string> args;
};
bool ParsePythonCommand(const std::vector<std::string>& argv, const std::string& python, PythonCommand* out);

// The request for a worker that a normal start would run as `child` (its env) with
// `binding` applied (nullptr: unbound), from the agent's working directory.
SpawnRequest MakeSpawnRequest(const PythonCommand& command, const std::vector<std::string>& env,
                              const std::vector<int>& default_signals, const KernelBinding* binding);

class Zygote {
 public:
  explicit Zygote(EventLoop& loop) : loop_(loop) {}
  ~Zygote();
  Zygote(const Zygote&) = delete;
  Zygote& operator=(const Zygote&) = delete;

  bool Start(const ZygoteOptions& options, std::string* err);
  // Still importing: neither ready nor unusable yet.
  bool starting() const { return state_ == State::kStarting; }
  bool ready() const { return state_ == State::kReady; }
  // Runs `settled` once it is ready or unusable (at once, posted, if it is already).
  void WhenSettled(std::function<void()> settled);
  // Why it became unusable before it was ready ("" otherwise: a later death or a
  // failed Spawn is told where it happens).
  const std::string& why() const { return why_; }
  // ok: `child` holds the worker's pid and pidfd. Not ok: `why`, and child is empty.
  using SpawnDone = std::function<void(bool ok, ChildHandle child, const std::string& why)>;
  // The descriptors are duplicated: the caller may close its own at once.
  void Spawn(const SpawnRequest& request, int stdout_fd, int stderr_fd, SpawnDone done);
  // A request awaits its reply (or is queued behind one).
  bool spawning() const { return !requests_.empty(); }
  bool usable() const { return state_ != State::kGone; }
  // The agent is stopping on a terminating signal, which reaches the interpreter
  // too: its exit is then told at debug level, not as a warning.
  void Stopping() { stopping_ = true; }
  // The zygote's pid until it has been reaped (then -1: the pid may be reused).
  pid_t pid() const { return reaped_ ? -1 : child_.pid; }

 private:
  enum class State { kStarting, kReady, kGone };
  struct Request {
    std::string frame;     // header + payload
    size_t sent = 0;
    UniqueFd out, err;     // ride on the frame's first byte
    SpawnDone done;
  };
  void OnReadable();
  void Settle(const std::string& why);
  // The head request: send what the socket takes, then wait for its reply (loop events).
  void SendHead();
  void OnSocket(uint32_t events);
  bool ReadIncoming(std::string* ended);
  void OnReply(const std::string& payload);
  void OnExit();
  void Drop(const std::string& why);
  void FailRequests(const std::string& why);

  EventLoop& loop_;
  Posted posted_{loop_};
  Timer ready_timer_;
  std::string incoming_;  // bytes of the ready/unfit reply so far
  std::function<void()> settled_;
  std::string why_;
  ChildHandle child_;
  bool reaped_ = false;
  UniqueFd socket_;
  State state_ = State::kGone;
  bool stopping_ = false;  // Stopping()
  Millis spawn_timeout_{};  // ZygoteOptions::spawn_timeout
  std::deque<Request> requests_;  // the head is the one sent (or being sent)
  Timer spawn_timer_;             // the head's deadline
};

}  // namespace elastic
