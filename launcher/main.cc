// elasticrun: the per-node agent. Everything lives in the elastic_launcher library.
#include <fcntl.h>
#include <stdlib.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/log.h"
#include "launcher/guardian.h"
#include "launcher/host_runner.h"
#include "launcher/run.h"
#include "launcher/self_exe.h"
#include "rendezvous/token_file.h"

int main(int argc, char** argv) {
  elastic::SetLogProgram("elasticrun");
  // Started from the agent bundle (docs/containers.md): the bundle's descriptor,
  // which the plugin left open across exec, stays with this process (the files
  // beside elasticrun are reached through /proc/PID/fd/N) and not the workers.
  if (argc > 0) {
    elastic::SetProgramArgv0(argv[0]);
    if (int fd = elastic::BundleFdOfArgv0(argv[0]); fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  // The per-step token the plugin handed as a descriptor (token_file.h): read and
  // closed before the guardian forks, so that neither process keeps the descriptor
  // and nothing started later inherits it or its variable.
  elastic::HandedToken handed = elastic::AdoptHandedToken();
  // `elasticrun host-runner --fd=N`: the plugin's runner of side programs on the
  // host (host_runner.h); no guardian, no agent. Under srun --elastic argv is the
  // user's (ELASTIC_SPANK_ARGV0), never a subcommand.
  if (argc >= 2 && std::string_view(argv[1]) == "host-runner" && getenv("ELASTIC_SPANK_ARGV0") == nullptr)
    return elastic::HostRunnerMain(std::vector<std::string>(argv + 2, argv + argc));
  // The plugin's host runner for this agent (an agent in a container image), adopted
  // before the guardian forks, like the token.
  std::string runner_warning;
  int host_runner_fd = elastic::AdoptHostRunnerFd(&runner_warning);
  if (!runner_warning.empty()) elastic::Log(elastic::LogLevel::kWarning, "{}", runner_warning);
  // First of all, before PMIx, threads or output: the original process stays the
  // guardian, the child carries on as the agent (guardian.h).
  int exit_status = 0;
  if (elastic::RunGuardian(&exit_status)) return exit_status;
  return elastic::ElasticrunMain(argc, argv, handed, host_runner_fd);
}
