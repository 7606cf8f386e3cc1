#include "launcher/scontrol.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "common/unique_fd.h"

namespace elastic {

namespace {

std::string ReadBounded(const std::string& path, std::string* err) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    *err = fmt::format("cannot read '{}'", path);
    return {};
  }
  std::string text(kScontrolMaxOutput, '\0');
  size_t used = 0;
  while (used < text.size()) {
    ssize_t n = read(fd.get(), text.data() + used, text.size() - used);
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  text.resize(used);
  return text;
}

}  // namespace

std::string ScontrolCommand(const std::string& scontrol, const std::string& args) {
  // The check runs in the child: no stat on the agent's loop.
  return fmt::format(
      "if [ -n \"${{SLURM_CONF-}}\" ] && [ ! -e \"$SLURM_CONF\" ]; then "
      "echo \"SLURM_CONF=$SLURM_CONF: no such file here: {} not run\" >&2; exit {}; fi; exec {} {}",
      scontrol, kScontrolNoConfig, scontrol, args);
}

std::string DescribeScontrolResult(const HealthResult& r, std::chrono::milliseconds timeout,
                                   const std::string& scontrol) {
  if (r.passed) return "";
  if (!r.error.empty()) return "cannot start: " + r.error;
  if (r.timed_out) return fmt::format("no answer within {} s (killed)", timeout.count() / 1000.0);
  if (r.signal == 0 && r.exit_code == 127) return fmt::format("'{}' not found on PATH", scontrol);
  if (r.signal == 0 && r.exit_code == kScontrolNoConfig)
    return "SLURM_CONF names no file here (a container without Slurm's configuration?)";
  return DescribeHealthResult(r, timeout);
}

Scontrol::Scontrol(EventLoop& loop, ScontrolSpec spec) : loop_(loop), spec_(std::move(spec)) {}

void Scontrol::Run(const std::string& args,
                   std::function<void(bool ok, std::string output, std::string why)> done) {
  if (spec_.timeout <= std::chrono::milliseconds(0)) {
    std::string why = fmt::format("not run: its deadline is {} ms (ScontrolSpec::timeout must be positive)",
                                  spec_.timeout.count());
    loop_.Post([done, why] { done(false, "", why); });
    return;
  }
  HealthCheck::Spec run;
  run.command = ScontrolCommand(spec_.scontrol, args);
  run.timeout = spec_.timeout;
  run.log_path = spec_.log_path;
  run.stdout_path = spec_.output_path;
  run.env = spec_.env;
  run.child_mask = spec_.child_mask;
  run.default_signals = spec_.default_signals;
  run.label = spec_.label;
  run.host = spec_.host;
  run_ = std::make_unique<HealthCheck>(loop_, std::move(run));
  auto finish = [this, done](const HealthResult& r) {
    std::string why = DescribeScontrolResult(r, spec_.timeout, spec_.scontrol);
    std::string output;
    if (r.passed && !spec_.output_path.empty()) output = ReadBounded(spec_.output_path, &why);
    loop_.Post([done, ok = why.empty(), output, why] { done(ok, output, why); });
  };
  std::string err;
  if (!run_->Start(finish, &err)) loop_.Post([done, err] { done(false, "", "cannot start: " + err); });
}

}  // namespace elastic
