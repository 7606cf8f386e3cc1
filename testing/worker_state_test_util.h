// The worker state table's helpers, shared by its test files: worker_state_test.cc
// (the supervision rows and the table's TEST_P), worker_state_resilience_test.cc (the
// resilience rules as rows of the same table) and worker_state_scenario_test.cc (a
// fake process runner that carries out the actions). A fake clock: rows run at kT0.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>

#include <ostream>
#include <string>
#include <vector>

#include "launcher/worker_state.h"

namespace elastic::worker_state_testing {

using K = ActionKind;
const Millis kGrace(30000);
const MonoClock::time_point kT0{};  // the fake clock's origin

// The agent's defaults (AgentSettings), with `grace` and `stuck` as given.
inline SupervisionSettings Settings(Millis grace, Millis stuck = Millis(60000)) {
  SupervisionSettings s;
  s.shutdown_timeout = grace;
  s.uninterruptible_timeout = stuck;
  s.max_restarts = 3;
  s.crash_loop = CrashLoopSettings{3, Millis(60000)};
  s.crash_loop_answer_timeout = Millis(10000);
  s.progress_file = false;
  s.no_progress_restarts = 3;
  s.health_check_recheck = Millis(10000);
  s.health_check_give_up = Millis(600000);
  s.max_requeues = 0;
  return s;
}

inline WorkerFailure Exit(int code, int sig = 0) {
  WorkerFailure f;
  f.exit_code = code;
  f.signal = sig;
  return f;
}
inline Event Exited(int code, int sig = 0) { return Event{EventKind::kWorkerExited, 0, Exit(code, sig), {}}; }
inline Event Simple(EventKind kind, int sig = 0) { return Event{kind, sig, {}, {}}; }

inline GroupStatus Status(WorkerState state, int nproc, int alive, AfterStop after = AfterStop::kNone) {
  GroupStatus s;
  s.state = state;
  s.nproc = nproc;
  s.alive = alive;
  s.after_stop = after;
  s.kill_at = kT0;  // rows run at kT0: a running stop is past its grace period
  return s;
}

inline std::vector<K> Kinds(const Transition& t) {
  std::vector<K> kinds;
  for (const Action& a : t.actions) kinds.push_back(a.kind);
  return kinds;
}

struct Row {
  const char* name;
  GroupStatus before;
  Event event;
  WorkerState after;
  std::vector<K> actions;
  int exit_code = -1;  // checked when >= 0
  SupervisionSettings settings = Settings(kGrace);
};

// ctest lists a row by its name, not as a byte dump.
inline void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

class TransitionTable : public ::testing::TestWithParam<Row> {};

using S = WorkerState;
using E = EventKind;

}  // namespace elastic::worker_state_testing
