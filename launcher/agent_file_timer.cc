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
  file_timer_ = std::make_unique<FileTimerServer>(
      loop_, TimerFilePath(user_path, timer_dir_), [this](const ExpiredTimer& t) { OnTimerExpired(t); });
  if (!file_timer_->Start(err)) return false;
  Log(LogLevel::kDebug, "serving FileTimerClient requests on {} (TORCHELASTIC_TIMER_FILE)", file_timer_->path());
  return true;
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
  if (status_.state != WorkerState::kHealthy || w->hang) return;  // already stopping
  if (t.signal <= 0) {
    Log(LogLevel::kWarning, "rank {}: FileTimerClient timer '{}' expired; its client asked for no signal: "
        "the worker goes on", w->global_rank, EscapeForLog(t.scope_id, 200));
    return;
  }
  HangInfo hang;
  hang.timer = t;
  hang.overdue_s = std::max(0.0, WallSeconds() - t.expiration_time);
  hang.stacks_path = fmt::format("{}/attempt_{}/{}/stacks.log", spec_.log_dir, round_.round, w->local_rank);
  Log(LogLevel::kWarning, "rank {} (local rank {}) hung: FileTimerClient timer '{}' expired: collecting its "
      "Python stacks (SIGABRT to pid {}), then stopping the workers", w->global_rank, w->local_rank,
      EscapeForLog(t.scope_id, 200), t.pid);
  w->err->StartCapture(kMaxStackCapture);
  w->hang = hang;
  kill(t.pid, SIGABRT);
  pid_t leader = w->child.pid;
  w->hang_kill_timer = loop_.After(kStackDumpGrace, [this, leader, t] {
    for (auto& x : workers_) {
      if (!x->alive || x->child.pid != leader) continue;
      Log(LogLevel::kWarning, "rank {} still running {} ms after SIGABRT: sending {} (its timer's signal)",
          x->global_rank, kStackDumpGrace.count(), SignalName(t.signal));
      kill(t.pid, t.signal);
      if (t.pid != leader) kill(leader, t.signal);
    }
  });
}

void ElasticAgent::DescribeHang(Worker* w, WorkerFailure* f) {
  w->hang_kill_timer.Cancel();
  std::string stacks = ExtractPythonStacks(w->err->captured());
  bool have = stacks.find("(most recent call first)") != std::string::npos;
  if (!stacks.empty()) {
    std::ofstream out(w->hang->stacks_path);
    out << stacks;
  }
  f->message = FormatHangMessage(*w->hang, have);
  f->traceback = have ? stacks : std::string();
}

}  // namespace elastic
