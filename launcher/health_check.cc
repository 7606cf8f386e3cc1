#include "launcher/health_check.h"

#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/unique_fd.h"

namespace elastic {

std::string DescribeHealthResult(const HealthResult& r, std::chrono::milliseconds timeout) {
  if (!r.error.empty()) return "cannot start: " + r.error;
  if (r.timed_out) return fmt::format("killed after the {} s timeout (--health-check-timeout)", timeout.count() / 1000.0);
  if (r.signal != 0) return fmt::format("signal {} ({})", SignalName(r.signal), r.signal);
  return fmt::format("exit code {}", r.exit_code);
}

HealthCheck::HealthCheck(EventLoop& loop, Spec spec) : loop_(loop), spec_(std::move(spec)) {}

HealthCheck::~HealthCheck() {
  if (!running_) return;
  if (host_run_ != 0) {
    spec_.host->Cancel(host_run_);
    return;
  }
  loop_.Remove(child_.pidfd.get());
  SignalGroup(child_.pid, SIGKILL);
  waitpid(child_.pid, nullptr, 0);
}

bool HealthCheck::Start(std::function<void(const HealthResult&)> done, std::string* err) {
  if (spec_.timeout.count() <= 0) {  // every wait has a deadline
    *err = fmt::format("{} '{}' has no timeout", spec_.label, spec_.command);
    return false;
  }
  UniqueFd log(open(spec_.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!log) {
    *err = fmt::format("cannot open '{}': {}", spec_.log_path, strerror(errno));
    return false;
  }
  std::string header = fmt::format("=== {}: {}\n", spec_.label, spec_.command);
  if (write(log.get(), header.data(), header.size()) < 0) {
    // The check still runs; its log is best effort.
  }
  UniqueFd out;
  if (!spec_.stdout_path.empty()) {
    out.Reset(open(spec_.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    if (!out) {
      *err = fmt::format("cannot open '{}': {}", spec_.stdout_path, strerror(errno));
      return false;
    }
  }
  if (spec_.host != nullptr && spec_.host->alive()) {
    // The runner gets its own copies of the descriptors with the request.
    host_run_ = spec_.host->Run(spec_.command, spec_.env, spec_.timeout, out ? out.get() : log.get(), log.get(),
                                [this](const HostRunResult& r) { OnHostDone(r); }, err);
    if (host_run_ == 0) return false;
    running_ = true;
    done_ = std::move(done);
    return true;
  }
  ChildSpec child;
  child.path = "/bin/sh";
  child.argv = {"/bin/sh", "-c", spec_.command};
  child.env = spec_.env;
  child.stdout_fd = out ? out.get() : log.get();
  child.stderr_fd = log.get();
  child.child_mask = spec_.child_mask;
  child.default_signals = spec_.default_signals;
  if (!SpawnChild(child, &child_, err)) return false;
  if (!loop_.Add(child_.pidfd.get(), EPOLLIN, [this](uint32_t) { OnExit(); }, err)) {
    SignalGroup(child_.pid, SIGKILL);
    waitpid(child_.pid, nullptr, 0);
    return false;
  }
  running_ = true;
  done_ = std::move(done);
  timeout_ = loop_.After(spec_.timeout, [this] { OnTimeout(); });
  return true;
}

void HealthCheck::OnHostDone(const HostRunResult& host) {
  running_ = false;
  host_run_ = 0;
  HealthResult r;
  r.exit_code = host.exit_code;
  r.signal = host.signal;
  r.timed_out = host.timed_out;
  if (!host.timed_out) r.error = host.error;
  r.passed = r.error.empty() && !r.timed_out && r.signal == 0 && r.exit_code == 0;
  auto done = std::move(done_);
  done(r);  // may destroy this object: nothing after it
}

void HealthCheck::OnTimeout() {
  timed_out_ = true;
  SignalGroup(child_.pid, SIGKILL);  // the pidfd then reports its end
}

void HealthCheck::OnExit() {
  HealthResult r;
  if (!ReapChild(child_.pid, &r.exit_code, &r.signal)) return;
  loop_.Remove(child_.pidfd.get());
  running_ = false;
  timeout_.Cancel();
  // Whatever the check left in its group goes with it.
  SignalGroup(child_.pid, SIGKILL);
  r.timed_out = timed_out_;
  r.passed = !r.timed_out && r.signal == 0 && r.exit_code == 0;
  auto done = std::move(done_);
  done(r);  // may destroy this object: nothing after it
}

}  // namespace elastic
