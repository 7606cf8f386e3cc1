// ScontrolNodeReader: the shell of slurm_node_state.h (its pure parts: slurm_node_state.cc).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/log_escape.h"
#include "common/unique_fd.h"
#include "launcher/health_check.h"
#include "launcher/slurm_node_state.h"

namespace elastic {

namespace {

// Slurm node names: letters, digits, '-', '_', '.' (the command runs through /bin/sh).
bool IsNodeName(const std::string& name) {
  return !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
         });
}

std::string ReadBounded(const std::string& path, std::string* err) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    *err = fmt::format("cannot read '{}'", path);
    return {};
  }
  std::string text(kNodeStateMaxOutput, '\0');
  size_t used = 0;
  while (used < text.size()) {
    ssize_t n = read(fd.get(), text.data() + used, text.size() - used);
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  text.resize(used);
  return text;
}

class ScontrolNodeReader : public SlurmNodeReader {
 public:
  ScontrolNodeReader(EventLoop& loop, NodeReaderSpec spec) : loop_(loop), spec_(std::move(spec)) {}

  void Read(const std::string& node,
            std::function<void(bool, SlurmNodeState, std::string)> done) override {
    if (!IsNodeName(node)) {
      std::string why = fmt::format("node name '{}' (SLURMD_NODENAME) is not a Slurm node name",
                                    EscapeForLog(node));
      loop_.Post([done, why] { done(false, {}, why); });
      return;
    }
    HealthCheck::Spec run;
    run.command = fmt::format("{} --oneliner show node {}", spec_.scontrol, node);
    run.timeout = spec_.timeout;
    run.log_path = spec_.log_path;
    run.stdout_path = spec_.output_path;
    run.env = spec_.env;
    run.child_mask = spec_.child_mask;
    run.default_signals = spec_.default_signals;
    run.label = "slurm node state";
    // The log holds the last question only (it is asked again and again: bounded).
    if (truncate(spec_.log_path.c_str(), 0) != 0) {
      // Absent yet: HealthCheck creates it.
    }
    check_ = std::make_unique<HealthCheck>(loop_, std::move(run));
    std::string err;
    auto finish = [this, done](const HealthResult& r) {
      SlurmNodeState parsed;
      std::string why;
      bool ok = r.passed;
      if (!ok) {
        std::string what = r.timed_out ? fmt::format("no answer within {} s", spec_.timeout.count() / 1000.0)
                                       : DescribeHealthResult(r, spec_.timeout);
        why = fmt::format("scontrol: {} (output in {})", what, spec_.log_path);
      } else {
        std::string text = ReadBounded(spec_.output_path, &why);
        ok = why.empty() && ParseScontrolNode(text, &parsed, &why);
      }
      loop_.Post([done, ok, parsed, why] { done(ok, parsed, why); });
    };
    if (!check_->Start(finish, &err)) loop_.Post([done, err] { done(false, {}, "cannot start scontrol: " + err); });
  }
  pid_t pid() const override { return check_ && check_->running() ? check_->pid() : -1; }

 private:
  EventLoop& loop_;
  NodeReaderSpec spec_;
  std::unique_ptr<HealthCheck> check_;
};

}  // namespace

std::unique_ptr<SlurmNodeReader> MakeScontrolNodeReader(EventLoop& loop, NodeReaderSpec spec) {
  return std::make_unique<ScontrolNodeReader>(loop, std::move(spec));
}

}  // namespace elastic
