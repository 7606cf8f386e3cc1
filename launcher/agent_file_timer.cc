// ElasticAgent's side of PyTorch's named-pipe watchdog: with
// TORCHELASTIC_ENABLE_FILE_TIMER=1 the agent serves FileTimerServer's protocol
// (file_timer_server.h) and treats a worker whose timer expired as hung:
// stacks first, then a failure like any other (hung_worker.h).
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <fmt/format.h>
#include <fstream>

#include "common/log.h"
#include "common/log_escape.h"
#include "launcher/agent.h"
#include "launcher/worker_command.h"

namespace elastic {
namespace {

std::string EnvOr(const EnvMap& env, const char* key, const char* fallback = "") {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

double WallSeconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

}  // namespace

bool ElasticAgent::StartFileTimer(std::string* err) {
  if (EnvOr(env_, "TORCHELASTIC_ENABLE_FILE_TIMER") != "1") return true;
  std::string user_path = EnvOr(env_, "TORCHELASTIC_TIMER_FILE");
  if (user_path.empty()) {
    std::string templ = EnvOr(env_, "TMPDIR", "/tmp") + "/elasticrun-timer-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) {
      *err = fmt::format("TORCHELASTIC_ENABLE_FILE_TIMER=1: cannot create '{}': {}", templ, strerror(errno));
      return false;
    }
    timer_dir_ = templ;
  }
  ChooseNativeTool();
  file_timer_ = std::make_unique<FileTimerServer>(
      loop_, TimerFilePath(user_path, timer_dir_), [this](const ExpiredTimer& t) { OnTimerExpired(t); });
  if (!file_timer_->Start(err)) return false;
  Log(LogLevel::kDebug, "serving FileTimerClient requests on {} (TORCHELASTIC_TIMER_FILE)", file_timer_->path());
  return true;
}

// Once, at the edge: where the tool is on the agent's PATH.
void ElasticAgent::ChooseNativeTool() {
  std::string path_env = EnvOr(env_, "PATH"), py_spy, gdb;
  if (!FindInPath("py-spy", path_env, &py_spy)) py_spy.clear();
  if (!FindInPath("gdb", path_env, &gdb)) gdb.clear();
  NativeToolChoice choice = ChooseNativeStackTool(config_.agent.native_stacks, py_spy, gdb);
  if (!choice.warning.empty()) Log(LogLevel::kWarning, "{}", choice.warning);
  native_tool_ = choice.tool;
  if (!native_tool_.name.empty()) {
    Log(LogLevel::kDebug, "hung workers: native frames with {} ({})", native_tool_.name, native_tool_.path);
  }
}

void ElasticAgent::StopFileTimer() {
  file_timer_.reset();  // removes the FIFO
  if (!timer_dir_.empty()) rmdir(timer_dir_.c_str());
  timer_dir_.clear();
}

Worker* ElasticAgent::WorkerOfPid(pid_t pid) {
  for (auto& w : workers_) {
    if (w->alive && w->child.pid == pid) return w.get();
  }
  // A process the worker started, still in its process group (a DataLoader worker, ...).
  pid_t group = getpgid(pid);
  for (auto& w : workers_) {
    if (w->alive && group > 0 && w->child.pid == group) return w.get();
  }
  return nullptr;
}

void ElasticAgent::OnTimerExpired(const ExpiredTimer& t) {
  Worker* w = WorkerOfPid(t.pid);
  if (w == nullptr) {
    Log(LogLevel::kWarning, "FileTimerClient timer '{}' of pid {} expired: not a worker of this agent: ignored",
        EscapeForLog(t.scope_id, 200), t.pid);
    return;
  }
  if (w->hang) return;  // its stacks are being collected
  w->expired = t;
  // The state machine's verdict (worker_state.h): CollectStacks, KeepHungWorker, or
  // nothing when the group is already stopping.
  Event e{EventKind::kWorkerHung, t.signal};
  e.local_rank = w->local_rank;
  Dispatch(std::move(e));
}

void ElasticAgent::KeepHungWorker(int local_rank) {
  Worker* w = local_rank >= 0 && local_rank < static_cast<int>(workers_.size()) ? workers_[local_rank].get() : nullptr;
  if (w == nullptr || !w->expired) return;
  Log(LogLevel::kWarning, "rank {}: FileTimerClient timer '{}' expired; its client asked for no signal: "
      "the worker goes on", w->global_rank, EscapeForLog(w->expired->scope_id, 200));
}

void ElasticAgent::CollectStacks(int local_rank) {
  Worker* w = local_rank >= 0 && local_rank < static_cast<int>(workers_.size()) ? workers_[local_rank].get() : nullptr;
  if (w == nullptr || !w->alive || !w->expired || w->hang) return;
  const ExpiredTimer& t = *w->expired;
  HangInfo hang;
  hang.timer = t;
  hang.overdue_s = std::max(0.0, WallSeconds() - t.expiration_time);
  std::string dir = fmt::format("{}/attempt_{}/{}", plan_.log_dir, round_.round, w->local_rank);
  hang.stacks_path = dir + "/stacks.log";
  if (!native_tool_.name.empty()) {
    hang.native_tool = native_tool_.name;
    hang.native_path = dir + "/native_stacks.log";
  }
  Log(LogLevel::kWarning, "rank {} (local rank {}) hung: FileTimerClient timer '{}' expired: collecting its "
      "{}Python stacks (SIGABRT to pid {}), then stopping the workers", w->global_rank, w->local_rank,
      EscapeForLog(t.scope_id, 200), hang.native_tool.empty() ? "" : "native frames (" + hang.native_tool + ") and ",
      t.pid);
  w->hang = hang;
  if (!hang.native_tool.empty() && StartNativeStacks(w)) return;  // then OnNativeStacksDone
  CollectPythonStacks(w);
}

// The tool first: SIGABRT ends the worker, so its native frames must be read
// while it still hangs.
bool ElasticAgent::StartNativeStacks(Worker* w) {
  HealthCheck::Spec spec;
  spec.command = NativeStackCommand(native_tool_, w->hang->timer.pid);
  spec.timeout = Millis(config_.agent.native_stacks_timeout_ms);
  spec.log_path = w->hang->native_path;
  spec.env = SideProgramEnv();
  spec.child_mask = original_mask_;
  spec.default_signals = handled_list_;
  spec.label = "native stacks";
  w->native_stacks = std::make_unique<HealthCheck>(loop_, std::move(spec));
  std::string err;
  // Called from the loop; it neither destroys the check nor dispatches.
  if (w->native_stacks->Start([this, w](const HealthResult& r) { OnNativeStacksDone(w, r); }, &err)) {
    w->native_running = true;
    return true;
  }
  w->hang->native_problem = "cannot start: " + err;
  Log(LogLevel::kWarning, "rank {}: --native-stacks {} cannot start: {}: Python stacks only", w->global_rank,
      native_tool_.name, err);
  return false;
}

void ElasticAgent::OnNativeStacksDone(Worker* w, const HealthResult& r) {
  w->native_running = false;
  if (!r.passed) {
    w->hang->native_problem = r.timed_out ? fmt::format("killed after the {} s timeout (--native-stacks-timeout)",
                                                        config_.agent.native_stacks_timeout_ms / 1000.0)
                                          : DescribeHealthResult(r, Millis(config_.agent.native_stacks_timeout_ms));
    Log(LogLevel::kWarning, "rank {}: --native-stacks {} failed: {} (its output: {}); the Python stacks follow",
        w->global_rank, w->hang->native_tool, w->hang->native_problem, w->hang->native_path);
  } else {
    Log(LogLevel::kDebug, "rank {}: native frames ({}) in {}", w->global_rank, w->hang->native_tool,
        w->hang->native_path);
  }
  CollectPythonStacks(w);
}

void ElasticAgent::CollectPythonStacks(Worker* w) {
  if (!w->alive) return;  // it ended while the tool ran (the stop of the group)
  const ExpiredTimer& t = w->hang->timer;
  w->err->StartCapture(kMaxStackCapture);
  // A tracer killed while attached can leave its tracee stopped (native_stacks.h).
  if (!w->hang->native_tool.empty()) kill(t.pid, SIGCONT);
  kill(t.pid, SIGABRT);
  pid_t leader = w->child.pid;
  w->hang_kill_timer = loop_.After(Millis(config_.agent.stack_dump_grace_ms), [this, leader, t] {
    for (auto& x : workers_) {
      if (!x->alive || x->child.pid != leader) continue;
      Log(LogLevel::kWarning, "rank {} still running {} ms after SIGABRT: sending {} (its timer's signal)",
          x->global_rank, config_.agent.stack_dump_grace_ms, SignalName(t.signal));
      kill(t.pid, t.signal);
      if (t.pid != leader) kill(leader, t.signal);
    }
  });
}

// At the end of an attempt: a tool still running is killed with its group.
void ElasticAgent::StopNativeStacks() {
  for (auto& w : workers_) {
    w->native_stacks.reset();
    w->native_running = false;
  }
}

void ElasticAgent::DescribeHang(Worker* w, WorkerFailure* f) {
  w->hang_kill_timer.Cancel();
  std::string stacks = ExtractPythonStacks(w->err->captured());
  bool have = stacks.find("(most recent call first)") != std::string::npos;
  if (!stacks.empty()) {
    std::ofstream out(w->hang->stacks_path);
    out << stacks;
  }
  if (w->native_running && w->hang->native_problem.empty()) {
    w->hang->native_problem = "still running when the worker ended";  // killed at the attempt's end
  }
  f->message = FormatHangMessage(*w->hang, have);
  f->traceback = have ? stacks : std::string();
  // The hang's verdict in the record (the host's worker_failure follows with the same message).
  RecordVerdict([f](const AgentEventContext& ctx, int64_t ms) { return MakeWorkerHung(ctx, *f, ms); });
}

}  // namespace elastic
