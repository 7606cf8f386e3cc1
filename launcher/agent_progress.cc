// ElasticAgent: stop on no progress (no_progress.h).
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/log.h"
#include "common/unique_fd.h"
#include "launcher/agent.h"
#include "launcher/exit_codes.h"
#include "launcher/failure_report.h"
#include "launcher/native_stacks.h"
#include "launcher/no_progress.h"

namespace elastic {
std::string ElasticAgent::NoProgressMessage() const {
  std::string last = status_.no_progress.best ? fmt::format(", last {}", *status_.no_progress.best) : std::string();
  return fmt::format("no progress: {} failed round(s) in a row without the iteration in {} growing{} "
                     "(--progress-file, --no-progress-restarts={}): ending the job instead of restarting "
                     "(exit {}: do not requeue)", config_.agent.no_progress_restarts, config_.agent.progress_file, last,
                     config_.agent.no_progress_restarts, ExitCodeFor(EndReason::kNoProgress));
}

// After a round that a worker's failure ended, the node of group rank 0 (where rank 0,
// which writes checkpoints in most trainers, runs) reads the progress file (the state
// machine says when: ReadProgress); the rejoin waits for that read (ProgressRead). Its
// deadline: a file on a hung filesystem never blocks the loop; past it the read counts
// as no progress known.
void ElasticAgent::ReadProgress() {
  std::string out = plan_.log_dir + "/progress.out";
  unlink(out.c_str());
  HealthCheck::Spec spec;
  spec.command = "exec cat -- " + ShellQuote(config_.agent.progress_file);
  spec.timeout = Millis(config_.agent.progress_read_timeout_ms);
  spec.log_path = out;
  spec.env = SideProgramEnv();
  spec.child_mask = original_mask_;
  spec.default_signals = handled_list_;
  spec.label = "progress";
  progress_reader_ = std::make_unique<HealthCheck>(loop_, std::move(spec));
  std::string err;
  auto done = [this, out](const HealthResult& r) { loop_.Post([this, out, r] { OnProgressRead(out, r); }); };
  if (!progress_reader_->Start(done, &err)) loop_.Post([this, out, err] { OnProgressRead(out, HealthResult{false, 0, 0, false, err}); });
}

void ElasticAgent::OnProgressRead(const std::string& out, const HealthResult& r) {
  progress_reader_.reset();
  if (status_.exited || loop_.stopped() || status_.state != WorkerState::kInit) return;
  std::optional<int64_t> now;
  if (r.passed) {
    // The runner's file: its header line, then what cat printed (a local file).
    UniqueFd fd(open(out.c_str(), O_RDONLY | O_CLOEXEC));
    char buf[512];
    ssize_t n = fd ? read(fd.get(), buf, sizeof buf) : -1;
    std::string_view text(buf, n > 0 ? static_cast<size_t>(n) : 0);
    size_t eol = text.find('\n');
    if (eol != std::string_view::npos) now = ParseProgress(text.substr(eol + 1));
  }
  Log(LogLevel::kDebug, "progress: {} ({})", now ? std::to_string(*now) : std::string("none known"),
      DescribeHealthResult(r, Millis(config_.agent.progress_read_timeout_ms)));
  Event e{EventKind::kProgressRead};
  e.progress = now;
  Dispatch(std::move(e));  // Join, or EndJob(kNoProgress)
}

}  // namespace elastic
