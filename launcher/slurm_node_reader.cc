// ScontrolNodeReader: the shell of slurm_node_state.h (its pure parts: slurm_node_state.cc),
// through the one scontrol runner (scontrol.h).
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "common/log_escape.h"
#include "launcher/slurm_node_state.h"

namespace elastic {

namespace {

// Slurm node names: letters, digits, '-', '_', '.' (the command runs through /bin/sh).
bool IsNodeName(const std::string& name) {
  return !name.empty() && name.size() <= 255 && std::all_of(name.begin(), name.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
         });
}

class ScontrolNodeReader : public SlurmNodeReader {
 public:
  ScontrolNodeReader(EventLoop& loop, ScontrolSpec spec) : loop_(loop), scontrol_(loop, std::move(spec)) {}

  void Read(const std::string& node,
            std::function<void(bool, SlurmNodeState, std::string)> done) override {
    if (!IsNodeName(node)) {
      std::string why = fmt::format("node name '{}' (SLURMD_NODENAME) is not a Slurm node name",
                                    EscapeForLog(node));
      loop_.Post([done, why] { done(false, {}, why); });
      return;
    }
    // The log holds the last question only (it is asked again and again: bounded).
    if (truncate(scontrol_.spec().log_path.c_str(), 0) != 0) {
      // Absent yet: the run creates it.
    }
    scontrol_.Run("--oneliner show node " + node,
                  [this, done](bool ok, const std::string& output, const std::string& failed) {
                    SlurmNodeState parsed;
                    std::string why;
                    if (!ok)
                      why = fmt::format("scontrol: {} (output in {})", failed, scontrol_.spec().log_path);
                    else
                      ok = ParseScontrolNode(output, &parsed, &why);
                    done(ok, parsed, why);
                  });
  }
  pid_t pid() const override { return scontrol_.pid(); }

 private:
  EventLoop& loop_;
  Scontrol scontrol_;
};

}  // namespace

std::unique_ptr<SlurmNodeReader> MakeScontrolNodeReader(EventLoop& loop, ScontrolSpec spec) {
  return std::make_unique<ScontrolNodeReader>(loop, std::move(spec));
}

}  // namespace elastic
