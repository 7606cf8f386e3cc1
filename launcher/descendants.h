// Finding and stopping every process a worker group started, including the ones
// that left its process group (setsid(), double fork).
//
// Why: a worker's children are stopped by kill(-pgid), but a process that calls
// setsid() or setpgid() leaves the group, and one whose parent dies is reparented.
// The agent is a child subreaper (PR_SET_CHILD_SUBREAPER), so every orphan of its
// workers is reparented to it instead of to init: the agent's descendants, read
// from /proc/PID/stat (ppid), are exactly what its workers started.
//
// Contracts:
// - ParseProcStat and LiveDescendants are pure (tested on fake tables).
// - KillDescendants signals through pidfds (no pid-reuse race after opening) and
//   waits for the deaths with a deadline, never without one: for the agent's
//   destructor and the guardian, off the loop. On the loop, LeftoverKiller does the
//   same without waiting (issue 21): the deaths arrive as pidfd events.
// - Nothing here reaps: the caller reaps its own children (ReapExited).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/event_loop.h"
#include "common/unique_fd.h"

namespace elastic {

struct ProcEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  char state = '?';  // R, S, D, Z, X, T, ...
};
using ProcTable = std::vector<ProcEntry>;

// Parses the text of /proc/PID/stat ("pid (comm) state ppid pgrp ..."); comm may
// hold spaces and parentheses.
bool ParseProcStat(std::string_view stat, ProcEntry* entry);

// Every process of /proc (entries that vanish while reading are skipped).
ProcTable ReadProcTable();

// Pids of the processes below `root` (children, their children, ...) that have not
// exited (not Z or X), in breadth-first order; dead ones are walked through.
std::vector<pid_t> LiveDescendants(const ProcTable& table, pid_t root);

// The process groups of `pgids` that still hold a live descendant of `root`: the only
// ones that are still ours. A group with none left is forgotten: once it is empty the
// kernel may reuse its id for an unrelated process group of the same user, which a
// kill(-pgid) would reach (issue 19 item 20). Order kept, duplicates dropped.
std::vector<pid_t> OwnGroups(const ProcTable& table, pid_t root, const std::vector<pid_t>& pgids);

// Sends `sig` to every live descendant of `root` whose process group is not in
// `skip_pgids` (those are signalled by group). Returns how many were signalled.
int SignalDescendants(pid_t root, int sig, const std::vector<pid_t>& skip_pgids);

// SIGKILLs every live descendant of `root` and waits until they are dead, walking
// /proc again until a walk finds none (a process may fork while being killed).
// The processes in `spare` and their descendants are left alone (the agent's
// preloaded interpreter, zygote.h). Returns false with *err if some were still
// alive at `deadline`.
bool KillDescendants(pid_t root, MonoClock::time_point deadline, std::string* err,
                     const std::vector<pid_t>& spare = {});

// The live descendants of `root` less the processes in `spare` and theirs: what a
// kill of the leftovers must see dead.
std::vector<pid_t> Leftovers(const ProcTable& table, pid_t root, const std::vector<pid_t>& spare);

// What a kill of the leftovers does after a walk of /proc found `left` of them.
enum class KillStep {
  kDone,    // none left
  kGiveUp,  // some left at the deadline
  kKill,    // SIGKILL them and walk again once they are dead (they may have forked)
};
KillStep NextKillStep(size_t left, MonoClock::time_point now, MonoClock::time_point deadline);

// KillDescendants on the event loop: Start SIGKILLs the leftovers and returns; their
// deaths are followed through pidfds registered with the loop, /proc is walked again
// once all are dead, and `done` runs from a loop event with "" or why some were
// still alive at `deadline` (on the loop's clock). Start returns true, and never
// runs `done`, when there were none to kill. Destroying it stops following them.
class LeftoverKiller {
 public:
  using Done = std::function<void(const std::string& err)>;
  explicit LeftoverKiller(EventLoop& loop) : loop_(loop) {}
  ~LeftoverKiller() { Forget(); }
  LeftoverKiller(const LeftoverKiller&) = delete;
  LeftoverKiller& operator=(const LeftoverKiller&) = delete;

  bool Start(pid_t root, const std::vector<pid_t>& spare, MonoClock::time_point deadline, Done done);
  bool running() const { return static_cast<bool>(done_); }

 private:
  void Walk();  // /proc again, then Step
  void Step(const std::vector<pid_t>& left);
  void Finish(const std::string& err);  // posts done_
  void OnExited(int fd);
  void Forget();  // the pidfds and timers

  EventLoop& loop_;
  Posted posted_{loop_};
  pid_t root_ = 0;
  std::vector<pid_t> spare_;
  MonoClock::time_point deadline_{};
  Done done_;
  std::vector<UniqueFd> dying_;  // SIGKILLed, not yet dead
  Timer deadline_timer_;
  Timer again_;                  // none could be signalled: the walk raced with exits
};

// Reaps, without blocking, the exited children of the caller that are not in
// `keep` (those are reaped elsewhere, e.g. worker pidfds). Returns how many.
int ReapExited(const std::vector<pid_t>& keep);

}  // namespace elastic
